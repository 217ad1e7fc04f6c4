"""Where pretraining's random numbers come from: each member's generator, or a counter hash.

Both sources give a member draws that depend only on that member (its seed and method) and never
on which other members share the stack, so a member draws the same alone, in an ensemble, in the
screen and after a resume (its arithmetic's last bits can still depend on the stack on the CPU:
``tools/stack_bits.py``).  :class:`tcclib.method.config.Config`'s ``draws`` setting picks one:

* ``generator`` (:class:`GeneratorDraws`; the CPU's default, every committed result): each member
  draws from its own :class:`torch.Generator`, in a fixed order (data order, donor uniforms, the
  where rule's uniforms), one call per member: the number of operations grows with the members.
* ``counter`` (:class:`CounterDraws`; the GPU's default): a draw is a pure function of
  ``(member key, epoch, stream, position)``, splitmix64 written in int64 tensor operations,
  so every member's draws of one kind come from one fixed set of operations however many members
  there are, with no generator state to carry (a resumed run needs only the epoch), the same bits
  on the CPU and on a GPU, and no host work: an epoch's draws can be captured in a CUDA graph.

A member's counter key is its generator's seed (:func:`tcclib.method.pretraining.member_seed` of its
table seed and method).  Streams are small integers: :data:`ORDER`, :data:`DONORS`, :data:`WHERE` (the where rule's;
the correlation sampler's step ``t`` reads its positions ``t N M ..``) and :data:`HEAD` (+ the
pseudo-label head's epoch); each (epoch, stream) pair holds 2**32 positions.
"""

from __future__ import annotations

import torch

ORDER = 0
"""Stream of an epoch's data order (an argsort of one draw per row)."""
DONORS = 1
"""Stream of the how rule's donor uniforms ``[N, M]``."""
WHERE = 16
"""Stream of the where rule's uniforms (the correlation sampler's step ``t``: positions from ``t N M``)."""
VIEW = 1 << 10
"""The streams of an objective's view ``v`` are view 0's plus ``v x VIEW`` (below :data:`HEAD`)."""
HEAD = 1 << 20
"""First stream of a pseudo-label refresh's head epochs (``HEAD + e``: the order of head epoch ``e``)."""


def _int64(value: int) -> int:
    """An unsigned 64-bit constant as the int64 of the same bits."""
    return value - (1 << 64) if value >= 1 << 63 else value


BLOCK_BYTES = 256 * 2**20
"""The largest int64 block :meth:`CounterDraws.fits` draws at once (the correlation sampler's
steps in one draw; larger draws go step by step, with the same bits)."""

GOLDEN = _int64(0x9E3779B97F4A7C15)
_MIX1 = _int64(0xBF58476D1CE4E5B9)
_MIX2 = _int64(0x94D049BB133111EB)
_MASK = (1 << 64) - 1
_EPOCH_BITS = 32  # a draw's counter: epoch * 2**32 + position + 1 (positions below 2**32 per draw)
_UNIFORM_BITS = 24  # float32's mantissa: every value k / 2**24 is exact
_UNIFORM_SCALE = 1.0 / (1 << _UNIFORM_BITS)


def _xor_shift_(z: torch.Tensor, shift: int) -> torch.Tensor:
    """``z ^= z >>> shift`` (a logical shift of the 64 bits: int64's ``>>`` is arithmetic, so the
    sign's copies are masked off), in place."""
    return z.bitwise_xor_((z >> shift).bitwise_and_((1 << (64 - shift)) - 1))  # (>>: faster than bitwise_right_shift)


def _scramble_(z: torch.Tensor) -> torch.Tensor:
    """splitmix64's finaliser without its last ``z ^= z >>> 31`` (which leaves the top 33 bits as
    they are), in place: a bijection of the 64 bits (products wrap modulo 2**64, as int64
    products do in torch on the CPU and on CUDA)."""
    _xor_shift_(z, 30).mul_(_MIX1)
    return _xor_shift_(z, 27).mul_(_MIX2)


def _mix64(z: int) -> int:
    """splitmix64's finaliser in Python integers."""
    z &= _MASK
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK
    return z ^ (z >> 31)


def stream_seed(key: int, stream: int) -> int:
    """The 64-bit seed of one member's ``stream`` (as an unsigned Python int)."""
    return _mix64((int(key) & _MASK) ^ _mix64(int(stream) * 0x94D049BB133111EB))


def reference_bits(key: int, epoch: int, stream: int, position: int) -> int:
    """One draw's 64 bits in plain Python integers, what :meth:`CounterDraws.bits` computes:
    splitmix64 seeded by :func:`stream_seed`, at counter ``epoch * 2**32 + position + 1``, without
    its finaliser's last step (for tests, and for anyone re-implementing the scheme)."""
    z = (stream_seed(key, stream) + ((epoch << _EPOCH_BITS) + position + 1) * 0x9E3779B97F4A7C15) & _MASK
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK
    return ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK


def reference_uniform(key: int, epoch: int, stream: int, position: int) -> float:
    """One uniform draw in plain Python: the top 24 bits of :func:`reference_bits` (the same as
    full splitmix64's) over 2**24."""
    return (reference_bits(key, epoch, stream, position) >> (64 - _UNIFORM_BITS)) * _UNIFORM_SCALE


class CounterDraws:
    """Counter-based draws for a stack of members (``keys``: each member's key, below 2**63).

    A draw of member ``m``, ``stream`` and ``position`` at ``epoch`` is splitmix64 seeded per
    (member, stream) at counter ``epoch * 2**32 + position + 1``: the seeds are computed once per
    stream, the epoch's part of the counter lives in a one-element device tensor (shared with every
    :meth:`subset`; :meth:`set_epoch` writes it in place, so a captured graph reads the epoch set
    before its replay), and a draw of any number of members is one fixed set of about a dozen
    element-wise operations."""

    kind = "counter"

    def __init__(self, keys: list[int], device, offset: torch.Tensor | None = None):
        self.keys = [int(k) for k in keys]
        self.device = torch.device(device)
        self.offset = torch.zeros((), dtype=torch.int64, device=self.device) if offset is None else offset
        self._seeds: dict[int, torch.Tensor] = {}
        self._positions: dict[int, torch.Tensor] = {}

    @classmethod
    def of(cls, keys, device) -> CounterDraws:
        """Draws for members of keys ``keys`` (Python ints below 2**63)."""
        return cls(keys, device)

    def __len__(self) -> int:
        return len(self.keys)

    def set_epoch(self, epoch: int) -> None:
        """Draw the streams of pretraining epoch ``epoch`` (0-based) from now on."""
        self.offset.fill_(_int64(((int(epoch) << _EPOCH_BITS) * 0x9E3779B97F4A7C15) & _MASK))

    def subset(self, idx: list[int]) -> CounterDraws:
        """The draws of members ``idx`` of this stack (the same epoch)."""
        if list(idx) == list(range(len(self))):
            return self
        out = CounterDraws([self.keys[j] for j in idx], self.device, self.offset)
        out._positions = self._positions
        return out

    def _seed(self, stream: int) -> torch.Tensor:
        """Every member's seed of ``stream`` ``[k]`` (int64), computed once."""
        if stream not in self._seeds:
            seeds = [_int64(stream_seed(key, stream)) for key in self.keys]
            self._seeds[stream] = torch.tensor(seeds, dtype=torch.int64, device=self.device)
        return self._seeds[stream]

    def _steps(self, count: int) -> torch.Tensor:
        """``(position + 1) * GOLDEN`` for positions ``0 .. count - 1`` (kept per count)."""
        if count not in self._positions:
            self._positions[count] = torch.arange(1, count + 1, dtype=torch.int64, device=self.device).mul_(GOLDEN)
        return self._positions[count]

    def fits(self, count: int) -> bool:
        """Whether ``count`` draws of every member fit in one block of :data:`BLOCK_BYTES`."""
        return len(self) * count * 8 <= BLOCK_BYTES

    def bits(self, stream: int, shape: tuple[int, ...], first: int = 0) -> torch.Tensor:
        """Every member's 64 random bits ``[k, *shape]`` (int64) of ``stream`` at the current
        epoch, from position ``first`` on (a draw in parts gives the bits of the draw in one)."""
        count = 1
        for n in shape:
            count *= int(n)
        start = self._seed(stream) + self.offset  # [k]
        if first:
            start.add_(_int64((int(first) * 0x9E3779B97F4A7C15) & _MASK))
        return _scramble_(start.unsqueeze(1) + self._steps(count)).view(len(self), *shape)

    def uniform(self, stream: int, shape: tuple[int, ...], skip=None, first: int = 0) -> torch.Tensor:
        """Uniform(0, 1) float32 draws ``[k, *shape]`` (multiples of 2**-24, 0 included, 1 not)
        from position ``first`` on; ``skip`` is ignored (a counter draw costs the same for every
        member, and no state moves)."""
        z = self.bits(stream, shape, first)
        z >>= 64 - _UNIFORM_BITS
        return z.bitwise_and_((1 << _UNIFORM_BITS) - 1).float().mul_(_UNIFORM_SCALE)

    def order(self, n: int, stream: int = ORDER) -> torch.Tensor:
        """Every member's random order of ``n`` rows ``[k, n]`` (int64): the argsort of one 64-bit
        draw per row (distinct draws: the scramble is a bijection of distinct counters)."""
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

    def fits(self, count: int) -> bool:
        """Never: a generator's draws come one member at a time, in call order."""
        return False

    def uniform(self, stream: int, shape: tuple[int, ...], skip=None, first: int = 0) -> torch.Tensor:
        """``[k, *shape]`` uniform draws, member ``j``'s from its generator (in call order:
        ``stream`` and ``first`` are not used); a member with ``skip[j]`` true draws nothing (its
        generator does not move) and gets 0.5."""
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
