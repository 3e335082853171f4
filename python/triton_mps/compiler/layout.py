"""Distributed layouts as linear layouts: register/lane/warp bits -> tensor coordinates.

A thread holds R = 2**len(reg_bases) registers of a tensor. The coordinate of register r in the
thread (lane, warp) is XOR over the set bits of r, lane and warp of the matching bases. An
all-zero basis means duplication: the elements reached through that bit are also held elsewhere.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property


def _xor(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(x ^ y for x, y in zip(a, b, strict=True))


def _table(bases: tuple[tuple[int, ...], ...], rank: int) -> tuple[tuple[int, ...], ...]:
    """The coordinate of every input value i < 2**len(bases): XOR of the bases of i's set bits."""
    out = [(0,) * rank]
    for b in bases:
        out += [_xor(c, b) for c in out]
    return tuple(out)


@dataclass(frozen=True)
class Layout:
    shape: tuple[int, ...]
    reg_bases: tuple[tuple[int, ...], ...]
    lane_bases: tuple[tuple[int, ...], ...]
    warp_bases: tuple[tuple[int, ...], ...]
    key: str = ""  # the encoding text it was built from (for naming/caching)

    @property
    def rank(self) -> int:
        return len(self.shape)

    @property
    def num_regs(self) -> int:
        return 1 << len(self.reg_bases)

    def reg_coord(self, r: int) -> tuple[int, ...]:
        """Compile-time part of register r's coordinate."""
        t = self._reg_coords
        return t[r & (len(t) - 1)]  # bits past the bases select nothing

    def lane_coord(self, lane: int) -> tuple[int, ...]:
        t = self._lane_coords
        return t[lane & (len(t) - 1)]  # bits past the bases select nothing

    def warp_coord(self, warp: int) -> tuple[int, ...]:
        t = self._warp_coords
        return t[warp & (len(t) - 1)]  # bits past the bases select nothing

    # Every coordinate of each input, tabulated once per layout (lowerings ask for them per
    # register, many times over): entry i is entry (i without its highest bit) XOR that bit's basis.
    @cached_property
    def _reg_coords(self) -> tuple[tuple[int, ...], ...]:
        return _table(self.reg_bases, self.rank)

    @cached_property
    def _lane_coords(self) -> tuple[tuple[int, ...], ...]:
        return _table(self.lane_bases, self.rank)

    @cached_property
    def _warp_coords(self) -> tuple[tuple[int, ...], ...]:
        return _table(self.warp_bases, self.rank)

    def coord(self, r: int, lane: int, warp: int) -> tuple[int, ...]:
        return _xor(_xor(self.reg_coord(r), self.lane_coord(lane)), self.warp_coord(warp))

    @staticmethod
    def _dup_mask(bases) -> int:
        return sum(1 << i for i, b in enumerate(bases) if not any(b))

    @cached_property
    def reg_dup_mask(self) -> int:
        """Register bits whose basis is zero: registers with any such bit are duplicates."""
        return self._dup_mask(self.reg_bases)

    @cached_property
    def lane_dup_mask(self) -> int:
        return self._dup_mask(self.lane_bases)

    @cached_property
    def warp_dup_mask(self) -> int:
        return self._dup_mask(self.warp_bases)

    @property
    def has_thread_dups(self) -> bool:
        return bool(self.lane_dup_mask or self.warp_dup_mask)

    def owned_regs(self) -> list[int]:
        """Registers that are not duplicates of a lower register."""
        return [r for r in range(self.num_regs) if not (r & self.reg_dup_mask)]

    @cached_property
    def reg_index(self) -> dict[tuple[int, ...], int]:
        """Register-part coordinate -> first register holding it."""
        d: dict[tuple[int, ...], int] = {}
        for r in range(self.num_regs):
            d.setdefault(self.reg_coord(r), r)
        return d

    def find_register(self, coord: tuple[int, ...]) -> int | None:
        return self.reg_index.get(tuple(coord))

    def same_as(self, other: Layout) -> bool:
        return (self.shape == other.shape and self.reg_bases == other.reg_bases
                and self.lane_bases == other.lane_bases and self.warp_bases == other.warp_bases)


def from_linear_layout(ll, shape) -> Layout:
    """Build from Triton's DistributedLinearLayout (reg/lane/warp bases lists)."""
    if list(getattr(ll, "block_bases", []) or []):
        raise ValueError("layouts spanning several CTAs are not supported (num_ctas must be 1)")
    t = lambda bases: tuple(tuple(int(x) for x in b) for b in bases)  # noqa: E731
    return Layout(tuple(int(s) for s in shape), t(ll.reg_bases), t(ll.lane_bases), t(ll.warp_bases))


def register_map(src: Layout, dst: Layout, project=None) -> list[int] | None:
    """For each register of `dst`, the register of `src` holding the element it needs, or None
    when some element lives in another thread.

    `project` maps a dst coordinate to the src coordinate it reads (linear in XOR: broadcast
    zeroes dims, expand_dims drops a dim); identity by default. Thread parts must agree after
    projection, lane bit by lane bit and warp bit by warp bit.
    """
    project = project or (lambda c: c)
    zero_dst = (0,) * dst.rank
    if tuple(project(zero_dst)) != (0,) * src.rank:
        return None
    nl = max(len(src.lane_bases), len(dst.lane_bases))
    nw = max(len(src.warp_bases), len(dst.warp_bases))
    for n, sb, db in ((nl, src.lane_bases, dst.lane_bases), (nw, src.warp_bases, dst.warp_bases)):
        for i in range(n):
            s = sb[i] if i < len(sb) else (0,) * src.rank
            d = tuple(project(db[i])) if i < len(db) else (0,) * src.rank
            if tuple(s) != d:
                return None
    out = []
    for r in range(dst.num_regs):
        sr = src.find_register(tuple(project(dst.reg_coord(r))))
        if sr is None:
            return None
        out.append(sr)
    return out
