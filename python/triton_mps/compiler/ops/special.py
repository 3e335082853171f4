"""libdevice's special functions (erfinv, erfcinv, erfcx, normcdf, normcdfinv, lgamma, tgamma, jn,
yn, rcp64h) for every float type.

All computed in software binary64 (compiler/mslib/erfgamma.py, bessel.py, misc.py): fp32/fp16/bf16 arguments are
widened exactly and the binary64 result is rounded once to the result type. jn/yn take an int32
order first (CUDA's signature). elementwise.py hands a `tt.extern_elementwise` here when its
symbol is in `SYMBOLS` (before its own fp64 dispatch).
"""

from __future__ import annotations

from ..ir import Op
from ..lowering import LoweringContext
from ..mslib import fp64
from ..types import elem_of

# libdevice symbol (language/libdevice.py) -> (binary64 expression over `{0}` (ulong bits), library entry)
CALLS: dict[str, tuple[str, str]] = {
    "tmps_erfinv": ("tmps_f64_erfinv({0})", "tmps_f64_sp_erf"),
    "tmps_erfcinv": ("tmps_f64_erfcinv({0})", "tmps_f64_sp_erf"),
    "tmps_erfcx": ("tmps_f64_erfcx({0})", "tmps_f64_sp_erf"),
    "tmps_normcdf": ("tmps_f64_normcdf({0})", "tmps_f64_sp_erf"),
    "tmps_normcdfinv": ("tmps_f64_normcdfinv({0})", "tmps_f64_sp_erf"),
    "tmps_lgamma": ("tmps_f64_lgamma({0})", "tmps_f64_sp_gamma"),
    "tmps_tgamma": ("tmps_f64_tgamma({0})", "tmps_f64_sp_gamma"),
    # {1}: the int32 order
    "tmps_jn": ("tmps_f64_jn({1}, {0})", "tmps_f64_sp_jn"),
    "tmps_yn": ("tmps_f64_yn({1}, {0})", "tmps_f64_sp_jn"),
    "tmps_rcp64h": ("tmps_f64_rcp64h({0})", "tmps_f64_sp_rcp64h"),
}
SYMBOLS = frozenset(CALLS)
_FLOATS = ("f16", "bf16", "f32", "f64")


def lower(ctx: LoweringContext, op: Op) -> None:
    sym = op.attrs.get("symbol", "")
    expr, entry = CALLS[sym]
    *ints, arg = op.operands
    src, dst = elem_of(arg.type), elem_of(op.results[0].type)
    for t in (src, dst):
        if getattr(t, "name", None) not in _FLOATS:
            ctx.error(op, f"libdevice.{sym[5:]} takes fp16, bf16, fp32 or fp64, got {t}")
    for a in ints:
        if getattr(elem_of(a.type), "name", None) != "i32":
            ctx.error(op, f"libdevice.{sym[5:]} takes an int32 order, got {elem_of(a.type)}")
    fp64.use(ctx, entry)

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
