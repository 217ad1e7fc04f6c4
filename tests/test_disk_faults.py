"""Full disks and read-only folders, real ones: a small tmpfs and read-only bind mounts (the tests
run as root, for whom permission bits do not stop a write; mounting needs root, so without it
these tests are skipped).  The up-front check names the folder; a disk that fills during the run
is one line, with the finished results intact; a failed forced re-run's last line names the real
``.failed/<dataset>/_FAILED.json`` and keeps its note whole."""

import json
import os
import shutil
import subprocess
from contextlib import contextmanager
from pathlib import Path

import pytest

from tcclib.running import cli, folders, sweep
from tcclib.running import params as param_files

ROOT = Path(__file__).resolve().parents[1]
CFG = {"seeds": [1], "methods": ["no_pretrain", "random"], "epochs": 2, "head_epochs": 2, "progress": False}


def _can_mount() -> bool:
    if os.geteuid() != 0:
        return False
    probe = Path("/tmp") / f"tcc-mount-probe-{os.getpid()}"
    probe.mkdir(exist_ok=True)
    try:
        ok = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(probe)]).returncode == 0
        if ok:
            subprocess.run(["umount", str(probe)], check=True)
        return ok
    finally:
        probe.rmdir()


mounts = pytest.mark.skipif(not _can_mount(), reason="needs root and mount (tmpfs, read-only bind mounts)")


@contextmanager
def _tmpfs(folder: Path, size: str):
    folder.mkdir(parents=True, exist_ok=True)
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(folder)], check=True)
    try:
        yield folder
    finally:
        subprocess.run(["umount", "-l", str(folder)], check=True)


@contextmanager
def _read_only(folder: Path):
    """``folder`` made read-only by binding it onto itself read-only (EROFS, also for root)."""
    subprocess.run(["mount", "--bind", str(folder), str(folder)], check=True)
    try:
        subprocess.run(["mount", "-o", "remount,bind,ro", str(folder)], check=True)
        yield folder
    finally:
        subprocess.run(["umount", "-l", str(folder)], check=True)


def _fill(folder: Path) -> None:
    """Write until the filesystem of ``folder`` has no byte left."""
    fd = os.open(folder / "filler", os.O_WRONLY | os.O_CREAT | os.O_APPEND)
    try:
        for size in (65536, 1):
            try:
                while True:
                    os.write(fd, b"\0" * size)
            except OSError:
                pass
    finally:
        os.close(fd)


def _params(tmp_path, notebooks="[01_data_prep]") -> Path:
    p = tmp_path / "disk.yaml"
    p.write_text(
        f"name: disk\ndatasets: [breast_cancer]\nper_dataset_notebooks: {notebooks}\n"
        f"aggregate_notebooks: []\nconfig: {json.dumps(CFG)}\n"
    )
    return p


def _error(capsys) -> str:
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.startswith("error: ")]
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


@mounts
def test_a_full_disk_is_caught_up_front_although_an_empty_file_still_fits(tmp_path, capsys):
    p = _params(tmp_path)
    with _tmpfs(tmp_path / "out", "1m") as out:
        _fill(out)
        probe = out / "empty"
        probe.touch()  # what the old check did: it succeeds on this full disk
        probe.unlink()
        with pytest.raises(sweep.SweepError, match="No space left on device"):
            sweep.sweep(param_files.load(p), out, progress=False)
        assert cli.main([str(p), "--outputs", str(out)]) == 2
        assert "cannot write the output folder" in _error(capsys)
        assert cli.main([str(p), "--outputs", str(out), "--check"]) == 2
        assert "No space left on device" in _error(capsys)
        assert not (out / "disk" / "breast_cancer").exists()


@mounts
def test_too_little_room_for_what_the_run_writes(tmp_path, capsys):
    p = _params(tmp_path)
    outputs, cache = folders.room_needed(param_files.load(p), 1, 1)
    assert outputs >= folders.OUTPUT_BYTES and cache > folders.CACHE_BYTES  # a checkpoint's room too
    with _tmpfs(tmp_path / "out", "4m") as out:  # writable, but far from the estimate
        assert cli.main([str(p), "--outputs", str(out)]) == 2
        line = _error(capsys)
        assert "not enough room for the output folder" in line and "MiB free" in line
        assert not (out / "disk").exists()


@mounts
def test_a_read_only_cache_or_checkpoint_folder_is_caught_up_front(tmp_path, capsys):
    p = _params(tmp_path)
    out = tmp_path / "out"
    for sub in (".cache", ".cache/checkpoints"):
        folder = out / sub
        folder.mkdir(parents=True, exist_ok=True)
        with _read_only(folder):
            assert cli.main([str(p), "--outputs", str(out)]) == 2
            line = _error(capsys)
            what = "the cache folder" if sub == ".cache" else "the checkpoint folder"
            assert f"cannot write {what} {folder}" in line and "Read-only file system" in line
            assert cli.main([str(p), "--outputs", str(out), "--check"]) == 2
            assert what in _error(capsys)
        assert not (out / "disk" / "breast_cancer").exists()


@mounts
def test_a_read_only_output_folder_for_root(tmp_path, capsys):
    p = _params(tmp_path)
    out = tmp_path / "out"
    (out / "disk").mkdir(parents=True)
    with _read_only(out / "disk"):
        assert cli.main([str(p), "--outputs", str(out)]) == 2
        assert "cannot write the output folder" in _error(capsys)


@mounts
def test_a_screen_on_a_read_only_output_folder_is_one_line_at_the_run_as_at_check(tmp_path, capsys):
    """The screen writes its folder (and may seed its importance matrices) before the sweep's own
    check: a read-only folder was an OSError traceback at the run; now the line ``--check`` gives."""
    reference = tmp_path / "reference"
    shutil.copytree(ROOT / "outputs" / "head_variants" / "100ep" / "frozen" / "kc2", reference / "kc2")
    out = tmp_path / "out"
    out.mkdir()
    yaml = tmp_path / "screen.yaml"
    yaml.write_text(
        f"name: screen\ndatasets: [kc2]\nscreen:\n  reference: {reference}\n  compare: [class, no_pretrain]\n"
        f"  out: {out / 'screen'}\n"
    )
    with _read_only(out):
        for check in (["--check"], []):
            assert cli.main([str(yaml), "--methods", "random", *check]) == 2
            line = _error(capsys)
            assert line.startswith(f"error: cannot write the output folder {out / 'screen'} (OSError: Read-only file")
    assert not (out / "screen").exists()


@mounts
def test_a_disk_that_fills_during_a_forced_rerun_is_one_line_and_keeps_the_results(
    tmp_path, monkeypatch, capsys, folder_digest
):
    p = _params(tmp_path)
    ps = param_files.load(p)
    need = sum(folders.room_needed(ps, 1, 1))
    with _tmpfs(tmp_path / "out", f"{need // 2**20 + 8}m") as out:
        assert sweep.sweep(ps, out, progress=False)["done"] == ["breast_cancer"]
        before = folder_digest(out / "disk" / "breast_cancer")
        real = sweep.recover

        def fill_then_recover(set_dir, dataset):  # the disk fills after the up-front check
            _fill(out)
            return real(set_dir, dataset)

        monkeypatch.setattr(sweep, "recover", fill_then_recover)
        assert cli.main([str(p), "--outputs", str(out), "--force", "all"]) == 2
        line = _error(capsys)
        assert "No space left on device (ENOSPC)" in line and "datasets.json" in line
        assert "every dataset finished before this is intact" in line
        assert folder_digest(out / "disk" / "breast_cancer") == before
        assert not (out / "disk" / ".lock").exists()


def test_a_failed_forced_rerun_names_the_real_record_and_keeps_its_note(tmp_path, monkeypatch, capsys):
    p = _params(tmp_path)
    out = tmp_path / "out"
    assert cli.main([str(p), "--outputs", str(out)]) == 0
    broken = tmp_path / "nbs"
    broken.mkdir()
    (broken / "01_data_prep.py").write_text("# %%\nraise RuntimeError('boom ' * 200)\n")  # a long message
    monkeypatch.setenv("TCC_NOTEBOOKS", str(broken))
    capsys.readouterr()
    assert cli.main([str(p), "--outputs", str(out), "--force", "all"]) == 1
    last = capsys.readouterr().out.strip().splitlines()[-1]
    record = out / "disk" / ".failed" / "breast_cancer" / "_FAILED.json"
    assert record.exists() and not (out / "disk" / "breast_cancer" / "_FAILED.json").exists()
    assert last.endswith(f"(traceback in {record})"), last
    assert "previous results are kept" in last and "RuntimeError: boom boom" in last and "..." in last
