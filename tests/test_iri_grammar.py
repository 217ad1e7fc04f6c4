"""The stand-in for jsonschema's IRI grammar (tcclib.util.iri_grammar): a process that runs a
notebook imports nbformat without building the grammar, and the IRI checks still give the real
answers, loading the real module at their first use. In a fresh process: the import is the thing
under test, and this one may have loaded jsonschema already (through a pytest plugin)."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
import textwrap

import pytest

from tcclib.util import iri_grammar

CHECK = textwrap.dedent(
    """
    import importlib.util
    import sys
    from tcclib.util import iri_grammar

    print(iri_grammar.defer())
    import nbformat, jsonschema
    print(type(sys.modules["rfc3987_syntax"]).__name__)
    print(importlib.util.find_spec("rfc3987_syntax").name)  # a spec, the real module's
    checker = jsonschema.FormatChecker()
    cases = [("https://example.org/a\u0308", "iri"), ("no scheme", "iri")]
    cases += [("a b", "iri-reference"), ("#top", "iri-reference")]
    print([checker.conforms(value, kind) for value, kind in cases])
    print(type(sys.modules["rfc3987_syntax"]).__name__, iri_grammar.defer())
    """
)


def test_nbformat_loads_without_the_grammar_and_the_checks_answer_as_the_real_ones():
    if importlib.util.find_spec(iri_grammar.NAME) is None:
        pytest.skip("rfc3987-syntax is not installed: jsonschema has no IRI checks to defer")
    done = subprocess.run([sys.executable, "-c", CHECK], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[:5] == [
        "True",  # put in place before jsonschema
        "_StandIn",  # nbformat and jsonschema loaded, the grammar not
        "rfc3987_syntax",  # what importlib.util.find_spec finds meanwhile (this suite's own skip asks)
        "[True, False, False, True]",  # the real module's answers (it loaded at the first check)
        "module False",  # the real module in its place now; a second call changes nothing
    ]


def test_nothing_is_deferred_once_jsonschema_is_loaded():
    pytest.importorskip("jsonschema")  # (loaded now, if not already)
    before = sys.modules.get(iri_grammar.NAME)
    assert iri_grammar.defer() is False
    assert sys.modules.get(iri_grammar.NAME) is before
