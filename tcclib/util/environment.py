"""Numbers read from environment variables (``TCC_MEMORY_BUDGET_GB``, ``TCC_CHECKPOINT_SECONDS``)."""

from __future__ import annotations

import os


def env_number(name: str) -> tuple[str, float] | None:
    """``(its text, its value)`` of the environment variable ``name``: None when it is unset or
    blank, the value NaN when the text is not a number (the caller says what it expected)."""
    text = os.environ.get(name, "").strip()
    if not text:
        return None
    try:
        return text, float(text)
    except ValueError:
        return text, float("nan")
