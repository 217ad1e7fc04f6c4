"""Where pretraining's random numbers come from: each member's generator, or a counter hash.

Both sources give a member draws that depend only on that member (its seed and method) and never
on which other members share the stack, so a member trains the same alone, in an ensemble, in the
screen and after a resume.  :class:`tcclib.method.config.Config`'s ``draws`` setting picks one:

* ``generator`` (:class:`GeneratorDraws`; the CPU's default, every committed result): each member
  draws from its own :class:`torch.Generator`, in a fixed order (data order, donor uniforms, the
  where rule's uniforms), one call per member: the number of operations grows with the members.
* ``counter`` (:class:`CounterDraws`; the GPU's default): a draw is a pure function of
  ``(member key, epoch, stream, position)``, a splitmix64 hash written in int64 tensor operations,
  so every member's draws of one kind come from one fixed set of operations however many members
  there are, with no generator state to carry (a resumed run needs only the epoch), the same bits
  on the CPU and on a GPU, and no host work: an epoch's draws can be captured in a CUDA graph.

A member's counter key is its generator's seed (:func:`tcclib.method.training.member_seed` of its
table seed and method).  Streams are small integers: :data:`ORDER`, :data:`DONORS`, :data:`WHERE`
(+ the sampler's step) and :data:`HEAD` (+ the pseudo-label head's epoch); each (epoch, stream)
pair is an independent stream of 2**64 positions.
"""

from __future__ import annotations

import torch

ORDER = 0
"""Stream of an epoch's data order (an argsort of one draw per row)."""
DONORS = 1
"""Stream of the how rule's donor uniforms ``[N, M]``."""
WHERE = 16
"""First stream of the where rule's uniforms; step ``t`` of the correlation sampler uses ``WHERE + t``."""
HEAD = 1 << 20
"""First stream of a pseudo-label refresh's head epochs (``HEAD + e``: the order of head epoch ``e``)."""


def _int64(value: int) -> int:
    """An unsigned 64-bit constant as the int64 of the same bits."""
    return value - (1 << 64) if value >= 1 << 63 else value


GOLDEN = _int64(0x9E3779B97F4A7C15)
_MIX1 = _int64(0xBF58476D1CE4E5B9)
_MIX2 = _int64(0x94D049BB133111EB)
_UNIFORM_BITS = 24  # float32's mantissa: every value k / 2**24 is exact
_UNIFORM_SCALE = 1.0 / (1 << _UNIFORM_BITS)


def _xor_shift_(z: torch.Tensor, shift: int) -> torch.Tensor:
    """``z ^= z >>> shift`` (a logical shift of the 64 bits: int64's ``>>`` is arithmetic, so the
    sign's copies are masked off), in place."""
    return z.bitwise_xor_((z >> shift).bitwise_and_((1 << (64 - shift)) - 1))  # (>>: faster than bitwise_right_shift)


def mix_(z: torch.Tensor) -> torch.Tensor:
    """splitmix64's finaliser on int64 ``z``, in place (products wrap modulo 2**64, as int64
    products do in torch on the CPU and on CUDA)."""
    _xor_shift_(z, 30).mul_(_MIX1)
    _xor_shift_(z, 27).mul_(_MIX2)
    return _xor_shift_(z, 31)


def reference_bits(key: int, epoch: int, stream: int, position: int) -> int:
    """One draw's 64 bits in plain Python integers: what :meth:`CounterDraws.bits` computes, for
    tests and for anyone re-implementing the scheme."""
    mask = (1 << 64) - 1

    def mix(z):
        z &= mask
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & mask
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & mask
        return z ^ (z >> 31)

    base = mix((key & mask) ^ mix(epoch * 0x9E3779B97F4A7C15 + stream * 0x94D049BB133111EB))
    return mix(base + (position + 1) * 0x9E3779B97F4A7C15)


def reference_uniform(key: int, epoch: int, stream: int, position: int) -> float:
    """One uniform draw in plain Python (:func:`reference_bits`' top 24 bits over 2**24)."""
    return (reference_bits(key, epoch, stream, position) >> (64 - _UNIFORM_BITS)) * _UNIFORM_SCALE


class CounterDraws:
    """Counter-based draws for a stack of members: ``keys`` ``[k]`` int64 (each member's key) on the
    device, the epoch in a one-element device tensor (shared with every :meth:`subset`, so a
    captured graph reads the epoch set before its replay)."""

    kind = "counter"

    def __init__(self, keys: torch.Tensor, epoch: torch.Tensor | None = None):
        self.keys = keys
        self.device = keys.device
        self.epoch = torch.zeros((), dtype=torch.int64, device=self.device) if epoch is None else epoch
        self._offsets: dict[int, torch.Tensor] = {}

    @classmethod
    def of(cls, keys, device) -> CounterDraws:
        """Draws for members of keys ``keys`` (Python ints below 2**63)."""
        return cls(torch.tensor([int(k) for k in keys], dtype=torch.int64, device=device))

    def __len__(self) -> int:
        return int(self.keys.shape[0])

    def set_epoch(self, epoch: int) -> None:
        """Draw the streams of pretraining epoch ``epoch`` (0-based) from now on."""
        self.epoch.fill_(int(epoch))

    def subset(self, idx: list[int]) -> CounterDraws:
        """The draws of members ``idx`` of this stack (the same epoch)."""
        if list(idx) == list(range(len(self))):
            return self
        out = CounterDraws(self.keys[torch.tensor(list(idx), device=self.device)], self.epoch)
        out._offsets = self._offsets
        return out

    def _positions(self, count: int) -> torch.Tensor:
        """``(position + 1) * GOLDEN`` for positions ``0 .. count - 1`` (kept per count)."""
        if count not in self._offsets:
            self._offsets[count] = torch.arange(1, count + 1, dtype=torch.int64, device=self.device).mul_(GOLDEN)
        return self._offsets[count]

    def bits(self, stream: int, shape: tuple[int, ...]) -> torch.Tensor:
        """Every member's 64 random bits ``[k, *shape]`` (int64) of ``stream`` at the current epoch."""
        count = 1
        for n in shape:
            count *= int(n)
        salt = mix_(self.epoch.mul(GOLDEN).add_(_int64((stream * 0x94D049BB133111EB) & ((1 << 64) - 1))))
        base = mix_(self.keys.bitwise_xor(salt))  # [k]
        z = base.unsqueeze(1) + self._positions(count)  # [k, count]
        return mix_(z).view(len(self), *shape)

    def uniform(self, stream: int, shape: tuple[int, ...], skip=None) -> torch.Tensor:
        """Uniform(0, 1) float32 draws ``[k, *shape]`` (multiples of 2**-24, 0 included, 1 not);
        ``skip`` is ignored (a counter draw costs the same for every member, and no state moves)."""
        z = self.bits(stream, shape)
        z >>= 64 - _UNIFORM_BITS
        return z.bitwise_and_((1 << _UNIFORM_BITS) - 1).float().mul_(_UNIFORM_SCALE)

    def order(self, n: int, stream: int = ORDER) -> torch.Tensor:
        """Every member's random order of ``n`` rows ``[k, n]`` (int64): the argsort of one 64-bit
        draw per row (ties would need two equal 64-bit draws)."""
        return self.bits(stream, (n,)).argsort(dim=1, stable=True)


class GeneratorDraws:
    """Draws from each member's own :class:`torch.Generator` (``gens``, one per member), one call
    per member, in the order they are asked for (the scheme of every committed result)."""

    kind = "generator"

    def __init__(self, gens: list[torch.Generator], device):
        self.gens, self.device = list(gens), torch.device(device)

    def __len__(self) -> int:
        return len(self.gens)

    def set_epoch(self, epoch: int) -> None:
        """Nothing: a generator's state carries the position."""

    def subset(self, idx: list[int]) -> GeneratorDraws:
        return GeneratorDraws([self.gens[j] for j in idx], self.device)

    def uniform(self, stream: int, shape: tuple[int, ...], skip=None) -> torch.Tensor:
        """``[k, *shape]`` uniform draws, member ``j``'s from its generator; a member with
        ``skip[j]`` true draws nothing (its generator does not move) and gets 0.5."""
        out = torch.empty(len(self.gens), *shape, device=self.device)
        for j, g in enumerate(self.gens):
            if skip is not None and skip[j]:
                out[j].fill_(0.5)
            else:
                torch.rand(*shape, generator=g, device=self.device, out=out[j])
        return out

    def order(self, n: int, stream: int = ORDER) -> torch.Tensor:
        """Every member's ``randperm(n)`` from its generator ``[k, n]``."""
        return torch.stack([torch.randperm(n, generator=g, device=self.device) for g in self.gens])
