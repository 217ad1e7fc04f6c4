"""The method registry (tcclib.method.registry): one entry adds a method or a baseline everywhere."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402

from tcclib.artifacts import keys as content_keys
from tcclib.method import config, registry
from tcclib.method.config import Config, ConfigError  # noqa: E402
from tcclib.paper import plots, report, tables
from tcclib.running.train import run_dataset  # noqa: E402


@pytest.fixture
def column_least():
    """A recombination of existing choices, declared as one registry entry."""
    e = registry.register_method("column_least", how="column", where="least", label="random + least-correlated")
    yield e
    registry.unregister("column_least")


@pytest.fixture
def forest():
    from sklearn.ensemble import RandomForestClassifier

    e = registry.register_baseline(
        "forest",
        lambda seed, cfg: RandomForestClassifier(n_estimators=25, random_state=seed, n_jobs=1),
        label="random forest",
    )
    yield e
    registry.unregister("forest")


def _cfg(**kw):
    base = dict(
        seeds=(11,), epochs=2, head_epochs=3, pseudo_every=1, batch_size=128, progress=False, xgb_trees=5, xgb_depth=3
    )
    base.update(kw)
    return Config(**base)


def test_the_builtin_entries_are_the_old_lists():
    assert config.PAPER_METHODS == ("no_pretrain", "random", "class", "oracle", "class_least", "class_most")
    assert Config().methods == config.PAPER_METHODS
    family = ["vime", "vime_class", "dae", "dae_class", "subtab", "subtab_class"]  # (issue 60: their own objectives)
    assert list(config.METHODS) == [
        *config.PAPER_METHODS,
        "class_most_published",
        "class_most_published_exact",
        *family,
    ]
    assert config.METHODS["class_most_published"] == registry.MethodSpec("pseudo", "most", flipped=True)
    assert config.METHODS["class_most_published_exact"] == registry.MethodSpec("pseudo", "most", True, "authors")
    assert tuple(config.BASELINES) == ("xgboost", "logreg", "logreg_cv", "self_training")
    assert list(plots.METHOD_ORDER) == [*config.METHODS, *config.BASELINES]
    assert plots.LABELS["random"] == "random (SCARF)" and plots.LABELS["xgboost"] == "xgboost"
    assert list(tables.SET_HOW_METHODS) == [
        "no_pretrain",
        "random",
        "class",
        "oracle",
        *family,
        "xgboost",
        "logreg",
        "logreg_cv",
        "self_training",
    ]
    assert list(tables.SET_WHERE_METHODS) == [
        "class",
        "class_least",
        "class_most",
        "class_most_published",
        "class_most_published_exact",
    ]
    assert list(report.BASELINES) == list(config.BASELINES)
    # the figures' colours: the registry's colour-blind-safe palette in the built-ins' order, grey for a stranger
    assert plots.palette(["no_pretrain", "self_training", "nope"]) == {
        "no_pretrain": "#000000",
        "self_training": "#44AA99",
        "nope": "#888888",
    }


def test_a_method_added_as_one_entry_runs_and_shows_in_tables_and_plots(bc_small, column_least, tmp_path):
    assert "column_least" in config.METHODS and "column_least" not in config.PAPER_METHODS
    assert column_least.group == "where" and column_least.tables == ("where",)
    cfg = _cfg(methods=("random", "class", "column_least"))
    run = run_dataset(bc_small, cfg)
    res = run.results
    assert set(res.method) == {"random", "class", "column_least"}
    assert set(run.history.method) == {"random", "class", "column_least"}
    assert run.pseudo.method.unique().tolist() == ["class"]  # column_least draws from the whole column
    # the same seed's random run corrupts uniformly: a different loss curve
    h = run.history.set_index(["method", "epoch"]).loss
    assert not h.loc["column_least"].equals(h.loc["random"])
    # tables: the where-table (next to class, its uniform reference), written by write_set_tables
    assert tables.method_groups(res) == {"how": ["random", "class"], "where": ["class", "column_least"]}
    text = "\n".join(tables.write_set_tables(tmp_path, res))
    assert "column_least" in text
    md = (tmp_path / "results" / "table_accuracy_where.md").read_text()
    assert "column_least" in md.splitlines()[0]
    assert "column_least" in (tmp_path / "results" / "table_auroc_where.tex").read_text().replace("\\_", "_")
    # a plot: a tick of the results figure and a legend entry (its label) of the learning curves
    ax = plots.results_bars(res, "accuracy", "t")
    assert [t.get_text() for t in ax.get_yticklabels()] == ["random", "class", "column_least"]
    ax2 = plots.learning_curves(run.history, "t")
    assert "random + least-correlated" in [t.get_text() for t in ax2.get_legend().get_texts()]
    others = [c for m, c in registry.colors().items() if m != "column_least"]
    assert plots.palette(["column_least"])["column_least"] not in ("#888888", *others)
    plt.close("all")
    # the stored-result key knows its recipe
    assert content_keys.member_key(_first_split(bc_small, cfg), "column_least", cfg) != content_keys.member_key(
        _first_split(bc_small, cfg), "random", cfg
    )


def _first_split(ds, cfg):
    from tcclib.data.preprocess import prepare

    return prepare(ds, cfg.seeds).splits[0]


def test_a_baseline_added_as_one_entry_runs(bc_small, forest):
    cfg = _cfg(methods=("no_pretrain",), epochs=0, seeds=(11, 22), baselines=("forest", "logreg"))
    res = run_dataset(bc_small, cfg).results
    assert set(res.method) == {"no_pretrain", "forest", "logreg"}
    f = res[res.method == "forest"]
    assert len(f) == 2 and (f.accuracy > 0.8).all() and (f.auroc > 0.85).all()
    assert tables.method_groups(res)["how"] == ["no_pretrain", "logreg", "forest"]
    assert plots.LABELS["forest"] == "random forest"


def test_unknown_and_bad_registrations_are_clear_errors(column_least):
    unknown = r"unknown method 'colum_least' \(did you mean column_least.*looked in the built-ins.*load_plugins"
    with pytest.raises(ConfigError, match=unknown):
        Config(methods=("colum_least",))
    with pytest.raises(ConfigError, match="unknown baseline 'forest'.*--plugin path/to/rule.py"):
        Config(baselines=("forest",))
    taken = r"method 'class' is one of tcclib's built-ins, and \S*test_methods.py registers another method of that name"
    with pytest.raises(registry.RegistryError, match=taken):  # another place's name: both places named
        registry.register_method("class", "column")
    with pytest.raises(registry.RegistryError, match="how must be one of .*rules.py"):
        registry.register_method("swap", how="swap")
    with pytest.raises(registry.RegistryError, match="where must be one of"):
        registry.register_method("swap", how="column", where="middle")
    with pytest.raises(registry.RegistryError, match="where must be 'uniform'"):
        registry.register_method("swap", how="none", where="least")
    with pytest.raises(registry.RegistryError, match="simple identifier"):
        registry.register_method("my method", how="column")
    with pytest.raises(registry.RegistryError, match="factory must be a callable"):
        registry.register_baseline("svm", "SVC")
    registry.register_baseline("svm", lambda s, c: None, settings=["trees"])
    try:  # the registry sits below the declarations: the Config that names it refuses it
        with pytest.raises(ConfigError, match=r"baselines: 'svm': its factory's settings names that are not Config"):
            Config(baselines=("svm",))
    finally:
        registry.unregister("svm")
    with pytest.raises(registry.RegistryError, match="group must be one of"):
        registry.register_method("swap", how="column", group="extra")
    assert "swap" not in config.METHODS and "svm" not in config.BASELINES
    with pytest.raises(registry.RegistryError, match="not registered"):
        registry.unregister("swap")


def test_rules_that_call_themselves_equal_still_draw_each_for_its_own_members():
    """Members are grouped by their rule objects themselves: a user's ``__eq__`` (and ``__hash__``)
    that calls two rules equal does not make one of them draw for the other's members."""
    from tcclib.method.pretraining import _groups

    class Loose:
        def __init__(self, step):
            self.step = step

        def __eq__(self, other):
            return True

        def __hash__(self):
            return 0

    one, two = Loose(1), Loose(2)
    assert one == two and _groups([one, two, one]) == [(one, [0, 2]), (two, [1])]
