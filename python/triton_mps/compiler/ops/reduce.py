"""tt.reduce, tt.scan, tt.histogram and tt.gather, driven by the operand's linear layout.

Reduce (semantics: Triton requires the combine function to be associative and commutative;
we rely on both, like Triton's GPU backends, but our order is fixed and every thread that holds
a result gets the bitwise same value):
  1. in each thread, fold the registers that share every non-axis coordinate, in increasing
     axis coordinate;
  2. butterfly across the lane bits whose basis lies along the axis (simd_shuffle_xor); both
     partners evaluate combine(lower lane's value, upper lane's value), so they agree exactly;
  3. across the warp bits along the axis through threadgroup memory: one partial per warp and
     result element, every thread folds the partials of its result elements in warp order.
  Lanes/warps/registers whose basis is zero hold duplicates and are never combined.

Scan (associativity only: non-commutative combines keep their operand order): a hypercube
scan over the axis bits in increasing significance, whichever of register / lane / warp each
bit lives in. After the bits below k, every element knows P (inclusive prefix inside its
aligned block of 2**k elements) and T (that block's total); merging with the partner block
(element ^ 2**k): the later block gets P = T_earlier (+) P, both get T = T_earlier (+) T_later.
Register bits pair registers (compile time), lane bits use simd_shuffle_xor, warp bits
exchange T through threadgroup memory. reverse=True scans the reversed sequence
(result[i] = x[n-1] (+) ... (+) x[i], as Triton's interpreter defines it).

Layouts that do not fit (a basis mixing the axis with other dims, axis bases that are not
distinct powers of two) go through a generic path: every element to threadgroup memory, each
thread folds the elements of its results sequentially (slower, always correct).
"""

from __future__ import annotations

import math

from ..ir import Op
from ..lane_exchange import shuffle_many
from ..layout import Layout, register_map
from ..lowering import LoweringContext, lowers, scratch_limit
from ..scratch import (
    SCRATCH_ALIGN,
    Access,
    read_vector,
    row_major,
    scratch_bytes,
    static_index,
    store_to_scratch,
    thread_index_mask,
    through_scratch,
    vector_width,
    windowed,
    windows,
    write_access,
    write_vector,
)
from ..types import TensorType

# ---------------------------------------------------------------------------------------------
# helpers


def _scratch_arrays(ctx: LoweringContext, specs: list[tuple[str, int]]) -> list[str]:
    """One threadgroup array per (msl type, element count), packed at SCRATCH_ALIGN offsets."""
    off, ptrs = 0, []
    for t, n in specs:
        off = _aligned(off)
        ptrs.append(f"((threadgroup {t}*)(tmps_smem + {off}))" if off else f"((threadgroup {t}*)tmps_smem)")
        off += n * scratch_bytes(t)
    ctx.scratch(max(off, 8))
    return ptrs


def _aligned(nbytes: int) -> int:
    return -(-nbytes // SCRATCH_ALIGN) * SCRATCH_ALIGN


def _segment_totals(ctx: LoweringContext, t: str, buf: str, base: str, values: list[str | None],
                    per_thread: int) -> list[str]:
    """A thread's slots base + 0.. of buf (base a multiple of per_thread): writes `values`
    (returns []), or reads as many (values all None; returns the variables). Consecutive slots
    move as vectors (base + i is aligned to the width when the width divides i and per_thread)."""
    e = ctx.e
    v = vector_width(t, per_thread)
    out: list[str] = []
    i = 0
    while i < len(values):
        w = v if i + v <= len(values) else 1
        at = f"{base} + {i}u" if i else base
        if values[i] is not None:
            if w > 1:
                e.line(write_vector(buf, t, at, values[i:i + w]))
            else:
                e.line(f"{buf}[{at}] = {values[i]};")
        elif w > 1:
            out += [_var(ctx, t, x, "wpt") for x in read_vector(ctx, buf, t, w, at)]
        else:
            out.append(_var(ctx, t, f"{buf}[{at}]", "wpt"))
        i += w
    return out


def _var(ctx: LoweringContext, t: str, expr: str, hint: str = "rd") -> str:
    name = ctx.e.fresh(hint)
    ctx.e.line(f"{t} {name} = {expr};")
    return name


class _Combiner:
    """Lowers the combine region as scalar code; results are always fresh variables.
    Memoized on the argument names: combining the same variables twice emits code once."""

    def __init__(self, ctx: LoweringContext, op: Op, types: list[str]):
        self.ctx = ctx
        self.block = op.regions[0].blocks[0]
        self.types = types
        self.memo: dict[tuple, tuple] = {}
        if len(self.block.args) != 2 * len(types):
            ctx.error(op, f"combine region takes {len(self.block.args)} arguments for {len(types)} operands")

    def __call__(self, a, b, memo: bool = True) -> tuple:
        key = (tuple(a), tuple(b))
        if memo and key in self.memo:
            return self.memo[key]
        outs = self.ctx.lower_block(self.block, list(a) + list(b))
        if len(outs) != len(self.types):
            self.ctx.error(None, f"combine region returns {len(outs)} values for {len(self.types)} operands")
        res = tuple(_var(self.ctx, t, o[0], "cmb") for t, o in zip(self.types, outs, strict=True))
        if memo:
            self.memo[key] = res
        return res


def _pure(b, axis: int) -> bool:
    """A basis lies along the axis only, or has no axis component."""
    return b[axis] == 0 or all(x == 0 for i, x in enumerate(b) if i != axis)


def _drop(c, axis: int) -> tuple:
    return tuple(x for i, x in enumerate(c) if i != axis)


def _project_layout(lay: Layout, axis: int) -> Layout:
    """The layout with the axis dimension removed (axis bases become duplicates)."""
    p = lambda bases: tuple(_drop(b, axis) for b in bases)  # noqa: E731
    return Layout(_drop(lay.shape, axis), p(lay.reg_bases), p(lay.lane_bases), p(lay.warp_bases))


def _bits_mask(bits: list[int]) -> int:
    return sum(1 << j for j in bits)


def _insert(c: list[str], axis: int, x: str) -> list[str]:
    return list(c[:axis]) + [x] + list(c[axis:])


def _same_layouts(ctx: LoweringContext, op: Op, values) -> Layout:
    lay = ctx.layout(values[0])
    for v in values[1:]:
        if not ctx.layout(v).same_as(lay):
            ctx.error(op, "operands of the reduction/scan have different layouts")
    return lay


# ---------------------------------------------------------------------------------------------
# tt.reduce


def _reduce_plan(lay: Layout, axis: int):
    """(groups, lane_bits, warp_bits) for the fast path, or None.

    groups: non-axis register coordinate -> registers (distinct elements, by axis coordinate)."""
    allb = list(lay.reg_bases) + list(lay.lane_bases) + list(lay.warp_bases)
    if not all(_pure(b, axis) for b in allb):
        return None
    groups: dict[tuple, list[int]] = {}
    seen = set()
    for r in range(lay.num_regs):
        c = lay.reg_coord(r)
        if c in seen:
            continue  # a duplicate register: same element as a lower one
        seen.add(c)
        groups.setdefault(_drop(c, axis), []).append(r)
    for regs in groups.values():
        regs.sort(key=lambda r: lay.reg_coord(r)[axis])
    lane_bits = [j for j, b in enumerate(lay.lane_bases) if b[axis]]
    warp_bits = [j for j, b in enumerate(lay.warp_bases) if b[axis]]
    # Every element of a row must be reached exactly once: register values x span(thread bases).
    span = {0}
    for b in [lay.lane_bases[j][axis] for j in lane_bits] + [lay.warp_bases[j][axis] for j in warp_bits]:
        span = span | {s ^ b for s in span}
    if len(span) != 1 << (len(lane_bits) + len(warp_bits)):
        return None
    for regs in groups.values():
        reached = {lay.reg_coord(r)[axis] ^ s for r in regs for s in span}
        if len(reached) != len(regs) * len(span) or len(reached) != lay.shape[axis]:
            return None
    return groups, lane_bits, warp_bits


@lowers("tt.reduce")
def reduce_op(ctx: LoweringContext, op: Op):
    srcs, results = op.operands, op.results
    axis = op.int_attr("axis")
    lay = _same_layouts(ctx, op, srcs)
    if axis is None or not 0 <= axis < lay.rank:
        ctx.error(op, f"bad reduction axis {axis}")
    types = [ctx.msl_type(s) for s in srcs]
    comb = _Combiner(ctx, op, types)
    scalar = not isinstance(results[0].type, TensorType)
    rlay = None if scalar else ctx.layout(results[0])
    plan = _reduce_plan(lay, axis)
    e = ctx.e
    e.comment(f"tt.reduce axis {axis} ({'fast' if plan else 'generic'} path)")
    if plan is None:
        _reduce_generic(ctx, op, lay, axis, types, comb, rlay)
        return
    groups, lane_bits, warp_bits = plan

    # 1. inside the thread
    vals: dict[tuple, tuple] = {}
    for key, regs in groups.items():
        acc = tuple(ctx.expr(s, regs[0]) for s in srcs)
        for r in regs[1:]:
            acc = comb(acc, tuple(ctx.expr(s, r) for s in srcs))
        vals[key] = acc

    # 2. across lanes: butterfly, lower lane's value first in both partners
    for j in lane_bits:
        m = 1 << j
        upper = _var(ctx, "bool", f"(tmps_lane & {m}u) != 0u", "upper")
        # every group's partner values in as few collectives as Metal allows (lane_exchange)
        got = iter(shuffle_many(ctx, "simd_shuffle_xor", [(t, x) for key in groups
                                                          for t, x in zip(types, vals[key], strict=True)], f"{m}u"))
        for key in groups:
            a = vals[key]
            p = [next(got) for _ in types]
            lo = [_var(ctx, t, f"{upper} ? {pi} : {ai}", "lo") for t, pi, ai in zip(types, p, a, strict=True)]
            hi = [_var(ctx, t, f"{upper} ? {ai} : {pi}", "hi") for t, pi, ai in zip(types, p, a, strict=True)]
            vals[key] = comb(lo, hi)

    # 3./4. give each result register its value
    players = _project_layout(lay, axis)
    if not warp_bits:
        if scalar:
            (only,) = vals.values()
            for i, res in enumerate(results):
                ctx.bind(res, [only[i]])
            return
        m = register_map(players, rlay)
        if m is not None:
            for i, res in enumerate(results):
                ctx.bind(res, [vals[players.reg_coord(m[r])][i] for r in range(rlay.num_regs)])
            return
    _reduce_across_warps(ctx, op, lay, axis, types, comb, rlay, groups, vals, lane_bits, warp_bits, players)


def _reduce_across_warps(ctx, op, lay, axis, types, comb, rlay, groups, vals, lane_bits, warp_bits, players):
    """Partials per (warp along the axis, result element) through threadgroup memory; each
    thread folds the partials of its result registers in warp order."""
    e = ctx.e
    nres = 1
    for s in players.shape:
        nres *= s
    K = 1 << len(warp_bits)
    if windows(nres, K * sum(scratch_bytes(t) for t in types), scratch_limit(ctx))[0] > 1:
        _reduce_across_warps_in_rounds(ctx, op, lay, types, comb, rlay, groups, vals, lane_bits, warp_bits,
                                       players, nres, K)
        return
    bufs = _scratch_arrays(ctx, [(t, K * nres) for t in types])
    k_terms = [f"(((tmps_warp >> {j}u) & 1u) << {i}u)" for i, j in enumerate(warp_bits)]
    kexpr = " | ".join(k_terms) if k_terms else "0u"
    ctx.barrier()
    kname = _var(ctx, "uint", f"({kexpr}) * {nres}u", "wslot")

    def write():
        for key, regs in groups.items():
            slot = row_major(players.shape, ctx.coord(players, regs[0])) if players.rank else "0u"
            for buf, x in zip(bufs, vals[key], strict=True):
                e.line(f"{buf}[{kname} + {slot}] = {x};")

    with e.guarded(_warp_partial_writers(lay, lane_bits)):
        write()
    ctx.barrier()
    results = op.results
    memo: dict[str, tuple] = {}
    per_reg = []
    nregs = 1 if rlay is None else rlay.num_regs
    for r in range(nregs):
        idx = "0u" if rlay is None else ctx.linear_index(rlay, r)
        if idx not in memo:
            ix = _var(ctx, "uint", idx, "ridx")
            acc = tuple(_var(ctx, t, f"{buf}[{ix}]", "part") for t, buf in zip(types, bufs, strict=True))
            for k in range(1, K):
                nxt = tuple(_var(ctx, t, f"{buf}[{ix} + {k * nres}u]", "part")
                            for t, buf in zip(types, bufs, strict=True))
                acc = comb(acc, nxt)
            memo[idx] = acc
        per_reg.append(memo[idx])
    for i, res in enumerate(results):
        ctx.bind(res, [p[i] for p in per_reg])


def _warp_partial_writers(lay, lane_bits) -> str:
    """Condition for one writer per (warp partial, result element): lanes along the axis hold
    the same value after the butterfly, duplicated lanes/warps hold copies."""
    lane_skip = _bits_mask(lane_bits) | lay.lane_dup_mask
    conds = []
    if lane_skip:
        conds.append(f"(tmps_lane & {lane_skip}u) == 0u")
    if lay.warp_dup_mask:
        conds.append(f"(tmps_warp & {lay.warp_dup_mask}u) == 0u")
    return " && ".join(conds)


def _reduce_across_warps_in_rounds(ctx, op, lay, types, comb, rlay, groups, vals, lane_bits, warp_bits,
                                   players, nres: int, K: int):
    """_reduce_across_warps when the K x nres partials do not fit threadgroup memory: rounds over
    windows of result elements (scratch.windows), K partials per element each."""
    e = ctx.e
    rounds, size = windows(nres, K * sum(scratch_bytes(t) for t in types), scratch_limit(ctx))
    bufs = _scratch_arrays(ctx, [(t, K * size) for t in types])
    e.comment(f"partials of {nres} results through threadgroup memory in {rounds} rounds of {size}")
    kexpr = " | ".join(f"(((tmps_warp >> {j}u) & 1u) << {i}u)" for i, j in enumerate(warp_bits)) or "0u"
    kname = _var(ctx, "uint", f"({kexpr}) * {size}u", "wslot")
    keys = list(groups)
    pshape = players.shape
    writes = Access([row_major(pshape, ctx.coord(players, groups[k][0])) for k in keys],
                    [static_index(pshape, players.reg_coord(groups[k][0])) for k in keys],
                    row_major(pshape, ctx.coord(players, 0)),
                    thread_index_mask(pshape, players.lane_bases + players.warp_bases))
    uniq: dict[str, int] = {}
    per_reg = [uniq.setdefault(ctx.linear_index(rlay, r), r) for r in range(rlay.num_regs)]
    first = sorted(set(per_reg))
    reads = Access([ctx.linear_index(rlay, r) for r in range(rlay.num_regs)],
                   [static_index(rlay.shape, rlay.reg_coord(r)) for r in range(rlay.num_regs)],
                   ctx.linear_index(rlay, 0), thread_index_mask(rlay.shape, rlay.lane_bases + rlay.warp_bases))
    names = {r: [e.fresh("red") for _ in types] for r in first}
    for r in first:
        for t, nm in zip(types, names[r], strict=True):
            e.line(f"{t} {nm};")
    w = e.fresh("rnd")
    with e.block(f"for (uint {w} = 0u; {w} < {rounds}u; ++{w})"):
        ctx.barrier()
        with e.guarded(_warp_partial_writers(lay, lane_bits)):
            windowed(ctx, w, size, writes, list(range(len(keys))),
                      lambda g, i: " ".join(f"{b}[{kname} + {i}] = {x};"
                                            for b, x in zip(bufs, vals[keys[g]], strict=True)))
        ctx.barrier()

        def fold(r, i):
            acc = tuple(_var(ctx, t, f"{b}[{i}]", "part") for t, b in zip(types, bufs, strict=True))
            for k in range(1, K):
                nxt = tuple(_var(ctx, t, f"{b}[{i} + {k * size}u]", "part") for t, b in zip(types, bufs, strict=True))
                acc = comb(acc, nxt, memo=False)
            return " ".join(f"{nm} = {x};" for nm, x in zip(names[r], acc, strict=True))

        def stmt(r, i):
            ix = _var(ctx, "uint", i, "ridx")  # the fold's lines go before the statement
            return fold(r, ix)

        windowed(ctx, w, size, reads, first, stmt)
    for i, res in enumerate(op.results):
        ctx.bind(res, [names[per_reg[r]][i] for r in range(rlay.num_regs)])


def _fold_loop(ctx, comb, types, init: list[str], bufs, index_of, loop_header: str) -> tuple:
    """Mutable accumulators = init, then `loop_header { acc = combine(acc, buf[index_of("i")]) }`."""
    e = ctx.e
    acc = [_var(ctx, t, x, "acc") for t, x in zip(types, init, strict=True)]
    with e.block(loop_header):
        idx = _var(ctx, "uint", index_of("i"), "ix")
        nxt = [_var(ctx, t, f"{b}[{idx}]", "el") for t, b in zip(types, bufs, strict=True)]
        out = comb(acc, nxt, memo=False)
        for a, o in zip(acc, out, strict=True):
            e.line(f"{a} = {o};")
    return tuple(acc)


def _all_to_scratch(ctx, srcs, types, numel) -> list[str]:
    bufs = _scratch_arrays(ctx, [(t, numel) for t in types])
    ctx.barrier()
    for s, b in zip(srcs, bufs, strict=True):
        store_to_scratch(ctx, s, b)
    ctx.barrier()
    return bufs


def _reduce_generic(ctx, op, lay, axis, types, comb, rlay):
    shape = lay.shape
    numel = math.prod(shape)
    n = shape[axis]
    keys, per_reg = {}, []
    for r in range(1 if rlay is None else rlay.num_regs):
        c = [] if rlay is None else ctx.coord(rlay, r)
        per_reg.append(keys.setdefault(tuple(c), len(keys)))
    if _rounds(ctx, types, numel) == 1:
        bufs = _all_to_scratch(ctx, op.operands, types, numel)
        folds = []
        for c in keys:
            index_of = lambda i, c=c: row_major(shape, _insert(c, axis, i))  # noqa: E731
            init = [f"{b}[{index_of('0u')}]" for b in bufs]
            folds.append(_fold_loop(ctx, comb, types, init, bufs, index_of, f"for (uint i = 1u; i < {n}u; ++i)"))
    else:
        specs = [(lambda i, c=c: row_major(shape, _insert(list(c), axis, i)),
                  lambda i: f"for (uint {i} = 0u; {i} < {n}u; ++{i})") for c in keys]
        folds = _folds_in_rounds(ctx, op.operands, types, comb, lay, specs, descending=False)
    for i, res in enumerate(op.results):
        ctx.bind(res, [folds[k][i] for k in per_reg])


def _rounds(ctx, types, numel: int) -> int:
    return windows(numel, sum(scratch_bytes(t) for t in types), scratch_limit(ctx))[0]


def _folds_in_rounds(ctx, srcs, types, comb, lay: Layout, specs, descending: bool) -> list[tuple]:
    """Sequential folds over elements of srcs (all in layout lay) that do not fit threadgroup
    memory at once: the elements pass through it in rounds of row-major index windows (ascending,
    or descending), and each fold (index_of(i), loop_header(i)) combines the elements of its
    loop that are in the window, in loop order. Index windows are contiguous, so a fold whose
    indices grow with i (shrink, descending) sees its elements in exactly its loop order."""
    e = ctx.e
    rounds, size = windows(math.prod(lay.shape), sum(scratch_bytes(t) for t in types), scratch_limit(ctx))
    bufs = _scratch_arrays(ctx, [(t, size) for t in types])
    e.comment(f"elements through threadgroup memory in {rounds} rounds of {size}")
    accs = []
    for _ in specs:
        names = [ctx.e.fresh("acc") for _ in types]
        for t, nm in zip(types, names, strict=True):
            e.line(f"{t} {nm};")
        has = _var(ctx, "bool", "false", "has")
        accs.append((names, has))
    write = write_access(ctx, srcs[0], 0)
    xs = [ctx.exprs(s) for s in srcs]
    w = e.fresh("rnd")
    header = (f"for (uint {w} = {rounds}u; {w}-- > 0u;)" if descending
              else f"for (uint {w} = 0u; {w} < {rounds}u; ++{w})")
    with e.block(header):
        ctx.barrier()
        with e.guarded(ctx.owner_predicate(lay)):
            windowed(ctx, w, size, write, lay.owned_regs(),
                      lambda r, i: " ".join(f"{b}[{i}] = {x[r] if len(x) > 1 else x[0]};"
                                            for b, x in zip(bufs, xs, strict=True)))
        ctx.barrier()
        for (index_of, loop_header), (names, has) in zip(specs, accs, strict=True):
            i = e.fresh("i")
            with e.block(loop_header(i)):
                ix = _var(ctx, "uint", f"({index_of(i)}) - {w} * {size}u", "wix")
                with e.block(f"if ({ix} < {size}u)"):
                    el = [_var(ctx, t, f"{b}[{ix}]", "el") for t, b in zip(types, bufs, strict=True)]
                    with e.block(f"if ({has})"):
                        out = comb(names, el, memo=False)
                        for a, o in zip(names, out, strict=True):
                            e.line(f"{a} = {o};")
                    with e.block("else"):
                        for a, x in zip(names, el, strict=True):
                            e.line(f"{a} = {x};")
                    e.line(f"{has} = true;")
    return [tuple(names) for names, _ in accs]


# ---------------------------------------------------------------------------------------------
# tt.scan


def _scan_plan(lay: Layout, axis: int):
    """Axis bits in increasing significance as (kind, index), or None."""
    n = lay.shape[axis]
    steps = []
    for kind, bases in (("reg", lay.reg_bases), ("lane", lay.lane_bases), ("warp", lay.warp_bases)):
        for j, b in enumerate(bases):
            if not _pure(b, axis):
                return None
            v = b[axis]
            if v:
                if v & (v - 1):
                    return None
                steps.append((v, kind, j))
    steps.sort()
    if [v for v, _, _ in steps] != [1 << i for i in range(n.bit_length() - 1)] or n & (n - 1):
        return None
    return [(kind, j) for _, kind, j in steps]


_CARRY_OPS = {"arith.addf": "+", "arith.mulf": "*"}


def _narrow_float_sum(ctx: LoweringContext, op: Op) -> tuple[str, str] | None:
    """(MSL type half/bfloat, "+" or "*") when the scan is a plain sum or product of one
    f16/bf16 operand (the combine region is one arith.addf/mulf of its two arguments)."""
    if len(op.operands) != 1 or len(op.regions) != 1 or len(op.regions[0].blocks) != 1:
        return None
    t = ctx.msl_type(op.operands[0])
    if t not in ("half", "bfloat"):
        return None
    block = op.regions[0].blocks[0]
    if len(block.ops) != 2 or block.ops[0].name not in _CARRY_OPS:
        return None
    add = block.ops[0]
    if {id(v) for v in add.operands} != {id(v) for v in block.args} or len(add.operands) != 2:
        return None
    ret = block.ops[1]
    if len(ret.operands) != 1 or ret.operands[0] is not add.results[0]:
        return None
    return t, _CARRY_OPS[add.name]


class _FloatSum:
    """Combine of a narrow-float sum (or product) carried in float: each partial result is a
    float (inputs widen exactly), and the result is rounded to half/bfloat once. Rounding every
    step, as the region literally says, makes a bf16 cumsum drift by several ulps over a few
    hundred elements (Triton's tests compare with rtol 1e-2 against an fp32 cumsum); the
    reassociation freedom that every scan already uses covers the wider carry too."""

    types = ["float"]

    def __init__(self, ctx: LoweringContext, sym: str):
        self.ctx = ctx
        self.sym = sym
        self.memo: dict[tuple, tuple] = {}

    def __call__(self, a, b, memo: bool = True) -> tuple:
        key = (tuple(a), tuple(b))
        if memo and key in self.memo:
            return self.memo[key]
        res = (_var(self.ctx, "float", f"(float)({a[0]}) {self.sym} (float)({b[0]})", "cmb"),)
        if memo:
            self.memo[key] = res
        return res


@lowers("tt.scan")
def scan_op(ctx: LoweringContext, op: Op):
    srcs, results = op.operands, op.results
    axis = op.int_attr("axis")
    reverse = bool(op.attrs.get("reverse"))
    lay = _same_layouts(ctx, op, srcs)
    if axis is None or not 0 <= axis < lay.rank:
        ctx.error(op, f"bad scan axis {axis}")
    carry = _narrow_float_sum(ctx, op)
    narrow = carry[0] if carry is not None else None
    if carry is not None:
        types = ["float"]
        comb = _FloatSum(ctx, carry[1])
    else:
        types = [ctx.msl_type(s) for s in srcs]
        comb = _Combiner(ctx, op, types)
    rlay = ctx.layout(results[0])
    plan = _scan_plan(lay, axis)
    e = ctx.e
    e.comment(f"tt.scan axis {axis}{' reverse' if reverse else ''} ({'fast' if plan is not None else 'generic'} path)")
    if plan is None:
        P = _scan_generic(ctx, op, lay, axis, reverse, types, comb)
    else:
        P = _scan_hypercube(ctx, op, lay, plan, reverse, types, comb)
    if rlay.same_as(lay):
        m = list(range(lay.num_regs))
    else:
        m = register_map(lay, rlay)
        if m is None:
            ctx.error(op, "scan result layout differs from its operand's layout")
    if narrow is not None:  # one rounding of each float partial sum to half/bfloat
        P = [(_var(ctx, narrow, f"({narrow}){p[0]}", "sum"),) for p in P]
    for i, res in enumerate(results):
        ctx.bind(res, [P[m[r]][i] for r in range(rlay.num_regs)])


def _scan_hypercube(ctx, op, lay: Layout, plan, reverse: bool, types, comb) -> list[tuple]:
    """The hypercube scan, with the cheap parts done cheaply: the lowest axis bits that live in
    registers are scanned sequentially inside the thread (segments); the remaining bits only
    exchange segment totals and build each segment's exclusive prefix E (absent in the first
    block: `has` says whether E holds anything); finally P = E (+) local prefix."""
    srcs = op.operands
    e = ctx.e
    R = lay.num_regs
    # operands in the scan's carry types (a narrow-float sum carries float: _FloatSum)
    x = [tuple(ctx.expr(s, r) if ctx.msl_type(s) == t else f"(({t}){ctx.expr(s, r)})"
               for s, t in zip(srcs, types, strict=True)) for r in range(R)]
    lead = 0
    while lead < len(plan) and plan[lead][0] == "reg":
        lead += 1
    lead_bits = [1 << j for _, j in plan[:lead]]  # register bits, by increasing axis value
    lead_mask = sum(lead_bits)

    def pos(r):  # position of r inside its segment along the axis
        return sum(1 << i for i, b in enumerate(lead_bits) if r & b)

    # 1. sequential scan of each segment (registers that differ only in the leading bits)
    P: list = [None] * R
    segs: dict[int, list[int]] = {}
    for r in range(R):
        segs.setdefault(r & ~lead_mask, []).append(r)
    T: dict[int, tuple] = {}
    for key, regs in segs.items():
        regs.sort(key=pos, reverse=reverse)
        acc = x[regs[0]]
        P[regs[0]] = acc
        for r in regs[1:]:
            acc = comb(acc, x[r])
            P[r] = acc
        T[key] = acc
    E: dict[int, tuple | None] = {k: None for k in segs}
    has: dict[int, str | None] = {k: None for k in segs}  # None: empty; "true"; or a bool variable
    nthreads = 32 * ctx.num_warps

    def sel(c, a, b, hint):
        return tuple(_var(ctx, t, f"{c} ? {ai} : {bi}", hint) for t, ai, bi in zip(types, a, b, strict=True))

    # 2. the remaining axis bits: totals and exclusive prefixes of segments
    for kind, j in plan[lead:]:
        if kind == "reg":
            bit = 1 << j
            for key in list(segs):
                if key & bit:
                    continue
                early, late = (key | bit, key) if reverse else (key, key | bit)
                tn = comb(T[early], T[late])
                if has[late] is None:
                    E[late] = T[early]
                elif has[late] == "true":
                    E[late] = comb(T[early], E[late])
                else:
                    E[late] = sel(has[late], comb(T[early], E[late]), T[early], "ex")
                has[late] = "true"
                T[early] = T[late] = tn
            continue
        keys = list(segs)
        if kind == "lane":
            m = 1 << j
            got = iter(shuffle_many(ctx, "simd_shuffle_xor",
                                    [(t, v) for k in keys for t, v in zip(types, T[k], strict=True)], f"{m}u"))
            partner = {k: tuple(next(got) for _ in types) for k in keys}
            bitx = f"(tmps_lane & {m}u)"
        else:
            # segment totals of every thread, in rounds of U keys when they do not fit at once
            U = len(keys)
            while U > 1 and sum(_aligned(nthreads * U * scratch_bytes(t)) for t in types) > scratch_limit(ctx):
                U = (U + 1) // 2
            bufs = _scratch_arrays(ctx, [(t, nthreads * U) for t in types])
            if U < len(keys):
                e.comment(f"segment totals through threadgroup memory in {-(-len(keys) // U)} rounds of {U}")
            other = _var(ctx, "uint", f"(tmps_tid ^ {1 << (j + 5)}u) * {U}u", "ptid")
            got: dict[int, list[str]] = {}
            for k0 in range(0, len(keys), U):
                ctx.barrier()
                round_keys = keys[k0:k0 + U]
                for ti, (t, b) in enumerate(zip(types, bufs, strict=True)):
                    _segment_totals(ctx, t, b, f"tmps_tid * {U}u", [T[k][ti] for k in round_keys], U)
                ctx.barrier()
                for t, b in zip(types, bufs, strict=True):
                    reads = _segment_totals(ctx, t, b, other, [None] * len(round_keys), U)
                    for k, x in zip(round_keys, reads, strict=True):
                        got.setdefault(k, []).append(x)
            partner = {k: tuple(got[k]) for k in keys}
            bitx = f"(tmps_warp & {1 << j}u)"
        late = _var(ctx, "bool", f"{bitx} {'==' if reverse else '!='} 0u", "late")
        for k in keys:
            tp = partner[k]
            tn = comb(sel(late, tp, T[k], "fst"), sel(late, T[k], tp, "snd"))
            if has[k] is None:
                E[k] = tp  # meaningful only where `late` holds
                has[k] = late
            else:
                cand = comb(tp, E[k])
                if has[k] != "true":
                    cand = sel(has[k], cand, tp, "ex")
                E[k] = sel(late, cand, E[k], "ex")
                if has[k] != "true":
                    has[k] = _var(ctx, "bool", f"{late} || {has[k]}", "has")
            T[k] = tn

    # 3. prefix = exclusive prefix of the segment (+) local prefix
    out = []
    for r in range(R):
        k = r & ~lead_mask
        if has[k] is None:
            out.append(P[r])
        elif has[k] == "true":
            out.append(comb(E[k], P[r]))
        else:
            out.append(sel(has[k], comb(E[k], P[r]), P[r], "pfx"))
    return out


def _scan_generic(ctx, op, lay: Layout, axis: int, reverse: bool, types, comb) -> list[tuple]:
    shape = lay.shape
    numel = math.prod(shape)
    n = shape[axis]
    keys, per_reg = {}, []
    for r in range(lay.num_regs):
        per_reg.append(keys.setdefault(tuple(ctx.coord(lay, r)), len(keys)))
    if _rounds(ctx, types, numel) > 1:
        specs = []
        for c in keys:
            pos = _var(ctx, "uint", c[axis], "pos")
            index_of = lambda i, c=c: row_major(shape, [i if d == axis else x for d, x in enumerate(c)])  # noqa: E731
            loop = ((lambda i, pos=pos: f"for (uint {i} = {n}u; {i}-- > {pos};)") if reverse else  # noqa: E731
                    (lambda i, pos=pos: f"for (uint {i} = 0u; {i} <= {pos}; ++{i})"))
            specs.append((index_of, loop))
        folds = _folds_in_rounds(ctx, op.operands, types, comb, lay, specs, descending=reverse)
        return [folds[k] for k in per_reg]
    bufs = _all_to_scratch(ctx, op.operands, types, numel)
    out, memo = [], {}
    for r in range(lay.num_regs):
        c = ctx.coord(lay, r)
        key = tuple(c)
        if key not in memo:
            index_of = lambda i, c=c: row_major(shape, [i if d == axis else x for d, x in enumerate(c)])  # noqa: E731
            pos = _var(ctx, "uint", c[axis], "pos")
            if reverse:
                init = [f"{b}[{index_of(f'{n - 1}u')}]" for b in bufs]
                header = f"for (uint i = {n - 1}u; i-- > {pos};)"
            else:
                init = [f"{b}[{index_of('0u')}]" for b in bufs]
                header = f"for (uint i = 1u; i <= {pos}; ++i)"
            memo[key] = _fold_loop(ctx, comb, types, init, bufs, index_of, header)
        out.append(memo[key])
    return out


# ---------------------------------------------------------------------------------------------
# tt.histogram, tt.gather


@lowers("tt.histogram")
def histogram(ctx: LoweringContext, op: Op):
    src, res = op.operands[0], op.results[0]
    mask = op.operands[1] if len(op.operands) > 1 else None
    nbins = res.type.shape[0]
    slay, rlay = ctx.layout(src), ctx.layout(res)
    e = ctx.e
    e.comment(f"tt.histogram: {nbins} bins, threadgroup atomics")
    hist = ctx.scratch(nbins * 4, "atomic_int")
    nthreads = 32 * ctx.num_warps
    ctx.barrier()
    with e.block(f"for (uint i = tmps_tid; i < {nbins}u; i += {nthreads}u)"):
        e.line(f"atomic_store_explicit(&{hist}[i], 0, memory_order_relaxed);")
    ctx.barrier()
    owner = ctx.owner_predicate(slay)

    def count():
        for r in slay.owned_regs():
            cond = f"(uint)({ctx.expr(src, r)}) < {nbins}u"  # out-of-range values are dropped
            if mask is not None:
                cond = f"({ctx.expr(mask, r)}) && {cond}"
            bin_ = f"(uint)({ctx.expr(src, r)})"
            e.line(f"if ({cond}) atomic_fetch_add_explicit(&{hist}[{bin_}], 1, memory_order_relaxed);")

    with e.guarded(owner):
        count()
    ctx.barrier()
    ctx.define(res, lambda r: f"atomic_load_explicit(&{hist}[{ctx.linear_index(rlay, r)}], memory_order_relaxed)",
               hint=ctx.hint(res, "hist"))


@lowers("tt.gather")
def gather(ctx: LoweringContext, op: Op):
    src, idx = op.operands[0], op.operands[1]
    res = op.results[0]
    axis = op.int_attr("axis")
    slay, ilay, rlay = ctx.layout(src), ctx.layout(idx), ctx.layout(res)
    if axis is None or not 0 <= axis < slay.rank:
        ctx.error(op, f"bad gather axis {axis}")
    m = list(range(rlay.num_regs)) if ilay.same_as(rlay) else register_map(ilay, rlay)
    if m is None:
        ctx.error(op, "gather index and result layouts differ")
    n = slay.shape[axis]

    def index(r, c):
        c = list(c)
        # Out-of-range indices are undefined in Triton: clamp so we never read past the array.
        c[axis] = f"min((uint)({ctx.expr(idx, m[r])}), {n - 1}u)"
        return row_major(slay.shape, c)

    through_scratch(ctx, [(src, 0)], src.type.numel, res, index, ctx.hint(res, "gather"))
