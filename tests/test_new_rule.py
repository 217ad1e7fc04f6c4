"""A new corruption rule in one file (``examples/knn_rule.py``) works end to end: runner,
estimator, content keys, tables, a figure and the report, with no other file changed."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest
import torch

from tcclib import TCCClassifier
from tcclib.artifacts import keys, store
from tcclib.method import registry, rules
from tcclib.method.config import Config
from tcclib.method.inputs import prepare_config
from tcclib.paper import plots, report, tables
from tcclib.running.train import run_dataset

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "knn_rule.py"


@pytest.fixture(scope="module")
def knn():
    spec = importlib.util.spec_from_file_location("knn_rule", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # registers the rule and the method "knn"
    yield module
    registry.unregister("knn")


@pytest.fixture(scope="module")
def set_dir(knn, bc, tmp_path_factory):
    """A set of one finished dataset (breast_cancer) with the new method beside three of the paper's."""
    cfg = Config(seeds=(0,), epochs=2, head_epochs=2, methods=("no_pretrain", "random", "class", "knn"), progress=False)
    folder = tmp_path_factory.mktemp("set")
    run = run_dataset(bc, cfg)
    store.save_run(run, folder / "breast_cancer")
    return folder, run, cfg


def test_the_rule_draws_donors_among_the_nearest_rows(knn):
    torch_rows = torch.tensor([[0.0], [0.1], [5.0], [5.2], [9.0]])[None]  # one member, 5 rows, 1 feature
    members = rules.Members(
        index=[0],
        active=torch.ones(1, 1, dtype=torch.bool),
        labels=torch.zeros(1, 5, dtype=torch.int64),
        n_classes=1,
        corrupted=torch.ones(1, dtype=torch.int64),
        gens=[torch.Generator().manual_seed(0)],
        specs=[registry.METHODS["knn"]],
        seed_index=torch.zeros(1, dtype=torch.int64),
        cfg=Config(),
        all_rows=torch_rows,
    )
    rule = knn.NearestNeighbours(k=1)
    state = rule.prepare(members)
    donors = rule.donors(members, state, torch.rand(1, 5, 1))
    assert donors[0, :, 0].tolist() == [1, 0, 3, 2, 3]  # each row's nearest other row
    with pytest.raises(ValueError, match="k: the number of neighbours"):
        knn.NearestNeighbours(k=0)


def test_a_new_rule_trains_in_the_runner_and_appears_in_tables_plots_and_report(set_dir, bc):
    folder, run, cfg = set_dir
    assert set(run.results.method) == {"no_pretrain", "random", "class", "knn"}
    knn_loss = run.history[run.history.method == "knn"].loss
    assert len(knn_loss) == 2 and np.isfinite(knn_loss).all()
    # its views differ from SCARF's, and its key holds its own parameter k
    assert not np.allclose(knn_loss.to_numpy(), run.history[run.history.method == "random"].loss.to_numpy())
    prep = prepare_config(bc, cfg)
    key = keys.member_key(prep.splits[0], "knn", cfg, prep.classes)
    other = keys.member_key(prep.splits[0], "random", cfg, prep.classes)
    assert key != other
    # tables: the how-table of the set
    assert "knn" in tables.method_groups(run.results)["how"]
    table = tables.paper_style_table(run.results, "accuracy", tables.method_groups(run.results)["how"])
    assert "knn" in table.columns
    written = tables.write_set_tables(folder, store.gather(folder, "results"))
    assert "knn" in "\n".join(written)
    # a figure: the bars of every method, labelled from the registry
    ax = plots.results_bars(run.results, "accuracy", "breast_cancer")
    assert [t.get_text() for t in ax.get_yticklabels()] == ["no_pretrain", "random", "class", "knn"]
    ax = plots.learning_curves(run.history, "breast_cancer")
    assert "k nearest neighbours (k=5)" in [t.get_text() for t in ax.get_legend().get_texts()]
    # the report: its win matrix of the how-table methods has a row for it
    text = report.build_report(folder, figures=False)
    assert "| knn |" in text


def test_a_new_rule_trains_in_the_estimator(knn, bc):
    X = bc.X.iloc[:, :10]
    y = np.where(np.arange(len(bc.y)) % 3 == 0, -1, bc.y.to_numpy())
    clf = TCCClassifier(method="knn", epochs=2, head_epochs=2, random_state=0).fit(X, y)
    proba = clf.predict_proba(X.iloc[:20])
    assert proba.shape == (20, 2) and np.allclose(proba.sum(1), 1)
    assert len(clf.history_) == 2 and clf.pseudo_labels_ is None
