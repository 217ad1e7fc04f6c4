"""Lab's small trips (issue 57, item 7): what notebook 09's rule cell is, said where it matters; a
duplicate name's message names files relative to the repository.

The rule cell of notebook 09 is ``%%writefile <out_dir>/my_rule.py``: the file is loaded as a plugin
(in the notebook's kernel and in every worker that trains), so a helper or a constant that another
cell defines is not in it.  The tests run 09's own cells (read from its source, the magic done as
IPython does it: the cell's text written to the file) in this process.
"""

import shutil
from pathlib import Path

import jupytext
import pytest

from tcclib.method import plugins, registry
from tcclib.method.rules import RuleContractError

ROOT = Path(__file__).resolve().parents[1]


def _cells_of_09() -> dict:
    """Notebook 09's code cells by role: ``parameters``, ``paths`` (the cell after), ``rule`` (its text
    after the ``%%writefile`` line) and ``load`` (the plugin loaded, each method's contract checked)."""
    code = [c.source for c in jupytext.read(ROOT / "notebooks" / "09_your_rule.py").cells if c.cell_type == "code"]
    parameters = next(i for i, source in enumerate(code) if source.startswith("# Parameters"))
    rule = next(source for source in code if source.startswith("%%writefile {rule_file}"))
    load = next(source for source in code if "plugins.load(" in source)
    return {
        "parameters": code[parameters],
        "paths": code[parameters + 1],
        "rule": rule.split("\n", 1)[1],
        "load": load,
    }


@pytest.fixture
def notebook_09(tmp_path, monkeypatch):
    """A namespace that ran 09's parameters and paths cells (``TCC_ROOT``: ``tmp_path``), and 09's cells."""
    monkeypatch.setenv("TCC_ROOT", str(tmp_path))
    cells, namespace = _cells_of_09(), {}
    exec("import tcclib", namespace)  # (the setup cell)
    exec(cells["parameters"], namespace)
    exec(cells["paths"], namespace)
    return namespace, cells


def _run_rule_cell(namespace: dict, cells: dict, rule: str) -> None:
    """The rule cell as IPython runs it (``%%writefile``), then the cell that loads and checks it."""
    Path(namespace["rule_path"]).write_text(rule)
    exec(cells["load"], namespace)


def test_a_constant_of_another_cell_used_in_the_rule_cell_says_the_cell_is_its_own_file(notebook_09):
    namespace, cells = notebook_09
    exec("WIDTH = 0.2", namespace)  # another cell of the notebook
    with pytest.raises(plugins.PluginError) as error:
        _run_rule_cell(namespace, cells, cells["rule"].replace("NearbyValue(width=0.1)", "NearbyValue(width=WIDTH)"))
    message = str(error.value)
    assert "\n" not in message
    assert message.startswith("plugin runs/screen/my_rule.py, line ")  # (relative to the repository)
    assert message.endswith(
        "NameError: name 'WIDTH' is not defined: the rule's cell is a file of its own (runs/screen/my_rule.py), "
        "without what the notebook's other cells define: define 'WIDTH' in the rule's cell, or import it there"
    ), message


def test_a_helper_of_another_cell_called_by_the_rule_says_the_cell_is_its_own_file(notebook_09):
    namespace, cells = notebook_09
    exec("def band(width, n_rows):\n    return max(1, round(width * n_rows / 2))", namespace)  # another cell
    rule = cells["rule"].replace("half = max(1, round(self.width * n_rows / 2))", "half = band(self.width, n_rows)")
    with pytest.raises(RuleContractError) as error:  # check_rule, the cell's first use of donors()
        _run_rule_cell(namespace, cells, rule)
    breach = next(line for line in str(error.value).splitlines() if "NameError" in line)
    assert breach.endswith(
        "NameError: name 'band' is not defined: the rule's cell is a file of its own (runs/screen/my_rule.py), "
        "without what the notebook's other cells define: define 'band' in the rule's cell, or import it there"
    ), breach


def test_a_plugin_file_s_undefined_name_says_what_the_file_sees(tmp_path, monkeypatch):
    monkeypatch.setenv("TCC_ROOT", str(tmp_path))
    (tmp_path / "rule.py").write_text("from tcclib.method import registry\n\nregistry.register_method('x', SHARE)\n")
    said = r"^plugin rule.py, line 3: NameError: name 'SHARE' is not defined: the rule's file sees only what it"
    with pytest.raises(plugins.PluginError, match=said + r" defines or imports: define 'SHARE' there, or import it$"):
        plugins.load(str(tmp_path / "rule.py"))


def test_a_name_registered_twice_names_both_files_relative_to_the_repository(notebook_09, tmp_path):
    """09's rule cell registering ``nearby`` where ``examples/nearby_rule.py`` is loaded already
    (``TCC_PLUGINS``, or ``load_plugins`` in another cell): both places, as Lab's file browser
    shows them, not as absolute paths."""
    namespace, cells = notebook_09
    (tmp_path / "examples").mkdir()
    shutil.copy(ROOT / "examples" / "nearby_rule.py", tmp_path / "examples")
    plugins.load(str(tmp_path / "examples" / "nearby_rule.py"))
    with pytest.raises(registry.RegistryError) as error:
        _run_rule_cell(namespace, cells, cells["rule"])
    message = str(error.value)
    assert str(tmp_path) not in message, message
    assert (
        "method 'nearby' is already registered by examples/nearby_rule.py (python), and runs/screen/my_rule.py "
        "registers it again" in message
    ), message
