"""The overall bar of a sweep or a screen moves with training, not only when a dataset ends
(issue 54): each running dataset's worker writes its progress file, the bar reads it; with one
worker there is one bar, and its elapsed time moves while the dataset trains."""

from __future__ import annotations

import re
import time
from pathlib import Path

from tcclib.method.config import Config
from tcclib.method.inputs import prepare_config
from tcclib.running import params as param_files
from tcclib.running import sweep as sweeps
from tcclib.running.train import run_prepared
from tcclib.util import progress

CFG = Config(methods=("class", "no_pretrain"), seeds=(0, 1), epochs=3, head_epochs=2, hidden_dim=16, progress=False)


def test_the_overall_bar_counts_the_members_in_training_epoch_by_epoch(bc_small, tmp_path):
    (tmp_path / "bc12").mkdir()
    lines: list[str] = []
    overall = progress.Overall(["bc12", "other"], desc="screen", say=lines.append, folder=tmp_path)
    worker = progress.TrainingFile(tmp_path / "bc12", 4, CFG.epochs)
    seen = [overall.state()]

    def after_epoch(done: int) -> None:
        worker.epoch(done)
        seen.append(overall.state())

    run_prepared(prepare_config(bc_small, CFG), CFG, on_epoch=after_epoch)
    shares = [re.search(r"4 training \((\d+)%\)", s).group(1) for s in seen]
    assert shares == ["0", "33", "67", "100"], seen
    assert all(s.startswith("0 members trained") for s in seen)  # none finished yet: the bar moved anyway
    worker.close()
    overall.done("bc12", "bc12: done", 4)
    assert "[1/2 datasets; 4 members trained, " in lines[-1] and "training" not in lines[-1]


class _Clock:
    """``time`` for the progress module, whose clock reads a second later at every reading (the
    frames' elapsed time then tells redraws apart however fast the machine trains)."""

    def __init__(self):
        self.now = 0.0

    def monotonic(self) -> float:
        self.now += 1.0
        return self.now

    def __getattr__(self, name):
        return getattr(time, name)


def test_a_one_worker_screen_shows_one_bar_whose_training_and_elapsed_time_move(tmp_path, monkeypatch, capsys):
    """The set trains in this thread (one worker), its own bars off: the only bar is the overall
    one, redrawn by its own thread while the dataset trains (the sweep's loop does not run)."""
    monkeypatch.setattr(progress, "TICK_SECONDS", 0.02)
    monkeypatch.setattr(progress, "time", _Clock())  # a second passes at every reading
    monkeypatch.setenv(progress.PROGRESS_ENV, "text")
    cfg = CFG.replace(epochs=10, progress=True)
    ps = param_files.ParamSet(
        name="screen",
        datasets=["breast_cancer"],
        config=cfg,
        per_dataset_notebooks=(),
        aggregate_notebooks=(),
        configs={"breast_cancer": cfg},
        train_only=True,
    )
    report = sweeps.sweep(ps, tmp_path, workers=1, aggregate=False, threads=1, reference_root=tmp_path / "none")
    assert report["done"] == ["breast_cancer"]
    frames = [f for f in re.split(r"[\r\n]", capsys.readouterr().err) if f.strip()]
    assert all(f.startswith("screen screen: ") for f in frames if "|" in f), frames  # no pretraining bar
    bars = [f for f in frames if " elapsed" in f]
    training = [f for f in bars if "4 training" in f and f.startswith("screen screen: 0/1")]
    assert training, bars  # members in training shown before the dataset ended
    elapsed = {re.search(r"(\d+) s elapsed", f).group(1) for f in training}
    assert len(elapsed) > 1, bars  # redrawn again and again while it trained: the elapsed time moves
    assert "4 members trained" in bars[-1]


def test_a_run_after_an_interrupt_shows_its_own_training_not_the_killed_run_s(tmp_path, monkeypatch, capsys):
    """An interrupt kills the workers, whose progress files stay (nothing removes them): the next
    run's bar showed the killed run's share (``8 training (41%)``) until its own worker wrote its
    file, some 20 s later in Lab.  The sweep removes them before its bar starts."""
    monkeypatch.setattr(progress, "TICK_SECONDS", 0.02)
    monkeypatch.setattr(progress, "time", _Clock())
    monkeypatch.setenv(progress.PROGRESS_ENV, "text")
    left = tmp_path / "screen" / "breast_cancer"
    left.mkdir(parents=True)
    (left / progress.PROGRESS_FILE).write_text(
        '{"members": 8, "epochs": 100, "done": 41}'
    )  # as a killed worker left it
    cfg = CFG.replace(epochs=4, progress=True)
    ps = param_files.ParamSet(
        name="screen",
        datasets=["breast_cancer"],
        config=cfg,
        per_dataset_notebooks=(),
        aggregate_notebooks=(),
        configs={"breast_cancer": cfg},
        train_only=True,
    )
    report = sweeps.sweep(ps, tmp_path, workers=1, aggregate=False, threads=1, reference_root=tmp_path / "none")
    assert report["done"] == ["breast_cancer"]
    bars = [f for f in re.split(r"[\r\n]", capsys.readouterr().err) if " elapsed" in f]
    assert bars and not [f for f in bars if "8 training" in f or "41%" in f], bars
    assert not (left / progress.PROGRESS_FILE).exists()


def test_a_run_that_trained_counts_even_when_its_timings_file_comes_out_the_same_bytes(tmp_path):
    """The executor counts a dataset's trained members from its timings.json, rewritten only by
    a run that trained: a rewrite with the same bytes (tiny runs' seconds round alike) still counts;
    the file untouched does not."""
    from tcclib.running import executor
    from tcclib.util.files import atomic_write

    record = tmp_path / "timings.json"
    text = '{"pretrain_s": 0.012, "trained_members": 2, "reused_members": 0}\n'
    atomic_write(record, lambda t: Path(t).write_text(text))
    before = executor._read(record)
    assert executor._members_trained(tmp_path, before) == 0  # not rewritten: nothing trained
    atomic_write(record, lambda t: Path(t).write_text(text))  # the same bytes, a new file
    assert record.read_text() == text and executor._members_trained(tmp_path, before) == 2
    assert executor._members_trained(tmp_path / "none", None) == 0
    assert executor._members_trained(tmp_path, None) == 2  # (no file before: what it says)
