"""Nothing lost, nothing silent: bad inputs are clear errors before work starts, faults are survived.

* parameter files: every value a run will use is checked when the file is loaded, so that
  ``python -m tcclib.running.sweep FILE --check`` catches it;
* caches: a damaged or foreign importance cache or checkpoint is reported, discarded and redone;
* training: a diverging run stops with :class:`tcclib.running.train.TrainingDiverged`.
"""

import pytest
import torch

from tcclib.method.config import Config, ConfigError
from tcclib.running import cli
from tcclib.running import params as param_files

HEAD = "name: x\ndatasets: [breast_cancer]\n"


# ------------------------------------------------------------------ parameter files
@pytest.mark.parametrize(
    "text,words",
    [
        # text where text belongs (write_index strips the description)
        (HEAD + "description: 5\n", ["'description' must be text", "int 5"]),
        (HEAD + "description:\n", ["'description' must be text", "nothing"]),
        (HEAD + "data_dir: 5\n", ["'data_dir' must be a folder path"]),
        (HEAD + "data_dir: ''\n", ["'data_dir' must be a folder path"]),
        # a single value where a list belongs: the fix, not "unknown method 'r'" or "not iterable"
        (HEAD + "config: {methods: random}\n", ["methods: expected a list", "methods: [random]"]),
        (HEAD + "config: {seeds: 42}\n", ["seeds: expected a list", "seeds: [42]"]),
        (HEAD + "config: {baselines: xgboost}\n", ["baselines: expected a list", "baselines: [xgboost]"]),
        (HEAD + "config: [1, 2]\n", ["'config' must be a mapping"]),
        (
            HEAD + "keep_embeddings: breast_cancer\n",
            ["'keep_embeddings' must be a list", "keep_embeddings: [breast_cancer]"],
        ),
        ("name: x\ndatasets: breast_cancer\n", ["'datasets' must be a non-empty list", "[breast_cancer]"]),
        (HEAD + "per_dataset_notebooks: 01_data_prep\n", ["must be a list", "[01_data_prep]"]),
        (HEAD + "per_dataset_notebooks:\n", ["must be a list", "[] for none"]),
        (HEAD + "aggregate_notebooks: [05_figures, 05_figures]\n", ["listed twice"]),
        (HEAD + "per_dataset_notebooks: [04_evaluation]\n", ["04_evaluation belongs in aggregate_notebooks"]),
        (HEAD + "aggregate_notebooks: [03_pretraining]\n", ["03_pretraining belongs in per_dataset_notebooks"]),
        # seeds every library accepts: scikit-learn's random_state must be < 2**32
        (HEAD + "config: {seeds: [1099511627776]}\n", ["seeds: 1099511627776 is too large", "4294967295"]),
        (HEAD + "config: {seeds: [4294967296]}\n", ["too large"]),
        # types of the other values
        (HEAD + "workers: true\n", ["'workers' must be a positive integer"]),
        (HEAD + "workers: '2'\n", ["'workers' must be a positive integer"]),
        (HEAD + "config: {device: 5}\n", ["device: 'cpu', 'cuda' or 'cuda:N'"]),
        (HEAD + "config: {device: 'cuda:x'}\n", ["device: 'cpu', 'cuda' or 'cuda:N'"]),
        (HEAD + "config: {progress: 'no'}\n", ["progress: expected true or false"]),
        (HEAD + "config: {keep_embeddings: 1}\n", ["keep_embeddings: expected true or false"]),
        (HEAD + "config: {lr: 1e-3}\n", ["lr: expected a finite number", "1.0e-3"]),
        (HEAD + "config: {methods: [{a: 1}]}\n", ["methods: unknown method"]),
        (HEAD + "config: {baselines: [xgboost, xgboost]}\n", ["baselines: duplicates"]),
        # names that must be datasets of the set (else nothing is kept / the figure is missing)
        (HEAD + "keep_embeddings: [diabetes]\n", ["keep_embeddings: diabetes not in 'datasets'"]),
        (HEAD + "figure_dataset: diabetes\n", ["figure_dataset: diabetes is not in 'datasets'"]),
        (HEAD + "figure_dataset: [1]\n", ["figure_dataset: [1] is not a dataset name"]),
        # a key given twice: YAML would keep the last value silently
        (
            HEAD + "config: {epochs: 3}\nconfig: {epochs: 5}\n",
            ["line 4: key 'config' is given twice", "first on line 3"],
        ),
        (HEAD + "config:\n  epochs: 3\n  lr: 0.1\n  epochs: 5\n", ["line 6: key 'epochs' is given twice"]),
    ],
)
def test_a_bad_value_in_a_parameter_file_is_a_clear_error_at_check_time(tmp_path, capsys, text, words):
    p = tmp_path / "bad.yaml"
    p.write_text(text)
    with pytest.raises(param_files.ParamsError) as e:
        param_files.load(p)
    for w in words:
        assert w in str(e.value), str(e.value)
    assert cli.main([str(p), "--check"]) == 2
    assert words[0] in capsys.readouterr().err


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has a CUDA device")
def test_cuda_without_a_gpu_fails_at_check_time(tmp_path, capsys):
    p = tmp_path / "gpu.yaml"
    p.write_text(HEAD + "config: {device: cuda}\n")
    with pytest.raises(param_files.ParamsError, match="no CUDA device is visible"):
        param_files.load(p)
    assert cli.main([str(p), "--check"]) == 2
    Config(device="cuda")  # a valid setting for another machine: only loading a file checks it
    with pytest.raises(ConfigError, match="no CUDA device"):
        Config(device="cuda:1").check_device()


def test_valid_files_still_load_and_mean_the_same(tmp_path):
    p = tmp_path / "ok.yaml"
    p.write_text(
        "name: ok\ndescription: ''\ndatasets: [breast_cancer, diabetes]\n"
        "keep_embeddings: [diabetes]\nfigure_dataset: diabetes\nworkers: 2\n"
        "per_dataset_notebooks: []\naggregate_notebooks: [04_evaluation, 06_report]\n"
        "config: {seeds: [0, 4294967295], methods: [random], epochs: 2, lr: 1.0e-3,"
        " device: cpu, progress: false}\n"
    )
    ps = param_files.load(p)
    assert ps.config.seeds == (0, 4294967295) and ps.config.methods == ("random",)
    assert ps.per_dataset_notebooks == () and ps.aggregate_notebooks == ("04_evaluation", "06_report")
    assert ps.description == "" and ps.workers == 2 and ps.figure_dataset == "diabetes"
    # the default figure dataset need not be in the set (its notebook says there is none)
    ps = param_files.parse({"name": "y", "datasets": ["diabetes"]})
    assert ps.figure_dataset == "breast_cancer" and ps.per_dataset_notebooks == param_files.PER_DATASET_NOTEBOOKS
    # an empty "keep_embeddings:" or "config:" means none / the defaults, as before
    ps = param_files.parse({"name": "y", "datasets": ["diabetes"], "keep_embeddings": None, "config": None})
    assert ps.keep_embeddings == [] and ps.config == Config()
    # merge keys are no duplicates
    m = tmp_path / "merge.yaml"
    m.write_text("name: m\ndatasets: [breast_cancer]\nconfig:\n  <<: {epochs: 3, lr: 0.01}\n  epochs: 4\n")
    assert param_files.load(m).config.epochs == 4


def test_check_names_the_command_line_and_missing_notebook_sources(tmp_path, monkeypatch, capsys):
    p = tmp_path / "ok.yaml"
    p.write_text(HEAD)
    assert cli.main([str(p), "--check"]) == 0
    assert cli.main([str(p), "--check", "--workers", "0"]) == 2
    assert "--workers must be a positive integer" in capsys.readouterr().err
    monkeypatch.setenv("TCC_NOTEBOOKS", str(tmp_path))
    assert cli.main([str(p), "--check"]) == 2
    assert "notebook source 01_data_prep" in capsys.readouterr().err


@pytest.mark.parametrize("value", ["soon", "-5", "nan"])
def test_a_bad_checkpoint_interval_stops_the_sweep_before_any_work(tmp_path, monkeypatch, capsys, value):
    p = tmp_path / "ok.yaml"
    p.write_text(HEAD)
    monkeypatch.setenv("TCC_CHECKPOINT_SECONDS", value)
    assert cli.main([str(p), "--check"]) == 2
    err = capsys.readouterr().err
    assert "$TCC_CHECKPOINT_SECONDS must be a number of seconds >= 0" in err and repr(value) in err
    assert cli.main([str(p), "--outputs", str(tmp_path / "out")]) == 2
    assert "$TCC_CHECKPOINT_SECONDS" in capsys.readouterr().err
    assert not (tmp_path / "out" / "x").exists()  # nothing was started


# ------------------------------------------------------------------ importance cache
def _cfg(**kw):
    base = dict(
        seeds=(5,),
        methods=("random",),
        epochs=2,
        head_epochs=3,
        pseudo_every=1,
        batch_size=128,
        progress=False,
        xgb_trees=5,
        xgb_depth=3,
    )
    base.update(kw)
    return Config(**base)


@pytest.fixture(scope="module")
def bc5(bc):
    """breast_cancer with 5 features: 5 small XGBoost models per importance matrix."""
    from tcclib.data.sources import from_frame

    return from_frame(bc.X.iloc[:, :5], bc.y, name="bc5")


@pytest.fixture(scope="module")
def cached(bc5, tmp_path_factory):
    """The importance matrix of seed 5 (no cache) and a folder with valid cache files of
    seeds 5 and 6."""
    from tcclib.artifacts.importances import importance_matrices
    from tcclib.data.preprocess import prepare

    folder = tmp_path_factory.mktemp("cache")
    prep = prepare(bc5, [5, 6])
    both = importance_matrices("bc5", prep.splits, _cfg(), cache_dir=folder)
    return prepare(bc5, [5]), both[:1], folder


def _cache_file(folder, seed=5):
    (f,) = folder.glob(f"bc5-seed{seed}-*")
    return f


def _rewrite_npz(f, W, meta: dict):
    import json

    import numpy as np

    with open(f, "wb") as fh:
        np.savez(fh, W=W, meta=np.array(json.dumps(meta)))


def _npz_meta(f):
    import json

    import numpy as np

    with np.load(f) as z:
        return json.loads(str(z["meta"][()]))


def _silent_load(prep, folder):
    """Load from the cache, failing on any warning (the file must be valid)."""
    import warnings

    from tcclib.artifacts.importances import importance_matrices

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        return importance_matrices("bc5", prep.splits, _cfg(), cache_dir=folder)


def _message(rec, word: str) -> str:
    msgs = [str(w.message) for w in rec if word in str(w.message)]
    assert len(msgs) == 1, [str(w.message) for w in rec]
    return msgs[0]


@pytest.mark.parametrize(
    "damage,problem",
    [
        ("truncate", "unreadable"),
        ("edit", "sha256 mismatch"),
        ("shape", "shape (3, 3)"),
        ("foreign", "made for another run (seed 6"),
        ("not_cache", "not an importance cache file (holds x)"),
        ("npy", "not an importance cache file (a bare ndarray)"),
    ],
)
def test_a_damaged_or_foreign_importance_cache_is_reported_and_recomputed(cached, tmp_path, damage, problem):
    import hashlib
    import shutil

    import numpy as np

    from tcclib.artifacts.importances import importance_matrices

    prep, truth, valid = cached
    f = tmp_path / _cache_file(valid).name
    shutil.copy(_cache_file(valid), f)
    np.testing.assert_array_equal(_silent_load(prep, tmp_path), truth)  # a valid file is used as it is
    if damage == "truncate":  # a crash or a full disk: today every later run fails on it
        f.write_bytes(f.read_bytes()[:100])
    elif damage == "edit":  # a valid file with other numbers
        _rewrite_npz(f, truth[0] * 2, _npz_meta(f))
    elif damage == "shape":  # consistent in itself (checksum right), wrong shape for this dataset
        W = np.eye(3)
        _rewrite_npz(f, W, {**_npz_meta(f), "shape": [3, 3], "sha256": hashlib.sha256(W.tobytes()).hexdigest()})
    elif damage == "foreign":  # another seed's file under this name
        f.write_bytes(_cache_file(valid, 6).read_bytes())
    elif damage == "not_cache":
        with open(f, "wb") as fh:
            np.savez(fh, x=np.zeros(3))
    elif damage == "npy":  # the previous format (or any bare array) under this name
        with open(f, "wb") as fh:
            np.save(fh, truth[0])
    with pytest.warns(UserWarning) as rec:
        again = importance_matrices("bc5", prep.splits, _cfg(), cache_dir=tmp_path)
    msg = _message(rec, "importance cache")
    assert str(f) in msg and problem in msg and "computing it again" in msg, msg
    np.testing.assert_array_equal(again, truth)  # never used: recomputed, bit for bit
    np.testing.assert_array_equal(_silent_load(prep, tmp_path), truth)  # and written whole again


# ------------------------------------------------------------------ pretraining checkpoint
class _Stop(Exception):
    pass


def _crash_at(n):
    def f(epoch):
        if epoch == n:
            raise _Stop

    return f


@pytest.fixture(scope="module")
def crashed(bc5, tmp_path_factory):
    """An uninterrupted run and the checkpoint (epoch 2 of 4) of the same run stopped at epoch 2."""
    from tcclib.data.preprocess import prepare
    from tcclib.running.train import run_prepared

    cfg = _cfg(seeds=(11,), methods=("class",), epochs=4, pseudo_every=2)
    prep = prepare(bc5, cfg.seeds)
    whole = run_prepared(prep, cfg)
    folder = tmp_path_factory.mktemp("ckpt")
    with pytest.raises(_Stop):
        run_prepared(prep, cfg, checkpoint_dir=folder, checkpoint_every=1, on_epoch=_crash_at(2))
    (ck,) = folder.glob("bc5-*.pt")
    return prep, cfg, whole, ck


@pytest.mark.parametrize(
    "damage,problem",
    [
        ("edit", "sha256 mismatch"),
        ("key", "made for another run"),
        ("shape", "parameter shapes"),
        ("labels", "pseudo-labels outside"),
        ("truncate", "unreadable"),
    ],
)
def test_a_damaged_or_foreign_checkpoint_is_reported_and_training_starts_over(crashed, tmp_path, damage, problem):
    import pandas as pd

    from tcclib.artifacts import store
    from tcclib.running import train as threads

    prep, cfg, whole, valid = crashed
    ck = tmp_path / valid.name
    state = torch.load(valid, weights_only=False)
    assert state["epoch"] == 2
    if damage == "edit":  # the file's numbers changed (bit rot, a hand edit): the checksum says so
        state["params"][0] += 1
    elif damage == "key":  # another run's checkpoint under this name
        state["key"] = "0" * 16
    elif damage == "shape":  # consistent in itself, wrong shapes for this run
        state["params"][0] = torch.zeros(3, 3)
        state["sha256"] = store.state_digest(state)
    elif damage == "labels":
        state["labels"] = state["labels"] + 99
        state["sha256"] = store.state_digest(state)
    torch.save(state, ck)
    if damage == "truncate":
        ck.write_bytes(ck.read_bytes()[:1000])
    seen = []
    with pytest.warns(UserWarning) as rec:
        again = threads.run_prepared(prep, cfg, checkpoint_dir=tmp_path, on_epoch=seen.append)
    msg = _message(rec, "checkpoint")
    assert str(ck) in msg and problem in msg and "starting pretraining over" in msg, msg
    assert seen == [1, 2, 3, 4]  # started over, never resumed from it
    pd.testing.assert_frame_equal(again.results, whole.results)
    pd.testing.assert_frame_equal(again.history, whole.history)


def test_an_intact_checkpoint_resumes_also_one_written_without_a_checksum(crashed, tmp_path):
    import warnings

    import pandas as pd

    from tcclib.artifacts import store
    from tcclib.running import train as threads

    prep, cfg, whole, valid = crashed
    state = torch.load(valid, weights_only=False)
    assert state["sha256"] == store.state_digest(state)
    del state["sha256"]  # as the previous version wrote it
    torch.save(state, tmp_path / valid.name)
    seen = []
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        resumed = threads.run_prepared(prep, cfg, checkpoint_dir=tmp_path, on_epoch=seen.append)
    assert seen == [3, 4]
    pd.testing.assert_frame_equal(resumed.results, whole.results)
    pd.testing.assert_frame_equal(resumed.history, whole.history)


# ------------------------------------------------------------------ divergence
@pytest.mark.parametrize(
    "kw,what,epoch",
    [
        (dict(methods=("random",), lr=1e9), "the contrastive loss is nan at pretraining epoch 1 of 2", 1),
        (dict(methods=("class",), lr=1e30), "the pseudo-label head's predictions are not finite", 0),
        (
            dict(methods=("random",), lr=1e39, epochs=1, batch_size=512),  # inf in float32: NaN after the last step
            "an encoder weight is not finite after pretraining epoch 1",
            1,
        ),
        (dict(methods=("no_pretrain",), lr=1e30), "the classification head's test probabilities are not finite", None),
    ],
)
def test_a_diverging_run_stops_with_a_clear_error(bc5, kw, what, epoch):
    from tcclib.running.train import run_dataset

    try:
        from tcclib.running.train import TrainingDiverged
    except ImportError:  # (today's code: the late scikit-learn error below)
        TrainingDiverged = RuntimeError
    cfg = _cfg(seeds=(11,), **kw)
    with pytest.raises(TrainingDiverged) as e:
        run_dataset(bc5, cfg)
    msg = str(e.value)
    assert "training diverged: dataset bc5, seed 11, method " + cfg.methods[0] in msg and what in msg, msg
    assert "lower lr" in msg and isinstance(e.value, RuntimeError)
    assert (e.value.dataset, e.value.seed, e.value.method, e.value.epoch) == ("bc5", 11, cfg.methods[0], epoch)


def test_the_first_diverging_member_is_named_with_the_count_of_the_others(bc5):
    from tcclib.running.train import TrainingDiverged, run_dataset

    with pytest.raises(TrainingDiverged, match=r"seed 11, method random \(and 3 other members\)"):
        run_dataset(bc5, _cfg(seeds=(11, 22), methods=("random", "oracle"), lr=1e9))
