"""TTGIR distributed encodings -> linear layouts, computed from the encoding's text.

Triton's own conversion (`GluonOpBuilder.to_linear_layout`, reached through
`get_gluon_layout_from_tensor`) builds Gluon layout objects in a C++ static of libtriton; from
the first call on, libtriton's types stay alive to interpreter exit and nanobind prints ~26 lines
of "leaked instances" at every exit (issue 8, item 5). So we compute the layouts of the encodings
our pipeline produces (blocked, slice, FMA dot operands, linear) ourselves, following Triton's
definitions (LinearLayoutConversions.cpp) bit for bit: register numbering must match Triton's,
and tests/compiler/test_linear_layouts.py checks that against Triton on a corpus of encodings.
Other encodings return None and the caller falls back to Triton's conversion.

A linear layout here is (in-dim -> list of basis vectors, out-dim order, out-dim sizes), with
out dims named by their tensor dimension index. Products follow Triton's `operator*`: the right
operand is the outer one (its bases are shifted past the left's size in shared out dims).
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

from .layout import Layout
from .types import _split_top

IN_DIMS = ("register", "lane", "warp")


@dataclass
class _LL:
    bases: dict[str, list[dict[int, int]]]  # in-dim -> [ {out_dim: value} ]
    outs: list[int]  # out-dim order (tensor dimension indices)
    sizes: dict[int, int]  # out-dim -> size (a power of two)

    @staticmethod
    def empty() -> _LL:
        return _LL({}, [], {})

    @staticmethod
    def identity1d(size: int, in_dim: str, out: int) -> _LL:
        return _LL({in_dim: [{out: 1 << i} for i in range(_log2(size))]}, [out], {out: size})

    @staticmethod
    def zeros1d(size: int, in_dim: str, out: int) -> _LL:
        return _LL({in_dim: [{out: 0} for _ in range(_log2(size))]}, [out], {out: 1})

    def __mul__(self, outer: _LL) -> _LL:
        outs = _supremum(self.outs, outer.outs)
        sizes = {d: self.sizes.get(d, 1) * outer.sizes.get(d, 1) for d in outs}
        bases: dict[str, list[dict[int, int]]] = {}
        for in_dim in _supremum(list(self.bases), list(outer.bases)):
            inner_b = [dict(b) for b in self.bases.get(in_dim, [])]
            outer_b = [{d: v * self.sizes.get(d, 1) for d, v in b.items()} for b in outer.bases.get(in_dim, [])]
            bases[in_dim] = inner_b + outer_b
        return _LL(bases, outs, sizes)

    def transpose_outs(self, order: list[int]) -> _LL:
        assert sorted(order) == sorted(self.outs), (order, self.outs)
        return _LL(self.bases, list(order), self.sizes)

    def out_size(self, d: int) -> int:
        return self.sizes.get(d, 1)


def _log2(n: int) -> int:
    if n < 1 or n & (n - 1):
        raise ValueError(f"layout size {n} is not a power of two")
    return n.bit_length() - 1


def _supremum(a: list, b: list) -> list:
    """Triton's `supremum`: a merge of two orders that keeps each one's relative order."""
    out: list = []
    i = j = 0
    while i < len(a) or j < len(b):
        if i < len(a) and a[i] in out:
            i += 1
        elif j < len(b) and b[j] in out:
            j += 1
        elif i < len(a) and (a[i] not in b[j:] or j >= len(b)):
            out.append(a[i])
            i += 1
        elif j < len(b) and b[j] not in a[i:]:
            out.append(b[j])
            j += 1
        else:
            if a[i] != b[j]:
                raise ValueError(f"out dims in conflicting orders: {a} vs {b}")
            out.append(a[i])
            i += 1
            j += 1
    return out


def _identity_nd(in_dim: str, shape: list[int], order: list[int]) -> _LL:
    ll = _LL.empty()
    for d in order:  # order[0] is the fastest-varying dimension
        ll = ll * _LL.identity1d(shape[d], in_dim, d)
    return ll


def _not_smaller_than(ll: _LL, shape: list[int]) -> _LL:
    # Missing extent becomes more registers (the thread repeats the tile), most-major last.
    for d in list(ll.outs):
        have, want = ll.out_size(d), shape[d]
        if have < want:
            ll = ll * _LL.identity1d(want // have, "register", d)
    return ll


def _not_larger_than(ll: _LL, shape: list[int], drop_registers: bool) -> _LL:
    # Extent past the shape is dropped, largest bases along that dim first: a lane or warp
    # basis becomes zero (threads holding copies); a register basis is removed or, as Triton
    # does for dot operands, zeroed (a duplicate register).
    bases = {k: [dict(b) for b in v] for k, v in ll.bases.items()}
    dropped_regs: set[int] = set()
    for d in ll.outs:
        size, want = ll.out_size(d), shape[d]
        if size <= want:
            continue
        found = [(b[d], in_dim, i) for in_dim, vs in bases.items() for i, b in enumerate(vs) if b.get(d, 0)]
        for _, in_dim, i in sorted(found, key=lambda t: -t[0]):
            if size <= want:
                break
            if in_dim == "register" and drop_registers:
                dropped_regs.add(i)
            else:
                bases[in_dim][i][d] = 0
            size >>= 1
    if "register" in bases:
        bases["register"] = [b for i, b in enumerate(bases["register"]) if i not in dropped_regs]
    sizes = {d: min(ll.out_size(d), shape[d]) for d in ll.outs}
    return _LL(bases, ll.outs, sizes)


def _with_shape(cta: _LL, shape: list[int], drop_registers: bool) -> _LL:
    """Triton's combineCtaCgaWithShape for one CTA."""
    cta = _not_smaller_than(cta, shape)
    cta = _not_larger_than(cta, shape, drop_registers)
    return cta.transpose_outs(list(range(len(shape))))


def _ints(text: str) -> list[int]:
    return [int(x) for x in re.findall(r"-?\d+", text)]


def _fields(body: str) -> dict[str, str]:
    """`{a = [1, 2], parent = #ttg.blocked<{...}>}` -> {"a": "[1, 2]", "parent": "#ttg..."}."""
    body = body.strip()
    if body.startswith("{") and body.endswith("}"):
        body = body[1:-1]
    out = {}
    for part in _split_top(body):
        if "=" in part:
            k, v = part.split("=", 1)
            out[k.strip()] = v.strip()
    return out


def _encoding(text: str) -> tuple[str, dict[str, str]] | None:
    m = re.fullmatch(r"#ttg\.(\w+)<(.*)>", text.strip(), re.S)
    return (m.group(1), _fields(m.group(2))) if m else None


def _blocked(f: dict[str, str], shape: list[int]) -> _LL:
    order = _ints(f["order"])
    cta = (_identity_nd("register", _ints(f["sizePerThread"]), order)
           * _identity_nd("lane", _ints(f["threadsPerWarp"]), order)
           * _identity_nd("warp", _ints(f["warpsPerCTA"]), order))
    return _with_shape(cta, shape, drop_registers=True)


def _broadcast_along(shape: list[int], order: list[int], k_dim: int, in_dim: str) -> _LL:
    ll = _LL.empty()
    for d in order:
        ll = ll * (_LL.zeros1d if d == k_dim else _LL.identity1d)(shape[d], in_dim, d)
    return ll


def _fma_dot_operand(f: dict[str, str], shape: list[int]) -> _LL | None:
    parent = _encoding(f["parent"])
    if parent is None or parent[0] != "blocked":
        return None
    pf = parent[1]
    rank = len(shape)
    order = _ints(pf["order"])
    k_dim = rank - 1 if int(f["opIdx"]) == 0 else rank - 2
    per_thread = _ints(pf["sizePerThread"])
    per_thread[k_dim] = shape[k_dim]  # each thread holds the whole K extent
    # The blocked encoding's repetition order is its order.
    cta = (_identity_nd("register", per_thread, order).transpose_outs(order)
           * _broadcast_along(_ints(pf["threadsPerWarp"]), order, k_dim, "lane").transpose_outs(order)
           * _broadcast_along(_ints(pf["warpsPerCTA"]), order, k_dim, "warp").transpose_outs(order))
    return _with_shape(cta, shape, drop_registers=False)


def _slice(f: dict[str, str], shape: list[int]) -> _LL | None:
    dim = int(f["dim"])
    parent_shape = shape[:dim] + [1] + shape[dim:]
    parent = _distributed(f["parent"], parent_shape)
    if parent is None:
        return None
    renumber = lambda d: d - (d > dim)  # noqa: E731
    bases = {}
    for in_dim, vs in parent.bases.items():
        new = [{renumber(d): v for d, v in b.items() if d != dim} for b in vs]
        if in_dim == "register":  # registers that became duplicates are dropped
            new = [b for b in new if any(b.values())]
        bases[in_dim] = new
    outs = [renumber(d) for d in parent.outs if d != dim]
    return _LL(bases, outs, {renumber(d): s for d, s in parent.sizes.items() if d != dim})


def _linear(f: dict[str, str], shape: list[int]) -> _LL | None:
    rank = len(shape)

    def vectors(key: str) -> list[dict[int, int]]:
        text = f.get(key, "[]").strip()[1:-1]
        return [dict(enumerate(_ints(v))) for v in _split_top(text) if v.strip()]

    if vectors("block"):
        raise ValueError("layouts spanning several CTAs are not supported (num_ctas must be 1)")
    bases = {k: vectors(k) for k in IN_DIMS}
    # The extent the bases span; a tensor of a smaller shape (a size-1 dimension after a
    # reduction or reshape) gets Triton's ensureLayoutNotLargerThan: lane and warp bases past the
    # shape become zero, register bases past it are removed. A larger shape would repeat
    # registers in Triton's rep order: left to Triton's conversion (None).
    span = {d: 1 << max((b.get(d, 0).bit_length() for vs in bases.values() for b in vs), default=0)
            for d in range(rank)}
    if any(span[d] < shape[d] for d in range(rank)):
        return None
    return _not_larger_than(_LL(bases, list(range(rank)), span), shape, drop_registers=True)


def _distributed(text: str, shape: list[int]) -> _LL | None:
    enc = _encoding(text)
    if enc is None:
        return None
    kind, f = enc
    if kind == "blocked":
        if set(f) != {"sizePerThread", "threadsPerWarp", "warpsPerCTA", "order"}:
            return None  # a CGA layout (several CTAs): Triton's conversion reports it
        return _blocked(f, shape)
    if kind == "slice":
        return _slice(f, shape)
    if kind == "dot_op":
        return _fma_dot_operand(f, shape)
    if kind == "linear":
        return _linear(f, shape)
    return None


@functools.lru_cache(maxsize=1024)
def layout_of(encoding: str, shape: tuple[int, ...]) -> Layout | None:
    """The linear layout of a distributed encoding's text for `shape`; None when the encoding is
    not one computed here (shared encodings, MMA layouts, several CTAs). Cached across kernels:
    layouts are immutable, and autotuning configs share most of theirs."""
    ll = _distributed(encoding, list(shape))
    if ll is None:
        return None
    rank = len(shape)

    def vecs(in_dim: str) -> tuple[tuple[int, ...], ...]:
        return tuple(tuple(b.get(d, 0) for d in range(rank)) for b in ll.bases.get(in_dim, []))

    return Layout(tuple(int(s) for s in shape), vecs("register"), vecs("lane"), vecs("warp"))
