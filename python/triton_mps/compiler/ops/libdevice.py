"""tt.extern_elementwise: the `tl.extra.libdevice` functions, lowered from the math table.

language/libdevice.py (what `tl.extra.libdevice` resolves to on this backend) emits one symbol
"tmps_<name>" per function; its row in the math table (triton_mps/math_functions.py, `SYMBOLS`
here) says how it lowers: `f32` on fp32/fp16/bf16/fp8 (computed in float, the result rounded
back once) and on integers, `f64` on software binary64, `wide` for every float type in binary64,
`rounding` for the directed-rounding functions (ops/rounding.py). The same rows lower the math.*
ops (ops/elementwise.py, float64.py): a function that is both is one row.
"""

from __future__ import annotations

from ...math_functions import BY_SYMBOL, MathFn
from ..ir import Op, involves_f64
from ..lowering import LoweringContext, lowers
from ..mslib import fp64
from ..mslib.registry import use_called
from ..types import ScalarType, elem_of
from .elementwise import as_float, define_map, round_back
from .rounding import lower as lower_rounding

SYMBOLS: dict[str, MathFn] = BY_SYMBOL
_FLOATS = ("f16", "bf16", "f32", "f64")


@lowers("tt.extern_elementwise")
def extern_elementwise(ctx: LoweringContext, op: Op) -> None:
    sym = op.attrs.get("symbol", "")
    fn = SYMBOLS.get(sym)
    if fn is not None and fn.wide:
        return _wide(ctx, op, sym, fn.wide)
    if fn is not None and fn.rounding:
        return lower_rounding(ctx, op, *fn.rounding)
    if involves_f64(op):
        if fn is None or fn.f64 is None:
            ctx.error(op, f"extern function '{sym}' on float64 is not supported")
        return _f64(ctx, op, sym, fn.f64)
    if fn is None or fn.f32 is None:
        if sym.startswith(("__nv_", "__ocml_")):
            hint = ": a CUDA/HIP library symbol; call tl.extra.libdevice.<fn>, which this backend maps to Metal"
        else:
            hint = ": not a libdevice function this backend maps to Metal"
        ctx.error(op, f"extern function '{sym}'{hint}")
    tpl = fn.f32
    t = elem_of(op.results[0].type)
    if t.is_float:
        define_map(ctx, op, lambda r: round_back(ctx, t, _f32_expr(ctx, op, tpl, r)), hint=sym[5:])
    else:
        define_map(ctx, op, lambda r: f"({t.msl()})({_f32_expr(ctx, op, tpl, r)})", hint=sym[5:])


def _f32_expr(ctx: LoweringContext, op: Op, tpl: str, r: int) -> str:
    args = [as_float(ctx, a, r) for a in op.operands]
    t = elem_of(op.results[0].type)
    a0 = elem_of(op.operands[0].type)
    use_called(ctx, tpl)
    if "tmps_f2i_" in tpl or "tmps_f2u_" in tpl:
        _f2i_helper(ctx, t, "tmps_f2i_" in tpl)
    ua = a0.msl_unsigned() if isinstance(a0, ScalarType) and not a0.is_float else ""
    return tpl.format(*args, T=t.msl(), UA=ua)


def _f2i_helper(ctx: LoweringContext, t: ScalarType, signed: bool) -> None:
    """Float -> integer that saturates and maps NaN to 0 (CUDA's float2int_* semantics).
    `t` is the signless result type; `signed` says how to read the integer range."""
    s, u, bits = t.msl(), t.msl_unsigned(), t.bits
    lo = f"-{float(2 ** (bits - 1))!r}f" if signed else "0.0f"
    hi = f"{float(2 ** (bits - 1 if signed else bits))!r}f"
    lo_val = f"({s})(({u})1 << {bits - 1})" if signed else f"({s})0"
    hi_val = f"({s})~{lo_val}" if signed else f"({s})~({u})0"
    kind = "f2i" if signed else "f2u"
    conv = f"({s})r" if signed else f"({s})({u})r"
    ctx.e.helper(f"{kind}_{s}", f"""inline {s} tmps_{kind}_{s}(float r) {{
  if (r != r) return 0;
  if (r >= {hi}) return {hi_val};
  if (r <= {lo}) return {lo_val};
  return {conv};
}}
""")


def _f64(ctx: LoweringContext, op: Op, sym: str, f64: str) -> None:
    res = op.results[0]
    res_t = elem_of(res.type)

    def reg(r: int) -> str:
        return fp64.apply(ctx, f64, *(ctx.expr(v, r) for v in op.operands), result_type=res_t.msl())

    ctx.define(res, reg, hint=ctx.hint(res, sym[5:] or "ext"))


def _wide(ctx: LoweringContext, op: Op, sym: str, expr: str) -> None:
    """fp32/fp16/bf16 arguments widened exactly to binary64, the binary64 result rounded once to
    the result type (jn/yn take an int32 order first, CUDA's signature)."""
    *ints, arg = op.operands
    src, dst = elem_of(arg.type), elem_of(op.results[0].type)
    for t in (src, dst):
        if getattr(t, "name", None) not in _FLOATS:
            ctx.error(op, f"libdevice.{sym[5:]} takes fp16, bf16, fp32 or fp64, got {t}")
    for a in ints:
        if getattr(elem_of(a.type), "name", None) != "i32":
            ctx.error(op, f"libdevice.{sym[5:]} takes an int32 order, got {elem_of(a.type)}")
    use_called(ctx, expr)

    def reg(r: int) -> str:
        x = ctx.expr(arg, r)
        if src.name != "f64":
            fp64.use(ctx, "tmps_f64_from_f32")
            x = f"tmps_f64_from_f32({x if src.name == 'f32' else f'(float){x}'})"
        y = expr.format(x, *(f"(int){ctx.expr(a, r)}" for a in ints))
        if dst.name == "f64":
            return y
        bits = fp64.narrow(ctx, dst.name, y)  # one rounding, straight to the result type
        return f"as_type<{dst.msl()}>(({'uint' if dst.name == 'f32' else 'ushort'}){bits})"

    res = op.results[0]
    ctx.define(res, reg, hint=ctx.hint(res, sym[5:]))
