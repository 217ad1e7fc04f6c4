"""Errors shared by every layer."""


class ConfigError(ValueError):
    """A setting has a wrong name, type or value."""
