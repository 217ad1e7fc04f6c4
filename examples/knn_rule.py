"""A new corruption rule in one file: values drawn from the anchor's k nearest neighbours.

SCARF replaces a corrupted value by the value of a random row of the whole column; the paper's
class-conditioned rule by that of a random row of the anchor's (pseudo-)class.  This rule takes it
from one of the anchor's ``k`` nearest training rows, by Euclidean distance between the rows as
preprocessed (z-scored numbers, category codes; the active features only), so a view stays close
to its anchor without any label.

Importing this file is all it takes: the rule becomes a :class:`tcclib.method.rules.HowRule`
known to the registry, and the method ``knn`` (the rule, features chosen uniformly) is valid in
``Config.methods`` and ``TCCClassifier(method="knn")``, trains in the runner and the estimator,
gets its own content key (``k`` enters it) and shows up in the results, the set tables, the
figures and the report::

    import runpy; runpy.run_path("examples/knn_rule.py")   # or: import knn_rule
    from tcclib.running.train import run_dataset
    from tcclib import Config
    run = run_dataset("breast_cancer", Config(methods=("random", "class", "knn")))

A rule needs three things (see :class:`tcclib.method.rules.HowRule`): ``needs`` (what it reads
from the data: nothing here), :meth:`~tcclib.method.rules.HowRule.donors` (a donor row per anchor
and feature, for a stack of members at once, from uniform draws it is given) and what enters its
content key (:meth:`~tcclib.method.rules.HowRule.key_params`, and ``settings`` for the
:class:`~tcclib.method.config.Config` fields it reads).  A new *where* rule is the same with
:class:`tcclib.method.rules.WhereRule` and its ``mask``.
"""

from __future__ import annotations

import torch

from tcclib.method import registry, rules


class NearestNeighbours(rules.HowRule):
    """Donors drawn uniformly among the anchor's ``k`` nearest training rows (itself left out).

    The neighbour table is ``[members, N, k]``, built once per run by :meth:`prepare` from a
    ``[members, N, N]`` distance matrix: fine for tables of some thousand rows."""

    needs = rules.NOTHING

    def __init__(self, k: int = 5, name: str = "knn"):
        if not isinstance(k, int) or k < 1:
            raise ValueError(f"k: the number of neighbours must be an integer >= 1, got {k!r}")
        self.k, self.name = k, name

    def key_params(self) -> dict:
        return {"k": self.k}  # a different k trains again; the other methods' keys do not move

    def prepare(self, members: rules.Members) -> torch.Tensor:
        """Each member's ``[N, k]`` nearest rows (by distance over its active features)."""
        rows = members.raw.float() * members.active.unsqueeze(1)  # inactive features count for nothing
        dist = torch.cdist(rows, rows)
        dist.diagonal(dim1=1, dim2=2).fill_(float("inf"))  # a row is not its own neighbour
        k = min(self.k, rows.shape[1] - 1)
        return dist.topk(k, dim=-1, largest=False).indices  # [members, N, k]

    def donors(self, members: rules.Members, state: torch.Tensor, u: torch.Tensor) -> torch.Tensor:
        k = state.shape[-1]
        pick = (u * k).long().clamp_max(k - 1)  # [members, N, M]: which neighbour, per feature
        return state.gather(2, pick)


KNN = NearestNeighbours(k=5)
registry.register_method(
    "knn", KNN, "uniform", label="k nearest neighbours (k=5)", tables=("how",), replace=True, replace_rule=True
)
