"""Errors shared by every layer."""


class ConfigError(ValueError):
    """A setting has a wrong name, type or value."""

    def _render_traceback_(self) -> list[str]:
        """What IPython shows for it in a notebook instead of a traceback: its one line, which says
        what to change (papermill's report of the failed cell is then that line alone)."""
        return [f"{type(self).__name__}: {self}"]
