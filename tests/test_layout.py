"""The package's architecture, enforced: layers import only downwards and no module imports in a loop.

Every ``import`` statement of ``tcclib`` counts, at module level or inside a function.  The layers,
lowest first, are the subpackages named in :data:`LAYERS`; each one's docstring states its rule.
Imports of ``tcclib`` modules inside functions are not allowed (they hid the old cycles), except in
the facades (they load what trains only on the path that trains); the cycle search follows those
deferred imports too, so a facade that a module imports back is a cycle like any other.  An import
of another package inside a function must say why on its line (it defers a heavy or optional
dependency).
"""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import tcclib

PACKAGE = Path(tcclib.__file__).parent
LAYERS = ("util", "data", "method", "artifacts", "running", "paper")
FACADES = ("tcclib", "tcclib.__main__", "tcclib.running.cli")  # the entry points: may defer their imports


def module_name(path: Path, package: Path = PACKAGE) -> str:
    parts = list(path.relative_to(package.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def resolve(module: str, node: ast.ImportFrom) -> list[str]:
    """The ``tcclib`` modules an ``import`` statement names (relative ones resolved)."""
    if node.level:
        base = module.split(".")
        package = base if module in _PACKAGES else base[:-1]
        base = package[: len(package) - node.level + 1]
        prefix = ".".join(base + ([node.module] if node.module else []))
    else:
        prefix = node.module or ""
    if not prefix.startswith("tcclib"):
        return []
    if node.module is None or prefix in _PACKAGES:
        return [f"{prefix}.{a.name}" if f"{prefix}.{a.name}" in _MODULES else prefix for a in node.names]
    return [prefix]


def imports_of(path: Path, package: Path = PACKAGE) -> list[tuple[str, int, bool, str]]:
    """``(imported module, line, inside a function, the line's text)`` for every import of the file."""
    module = module_name(path, package)
    source = path.read_text(encoding="utf-8")
    lines = source.splitlines()
    found = []

    def visit(node, in_function):
        for child in ast.iter_child_nodes(node):
            nested = in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
            if isinstance(child, ast.Import):
                for alias in child.names:
                    found.append((alias.name, child.lineno, in_function, lines[child.lineno - 1]))
            elif isinstance(child, ast.ImportFrom):
                targets = resolve(module, child) or [child.module or ""]
                for target in targets:
                    found.append((target, child.lineno, in_function, lines[child.lineno - 1]))
            visit(child, nested)

    visit(ast.parse(source), False)
    return found


def graph(package: Path = PACKAGE) -> dict[str, set[str]]:
    """Module -> the ``tcclib`` modules it imports."""
    edges = {}
    for path in sorted(package.rglob("*.py")):
        edges[module_name(path, package)] = {t for t, *_ in imports_of(path, package) if t.startswith("tcclib")}
    return edges


def find_cycle(edges: dict[str, set[str]]) -> list[str] | None:
    """One import cycle as a list of modules, or None: every module and every import counts, the
    facades' deferred ones included."""
    state, stack = {}, []

    def dfs(node):
        state[node] = "open"
        stack.append(node)
        for nxt in sorted(edges.get(node, ())):
            if state.get(nxt) == "open":
                return stack[stack.index(nxt) :] + [nxt]
            if nxt not in state and (cycle := dfs(nxt)):
                return cycle
        stack.pop()
        state[node] = "done"
        return None

    for node in sorted(edges):
        if node not in state and (cycle := dfs(node)):
            return cycle
    return None


def layer(module: str) -> int | None:
    parts = module.split(".")
    return LAYERS.index(parts[1]) if len(parts) > 1 and parts[1] in LAYERS else None


def layering_breaks(edges: dict[str, set[str]]) -> list[str]:
    breaks = []
    for module, targets in edges.items():
        if module in FACADES:
            continue
        for target in targets:
            if layer(module) is not None and layer(target) is not None and layer(target) > layer(module):
                breaks.append(
                    f"{module} (layer {LAYERS[layer(module)]}) imports {target} "
                    f"(layer {LAYERS[layer(target)]}, above it)"
                )
            elif layer(target) is None and target not in ("tcclib",) and module != target:
                breaks.append(f"{module} imports {target}, which is in no layer")
            elif target == "tcclib":
                breaks.append(f"{module} imports the tcclib facade; import the module that defines the name")
    return sorted(breaks)


_MODULES = {module_name(p) for p in PACKAGE.rglob("*.py")}
_PACKAGES = {module_name(p) for p in PACKAGE.rglob("__init__.py")}


def test_every_module_is_in_a_layer_and_every_layer_states_its_rule():
    for path in PACKAGE.rglob("*.py"):
        module = module_name(path)
        assert module in FACADES or layer(module) is not None, f"{module}: put it in one of {LAYERS}"
    for name in LAYERS:
        doc = ast.get_docstring(ast.parse((PACKAGE / name / "__init__.py").read_text()))
        assert doc and "Layering rule" in doc, f"tcclib/{name}/__init__.py: state what it may import"


def test_no_import_cycles():
    assert find_cycle(graph()) is None, f"import cycle: {' -> '.join(find_cycle(graph()))}"


def test_layers_import_only_downwards():
    assert layering_breaks(graph()) == []


def test_imports_inside_functions_only_defer_a_dependency_and_say_so():
    bad = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for target, line, in_function, text in imports_of(path):
            if not in_function:
                continue
            where = f"{path.relative_to(PACKAGE.parent)}:{line}"
            if target.startswith("tcclib") and module_name(path) not in FACADES:
                bad.append(f"{where}: imports {target} inside a function (import it at the top)")
            elif "#" not in text:
                bad.append(f"{where}: `{text.strip()}` inside a function without a comment saying why")
    assert bad == []


@pytest.mark.parametrize("planted", ["cycle", "cycle through the command line", "upward"])
def test_the_checks_fail_on_a_planted_break(tmp_path, planted):
    """A copy of the package with one import added: the checks name it."""
    import shutil

    copy = tmp_path / "tcclib"
    shutil.copytree(PACKAGE, copy, ignore=shutil.ignore_patterns("__pycache__", "*.csv", "*.md"))
    if planted == "cycle":  # util.paths <- util.progress <- util.paths
        (copy / "util" / "paths.py").write_text(
            (copy / "util" / "paths.py").read_text() + "\nfrom tcclib.util import progress  # planted\n"
        )
        (copy / "util" / "progress.py").write_text(
            (copy / "util" / "progress.py").read_text() + "\nfrom tcclib.util import paths  # planted\n"
        )
        cycle = find_cycle(graph(copy))
        assert cycle and set(cycle) == {"tcclib.util.paths", "tcclib.util.progress"}
    elif planted == "cycle through the command line":  # cli -(deferred)-> sweep -> cli: sweep.main, as it was
        (copy / "running" / "sweep.py").write_text(
            (copy / "running" / "sweep.py").read_text() + "\nfrom tcclib.running.cli import main  # planted\n"
        )
        cycle = find_cycle(graph(copy))
        assert cycle and {"tcclib.running.cli", "tcclib.running.sweep"} <= set(cycle), cycle
    else:
        (copy / "data" / "encoding.py").write_text(
            (copy / "data" / "encoding.py").read_text() + "\nfrom tcclib.paper import plots  # planted\n"
        )
        assert any(
            "tcclib.data.encoding (layer data) imports tcclib.paper.plots" in b for b in layering_breaks(graph(copy))
        )


HEAVY = ("torch", "sklearn", "xgboost", "jupytext", "nbformat", "papermill", "jsonschema")
"""What a command that trains nothing must not load (bench/import_cost.py times it)."""


def _scripts() -> dict[str, str]:
    """pyproject.toml's ``[project.scripts]``: name -> ``module:function``."""
    text = (PACKAGE.parent / "pyproject.toml").read_text().split("[project.scripts]", 1)[1].split("\n[", 1)[0]
    return dict(re.findall(r'^([\w-]+) = "([\w.:]+)"$', text, re.M))


def test_a_command_that_trains_nothing_loads_nothing_heavy(tmp_path):
    """A fresh interpreter (one for all of it): ``import tcclib``, ``--help`` (through the function
    the installed ``tcc-sweep`` script calls), a misspelled setting's one-line error and the layers
    as attributes (``tcclib.method``) load none of :data:`HEAVY`; the public names stay listed, and
    a module of a layer loads when first asked for (``tcclib.method.registry``)."""
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: bad\ndatasets: [breast_cancer]\nconfig:\n  epoch: 5\n")
    module, function = _scripts()["tcc-sweep"].split(":")
    code = f"""if True:
        import contextlib, io, sys
        import tcclib
        from {module} import {function} as script
        from tcclib.running import cli
        assert script is cli.main
        assert set(tcclib.__all__) <= set(dir(tcclib)) and "Config" in tcclib.__all__
        with contextlib.redirect_stdout(io.StringIO()) as shown:
            assert cli.main(["--help"]) == 0
        assert "epochs:" in shown.getvalue()
        with contextlib.redirect_stderr(io.StringIO()) as said:
            assert cli.main([{str(bad)!r}, "--check"]) == 2
        assert "did you mean 'epochs'" in said.getvalue(), said.getvalue()
        layers = [tcclib.util, tcclib.data, tcclib.method, tcclib.artifacts, tcclib.running, tcclib.paper]
        assert "registry" in dir(tcclib.method) and "method" in dir(tcclib)
        print(" ".join(name for name in {HEAVY!r} if name in sys.modules) or "none")
        print("class" in tcclib.method.registry.method_names())  # as docs/parameters.md writes it
    """
    env = {**os.environ, "PYTHONPATH": str(PACKAGE.parent)}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["none", "True"], f"loaded by a command that trains nothing: {done.stdout}"


def test_a_tcc_sweep_script_installed_before_says_to_reinstall():
    """Scripts installed before 0.2.0's command line moved import ``main`` from the sweep, which
    no longer imports the command line back (that was a cycle): the one line names the fix."""
    with pytest.raises(ImportError, match=r"installed by an older tcclib; reinstall \(make install"):
        from tcclib.running.sweep import main  # noqa: F401


def test_the_suites_longest_first_files_are_test_files():
    """``tests/conftest.py`` hands pytest-xdist the longest files first; a renamed one would
    silently go to the end of the queue."""
    from conftest import LONGEST_FIRST

    here = Path(__file__).parent
    assert [name for name in LONGEST_FIRST if not (here / name).is_file()] == []
    assert len(set(LONGEST_FIRST)) == len(LONGEST_FIRST)
