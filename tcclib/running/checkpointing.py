"""How often :func:`tcclib.running.train.run_dataset` checkpoints its pretraining: at most once
per :data:`CHECKPOINT_SECONDS` (or ``$TCC_CHECKPOINT_SECONDS``), on a multiple of
:data:`CHECKPOINT_EVERY` epochs.

Apart from the training module (no torch here), so that the sweep checks the setting before any
work starts.
"""

from __future__ import annotations

from tcclib.util.environment import env_number

CHECKPOINT_EVERY = 10  # run_prepared's default epochs between two checkpoints
CHECKPOINT_SECONDS = 60.0  # run_dataset's least seconds between two checkpoints
CHECKPOINT_SECONDS_ENV = "TCC_CHECKPOINT_SECONDS"  # ... unless this says otherwise (0: every 10 epochs)


def checkpoint_interval(seconds: float | None = None) -> float:
    """The least seconds between two pretraining checkpoints of
    :func:`tcclib.running.train.run_dataset`: ``seconds``, else ``$TCC_CHECKPOINT_SECONDS``, else
    :data:`CHECKPOINT_SECONDS`.  A checkpoint still falls on a multiple of :data:`CHECKPOINT_EVERY`
    epochs; a crash loses at most this long and that many epochs of pretraining.  A value that is
    not a number >= 0 is a ``ValueError`` naming where it came from."""
    if seconds is None:
        found = env_number(CHECKPOINT_SECONDS_ENV)
        if found is None:
            return CHECKPOINT_SECONDS
        text, value = found
        if not value >= 0:
            raise ValueError(
                f"${CHECKPOINT_SECONDS_ENV} must be a number of seconds >= 0 between two pretraining "
                f"checkpoints, got {text!r}: set it to, say, 60 (0: one every 10 epochs), or unset it"
            )
        return value
    if not seconds >= 0:
        raise ValueError(f"checkpoint_seconds must be a number of seconds >= 0, got {seconds!r}")
    return float(seconds)
