"""An objective in one file: Barlow Twins' redundancy reduction between an anchor and its view.

The built-in objectives learn by contrast (NT-Xent), by reconstruction (VIME, the denoising
autoencoder) or both (SubTab).  Barlow Twins (Zbontar et al., ICML 2021) needs no negatives: the
anchors' and the views' projections are standardised over the batch, and their cross-correlation
matrix is pushed towards the identity (each projected feature agrees between anchor and view, and
carries information no other feature carries).  Its views are the method's rules: here SCARF's
(the whole column's values, ``corruption_rate`` of the features).

Load it the documented way (any process: the sweep's kernels, Dask workers, the screen)::

    python -m tcclib params/screen.yaml --plugin examples/barlow_objective.py   # the 30-dataset verdict
    tcclib.load_plugins("examples/barlow_objective.py")                         # Python, a notebook cell

and the method ``barlow`` is valid in ``Config.methods`` and ``TCCClassifier(method="barlow")``.
Its members' content key holds this file's code (the objective's class and what it reads), so an
edit retrains them, and only them.
"""

import torch

from tcclib.method import objectives, registry


class BarlowTwins(objectives.Objective):
    """``sum_i (1 - C_ii)^2 + off_diagonal * sum_{i != j} C_ij^2`` of the cross-correlation ``C``
    of the anchors' and the views' projections (two layers), each member's own."""

    def __init__(self, off_diagonal: float = 5e-3, name: str = "barlow"):
        if not off_diagonal >= 0:
            raise ValueError(f"off_diagonal: the weight of the off-diagonal terms must be >= 0, got {off_diagonal!r}")
        self.off_diagonal, self.name = off_diagonal, name

    def key_params(self) -> dict:
        return {"off_diagonal": self.off_diagonal}

    def heads(self, stack: objectives.Stack) -> dict:
        return {"projection": [stack.hidden, stack.hidden]}

    def loss(self, batch: objectives.Batch) -> torch.Tensor:
        b = batch.size
        z = batch.head("projection", batch.encode(batch.pairs)).float()  # [k, 2b, H]: anchors, then views
        anchors, views = standardised(z[:, :b]), standardised(z[:, b:])
        c = anchors.transpose(1, 2).bmm(views) / b  # [k, H, H], each member's own
        diagonal = c.diagonal(dim1=1, dim2=2)
        on = (1 - diagonal).square().sum(-1)
        off = c.square().sum((1, 2)) - diagonal.square().sum(-1)
        return on + self.off_diagonal * off


def standardised(z: torch.Tensor) -> torch.Tensor:
    """Each projected feature standardised over the batch's rows (dim 1), member by member."""
    return (z - z.mean(1, keepdim=True)) / z.std(1, keepdim=True).clamp_min(1e-6)


registry.register_method("barlow", "column", "uniform", objective=BarlowTwins(), label="Barlow Twins (SCARF's views)")
