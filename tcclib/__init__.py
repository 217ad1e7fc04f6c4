"""tcclib: class-conditioned contrastive pretraining on tabular data."""

__version__ = "0.1.0"
