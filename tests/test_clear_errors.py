"""The last unclear errors of issue 42, each now one line that says what to do: the module paths
before the layers, ``Config(epoch=5)``, an empty or binary parameter file, a MANIFEST.tsv naming a
target column its ARFF lacks, and a continuous (regression) target."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from sklearn.datasets import load_diabetes

from tcclib import Config, run_dataset
from tcclib.data import sources
from tcclib.running import params
from tcclib.util.errors import ConfigError


@pytest.mark.parametrize(
    "code, new",
    [
        ("from tcclib.config import Config", "tcclib.method.config (or: from tcclib import Config)"),
        ("import tcclib.train", "tcclib.running.train"),
        ("from tcclib.datasets import load_dataset", "tcclib.data.sources"),
        ("import tcclib.methods", "tcclib.method.registry"),
        ("from tcclib import sweep", "python -m tcclib PARAMS"),
    ],
)
def test_an_old_module_path_names_the_new_one(code, new):
    with pytest.raises(ModuleNotFoundError) as e:
        exec(code, {})
    assert new in str(e.value) and "moved in tcclib 0.2.0" in str(e.value) and "\n" not in str(e.value)


def test_a_module_that_never_was_still_gets_pythons_own_message():
    with pytest.raises(ModuleNotFoundError, match=r"^No module named 'tcclib.nothing'$"):
        exec("import tcclib.nothing", {})


def test_python_m_tcclib_sweep_says_how_to_run_a_sweep():
    out = subprocess.run([sys.executable, "-m", "tcclib.sweep", "params/demo.yaml"], capture_output=True, text=True)
    assert out.returncode == 1 and out.stdout == ""
    assert len(out.stderr.strip().splitlines()) == 1 and "run a sweep as: python -m tcclib PARAMS" in out.stderr


def test_a_misspelled_config_keyword_gets_the_closest_setting():
    with pytest.raises(ConfigError, match=r"^unknown setting\(s\): 'epoch' \(did you mean 'epochs'\?\)$"):
        Config(epoch=5)
    assert Config(epochs=5).replace(lr=0.01).epochs == 5  # keywords that are settings still work


@pytest.mark.parametrize(
    "content, match",
    [
        (b"", "holds no settings \\(empty, or only comments\\); a parameter file needs at least `datasets:"),
        (b"# only a comment\n\n", "holds no settings"),
        (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\xff\xfe", "a binary file, where a YAML text file belongs"),
        (b"name: x\x00\n", "a binary file, where a YAML text file belongs \\(it holds NUL bytes\\)"),
    ],
)
def test_an_empty_or_binary_parameter_file_says_what_a_parameter_file_is(tmp_path, content, match):
    p = tmp_path / "p.yaml"
    p.write_bytes(content)
    with pytest.raises(params.ParamsError, match=match) as e:
        params.load(p)
    assert "\n" not in str(e.value)


@pytest.mark.parametrize(
    "text, hint",
    [
        ("0.6", "write it without quotes, 0.6)"),
        ("1e-3", "YAML reads an exponent without a dot as text; write e.g. 1.0e-3)"),
    ],
)
def test_a_number_given_as_text_gets_the_fix_that_fits_it(text, hint):
    with pytest.raises(ConfigError, match=r"expected a finite number, got .*text, not a number") as e:
        Config(corruption_rate=text)
    assert str(e.value).endswith(hint)


def test_a_setting_at_the_top_level_of_a_parameter_file_is_pointed_to_config(tmp_path):
    p = tmp_path / "p.yaml"
    p.write_text("name: x\ndatasets: [breast_cancer]\nepochs: 5\n")
    with pytest.raises(params.ParamsError, match=r"unknown key 'epochs': it is a setting, given under 'config:'") as e:
        params.load(p)
    assert "'config: {epochs: 5}'" in str(e.value) and "\n" not in str(e.value)


def test_a_manifest_target_the_arff_lacks_names_the_manifest_and_the_likely_column(tmp_path):
    rows = "\n".join(f"{a},{b},{c}" for a, b, c in zip("ft" * 10, "tfft" * 5, ["won", "nowin"] * 10))
    (tmp_path / "3.arff").write_text(
        "@relation kr-vs-kp\n@attribute bkblk {f,t}\n@attribute bknwy {f,t}\n"
        "@attribute result {won,nowin}\n@data\n" + rows + "\n"
    )
    (tmp_path / "MANIFEST.tsv").write_text(
        "did\tname\tsha256\trows\tcols\ttarget_name\tignore_columns\n3\tkr-vs-kp\t\t20\t3\tclass\t\n"
    )
    with pytest.raises(sources.DatasetError) as e:
        sources.load_dataset(3, data_dir=tmp_path)
    msg = str(e.value)
    assert f"{tmp_path / 'MANIFEST.tsv'} names target_name 'class' for 3" in msg
    assert "looks like the target is 'result' (the last column, where OpenML puts the target)" in msg
    assert "set that row's target_name to 'result'" in msg


def test_a_continuous_target_is_called_a_regression_target_not_rare_classes():
    X, y = load_diabetes(return_X_y=True, as_frame=True)
    with pytest.raises(sources.DatasetError, match="the target looks continuous .* a regression target") as e:
        run_dataset(sources.from_frame(X, y, name="diabetes_regression"), Config(epochs=1, seeds=(1,)))
    assert "Add rows" not in str(e.value) and "pandas.qcut" in str(e.value)
    few = pd.Series(pd.qcut(y, 4, labels=False))  # the fix it names: a few classes train
    run = run_dataset(
        sources.from_frame(X, few, name="diabetes_q"),
        Config(epochs=1, head_epochs=1, seeds=(1,), methods=("random",), progress=False),
    )
    assert len(run.results) == 1


def test_a_list_parameter_given_one_value_in_a_notebook_says_to_write_a_list():
    """``seeds = 614579`` in a parameters cell: Config's line, not a TypeError from the YAML reading
    of papermill's texts (which only a text goes through)."""
    from tcclib.running import nbparams

    for value in (614579, None):
        with pytest.raises(nbparams.ParameterError, match=r"seeds: expected a list, .*write it as a list"):
            nbparams.config_from({"seeds": value})
    assert nbparams.config_from({"seeds": "[1, 2]"}).seeds == (1, 2)


@pytest.mark.parametrize("value", ["", " ", "openml:"])
def test_an_empty_dataset_name_is_refused_at_once_without_asking_openml(value, monkeypatch, capsys, kept_environ):
    """``--only "$UNSET"`` tried OpenML (40 s without a network) before saying the name is unknown."""
    from tcclib.running import cli

    monkeypatch.setenv("HTTPS_PROXY", "http://127.0.0.1:9")  # (were OpenML asked, it would fail, not hang)
    monkeypatch.setenv("HTTP_PROXY", "http://127.0.0.1:9")
    demo = Path(__file__).resolve().parents[1] / "params" / "demo.yaml"
    assert cli.main([str(demo), "--only", value, "--check"]) == 2
    err = capsys.readouterr().err.strip()
    assert err == (
        f"error: --only: {value!r} names no dataset (an unset shell variable?): give a dataset's name, its "
        "OpenML id, or your own table as PATH:TARGET"
    )
    with pytest.raises(sources.UnknownDatasetError, match="names no dataset"):
        sources.source(value)
