"""Pointers and memory: splat, make_range, program ids, addptr, load/store, atomics."""

from __future__ import annotations

from contextlib import contextmanager

from ..abi import LOCK_WORDS
from ..axis_info import AxisAnalysis, vector_runs
from ..coherence import device_ptr
from ..ir import Op
from ..lowering import LoweringContext, lowers
from ..mslib import fp64, macros
from ..mslib.registry import LIB, use
from ..provenance import carried_values, parameter_of
from ..types import PointerType, ScalarType, TensorType, elem_of


def _axis(ctx: LoweringContext, op: Op) -> str:
    a = op.int_attr("axis")
    if a not in (0, 1, 2):
        ctx.error(op, f"program axis must be 0, 1 or 2, got {a}")
    return "xyz"[a]


@lowers("tt.get_program_id")
def get_program_id(ctx: LoweringContext, op: Op):
    ctx.define(op.results[0], f"(int)tmps_pid.{_axis(ctx, op)}", hint="pid")


@lowers("tt.get_num_programs")
def get_num_programs(ctx: LoweringContext, op: Op):
    ctx.define(op.results[0], f"(int)tmps_npid.{_axis(ctx, op)}", hint="npid")


@lowers("tt.splat")
def splat(ctx: LoweringContext, op: Op):
    ctx.bind(op.results[0], ctx.expr(op.operands[0]))


@lowers("tt.make_range")
def make_range(ctx: LoweringContext, op: Op):
    res = op.results[0]
    lay = ctx.layout(res)
    start = op.int_attr("start") or 0

    def reg(r: int) -> str:
        c = ctx.coord(lay, r)[0]
        return f"(int)({c})" if start == 0 else f"{start} + (int)({c})"

    ctx.define(res, reg, hint=ctx.hint(res, "range"))


@lowers("tt.addptr")
def addptr(ctx: LoweringContext, op: Op):
    p, off = op.operands
    res = op.results[0]
    # C pointer arithmetic: the offset keeps its width (int offsets are sign-extended to 64 bit).
    ctx.define(res, lambda r: f"{ctx.expr(p, r)} + {ctx.expr(off, r)}", hint=ctx.hint(res, "ptr"))


@lowers("tt.int_to_ptr")
def int_to_ptr(ctx: LoweringContext, op: Op):
    # A 64-bit address (e.g. a pointer table loaded as int64) -> a device pointer. Metal casts
    # scalar 64-bit integers to pointers (not vectors); 32-bit sources are widened first.
    (src,) = op.operands
    res = op.results[0]
    pty = ctx.msl_type(res)
    ctx.define(res, lambda r: f"(({pty})(ulong)({ctx.expr(src, r)}))", hint=ctx.hint(res, "ptr"))


@lowers("tt.ptr_to_int")
def ptr_to_int(ctx: LoweringContext, op: Op):
    (src,) = op.operands
    res = op.results[0]
    ity = ctx.msl_type(res)
    ctx.define(res, lambda r: f"(({ity})(ulong)({ctx.expr(src, r)}))", hint=ctx.hint(res, "addr"))


def _pointee(ctx: LoweringContext, ptr_value) -> ScalarType:
    pt = elem_of(ptr_value.type)
    if not isinstance(pt, PointerType) or not isinstance(pt.pointee, ScalarType):
        ctx.error(None, f"expected a tensor of pointers to scalars, got {ptr_value.type}")
    return pt.pointee


def _vector_runs(ctx: LoweringContext, ptr, ety: ScalarType, regs: list[int]) -> tuple[dict[int, int], set[int]]:
    """(first register -> run length, the runs' first registers whose alignment is tested at run
    time) for the register runs that the axis analysis proves contiguous; a run not proven
    aligned is a vector access only when its address is (_aligned), else scalar accesses."""
    if not isinstance(ptr.type, TensorType) or ety.bits % 8 or ety.bits > 64:
        return {}, set()
    if ctx.axis_analysis is None:
        ctx.axis_analysis = AxisAnalysis(ctx.func)
    ana = ctx.axis_analysis
    unaligned: set[int] = set()
    return vector_runs(ctx.layout(ptr), ana.get(ptr), ety.bits // 8, regs, unaligned=unaligned), unaligned


def _run_conditions(ctx: LoweringContext, ptr, mask, ety: ScalarType, r0: int, k: int,
                    unaligned: set[int]) -> list[str]:
    """What must hold for registers r0..r0+k-1 to be one vector access: every lane of the run
    unmasked, and the address aligned when the analysis could not prove it."""
    conds = [ctx.expr(mask, r0 + i) for i in range(k)] if mask is not None else []
    if r0 in unaligned:
        conds.append(f"(((ulong)({ctx.expr(ptr, r0)})) & {k * ety.bits // 8 - 1}ul) == 0ul")
    return conds


def _deref(p: str) -> str:
    return f"*{p}" if p.isidentifier() else f"*({p})"


def _all(conds: list[str]) -> str:
    return " && ".join(f"({c})" for c in conds)


@contextmanager
def _accesses_of(ctx: LoweringContext, ptr):
    """Marks the lines emitted inside as accesses through the kernel parameter `ptr` derives
    from (provenance.py), for memcheck's report; no mark when that is not one parameter."""
    if ctx.carried is None:
        ctx.carried = carried_values(ctx.func)
    param = parameter_of(ctx.func, ctx.carried, ptr)
    if param is None:
        yield
        return
    ctx.e.line(f"// @buffer {param}")
    yield
    ctx.e.line("// @buffer -")


@lowers("tt.load")
def load(ctx: LoweringContext, op: Op):
    ptr = op.operands[0]
    mask = op.operands[1] if len(op.operands) > 1 else None
    other = op.operands[2] if len(op.operands) > 2 else None
    res = op.results[0]
    if not isinstance(elem_of(ptr.type), PointerType):
        ctx.error(op, "loads through block pointers / descriptors are not supported yet")
    ety = _pointee(ctx, ptr)
    zero = ctx.literal(0, ety)

    def reg(r: int) -> str:
        load_expr = _deref(ctx.expr(ptr, r))
        if mask is None:
            return load_expr
        alt = ctx.expr(other, r) if other is not None else zero
        return f"{ctx.expr(mask, r)} ? {load_expr} : {alt}"

    with _accesses_of(ctx, ptr):  # marks the accesses for memcheck
        runs, unaligned = _vector_runs(ctx, ptr, ety, list(range(ctx.num_regs(ptr))))
        if not runs:
            ctx.define(res, reg, hint=ctx.hint(res, "ld"))
            return
        e = ctx.e
        names = ctx.declare(res, init=[zero] * ctx.num_regs(res), hint=ctx.hint(res, "ld"))
        scalars = [r for r in range(len(names)) if r not in runs and not any(s < r < s + k for s, k in runs.items())]
        for r in scalars:
            e.line(f"{names[r]} = {reg(r)};")
        for r0, k in runs.items():
            vt = f"{ety.msl()}{k}"
            tmp = e.fresh("vld")
            # One vector access for the run; when some lane of the run is masked off, per-register
            # scalar accesses (a vector access could touch memory the mask protects).
            vec = [f"{vt} {tmp} = *({device_ptr('const ' + vt, ctx.state.coherent)})({ctx.expr(ptr, r0)});"]
            vec += [f"{names[r0 + i]} = {tmp}.{'xyzw'[i]};" for i in range(k)]
            conds = _run_conditions(ctx, ptr, mask, ety, r0, k, unaligned)
            if not conds:
                with e.block(""):
                    for ln in vec:
                        e.line(ln)
                continue
            with e.block(f"if ({_all(conds)})"):
                for ln in vec:
                    e.line(ln)
            with e.block("else"):
                for i in range(k):
                    e.line(f"{names[r0 + i]} = {reg(r0 + i)};")


@lowers("tt.store")
def store(ctx: LoweringContext, op: Op):
    ptr, val = op.operands[0], op.operands[1]
    mask = op.operands[2] if len(op.operands) > 2 else None
    if not isinstance(elem_of(ptr.type), PointerType):
        ctx.error(op, "stores through block pointers / descriptors are not supported yet")
    if isinstance(ptr.type, TensorType):
        lay = ctx.layout(ptr)
        owner = ctx.owner_predicate(lay)
        regs = lay.owned_regs()
        runs, unaligned = _vector_runs(ctx, ptr, _pointee(ctx, ptr), regs)
    else:
        owner, regs, runs, unaligned = "tmps_tid == 0u", [0], {}, set()  # a scalar store: one thread does it
    e = ctx.e
    in_run = {r0 + i for r0, k in runs.items() for i in range(k)}

    def scalar(r: int) -> str:
        return f"{_deref(ctx.expr(ptr, r))} = {ctx.expr(val, r)};"

    def body():
        for r in regs:
            if r in runs:
                k = runs[r]
                vt = f"{_pointee(ctx, ptr).msl()}{k}"
                vals = ", ".join(ctx.expr(val, r + i) for i in range(k))
                st = f"*({device_ptr(vt, ctx.state.coherent)})({ctx.expr(ptr, r)}) = {vt}({vals});"
                conds = _run_conditions(ctx, ptr, mask, _pointee(ctx, ptr), r, k, unaligned)
                if not conds:
                    e.line(st)
                    continue
                with e.block(f"if ({_all(conds)})"):
                    e.line(st)
                with e.block("else"):
                    for i in range(k):
                        e.line(f"if ({ctx.expr(mask, r + i)}) {scalar(r + i)}" if mask is not None else scalar(r + i))
            elif r in in_run:
                continue
            elif mask is not None:
                e.line(f"if ({ctx.expr(mask, r)}) {scalar(r)}")
            else:
                e.line(scalar(r))

    with _accesses_of(ctx, ptr), e.guarded(owner):
        body()


# ---------------------------------------------------------------------------------------------
# atomics. Metal device atomics are 32-bit and relaxed: int/uint natively, float add natively,
# everything else (float min/max/exchange, fp16/bf16 on the containing 32-bit word) by
# compare-and-swap loops. Only threads that own an element perform the atomic (duplicated
# elements would apply it twice); results reach duplicates through threadgroup memory.

_RMW_KINDS = ("fadd", "add", "and", "or", "xor", "max", "min", "umax", "umin", "exch")

# 64-bit atomics. Metal has none except u64 min/max on Apple8+ GPUs, and those return no old
# value. Every 64-bit atomic_rmw / atomic_cas runs under a spin lock from a per-device table of
# abi.LOCK_WORDS 32-bit words (`tmps_locks`, bound by the launcher, zero between kernels), chosen
# by hashing the address: all 64-bit atomics on one address serialize on one lock, on different
# addresses mostly on different locks. The data is read and written as two 32-bit atomics
# inside the critical section (coherent with the previous holder's writes), with device-scope
# fences around it.
#
# The lock-winner loop: `while (!done) { if (try_lock) { critical section; unlock; done = true; } }`.
# A lane that wins does its whole critical section and releases the lock within the same
# iteration. The naive form, `while (!try_lock()) {} critical section; unlock;`, can hang on a
# GPU: lanes of one SIMD-group run in lockstep, and if the winner is masked off while the losers
# spin (the compiler may order the divergent paths either way), the losers wait forever for a
# lock whose holder never gets to release it.
#
# Cost: an uncontended 64-bit atomic is ~6 device atomics (lock CAS, two loads, two stores,
# unlock) instead of one; contended atomics on one address (or on addresses that share a lock)
# serialize completely, one lane per round of the loop: a SIMD-group whose 32 lanes hit one
# address takes 32 rounds. Plain (non-atomic) 64-bit loads may see a half-written value while
# an atomic is in progress, as with any torn 64-bit access on a 32-bit memory system.


def _lock_helper(ctx: LoweringContext, name: str, t: str, body: str, extra_param: str = "") -> str:
    """A 64-bit atomic on `device T* p` under the lock-winner loop. `body` computes `nb` (the new
    value) from `o` (the old value) and returns whether to write it."""
    ctx.state.uses_locks = True
    fn = f"tmps_atomic64_{name}_{t}"
    use(ctx, macros.DEVICE_FENCE)  # MSL 3.2 only: guarded (issue 18)
    ctx.e.helper("tmps_lock_slot", f"""inline uint tmps_lock_slot(ulong addr) {{
  // Fibonacci hash of the 8-byte word address -> one of {LOCK_WORDS} locks
  return (uint)(((addr >> 3) * 0x9E3779B97F4A7C15ul) >> {64 - (LOCK_WORDS.bit_length() - 1)});
}}
""")
    p_t = device_ptr(t, ctx.state.coherent)
    ctx.e.helper(fn, f"""inline {t} {fn}(device atomic_uint* locks, {p_t} p{extra_param}, {t} v) {{
  device atomic_uint* lock = locks + tmps_lock_slot((ulong)p);
  device atomic_uint* w = (device atomic_uint*)p;  // little-endian halves
  {t} o = 0;
  bool done = false;
  while (!done) {{  // lock-winner loop: no lane waits inside a branch for another lane
    uint free_ = 0u;
    if (atomic_compare_exchange_weak_explicit(lock, &free_, 1u, memory_order_relaxed, memory_order_relaxed)) {{
      TMPS_DEVICE_FENCE();
      ulong lo = atomic_load_explicit(w, memory_order_relaxed);
      ulong hi = atomic_load_explicit(w + 1, memory_order_relaxed);
      o = ({t})((hi << 32) | lo);
      {t} nb = o;
      {body}
      if (nb != o) {{
        atomic_store_explicit(w, (uint)(ulong)nb, memory_order_relaxed);
        atomic_store_explicit(w + 1, (uint)((ulong)nb >> 32), memory_order_relaxed);
      }}
      TMPS_DEVICE_FENCE();
      atomic_store_explicit(lock, 0u, memory_order_relaxed);
      done = true;
    }}
  }}
  return o;
}}
""")
    return fn


_BODY64 = {
    "add": "nb = ({t})((ulong)o + (ulong)v);",
    "and": "nb = o & v;", "or": "nb = o | v;", "xor": "nb = o ^ v;", "exch": "nb = v;",
    "max": "if (v > o) nb = v;", "min": "if (v < o) nb = v;",
    "umax": "if ((ulong)v > (ulong)o) nb = v;", "umin": "if ((ulong)v < (ulong)o) nb = v;",
}

# f64 (ulong bits): fadd rounds once per update (software binary64); max/min in IEEE totalOrder
# on the bits, like the 16-bit float atomics below.
_BODY64_F64 = {
    "fadd": "nb = tmps_f64_add(o, v);", "exch": "nb = v;",
    "max": "if (tmps_f64_total_key(v) > tmps_f64_total_key(o)) nb = v;",
    "min": "if (tmps_f64_total_key(v) < tmps_f64_total_key(o)) nb = v;",
}

# Float max/min follow Triton's semantics. For fp32/fp64, `tl.atomic_max` is lowered by Triton's
# frontend (the CUDA path) to a signed-integer max on the bits when the value's sign bit is clear
# and an unsigned-integer min when it is set (`tl.atomic_min`: signed min / unsigned max). That is
# IEEE 754 totalOrder on the bit patterns:
#   -NaN < -inf < ... < -1 < -0.0 < +0.0 < 1 < ... < +inf < +NaN
# so -0.0 and +0.0 are distinct (max(-0.0, +0.0) = +0.0, min = -0.0) and NaNs are not ignored:
# a positive NaN wins max and loses min, a negative NaN the reverse. A `tt.atomic_rmw max/min`
# on a float type (fp16/bf16 always come here: the frontend only builds them for fp32/fp64
# through the integer ops) is lowered with the same order: compare sortable keys of the bits
# (sign set: all bits flipped; sign clear: sign bit set) as unsigned integers.


def _total_order_key(ctx, bits: int) -> str:
    u = "ushort" if bits == 16 else "uint"
    sign = "0x8000u" if bits == 16 else "0x80000000u"
    fn = f"tmps_total_order_key{bits}"
    ctx.e.helper(fn, f"""inline {u} {fn}({u} b) {{
  // IEEE totalOrder as an unsigned order: negatives reversed below positives.
  return (b & {sign}) ? ({u})~b : ({u})(b | {sign});
}}
""")
    return fn


def _float_combine_bits(ctx, kind: str, t: str, bits: int) -> str:
    """MSL expression for the new bits from the old (o, ob) and the operand (v, vb)."""
    u = "ushort" if bits == 16 else "uint"
    if kind == "fadd":
        # fp16/bf16 sums in fp32 then one rounding: fp32 has more than 2p+2 bits, so this is the
        # correctly rounded 16-bit sum.
        return f"as_type<{u}>(({t})((float)o + (float)v))"
    if kind == "exch":
        return "vb"
    key = _total_order_key(ctx, bits)
    cmp = ">" if kind == "max" else "<"
    return f"({key}(vb) {cmp} {key}(ob)) ? vb : ob"


def _cas_helper_32(ctx, name: str, t: str, combine: str) -> str:
    """CAS loop on a 32-bit slot holding T: new bits = combine(o, ob, v, vb)."""
    fn = f"tmps_atomic_{name}_{t}"
    ctx.e.helper(fn, f"""inline {t} {fn}({device_ptr(t, ctx.state.coherent)} p, {t} v) {{
  device atomic_uint* a = (device atomic_uint*)p;
  uint vb = as_type<uint>(v);
  uint ob = atomic_load_explicit(a, memory_order_relaxed);
  while (true) {{
    {t} o = as_type<{t}>(ob);
    uint nb = {combine};
    // Unchanged (e.g. max did not win): the value just read is the result, nothing to write.
    if (nb == ob) return o;
    if (atomic_compare_exchange_weak_explicit(a, &ob, nb, memory_order_relaxed, memory_order_relaxed)) return o;
  }}
}}
""")
    return fn


def _cas_helper_16(ctx, name: str, t: str, combine: str) -> str:
    """CAS loop on the aligned 32-bit word containing a 16-bit T: replace our half, keep the
    other (a neighbour may update it concurrently: then the CAS fails and we retry)."""
    fn = f"tmps_atomic_{name}_{t}"
    ctx.e.helper(fn, f"""inline {t} {fn}({device_ptr(t, ctx.state.coherent)} p, {t} v) {{
  uint shift = ((ulong)p & 2ul) ? 16u : 0u;
  device atomic_uint* a = (device atomic_uint*)(p - (((ulong)p >> 1) & 1ul));
  ushort vb = as_type<ushort>(v);
  uint old = atomic_load_explicit(a, memory_order_relaxed);
  while (true) {{
    ushort ob = (ushort)(old >> shift);
    {t} o = as_type<{t}>(ob);
    ushort nb = {combine};
    if (nb == ob) return o;
    uint next = (old & ~(0xffffu << shift)) | ((uint)nb << shift);
    if (atomic_compare_exchange_weak_explicit(a, &old, next, memory_order_relaxed, memory_order_relaxed)) return o;
  }}
}}
""")
    return fn


def _rmw_call(ctx: LoweringContext, op: Op, kind: str, ety: ScalarType, ptr: str, val: str) -> str:
    t = ety.msl()
    if ety.bits == 64:
        if ety.is_float:  # software float64 (fp64.py): the new value computed under the lock
            if kind not in _BODY64_F64:
                ctx.error(op, f"atomic {kind} on {ety} is not supported")
            fp64.use(ctx, "tmps_f64_add" if kind == "fadd" else "tmps_f64_base")
            fn = _lock_helper(ctx, f"f64{kind}", t, _BODY64_F64[kind])
            return f"{fn}(tmps_locks, {ptr}, {val})"
        if kind not in _BODY64:
            ctx.error(op, f"atomic {kind} on {ety} is not supported")
        fn = _lock_helper(ctx, kind, t, _BODY64[kind].format(t=t))
        return f"{fn}(tmps_locks, {ptr}, {val})"
    if ety.is_float:
        if kind not in ("fadd", "max", "min", "exch"):
            ctx.error(op, f"atomic {kind} on {ety} is not supported")
        if ety.name == "f32" and kind == "fadd":
            return f"atomic_fetch_add_explicit((device atomic_float*){ptr}, {val}, memory_order_relaxed)"
        if ety.bits not in (16, 32):
            ctx.error(op, f"atomic {kind} on {ety} is not supported")
        combine = _float_combine_bits(ctx, kind, t, ety.bits)
        helper = _cas_helper_32 if ety.bits == 32 else _cas_helper_16
        return f"{helper(ctx, kind, t, combine)}({ptr}, {val})"
    if ety.bits != 32:
        ctx.error(op, f"atomic {kind} on {ety}: Metal atomics are 32-bit (i32/u32/f32; f16/bf16 emulated)")
    unsigned = kind in ("umax", "umin")
    at, vt = ("atomic_uint", "uint") if unsigned else ("atomic_int", "int")
    fn = {"add": "add", "and": "and", "or": "or", "xor": "xor", "max": "max", "min": "min",
          "umax": "max", "umin": "min"}.get(kind)
    if kind == "exch":
        return f"atomic_exchange_explicit((device atomic_int*){ptr}, {val}, memory_order_relaxed)"
    if fn is None:
        ctx.error(op, f"atomic {kind} is not supported")
    call = f"atomic_fetch_{fn}_explicit((device {at}*){ptr}, ({vt}){val}, memory_order_relaxed)"
    return f"({t}){call}" if unsigned else call


def _cas_call(ctx: LoweringContext, op: Op, ety: ScalarType, ptr: str, cmp: str, val: str) -> str:
    """Strong compare-and-swap comparing bit patterns (so -0.0 != +0.0 and a NaN can match)."""
    t = ety.msl()
    fn = f"tmps_atomic_cas_{t}"
    if ety.bits == 32:
        ctx.e.helper(fn, f"""inline {t} {fn}({device_ptr(t, ctx.state.coherent)} p, {t} cmp, {t} v) {{
  // Strong compare-and-swap from Metal's weak one (bitwise comparison).
  device atomic_uint* a = (device atomic_uint*)p;
  uint expected = as_type<uint>(cmp);
  while (true) {{
    uint seen = expected;
    if (atomic_compare_exchange_weak_explicit(a, &seen, as_type<uint>(v), memory_order_relaxed,
                                              memory_order_relaxed)) return cmp;
    if (seen != expected) return as_type<{t}>(seen);
  }}
}}
""")
        return f"{fn}({ptr}, {cmp}, {val})"
    if ety.bits == 16:
        ctx.e.helper(fn, f"""inline {t} {fn}({device_ptr(t, ctx.state.coherent)} p, {t} cmp, {t} v) {{
  // On the containing 32-bit word; a failed CAS because only the other half changed retries.
  uint shift = ((ulong)p & 2ul) ? 16u : 0u;
  device atomic_uint* a = (device atomic_uint*)(p - (((ulong)p >> 1) & 1ul));
  uint old = atomic_load_explicit(a, memory_order_relaxed);
  while (true) {{
    ushort cur = (ushort)(old >> shift);
    if (cur != as_type<ushort>(cmp)) return as_type<{t}>(cur);
    uint next = (old & ~(0xffffu << shift)) | ((uint)as_type<ushort>(v) << shift);
    if (atomic_compare_exchange_weak_explicit(a, &old, next, memory_order_relaxed, memory_order_relaxed)) return cmp;
  }}
}}
""")
        return f"{fn}({ptr}, {cmp}, {val})"
    if ety.bits == 64:
        # bitwise comparison, like the 32-bit CAS (f64: its ulong bits)
        fn = _lock_helper(ctx, "cas", t, "if ((ulong)o == (ulong)cmp) nb = v;", extra_param=f", {t} cmp")
        return f"{fn}(tmps_locks, {ptr}, {cmp}, {val})"
    ctx.error(op, f"atomic_cas on {ety}: only 16- and 32-bit types are supported")


# Device-scope ordering for acquire/release atomics, 64-bit atomics and acquire atomic_poll
# (issue 11) goes through the guarded macro TMPS_DEVICE_FENCE (mslib/macros.py: empty below MSL
# 3.2, issue 18). tests/metal/test_metal_emu.py reads its text here.
DEVICE_FENCE_HELPER = LIB[macros.DEVICE_FENCE].text


def _atomic(ctx: LoweringContext, op: Op, make_call) -> None:
    """Run `make_call(r)` in owning threads (under the mask), share results with duplicates."""
    ptr = op.operands[0]
    res = op.results[0]
    ety = elem_of(res.type)
    t = ety.msl()
    e = ctx.e
    zero = ctx.literal(0, ety)
    is_tensor = isinstance(ptr.type, TensorType)
    if is_tensor:
        lay = ctx.layout(ptr)
        owner, regs = ctx.owner_predicate(lay), lay.owned_regs()
    else:
        lay, owner, regs = None, "tmps_tid == 0u", [0]
    used = res.uses > 0
    base = ctx.e.fresh(ctx.hint(res, "old"))
    names = {r: (f"{base}_{r}" if is_tensor else base) for r in regs}
    for r in regs:
        e.line(f"{t} {names[r]} = {zero};")
    mask = op.operands[-1] if op.name == "tt.atomic_rmw" and len(op.operands) > 2 else None

    def body():
        for r in regs:
            stmt = f"{names[r]} = {make_call(r)};"
            e.line(f"if ({ctx.expr(mask, r)}) {stmt}" if mask is not None else stmt)

    # A scalar atomic runs in thread 0 only, so its ordering (Triton's default sem is acq_rel)
    # must cover the whole program: a release waits until every thread's device writes are done
    # (a lock's release must not overtake the stores it protects); an acquire precedes every
    # thread's later device accesses. Metal device atomics themselves are relaxed.
    # The barrier orders memory within this threadgroup only; other threadgroups (a lock, a
    # "last block" counter) need device-scope fences around the atomic: TMPS_DEVICE_FENCE.
    # A lock (issue 21, item 9: layer-norm backward's partial sums) is read and written by
    # every thread of the program with plain accesses, so every thread fences at device scope:
    # its own writes before the release's barrier, its own reads after the acquire's barrier;
    # thread 0's fences next to the atomic alone do not order the other threads' accesses.
    sem = op.attrs.get("sem", "acq_rel")
    release, acquire = sem in ("acq_rel", "release"), sem in ("acq_rel", "acquire")
    if release or acquire:
        use(ctx, macros.DEVICE_FENCE)
    if not is_tensor and release:
        e.line("TMPS_DEVICE_FENCE();")
        e.line("threadgroup_barrier(mem_flags::mem_device);")
    with e.guarded(owner):
        if release:
            e.line("TMPS_DEVICE_FENCE();")
        body()
        if acquire:
            e.line("TMPS_DEVICE_FENCE();")
    if not is_tensor and acquire:
        e.line("threadgroup_barrier(mem_flags::mem_device);")
        e.line("TMPS_DEVICE_FENCE();")
    if not is_tensor:
        if used:
            buf = ctx.scratch(8, t)
            ctx.barrier()
            e.line(f"if (tmps_tid == 0u) {buf}[0] = {base};")
            ctx.barrier()
            ctx.define(res, f"{buf}[0]", hint=ctx.hint(res, "old"))
        else:
            ctx.bind(res, base)
        return
    full = [names.get(r) or names[lay.find_register(lay.reg_coord(r))] for r in range(lay.num_regs)]
    if used and lay.has_thread_dups:
        # Duplicated threads did not run the atomic: get the owners' results.
        from ..scratch import static_index, thread_index_mask, through_scratch

        ctx.bind(res, full)
        through_scratch(ctx, [(res, 0)], res.type.numel, res, lambda r, c: ctx.linear_index(lay, r),
                        ctx.hint(res, "old"), lambda r: static_index(lay.shape, lay.reg_coord(r)),
                        thread_index_mask(lay.shape, lay.lane_bases + lay.warp_bases))
    else:
        ctx.bind(res, full)


@lowers("tt.atomic_rmw")
def atomic_rmw(ctx: LoweringContext, op: Op):
    kind = op.attrs.get("atomic_rmw_op", "")
    if kind not in _RMW_KINDS:
        ctx.error(op, f"unknown atomic kind {kind!r}")
    ptr, val = op.operands[0], op.operands[1]
    ety = elem_of(op.results[0].type)
    _atomic(ctx, op, lambda r: _rmw_call(ctx, op, kind, ety, ctx.expr(ptr, r), ctx.expr(val, r)))


@lowers("tt.atomic_cas")
def atomic_cas(ctx: LoweringContext, op: Op):
    ptr, cmp, val = op.operands[:3]
    ety = elem_of(op.results[0].type)
    _atomic(ctx, op, lambda r: _cas_call(ctx, op, ety, ctx.expr(ptr, r), ctx.expr(cmp, r), ctx.expr(val, r)))


@lowers("ttg.barrier")
def barrier(ctx: LoweringContext, op: Op):
    """tl.debug_barrier(): every thread of the threadgroup waits for the others, and the
    threadgroup's writes to device and threadgroup memory before it are visible to its reads
    after it (CUDA's __syncthreads, which Triton's NVIDIA backend emits for it). Like CUDA,
    it must be reached by every thread (Triton emits it in uniform control flow)."""
    ctx.e.line("threadgroup_barrier(mem_flags::mem_device | mem_flags::mem_threadgroup);")


# tt.atomic_poll (tl.atomic_poll): spin until *ptr == expected; with a timeout, give up and
# return false. MSL has no clock a kernel can read, so a timeout is a poll budget: one poll
# per POLL_NS nanoseconds of timeout_ns, at least one (timeout_ns = 0 checks once). Loads are
# 32-bit device atomics (16-bit values from their containing word; 64-bit values as two halves,
# high half read twice so that a value changing under us is not taken for a match). acquire
# adds a device-scope fence after the match.
POLL_NS = 64


def _poll_helper(ctx: LoweringContext, ety: ScalarType) -> str:
    t, u = ety.msl(), ety.msl_unsigned()
    fn = f"tmps_atomic_poll_{t}"
    if ety.bits == 32:
        load = "uint v = atomic_load_explicit((device atomic_uint*)p, memory_order_relaxed);"
    elif ety.bits == 16:
        load = ("uint shift = ((ulong)p & 2ul) ? 16u : 0u;\n"
                "    device atomic_uint* w = (device atomic_uint*)(p - (((ulong)p >> 1) & 1ul));\n"
                "    ushort v = (ushort)(atomic_load_explicit(w, memory_order_relaxed) >> shift);")
    else:
        load = ("device atomic_uint* w = (device atomic_uint*)p;\n"
                "    uint hi = atomic_load_explicit(w + 1, memory_order_relaxed);\n"
                "    uint lo = atomic_load_explicit(w, memory_order_relaxed);\n"
                "    if (atomic_load_explicit(w + 1, memory_order_relaxed) != hi) continue;\n"
                "    ulong v = ((ulong)hi << 32) | lo;")
    p_t = device_ptr(t, ctx.state.coherent)
    ctx.e.helper(fn, f"""inline bool {fn}({p_t} p, {t} expected, bool timed, ulong polls) {{
  // spin until *p == expected; with a timeout, at most `polls` loads
  for (ulong n = 0ul;; ) {{
    {load}
    if (({u})v == ({u})expected) return true;
    if (timed && ++n >= polls) return false;
  }}
}}
""")
    return fn


@lowers("tt.atomic_poll")
def atomic_poll(ctx: LoweringContext, op: Op):
    ptr, expected = op.operands[0], op.operands[1]
    timeout = op.operands[2] if len(op.operands) > 2 else None
    ety = elem_of(expected.type)
    if not isinstance(ety, ScalarType) or ety.is_float or ety.bits not in (16, 32, 64):
        ctx.error(op, f"atomic_poll on {ety}: 16-, 32- and 64-bit integers are supported")
    fn = _poll_helper(ctx, ety)
    acquire = op.attrs.get("sem") == "acquire"
    e = ctx.e
    if timeout is not None:
        polls = e.fresh("polls")
        e.line(f"ulong {polls} = (ulong){ctx.expr(timeout, 0)} / {POLL_NS}ul + 1ul;")
        timed, budget = "true", polls
    else:
        timed, budget = "false", "0ul"
    res = op.results[0]
    ctx.define(res, lambda r: f"{fn}({ctx.expr(ptr, r)}, {ctx.expr(expected, r)}, {timed}, {budget})",
               hint=ctx.hint(res, "polled"))
    if acquire:
        use(ctx, macros.DEVICE_FENCE)  # MSL 3.2 only: guarded (issue 18)
        e.line("TMPS_DEVICE_FENCE();")
