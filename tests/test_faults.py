"""Nothing lost, nothing silent: bad inputs are clear errors before work starts, faults are survived.

* parameter files: every value a run will use is checked when the file is loaded, so that
  ``python -m tcclib.sweep FILE --check`` catches it;
* caches: a damaged or foreign importance cache or checkpoint is reported, discarded and redone;
* training: a diverging run stops with :class:`tcclib.train.TrainingDiverged`.
"""

import pytest
import torch

from tcclib import params as P
from tcclib import sweep as S
from tcclib.config import Config, ConfigError

HEAD = "name: x\ndatasets: [breast_cancer]\n"


# ------------------------------------------------------------------ parameter files
@pytest.mark.parametrize("text,words", [
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
    (HEAD + "keep_embeddings: breast_cancer\n",
     ["'keep_embeddings' must be a list", "keep_embeddings: [breast_cancer]"]),
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
    (HEAD + "config: {epochs: 3}\nconfig: {epochs: 5}\n", ["line 4: key 'config' is given twice",
                                                           "first on line 3"]),
    (HEAD + "config:\n  epochs: 3\n  lr: 0.1\n  epochs: 5\n", ["line 6: key 'epochs' is given twice"]),
])
def test_a_bad_value_in_a_parameter_file_is_a_clear_error_at_check_time(tmp_path, capsys, text, words):
    p = tmp_path / "bad.yaml"
    p.write_text(text)
    with pytest.raises(P.ParamsError) as e:
        P.load(p)
    for w in words:
        assert w in str(e.value), str(e.value)
    assert S.main([str(p), "--check"]) == 2
    assert words[0] in capsys.readouterr().err


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has a CUDA device")
def test_cuda_without_a_gpu_fails_at_check_time(tmp_path, capsys):
    p = tmp_path / "gpu.yaml"
    p.write_text(HEAD + "config: {device: cuda}\n")
    with pytest.raises(P.ParamsError, match="no CUDA device is visible"):
        P.load(p)
    assert S.main([str(p), "--check"]) == 2
    Config(device="cuda")  # a valid setting for another machine: only loading a file checks it
    with pytest.raises(ConfigError, match="no CUDA device"):
        Config(device="cuda:1").check_device()


def test_valid_files_still_load_and_mean_the_same(tmp_path):
    p = tmp_path / "ok.yaml"
    p.write_text("name: ok\ndescription: ''\ndatasets: [breast_cancer, diabetes]\n"
                 "keep_embeddings: [diabetes]\nfigure_dataset: diabetes\nworkers: 2\n"
                 "per_dataset_notebooks: []\naggregate_notebooks: [04_evaluation, 06_report]\n"
                 "config: {seeds: [0, 4294967295], methods: [random], epochs: 2, lr: 1.0e-3,"
                 " device: cpu, progress: false}\n")
    ps = P.load(p)
    assert ps.config.seeds == (0, 4294967295) and ps.config.methods == ("random",)
    assert ps.per_dataset_notebooks == () and ps.aggregate_notebooks == ("04_evaluation", "06_report")
    assert ps.description == "" and ps.workers == 2 and ps.figure_dataset == "diabetes"
    # the default figure dataset need not be in the set (its notebook says there is none)
    ps = P.parse({"name": "y", "datasets": ["diabetes"]})
    assert ps.figure_dataset == "breast_cancer" and ps.per_dataset_notebooks == P.PER_DATASET_NOTEBOOKS
    # merge keys are no duplicates
    m = tmp_path / "merge.yaml"
    m.write_text("name: m\ndatasets: [breast_cancer]\nconfig:\n  <<: {epochs: 3, lr: 0.01}\n  epochs: 4\n")
    assert P.load(m).config.epochs == 4


def test_check_names_the_command_line_and_missing_notebook_sources(tmp_path, monkeypatch, capsys):
    p = tmp_path / "ok.yaml"
    p.write_text(HEAD)
    assert S.main([str(p), "--check"]) == 0
    assert S.main([str(p), "--check", "--workers", "0"]) == 2
    assert "--workers must be a positive integer" in capsys.readouterr().err
    monkeypatch.setenv("TCC_NOTEBOOKS", str(tmp_path))
    assert S.main([str(p), "--check"]) == 2
    assert "notebook source 01_data_prep" in capsys.readouterr().err
