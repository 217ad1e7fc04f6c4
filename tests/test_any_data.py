"""Any data: OpenML ids and names beyond the paper's 30, OpenML suites, local CSV/Parquet/ARFF tables."""

import os
import shutil
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from tcclib.data import sources
from tcclib.running import notebooks, sweep
from tcclib.running import params as param_files

FIXTURES = Path(__file__).resolve().parent / "fixtures"
SHARED = Path(
    os.environ.get(sources.DATA_DIR_ENV) or Path(__file__).resolve().parents[2] / "shared/datasets/openml-cc18"
)


@pytest.fixture(autouse=True)
def _no_data_dir_env(monkeypatch):
    monkeypatch.delenv(sources.DATA_DIR_ENV, raising=False)


def _table(n=40, seed=0):
    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        {
            "x1": rng.normal(size=n),
            "x2": rng.normal(size=n),
            "colour": rng.choice(["red", "green"], n),
            "label": ["yes", "no"] * (n // 2),
        }
    )


def _kr_vs_kp_folder(tmp_path) -> Path:
    """A data folder holding OpenML 3 as a small ARFF with its MANIFEST.tsv row, and the fixture suite."""
    d = tmp_path / "data"
    (d / sources.SUITES_DIR).mkdir(parents=True)
    shutil.copy(FIXTURES / "suites" / "tcc-fixture.json", d / sources.SUITES_DIR)
    rows = "\n".join(
        f"{a},{b},{c}" for a, b, c in zip(["f", "t"] * 10, ["t", "f", "f", "t"] * 5, ["won", "nowin"] * 10)
    )
    (d / "3.arff").write_text(
        "@relation kr-vs-kp\n@attribute bkblk {f,t}\n@attribute bknwy {f,t}\n"
        "@attribute class {won,nowin}\n@data\n" + rows + "\n"
    )
    (d / "MANIFEST.tsv").write_text(
        "did\tname\tsha256\trows\tcols\ttarget_name\tignore_columns\n3\tkr-vs-kp\t\t20\t3\tclass\t\n"
    )
    return d


def test_a_csv_and_a_parquet_path_with_their_target_load_and_resolve_in_a_params_file(tmp_path):
    t = _table()
    t.to_csv(tmp_path / "mine.csv", index=False)
    t.to_parquet(tmp_path / "other.parquet")
    ds = sources.load_dataset(f"{tmp_path / 'mine.csv'}:label")
    assert (ds.name, ds.did, ds.X.shape, list(ds.y.cat.categories)) == ("mine", None, (40, 3), ["no", "yes"])
    assert isinstance(ds.X.colour.dtype, pd.CategoricalDtype) and ds.X.x1.dtype == "float64"
    pq = sources.load_dataset({"path": str(tmp_path / "other.parquet"), "target": "label"})
    pd.testing.assert_frame_equal(pq.X, ds.X)
    p = tmp_path / "p.yaml"
    p.write_text(
        f"name: mine\ndatasets:\n  - {tmp_path / 'mine.csv'}:label\n"
        f"  - {{path: {tmp_path / 'other.parquet'}, target: label}}\n  - breast_cancer\n"
        f"keep_embeddings: [Mine]\nfigure_dataset: mine\n"
    )
    ps = param_files.load(p)
    assert ps.datasets == ["mine", "other", "breast_cancer"] and ps.keep_embeddings == ["mine"]
    assert ps.spec("mine") == f"{tmp_path / 'mine.csv'}:label" and ps.spec("breast_cancer") == "breast_cancer"
    # the notebooks get what load_dataset reads back; --force/--only take the set's names
    params = notebooks.notebook_parameters(ps, "other", tmp_path / "out")
    assert sources.load_dataset(params["dataset"]).name == "other"
    assert sweep._names_in_set(["MINE"], ps, "--force") == ["mine"]


def test_a_missing_target_column_or_file_is_a_clear_error_before_any_work(tmp_path):
    _table().to_csv(tmp_path / "mine.csv", index=False)
    with pytest.raises(
        sources.DatasetError,
        match=r"mine.csv: no target column 'lable' \(did you mean 'label'\?\); "
        r"its columns: x1, x2, colour, label",
    ):
        sources.load_dataset(f"{tmp_path / 'mine.csv'}:lable")
    with pytest.raises(sources.DatasetError, match="name the target column: write .*mine.csv:COLUMN"):
        sources.source(str(tmp_path / "mine.csv"))
    p = tmp_path / "p.yaml"
    p.write_text(f"name: x\ndatasets: [{{path: {tmp_path / 'mine.csv'}, target: Label}}]\n")
    with pytest.raises(
        param_files.ParamsError, match=r"p.yaml: datasets: .*no target column 'Label' \(did you mean 'label'"
    ):
        param_files.load(p)
    p.write_text(f"name: x\ndatasets: [{tmp_path / 'gone.csv'}:label]\n")
    with pytest.raises(param_files.ParamsError, match="gone.csv: no such file"):
        param_files.load(p)
    (tmp_path / "a").mkdir()
    _table().to_csv(tmp_path / "a" / "mine.csv", index=False)
    p.write_text(f"name: x\ndatasets: [{tmp_path / 'mine.csv'}:label, {tmp_path / 'a' / 'mine.csv'}:label]\n")
    with pytest.raises(param_files.ParamsError, match="two datasets are named 'mine'.*rename one file"):
        param_files.load(p)


def test_a_suite_in_a_params_file_expands_offline_from_its_saved_listing(tmp_path):
    d = _kr_vs_kp_folder(tmp_path)
    for entry in ("suite:tcc-fixture", "suite:990001", "{suite: 990001}"):
        p = tmp_path / "s.yaml"
        p.write_text(f"name: s\ndata_dir: {d}\ndatasets: [breast_cancer, {entry}]\n")
        ps = param_files.load(p)
        assert ps.datasets == ["breast_cancer", "balance-scale", "diabetes", "kr-vs-kp"], entry
        assert ps.spec("kr-vs-kp") == "3" and ps.spec("diabetes") == "diabetes"
    # the same dataset once directly and once through the suite: listed twice
    p.write_text(f"name: s\ndata_dir: {d}\ndatasets: [diabetes, suite:tcc-fixture]\n")
    with pytest.raises(param_files.ParamsError, match="diabetes is listed twice .also in suite:tcc-fixture"):
        param_files.load(p)
    # no saved listing and no OpenML: the error says which file to write
    with pytest.raises(
        sources.DatasetMetadataError,
        match=r"suite 'OpenML-CC18': no suites/OpenML-CC18.json in .*"
        r"write .*suites/OpenML-CC18.json as",
    ):
        sources.expand("suite:OpenML-CC18", d, download=False)


def test_openml_3_resolves_and_loads_offline_from_the_data_folder_manifest(tmp_path):
    d = _kr_vs_kp_folder(tmp_path)
    assert sources.resolve(3, d, download=False) == sources.resolve("openml:kr-vs-kp", d) == ("kr-vs-kp", 3)
    assert sources.resolve("kr-vs-kp", d) == ("kr-vs-kp", 3)
    ds = sources.load_dataset("3", data_dir=d, allow_download=False)
    assert (ds.name, ds.did, ds.X.shape, ds.y.name) == ("kr-vs-kp", 3, (20, 2), "class")


def test_openml_3_without_a_local_copy_names_the_download():
    if (SHARED / "MANIFEST.tsv").exists():
        manifest = pd.read_csv(SHARED / "MANIFEST.tsv", sep="\t")
        assert 3 not in set(manifest.did)  # the shared folder has the paper's 30 only
        folder = SHARED
    else:
        folder = None
    with pytest.raises(
        sources.DatasetMetadataError,
        match=r"OpenML dataset 3 is not one of the paper's 30 and .*"
        r"Download it while online .*openml.datasets.get_dataset\(3\).*"
        r"https://www.openml.org/d/3's ARFF as .*3.arff",
    ):
        sources.resolve(3, folder, download=False)
    # the paper's 30 stay the paper set
    assert len(param_files.parse({"name": "x", "datasets": "all"}).datasets) == 30


def test_openml_metadata_comes_from_openml_pythons_own_cache(tmp_path, monkeypatch):
    import openml

    root = tmp_path / "openml"
    shutil.copytree(FIXTURES / "openml_cache", root)
    old = openml.config._root_cache_directory
    openml.config.set_root_cache_directory(root)
    try:
        src = sources.source(3)  # no data folder: openml-python reads its cached description
    finally:
        openml.config.set_root_cache_directory(old)
    assert (src.name, src.kind, src.did, src.target, src.spec) == ("kr-vs-kp", "openml", 3, "class", "3")


def test_bad_dataset_entries_are_clear_errors(tmp_path):
    with pytest.raises(sources.UnknownDatasetError, match="is an OpenML suite, which lists several datasets"):
        sources.load_dataset("suite:99")
    with pytest.raises(sources.UnknownDatasetError, match=r"a dataset mapping is \{path: FILE, target: COLUMN\}"):
        sources.source({"file": "x.csv"})
    with pytest.raises(sources.UnknownDatasetError, match=r"unknown dataset 'diabetis'. Did you mean: diabetes\?"):
        sources.resolve("diabetis")
    p = tmp_path / "p.yaml"
    p.write_text("name: x\ndatasets: [suite:]\n")
    with pytest.raises(param_files.ParamsError, match="name the suite, e.g. suite:99"):
        param_files.load(p)


def test_a_parquet_table_where_pyarrow_does_not_load_is_one_line_with_the_fix(tmp_path, monkeypatch):
    """pyarrow 26 and later refuse NumPy 1.x as they load, and a pip install beside an older NumPy
    brings them: the table's path, pyarrow's own reason and the fix, before anything is read."""
    _table().to_parquet(tmp_path / "t.parquet")
    monkeypatch.setitem(sys.modules, "pyarrow", None)  # what import finds for a package that cannot load
    monkeypatch.setitem(sys.modules, "pyarrow.parquet", None)
    with pytest.raises(sources.DatasetError) as raised:
        sources.load_dataset({"path": str(tmp_path / "t.parquet"), "target": "label"})
    (line,) = str(raised.value).splitlines()
    assert line.startswith(f"{tmp_path / 't.parquet'}: reading Parquet needs pyarrow, which does not load here (")
    assert line.endswith("install one that does (beside NumPy 1.x: pip install 'pyarrow<26')")
