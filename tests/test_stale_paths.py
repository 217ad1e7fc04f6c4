"""Paths by which an edit could get its old results back with no word, each closed: a checkpoint
or an importance cache made by other tcclib code, a baseline's model reading a file as it
predicts or a factory reading a file for one seed, a user's code reaching another user's rule,
objective or baseline through the registry, and a finished dataset whose file changed since.
Each test fails on the code before its fix (an adversarial audit found them, 2026-12-01)."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest

from tcclib.artifacts import importances, keys, store
from tcclib.data import sources
from tcclib.method import baselines, identity, losses, plugins, registry
from tcclib.method.baselines import run_baselines
from tcclib.method.config import Config
from tcclib.method.inputs import prepare_config
from tcclib.running import cli, sweep, train

TINY = dict(seeds=(0,), epochs=1, head_epochs=1, progress=False)


@pytest.fixture
def prep(bc):
    return prepare_config(bc, Config(methods=("random",), **TINY))


@pytest.fixture
def loaded(tmp_path):
    """Load plugin files written into ``tmp_path`` (``loaded(name, text)``); unloaded after."""
    files = []

    def load(name: str, text: str):
        path = tmp_path / f"{name}.py"
        path.write_text(text)
        plugins.load(str(path))
        files.append(path)
        return path

    yield load
    for path in reversed(dict.fromkeys(files)):
        plugins.unload(str(path))


# ----------------------------------------------------------- tcclib's own code: caches and checkpoints


def test_a_checkpoint_and_an_importance_cache_are_keyed_by_tcclibs_own_code(prep, monkeypatch):
    """An edit of tcclib's training code (here a value set in this process, as an edited file is
    seen) moves every run key; the pretraining checkpoint and the importance cache it would resume
    from or read moved too (they had not: an interrupted run resumed the old code's pretraining)."""
    cfg = Config(methods=("random", "class_most"), **TINY)
    split = prep.splits[0]
    before = store.checkpoint_key(prep, cfg, None), importances._cache_key("bc", split, cfg)
    monkeypatch.setattr(losses, "CHUNK_BYTES", losses.CHUNK_BYTES + 1)
    edited = store.checkpoint_key(prep, cfg, None), importances._cache_key("bc", split, cfg)
    assert edited[0] != before[0] and edited[1] != before[1]
    monkeypatch.undo()
    assert (store.checkpoint_key(prep, cfg, None), importances._cache_key("bc", split, cfg)) == before


# ------------------------------------------------------------------------ a user's baseline and files

PREDICTS_FROM_A_FILE = """
import json
from pathlib import Path
from sklearn.linear_model import LogisticRegression
from tcclib.method import registry

POWER = Path(__file__).with_name("power.json")


class Powered(LogisticRegression):
    def predict_proba(self, X):
        return super().predict_proba(X) ** json.loads(POWER.read_text())["power"]


registry.register_baseline("powered", lambda seed, cfg: Powered(max_iter=200))
"""

PER_SEED_FILE = """
import json
from pathlib import Path
from sklearn.linear_model import LogisticRegression
from tcclib.method import registry


def per_seed(seed, cfg):
    c = json.loads(Path(__file__).with_name(f"c_seed{seed}.json").read_text())["C"]
    return LogisticRegression(C=c, max_iter=200)


registry.register_baseline("per_seed", per_seed)
"""


def test_a_baseline_model_that_opens_a_file_as_it_predicts_is_refused(tmp_path, loaded, prep):
    (tmp_path / "power.json").write_text('{"power": 1.0}')
    loaded("predicts", PREDICTS_FROM_A_FILE)
    with pytest.raises(
        identity.Unkeyable, match=r"^the model of baseline 'powered' opened power\.json as it predicted, which no key"
    ):
        run_baselines(prep, Config(**TINY), ["powered"])


def test_the_files_a_factory_opens_for_a_seed_are_keyed_in_that_seeds_key(tmp_path, loaded, bc):
    """Keyed at the run's seeds, each seed's key by its own seed's files (the probe was seed 0's
    alone: with no ``c_seed0.json`` it failed and nothing was keyed), so a seed keys the same
    whatever seeds run beside it (a Dask unit of some seeds, the whole run)."""
    for seed in (1, 8):
        (tmp_path / f"c_seed{seed}.json").write_text('{"C": 1.0}')
    loaded("per_seed_plugin", PER_SEED_FILE)
    both = Config(methods=("random",), baselines=("per_seed",), **{**TINY, "seeds": (1, 8)})
    alone = both.replace(seeds=(1,))

    def keys_of(cfg):
        return keys.run_keys(prepare_config(bc, cfg), cfg).baselines

    before = keys_of(both)
    assert keys_of(alone)["1/per_seed"] == before["1/per_seed"]
    (tmp_path / "c_seed8.json").write_text('{"C": 0.001}')
    after = keys_of(both)
    assert after["8/per_seed"] != before["8/per_seed"] and after["1/per_seed"] == before["1/per_seed"]
    assert baselines._model("per_seed", 8, both).C == 0.001


# -------------------------------------------------------------------- through the registry

INNER_BASELINE = """
from sklearn.linear_model import LogisticRegression
from tcclib.method import registry
C = {c}


def inner(seed, cfg):
    return LogisticRegression(C=C, max_iter=200)


registry.register_baseline("inner", inner, replace=True)
"""

OUTER_BASELINE = """
from tcclib.method import registry


def outer(seed, cfg):
    return registry.get("inner").factory(seed, cfg)


registry.register_baseline("outer", outer)
"""

INNER_OBJECTIVE = """
import torch
from tcclib.method import objectives, registry


class Inner(objectives.Objective):
    name = "inner_objective"

    def __init__(self, weight=1.0):
        self.weight = weight

    def heads(self, stack):
        return {{"decoder": [stack.width]}}

    def loss(self, batch):
        out = batch.head("decoder", batch.encode(batch.views))
        return objectives.row_squared_error(out, batch.anchors) * self.weight


registry.register_method(
    "inner_method", "column", "uniform", objective=Inner({weight}), replace=True, replace_rule=True
)
"""

OUTER_OBJECTIVE = """
from tcclib.method import objectives, registry


class Outer(objectives.Objective):
    name = "outer_objective"

    def heads(self, stack):
        return registry.objective("inner_objective").heads(stack)

    def loss(self, batch):
        return 0.5 * registry.objective("inner_objective").loss(batch)


registry.register_method("outer_method", "column", "uniform", objective=Outer())
"""

INNER_RULE = """
from tcclib.method import registry, rules


class Near(rules.HowRule):
    name = "near"
    needs = rules.NOTHING
    K = {k}

    def donors(self, members, state, u):
        n_rows = members.shape[1]
        return (u * min(self.K, n_rows)).long()


registry.register_method("near", Near(), "uniform", replace=True, replace_rule=True)
"""

OUTER_RULE = """
from tcclib.method import registry, rules


class Mostly(rules.HowRule):
    name = "mostly"
    needs = rules.NOTHING

    def donors(self, members, state, u):
        return registry.how_rule("near").donors(members, state, u)


registry.register_method("mostly", Mostly(), "uniform")
"""


OUTER_OBJECTIVE_THROUGH_CONFIG = """
from tcclib.method import config, objectives, registry


class Outer(objectives.Objective):
    name = "outer_objective"

    def heads(self, stack):
        return config.METHODS["inner_method"].learns.heads(stack)

    def loss(self, batch):
        return 0.5 * config.METHODS["inner_method"].learns.loss(batch)


registry.register_method("outer_method", "column", "uniform", objective=Outer())
"""

INNER_TCCLIB_CLASS = """
from tcclib.method import objectives, registry

registry.register_method(
    "inner_method", "column", "uniform", objective=objectives.VIME(alpha={alpha}, name="inner_objective"),
    replace=True, replace_rule=True,
)
"""


def _baseline_code(cfg):
    return registry.get("outer").code(cfg)


def _objective_code(cfg):
    return registry.METHODS["outer_method"].user_codes(cfg)


def _rule_code(cfg):
    return registry.METHODS["mostly"].user_codes(cfg)


@pytest.mark.parametrize(
    "inner, outer, first, second, reader",
    [
        (INNER_BASELINE, OUTER_BASELINE, {"c": 1.0}, {"c": 0.01}, _baseline_code),
        (INNER_OBJECTIVE, OUTER_OBJECTIVE, {"weight": 1.0}, {"weight": 0.5}, _objective_code),
        (INNER_RULE, OUTER_RULE, {"k": 20}, {"k": 200}, _rule_code),  # (alike on the 16-row key probe)
        (INNER_OBJECTIVE, OUTER_OBJECTIVE_THROUGH_CONFIG, {"weight": 1.0}, {"weight": 0.5}, _objective_code),
        (INNER_TCCLIB_CLASS, OUTER_OBJECTIVE, {"alpha": 2.0}, {"alpha": 500.0}, _objective_code),
    ],
    ids=["baseline", "objective", "rule", "objective through config.METHODS", "a tcclib class registered"],
)
def test_a_users_code_reaching_another_users_through_the_registry_is_keyed_by_it(
    inner, outer, first, second, reader, loaded
):
    """``registry.get("inner").factory(...)``, ``registry.objective("inner_objective").loss(batch)``,
    ``registry.how_rule("near").donors(...)``: an edit of what it reaches moves its key."""
    loaded("inner_plugin", inner.format(**first))
    loaded("outer_plugin", outer)
    cfg = Config(methods=("random",), **TINY)
    before = reader(cfg)
    assert "registered:" in json.dumps(before)
    loaded("inner_plugin", inner.format(**second))
    assert reader(cfg) != before
    loaded("inner_plugin", inner.format(**first))
    assert reader(cfg) == before


DOTTED_RULE = """
import tcclib.method.rules
from tcclib.method import registry


class Dotted(tcclib.method.rules.HowRule):
    name = "dotted"
    needs = tcclib.method.rules.NOTHING

    def donors(self, members, state, u):
        from tcclib.method import rules as deferred  # (an import inside: no registry either)

        return deferred.column_donors(u) if u.ndim else tcclib.method.rules.column_donors(u)


registry.register_method("dotted", Dotted(), "uniform")
"""


@pytest.mark.parametrize("method, source", [("near", INNER_RULE.format(k=20)), ("dotted", DOTTED_RULE)])
def test_code_that_does_not_read_the_registry_keeps_its_key_when_other_plugins_load(method, source, loaded):
    """Only code that reads the registry holds what is registered (``tcclib.method.rules`` spelled
    out, or imported inside a method, is no registry): loading another plugin moves no other user
    method's key."""
    loaded("plain_plugin", source)
    cfg = Config(methods=("random",), **TINY)
    before = registry.METHODS[method].user_codes(cfg)
    assert "registered:" not in json.dumps(before)
    loaded("outer_plugin", OUTER_RULE.replace('"near"', '"column"'))
    loaded("other_plugin", INNER_BASELINE.format(c=3.0))
    assert registry.METHODS[method].user_codes(cfg) == before


# ------------------------------------------------------------------- the sweep: a table that changed


def test_a_finished_dataset_whose_file_changed_is_stale(tmp_path, capsys):
    """The sweep's plan calls a finished dataset stale once the file it was read from changed (the
    members retrain: the data is in every key), and says so in its skipped line and at --check."""
    table = tmp_path / "mytable.csv"
    table.write_text("a,b,label\n" + "".join(f"{i},{i % 3},{i % 2}\n" for i in range(40)))
    params = tmp_path / "mine.yaml"
    params.write_text(
        f"name: mine\ndatasets: ['{table}:label']\nconfig:\n  methods: [random]\n  seeds: [0]\n  epochs: 1\n"
    )
    ps = sweep.param_files.load(params)
    (dataset,) = ps.datasets
    folder = tmp_path / "runs" / ps.name / dataset
    folder.mkdir(parents=True)
    (folder / "config.json").write_text(json.dumps(store.settings_record(ps.config_for(dataset), None, table)))
    assert sweep.settings_changed(ps, folder.parent, dataset) is None
    table.write_text(table.read_text().replace("\n0,0,0\n", "\n0,2,1\n"))
    changed = sweep.settings_changed(ps, folder.parent, dataset)
    assert changed == "data file mytable.csv changed"
    assert "training again every member whose data, as read, changed" in sweep.skipped_line(
        folder.parent, dataset, changed
    )
    (folder / "_DONE.json").write_text("{}")  # (finished: what --check tells of the set)
    (folder / "results.csv").write_text("dataset,seed,method\n")
    assert cli.main([str(params), "--check", "--outputs", str(tmp_path / "runs")]) == 0
    assert "(data file mytable.csv changed): --force stale" in capsys.readouterr().out


@pytest.mark.parametrize(
    "before, after, said",
    [
        ("'{table}:label'", "'{table}:other'", "target 'other' vs 'label'"),
        ("{{path: '{table}', target: label}}", "{{path: '{table}', target: label, encoding: latin-1}}", "options"),
    ],
    ids=["another target", "a reading option"],
)
def test_a_finished_dataset_read_otherwise_from_the_same_file_is_stale(before, after, said, tmp_path):
    """The same bytes read with another target column or CSV options are other data: the sweep
    calls the finished dataset stale (it was "already done" while only the file's bytes were compared)."""
    table = tmp_path / "mytable.csv"
    table.write_text("a,b,label,other\n" + "".join(f"{i},{i % 3},{i % 2},{i % 4 // 2}\n" for i in range(40)))

    def param_set(datasets: str):
        params = tmp_path / "mine.yaml"
        text = f"name: mine\ndatasets: [{datasets.format(table=table)}]\nconfig:\n  methods: [no_pretrain]\n"
        text += "  seeds: [0]\n  epochs: 1\n  head_epochs: 1\n  baselines: []\n"
        params.write_text(text)
        return sweep.param_files.load(params)

    ps = param_set(before)
    (dataset,) = ps.datasets
    folder = tmp_path / "runs" / ps.name / dataset
    run = train.run_dataset(ps.spec(dataset), ps.config_for(dataset).replace(progress=False))
    store.save_run(run, folder)  # (config.json as a run writes it: how its file was read included)
    recorded = json.loads((folder / "config.json").read_text())["data_file"]
    assert recorded["read"] == sources.local_source(ps.spec(dataset))[1]
    assert sweep.settings_changed(ps, folder.parent, dataset) is None
    ps = param_set(after)
    changed = sweep.settings_changed(ps, folder.parent, dataset)
    assert changed.startswith("data file mytable.csv read otherwise (") and said in changed


PRIOR_OF_30 = """
import torch
from tcclib.method import registry, rules

PRIOR = [0.5] * 30  # (a prior over breast_cancer's 30 features: written for that table)


class Prior(rules.WhereRule):
    name = "prior_30"
    fixed_count = False

    def mask(self, members, state):
        k, n_rows, n_features = members.shape
        prior = torch.as_tensor(PRIOR, device=members.device)
        return (members.uniform(7, (n_rows, n_features)) < prior) & members.active.unsqueeze(1)


registry.register_method("prior_30", "column", Prior())
"""


def test_a_rule_written_for_the_runs_table_is_checked_on_it_not_refused(loaded, bc):
    """The contract check before a run's work breaches on the small table (12 features) a rule
    written for the run's 30; checked again on the run's own rows it keeps the contract, and the
    run trains (it was refused before any work)."""
    loaded("prior_plugin", PRIOR_OF_30)
    from tcclib import TCCClassifier
    from tcclib.method import check
    from tcclib.running.train import run_dataset

    assert not check.check_rule("prior_30", raise_on_breach=False).ok
    run = run_dataset(bc, Config(methods=("prior_30",), **TINY))
    assert run.timings["trained_members"] == 1
    y = bc.y.iloc[:120].astype(object).where(np.arange(120) % 3 == 0, None)  # (fit: its labeled rows)
    assert TCCClassifier("prior_30", epochs=1, head_epochs=1).fit(bc.X.iloc[:120], y).encoder_ is not None


def test_rows_changed_between_run_dataset_and_save_run_are_not_stored_as_trained(tmp_path, bc):
    """A cell between ``run_dataset`` and ``save_run`` that changes the run's rows (notebook 03
    edited): stored under the members' keys, they would come back as trained results in every
    later run; refused in one line, nothing written; the run's own rows store as before."""
    from tcclib.running.train import run_dataset

    run = run_dataset(bc, Config(methods=("random",), **TINY))
    honest = run.results.copy()
    run.results["accuracy"] = 0.5
    with pytest.raises(store.ChangedRowsError, match=r"changed after run_dataset made them") as refused:
        store.save_run(run, tmp_path)
    assert "\n" not in str(refused.value) and list(tmp_path.iterdir()) == []
    run.results = honest
    store.save_run(run, tmp_path)
    again = run_dataset(bc, Config(methods=("random",), **TINY), store_dir=tmp_path)
    assert again.timings["trained_members"] == 0
    assert np.allclose(again.results["accuracy"], honest["accuracy"]) and (again.results["accuracy"] != 0.5).all()
    again.history.loc[0, "loss"] = 0.0  # (the losses too)
    with pytest.raises(store.ChangedRowsError):
        store.save_run(again, tmp_path)


def test_a_run_saved_into_another_datasets_finished_folder_is_refused(tmp_path, bc):
    """A notebook's ``output_dir`` pointed at another dataset's finished folder: the marker there
    would go on naming its dataset over the new rows (the sweep: "already done"); refused, the
    folder as it was. The same dataset's run saves over it as before."""
    from tcclib.running.train import run_dataset

    cfg = Config(methods=("random",), **TINY)
    store.save_run(run_dataset(bc, cfg), tmp_path / "breast_cancer")
    before = {f.name: f.read_bytes() for f in (tmp_path / "breast_cancer").iterdir()}
    other = run_dataset("balance-scale", cfg)
    with pytest.raises(store.ForeignFolderError) as refused:
        store.save_run(other, tmp_path / "breast_cancer")
    assert str(refused.value).endswith(
        "holds the finished results of breast_cancer, and this run is of balance-scale: give the run a folder "
        "of its own (output_dir), or remove that folder first"
    )
    assert {f.name: f.read_bytes() for f in (tmp_path / "breast_cancer").iterdir()} == before
    store.save_run(run_dataset(bc, cfg.replace(epochs=2)), tmp_path / "breast_cancer")


LATE_READER = """
import json
from pathlib import Path

from tcclib.method import objectives, registry

HERE = Path(__file__).parent


class Late(objectives.Objective):
    name = "late"

    def heads(self, stack):
        return {}

    def prepare(self, stack):
        return {"steps": 0}

    def loss(self, batch):
        batch.state["steps"] += 1
        if batch.state["steps"] == 2:  # (after a warm-up step)
            batch.state["target"] = json.loads((HERE / "target.json").read_text())["target"]
        return (batch.encode(batch.pairs) - batch.state.get("target", 0.0)).pow(2).mean((1, 2))


registry.register_method("late", "column", "uniform", objective=Late())
"""


def test_a_loss_that_opens_a_file_after_its_first_step_is_refused(loaded, tmp_path, bc):
    """Only the first call of a user's loss() was watched for files: one read on a later step (after
    a warm-up kept in batch.state) was neither keyed nor refused, and an edit of it reused the
    stored members (audit 21); every call is watched now."""
    from tcclib.method.objectives import ObjectiveContractError
    from tcclib.running.train import run_dataset

    (tmp_path / "target.json").write_text('{"target": 1.0}')
    loaded("late_objective", LATE_READER)
    said = r"objective 'late' \(late_objective.py\): loss\(\) opened target.json as it trained"
    with pytest.raises(ObjectiveContractError, match=said):
        run_dataset(bc, Config(methods=("late",), **TINY))


def test_data_a_notebook_cell_changed_makes_the_finished_dataset_stale(tmp_path, capsys):
    """A cell of notebook 03 that changes the data after ``load_dataset`` (fewer columns, a value
    changed in place) and a forced run: the members are keyed by the data as run, and config.json
    says how it differed, so that the next sweep calls the dataset stale (it said "already done"),
    at --check too; the run's notes say so, and it is not compared with the committed reference."""
    from tcclib.running.train import run_dataset

    params = tmp_path / "mine.yaml"
    settings = "  methods: [random]\n  seeds: [0]\n  epochs: 1\n  head_epochs: 1\n"
    params.write_text(f"name: mine\ndatasets: [breast_cancer]\nconfig:\n{settings}")
    ps = sweep.param_files.load(params)
    folder = tmp_path / "runs" / "mine" / "breast_cancer"
    cfg = ps.config_for("breast_cancer").replace(progress=False)
    ds = sources.load_dataset("breast_cancer")
    assert sources.changed_since_loaded(ds) is None
    assert sources.changed_since_loaded(sources.from_frame(ds.X, ds.y)) is None  # (not loaded)
    narrow = dataclasses.replace(ds, X=ds.X.iloc[:, :10])
    run = run_dataset(narrow, cfg)
    assert run.data_changed == "569 rows x 10 columns, loaded as 569 x 30"
    assert any("changed after load_dataset read it (569 rows x 10" in note for note in run.code_notes)
    store.save_run(run, folder)
    changed = sweep.settings_changed(ps, folder.parent, "breast_cancer")
    assert changed == "data changed after loading: 569 rows x 10 columns, loaded as 569 x 30"
    assert "training again every member whose data" in sweep.skipped_line(folder.parent, "breast_cancer", changed)
    assert cli.main([str(params), "--check", "--outputs", str(tmp_path / "runs")]) == 0
    assert "data changed after loading: 569 rows x 10 columns, loaded as 569 x 30" in capsys.readouterr().out
    reference = tmp_path / "reference" / "breast_cancer"
    store.save_run(run_dataset(sources.load_dataset("breast_cancer"), cfg), reference)
    assert store.reference_line(folder, reference).endswith(
        "other settings (data changed after loading: 569 rows x 10 columns, loaded as 569 x 30)"
    )
    ds.X.iloc[0, 0] += 1.0  # (in place)
    assert sources.changed_since_loaded(ds) == "its values or columns' names, loaded as 569 rows x 30 columns"
    store.save_run(run_dataset(sources.load_dataset("breast_cancer"), cfg), folder)
    assert sweep.settings_changed(ps, folder.parent, "breast_cancer") is None
    assert store.reference_line(folder, reference).startswith("AGREES")


def test_a_dataset_finished_by_a_notebook_run_by_hand_is_rendered_by_the_sweep(tmp_path, bc, capsys):
    """Notebook 03 run by hand (Lab, papermill) into a set's folder before any sweep writes its
    own marker: the sweep said "already done" and never rendered the set's other notebooks; now
    the dataset runs again (reusing every member) until they are rendered, and --check says why."""
    from tcclib.running.train import run_dataset

    params = tmp_path / "mine.yaml"
    settings = "  methods: [random]\n  seeds: [0]\n  epochs: 1\n  head_epochs: 1\n"
    notebooks = "per_dataset_notebooks: [01_data_prep, 03_pretraining]\n"
    params.write_text(f"name: mine\ndatasets: [breast_cancer]\n{notebooks}config:\n{settings}")
    ps = sweep.param_files.load(params)
    folder = tmp_path / "runs" / "mine" / "breast_cancer"
    store.save_run(run_dataset(bc, ps.config_for("breast_cancer").replace(progress=False)), folder)
    (folder / "03_pretraining.ipynb").write_text("{}")  # (the hand run's own render)
    plan = sweep._plan(ps, folder.parent, sweep.SweepOptions())
    assert plan.todo == ["breast_cancer"] and plan.stale == {}
    assert plan.incomplete == {"breast_cancer": "01_data_prep.ipynb not rendered (finished by a notebook run by hand)"}
    assert cli.main([str(params), "--check", "--outputs", str(tmp_path / "runs")]) == 0
    assert "breast_cancer: 01_data_prep.ipynb not rendered" in capsys.readouterr().out
    (folder / "01_data_prep.ipynb").write_text("{}")
    assert sweep._plan(ps, folder.parent, sweep.SweepOptions()).skipped == ["breast_cancer"]
    marker = json.loads((folder / "_DONE.json").read_text())
    (folder / "01_data_prep.ipynb").unlink()  # (a sweep's marker: its renders are its own business)
    (folder / "_DONE.json").write_text(json.dumps({**marker, "by": "tcclib.running.sweep"}))
    assert sweep._plan(ps, folder.parent, sweep.SweepOptions()).skipped == ["breast_cancer"]


# ----------------------------------------------------------------------- a store torn by a crash


def test_a_store_torn_between_two_writes_is_never_taken_for_the_other_runs(tmp_path, bc, monkeypatch):
    """``save_run`` takes ``keys.json`` away first and writes it last: a run at 2 epochs whose save
    fails after ``results.csv`` (a kill, a full disk) leaves no key, so the next run at 1 epoch
    trains its member again and gets the 1-epoch result (it took the 2-epoch one as its own)."""
    from tcclib.running.train import run_dataset

    one, two = Config(methods=("random",), **TINY), Config(methods=("random",), **{**TINY, "epochs": 2})
    store.save_run(run_dataset(bc, one), tmp_path)
    real_write = store.write_csv

    def full_disk(frame, path):
        if str(path).endswith("history.csv"):
            raise OSError(28, "No space left on device")
        return real_write(frame, path)

    monkeypatch.setattr(store, "write_csv", full_disk)
    with pytest.raises(OSError):
        store.save_run(run_dataset(bc, two), tmp_path)
    monkeypatch.undo()
    assert not (tmp_path / "keys.json").exists()
    again = run_dataset(bc, one, store_dir=tmp_path)
    assert again.timings["trained_members"] == 1
    truth = run_dataset(bc, one).results
    assert again.results[["accuracy", "auroc"]].equals(truth[["accuracy", "auroc"]])


def test_a_whole_number_for_a_float_setting_keys_as_the_float(prep):
    """``temperature=1`` (papermill's ``-p temperature 1``) is 1.0: the same keys, so the stored
    results are reused (every member trained again)."""
    as_int = Config(methods=("random",), **{**TINY, "temperature": 1, "lr": 1})
    as_float = Config(methods=("random",), **{**TINY, "temperature": 1.0, "lr": 1.0})
    assert as_int.temperature == 1.0 and isinstance(as_int.temperature, float)
    assert keys.run_keys(prep, as_int).members == keys.run_keys(prep, as_float).members


def test_notebook_03_puts_a_dataset_given_by_id_or_in_another_case_in_its_own_folder():
    """``dataset=11`` and ``Balance-Scale`` run into ``balance-scale`` (three folders before: no
    reuse, and the aggregate counted the dataset twice)."""
    from tcclib.running.nbparams import folder_name

    assert {folder_name(x) for x in (11, "11", "Balance-Scale", "balance-scale")} == {"balance-scale"}
    assert folder_name("/somewhere/mytable.csv:label") == "mytable"


def _adopt_stored():
    """``tools/adopt_stored.py`` as a module (a tool, not a package module)."""
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "tools" / "adopt_stored.py"
    spec = importlib.util.spec_from_file_location("adopt_stored", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_adopting_stored_results_compares_what_they_record_and_takes_nothing_on_trust(tmp_path):
    """``tools/adopt_stored.py`` keys old results only where what they record is what the file
    asks now: a folder with its keys is left alone, a changed data file is not adopted, and what a
    folder does not record (its data file, an ablation grid's settings) needs --take-unrecorded."""
    from tcclib.running.train import run_dataset

    adopt = _adopt_stored()
    table = tmp_path / "mytable.csv"
    table.write_text("a,b,label\n" + "".join(f"{i},{(i * 7) % 5},{i % 2}\n" for i in range(60)))
    params = tmp_path / "mine.yaml"
    params.write_text(
        f"name: mine\ndatasets: ['{table}:label']\nconfig:\n  methods: [random]\n  seeds: [0]\n  epochs: 1\n"
        "  head_epochs: 1\n  baselines: []\n"
    )
    ps = sweep.param_files.load(params)
    (dataset,) = ps.datasets
    folder = tmp_path / "runs" / ps.name / dataset
    store.save_run(run_dataset(ps.spec(dataset), ps.config_for(dataset).replace(progress=False)), folder)
    assert adopt.adopt_dataset(ps, folder).startswith("left alone: it has its keys.json")
    stored_keys = (folder / "keys.json").read_text()
    (folder / "keys.json").unlink()
    assert adopt.adopt_dataset(ps, folder).startswith("adopted: 1 members")
    assert json.loads((folder / "keys.json").read_text())["members"] == json.loads(stored_keys)["members"]
    (folder / "keys.json").unlink()
    table.write_text(table.read_text().replace("\n0,0,0\n", "\n0,4,1\n"))
    assert adopt.adopt_dataset(ps, folder) == "NOT adopted: recorded settings differ (data file mytable.csv changed)"
    assert not (folder / "keys.json").exists()
    recorded = json.loads((folder / "config.json").read_text())
    del recorded["data_file"]  # (a run from before the data file was recorded)
    (folder / "config.json").write_text(json.dumps(recorded))
    assert adopt.adopt_dataset(ps, folder).startswith("NOT adopted: its config.json records no data file")
    assert adopt.adopt_dataset(ps, folder, take_unrecorded=True).startswith("adopted")
    grid = sweep.param_files.load(params)
    grid.per_dataset_notebooks = ["07_ablation"]
    (folder / "keys.json").unlink()
    assert adopt.adopt_dataset(grid, folder).startswith("NOT adopted: a 07_ablation folder records no settings")
    assert not (folder / "keys.json").exists()


# ----------------------------------------------- a fourth audit: a cache, the environment, a dataclass

CACHED_WINDOW = """
import functools

from tcclib.method import registry, rules

SHARE = 1.0


@functools.lru_cache(maxsize=None)
def window(n_rows):
    return max(16, int(SHARE * n_rows))  # (the same on the 16-row key probe whatever SHARE is)


class Windowed(rules.HowRule):
    name = "windowed"
    needs = rules.NOTHING

    def donors(self, members, state, u):
        return (u * window(members.shape[1])).long()


registry.register_method("windowed", Windowed(), "uniform")
"""


def test_a_cache_of_the_users_is_emptied_as_its_function_is_keyed(loaded):
    """A ``functools.lru_cache`` helper keeps what it computed with the old constant: the key
    reads the new one, so the cache is emptied then and the run computes as the key says."""
    path = loaded("windowed_plugin", CACHED_WINDOW)
    module = next(m for m in list(__import__("sys").modules.values()) if getattr(m, "__file__", None) == str(path))
    cfg = Config(methods=("random",), **TINY)
    before = registry.METHODS["windowed"].user_codes(cfg)
    assert module.window(455) == 455  # (the run's table: cached with SHARE 1.0)
    module.SHARE = 0.3  # (a later cell, or a plugin edited in place)
    assert registry.METHODS["windowed"].user_codes(cfg) != before
    assert module.window(455) == 136  # (not the cached 455: what the key says)


ENVIRONMENT_READS = {
    "getattr": "getattr(os, 'environ').get('TCC_AUDIT_SHARE', '1')",
    "vars": "vars(os)['environ'].get('TCC_AUDIT_SHARE', '1')",
    "a default": "get('TCC_AUDIT_SHARE', '1')",
    "a file": "open('/proc/self/environ').read()[:1] and '1'",
    "posix": "posix.environ.get(b'TCC_AUDIT_SHARE', b'1')",
    "expandvars": "os.path.expandvars('$TCC_AUDIT_SHARE').lstrip('$') and '1'",
    "a program": "subprocess.run(['printenv', 'TCC_AUDIT_SHARE'], capture_output=True).stdout or '1'",
}


@pytest.mark.parametrize("how", list(ENVIRONMENT_READS))
def test_every_way_a_rule_reads_the_environment_as_it_draws_is_refused(how, loaded):
    """``getattr(os, "environ")``, ``vars(os)["environ"]``, a default ``get=os.getenv``,
    ``/proc/self/environ``, ``posix.environ`` and ``os.path.expandvars`` read the environment as
    ``os.environ`` does, and a program run as it draws (``printenv``) gives what no key sees:
    refused in one line."""
    source = f"""
import os
import posix
import subprocess

from tcclib.method import registry, rules


class FromEnvironment(rules.HowRule):
    name = "from_environment"
    needs = rules.NOTHING

    def donors(self, members, state, u{", get=os.getenv" if how == "a default" else ""}):
        share = float({ENVIRONMENT_READS[how]})
        return (u * max(1, int(share * members.shape[1]))).long()


registry.register_method("from_environment", FromEnvironment(), "uniform")
"""
    refusal = "runs another program or native code" if how == "a program" else "reads the environment"
    with pytest.raises((registry.RegistryError, identity.Unkeyable), match=refusal):
        loaded("environment_plugin", source)
        registry.METHODS["from_environment"].user_codes(Config(methods=("random",), **TINY))


def test_a_dataclass_rule_without_a_hash_is_refused_where_it_is_registered(loaded):
    """A plain ``@dataclass`` has no hash (it compares its fields), and a run groups its members by
    their rule objects: refused in one line at registration, not a TypeError in training."""
    source = """
from dataclasses import dataclass

from tcclib.method import registry, rules


@dataclass
class Fielded(rules.HowRule):
    share: float = 1.0
    name = "fielded"
    needs = rules.NOTHING

    def donors(self, members, state, u):
        return (u * members.shape[1] * self.share).long()


registry.register_method("fielded", Fielded(), "uniform")
"""
    with pytest.raises(registry.RegistryError, match=r"cannot be hashed .* @dataclass\(eq=False\)"):
        loaded("fielded_plugin", source)
    loaded("fielded_plugin", source.replace("@dataclass\n", "@dataclass(eq=False)\n"))
    assert "fielded" in registry.METHODS


def test_an_edit_of_a_rule_whose_results_were_stored_by_an_earlier_scheme_is_named_as_what_changed():
    """``STORED_AS`` maps ``examples/nearby_rule.py`` with its defaults to the identity the screen
    stored it under; an edit of that rule (notebook 09's cell) is said as the change it is."""
    ((now, stored),) = registry.STORED_AS.items()
    code, state, draws = now.split(" ")
    assert registry.changes(stored, f"code:0123456789abcdef {state} {draws}") == ["code"]
    assert registry.changes(stored, f"{code} state:0123456789abcdef {draws}") == ["arguments"]
    assert registry.changes("source:0123456789abcdef", now) == ["scheme"]  # (one no longer mapped)


def test_the_environment_read_through_a_module_of_the_users_is_refused(loaded, tmp_path):
    """``helpers.os.environ``: ``os`` held by a module of the user's is ``os``."""
    (tmp_path / "helpers_of_environment.py").write_text("import os\n")
    source = """
import helpers_of_environment
from tcclib.method import registry, rules


class Through(rules.HowRule):
    name = "through_helpers"
    needs = rules.NOTHING

    def donors(self, members, state, u):
        share = float(helpers_of_environment.os.environ.get("TCC_AUDIT_SHARE", "1"))
        return (u * max(1, int(share * members.shape[1]))).long()


registry.register_method("through_helpers", Through(), "uniform")
"""
    with pytest.raises((registry.RegistryError, identity.Unkeyable), match="reads the environment"):
        loaded("through_helpers_plugin", source)
