"""Tensor-native tables: raw values stacked per seed, one-hot encoding in torch.

Corruption works on raw values (z-scored numbers, integer category codes).  ``TensorTable``
holds every seed's raw training/test matrices as tensors on the chosen device, and
:meth:`TensorTable.encode` one-hot encodes a batch of raw rows with one ``scatter``: numeric
values and binary categoricals take one column each (like scikit-learn's
``OneHotEncoder(drop="if_binary", handle_unknown="ignore")``), categoricals with L > 2 levels take
L columns.  Seeds whose dropped columns give them a narrower input are zero-padded to the widest,
which leaves their forward pass and gradients unchanged.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np
import torch

from tcclib.data.preprocess import Prepared


@dataclass
class TensorTable:
    raw_train: torch.Tensor  # [S, N, M] float32
    raw_test: torch.Tensor  # [S, Nt, M]
    y_train: torch.Tensor  # [S, N] int64
    y_test: torch.Tensor  # [S, Nt]
    labeled: torch.Tensor  # [S, N] bool
    active: torch.Tensor  # [S, M] bool
    multi: torch.Tensor  # [S, M] bool: categorical with > 2 levels (one-hot)
    binary: torch.Tensor  # [S, M] bool: categorical with 2 levels (one 0/1 column)
    offsets: torch.Tensor  # [S, M] int64: first encoded column (D_max for inactive columns)
    widths: torch.Tensor  # [S] int64: encoded width D_s of each seed
    n_classes: int

    @property
    def n_seeds(self) -> int:
        return self.raw_train.shape[0]

    @functools.cached_property
    def width(self) -> int:
        """Padded encoded width D_max (read from the device once, not in every epoch)."""
        return int(self.widths.max())

    @classmethod
    def from_prepared(cls, prep: Prepared, device: str | torch.device = "cpu") -> TensorTable:
        sp = prep.splits
        n_tr = {s.raw_train.shape[0] for s in sp}
        if len(n_tr) != 1:
            raise ValueError("seeds disagree on the training size; cannot stack them")
        widths = np.stack([s.widths for s in sp])  # [S, M]
        d = widths.sum(1)
        d_max = int(d.max())
        offsets = np.cumsum(widths, axis=1) - widths
        active = np.stack([s.active for s in sp])
        offsets = np.where(active, offsets, d_max)
        n_lev = np.stack([s.n_levels for s in sp])
        is_cat = np.stack([s.is_cat for s in sp])
        t = lambda a, dt=None: torch.as_tensor(np.asarray(a), dtype=dt, device=device)  # noqa: E731
        return cls(
            raw_train=t(np.stack([s.raw_train for s in sp]), torch.float32),
            raw_test=t(np.stack([s.raw_test for s in sp]), torch.float32),
            y_train=t(np.stack([s.y_train for s in sp]), torch.int64),
            y_test=t(np.stack([s.y_test for s in sp]), torch.int64),
            labeled=t(np.stack([s.labeled for s in sp]), torch.bool),
            active=t(active, torch.bool),
            multi=t(is_cat & (n_lev > 2) & active, torch.bool),
            binary=t(is_cat & (n_lev == 2) & active, torch.bool),
            offsets=t(offsets, torch.int64),
            widths=t(d, torch.int64),
            n_classes=prep.n_classes,
        )

    @functools.cached_property
    def numeric_only(self) -> bool:
        """No categorical column in any seed: each column is one encoded column, as it is."""
        return not bool((self.multi | self.binary).any())

    def encode(self, raw: torch.Tensor, seed_idx: torch.Tensor) -> torch.Tensor:
        """One-hot encode raw rows ``[K, N, M]`` of the seeds ``seed_idx`` ([K]) -> ``[K, N, D_max]``.

        The integer work (category codes, positions) is done in place on one ``[K, N, M]`` int64
        tensor, and not at all for a table without categorical columns: on the paper set's wide
        tables each new ``[48, 1600, 76]`` int64 tensor is a fresh 47 MB mapping whose page faults
        cost more than its arithmetic.  The same values either way."""
        active = self.active[seed_idx].unsqueeze(1)  # [K, 1, M]
        offsets = self.offsets[seed_idx].unsqueeze(1)
        out = raw.new_zeros(raw.shape[0], raw.shape[1], self.width + 1)
        if self.numeric_only:
            out.scatter_(-1, offsets.expand(raw.shape), raw * active)
            return out[..., : self.width]
        multi = self.multi[seed_idx].unsqueeze(1)
        binary = self.binary[seed_idx].unsqueeze(1)
        pos = raw.round().long().clamp_min_(0).mul_(multi).add_(offsets)  # offsets + (code if multi else 0)
        known = raw >= 0  # an unseen test category is -1: all zeros, as handle_unknown="ignore"
        val = torch.where(multi | binary, known.to(raw.dtype) * torch.where(multi, 1.0, raw), raw)
        val = val * active
        out.scatter_(-1, pos, val)
        return out[..., : self.width]
