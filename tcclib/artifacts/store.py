"""Saving and gathering results on disk, atomically (a crash never leaves half a file).

Layout of one parameter set ``<root>/<set>/``::

    <dataset>/01_data_prep.ipynb ...      rendered per-dataset notebooks
    <dataset>/results.csv history.csv pseudo.csv corr_range.csv [embeddings.npz]
    <dataset>/importance.npz keys.json   importance matrices; content keys (tcclib.artifacts.keys)
    <dataset>/_DONE.json | _FAILED.json   written last by the sweep
    results/  figures/  index.md          written by the aggregate notebooks and the sweep
"""

from __future__ import annotations

import datetime
import hashlib
import json
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import torch

from tcclib.artifacts import keys as content_keys
from tcclib.artifacts import own_code
from tcclib.artifacts.importances import CacheWarning
from tcclib.method import registry
from tcclib.method.config import LATER_SETTINGS, METHODS, Config, names
from tcclib.util import paths
from tcclib.util.errors import counted, first_few, register_short
from tcclib.util.files import atomic_write
from tcclib.util.kernel import interpreter


def write_csv(df: pd.DataFrame, path) -> Path:
    return atomic_write(path, lambda t: df.to_csv(t, index=False, float_format="%.6g"))


def write_json(obj, path) -> Path:
    return atomic_write(path, lambda t: Path(t).write_text(json.dumps(obj, indent=2, default=str) + "\n"))


def write_text(text: str, path) -> Path:
    return atomic_write(path, lambda t: Path(t).write_text(text))


def _withdrawn_keys(out: Path) -> content_keys.RunKeys:
    """The keys stored in ``out`` (none: empty), their file removed before the files they key are
    written again, then written back last (:func:`_write_keys`): a store torn by a crash or a full
    disk between two of its writes holds no key, so nothing in it is taken for what it is not (its
    members train again) where a key left standing would have matched the other run's files."""
    f = out / content_keys.KEYS_FILE
    keys = content_keys.RunKeys.from_json(json.loads(f.read_text())) if f.exists() else content_keys.RunKeys()
    f.unlink(missing_ok=True)
    return keys


def _write_keys(out: Path, keys: content_keys.RunKeys, **parts) -> None:
    """Merge ``parts`` (members / baselines / importance dicts, embeddings key) into ``keys`` and
    write them as ``keys.json``: the store's last write but its marker."""
    for name, value in parts.items():
        if isinstance(value, dict):
            getattr(keys, name).update(value)
        else:
            setattr(keys, name, value)
    write_json(keys.to_json(), out / content_keys.KEYS_FILE)


def save_importances(out_dir, importances: dict, ranges: dict, keys: dict) -> None:
    """Store importance matrices ``{seed: W}`` (merged with the stored ones whose key is unchanged),
    the correlation ranges ``{seed: range}`` and their keys ``{"<seed>": key}`` in ``out_dir``
    (``keys.json`` withdrawn first and written last: :func:`_withdrawn_keys`)."""
    out = Path(out_dir)
    stored = _withdrawn_keys(out)
    _write_importances(out, stored, importances, ranges, keys)
    _write_keys(out, stored, importance=keys)


def _write_importances(out: Path, stored: content_keys.RunKeys, importances: dict, ranges: dict, keys: dict) -> None:
    """The files of :func:`save_importances`, ``stored``: the keys the folder held."""
    arrays = {}
    if importances and (out / content_keys.IMPORTANCE_FILE).exists():
        with np.load(out / content_keys.IMPORTANCE_FILE) as z:
            for name in z.files:
                seed = name.removeprefix("seed_")
                if stored.importance.get(seed) == keys.get(seed) and int(seed) not in importances:
                    arrays[name] = z[name]
    arrays.update({f"seed_{int(s)}": np.asarray(W, dtype=np.float32) for s, W in importances.items()})
    if arrays:
        arrays = dict(
            sorted(arrays.items(), key=lambda kv: list(keys).index(kv[0][5:]) if kv[0][5:] in keys else len(keys))
        )
        atomic_write(out / content_keys.IMPORTANCE_FILE, lambda t: np.savez_compressed(open(t, "wb"), **arrays))
    if ranges:
        write_csv(pd.DataFrame(sorted(ranges.items()), columns=["seed", "corr_range"]), out / "corr_range.csv")


class ChangedRowsError(ValueError):
    """A run's rows changed between :func:`~tcclib.running.train.run_dataset` and :func:`save_run`."""


class ForeignFolderError(ValueError):
    """A run saved into a folder that holds another dataset's finished results."""


register_short(ChangedRowsError, ForeignFolderError)


def rows_digest(run) -> str:
    """A digest of a run's rows as they are now: its results, losses and pseudo-label accuracies
    (columns, values and order)."""
    digest = hashlib.sha256()
    for frame in (run.results, run.history, run.pseudo):
        digest.update(repr([str(c) for c in frame.columns]).encode())
        digest.update(pd.util.hash_pandas_object(frame, index=False).to_numpy().tobytes())
    return digest.hexdigest()


def _refuse_another_dataset(run, out: Path) -> None:
    """A finished folder (``_DONE.json`` beside ``results.csv``) of another dataset than the run's
    (a notebook's ``output_dir`` pointed at it): its marker would go on calling the new rows its own."""
    previous = out / "results.csv"
    if not ((out / "_DONE.json").is_file() and previous.is_file() and len(run.results)):
        return
    try:
        before = sorted(set(pd.read_csv(previous, usecols=["dataset"])["dataset"].astype(str)))
    except (ValueError, OSError):  # (no dataset column, unreadable: nothing to compare)
        return
    now = sorted(set(run.results["dataset"].astype(str)))
    if before and before != now:
        raise ForeignFolderError(
            f"save_run {out}: it holds the finished results of {', '.join(before)}, and this run is of "
            f"{', '.join(now)}: give the run a folder of its own (output_dir), or remove that folder first"
        )


OUTSIDE_A_SWEEP = "store.save_run outside a sweep"
"""The ``by`` of a marker :func:`save_run` wrote (notebook 03 run by hand, in Lab or papermill)."""


def save_run(run, out_dir, write_marker: bool = True) -> Path:
    """Write a dataset's results, histories, correlation ranges, importances (and embeddings) to
    ``out_dir``, with ``keys.json`` (:mod:`tcclib.artifacts.keys`) so that a later run reuses them.

    ``write_marker``: also mark the dataset finished (``_DONE.json``, when there is none), so that
    the aggregate notebooks and :func:`gather` take it: a run in JupyterLab, papermill or Python.
    The sweep passes False (notebook 03's ``write_marker`` parameter): it writes the marker
    itself, after all of the dataset's notebooks; a Dask unit that trains a group of seeds too.

    A run that trained nothing (everything reused) leaves the training provenance as it was:
    ``timings.json`` and ``embeddings.npz`` are not rewritten.  ``keys.json`` is taken away first
    and written last (:func:`_withdrawn_keys`): a crash between two writes leaves a store whose
    members train again, never one whose keys describe other files.

    Refused before anything is written: rows that changed after ``run_dataset`` made them
    (:class:`ChangedRowsError`: they would be reused under the members' keys as trained), and a
    folder that holds another dataset's finished results (:class:`ForeignFolderError`)."""
    out = Path(out_dir)
    if getattr(run, "rows_digest", None) is not None and rows_digest(run) != run.rows_digest:
        raise ChangedRowsError(
            f"save_run {out}: the run's results, losses or pseudo-labels changed after run_dataset made them (a "
            "cell between the two?); stored under the members' keys they would be reused as trained: save what "
            "you derive elsewhere (store.write_csv), or run again"
        )
    _refuse_another_dataset(run, out)
    stored = _withdrawn_keys(out) if run.keys is not None else None
    write_csv(run.results, out / "results.csv")
    write_csv(run.history, out / "history.csv")
    write_csv(run.pseudo, out / "pseudo.csv")
    if run.keys is not None:
        importance_keys = {k: v for k, v in run.keys.importance.items() if int(k) in run.corr_range}
        _write_importances(out, stored, dict(run.importances), run.corr_range, importance_keys)
    else:
        write_csv(pd.DataFrame(sorted(run.corr_range.items()), columns=["seed", "corr_range"]), out / "corr_range.csv")
    if run.embeddings and (run.new_embeddings or not (out / "embeddings.npz").exists()):
        # float16 halves the file; plenty for PCA plots
        arrays = {
            f"{m}__{k}": (v.astype(np.float16) if v.dtype.kind == "f" else v)
            for m, d in run.embeddings.items()
            for k, v in d.items()
        }
        atomic_write(out / "embeddings.npz", lambda t: np.savez_compressed(open(t, "wb"), **arrays))
    if run.trained or not (out / "timings.json").exists():
        write_json({k: round(v, 3) for k, v in run.timings.items()}, out / "timings.json")
    if run.classes:
        write_json(list(run.classes), out / "classes.json")
    if run.config is not None:
        # provenance: every setting used, and the user code's identities the run's keys were computed with
        record = settings_record(
            run.config, run.keys, run.data_file, run.data_reading, getattr(run, "data_changed", None)
        )
        write_json(record, out / "config.json")
    if run.keys is not None:
        parts = dict(members=run.keys.members, baselines=run.keys.baselines, embeddings=run.keys.embeddings)
        _write_keys(out, stored, importance=importance_keys, **parts)
    marker = out / "_DONE.json"
    if write_marker and marker.exists():  # (run again over a finished folder: the marker describes these files)
        _refresh_digests(marker)
    elif write_marker:
        digests = result_digests(out)
        write_json(
            {
                "dataset": run.results["dataset"].iloc[0] if len(run.results) else out.name,
                "finished": datetime.datetime.now().isoformat(timespec="seconds"),
                "by": OUTSIDE_A_SWEEP,
                **interpreter(),
                "files": result_files(out),
                "sha256": digests,
            },
            marker,
        )
    return out


def _refresh_digests(marker: Path) -> None:
    """Record in a finished folder's ``_DONE.json`` the result files as :func:`save_run` just left
    them (a notebook run again in JupyterLab over a finished folder), so that only a change made
    otherwise (a number edited by hand) reads as one; a marker recording no digests stays as it is."""
    try:
        record = json.loads(marker.read_text())
    except ValueError:
        return
    if isinstance(record, dict) and isinstance(record.get("sha256"), dict):
        digests = result_digests(marker.parent)
        write_json({**record, "files": result_files(marker.parent), "sha256": digests}, marker)


RESULT_SUFFIXES = (".csv", ".json", ".npz")
"""The files a finished dataset's ``_DONE.json`` lists (:func:`result_files`): its results, not
its rendered notebooks and figures (a re-render makes those again)."""


def result_files(folder) -> list[str]:
    """The result files in a dataset's ``folder`` now (``results.csv``, ``keys.json``, ...; not
    the markers, whose names start with ``_``): what its ``_DONE.json`` says was finished."""
    return sorted(
        f.name
        for f in Path(folder).iterdir()
        if f.is_file() and f.suffix in RESULT_SUFFIXES and not f.name.startswith(("_", "."))
    )


DIGESTED = (".csv", ".json")
"""The result files whose bytes a finished run's ``_DONE.json`` records (``sha256``): the tables
and records a render shows and a run reuses; not ``timings.json`` (how long a run took, rewritten
by a run that trains again to the same results) nor the ``.npz`` arrays (a zip's times)."""


def result_digests(folder) -> dict[str, str]:
    """``{file: digest}`` of the result files in ``folder`` now (:func:`result_files`; those of
    :data:`DIGESTED`), as a finished run's ``_DONE.json`` records them (``sha256``)."""
    return {
        name: content_keys.file_digest(Path(folder) / name)
        for name in result_files(folder)
        if name.endswith(DIGESTED) and name != "timings.json"
    }


def missing_files(folder) -> list[str]:
    """The result files a finished dataset's ``_DONE.json`` lists that are gone from ``folder``
    (deleted, or a copy of the set that left them out) or whose bytes are not those it recorded
    (edited, cut short), and ``_DONE.json`` itself where it names another dataset than its folder
    (another dataset's results copied in); [] where there is no marker.  A marker from before the
    list (no ``files``) expects ``results.csv`` where the run's other files are."""
    folder = Path(folder)
    marker = folder / "_DONE.json"
    if not marker.is_file():
        return []
    try:
        record = json.loads(marker.read_text())
        listed = record.get("files")
    except (ValueError, AttributeError):  # (a marker that is not a JSON object: the run is done, as before)
        record, listed = {}, None
    if not isinstance(listed, list):
        siblings = any((folder / f).exists() for f in ("keys.json", "history.csv", "config.json"))
        listed = ["results.csv"] if siblings else []
    gone = [f for f in listed if not (folder / str(f)).is_file()]
    changed = [f for f in content_keys.changed_since_finished(folder) if f not in gone]
    named = record.get("dataset") if isinstance(record, dict) else None
    foreign = ["_DONE.json"] if isinstance(named, str) and named and named != folder.name else []
    return gone + changed + foreign


def unlike_finished(folder) -> list[str]:
    """Of :func:`missing_files`, those still there but not as the run finished them: files whose
    bytes changed since, and ``_DONE.json`` where it names another dataset (what a re-run must
    reuse nothing of; a file merely gone leaves the others reused)."""
    return [f for f in missing_files(folder) if (Path(folder) / f).is_file()]


def missing_words(missing: list[str], folder=None) -> str:
    """How a message says :func:`missing_files`: ``results.csv missing from its finished folder``,
    ``results.csv changed since its run finished``, ``_DONE.json names another dataset``."""
    folder = Path(folder) if folder is not None else None
    foreign = [f for f in missing if f == "_DONE.json"]
    changed = [f for f in missing if folder is not None and f not in foreign and (folder / f).is_file()]
    gone = [f for f in missing if f not in changed and f not in foreign]
    parts = []
    if gone:
        parts.append(f"{first_few(gone, 3)} missing from its finished folder")
    if changed:
        parts.append(f"{first_few(changed, 3)} changed since its run finished (not the bytes its _DONE.json recorded)")
    if foreign:
        parts.append("its _DONE.json names another dataset (another dataset's results copied in)")
    return "; ".join(parts)


def gather(set_dir, what: str = "results") -> pd.DataFrame:
    """Concatenate ``<set_dir>/*/<what>.csv`` of every finished dataset (with a ``dataset`` column)."""
    frames = []
    for d in sorted(Path(set_dir).iterdir()):
        f = d / f"{what}.csv"
        if d.is_dir() and (d / "_DONE.json").exists() and f.exists() and not missing_files(d):
            df = pd.read_csv(f)
            if "dataset" not in df.columns:
                df.insert(0, "dataset", d.name)
            frames.append(df)
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def status(set_dir, expected=None) -> pd.DataFrame:
    """One row per dataset: done / failed (with the error) / incomplete (started, no marker) /
    pending (in ``expected`` but never started)."""
    rows = []
    root = Path(set_dir)
    if expected is None and (root / "datasets.json").exists():  # written by the sweep
        expected = json.loads((root / "datasets.json").read_text())
    folders = (
        sorted(
            p
            for p in root.iterdir()
            if p.is_dir() and p.name not in ("results", "figures") and not p.name.startswith(".")
        )
        if root.exists()
        else []
    )
    for name in expected or []:
        if not (root / name).is_dir():
            rows.append((name, "pending", ""))
    for d in folders:
        if (d / "_DONE.json").exists() and (missing := missing_files(d)):
            rows.append((d.name, "incomplete", missing_words(missing, d)))
        elif (d / "_DONE.json").exists():
            rows.append((d.name, "done", ""))
        elif (d / "_FAILED.json").exists():
            rows.append((d.name, "failed", json.loads((d / "_FAILED.json").read_text()).get("error", "")))
        else:
            rows.append((d.name, "incomplete", ""))
    return pd.DataFrame(rows, columns=["dataset", "status", "error"]).sort_values("dataset", ignore_index=True)


STALE_NOTE = "stale.json"
"""``{dataset: how}`` in a set's folder: the finished datasets whose stored settings are not the
parameter file's (``epochs 2 vs 1``), as the sweep last found them; written before the aggregate
notebooks render, removed when there are none."""


def note_stale(set_dir, stale: dict[str, str]) -> None:
    """Write (or, with none, remove) the set's :data:`STALE_NOTE`."""
    note = Path(set_dir) / STALE_NOTE
    if stale:
        write_json(dict(sorted(stale.items())), note)
    else:
        note.unlink(missing_ok=True)


def stale_noted(set_dir) -> dict[str, str]:
    """The set's :data:`STALE_NOTE` (empty when there is none)."""
    try:
        found = json.loads((Path(set_dir) / STALE_NOTE).read_text())
    except (OSError, ValueError):
        return {}
    return {str(d): str(why) for d, why in found.items()} if isinstance(found, dict) else {}


def status_line(set_dir, expected=None) -> str:
    """:func:`status` in one line: ``30 of 30 datasets done.``, then the datasets not done by
    their state (``failed: kc2 (its error); incomplete: pc1; pending: car.``), and those done
    with other settings than the parameter file (:func:`stale_noted`: shown as stored)."""
    st = status(set_dir, expected)
    done = int((st.status == "done").sum())
    line = f"{done} of {counted(len(st), 'dataset')} done"
    rest = []
    for state in ("failed", "incomplete", "pending"):
        rows = st[st.status == state]
        if len(rows):
            names = [f"{r.dataset} ({r.error})" if r.error else r.dataset for r in rows.itertuples()]
            rest.append(f"{state}: {', '.join(names)}")
    stale = {d: why for d, why in stale_noted(set_dir).items() if d in set(st.dataset[st.status == "done"])}
    if stale:
        names = ", ".join(f"{d} ({why})" for d, why in stale.items())
        rest.append(f"STALE, shown as stored but run with other settings than the parameter file: {names}")
    return line + (f"; {'; '.join(rest)}." if rest else ".")


# A re-executed notebook (nbval in ``make test``, or a user re-running it) compares its fresh
# results with the ones it saved before.  Same machine: identical.  Another CPU (AVX2 vs AVX-512
# kernels, another BLAS path) rounds floats differently, training drifts a little, and the means
# move by a few thousandths (0.003 seen between an AMD AVX2 and an Intel AVX-512 machine on the
# demo, 8 seeds x 100 epochs), so the check allows REPRO_TOL.
REPRO_TOL = 0.02
REPRO_METRICS = ("accuracy", "auroc")


def load_results(out_dir) -> pd.DataFrame | None:
    """``<out_dir>/results.csv`` as saved by :func:`save_run`, or None when there is none."""
    f = Path(out_dir) / "results.csv"
    return pd.read_csv(f) if f.exists() else None


def compare_means(
    stored: pd.DataFrame, results: pd.DataFrame, tol: float = REPRO_TOL, metrics=REPRO_METRICS
) -> pd.DataFrame:
    """Mean over seeds of every method and metric, stored vs. new.

    Columns ``method, metric, stored, new, diff, within`` (``|diff| <= tol``) and ``same_seeds``
    (the method ran the same seeds on both sides).  A method on one side only has NaN on the other;
    it, and a method whose seeds differ (its means are not comparable), is not ``within``."""
    metrics = list(metrics)
    seeds_a = stored.groupby("method")["seed"].apply(frozenset)
    seeds_b = results.groupby("method")["seed"].apply(frozenset)
    a = stored.groupby("method", sort=False)[metrics].mean()
    b = results.groupby("method", sort=False)[metrics].mean()
    rows = []
    for m in dict.fromkeys([*b.index, *a.index]):
        for k in metrics:
            s = float(a[k].get(m, np.nan))
            n = float(b[k].get(m, np.nan))
            d = n - s
            same = seeds_a.get(m) == seeds_b.get(m)
            rows.append(
                dict(method=m, metric=k, stored=s, new=n, diff=d, same_seeds=same, within=bool(same and abs(d) <= tol))
            )  # NaN compares False
    return pd.DataFrame(rows, columns=["method", "metric", "stored", "new", "diff", "same_seeds", "within"])


def drift_line(cmp: pd.DataFrame | None, tol: float = REPRO_TOL, retrained: bool = True) -> str:
    """One line naming the method means that moved more than ``tol`` ('none' when nothing did;
    'nothing compared' when there was nothing stored to compare with; with ``retrained`` False, a
    re-render that trained no member, that nothing was compared).  Meant for a checked notebook
    cell: its text is the same on every machine unless results really changed; the nbval
    sanitizer (``tests/nbval_sanitize.cfg``) reads a re-render's line as 'none', so that a
    re-execution that retrains and finds no drift matches the committed re-render."""
    head = f"means (accuracy, AUROC) that moved more than {tol} from the stored results:"
    if cmp is None:
        return f"{head} nothing compared (no stored results, and no committed reference with these settings)"
    if not retrained:
        return f"{head} {NOT_RETRAINED}"
    bad = cmp[~cmp.within]
    if not len(bad):
        return f"{head} none"
    parts = [
        f"{r.method} {r.metric} {r.stored:.3f} -> {r.new:.3f}"
        if r.same_seeds
        else f"{r.method} (not run on the same seeds both times)"
        for r in bad.itertuples()
    ]
    return f"{head} " + "; ".join(dict.fromkeys(parts))  # one entry per method without a match


NOT_RETRAINED = "none compared, nothing was retrained (a re-render)"
""":func:`drift_line`'s words for a re-render (``tests/nbval_sanitize.cfg`` matches them)."""


def reproduction_text(cmp: pd.DataFrame | None, where: str, trained: int, reused: int, tol: float = REPRO_TOL) -> str:
    """Notebook 03's reproduction check in words: what was compared with what.

    ``cmp``: :func:`compare_means` of the results ``where`` (:func:`results_to_compare`) and this
    run's; ``trained`` / ``reused``: the members this run trained and took from stored results.
    A run that trained nothing (a re-render) compared nothing: it says so, and how to compare."""
    if trained == 0 and cmp is not None:
        return (
            f"Nothing was retrained: all {counted(reused, 'member')} were reused from the results stored "
            "here, so the numbers above are the stored ones and there is no second run to compare them "
            "with. Run this notebook with `reuse = False` (or `TCC_REUSE=0` in its environment, as `make "
            "test` does for the smoke set) to train them again and compare the means with these."
        )
    if cmp is None:
        return f"Nothing to compare with: {where}."
    worst = float(cmp["diff"].abs().max()) if len(cmp) else 0.0
    identical = bool((cmp["diff"].abs() < 1e-5).all() and cmp.same_seeds.all())
    moved = cmp[~cmp.within]
    members = f"{counted(trained, 'member')} trained now" + (f", {reused} reused" if reused else "")
    verdict = (
        "every mean identical"
        if identical
        else f"every mean within {tol} (largest change {worst:.4f})"
        if not len(moved)
        else f"{counted(moved.method.nunique(), 'method')} moved more than {tol} (largest change {worst:.4f})"
    )
    return f"Compared with {where} ({members}): {verdict}."


_NOT_COMPARED = names(stage="output")
"""Settings no result depends on (declared ``stage="output"``): left out of the comparison."""


PLUGIN_CODE = "plugin_code"
"""``config.json``'s record of the code identity of each user plugin's method or baseline."""
OWN_CODE = "tcclib_code"
"""``config.json``'s record of tcclib's own training code where it is not the recorded one
(:mod:`tcclib.artifacts.own_code`): absent when it is."""
DATA_FILE = "data_file"
"""``config.json``'s record of the file the dataset was read from (:func:`data_record`): absent
for breast_cancer, a download or a frame."""
DATA_EDITED = "data_changed"
"""``config.json``'s record of how the run's data differed from the table ``load_dataset`` read (a
notebook cell changed it: :func:`tcclib.data.sources.changed_since_loaded`): absent when it did not."""
RECORDS = (PLUGIN_CODE, OWN_CODE, DATA_FILE, DATA_EDITED)
"""What ``config.json`` holds beside the settings (:func:`settings_of` leaves them out)."""


DATA_CHANGED = "data file"
"""How :func:`same_settings` begins the difference of the dataset's file (``data file mytable.csv changed``)."""
DATA_EDITED_WORDS = "data changed after loading"
"""How :func:`same_settings` begins the difference of a run whose data a notebook cell changed."""


def data_record(path, reading: dict | None = None) -> dict | None:
    """``{"file": its name, "sha256": the first 16 hex of its bytes' digest}`` of the file a
    dataset was read from (``Dataset.source``), with how it was read (``"read"``: its target, the
    columns left out, a CSV's options; :func:`tcclib.data.sources.local_source`) where known; None
    when ``path`` is no file."""
    if not path or not Path(path).is_file():
        return None
    record = {"file": Path(path).name, "sha256": hashlib.sha256(Path(path).read_bytes()).hexdigest()[:16]}
    return {**record, "read": reading} if reading else record


def _reading_change(stored: dict, now: dict) -> str:
    """How a file is read now otherwise than by the stored run: ``target class vs Class``, ..."""
    changed = [k for k in sorted({*stored, *now}) if now.get(k) != stored.get(k)]
    return ", ".join(f"{k} {now.get(k)!r} vs {stored.get(k)!r}" for k in changed)


def settings_of(recorded: dict) -> dict:
    """The settings of a ``config.json``'s contents, without the code records (:data:`RECORDS`)."""
    return {k: v for k, v in recorded.items() if k not in RECORDS}


TIMED = (
    ("XGBoost importances", "importance_s"),
    ("pretraining and evaluation", "total_s"),
    ("baselines", "baselines_s"),
)
"""The parts of a run's ``timings`` that notebook 03 reports, in seconds."""


def time_record(run, out_dir) -> str:
    """Notebook 03's lines on where the time went: the members this run trained and reused (and,
    for a user's rule, the identity it matched or what changed), then its seconds per part; a run
    that trained no member (a re-render) gives instead the record of the last training stored in
    ``out_dir`` (its ``timings.json``, which only a training writes)."""
    t = run.timings
    lines = [f"members trained now: {t['trained_members']}, reused from stored results: {t['reused_members']}"]
    lines += getattr(run, "code_notes", [])
    if t["trained_members"]:
        spent = ", ".join(f"{k} {t[key]:.1f}" for k, key in TIMED if key in t)
        return "\n".join([*lines, f"time (s): {spent}"])
    record = Path(out_dir) / "timings.json"
    stored = json.loads(record.read_text()) if record.is_file() else {}
    spent = {k: stored[key] for k, key in TIMED if stored.get(key, 0) >= 0.05}  # 0.0: taken from a cache
    where = paths.relative_to_root(record)
    if not spent:
        return "\n".join([*lines, f"re-rendered from stored results; no record of their training in {where}"])
    took = ", ".join(f"{k} {v:.1f} s" for k, v in spent.items())
    members = f", {stored['trained_members']} members" if stored.get("trained_members") else ""
    head = f"re-rendered from stored results; the last training stored here ({where}{members})"
    return "\n".join([*lines, f"{head}: {took}"])


def settings_record(cfg, run_keys=None, data_file=None, reading=None, data_changed=None) -> dict:
    """What ``config.json`` holds: every setting, the identity of the run's methods and baselines
    that come from a user's code and, when it is not the recorded code, that of tcclib's own
    training code (those its keys were computed with, ``run_keys``; computed now when None:
    :func:`tcclib.artifacts.keys.code_identities`, :func:`tcclib.artifacts.own_code.identity_now`),
    the file the data was read from (``data_file``, read as ``reading`` says: :func:`data_record`)
    and how the data differed from that file's table, where a notebook cell changed it
    (``data_changed``: :data:`DATA_EDITED`)."""
    code = content_keys.code_identities(cfg) if run_keys is None else run_keys.code
    own = own_code.identity_now() if run_keys is None else run_keys.own
    data = data_record(data_file, reading)
    return {
        **cfg.to_dict(),
        **({PLUGIN_CODE: code} if code else {}),
        **({OWN_CODE: own} if own else {}),
        **({DATA_FILE: data} if data else {}),
        **({DATA_EDITED: data_changed} if data_changed else {}),
    }


def same_settings(config_json, cfg, data_file=None, reading=None) -> tuple[bool, str]:
    """Whether the settings saved in ``config_json`` are ``cfg``'s (progress bars and kept
    embeddings aside) and, given the file the dataset is read from now (``data_file``) and how
    (``reading``: its target, the columns left out, a CSV's options), its bytes those of the file
    the stored run read, read the same way (where the stored run recorded how); else a short text
    of the differences, e.g. ``epochs 5 vs 100``, ``data file mytable.csv changed``, ``data file
    mytable.csv read otherwise (target 'y' vs 'label')``.

    A file written before a setting existed lacks it: it ran with that setting's default
    (:data:`LATER_SETTINGS`, their values from :class:`Config`), and is read so."""
    f = Path(config_json)
    if not f.exists():
        return False, f"no {f.name} beside the reference"
    defaults = Config().to_dict()
    ref = {**{k: defaults[k] for k in LATER_SETTINGS}, **json.loads(f.read_text())}
    mine = settings_record(cfg)
    diff = [
        _difference(k, mine.get(k), ref.get(k))
        for k in sorted(set(ref) | set(mine))
        if k not in (*_NOT_COMPARED, *RECORDS) and ref.get(k) != mine.get(k)
    ]
    diff += code_changes(ref.get(PLUGIN_CODE), _stored_ones(mine.get(PLUGIN_CODE), ref))
    if ref.get(OWN_CODE) != mine.get(OWN_CODE):
        diff.append(_own_code_change(ref.get(OWN_CODE), mine.get(OWN_CODE)))
    stored_data, data_now = ref.get(DATA_FILE), data_record(data_file, reading)
    if isinstance(stored_data, dict) and data_now and stored_data.get("sha256") != data_now["sha256"]:
        diff.append(f"{DATA_CHANGED} {data_now['file']} changed")
    if ref.get(DATA_EDITED):  # (what a parameter file's run reads is the table as loaded)
        diff.append(f"{DATA_EDITED_WORDS}: {ref[DATA_EDITED]}")
    read_then = stored_data.get("read") if isinstance(stored_data, dict) else None
    if isinstance(read_then, dict) and isinstance(reading, dict) and read_then != reading:
        name = data_now["file"] if data_now else stored_data.get("file", "")
        diff.append(f"{DATA_CHANGED} {name} read otherwise ({_reading_change(read_then, reading)})")
    return not diff, "; ".join(diff)


def _stored_ones(code, ref: dict):
    """The code identities ``code`` of the methods and baselines the stored run ``ref`` had: one
    added since is said by ``methods +name``, not as a change of the code it shares."""
    if not isinstance(code, dict):
        return code
    stored = {str(name) for name in [*(ref.get("methods") or ()), *(ref.get("baselines") or ())]}
    return {name: identity for name, identity in code.items() if name in stored}


OWN_CODE_CHANGED = "tcclib's training code changed"
"""How :func:`same_settings` begins the difference of tcclib's own training code."""


def _own_code_change(stored: str | None, now: str | None) -> str:
    """How tcclib's own training code differs between a stored run and this one."""
    if now is None:
        return f"{OWN_CODE_CHANGED} (stored: an edited code; now: the recorded one)"
    return f"{OWN_CODE_CHANGED} ({own_code.in_words(own_code.changed_files())})" if stored is None else OWN_CODE_CHANGED


def reuse_words(changed: str, plural: bool = False) -> str:
    """What bringing a stale run up to date does with its stored results, for the difference
    ``changed`` (:func:`same_settings`): reuses them, unless tcclib's own code changed."""
    if OWN_CODE_CHANGED in changed:
        return "training every member again (tcclib's training code is in every key)"
    if any(changed.startswith(words) or f"; {words}" in changed for words in (DATA_CHANGED, DATA_EDITED_WORDS)):
        return "training again every member whose data, as read, changed (the data is in every key)"
    return (
        f"reusing {'their' if plural else 'its'} stored results where the keys still match "
        "(the members whose keys the changed settings reach train again)"
    )


def stored_code(config_json) -> dict:
    """The user code identities a stored run's ``config.json`` records (empty when it has none)."""
    try:
        found = json.loads(Path(config_json).read_text()).get(PLUGIN_CODE)
    except (OSError, ValueError, AttributeError):
        return {}
    return found if isinstance(found, dict) else {}


def code_changes(stored, now) -> list[str]:
    """``code of nearby changed``, ``arguments of k30 changed``: what differs between the user
    code identities a run stored (``config.json``'s ``plugin_code``) and those computed now, per
    method and rule (:func:`tcclib.method.registry.changes`)."""
    stored, now = (part if isinstance(part, dict) else {} for part in (stored, now))
    out = []
    for name, identity in now.items():
        before = stored.get(name)
        pairs = (
            [(rule, before.get(rule) if isinstance(before, dict) else None, value) for rule, value in identity.items()]
            if isinstance(identity, dict)
            else [(name, before, identity)]
        )
        for rule, old, new in pairs:
            out += [_CHANGED[kind].format(rule=rule) for kind in registry.changes(old, new)]
    return list(dict.fromkeys(out))  # (a rule or objective that several methods share: said once)


def keyed_as(identities: dict) -> str:
    """``; nearby matched as code d9b1ade7, state 53aa74dc, draws 5f142a7a``: the identity each user
    rule (or baseline) of a run was keyed by (:func:`tcclib.artifacts.keys.code_identities`), short."""
    named = list(
        dict.fromkeys(  # (one line for a rule or objective that several methods share)
            (rule, found)
            for name, value in identities.items()
            for rule, found in (value.items() if isinstance(value, dict) else [(name, value)])
        )
    )
    if not named:
        return ""
    short = [
        f"{rule} matched as " + ", ".join(f"{k} {v[:8]}" for k, v in (part.split(":", 1) for part in found.split(" ")))
        for rule, found in named
    ]
    return "; " + "; ".join(short)


_CHANGED = {
    "code": "code of {rule} changed",
    "arguments": "arguments of {rule} changed",
    "draws": "what {rule} draws changed (its code and arguments read the same: something its key cannot read)",
    "scheme": "{rule} was stored under an older identity scheme (it trains again once)",
}


def _difference(name: str, mine, stored) -> str:
    """``epochs 5 vs 100``; two lists that differ by members only: ``methods +oracle -class``."""
    if (
        isinstance(mine, (list, tuple))
        and isinstance(stored, (list, tuple))
        and len(set(map(str, mine))) == len(mine)
        and len(set(map(str, stored))) == len(stored)
    ):
        added = [v for v in mine if v not in stored]
        gone = [v for v in stored if v not in mine]
        if added or gone:
            return " ".join([name, *(f"+{v}" for v in added), *(f"-{v}" for v in gone)])
    return f"{name} {mine!r} vs {stored!r}"


def results_to_compare(out_dir, set_name: str, dataset: str, cfg):
    """What a fresh run of ``dataset`` is checked against: ``(results, where)``.

    The results stored in ``out_dir`` by an earlier run (a re-execution), else the committed
    reference ``outputs/<set_name>/<dataset>`` when its settings are ``cfg``'s; ``(None, reason)``
    when there is neither."""

    stored = load_results(out_dir)
    if stored is not None:
        return stored, "the results stored here before"
    ref = paths.reference_root() / str(set_name) / str(dataset)
    if ref.resolve() == Path(out_dir).resolve() or not (ref / "results.csv").exists():
        return None, "no stored results and no committed reference"
    same, why = same_settings(ref / "config.json", cfg)
    if not same:
        return None, f"the committed reference {paths.reference_name(ref)} has other settings ({why})"
    return pd.read_csv(ref / "results.csv"), f"the committed reference {paths.reference_name(ref)}"


def reference_line(run_dir, ref_dir, tol: float = REPRO_TOL) -> str | None:
    """One console line comparing a finished run with the committed reference run of the same
    dataset: agree (largest change of a mean), differ (which means), not comparable (settings
    differ), or that there is no reference to compare with.  None when the run has no results or
    *is* the reference."""
    run_dir, ref_dir = Path(run_dir), Path(ref_dir)
    if run_dir.resolve() == ref_dir.resolve():
        return None
    if not (run_dir / "results.csv").exists() or not (run_dir / "config.json").exists():
        return None
    ref_name = paths.reference_name(ref_dir)
    if not (ref_dir / "results.csv").exists():
        where = "tcclib carries those of its built-in sets only" if paths.is_bundled(ref_dir) else f"no {ref_name}"
        return f"no committed reference to compare with ({where})"
    if not paths.is_bundled(ref_dir):  # (the copy a wheel carries holds its results and settings alone)
        missing = missing_files(ref_dir)
        if missing or not (ref_dir / "_DONE.json").is_file():
            unfinished = missing_words(missing, ref_dir) or "no _DONE.json: its run did not finish"
            return f"not compared with the committed reference {ref_name}: {unfinished}"
    recorded = json.loads((run_dir / "config.json").read_text())
    cfg = Config.from_dict(settings_of(recorded))
    same, why = same_settings(ref_dir / "config.json", cfg)
    data_then, data_now = _recorded_data(ref_dir), recorded.get(DATA_FILE)
    if same and data_then and isinstance(data_now, dict) and data_then.get("sha256") != data_now.get("sha256"):
        same, why = False, f"{DATA_CHANGED} {data_now.get('file')} is not the one the reference ran on"
    if same and recorded.get(DATA_EDITED):
        same, why = False, f"{DATA_EDITED_WORDS}: {recorded[DATA_EDITED]}"
    if not same:
        return f"not compared with the committed reference {ref_name}: other settings ({why})"
    cmp = compare_means(pd.read_csv(ref_dir / "results.csv"), pd.read_csv(run_dir / "results.csv"), tol)
    worst = float(cmp["diff"].abs().max()) if len(cmp) else 0.0
    if bool(cmp.within.all()):
        return (
            f"AGREES with the committed reference {ref_name}: every method's mean accuracy and "
            f"AUROC within {tol} (largest change {worst:.4f})"
        )
    return f"DIFFERS from the committed reference {ref_name}: " + drift_line(cmp, tol).split(": ", 1)[1]


def _recorded_data(folder: Path) -> dict | None:
    """The data file record of a run's ``config.json`` (None where it records none)."""
    try:
        found = json.loads((folder / "config.json").read_text()).get(DATA_FILE)
    except (OSError, ValueError, AttributeError):
        return None
    return found if isinstance(found, dict) else None


# --------------------------------------------------------------------------- pretraining checkpoints
# :func:`tcclib.running.train.run_prepared` checkpoints pretraining every few epochs: the state of
# :class:`tcclib.method.pretraining.Pretraining` plus a key naming the run and the sha256 of the contents.

# settings that do not change what pretraining computes (left out of the checkpoint key, by their
# declared stage): the head variant's settings too, so that a kept final checkpoint serves every head
_NOT_IN_KEY = ("extra", *names(stage="output"), *names(stage="baselines"), *names(stage="classifier"))


def checkpoint_key(prep, cfg, importance: np.ndarray | None, code: dict | None = None) -> str:
    """The key of a pretraining checkpoint (:func:`tcclib.artifacts.keys.digest`): data, splits,
    the settings pretraining reads (not the head variant's), importances, and the identity by value
    of a user's rules and objectives (``code``: :func:`tcclib.artifacts.keys.code_identities` of
    ``cfg``, computed here when not given), so that an edited rule never resumes the pretraining
    its earlier version left."""
    settings = {k: v for k, v in cfg.to_dict().items() if k not in _NOT_IN_KEY}
    objectives = {m: part for m in cfg.methods if (part := METHODS[m].objective_key(with_code=False))}
    if objectives:  # (none for NT-Xent methods: their checkpoints keep their keys)
        settings["objectives"] = objectives
    code = content_keys.code_identities(cfg) if code is None else code
    if code:  # (none for tcclib's own rules: their checkpoints keep their keys)
        settings["code"] = code
    defined = {m: repr(METHODS[m]) for m in cfg.methods if not registry.get(m).from_tcclib}
    if defined:  # a user's method by its parts (none for tcclib's: their checkpoints keep their keys)
        settings["defined"] = defined
    arrays = [
        a
        for sp in prep.splits
        for a in (sp.raw_train, sp.y_train, sp.labeled, sp.active, sp.is_cat, sp.n_levels, sp.raw_test, sp.y_test)
    ]
    extra = [] if importance is None else [np.asarray(importance, dtype=np.float64)]
    own = content_keys.own_part()  # (tcclib's training code when edited: an edit never resumes its old pretraining)
    version = content_keys.version_part("train version", content_keys.TRAIN_VERSION)
    return content_keys.digest("checkpoint", prep.name, settings, *map(np.asarray, arrays), *extra, *own, *version)[:16]


def checkpoint_path(checkpoint_dir, name: str, key: str) -> Path:
    """Where :func:`run_prepared` keeps the pretraining checkpoint of run ``key`` of ``name``."""
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in str(name))
    return Path(checkpoint_dir) / f"{safe}-{key}.pt"


def state_digest(obj, h=None) -> str:
    """sha256 of a checkpoint's contents: every tensor's dtype, shape and bytes, every other
    value's ``repr``, dictionaries in key order (the ``"sha256"`` entry itself left out)."""
    top = h is None
    h = hashlib.sha256() if top else h
    if isinstance(obj, torch.Tensor):
        t = obj.detach().cpu().contiguous()
        h.update(f"T{t.dtype}{tuple(t.shape)}".encode())
        h.update(t.reshape(-1).view(torch.uint8).numpy())
    elif isinstance(obj, dict):
        h.update(b"{")
        for k in sorted(obj, key=repr):
            if not (top and k == "sha256"):
                h.update(repr(k).encode() + b":")
                state_digest(obj[k], h)
        h.update(b"}")
    elif isinstance(obj, (list, tuple)):
        h.update(b"[")
        for v in obj:
            state_digest(v, h)
        h.update(b"]")
    else:
        h.update(repr(obj).encode() + b";")
    return h.hexdigest() if top else ""


def save_checkpoint(path: Path, state: dict) -> None:
    """Write the pretraining state with the sha256 of its contents, atomically."""
    state = {**state, "sha256": state_digest(state)}
    atomic_write(path, lambda tmp: torch.save(state, tmp))  # a crash while saving keeps the last one


def checkpoint_problem(state, key: str, expect: dict | None) -> str | None:
    """What is wrong with a loaded checkpoint for run ``key`` (None: nothing).

    ``expect`` (:meth:`tcclib.method.pretraining.Pretraining.expect`): the shapes of the parameters,
    the generators' state sizes, the pseudo-label shape, the number of epochs and of members, and
    the number of classes."""
    if not isinstance(state, dict):
        return f"not a checkpoint (a {type(state).__name__})"
    if state.get("key") != key:
        return f"made for another run (key {state.get('key')!r}, expected {key!r})"
    if "sha256" in state and state["sha256"] != state_digest(state):
        return "its contents changed since it was written (sha256 mismatch)"
    if expect is None:
        return None
    if "stacks" in expect:  # one stack per objective (tcclib.method.pretraining.Stacks)
        parts = state.get("stacks")
        if not isinstance(parts, list) or len(parts) != len(expect["stacks"]):
            return f"{len(parts) if isinstance(parts, list) else 'no'} stacks, expected {len(expect['stacks'])}"
        for part, part_expect in zip(parts, expect["stacks"]):
            problem = _stack_problem(dict(part, seconds=state.get("seconds")), part_expect)
            if problem:
                return problem
        return None
    return _stack_problem(state, expect)


def _stack_problem(state: dict, expect: dict) -> str | None:
    """What is wrong with one stack's pretraining state (None: nothing)."""
    try:
        shapes = [tuple(p.shape) for p in state["params"]]
        if shapes != expect["params"]:
            return f"parameter shapes {shapes} do not match this run's {expect['params']}"
        opt = state["opt"]
        if len(opt["param_groups"]) != 1 or len(opt["param_groups"][0]["params"]) != len(shapes):
            return "its optimiser state does not match this run's parameters"
        for i, st in opt["state"].items():
            for name in ("exp_avg", "exp_avg_sq"):
                if tuple(st[name].shape) != expect["params"][i]:
                    return f"optimiser state {name} of parameter {i} has shape {tuple(st[name].shape)}"
        gens = [int(g.numel()) for g in state["gens"]]
        if gens != expect["gens"]:
            return f"{len(gens)} generator states, expected {len(expect['gens'])} of their size"
        lab = state["labels"]
        if tuple(lab.shape) != expect["labels"] or lab.dtype != torch.int64:
            return f"pseudo-labels of shape {tuple(lab.shape)} ({lab.dtype}), expected {expect['labels']} int64"
        if lab.numel() and (int(lab.min()) < 0 or int(lab.max()) >= expect["classes"]):
            return f"pseudo-labels outside 0..{expect['classes'] - 1}"
        epoch = state["epoch"]
        if not isinstance(epoch, int) or not 1 <= epoch <= expect["epochs"]:  # (the last: a kept pretraining)
            return f"epoch {epoch!r} outside 1..{expect['epochs']}"
        if len(state["history"]) != epoch * expect["members"]:
            return f"{len(state['history'])} loss history rows, expected {epoch * expect['members']}"
        if not isinstance(state["pseudo"], list) or not isinstance(state["seconds"], (int, float)):
            return "its pseudo-label history or timing is malformed"
    except (KeyError, TypeError, AttributeError, IndexError, ValueError, RuntimeError) as e:
        return f"malformed ({type(e).__name__}: {e})"
    return None


def load_checkpoint(path: Path | None, key: str, expect: dict | None = None) -> dict | None:
    """The checkpoint at ``path`` when it belongs to run ``key`` and is intact, else None.

    An unreadable file, one whose key, checksum or shapes (``expect``) do not match, is
    reported (a :class:`tcclib.artifacts.importances.CacheWarning` naming the file and the problem) and
    pretraining starts over; it is overwritten by the next checkpoint."""
    if path is None or not path.exists():
        return None
    try:
        state = torch.load(path, map_location="cpu", weights_only=False)
    except Exception as e:  # a damaged file: start over rather than fail
        problem = f"unreadable ({type(e).__name__}: {' '.join(str(e).split())[:200]})"
    else:
        problem = checkpoint_problem(state, key, expect)
    if problem is None:
        return state
    warnings.warn(f"checkpoint {path}: {problem}; discarded, starting pretraining over", CacheWarning, stacklevel=2)
    return None
