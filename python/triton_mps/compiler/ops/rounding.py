"""libdevice's directed-rounding arithmetic and the conversions with a rounding mode: the rows of
the math table (triton_mps/math_functions.py) with a `rounding` (kind, mode), lowered to calls of
the integer helpers of mslib/rounding.py and the software binary64 primitives of mslib/core.py.
ops/libdevice.py hands a `tt.extern_elementwise` here when its symbol's row has a rounding kind.
fp32 values are passed as their bits (`as_type<uint>`), fp64 values are `ulong` bits already."""

from __future__ import annotations

from ..ir import Op
from ..lowering import LoweringContext
from ..mslib import fp64
from ..types import elem_of

MODES = {"rn": 0, "rz": 1, "rd": 2, "ru": 3}
# tmps_f64_round_int's modes for the same rounding (0 trunc, 1 floor, 2 ceil, 4 nearest even)
ROUND_INT = {"rn": 4, "rz": 0, "rd": 1, "ru": 2}


def lower(ctx: LoweringContext, op: Op, kind: str, mode: str) -> None:
    """tt.extern_elementwise of a rounding symbol: `kind`, `mode` its row's `rounding`."""
    sym = op.attrs.get("symbol", "")
    m = str(MODES.get(mode, 0))
    srcs = [elem_of(a.type) for a in op.operands]
    dst = elem_of(op.results[0].type)
    f64 = srcs[0].name == "f64"
    if kind in ("add", "sub", "mul", "div", "fma", "sqrt", "rcp"):
        entry = "tmps_f64_base" if f64 else "tmps_f32_arith"  # fp64: fp64.call emits the primitive
    elif kind in ("i2f", "u2f"):
        entry = "tmps_f32_cvt"
    elif kind in ("d2f", "i2d", "u2d"):
        entry = "tmps_f64_cvt_m"
    else:
        entry = "tmps_f64_base"
    fp64.use(ctx, entry)

    def reg(r: int) -> str:
        a = [ctx.expr(v, r) for v in op.operands]
        if kind in ("add", "sub", "mul", "div", "fma", "sqrt"):
            if f64:
                return fp64.call(ctx, f"tmps_f64_{kind}_m", *a, m)
            return f"as_type<float>(tmps_f32_{kind}_m({', '.join(f'as_type<uint>({x})' for x in a)}, {m}))"
        if kind == "rcp":
            if f64:
                return fp64.call(ctx, "tmps_f64_div_m", fp64.literal(1.0), a[0], m)
            return f"as_type<float>(tmps_f32_div_m(0x3f800000u, as_type<uint>({a[0]}), {m}))"
        if kind == "d2f":
            return f"as_type<float>(tmps_f64_to_f32_m({a[0]}, {m}))"
        if kind in ("d2i", "d2u"):
            whole = fp64.call(ctx, "tmps_f64_round_int", a[0], str(ROUND_INT[mode]))
            fn = "tmps_f64_to_i" if kind == "d2i" else "tmps_f64_to_u"
            return f"({dst.msl()}){fp64.call(ctx, fn, whole, str(dst.bits))}"
        if kind in ("i2f", "u2f", "i2d", "u2d"):
            src = srcs[0]
            if kind[0] == "i":
                x = f"(long){a[0]}"
            else:
                x = f"(ulong)({src.msl_unsigned()}){a[0]}"
            if kind == "i2f":
                return f"as_type<float>(tmps_f32_from_i64_m({x}, {m}))"
            if kind == "u2f":
                return f"as_type<float>(tmps_f32_from_u64_m({x}, {m}))"
            if kind == "i2d":
                return f"tmps_f64_from_i64_m({x}, {m})"
            return f"tmps_f64_from_mag_m(0ul, {x}, {m})"
        if kind == "d2hi":
            return f"(int)({a[0]} >> 32)"
        if kind == "d2lo":
            return f"(int)(uint){a[0]}"
        if kind == "hilo2d":
            return f"(((ulong)(uint){a[0]} << 32) | (ulong)(uint){a[1]})"
        if kind == "d_as_ll":
            return f"(long){a[0]}"
        if kind == "ll_as_d":
            return f"(ulong){a[0]}"
        ctx.error(op, f"extern function '{sym}' has no lowering")

    res = op.results[0]
    ctx.define(res, reg, hint=ctx.hint(res, sym[5:]))
