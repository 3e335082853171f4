"""Device assert and print (tt.assert, tt.print) through a host-visible record buffer.

Metal compute kernels have no printf (os_log needs MSL 3.2 on macOS 15) and no way to abort a
dispatch, so a kernel with asserts or prints gets one hidden buffer, `device uint* tmps_dbg`,
bound after every argument (see abi.py). The launcher allocates it per launch, zeroes word 0,
and after the dispatch completed decodes it: prints are written to stdout, failed
asserts raise DeviceAssertionError naming the kernel, the Python line and the message.
noinline callees receive the buffer as a parameter (ops/control_flow.py), so asserts and prints
work there too; a callee's sites are registered once, however often it is called.

The buffer's format, its capacities and the header the launcher sets are the kernel ABI
(compiler/abi.py); the launcher's decoder, which prints and raises, is backend/debug_records.py.
Unlike CUDA, a failed assert does not stop the kernel: the dispatch runs to the end
and the error is raised after it.
"""

from __future__ import annotations

from ..abi import ASSERTS, HEADER_WORDS, NO_INDEX, PRINTS, RECORD_WORDS
from ..ir import Op
from ..lowering import LoweringContext, lowers
from ..types import PointerType, TensorType, elem_of

# ---- lowering ----------------------------------------------------------------------------------

def _put_helper(ctx: LoweringContext) -> str:
    fn = "tmps_dbg_put"
    ctx.e.helper(fn, f"""inline void {fn}(device uint* d, uint region, uint site, uint3 pid, uint operand, uint idx,
                        ulong bits) {{
  // Reserve a slot in the region (word `region` counts, word `region + 1` is its capacity, both
  // set by the launcher); past the capacity the count still grows: the host reports drops, and
  // the assert count stays exact. Assert records follow the print records.
  uint slot = atomic_fetch_add_explicit((device atomic_uint*)(d + region), 1u, memory_order_relaxed);
  if (slot >= d[region + 1u]) return;
  uint first = region == {PRINTS}u ? 0u : d[{PRINTS + 1}];
  device uint* r = d + {HEADER_WORDS}u + (first + slot) * {RECORD_WORDS}u;
  r[0] = site; r[1] = pid.x; r[2] = pid.y; r[3] = pid.z;
  r[4] = operand; r[5] = idx; r[6] = (uint)bits; r[7] = (uint)(bits >> 32);
}}
""")
    return fn


def _value_kind(ctx: LoweringContext, op: Op, v) -> dict:
    et = elem_of(v.type)
    if isinstance(et, PointerType):
        return {"kind": "ptr", "bits": 64}
    name = getattr(et, "name", str(et))
    if getattr(et, "is_float", False):
        if name not in ("f16", "bf16", "f32", "f64"):
            ctx.error(op, f"printing {name} values is not supported")
        return {"kind": "float", "bits": et.bits}
    if name == "i1":
        return {"kind": "bool", "bits": 1}
    if getattr(et, "is_int", False):
        return {"kind": "int", "bits": et.bits}
    ctx.error(op, f"printing values of type {et} is not supported")


def _bits_expr(kind: dict, x: str) -> str:
    k = kind["kind"]
    if k == "float" and kind["bits"] == 64:  # software float64: already the binary64 bits
        return f"(ulong)({x})"
    if k == "float":
        return f"(ulong)as_type<uint>((float)({x}))"
    if k == "bool":
        return f"(ulong)(({x}) ? 1u : 0u)"
    if k == "ptr":
        return f"(ulong)({x})"
    return f"(ulong)(long)({x})"


def _emit_records(ctx: LoweringContext, site: int, operand: int, v, cond=None, every_thread: bool = False) -> None:
    """One record per element of v this thread owns (per scalar: thread 0, or every thread with
    `every_thread`); `cond(r)` (an MSL bool expression) limits the records to elements where it
    holds."""
    put = _put_helper(ctx)
    e = ctx.e
    kind = _value_kind(ctx, ctx.current_op, v) if cond is None else None
    if isinstance(v.type, TensorType):
        lay = ctx.layout(v)
        owner, regs = ctx.owner_predicate(lay), lay.owned_regs()
    else:
        lay, owner, regs = None, (None if every_thread else "tmps_tid == 0u"), [0]

    def body():
        for r in regs:
            idx = ctx.linear_index(lay, r) if lay is not None else f"{NO_INDEX}u"
            bits = "0ul" if kind is None else _bits_expr(kind, ctx.expr(v, r))
            region = PRINTS if cond is None else ASSERTS
            stmt = f"{put}(tmps_dbg, {region}u, {site}u, tmps_pid, {operand}u, {idx}, {bits});"
            e.line(f"if ({cond(r)}) {stmt}" if cond is not None else stmt)

    with e.guarded(owner):
        body()


def _shape(v) -> list[int]:
    return list(v.type.shape) if isinstance(v.type, TensorType) else []


@lowers("tt.assert")
def device_assert(ctx: LoweringContext, op: Op):
    cond = op.operands[0]
    site = len(ctx.state.debug_sites)
    ctx.state.debug_sites.append({"kind": "assert", "message": op.attrs.get("message", ""), "file": op.file,
                                  "line": op.line, "shape": _shape(cond)})
    _emit_records(ctx, site, 0, cond, cond=lambda r: f"!({ctx.expr(cond, r)})")


@lowers("tt.print")
def device_print(ctx: LoweringContext, op: Op):
    hex_ = bool(op.attrs.get("hex"))
    signed = op.attrs.get("isSigned") or []
    operands = []
    for i, v in enumerate(op.operands):
        k = _value_kind(ctx, op, v)
        k["signed"] = bool(signed[i]) if i < len(signed) else True
        k["shape"] = _shape(v)
        operands.append(k)
    site = len(ctx.state.debug_sites)
    ctx.state.debug_sites.append({"kind": "print", "prefix": op.attrs.get("prefix", ""), "hex": hex_, "file": op.file,
                                  "line": op.line, "operands": operands})
    # As on Triton's GPU backends, a scalar (or no operand) prints once per thread of the program.
    if not op.operands:
        put = _put_helper(ctx)
        ctx.e.line(f"{put}(tmps_dbg, {PRINTS}u, {site}u, tmps_pid, {NO_INDEX}u, {NO_INDEX}u, 0ul);")
        return
    for i, v in enumerate(op.operands):
        _emit_records(ctx, site, i, v, every_thread=True)


@lowers("llvm.intr.assume")
def assume(ctx: LoweringContext, op: Op):
    """tl.assume(cond): a promise to the optimizer, not a check. Metal has no assume intrinsic
    that MSL exposes; the promise is dropped (the emitted code is correct without it)."""
    ctx.e.comment(f"assume ({op.file}:{op.line}): dropped")
