"""Your own files as a user has them: separators and decimal marks (detected or given), encodings,
duplicate headers, directories, empty files, date columns, ``{path, target, sep, decimal,
encoding}`` in parameter files, bad dataset ids and a data folder's short MANIFEST form.

Each case either loads the table the file holds or is a DatasetError naming the file and the fix;
none is silent (the old reader split a semicolon file into one column, renamed duplicate headers
``a``/``a.1``, raised a raw UnicodeDecodeError and looked ``-37`` up on OpenML)."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pandas as pd
import pytest

from tcclib.data import columns, sources
from tcclib.running import nbparams
from tcclib.running import params as param_files
from tcclib.util import paths

N = 30


@pytest.fixture(autouse=True)
def _no_data_dir_env(monkeypatch):
    monkeypatch.delenv(sources.DATA_DIR_ENV, raising=False)


def _rows(sep=",", decimal=".", date_format="%Y-%m-%d", header=("a", "b", "d", "label")):
    rng = np.random.default_rng(0)
    a = rng.normal(size=N).round(3)
    b = rng.choice(["x", "y", "z"], N)
    d = pd.date_range("2021-03-01", periods=N, freq="D").strftime(date_format)
    lab = ["p", "q"] * (N // 2)
    lines = [sep.join(header)]
    lines += [sep.join([str(v).replace(".", decimal), s, t, k]) for v, s, t, k in zip(a, b, d, lab)]
    return "\n".join(lines) + "\n", a


def _write(path, text, encoding="utf-8"):
    path.write_bytes(text.encode(encoding))
    return path


def _load(spec):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", columns.DatetimeNote)
        return sources.load_dataset(spec)


@pytest.mark.parametrize(
    "sep, decimal", [(";", ","), (";", "."), ("\t", "."), ("|", "."), ("|", ","), (",", ".")], ids=repr
)
def test_separator_and_decimal_mark_are_detected(tmp_path, sep, decimal):
    text, a = _rows(sep, decimal)
    path = _write(tmp_path / "t.csv", text)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ds = sources.load_dataset(f"{path}:label")
    np.testing.assert_allclose(ds.X["a"].to_numpy(), a)  # numbers, decimal mark read right
    assert list(ds.X.columns) == ["a", "b", "d_year", "d_month", "d_day", "d_weekday"]
    assert set(ds.y.cat.categories) == {"p", "q"}
    notes = [str(w.message) for w in caught]
    assert any("datetime column(s) expanded" in m for m in notes)
    assert any(f"separated by {sep!r} (detected)" in m for m in notes) == (sep != ",")


def test_a_missing_target_names_what_was_detected_not_a_joined_header(tmp_path):
    text, _ = _rows(";", ",")
    path = _write(tmp_path / "semi.csv", text)
    with pytest.raises(sources.DatasetError) as e:
        sources.source(f"{path}:labl")
    msg = str(e.value)
    assert "its columns: a, b, d, label (read as" in msg
    assert "did you mean 'label'" in msg and "sep=';' (detected)" in msg and "decimal=',' (detected)" in msg
    assert "a;b;d;label" not in msg
    # a separator given wrongly: the message says the header is one column and which separator fits
    with pytest.raises(sources.DatasetError, match=r"header is one column 'a;b;d;label'.*separated by ';'.*sep: ';'"):
        sources.source({"path": str(path), "target": "label", "sep": ","})


def test_given_sep_decimal_and_encoding_are_used_and_travel_in_the_spec(tmp_path, monkeypatch):
    text, a = _rows(";", ",")
    path = _write(tmp_path / "given.csv", text.replace("x", "é"), "latin-1")
    spec = {"path": str(path), "target": "label", "sep": ";", "decimal": ",", "encoding": "latin-1"}
    src = sources.source(spec)
    assert src.options == (("sep", ";"), ("decimal", ","), ("encoding", "latin-1"))
    again = sources.source(src.spec)  # the JSON text a notebook gets back
    assert again == src and sources.spec_folder(src.spec) == "given"
    ds = _load(src.spec)
    np.testing.assert_allclose(ds.X["a"].to_numpy(), a)
    assert "é" in set(ds.X["b"].cat.categories)
    # through a parameter file: the spec the sweep hands to the notebooks keeps the options
    ps = param_files.parse({"name": "own", "datasets": [spec]})
    assert json.loads(ps.spec("given"))["encoding"] == "latin-1"
    # ... and a per-dataset notebook reads it back into runs/<set>/<file name>
    monkeypatch.setenv(paths.ROOT_ENV, str(tmp_path))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", columns.DatetimeNote)
        run = nbparams.per_dataset({"set_name": "own", "dataset": ps.spec("given")})
    assert run.out == tmp_path / "runs" / "own" / "given"
    np.testing.assert_allclose(run.ds.X["a"].to_numpy(), a)


@pytest.mark.filterwarnings("ignore::tcclib.data.columns.DatetimeNote")
def test_a_comma_file_named_tsv_is_read_by_its_commas_with_a_note(tmp_path):
    text, a = _rows(",", ".")
    path = _write(tmp_path / "commas.tsv", text)
    with pytest.warns(UserWarning, match=r"commas.tsv: separated by ',' \(detected\), not '\\t'"):
        ds = sources.load_dataset(f"{path}:label")
    np.testing.assert_allclose(ds.X["a"].to_numpy(), a)
    tsv, _ = _rows("\t", ".")
    assert _load(f"{_write(tmp_path / 'real.tsv', tsv)}:label").X.shape == (N, 6)


def test_a_file_not_in_utf8_is_refused_saying_how_to_give_its_encoding(tmp_path):
    text, _ = _rows()
    path = _write(tmp_path / "latin.csv", text.replace("x", "é"), "latin-1")
    with pytest.raises(
        sources.DatasetError,
        match=r"latin.csv: not UTF-8 text \(byte 0xe9 at offset \d+, line \d+\).*encoding: latin-1",
    ):
        sources.source(f"{path}:label")
    # a non-UTF-8 byte far into the file (past what is sniffed) is the same kind of error
    big = text + "".join(f"1.5,x,2021-03-01,{'p' if i % 2 else 'q'}\n" for i in range(20000)) + "2.5,é,2021-03-01,p\n"
    late = _write(tmp_path / "late.csv", big, "latin-1")
    with pytest.raises(
        sources.DatasetError, match=r"late.csv: not utf-8 text further into the file.*encoding: latin-1"
    ):
        _load(f"{late}:label")
    with pytest.raises(sources.DatasetError, match="unknown encoding 'latin-9x'"):
        sources.source({"path": str(path), "target": "label", "encoding": "latin-9x"})


@pytest.mark.parametrize("encoding", ["utf-8-sig", "utf-16"])
def test_byte_order_marks_are_read(tmp_path, encoding):
    text, a = _rows()
    ds = _load(f"{_write(tmp_path / 'bom.csv', text, encoding)}:label")
    assert list(ds.X.columns)[0] == "a"  # no byte-order mark in the first name
    np.testing.assert_allclose(ds.X["a"].to_numpy(), a)


@pytest.mark.parametrize("header", [("a", "a", "d", "label"), ("a", "b", "d", "a"), ("a", " b", "b", "label")])
def test_duplicate_headers_are_refused_like_duplicate_frame_columns(tmp_path, header):
    text, _ = _rows(header=header)
    path = _write(tmp_path / "dup.csv", text)
    with pytest.raises(sources.DatasetError, match=r"duplicate column name\(s\) in the header '(a|b)' \(2 columns\)"):
        sources.source(f"{path}:label")


def test_a_directory_an_empty_file_and_bad_options_are_named(tmp_path):
    (tmp_path / "x.csv").mkdir()
    with pytest.raises(sources.DatasetError, match=r"x.csv: is a directory .* not a table file"):
        sources.source(f"{tmp_path / 'x.csv'}:label")
    empty = _write(tmp_path / "empty.csv", "\n\n")
    with pytest.raises(sources.DatasetError, match="the file is empty"):
        sources.source(f"{empty}:label")
    text, _ = _rows(";", ",")
    path = _write(tmp_path / "t.csv", text)
    with pytest.raises(sources.DatasetError, match="separator and the decimal mark are both ','"):
        sources.source({"path": str(path), "target": "label", "sep": ",", "decimal": ","})
    with pytest.raises(sources.UnknownDatasetError, match=r"unknown key\(s\) 'delimiter'"):
        sources.source({"path": str(path), "target": "label", "delimiter": ";"})
    with pytest.raises(sources.DatasetError, match="sep must be a non-empty text"):
        sources.source({"path": str(path), "target": "label", "sep": ""})
    pd.DataFrame({"a": [1.0, 2.0], "label": ["p", "q"]}).to_parquet(tmp_path / "t.parquet")
    with pytest.raises(sources.DatasetError, match="apply to CSV/TSV files only"):
        sources.source({"path": str(tmp_path / "t.parquet"), "target": "label", "sep": ";"})


def test_date_text_is_parsed_only_when_one_format_reads_the_whole_column(tmp_path):
    text, _ = _rows(date_format="%d/%m/%Y %H:%M")
    ds = _load(f"{_write(tmp_path / 'timed.csv', text)}:label")
    assert "d_year" in ds.X.columns and "d_hour" not in ds.X.columns  # midnight everywhere: no time of day
    assert ds.X["d_day"].iloc[0] == 1 and ds.X["d_month"].iloc[0] == 3  # day first: 13/03 exists further down
    rows = text.splitlines()
    rows[3] = rows[3].replace(rows[3].split(",")[2], "soon")  # one value that is not a date
    mixed = _load(f"{_write(tmp_path / 'mixed.csv', chr(10).join(rows) + chr(10))}:label")
    assert "d" in mixed.X.columns and isinstance(mixed.X["d"].dtype, pd.CategoricalDtype)
    timed = text.replace(" 00:00", " 13:30")
    assert _load(f"{_write(tmp_path / 'hours.csv', timed)}:label").X["d_hour"].eq(13.5).all()


@pytest.mark.parametrize("bad", ["-37", -37, "0", "openml:-5", {"openml": -3}, "+12"])
def test_a_negative_or_zero_id_is_a_bad_id_not_an_openml_name(bad):
    with pytest.raises(sources.UnknownDatasetError, match="OpenML ids are positive whole numbers"):
        sources.source(bad, download=True)


def test_a_manifest_in_the_documented_short_form_is_read_not_reported_unreadable(tmp_path):
    d = tmp_path / "data"
    d.mkdir()
    rows = "\n".join(f"{a},{b}" for a, b in zip(np.arange(20) / 4, ["won", "nowin"] * 10))
    (d / "424242.arff").write_text(
        "@relation mine\n@attribute v REAL\n@attribute class {won,nowin}\n@data\n" + rows + "\n"
    )
    (d / "MANIFEST.tsv").write_text("did\tname\ttarget_name\tignore_columns\n424242\tmine\tclass\t\n")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no "unreadable ... loaded unchecked"
        ds = sources.load_dataset(424242, data_dir=d, allow_download=False)
    assert ds.name == "mine" and ds.X.shape == (20, 1)


@pytest.mark.parametrize(
    "text",
    [
        'a;b;label\r\n1,5;"x; y";p\r\n2,5;z;q\r\n3,5;"x; y";p\r\n4,5;z;q\r\n',  # CRLF, quoted separators
        'sep=;\na;b;label\n1,5;"x; y";p\n2,5;z;q\n3,5;"x; y";p\n4,5;z;q\n',  # Excel's separator line
        '"a";"b";"label"\n"1,5";"x; y";"p"\n"2,5";"z";"q"\n"3,5";"x; y";"p"\n"4,5";"z";"q"\n',  # all quoted
    ],
    ids=["crlf", "excel-sep-line", "quoted"],
)
@pytest.mark.filterwarnings("ignore:e.csv. separated by")
def test_quoted_fields_line_endings_and_excels_separator_line(tmp_path, text):
    ds = _load(f"{_write(tmp_path / 'e.csv', text)}:label")
    assert list(ds.X.columns) == ["a", "b"]
    np.testing.assert_allclose(ds.X["a"].to_numpy(), [1.5, 2.5, 3.5, 4.5])
    assert set(ds.X["b"].cat.categories) == {"x; y", "z"}


def test_dates_in_a_frame_and_a_parquet_file_become_the_same_numeric_parts(tmp_path):
    n = 12
    t = pd.DataFrame(
        {
            "v": np.arange(n) / 3,
            "when": pd.date_range("2022-12-30 06:15", periods=n, freq="17h", tz="UTC"),
            "took": pd.to_timedelta(np.arange(n) * 90, unit="s"),
            "label": ["p", "q"] * (n // 2),
        }
    )
    with pytest.warns(columns.DatetimeNote, match="'when' -> when_year, when_month, when_day, when_weekday, when_hour"):
        ds = sources.from_frame(t.drop(columns="label"), t["label"])
    assert list(ds.X.columns) == ["v", "when_year", "when_month", "when_day", "when_weekday", "when_hour", "took"]
    assert ds.X.dtypes.map(pd.api.types.is_float_dtype).all()
    assert ds.X["when_hour"].iloc[0] == 6.25 and ds.X["when_weekday"].iloc[0] == 4  # a Friday
    assert ds.X["took"].iloc[2] == 180.0
    t.to_parquet(tmp_path / "t.parquet")
    pd.testing.assert_frame_equal(_load(f"{tmp_path / 't.parquet'}:label").X, ds.X)


def test_unnamed_header_cells_keep_pandas_names_and_are_not_duplicates(tmp_path):
    text = ",a,,label\n0,1.5,x,p\n1,2.5,y,q\n2,3.5,x,p\n3,4.5,y,q\n"
    ds = _load(f"{_write(tmp_path / 'index.csv', text)}:label")
    assert list(ds.X.columns) == ["Unnamed: 0", "a", "Unnamed: 2"]
