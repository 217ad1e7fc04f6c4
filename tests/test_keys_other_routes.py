"""More routes by which a user's code reads what its key must hold (no training: keys only).

Each route here once kept an edited rule's, objective's or baseline's key byte-identical while
what it computes changed: a value put in ``builtins``, the settings view's ``vars()``, a module's
globals reached by a string, files read through importlib's loaders or ``runpy``, docstrings and
annotations read as data, a folder's listing, ``sys.argv``, a class made by ``make_dataclass``,
code without source whose argument layout changed, a file under ``/dev/shm`` and a compiled module
of the user's.  Each is now keyed by value or refused in one line."""

from __future__ import annotations

import builtins
import os
import pickle
import pkgutil
import runpy
import subprocess
import sys
import threading
import types
from pathlib import Path

import numpy as np
import pytest

from tcclib.artifacts import keys
from tcclib.method import identity, plugins, registry
from tcclib.method.config import Config, KeyedSettings
from tcclib.method.settings import UnkeyedSettingError

TINY = dict(seeds=(0, 1), epochs=1, head_epochs=1, progress=False)

OBJECTIVE = """
import builtins
import dataclasses
import inspect
import sys
import typing

import torch

from tcclib.method import objectives, registry
{prelude}


class Mine(objectives.Objective):
    {doc}
    name = "mine"

    def heads(self, stack):
        return {{}}

    def loss(self, batch):
        z = batch.encode(batch.pairs)
        return z.pow(2).mean((1, 2)) * ({factor})


registry.register_method("mine", "column", "uniform", objective=Mine(), replace=True, replace_rule=True)
"""


@pytest.fixture(autouse=True)
def no_plugins_left():
    yield
    for plugin in plugins.loaded():
        plugins.unload(plugin.path or plugin.module)
    if "mine" in registry.METHODS:
        registry.unregister("mine")


def identity_of(folder: Path, factor: str, prelude: str = "", doc: str = '"""An objective."""') -> dict:
    """The objective's identity after loading it from a plugin file (loaded again: as a new run)."""
    path = folder / "mine_objective.py"
    path.write_text(OBJECTIVE.format(prelude=prelude, factor=factor, doc=doc))
    plugins.load(str(path))
    return keys.code_identities(Config(methods=("mine",), **TINY))["mine"]


def test_a_value_put_in_builtins_is_keyed_by_value(tmp_path, monkeypatch):
    monkeypatch.setattr(builtins, "MINE_SCALE", 1.0, raising=False)
    first = identity_of(tmp_path, "MINE_SCALE")
    monkeypatch.setattr(builtins, "MINE_SCALE", 2.0)
    assert identity_of(tmp_path, "MINE_SCALE") != first
    assert identity_of(tmp_path, "abs(-1)") == identity_of(tmp_path, "abs(-1)")  # (Python's own: by name)
    # what an installed package puts there (IPython's get_ipython, a lock) is named, not walked or refused
    monkeypatch.setattr(builtins, "MINE_LOCK", threading.Lock(), raising=False)
    assert identity_of(tmp_path, "1.0 if MINE_LOCK else 2.0")


@pytest.mark.parametrize(
    "factor, prelude",
    [
        ('vars(sys.modules[type(self).__module__])["SCALE"]', "SCALE = {}"),
        ('getattr(inspect.getmodule(type(self)), "SCALE")', "SCALE = {}"),
    ],
    ids=["vars(sys.modules[...])", "inspect.getmodule"],
)
def test_its_own_module_found_at_run_time_and_read_by_a_string_is_keyed_whole(factor, prelude, tmp_path):
    assert identity_of(tmp_path, factor, prelude.format(1.0)) != identity_of(tmp_path, factor, prelude.format(2.0))


@pytest.mark.parametrize(
    "factor",
    ['getattr(Mine.loss, "__globals__")["SCALE"]', 'getattr(sys._getframe(), "f_globals")["SCALE"]'],
    ids=["__globals__", "f_globals"],
)
def test_globals_named_by_a_string_are_refused_as_the_names_are(factor, tmp_path):
    with pytest.raises(plugins.PluginError, match=r"Mine.loss reads .(__globals__|f_globals), which reads its module"):
        identity_of(tmp_path, factor, "SCALE = 1.0")


def test_docstrings_and_annotations_read_as_data_are_keyed(tmp_path):
    read_doc = 'float(type(self).__doc__.split("=")[1])'
    assert identity_of(tmp_path, read_doc, doc='"""scale=1"""') != identity_of(tmp_path, read_doc, doc='"""scale=2"""')
    hints = "class Hints:\n    gain: {}\n"
    read_hints = 'typing.get_type_hints(Hints)["gain"](2.5)'
    assert identity_of(tmp_path, read_hints, hints.format("float")) != identity_of(
        tmp_path, read_hints, hints.format("int")
    )
    # a docstring no code reads is no part of the key (docs/rules.md)
    assert identity_of(tmp_path, "1.0", doc='"""One."""') == identity_of(tmp_path, "1.0", doc='"""Two."""')


def test_sys_argv_read_as_the_code_runs_is_refused_with_the_fix(tmp_path):
    with pytest.raises(plugins.PluginError, match=r"Mine.loss reads the environment \(sys.argv\) as it runs") as e:
        identity_of(tmp_path, "len(sys.argv)")
    assert "pass its value to the constructor" in str(e.value) and "\n" not in str(e.value)


def test_a_class_made_by_make_dataclass_is_keyed_by_its_defaults(tmp_path):
    made = 'Knobs = dataclasses.make_dataclass("Knobs", [("gain", float, dataclasses.field(default={}))])'
    first = identity_of(tmp_path, "Knobs().gain", made.format(1.0))
    assert identity_of(tmp_path, "Knobs().gain", made.format(2.0)) != first


def test_code_without_source_is_keyed_with_its_arguments_layout():
    """``python -c`` has no source: its bytecode is keyed, and two functions with the same body can
    differ only in how they take their arguments."""
    plain, starred = ({}, {})
    exec(compile("def weight(z, s):\n    return z * len(s)\n", "<string>", "exec"), plain)
    exec(compile("def weight(z, *s):\n    return z * len(s)\n", "<string>", "exec"), starred)
    assert plain["weight"].__code__.co_code == starred["weight"].__code__.co_code
    assert identity._bytecode_text(plain["weight"].__code__) != identity._bytecode_text(starred["weight"].__code__)


def test_the_settings_view_holds_only_the_keyed_settings():
    view = KeyedSettings(Config(pseudo_every=7, lr=0.01), {"lr"}, "objective 'mine' (mine.py)", "its settings ({!r})")
    assert view.lr == 0.01
    refused = r"^objective 'mine' \(mine.py\) read (every setting|the setting)"
    for read in (lambda: vars(view), lambda: view.__dict__, lambda: view.pseudo_every):
        with pytest.raises(UnkeyedSettingError, match=refused):
            read()
    with pytest.raises(AttributeError):
        object.__getattribute__(view, "_config")
    assert "pseudo_every" not in repr(view.__getstate__()) and "7" not in repr(view.__getstate__())
    again = pickle.loads(pickle.dumps(view))
    assert again.lr == 0.01
    with pytest.raises(UnkeyedSettingError):
        _ = again.pseudo_every


def test_files_read_through_loaders_runpy_and_folder_listings_are_recorded(tmp_path, monkeypatch):
    """What the loss()/fit refusal and the key's file digest see: a data file read by
    ``pkgutil.get_data``, a ``.py`` run as data by ``runpy.run_path``, a folder listed; not the
    files an import reads."""
    package = tmp_path / "knobs_package"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "weights.json").write_text('{"scale": 1}')
    (tmp_path / "params.py").write_text("V = 1\n")
    (tmp_path / "imported_now.py").write_text("X = 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    for name in ("knobs_package", "imported_now"):
        monkeypatch.delitem(sys.modules, name, raising=False)
    import importlib

    importlib.import_module("knobs_package")
    (tmp_path / "later.py").write_text("Y = 1\n")
    sys.path_importer_cache.pop(str(tmp_path), None)  # (the import below lists tmp_path afresh)
    with identity.files_read() as opened:
        pkgutil.get_data("knobs_package", "weights.json")
        runpy.run_path(str(tmp_path / "params.py"))
        importlib.import_module("imported_now")  # (an import lists its folder and reads its file: neither counts)
        os.listdir(package)
    real = os.path.realpath
    assert sorted(identity.data_files(opened)) == sorted(
        [real(package / "weights.json"), real(tmp_path / "params.py"), real(package)]
    )
    before = identity.files_digest(opened)
    (package / "another.csv").write_text("a\n")  # (the listing changes, no file read changes)
    assert identity.files_digest(opened) != before


@pytest.mark.skipif(not os.path.isdir("/dev/shm"), reason="no /dev/shm on this machine")
def test_a_regular_file_under_dev_shm_is_a_users_file(tmp_path):
    path = Path("/dev/shm") / f"tcc_keys_test_{os.getpid()}.json"
    path.write_text("{}")
    try:
        assert identity.users_files({str(path), "/dev/null"}) == [str(path)]
    finally:
        path.unlink()


def test_a_users_compiled_module_is_keyed_by_its_files_bytes(tmp_path, monkeypatch):
    """A ``.so`` built beside a plugin has no source: its file's bytes stand for its code."""
    import importlib.machinery

    file = tmp_path / f"fastops{importlib.machinery.EXTENSION_SUFFIXES[0]}"
    file.write_bytes(b"\x7fELF one build")
    module = types.ModuleType("fastops")
    module.__file__ = str(file)
    monkeypatch.setitem(sys.modules, "fastops", module)
    first = identity._extension_digest(module)
    file.write_bytes(b"\x7fELF another build")
    assert first and identity._extension_digest(module) != first
    assert identity._extension_digest(os) == "" and identity._extension_digest(sys) == ""  # (installed, built in)


def test_a_submodule_of_a_package_picked_by_a_string_is_keyed_whole(tmp_path, monkeypatch):
    """``getattr(configs, self.kind).SCALE``: one settings module per variant, chosen by name."""
    package = tmp_path / "mine_configs"
    package.mkdir()
    (package / "__init__.py").write_text("from . import fast\n")
    monkeypatch.syspath_prepend(str(tmp_path))

    def with_scale(scale: float) -> dict:
        (package / "fast.py").write_text(f"SCALE = {scale}\n")
        for name in ("mine_configs", "mine_configs.fast"):
            sys.modules.pop(name, None)
        return identity_of(tmp_path, 'getattr(mine_configs, "fast").SCALE', "import mine_configs")

    assert with_scale(1.0) != with_scale(2.0)


def test_a_module_found_in_sys_modules_by_a_computed_name_is_refused(tmp_path):
    with pytest.raises(plugins.PluginError, match=r"Mine.loss imports a module by a computed name"):
        identity_of(tmp_path, 'sys.modules["mine_" + "knobs"].SCALE')
    # its own module, found through its class, is keyed whole
    own = "sys.modules[type(self).__module__].SCALE"
    assert identity_of(tmp_path, own, "SCALE = 1.0") != identity_of(tmp_path, own, "SCALE = 2.0")


@pytest.mark.parametrize("factor", ["float(sys.stdin.readline() or 1)", "float(input() or 1)"])
def test_standard_input_read_as_the_code_runs_is_refused(factor, tmp_path):
    with pytest.raises(plugins.PluginError, match=r"Mine.loss reads the environment \((sys.stdin|input\(\))"):
        identity_of(tmp_path, factor)


def test_a_value_put_in_builtins_and_read_by_a_string_is_keyed(tmp_path, monkeypatch):
    for read in ('getattr(builtins, "MINE_GAIN")', 'vars(builtins)["MINE_GAIN"]'):
        monkeypatch.setattr(builtins, "MINE_GAIN", 1.0, raising=False)
        first = identity_of(tmp_path, read)
        monkeypatch.setattr(builtins, "MINE_GAIN", 2.0)
        assert identity_of(tmp_path, read) != first, read


def test_comments_read_as_data_through_getsource_are_keyed(tmp_path):
    helper = "def gain():\n    # scale={}\n    return 1\n"
    read = 'float(inspect.getsource(gain).split("scale=")[1].split()[0])'
    assert identity_of(tmp_path, read, helper.format(1.0)) != identity_of(tmp_path, read, helper.format(2.0))


def test_slots_an_objects_own_pickling_leaves_out_are_keyed():
    class Knob:
        __slots__ = ("scale", "label")

        def __init__(self, scale):
            self.scale, self.label = scale, "knob"

        def __getstate__(self):
            return {"label": self.label}

    def state_of(knob) -> str:
        walker = identity._Walker("objective 'mine' (mine.py)", "its state")
        walker.value({"knob": knob}, "mine")
        return walker.digest()

    assert state_of(Knob(1.0)) != state_of(Knob(2.0))


def test_a_file_opened_to_append_and_read_is_recorded_and_so_is_a_folder_under_dev_shm(tmp_path):
    (tmp_path / "log.txt").write_text("1\n")
    with identity.files_read() as opened:
        with open(tmp_path / "log.txt", "a+") as handle:
            handle.seek(0)
            handle.read()
        with open(tmp_path / "written.txt", "a") as handle:  # (appended only: no read)
            handle.write("x")
    assert identity.data_files(opened) == [os.path.realpath(tmp_path / "log.txt")]
    if os.path.isdir("/dev/shm"):
        folder = Path("/dev/shm") / f"tcc_keys_test_{os.getpid()}"
        folder.mkdir()
        try:
            with identity.files_read() as opened:
                os.listdir(folder)
            assert identity.users_folders(opened) == [str(folder)]
        finally:
            folder.rmdir()


def test_a_users_baseline_fits_under_global_generators_set_from_the_split_seed():
    """A model without ``random_state`` draws from numpy's global generator: what the process seeded
    before (a plugin's top-level ``np.random.seed(SEED)``, which no key holds) must not decide it."""
    import numpy as np
    from sklearn.ensemble import RandomForestClassifier

    from tcclib.method import baselines

    registry.register_baseline("mine_forest", lambda seed, cfg: RandomForestClassifier(n_estimators=3, max_depth=2))
    try:
        X, y = np.random.default_rng(0).normal(size=(60, 4)), np.arange(60) % 2
        fitted = []
        for before in (0, 1):
            np.random.seed(before)
            model = RandomForestClassifier(n_estimators=3, max_depth=2)
            baselines._fit("mine_forest", model, X, y, 7)
            fitted.append(model.predict_proba(X))
        assert np.array_equal(*fitted)
    finally:
        registry.unregister("mine_forest")


@pytest.mark.parametrize(
    "factor, prelude",
    [
        ("sum(1 for _ in torch.nn.Linear(2, 2).modules())", ""),  # (a weight-init loop: no module table)
        (
            "len(logging.getLogger(__name__).name) * 0 + sum(1 for _ in torch.nn.Linear(2, 2).modules())",
            "import logging",
        ),
        ("1.0 if os.path.sep and platform.system() else 2.0", "import os\nimport platform"),
        ('1.0 if os.path.sep and "stdin" != "environ" else 2.0', "import os"),
    ],
    ids=["net.modules()", "getLogger(__name__) and net.modules()", "platform.system() beside os", "the word stdin"],
)
def test_ordinary_code_that_only_names_like_a_risky_read_is_not_refused(factor, prelude, tmp_path):
    """Refusals go by what the code reads off which module (``sys.modules``, ``os.system``,
    ``os.environ``), not by a name anywhere in it."""
    assert identity_of(tmp_path, factor, prelude)


def test_a_constant_of_yours_named_like_the_registry_does_not_key_everything_registered(tmp_path):
    """Code that reads tcclib's registry holds everything registered; a constant of the user's
    named ``METHODS`` is no registry, so loading another plugin moves nothing."""
    first = identity_of(tmp_path, 'float(len(METHODS["a"]))', 'METHODS = {"a": [1]}')
    other = tmp_path / "other"
    other.mkdir()
    (other / "other_rule.py").write_text(
        "from tcclib.method import registry, rules\n\n\n"
        "class Other(rules.HowRule):\n    name = 'other_rule'\n\n"
        "    def donors(self, members, state, u):\n        return (u * members.shape[1]).long()\n\n\n"
        "registry.register_method('other_rule', Other(), 'uniform', replace=True)\n"
    )
    plugins.load(str(other / "other_rule.py"))
    try:
        assert keys.code_identities(Config(methods=("mine",), **TINY))["mine"] == first
    finally:
        registry.unregister("other_rule")


def test_code_without_source_holding_a_set_literal_keys_the_same_in_every_process(tmp_path):
    script = (
        "import sys\nfrom tcclib.method import identity\n"
        "def pick(x):\n    return x in {'alpha', 'beta', 'gamma', 'delta'}\n"
        "print(identity._bytecode_text(pick.__code__))\n"
    )
    texts = {
        subprocess.run(
            [sys.executable, "-c", script], capture_output=True, text=True, env={**os.environ, "PYTHONHASHSEED": seed}
        ).stdout
        for seed in ("1", "2", "3")
    }
    assert len(texts) == 1 and "frozenset(" in texts.pop()


def test_a_listed_folders_hidden_entries_and_caches_are_no_part_of_its_key(tmp_path):
    (tmp_path / "settings.json").write_text("{}")
    with identity.files_read() as opened:
        sorted(tmp_path.glob("*.json"))
    first = identity.files_digest(opened)
    for incidental in (".ipynb_checkpoints", "__pycache__", ".settings.json.swp", "settings.json~"):
        (tmp_path / incidental).mkdir() if "." not in incidental[1:] else (tmp_path / incidental).write_text("")
    assert identity.files_digest(opened) == first
    (tmp_path / "more.json").write_text("{}")
    assert identity.files_digest(opened) != first


@pytest.mark.parametrize(
    "factor, prelude",
    [
        ('float((alias := os).environ.get("MINE_SCALE", "1"))', "import os"),
        ('float(os.path.expandvars("${MINE_SCALE:-1}") or 1)', "import os"),
        ('float(getattr(os, "environ").get("MINE_SCALE", "1"))', "import os"),
    ],
    ids=["an alias of os", "os.path.expandvars", "getattr(os, 'environ')"],
)
def test_the_environment_read_through_an_alias_or_a_string_is_still_refused(factor, prelude, tmp_path):
    """Refusals go by what is read off os (above), and where the analysis loses the module (an alias,
    a module passed on) by the names the code reads, as before it."""
    with pytest.raises(plugins.PluginError, match=r"Mine.loss reads the environment \(os\.(environ|expandvars)\)"):
        identity_of(tmp_path, factor, prelude)


# --------------------------------------------------------------------------- audit 11: through torch and builtins


@pytest.mark.parametrize(
    "factor, prelude",
    [
        ('EVALUATE("SCALE")', "SCALE = 1.0\nEVALUATE = eval"),
        ('builtins.eval("SCALE")', "SCALE = 1.0"),
        ('getattr(builtins, "exec")("X = SCALE") or 1.0', "SCALE = 1.0"),
    ],
    ids=["an alias of eval", "builtins.eval", "getattr(builtins, 'exec')"],
)
def test_eval_and_exec_under_another_name_are_refused_as_the_names_are(factor, prelude, tmp_path):
    with pytest.raises(plugins.PluginError, match=r"(eval|exec)\(\), which reads its module's globals"):
        identity_of(tmp_path, factor, prelude)


def test_a_custom_operator_of_the_users_is_refused_with_the_fix(tmp_path):
    prelude = (
        '@torch.library.custom_op("{}::boost", mutates_args=())\n'
        "def boost(z: torch.Tensor) -> torch.Tensor:\n    return z * 1.0\n"
    )  # (an operator's name is taken for the process: each load below defines another)
    with pytest.raises(plugins.PluginError, match=r"torch.ops.tcc_test_ops, whose code no key follows; call a plain"):
        identity_of(tmp_path, "torch.ops.tcc_test_ops.boost(torch.ones(1))[0]", prelude.format("tcc_test_ops"))
    with pytest.raises(plugins.PluginError, match=r"a custom operator, whose code no key follows\); call a plain"):
        identity_of(tmp_path, "boost(torch.ones(1))[0]", prelude.format("tcc_test_ops_by_name"))


def test_a_kl_divergence_the_user_registered_is_keyed(tmp_path):
    prelude = (
        "from torch.distributions import Normal, kl_divergence, kl\n"
        "class MineNormal(Normal):\n    pass\n"
        "@kl.register_kl(MineNormal, MineNormal)\n"
        "def _kl(p, q):\n    return (p.loc - q.loc) ** 2 * {}\n"
    )
    factor = "kl_divergence(MineNormal(z.detach(), 1.0), MineNormal(z.detach() * 0, 1.0)).mean()"
    assert identity_of(tmp_path, factor, prelude.format(0.5)) != identity_of(tmp_path, factor, prelude.format(0.25))


def test_a_key_part_holding_a_tensor_or_a_set_is_keyed_by_value_in_every_process():
    torch = pytest.importorskip("torch")
    # (str() of a tensor rounds to 4 decimals: 2.00001 and 2.00004 both read "tensor(2.0000)")
    assert keys.digest({"alpha": torch.tensor(2.00001)}) != keys.digest({"alpha": torch.tensor(2.00004)})
    assert keys.digest({"w": np.arange(2000.0)}) != keys.digest({"w": np.arange(2000.0) + (np.arange(2000) == 999)})
    script = "from tcclib.artifacts import keys\nprint(keys.digest({'columns': {'age', 'income', 'height', 'score'}}))"
    digests = {
        subprocess.run(
            [sys.executable, "-c", script], capture_output=True, text=True, env={**os.environ, "PYTHONHASHSEED": seed}
        ).stdout
        for seed in ("1", "2", "3")
    }
    assert len(digests) == 1 and digests.pop().strip()


def test_a_torch_compile_helper_is_keyed_by_what_it_wraps_not_by_its_number_in_the_process(tmp_path):
    torch = pytest.importorskip("torch")
    prelude = "@torch.compile\ndef helper(z):\n    return z * {}\n"
    factor = "1.0 if helper else 0.0"
    assert identity_of(tmp_path, factor, prelude.format(1.0)) != identity_of(tmp_path, factor, prelude.format(2.0))

    def helper(z):
        return z * 2

    compiled = torch.compile(helper)
    first = identity.value_identity(compiled, "helper")
    compiled._torchdynamo_wrapper_id += 1  # (an id() of this process: another in the next)
    assert identity.value_identity(compiled, "helper") == first


def test_a_memory_mapped_array_and_a_dict_of_static_methods_are_keyed_not_refused(tmp_path):
    weights = tmp_path / "weights.npy"
    mapped = f"import numpy as np\nW = np.load({str(weights)!r}, mmap_mode='r')\n"
    np.save(weights, np.ones(3))
    first = identity_of(tmp_path, "float(W[0])", mapped)
    np.save(weights, np.full(3, 2.0))
    assert identity_of(tmp_path, "float(W[0])", mapped) != first
    penalties = (
        'class Penalties:\n    @staticmethod\n    def l1(x):\n        return x * {}\n    BY_NAME = {{"l1": l1}}\n'
    )
    factor = 'Penalties.BY_NAME["l1"].__func__(1.0)'
    assert identity_of(tmp_path, factor, penalties.format(1.0)) != identity_of(tmp_path, factor, penalties.format(2.0))


@pytest.mark.parametrize(
    "factor, prelude",
    [
        ('pkgutil.resolve_name("tcc_test_knobs:scale")()', "import pkgutil"),
        ('pydoc.locate("tcc_test_knobs.scale")()', "import pydoc"),
    ],
    ids=["pkgutil.resolve_name", "pydoc.locate"],
)
def test_a_helper_found_by_a_dotted_string_is_keyed_with_its_module(factor, prelude, tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(tmp_path))

    def with_scale(scale: float) -> dict:
        (tmp_path / "tcc_test_knobs.py").write_text(f"def scale():\n    return {scale}\n")
        sys.modules.pop("tcc_test_knobs", None)
        return identity_of(tmp_path, factor, prelude)

    assert with_scale(1.0) != with_scale(2.0)


# --------------------------------------------------------------------------- audit 13: notebooks


def test_a_lambda_whose_expression_goes_on_past_its_first_line_is_keyed_whole(tmp_path):
    """black lays a long lambda out over lines; inspect reads its first line only, which was its key."""
    prelude = "GAIN = (\n    lambda z: z\n    * {}\n)\n"
    first = identity_of(tmp_path, "GAIN(1.0)", prelude.format(1.0))
    assert identity_of(tmp_path, "GAIN(1.0)", prelude.format(2.0)) != first
    one_line = "GAIN = lambda z: z * {}\n"
    assert identity_of(tmp_path, "GAIN(1.0)", one_line.format(1.0)) != identity_of(
        tmp_path, "GAIN(1.0)", one_line.format(2.0)
    )


# --------------------------------------------------------------------------- audit 14: stability


def test_scipy_stats_and_numpys_functions_and_patterns_key_stably_and_are_not_refused(tmp_path):
    """A scipy.stats distribution holds numpy's global RandomState, whose state any np.random draw
    moves (another key in every process); a ufunc held as a value (SQUASH = np.tanh) and a compiled
    pattern were refused (pickle reduces them through copyreg, which the key did not ask)."""
    np = pytest.importorskip("numpy")
    prelude = "import re\nimport numpy as np\nfrom scipy.stats import norm\nSQUASH = np.{}\nWORDS = re.compile('a+')\n"
    factor = "float(norm.cdf(0.0)) * float(SQUASH(0.5)) * (1.0 if WORDS.match('aa') else 2.0)"
    first = identity_of(tmp_path, factor, prelude.format("tanh"))
    np.random.rand(3)  # (numpy's global generator moves: no part of the key)
    assert identity_of(tmp_path, factor, prelude.format("tanh")) == first
    assert identity_of(tmp_path, factor, prelude.format("sin")) != first


# --------------------------------------------------------------------------- audit 15: objects and modules


@pytest.mark.parametrize(
    "factor, prelude",
    [
        (  # functools.wraps copies torch's __module__ onto a helper of the user's
            "float(my_mse(z, z + 1))",
            "import functools\nimport torch.nn.functional as F\n\n\n@functools.wraps(F.mse_loss)\n"
            "def my_mse(a, b):\n    return F.mse_loss(a, b) * {}",
        ),
        (  # a module of the user's handed on to a function that reads it
            "read(tcc_test_knobs)",
            "import tcc_test_knobs\n\n\ndef read(m):\n    return m.SCALE",
        ),
        (  # ... or given back by one
            "knobs().SCALE",
            "import tcc_test_knobs\n\n\ndef knobs():\n    return tcc_test_knobs",
        ),
        (  # an object whose copyreg reducer leaves out what it computes with
            "KNOB.scale",
            "import copyreg\n\n\nclass Knob:\n    def __init__(self, scale):\n        self.scale = scale\n\n\n"
            "copyreg.pickle(Knob, lambda knob: (Knob, (1.0,)))\nKNOB = Knob({})",
        ),
        (  # a function made from another's code with its constants replaced
            "fast(1.0)",
            "import types\n\n\ndef base(x):\n    return x * 3.0\n\n\n"
            "fast = types.FunctionType(base.__code__.replace(co_consts=(None, {})), base.__globals__)",
        ),
    ],
    ids=["functools.wraps(F.mse_loss)", "a module passed on", "a module returned", "copyreg", "code.replace"],
)
def test_what_the_object_model_hides_from_a_names_reading_is_keyed(factor, prelude, tmp_path, monkeypatch):
    """Each of these once kept the key byte-identical while what the objective computes changed
    (audit 15): the key now moves with the value, and the same text keys the same."""
    monkeypatch.syspath_prepend(str(tmp_path))

    def with_scale(scale: float) -> dict:
        (tmp_path / "tcc_test_knobs.py").write_text(f"SCALE = {scale}\n")
        sys.modules.pop("tcc_test_knobs", None)
        return identity_of(tmp_path, factor, prelude.format(scale))

    first = with_scale(1.0)
    assert with_scale(2.0) != first and with_scale(1.0) == first


def test_a_helper_modules_own_class_serving_its_attributes_is_keyed(tmp_path, monkeypatch):
    """``sys.modules[__name__].__class__ = Lazy`` (the companion of PEP 562): a property of that
    class serves ``knobs.SCALE``, which is in no module's namespace."""
    monkeypatch.syspath_prepend(str(tmp_path))
    helper = (
        "import sys\nimport types\n\n\nclass Lazy(types.ModuleType):\n    @property\n    def SCALE(self):\n"
        "        return {}\n\n\nsys.modules[__name__].__class__ = Lazy\n"
    )

    def with_scale(scale: float) -> dict:
        (tmp_path / "tcc_test_lazy.py").write_text(helper.format(scale))
        sys.modules.pop("tcc_test_lazy", None)
        return identity_of(tmp_path, "tcc_test_lazy.SCALE", "import tcc_test_lazy")

    assert with_scale(1.0) != with_scale(2.0)


def test_a_ufunc_made_by_frompyfunc_is_refused_with_the_fix(tmp_path):
    prelude = "import numpy as np\n\n\ndef scaled(x):\n    return x * 1.0\n\n\nUF = np.frompyfunc(scaled, 1, 1)"
    with pytest.raises(plugins.PluginError, match=r"np.frompyfunc, keyed by its name alone.*np.vectorize") as e:
        identity_of(tmp_path, "float(UF(1.0))", prelude)
    assert "\n" not in str(e.value)


@pytest.mark.parametrize(
    "statement, named",
    [
        ("torch.set_flush_denormal(True)", "flush denormal False -> True"),
        ("torch.backends.mkldnn.enabled = False", "torch.backends.mkldnn.enabled True -> False"),
        ("torch.backends.cudnn.benchmark = True", "torch.backends.cudnn.benchmark False -> True"),
    ],
)
def test_a_plugin_that_sets_torchs_backend_switches_at_import_is_refused_and_they_are_set_back(
    statement, named, tmp_path
):
    import torch

    before = (torch.backends.mkldnn.enabled, torch.backends.cudnn.benchmark, (torch.tensor([1e-39]) * 1.0).item())
    with pytest.raises(plugins.PluginError, match=f"changed torch's global state at import \\({named}"):
        identity_of(tmp_path, "1.0", statement)
    assert (
        torch.backends.mkldnn.enabled,
        torch.backends.cudnn.benchmark,
        (torch.tensor([1e-39]) * 1.0).item(),
    ) == before


# --------------------------------------------------------------------------- audit 17: rules and cells


@pytest.mark.parametrize(
    "factor, prelude",
    [
        (  # an absolute import of a submodule of the user's package, inside a function
            "scale()",
            "def scale():\n    from tcc_test_pkg import knobs\n\n    return knobs.SCALE * {}",
        ),
        (  # a class picked among a base's subclasses, named nowhere in the code that runs
            "pick()",
            "class Strategy:\n    pass\n\n\nclass Scaled(Strategy):\n    def scale(self):\n        return {}\n\n\n"
            "def pick():\n    return Strategy.__subclasses__()[0]().scale()",
        ),
    ],
    ids=["from package import submodule", "__subclasses__()"],
)
def test_code_reached_without_being_named_is_keyed(factor, prelude, tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(tmp_path))
    (tmp_path / "tcc_test_pkg").mkdir()
    (tmp_path / "tcc_test_pkg" / "__init__.py").write_text("")

    def with_scale(scale: float) -> dict:
        (tmp_path / "tcc_test_pkg" / "knobs.py").write_text(f"SCALE = {scale}\n")
        for name in ("tcc_test_pkg", "tcc_test_pkg.knobs"):  # (not yet imported when the key is computed)
            sys.modules.pop(name, None)
        return identity_of(tmp_path, factor, prelude.format(scale))

    first = with_scale(1.0)
    assert with_scale(2.0) != first and with_scale(1.0) == first


def test_a_key_part_holding_a_function_keys_by_its_code_not_its_address():
    """``key_params()`` returning a function: its text names its address, another in every process."""
    made = [{}, {}]
    for namespace in made:
        exec(compile("def gain(x):\n    return 2 * x\n", "<string>", "exec"), namespace)
    assert made[0]["gain"] is not made[1]["gain"]
    assert keys.digest({"gain": made[0]["gain"]}) == keys.digest({"gain": made[1]["gain"]})
    exec(compile("def gain(x):\n    return 3 * x\n", "<string>", "exec"), made[1])
    assert keys.digest({"gain": made[0]["gain"]}) != keys.digest({"gain": made[1]["gain"]})


def test_a_helper_of_a_plugin_importing_another_plugins_module_of_that_name_is_refused(tmp_path, monkeypatch):
    """Plugins in two folders, each with a helper that imports its own ``tcc_test_common``: the
    second would run the first's (a process holds one module of a name)."""
    for side, step in (("a", 1), ("b", 2)):
        folder = tmp_path / side
        folder.mkdir()
        (folder / "tcc_test_common.py").write_text(f"STEP = {step}\n")
        (folder / f"tcc_test_helpers_{side}.py").write_text("import tcc_test_common\n\nSTEP = tcc_test_common.STEP\n")
        (folder / f"plugin_{side}.py").write_text(f"import tcc_test_helpers_{side}\n")
    monkeypatch.setattr(sys, "path", list(sys.path))
    try:
        plugins.load(str(tmp_path / "a" / "plugin_a.py"))
        with pytest.raises(
            plugins.PluginError, match=r"imports tcc_test_common \(through its helper .*tcc_test_helpers_b.py\)"
        ):
            plugins.load(str(tmp_path / "b" / "plugin_b.py"))
    finally:
        for name in ("tcc_test_common", "tcc_test_helpers_a", "tcc_test_helpers_b"):
            sys.modules.pop(name, None)


RUN_TWICE = r"""
import sys
from pathlib import Path
from IPython.core.interactiveshell import InteractiveShell

script = Path(sys.argv[1])
RULE = '''import torch
from tcclib.method import registry, rules

STEP = {}


class Share(rules.HowRule):
    name = "share"

    def donors(self, members, state, u):
        k, n_rows, n_features = members.shape
        rows = (torch.arange(n_rows).view(1, n_rows, 1) + STEP) % n_rows
        return rows.expand(k, n_rows, n_features).contiguous()


registry.register_method("share", Share(), "uniform", replace=True)
'''
shell = InteractiveShell.instance()
from tcclib.artifacts import keys
from tcclib.method.config import Config
found = []
for step in (1, 2):
    script.write_text(RULE.format(step))
    result = shell.run_cell(f"%run {script}")
    print("refused" if result.error_in_exec else "ran", file=sys.stderr)
    found.append(keys.code_identities(Config(methods=("share",)))["share"]["share"])
print(found[0] != found[1])
"""


def test_a_script_run_again_by_percent_run_after_an_edit_is_keyed_as_it_is_now(tmp_path):
    """IPython's ``%run rule.py`` (without -i) keeps one module for the script and fills it afresh
    each time: the second run after an edit was refused as 'changed on disk since it was imported'."""
    (tmp_path / "session.py").write_text(RUN_TWICE)
    done = subprocess.run(
        [sys.executable, str(tmp_path / "session.py"), str(tmp_path / "rule.py")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0 and done.stderr.split() == ["ran", "ran"], done.stderr[-1500:]
    assert done.stdout.strip() == "True"


def test_a_rule_of_an_installed_package_is_keyed_by_what_it_draws():
    """A rule whose class an installed package defines (an entry-point plugin) is no file of the
    user's: its state and what it draws on the probe are keyed, so an edit of the installed code
    that changes its draws retrains (its class named as a module of the standard library's here)."""
    import torch

    from tcclib.method import rules

    class Installed(rules.HowRule):
        name = "mine"
        needs = rules.NOTHING

        def donors(self, members, state, u):
            k, n_rows, n_features = members.shape
            rows = (torch.arange(n_rows).view(1, n_rows, 1) + 1) % n_rows
            return rows.expand(k, n_rows, n_features).contiguous()

    Installed.__module__ = "json"  # (installed code: not followed, not tcclib's)
    registry.register_method("mine", Installed(), "uniform", replace=True)
    first = keys.code_identities(Config(methods=("mine",), **TINY))["mine"]["mine"]
    assert first.startswith("state:") and " draws:" in first

    def shifted_by_two(self, members, state, u):
        k, n_rows, n_features = members.shape
        return ((torch.arange(n_rows).view(1, n_rows, 1) + 2) % n_rows).expand(k, n_rows, n_features).contiguous()

    Installed.donors = shifted_by_two  # (the installed package's code edited)
    assert keys.code_identities(Config(methods=("mine",), **TINY))["mine"]["mine"] != first


@pytest.mark.parametrize(
    "prelude, factor, reader",
    [
        ("import sqlite3", "len(sqlite3.connect(':memory:').execute('select 1').fetchall())", "sqlite3"),
        ("import os\nFD = os.open(__file__, os.O_RDONLY)", "len(os.pread(FD, 1, 0))", "pread"),
        ("import concurrent.futures as cf", "cf.ThreadPoolExecutor(1).submit(len, 'ab').result()", "concurrent"),
    ],
    ids=["sqlite", "pread at import", "a worker thread"],
)
def test_code_reading_files_where_no_open_event_shows_is_refused_with_the_fix(prelude, factor, reader, tmp_path):
    """SQLite, pyarrow, HDF5 and the like open files in native code, ``os.pread`` reads a descriptor
    opened at import, a worker thread opens them on another thread: Python's ``open`` event, which
    keys what a rule or objective reads, sees none of them (an edited file kept its key; audit 21)."""
    with pytest.raises(plugins.PluginError) as refused:
        identity_of(tmp_path, factor, prelude)
    said = str(refused.value)
    assert "\n" not in said and "mine_objective.py" in said
    if reader:
        assert f"Mine.loss reaches {reader}, which reads files where no key sees" in said
        assert "read the file with open(), np.load or pd.read_csv (their bytes are keyed)" in said


def test_a_reader_imported_inside_the_function_is_refused_and_a_name_like_one_is_not(tmp_path):
    body = "import sqlite3\n    return 1.0"
    helper = f"def _one():\n    {body}\n"
    with pytest.raises(plugins.PluginError, match="_one reaches sqlite3"):
        identity_of(tmp_path, "_one()", helper)
    assert identity_of(tmp_path, "NS.tables", "import types\nNS = types.SimpleNamespace(tables=2.0)")


def test_a_function_a_helper_module_made_from_anothers_code_is_keyed_by_its_bytecode(tmp_path, monkeypatch):
    """``types.FunctionType(f.__code__.replace(co_consts=...))`` in a helper module, its file as
    imported: keyed by the code that runs (it was refused as "changed on disk since it was
    imported", whose fix, a new kernel, could not help); another constant, another key."""
    consts = "tuple({} if c == 0.0 else c for c in _base.__code__.co_consts)"
    made = "import types\n\ndef _base():\n    return 0.0\n\n"
    made += f"shift = types.FunctionType(_base.__code__.replace(co_consts={consts}), globals())\n"
    monkeypatch.syspath_prepend(str(tmp_path))
    keyed = []
    for value in ("0.5", "1.5"):
        (tmp_path / "made_helper.py").write_text(made.replace("{}", value, 1))
        os.utime(tmp_path / "made_helper.py", (1, 1))  # (written before this process: as imported)
        sys.modules.pop("made_helper", None)
        keyed.append(identity_of(tmp_path, "made_helper.shift()", "import made_helper"))
    assert keyed[0] != keyed[1]


def test_a_contract_attribute_a_property_computes_from_a_file_is_keyed_by_its_bytes(tmp_path):
    """``views`` (or ``needs_changed``, ``embedding``) written as a property that reads a file: its
    code was keyed, not what it read, and an edit of the file kept the key (audit 21)."""
    source = OBJECTIVE.format(prelude="import json\nfrom pathlib import Path", factor="1.0", doc='"""Mine."""')
    source = source.replace(
        '    name = "mine"\n',
        '    name = "mine"\n\n    @property\n    def views(self):\n'
        '        return json.loads((Path(__file__).parent / "views.json").read_text())["views"]\n',
    )
    path = tmp_path / "mine_objective.py"
    path.write_text(source)
    keyed = []
    for views in (1, 3):
        (tmp_path / "views.json").write_text(f'{{"views": {views}}}')
        plugins.load(str(path))
        keyed.append(keys.code_identities(Config(methods=("mine",), **TINY))["mine"])
    assert keyed[0] != keyed[1] and "draws:files-" in keyed[0]["objective:mine"]
