"""A small axis analysis (after Triton's AxisInfo) to prove vector loads/stores sound.

For an integer or pointer value, per dimension d:
  contig[d]  elements along d come in runs of `contig[d]` consecutive values (+1 per element;
             for pointers: +1 element), each run starting at an index multiple of contig[d];
  div[d]     the first value of every such run is a multiple of div[d] (pointers: in BYTES);
  const[d]   runs of `const[d]` equal values, starting at index multiples of const[d].
Scalars are rank 1 with shape (1,). Anything the analysis does not understand is (1, 1, 1):
never contiguous, so never vectorized.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from .ir import Function, Value
from .types import PointerType, ScalarType, TensorType, elem_of

_BIG = 1 << 30  # divisibility of 0


@dataclass(frozen=True)
class AxisInfo:
    contig: tuple[int, ...]
    div: tuple[int, ...]
    const: tuple[int, ...]
    value: int | None = None  # a known uniform integer value


def _pow2_div(x: int) -> int:
    if x == 0:
        return _BIG
    return min(x & -x, _BIG)


def _shape(v: Value) -> tuple[int, ...]:
    return tuple(v.type.shape) if isinstance(v.type, TensorType) else (1,)


def _unknown(v: Value) -> AxisInfo:
    n = len(_shape(v))
    return AxisInfo((1,) * n, (1,) * n, (1,) * n)


def _uniform(v: Value, div: int, value: int | None = None) -> AxisInfo:
    shape = _shape(v)
    return AxisInfo((1,) * len(shape), (div,) * len(shape), shape, value)


def _elem_bytes(v: Value) -> int | None:
    pt = elem_of(v.type)
    if isinstance(pt, PointerType) and isinstance(pt.pointee, ScalarType) and pt.pointee.bits % 8 == 0:
        return pt.pointee.bits // 8
    return None


def _arg_divisibility(func: Function) -> dict[int, int]:
    """`tt.divisibility = N` of the function's arguments (read with the module: ir._text_attrs)."""
    divs = func.op.attrs.get("arg_divisibility", [])
    return {a.id: d for a, d in zip(func.args, divs, strict=False) if d is not None}


def _const_int(op) -> int | None:
    v = op.attrs.get("value")
    return v if isinstance(v, int) else None


def _div_at(x: AxisInfo, d: int, c: int, step: int = 1) -> int:
    """Divisibility of x's values at multiples of c along d (the run starts of a result whose
    runs have length c); `step`: x's increment per element (a pointer's element size)."""
    cx = x.contig[d]
    if c % cx == 0:  # every multiple of c starts one of x's runs (cx == 1: every element does)
        return x.div[d]
    # Inside x's runs the values step by 1: at multiples of c they are run start + j*gcd(c, cx).
    return math.gcd(x.div[d], math.gcd(c, cx) * step)


class AxisAnalysis:
    def __init__(self, func: Function):
        self.arg_div = _arg_divisibility(func)
        self.cache: dict[int, AxisInfo] = {}

    def get(self, v: Value) -> AxisInfo:
        got = self.cache.get(v.id)
        if got is None:
            try:
                got = self._compute(v)
            except (AttributeError, IndexError, TypeError, ValueError):
                got = _unknown(v)
            if len(got.contig) != len(_shape(v)):
                got = _unknown(v)
            self.cache[v.id] = got
        return got

    def _compute(self, v: Value) -> AxisInfo:
        op = v.owner
        if op is None:  # block argument: function args carry their specialization
            if v.id in self.arg_div and not isinstance(v.type, TensorType):
                return _uniform(v, self.arg_div[v.id])
            return _unknown(v)
        name = op.name
        shape = _shape(v)
        if name == "arith.constant":
            c = _const_int(op)
            return _unknown(v) if c is None else _uniform(v, _pow2_div(c), c)
        if name == "tt.make_range":
            start = op.int_attr("start") or 0
            return AxisInfo(shape, (_pow2_div(start),), (1,))
        if name == "tt.splat":
            a = self.get(op.operands[0])
            return _uniform(v, a.div[0], a.value)
        if name in ("ttg.convert_layout", "arith.extsi", "arith.extui", "arith.index_cast"):
            # Same values (sign extension of offsets as Triton assumes: no overflow).
            return self.get(op.operands[0])
        if name == "tt.expand_dims":
            a = self.get(op.operands[0])
            ax = op.int_attr("axis")
            if ax is None or not isinstance(op.operands[0].type, TensorType):
                return _unknown(v)
            # Along the new size-1 dim every element starts a run: only a divisibility that
            # holds for every element is sound there.
            every = min(a.div) if all(c == 1 for c in a.contig) else 1
            return AxisInfo(a.contig[:ax] + (1,) + a.contig[ax:], a.div[:ax] + (every,) + a.div[ax:],
                            a.const[:ax] + (1,) + a.const[ax:], a.value)
        if name == "tt.broadcast":
            a = self.get(op.operands[0])
            src = _shape(op.operands[0])
            if len(src) != len(shape):
                return _unknown(v)
            contig, div, const = [], [], []
            for d, (s, n) in enumerate(zip(src, shape, strict=True)):
                if s == n:
                    contig.append(a.contig[d])
                    div.append(a.div[d])
                    const.append(a.const[d])
                else:  # size 1 -> n: repeated value
                    contig.append(1)
                    div.append(a.div[d])
                    const.append(n)
            return AxisInfo(tuple(contig), tuple(div), tuple(const), a.value)
        if name in ("arith.addi", "tt.addptr"):
            a, b = (self.get(o) for o in op.operands)
            scale = 1
            if name == "tt.addptr":
                eb = _elem_bytes(v)
                if eb is None:
                    return _unknown(v)
                scale = eb
            contig = tuple(max(math.gcd(ca, kb), math.gcd(cb, ka))
                           for ca, cb, ka, kb in zip(a.contig, b.contig, a.const, b.const, strict=True))
            div = tuple(math.gcd(_div_at(a, d, c, scale), _div_at(b, d, c) * scale) for d, c in enumerate(contig))
            const = tuple(math.gcd(x, y) for x, y in zip(a.const, b.const, strict=True))
            value = a.value + b.value if name == "arith.addi" and None not in (a.value, b.value) else None
            return AxisInfo(contig, div, const, value)
        if name == "arith.muli":
            a, b = (self.get(o) for o in op.operands)
            if b.value is None and a.value is not None:
                a, b = b, a
            const = tuple(math.gcd(x, y) for x, y in zip(a.const, b.const, strict=True))
            if b.value == 1:
                return AxisInfo(a.contig, a.div, const, a.value)
            # Not contiguous: every element is a run start, so use what holds for every element.
            contig = (1,) * len(shape)
            div = tuple(min(_div_at(a, d, 1) * _div_at(b, d, 1), _BIG) for d in range(len(shape)))
            value = a.value * b.value if None not in (a.value, b.value) else None
            return AxisInfo(contig, div, const, value)
        return _unknown(v)


def vector_runs(layout, info: AxisInfo, elem_bytes: int, regs: list[int], max_bytes: int = 16,
                unaligned: set[int] | None = None) -> dict[int, int]:
    """Map a first register -> run length k (2 or 4) for runs r..r+k-1 of `regs` that are
    provably consecutive in memory and aligned to k * elem_bytes. With `unaligned` (a set the
    caller then tests at run time), also runs only proven consecutive, their first registers
    added to it (e.g. a row start `row * n` with n unknown)."""
    out: dict[int, int] = {}
    owned = set(regs)
    done: set[int] = set()
    for r in sorted(regs):
        if r in done:
            continue
        # A proven alignment first (a float2 always beats a float4 that a test may refuse).
        wanted = ("aligned", "consecutive") if unaligned is not None else ("aligned",)
        for want, k in ((w, k) for w in wanted for k in (4, 2)):
            if k * elem_bytes > max_bytes or r % k or not all(r + i in owned for i in range(k)):
                continue
            kind = _run_kind(layout, info, elem_bytes, r, k)
            if kind == want:
                out[r] = k
                done.update(range(r, r + k))
                if kind == "consecutive":
                    unaligned.add(r)
                break
    return out


def _run_kind(layout, info: AxisInfo, elem_bytes: int, r: int, k: int) -> str | None:
    """"aligned" (consecutive and aligned to k * elem_bytes), "consecutive", or None."""
    base = layout.reg_coord(r)
    for d in range(layout.rank):
        # Registers r..r+k-1 must sit at base + i along d (other dims equal) ...
        if not all(layout.reg_coord(r + i) == base[:d] + (base[d] + i,) + base[d + 1:] for i in range(k)):
            continue
        # ... the run must start at a multiple of k after XOR with the lane/warp parts ...
        if base[d] % k or any(b[d] % k for b in list(layout.lane_bases) + list(layout.warp_bases)):
            return None
        # ... inside one contiguous run of the pointer, whose start is aligned enough.
        if info.contig[d] % k:
            return None
        return "aligned" if info.div[d] % (k * elem_bytes) == 0 else "consecutive"
    return None
