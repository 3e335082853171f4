"""libdevice's Bessel functions (j0, j1, y0, y1, cyl_bessel_i0, cyl_bessel_i1) for every float type.

All computed in software binary64 (compiler/mslib/bessel.py): fp32/fp16/bf16 arguments are widened
exactly and the binary64 result is rounded once to the result type. elementwise.py hands a
`tt.extern_elementwise` here when its symbol is in `SYMBOLS` (before its own fp64 dispatch).
"""

from __future__ import annotations

from ..ir import Op
from ..lowering import LoweringContext
from ..mslib import fp64
from ..types import elem_of

# libdevice symbol (language/libdevice.py) -> the binary64 expression over `{0}` (ulong bits)
CALLS = {
    "tmps_j0": "tmps_f64_bessel_jy({0}, 0, false)", "tmps_j1": "tmps_f64_bessel_jy({0}, 1, false)",
    "tmps_y0": "tmps_f64_bessel_jy({0}, 0, true)", "tmps_y1": "tmps_f64_bessel_jy({0}, 1, true)",
    "tmps_i0": "tmps_f64_bessel_i({0}, 0)", "tmps_i1": "tmps_f64_bessel_i({0}, 1)",
}
SYMBOLS = frozenset(CALLS)


def lower(ctx: LoweringContext, op: Op) -> None:
    sym = op.attrs.get("symbol", "")
    (arg,) = op.operands
    src, dst = elem_of(arg.type), elem_of(op.results[0].type)
    for t in (src, dst):
        if getattr(t, "name", None) not in ("f16", "bf16", "f32", "f64"):
            ctx.error(op, f"libdevice Bessel function '{sym[5:]}' takes fp16, bf16, fp32 or fp64, got {t}")
    fp64.use(ctx, "tmps_f64_bessel")

    def reg(r: int) -> str:
        x = ctx.expr(arg, r)
        if src.name != "f64":
            fp64.use(ctx, "tmps_f64_from_f32")
            x = f"tmps_f64_from_f32({x if src.name == 'f32' else f'(float){x}'})"
        y = CALLS[sym].format(x)
        if dst.name == "f64":
            return y
        bits = fp64.narrow(ctx, dst.name, y)  # one rounding, straight to the result type
        return f"as_type<{dst.msl()}>(({'uint' if dst.name == 'f32' else 'ushort'}){bits})"

    res = op.results[0]
    ctx.define(res, reg, hint=ctx.hint(res, sym[5:]))
