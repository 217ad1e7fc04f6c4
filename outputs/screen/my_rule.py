"""A corruption rule in one file: each replaced value is a nearby value of the same column.

SCARF replaces a corrupted value by the value of a random row of the whole column, so a view may
jump from the smallest value of a feature to the largest.  This rule keeps the jump small: the
donor of feature j is a random row among the ``width`` share of rows whose value of j ranks
closest to the anchor's own (by rank in the column, so it works the same on any scale and on
category codes).  No labels, no importance matrices: a view stays close to its anchor feature
by feature.

Load it the documented way (any process: the sweep's kernels and Dask workers too)::

    python -m tcclib params/screen.yaml --plugin examples/nearby_rule.py   # the 30-dataset verdict
    python -m tcclib params/demo.yaml --plugin examples/nearby_rule.py     # (with methods: [..., nearby])
    tcclib.load_plugins("examples/nearby_rule.py")                         # Python, a notebook cell

and the method ``nearby`` is valid in ``Config.methods`` and ``TCCClassifier(method="nearby")``.
Its members' content key holds this file's code (a hash of the rule's source), so an edit
retrains them, and only them.
"""

import torch

from tcclib.method import registry, rules


class NearbyValue(rules.HowRule):
    """Donors drawn uniformly among the rows whose value of the feature ranks within
    ``width / 2`` of the anchor's (a share of the rows, at least one row on each side)."""

    needs = rules.NOTHING

    def __init__(self, width: float = 0.1, name: str = "nearby"):
        if not 0 < width <= 1:
            raise ValueError(f"width: the share of rows to draw from must be in (0, 1], got {width!r}")
        self.width, self.name = width, name

    def key_params(self) -> dict:
        return {"width": self.width}

    def prepare(self, members: rules.Members):
        """Each member's rows sorted by each feature (``order``) and each row's place in that order (``rank``)."""
        order = members.raw.argsort(dim=1, stable=True)  # [k, N, M]: row at each sorted place
        rank = order.argsort(dim=1)  # [k, N, M]: each row's place
        return order, rank

    def donors(self, members: rules.Members, state, u: torch.Tensor) -> torch.Tensor:
        order, rank = state
        n_rows = order.shape[1]
        half = max(1, round(self.width * n_rows / 2))
        offset = (u * (2 * half + 1)).long().clamp_max(2 * half) - half  # -half .. +half
        place = (rank + offset).clamp(0, n_rows - 1)
        return order.gather(1, place)


registry.register_method("nearby", NearbyValue(width=0.1), "uniform", label="nearby value (10 % of ranks)")
