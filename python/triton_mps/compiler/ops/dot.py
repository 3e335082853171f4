"""tt.dot: D = A @ B + C on one program's blocks.

Triton's accelerate-matmul pass does not run for our target, so A and B arrive in
`#ttg.dot_op<{opIdx = 0/1, parent = #blocked}>` layouts and C/D in the blocked parent. Two
lowerings, chosen per op:

- simdgroup_matrix (rank 2, M, N, K multiples of 8, float inputs; taken when an 8-deep K chunk
  of A and B and an 8-row band of D fit in 32 KiB of float scratch): A and B are written to
  threadgroup memory widened to float (so every load and multiply-accumulate is
  float x float -> float: no mixed-type simdgroup ops, and fp16/bf16 products are exact in
  fp32), K chunks at a time when the whole K does not fit; each SIMD-group keeps a rectangle of
  8x8 accumulator tiles in simdgroup registers over all of K, then stores them to threadgroup
  memory (in row bands when M x N floats do not fit) and every thread reads the elements of its
  D registers and adds its C registers. A and B are staged from before their conversion to the
  dot-operand layouts when possible (each element written once, not once per replica). The lane
  layout of simdgroup matrices is never relied on: data moves only through simdgroup_load /
  simdgroup_store. Inside an scf.for whose carried accumulator feeds only this dot and takes
  its result back (see `loop_accumulators`), the accumulator tiles are the loop's variables
  instead: staged in once before the loop, only A and B are staged per iteration, and D is read
  back once after the loop.
- FMA: each thread computes its own D registers. When the operand layouts put every A(m, k) and
  B(k, n) that a D(m, n) register needs into the same thread (lane and warp parts agree, checked
  at compile time) and the unrolled code stays small (MAX_UNROLLED_FMAS), registers are matched
  at compile time; otherwise A and B go through threadgroup memory first (never silently wrong),
  K chunks at a time when A and B do not fit 32 KiB at once.

Numerics: fp32/fp16/bf16/fp8 inputs multiply and accumulate in fp32 (inputs widened first,
fp8 through the exact conversion helpers of fp8.py, in the operand staging);
input_precision "ieee", "tf32", "tf32x3" are all computed as exact fp32 products (no tf32
rounding); "bf16x3"/"bf16x6" never reach here as such: Triton's f32_dot_tc pass (backend
pipeline) rewrites them into bf16 dots. max_num_imprecise_acc is ignored. int8 inputs are read
as signed and accumulate in int32 with wrap-around. The sum is rounded once to the result type (out_dtype) at the end.

TRITON_MPS_DOT=fma|simdgroup|auto (default auto) forces a path (simdgroup only where it applies).
"""

from __future__ import annotations

import os
from contextlib import nullcontext

from .. import lowering
from ..ir import Op, Value
from ..layout import Layout
from ..lowering import LOOP_CARRIERS, STAGES_FROM_SOURCE, LoopCarrier, LoweringContext, lowers, scratch_limit
from ..mslib import fp64
from ..mslib.fp8 import fp8_to_float
from ..scratch import layout_parts, read_registers, row_major, write_registers
from ..types import ScalarType, elem_of

ENV = "TRITON_MPS_DOT"
# The register FMA path is fully unrolled (one line per register and k): beyond this many FMAs
# per thread the operands go through threadgroup memory with a K loop instead (the MSL of a
# 128x128x64 int8 dot would otherwise be ~8k lines per thread, minutes to compile).
MAX_UNROLLED_FMAS = 2048
_FLOAT_IN = ("f16", "bf16", "f32")
_INT_IN = ("i8",)


def dot_mode() -> str:
    mode = os.environ.get(ENV, "auto").strip().lower() or "auto"
    if mode not in ("auto", "fma", "simdgroup"):
        raise ValueError(f"{ENV}={mode!r}: expected fma, simdgroup or auto")
    return mode


@lowers("tt.dot")
def dot(ctx: LoweringContext, op: Op):
    if len(op.operands) < 3:
        ctx.error(op, "tt.dot without an accumulator operand")
    a, b, c = op.operands[:3]
    d = op.results[0]
    ta, tb, tc, td = (elem_of(v.type) for v in (a, b, c, d))
    for t in (ta, tb, tc, td):
        if not isinstance(t, ScalarType):
            ctx.error(op, f"dot of {t} is not supported")
    if ta.name != tb.name and not (ta.is_fp8 and tb.is_fp8):  # Triton allows any fp8 x fp8 pair
        ctx.error(op, f"dot operands of different types ({ta} x {tb}) are not supported")
    if ta.name == "f64":
        if td.name != "f64" or tc.name != "f64":
            ctx.error(op, f"dot of {ta} inputs into {td} is not supported (use a float64 accumulator)")
        is_int = False
    elif ta.name in _FLOAT_IN or ta.is_fp8:
        if not td.is_float or td.name not in _FLOAT_IN:
            ctx.error(op, f"dot of {ta} inputs into {td} is not supported (use a float accumulator)")
        is_int = False
    elif ta.name in _INT_IN:
        if td.is_float:
            ctx.error(op, f"dot of {ta} inputs into {td} is not supported (use an int32 accumulator)")
        is_int = True
    else:
        ctx.error(op, f"dot of {ta} inputs is not supported by the Metal backend "
                      "(fp32, fp16, bf16 and int8 are)")
    if tc.name != td.name:
        ctx.error(op, f"dot accumulator {tc} differs from the result type {td}")
    la, lb, lc, ld = (ctx.layout(v) for v in (a, b, c, d))
    if not lc.same_as(ld):
        ctx.error(op, "dot accumulator and result have different layouts")
    rank = lc.rank
    if rank not in (2, 3):
        ctx.error(op, f"dot of rank-{rank} tensors is not supported")
    K = la.shape[-1]
    if lb.shape[-2] != K or la.shape[-2] != lc.shape[-2] or lb.shape[-1] != lc.shape[-1] \
            or la.shape[:-2] != lc.shape[:-2] or lb.shape[:-2] != lc.shape[:-2]:
        ctx.error(op, f"dot shapes do not agree: {la.shape} x {lb.shape} -> {lc.shape}")
    try:
        mode = dot_mode()
    except ValueError as exc:
        ctx.error(op, str(exc))

    M, N = lc.shape[-2], lc.shape[-1]
    desc = f"tt.dot {'x'.join(map(str, lc.shape[:-2] + (M, N, K)))} ({ta} x {tb} -> {td})"
    path, plan = ("f64", None) if ta.name == "f64" else _path(ctx, op, mode, is_int)
    if path == "f64":
        _lower_f64(ctx, a, b, c, d, K, desc)
    elif path == "carried":
        _lower_carried(ctx, ctx.carried_dots[id(op)], a, b, d, desc)
    elif path == "simdgroup":
        _lower_simdgroup(ctx, a, b, c, d, M, N, K, desc)
    elif path == "registers":
        _lower_fma_registers(ctx, a, b, c, d, plan, is_int, desc)
    else:
        _lower_fma_scratch(ctx, a, b, c, d, K, is_int, desc)
    if path not in ("carried", "simdgroup") and not is_int:  # simdgroup_matrix work is counted apart
        ctx.count_flops(2 * K * len(lc.owned_regs()))


def _path(ctx: LoweringContext, op: Op, mode: str, is_int: bool):
    """(path, register plan): "carried" (accumulator in simdgroup registers across a loop),
    "simdgroup", "registers" (FMA, operands matched in registers) or "scratch" (FMA, operands
    through threadgroup memory)."""
    a, b, c = op.operands[:3]
    if id(op) in ctx.carried_dots:
        return "carried", None
    la, lb, lc = a.layout, b.layout, c.layout
    M, N, K = lc.shape[-2], lc.shape[-1], la.shape[-1]
    if mode != "fma" and _simdgroup_ok(lc.rank, M, N, K, is_int, scratch_limit(ctx)):
        return "simdgroup", None
    plan = _register_plan(la, lb, lc, K)
    if plan is not None and len(lc.owned_regs()) * K <= MAX_UNROLLED_FMAS:
        return "registers", plan
    return "scratch", None


def _stages_from_source(ctx: LoweringContext, user: Op, v: Value) -> bool:
    """Hook (lowering.STAGES_FROM_SOURCE): this tt.dot reads operand v only through
    _pre_conversion, so v's conversion need not be lowered."""
    if user.name != "tt.dot" or len(user.operands) < 3 or user.operands[2] is v:
        return False
    if not any(x is v for x in user.operands[:2]):
        return False
    if not all(x.is_tensor and x.layout is not None for x in user.operands[:3]):
        return False
    ta = elem_of(user.operands[0].type)
    if isinstance(ta, ScalarType) and ta.name == "f64":
        return False  # the software-float64 dot reads its operands in registers (_lower_f64)
    try:
        mode = dot_mode()
        path, _ = _path(ctx, user, mode, isinstance(ta, ScalarType) and ta.name in _INT_IN)
    except Exception:  # anything unusual: lower the conversion, let the dot report it
        return False
    return path != "registers" and _pre_conversion(ctx, v) is not v


STAGES_FROM_SOURCE.append(_stages_from_source)


# ---- shared helpers ---------------------------------------------------------------------------
def _simdgroup_plan(M: int, N: int, K: int, limit: int | None = None) -> tuple[int, int] | None:
    """(KC, RB): A and B are staged KC columns/rows of K at a time ((M + N) * KC floats) and D
    is read back RB rows at a time (RB * N floats), both within `limit` (scratch_limit; None:
    lowering.SCRATCH_LIMIT); the largest chunks that fit (fewest barriers). None when not even
    8 fits."""
    limit = lowering.SCRATCH_LIMIT if limit is None else limit
    kc = K
    while kc >= 8 and (kc % 8 or K % kc or (M + N) * kc * 4 > limit):
        kc -= 8
    rb = M
    while rb >= 8 and (rb % 8 or M % rb or rb * N * 4 > limit):
        rb -= 8
    if kc < 8 or rb < 8:
        return None
    return kc, rb


def _simdgroup_ok(rank: int, M: int, N: int, K: int, is_int: bool, limit: int) -> bool:
    return (rank == 2 and not is_int and M % 8 == 0 and N % 8 == 0 and K % 8 == 0
            and _simdgroup_plan(M, N, K, limit) is not None)


def _wide(ctx: LoweringContext, v: Value, r: int, is_int: bool) -> str:
    x = ctx.expr(v, r)
    if is_int:
        return f"(int){x}"
    t = elem_of(v.type)
    if t.is_fp8:  # fp8 storage: widened exactly through its conversion helper
        return fp8_to_float(ctx, t, x)
    return x if t.name == "f32" else f"(float){x}"


def _stage(ctx: LoweringContext, v: Value, buf: str, base: int, is_int: bool) -> None:
    """Owners of v's elements write them, widened, at base + row-major index in buf."""
    lay = ctx.layout(v)
    e = ctx.e

    def body():
        for r in lay.owned_regs():
            idx = row_major(lay.shape, ctx.coord(lay, r))
            e.line(f"{buf}[{f'{base}u + ' if base else ''}{idx}] = {_wide(ctx, v, r, is_int)};")

    owner = ctx.owner_predicate(lay)
    with e.guarded(owner):
        body()


def _result(td: ScalarType, x: str, is_int: bool) -> str:
    """The float/int sum rounded once to the result type."""
    if is_int:
        return x if td.name == "i32" else f"({td.msl()}){x}"
    return x if td.name == "f32" else f"({td.msl()})({x})"


def _define_result(ctx: LoweringContext, d: Value, lay: Layout, own_expr) -> None:
    """Define d's registers; registers that duplicate a lower one (zero register basis) copy
    its value instead of computing it again."""
    dup = lay.reg_dup_mask
    if not dup:
        ctx.define(d, own_expr, hint=ctx.hint(d, "dot"))
        return
    owned = {r: own_expr(r) for r in range(lay.num_regs) if not (r & dup)}
    ctx.define(d, lambda r: owned[r & ~dup], hint=ctx.hint(d, "dot"))


# ---- FMA, registers matched at compile time ---------------------------------------------------
def _proj_a(cc: tuple, k: int) -> tuple:
    return cc[:-1] + (k,)  # (.., m, n) -> (.., m, k)


def _proj_b(cc: tuple, k: int) -> tuple:
    return cc[:-2] + (k, cc[-1])  # (.., m, n) -> (.., k, n)


def _thread_parts_agree(src: Layout, dst: Layout, proj) -> bool:
    for sb, db in ((src.lane_bases, dst.lane_bases), (src.warp_bases, dst.warp_bases)):
        zero = (0,) * src.rank
        for i in range(max(len(sb), len(db))):
            s = tuple(sb[i]) if i < len(sb) else zero
            t = proj(tuple(db[i]), 0) if i < len(db) else zero
            if s != t:
                return False
    return True


def _register_plan(la: Layout, lb: Layout, lc: Layout, K: int):
    """For each C register, the (A register, B register) pairs over k in order, or None when
    some operand element lives in another thread."""
    if not (_thread_parts_agree(la, lc, _proj_a) and _thread_parts_agree(lb, lc, _proj_b)):
        return None
    plan = []
    for r in range(lc.num_regs):
        cc = lc.reg_coord(r)
        pairs = []
        for k in range(K):
            ra = la.find_register(_proj_a(cc, k))
            rb = lb.find_register(_proj_b(cc, k))
            if ra is None or rb is None:
                return None
            pairs.append((ra, rb))
        plan.append(pairs)
    return plan


def _lower_fma_registers(ctx: LoweringContext, a, b, c, d, plan, is_int: bool, desc: str) -> None:
    e = ctx.e
    lc = ctx.layout(c)
    td = elem_of(d.type)
    e.comment(f"{desc}: FMA from registers")
    base = e.fresh("dacc")
    acc_t = "int" if is_int else "float"
    # Widen each operand register once (half/bfloat/char -> float/int).
    wa, wb = {}, {}
    for v, used, out, tag in ((a, {p[0] for ps in plan for p in ps}, wa, "wa"),
                              (b, {p[1] for ps in plan for p in ps}, wb, "wb")):
        native = not is_int and elem_of(v.type).name == "f32"
        for r in sorted(used):
            if native:
                out[r] = ctx.expr(v, r)
            else:
                nm = f"{base}_{tag}{r}"
                e.line(f"{acc_t} {nm} = {_wide(ctx, v, r, is_int)};")
                out[r] = nm
    owned = [r for r in range(lc.num_regs) if not (r & lc.reg_dup_mask)]
    for r in owned:
        init = _wide(ctx, c, r, is_int)
        e.line(f"{acc_t} {base}_{r} = {init};")
    K = len(plan[0]) if plan else 0
    for k in range(K):  # k outer: independent accumulators between dependent steps
        for r in owned:
            ra, rb = plan[r][k]
            acc = f"{base}_{r}"
            if is_int:
                e.line(f"{acc} = (int)((uint){acc} + (uint)({wa[ra]} * {wb[rb]}));")
            else:
                e.line(f"{acc} = fma({wa[ra]}, {wb[rb]}, {acc});")
    _define_result(ctx, d, lc, lambda r: _result(td, f"{base}_{r}", is_int))


# ---- FMA, operands through threadgroup memory --------------------------------------------------
def _fma_chunk(M: int, N: int, K: int, batch: int, limit: int) -> int | None:
    """The K chunk: the largest divisor of K whose A (.., M, kc) and B (.., kc, N) slices fit
    `limit` together (fewest barriers), None when not even one column fits."""
    for kc in range(K, 0, -1):
        if K % kc == 0 and batch * (M + N) * kc * 4 <= limit:
            return kc
    return None


def _lower_fma_scratch(ctx: LoweringContext, a, b, c, d, K: int, is_int: bool, desc: str) -> None:
    e = ctx.e
    la, lb, lc = ctx.layout(a), ctx.layout(b), ctx.layout(c)
    td = elem_of(d.type)
    acc_t = "int" if is_int else "float"
    M, N = lc.shape[-2], lc.shape[-1]
    batch = _numel(lc.shape[:-2])
    kc = _fma_chunk(M, N, K, batch, scratch_limit(ctx))
    if kc is None:  # not even one K column of A and B fits: ThreadgroupMemoryError
        ctx.scratch(batch * (M + N) * 4, acc_t)
    a_src, b_src = _pre_conversion(ctx, a), _pre_conversion(ctx, b)  # each element written once
    sa, sb = list(la.shape), list(lb.shape)
    sa[-1] = sb[-2] = kc
    na = _numel(sa)
    buf = ctx.scratch((na + _numel(sb)) * 4, acc_t)
    e.comment(f"{desc}: FMA with operands through threadgroup memory"
              + (f", K staged {kc} at a time" if kc < K else ""))
    base = e.fresh("dacc")
    owned = [r for r in range(lc.num_regs) if not (r & lc.reg_dup_mask)]
    for r in owned:
        e.line(f"{acc_t} {base}_{r} = {_wide(ctx, c, r, is_int)};")
    kv = e.fresh("k")
    for k0 in range(0, K, kc):
        ctx.barrier()  # earlier readers of the scratch (other ops, the previous chunk) are done
        _stage_chunk(ctx, a_src, buf, 0, la.rank - 1, k0, kc, is_int)
        _stage_chunk(ctx, b_src, buf, na, lb.rank - 2, k0, kc, is_int)
        ctx.barrier()
        for r in owned:
            cs = ctx.coord(lc, r)
            bt = cs[:-2]
            a_row = row_major(sa, bt + [cs[-2], "0u"])
            b_col = row_major(sb, bt + ["0u", cs[-1]])
            acc = f"{base}_{r}"
            with e.block(f"for (uint {kv} = 0u; {kv} < {kc}u; ++{kv})"):
                x = f"{buf}[{a_row} + {kv}]"
                y = f"{buf}[{na}u + {b_col} + {kv} * {N}u]"
                if is_int:
                    e.line(f"{acc} = (int)((uint){acc} + (uint)({x} * {y}));")
                else:
                    e.line(f"{acc} = fma({x}, {y}, {acc});")
    _define_result(ctx, d, lc, lambda r: _result(td, f"{base}_{r}", is_int))


# ---- FMA in software float64 ---------------------------------------------------------------------
_F64_UNROLL = 256  # most fma call sites unrolled per dot; beyond, a table-driven loop
def _lower_f64(ctx: LoweringContext, a, b, c, d, K: int, desc: str) -> None:
    """f64 x f64 + f64: each D register accumulates one correctly rounded fma per k (in k
    order), from registers when the layouts allow, else through threadgroup memory (8 bytes
    per element)."""
    e = ctx.e
    la, lb, lc = ctx.layout(a), ctx.layout(b), ctx.layout(c)
    owned = [r for r in range(lc.num_regs) if not (r & lc.reg_dup_mask)]
    base = e.fresh("dacc")
    fma = fp64.call(ctx, "tmps_f64_fma", "{0}", "{1}", "{2}")
    plan = _register_plan(la, lb, lc, K)
    if plan is not None and K * len(owned) <= _F64_UNROLL:
        e.comment(f"{desc}: software float64 FMA from registers")
        for r in owned:
            e.line(f"ulong {base}_{r} = {ctx.expr(c, r)};")
        for k in range(K):
            for r in owned:
                ra, rb = plan[r][k]
                e.line(f"{base}_{r} = {fma.format(ctx.expr(a, ra), ctx.expr(b, rb), f'{base}_{r}')};")
    elif plan is not None:
        # Too many call sites to inline one fma each (compile time): the same register pairs
        # from a table, in a loop with one call site; operands and accumulators in arrays.
        e.comment(f"{desc}: software float64 FMA from registers (table-driven loop)")
        used_a = sorted({p[0] for r in owned for p in plan[r]})
        used_b = sorted({p[1] for r in owned for p in plan[r]})
        ia, ib = {r: i for i, r in enumerate(used_a)}, {r: i for i, r in enumerate(used_b)}
        entries = [x for k in range(K) for r in owned for x in (ia[plan[r][k][0]], ib[plan[r][k][1]])]
        tab = f"tmps_f64dot{sum(1 for h in ctx.state.helpers if h.startswith('tmps_f64dot'))}"
        tt = "ushort" if max(entries) < 65536 else "uint"
        ctx.e.helper(tab, f"constant {tt} {tab}[{len(entries)}] = {{{', '.join(map(str, entries))}}};")
        e.line(f"ulong {base}_a[{len(used_a)}] = {{{', '.join(ctx.expr(a, r) for r in used_a)}}};")
        e.line(f"ulong {base}_b[{len(used_b)}] = {{{', '.join(ctx.expr(b, r) for r in used_b)}}};")
        e.line(f"ulong {base}[{len(owned)}] = {{{', '.join(ctx.expr(c, r) for r in owned)}}};")
        kv, iv = e.fresh("k"), e.fresh("i")
        with e.block(f"for (uint {kv} = 0u; {kv} < {K}u; ++{kv})"):
            with e.block(f"for (uint {iv} = 0u; {iv} < {len(owned)}u; ++{iv})"):
                e.line(f"uint {iv}_t = ({kv} * {len(owned)}u + {iv}) * 2u;")
                x, y = f"{base}_a[{tab}[{iv}_t]]", f"{base}_b[{tab}[{iv}_t + 1u]]"
                e.line(f"{base}[{iv}] = {fma.format(x, y, f'{base}[{iv}]')};")
        pos = {r: i for i, r in enumerate(owned)}
        _define_result(ctx, d, lc, lambda r: f"{base}[{pos[r]}]")
        return
    else:
        na, nb = _numel(la.shape), _numel(lb.shape)
        if (na + nb) * 8 > scratch_limit(ctx):
            ctx.error(None, f"{desc}: operands are spread over threads in a way this backend can only "
                            f"handle through threadgroup memory, and they need {(na + nb) * 8} bytes "
                            f"(limit {scratch_limit(ctx)})")
        buf = ctx.scratch((na + nb) * 8, "ulong")
        e.comment(f"{desc}: software float64 FMA with operands through threadgroup memory")
        ctx.barrier()
        for v, off in ((a, 0), (b, na)):
            lay = ctx.layout(v)
            with e.guarded(ctx.owner_predicate(lay)):
                for r in lay.owned_regs():
                    idx = row_major(lay.shape, ctx.coord(lay, r))
                    e.line(f"{buf}[{f'{off}u + ' if off else ''}{idx}] = {ctx.expr(v, r)};")
        ctx.barrier()
        N = lc.shape[-1]
        kv = e.fresh("k")
        for r in owned:
            cs = ctx.coord(lc, r)
            a_row = row_major(la.shape, cs[:-2] + [cs[-2], "0u"])
            b_col = row_major(lb.shape, cs[:-2] + ["0u", cs[-1]])
            acc = f"{base}_{r}"
            e.line(f"ulong {acc} = {ctx.expr(c, r)};")
            with e.block(f"for (uint {kv} = 0u; {kv} < {K}u; ++{kv})"):
                e.line(f"{acc} = {fma.format(f'{buf}[{a_row} + {kv}]', f'{buf}[{na}u + {b_col} + {kv} * {N}u]', acc)};")
    _define_result(ctx, d, lc, lambda r: f"{base}_{r}")


def _numel(shape) -> int:
    n = 1
    for s in shape:
        n *= s
    return n


# ---- simdgroup_matrix 8x8 ---------------------------------------------------------------------
def _warp_grid(TM: int, TN: int, W: int) -> tuple[int, int]:
    """SIMD-groups as a WM x WN grid over the TM x TN output tiles (WM | TM, WN | TN, WM*WN <= W):
    the most SIMD-groups in use, then the fewest tile loads per K step."""
    best = None
    wm = 1
    while wm <= W:
        wn = 1
        while wm * wn <= W:
            if TM % wm == 0 and TN % wn == 0:
                pm, pn = TM // wm, TN // wn
                key = (pm * pn, pm + pn)
                if best is None or key < best[0]:
                    best = (key, wm, wn)
            wn *= 2
        wm *= 2
    return best[1], best[2]


def _static_dim(lay: Layout, d: int) -> bool:
    """True when coordinate d of every register is compile-time (no lane/warp part)."""
    return not any(bb[d] for bb in lay.lane_bases) and not any(bb[d] for bb in lay.warp_bases)


def _stage_chunk(ctx: LoweringContext, v: Value, buf: str, base: int, kdim: int, k0: int, kc: int,
                 is_int: bool = False) -> None:
    """Owners write v's elements whose coordinate along kdim is in [k0, k0 + kc), widened to
    float (int), at base + row-major index in the (kc along kdim) chunk."""
    lay = ctx.layout(v)
    e = ctx.e
    static = _static_dim(lay, kdim)
    shape = list(lay.shape)
    shape[kdim] = kc
    if k0 == 0 and kc == lay.shape[kdim]:  # the whole tensor at once: no window to test
        _stage_whole(ctx, v, buf, base, is_int)
        return

    def body():
        for r in lay.owned_regs():
            cs = ctx.coord(lay, r)
            if static:
                k = lay.reg_coord(r)[kdim]
                if not k0 <= k < k0 + kc:
                    continue
                cs[kdim] = f"{k - k0}u"
                guard = None
            else:
                cs[kdim] = f"(({cs[kdim]}) - {k0}u)"
                guard = f"{cs[kdim]} < {kc}u"  # unsigned: also false below k0
            line = f"{buf}[{f'{base}u + ' if base else ''}{row_major(shape, cs)}] = {_wide(ctx, v, r, is_int)};"
            e.line(f"if ({guard}) {line}" if guard else line)

    owner = ctx.owner_predicate(lay)
    with e.guarded(owner):
        body()


def _stage_whole(ctx: LoweringContext, v: Value, buf: str, base: int, is_int: bool) -> None:
    """Owners write all of v's elements, widened, at base + row-major index; consecutive
    elements of a thread as one vector (base a multiple of 4: a vector's alignment)."""
    lay = ctx.layout(v)
    static, mask = layout_parts(lay) if base % 4 == 0 else ([None] * lay.num_regs, None)
    with ctx.e.guarded(ctx.owner_predicate(lay)):
        write_registers(ctx, buf, "int" if is_int else "float", lay.owned_regs(), static, mask,
                        lambda r: f"{f'{base}u + ' if base else ''}{row_major(lay.shape, ctx.coord(lay, r))}",
                        lambda r: _wide(ctx, v, r, is_int))


def _read_whole(ctx: LoweringContext, lay: Layout, buf: str) -> dict[int, str]:
    """Owned register -> expression of its element at the row-major index of float array buf
    (the tile's shape), consecutive elements of a thread read as one vector (emitted here)."""
    regs = [r for r in range(lay.num_regs) if not r & lay.reg_dup_mask]
    return read_registers(ctx, buf, "float", regs, *layout_parts(lay),
                          lambda r: row_major(lay.shape, ctx.coord(lay, r)))


def _pre_conversion(ctx: LoweringContext, v: Value) -> Value:
    """The same tensor before its conversion to the dot-operand layout, when that is a
    convert_layout or a local_alloc/local_load pair of a distributed tensor: staging it from
    there writes each element once (dot-operand layouts replicate A across the N lanes and B
    across the M lanes), and then the conversion itself is not lowered (_stages_from_source).
    Falls back to v itself."""
    op = v.owner
    src = None
    if op is not None and op.name == "ttg.convert_layout":
        src = op.operands[0]
    elif op is not None and op.name == "ttg.local_load" and op.operands[0].owner is not None:
        alloc = op.operands[0].owner
        if alloc.name == "ttg.local_alloc" and alloc.operands:
            src = alloc.operands[0]
    if src is None or src.layout is None or src.id not in ctx.names or src.type.shape != v.type.shape \
            or elem_of(src.type) != elem_of(v.type):
        return v
    return src


def _lower_simdgroup(ctx: LoweringContext, a, b, c, d, M: int, N: int, K: int, desc: str) -> None:
    e = ctx.e
    a, b = _pre_conversion(ctx, a), _pre_conversion(ctx, b)
    lc = ctx.layout(c)
    td = elem_of(d.type)
    W = ctx.num_warps
    TM, TN = M // 8, N // 8
    WM, WN = _warp_grid(TM, TN, W)
    PM, PN = TM // WM, TN // WN
    KC, RB = _simdgroup_plan(M, N, K, scratch_limit(ctx))
    buf = ctx.scratch(max((M + N) * KC, RB * N) * 4, "float")
    e.comment(f"{desc}: simdgroup_matrix 8x8, SIMD-groups {WM}x{WN}, {PM}x{PN} tiles each, "
              f"K staged {KC} at a time, D read back {RB} rows at a time")
    p = e.fresh("mm")
    e.line(f"uint {p}_m = (tmps_warp / {WN}u) * {PM * 8}u;")
    e.line(f"uint {p}_n = (tmps_warp % {WN}u) * {PN * 8}u;")
    accs = [[f"{p}_acc{i}_{j}" for j in range(PN)] for i in range(PM)]
    for row in accs:
        for acc in row:
            e.line(f"simdgroup_float8x8 {acc} = make_filled_simdgroup_matrix<float, 8, 8>(0.0f);")
    # SIMD-groups beyond the WM x WN grid have no tiles; the condition is uniform per SIMD-group,
    # so every simdgroup_* call still runs on all 32 lanes.
    active = f"tmps_warp < {WM * WN}u" if WM * WN < W else None

    def for_active(part):
        with e.guarded(active):
            part()

    def multiply():
        with e.block(f"for (uint {p}_k = 0u; {p}_k < {KC}u; {p}_k += 8u)"):
            for i in range(PM):
                e.line(f"simdgroup_float8x8 {p}_a{i};")
                e.line(f"simdgroup_load({p}_a{i}, {buf}, {KC}, ulong2({p}_k, {p}_m + {8 * i}u));")
            for j in range(PN):
                e.line(f"simdgroup_float8x8 {p}_b{j};")
                e.line(f"simdgroup_load({p}_b{j}, {buf} + {M * KC}, {N}, ulong2({p}_n + {8 * j}u, {p}_k));")
            for i in range(PM):
                for j in range(PN):
                    e.line(f"simdgroup_multiply_accumulate({accs[i][j]}, {p}_a{i}, {p}_b{j}, {accs[i][j]});")

    for k0 in range(0, K, KC):
        ctx.barrier()  # earlier readers of the scratch (other ops, the previous chunk) are done
        _stage_chunk(ctx, a, buf, 0, 1, k0, KC)
        _stage_chunk(ctx, b, buf, M * KC, 0, k0, KC)
        ctx.barrier()
        for_active(multiply)

    def read(r: int, r0: int) -> str:
        cs = ctx.coord(lc, r)
        cs[0] = f"(({cs[0]}) - {r0}u)" if r0 else cs[0]
        return _result(td, f"{_wide(ctx, c, r, False)} + {buf}[{row_major((RB, N), cs)}]", False)

    def store(r0: int):
        def part():
            for i in range(PM):
                with e.block(f"if ({p}_m + {8 * i}u - {r0}u < {RB}u)") if RB < M else nullcontext():
                    for j in range(PN):
                        e.line(f"simdgroup_store({accs[i][j]}, {buf}, {N}, "
                               f"ulong2({p}_n + {8 * j}u, {p}_m + {8 * i}u - {r0}u));")
        return part

    if RB == M:
        ctx.barrier()  # every SIMD-group has read A and B before D overwrites them
        for_active(store(0))
        ctx.barrier()
        got = _read_whole(ctx, lc, buf)
        _define_result(ctx, d, lc, lambda r: _result(td, f"{_wide(ctx, c, r, False)} + {got[r]}", False))
        return
    # D in bands of RB rows: SIMD-groups store the tiles of the band, threads pick up the
    # registers whose row is in it (rows are runtime values when lanes/warps span M).
    names = ctx.declare(d, hint=ctx.hint(d, "dot"))
    static = _static_dim(lc, 0)
    for r0 in range(0, M, RB):
        ctx.barrier()
        for_active(store(r0))
        ctx.barrier()
        for r in range(lc.num_regs):
            if static:
                if r0 <= lc.reg_coord(r)[0] < r0 + RB:
                    e.line(f"{names[r]} = {read(r, r0)};")
            else:
                row = ctx.coord(lc, r)[0]
                e.line(f"if (({row}) - {r0}u < {RB}u) {names[r]} = {read(r, r0)};")


# ---- accumulators carried in simdgroup registers across an scf.for ------------------------------
# A loop-carried accumulator whose only in-loop use is the C operand of one simdgroup-eligible
# tt.dot whose result is yielded back in the same position stays in simdgroup_float8x8 registers
# over the whole loop: staged into matrices once before the loop, read back once after it
# (control_flow.scf_for asks the LoopCarrier registered below). Anything not proven here keeps the per-dot
# round trip through threadgroup memory.
# The records live in LoweringContext.carried_dots: dot op id -> carried tile record.


def _loop_dot_ok(ctx: LoweringContext, dop: Op) -> bool:
    """The dot lowers to simdgroup matrices with an fp32 accumulator, D read back in one band."""
    if len(dop.operands) < 3 or dop.name != "tt.dot":
        return False
    a, b, c = dop.operands[:3]
    d = dop.results[0]
    if not all(v.is_tensor and v.layout is not None for v in (a, b, c, d)):
        return False
    ta, tb, tc, td = (elem_of(v.type) for v in (a, b, c, d))
    if not all(isinstance(t, ScalarType) for t in (ta, tb, tc, td)):
        return False
    if ta.name != tb.name or ta.name not in _FLOAT_IN or tc.name != "f32" or td.name != "f32":
        return False
    try:
        if dot_mode() == "fma":
            return False
    except ValueError:
        return False
    lc = c.layout
    if lc.rank != 2 or not lc.same_as(d.layout):
        return False
    M, N, K = lc.shape[0], lc.shape[1], a.layout.shape[-1]
    if tuple(a.layout.shape) != (M, K):
        return False
    if tuple(b.layout.shape) != (K, N):
        return False
    if not _simdgroup_ok(2, M, N, K, False, scratch_limit(ctx)):
        return False
    return _simdgroup_plan(M, N, K, scratch_limit(ctx))[1] == M  # the whole M x N accumulator fits the scratch


def loop_accumulators(ctx: LoweringContext, op: Op) -> dict[int, Op]:
    """Positions i of scf.for `op`'s carried values that can live in simdgroup registers ->
    the tt.dot that accumulates into them."""
    body = op.regions[0].blocks[0]
    if not body.ops or body.ops[-1].name != "scf.yield":
        return {}
    yld = body.ops[-1]
    found = {}
    for i, arg in enumerate(body.args[1:]):
        if arg.uses != 1 or i >= len(yld.operands):
            continue
        users = [o for o in body.ops if o.name == "tt.dot" and len(o.operands) >= 3 and o.operands[2] is arg]
        if len(users) != 1:
            continue  # the single use is elsewhere (or nested in a region)
        dop = users[0]
        d = dop.results[0]
        if d.uses != 1 or yld.operands[i] is not d or any(d is v for v in op.operands):
            continue
        if _loop_dot_ok(ctx, dop):
            found[i] = dop
    return found


def _geometry(ctx: LoweringContext, M: int, N: int, K: int) -> dict:
    W = ctx.num_warps
    TM, TN = M // 8, N // 8
    WM, WN = _warp_grid(TM, TN, W)
    KC, _ = _simdgroup_plan(M, N, K, scratch_limit(ctx))
    return {"M": M, "N": N, "K": K, "WM": WM, "WN": WN, "PM": TM // WM, "PN": TN // WN, "KC": KC,
            "active": f"tmps_warp < {WM * WN}u" if WM * WN < W else None}


def _for_active(ctx: LoweringContext, g: dict, part) -> None:
    with ctx.e.guarded(g["active"]):
        part()


def _tile_origin(ctx: LoweringContext, g: dict) -> str:
    p = ctx.e.fresh("mm")
    ctx.e.line(f"uint {p}_m = (tmps_warp / {g['WN']}u) * {g['PM'] * 8}u;")
    ctx.e.line(f"uint {p}_n = (tmps_warp % {g['WN']}u) * {g['PN'] * 8}u;")
    return p


def begin_loop_accumulator(ctx: LoweringContext, dop: Op, init: Value) -> list[str]:
    """Before the loop: stage the init accumulator into this SIMD-group's simdgroup matrices,
    which become the loop's carried variables. Returns their names (MSL-visible after the loop)."""
    e = ctx.e
    a, c = dop.operands[0], dop.operands[2]
    M, N = ctx.layout(c).shape
    K = ctx.layout(a).shape[-1]
    g = _geometry(ctx, M, N, K)
    buf = ctx.scratch(max((M + N) * g["KC"], M * N) * 4, "float")
    e.comment(f"tt.dot {M}x{N}x{K}: accumulator carried in simdgroup_matrix registers across the loop")
    p = _tile_origin(ctx, g)
    accs = [[f"{p}_acc{i}_{j}" for j in range(g["PN"])] for i in range(g["PM"])]
    fill = _uniform(ctx, init)
    for row in accs:
        for acc in row:
            e.line(f"simdgroup_float8x8 {acc} = make_filled_simdgroup_matrix<float, 8, 8>({fill or '0.0f'});")
    ctx.carried_dots[id(dop)] = {"g": g, "p": p, "accs": accs, "buf": buf}
    if fill is not None:  # tl.zeros / a splat: no staging needed
        return [x for row in accs for x in row]
    ctx.barrier()
    _stage(ctx, init, buf, 0, False)
    ctx.barrier()

    def load():
        for i in range(g["PM"]):
            for j in range(g["PN"]):
                e.line(f"simdgroup_load({accs[i][j]}, {buf}, {N}, ulong2({p}_n + {8 * j}u, {p}_m + {8 * i}u));")

    _for_active(ctx, g, load)
    return [x for row in accs for x in row]


def _uniform(ctx: LoweringContext, v: Value) -> str | None:
    """The single MSL expression of every element of v when v is a splat (of a scalar, which is
    the same in all threads) or a splat constant; else None."""
    op = v.owner
    if op is None or op.name not in ("tt.splat", "arith.constant"):
        return None
    xs = set(ctx.exprs(v))
    return xs.pop() if len(xs) == 1 else None


def end_loop_accumulator(ctx: LoweringContext, dop: Op, result: Value) -> None:
    """After the loop: store the matrices to scratch, read them back into result's registers."""
    rec = ctx.carried_dots.pop(id(dop))
    g, p, accs, buf = rec["g"], rec["p"], rec["accs"], rec["buf"]
    e = ctx.e
    lay = ctx.layout(result)

    def store():
        for i in range(g["PM"]):
            for j in range(g["PN"]):
                e.line(f"simdgroup_store({accs[i][j]}, {buf}, {g['N']}, ulong2({p}_n + {8 * j}u, {p}_m + {8 * i}u));")

    ctx.barrier()  # every SIMD-group is done with the loop's A and B tiles
    _for_active(ctx, g, store)
    ctx.barrier()
    got = _read_whole(ctx, lay, buf)
    _define_result(ctx, result, lay, lambda r: got[r])


def _lower_carried(ctx: LoweringContext, rec: dict, a, b, d, desc: str) -> None:
    """Inside the loop: stage A and B only; multiply into the carried matrices."""
    e = ctx.e
    g, p, accs, buf = rec["g"], rec["p"], rec["accs"], rec["buf"]
    M, N, K, KC = g["M"], g["N"], g["K"], g["KC"]
    a, b = _pre_conversion(ctx, a), _pre_conversion(ctx, b)
    e.comment(f"{desc}: simdgroup_matrix 8x8 into the loop-carried accumulator, K staged {KC} at a time")
    k = e.fresh("kk")

    def multiply():
        with e.block(f"for (uint {k} = 0u; {k} < {KC}u; {k} += 8u)"):
            for i in range(g["PM"]):
                e.line(f"simdgroup_float8x8 {k}_a{i};")
                e.line(f"simdgroup_load({k}_a{i}, {buf}, {KC}, ulong2({k}, {p}_m + {8 * i}u));")
            for j in range(g["PN"]):
                e.line(f"simdgroup_float8x8 {k}_b{j};")
                e.line(f"simdgroup_load({k}_b{j}, {buf} + {M * KC}, {N}, ulong2({p}_n + {8 * j}u, {k}));")
            for i in range(g["PM"]):
                for j in range(g["PN"]):
                    e.line(f"simdgroup_multiply_accumulate({accs[i][j]}, {k}_a{i}, {k}_b{j}, {accs[i][j]});")

    for k0 in range(0, K, KC):
        ctx.barrier()
        _stage_chunk(ctx, a, buf, 0, 1, k0, KC)
        _stage_chunk(ctx, b, buf, M * KC, 0, k0, KC)
        ctx.barrier()
        _for_active(ctx, g, multiply)
    # d is only yielded back into the carried matrices (proven by loop_accumulators).
    ctx.bind(d, [x for row in accs for x in row])


LOOP_CARRIERS.append(LoopCarrier(loop_accumulators, begin_loop_accumulator, end_loop_accumulator))
