"""Lowerings of float ops whose operands or result are f64: calls into the software binary64
library (compiler/mslib/, values are `ulong` bits). Registered with `@lowers(..., when=involves_f64)`:
lowering.py consults them before the float lowerings of ops/elementwise.py, for the ops with an
f64 operand or result only. The math.* ops lower their row's `f64` in the math table
(triton_mps/math_functions.py); tt.extern_elementwise on f64: ops/libdevice.py."""

from __future__ import annotations

from ...math_functions import BY_MATH_OP
from ..ir import CMPF_PREDICATES, Op, involves_f64, predicate
from ..lowering import LoweringContext, lowers
from ..mslib import fp64
from ..mslib.fp8 import float_to_fp8, fp8_to_float
from ..types import ScalarType, elem_of

_ABS = fp64.literal_bits(fp64.ABS)
_SIGN = fp64.literal_bits(fp64.SIGN)


def _define(ctx: LoweringContext, op: Op, fn, hint: str) -> None:
    res = op.results[0]
    ctx.define(res, fn, hint=ctx.hint(res, hint))


def _args(ctx, op, r) -> list[str]:
    return [ctx.expr(v, r) for v in op.operands]


# ops that are one call of a library function
_CALLS = {"arith.addf": "tmps_f64_add", "arith.subf": "tmps_f64_sub", "arith.mulf": "tmps_f64_mul",
          "arith.divf": "tmps_f64_div", "tt.precise_divf": "tmps_f64_div", "tt.precise_sqrt": "tmps_f64_sqrt",
          "arith.maximumf": "tmps_f64_maximum", "arith.minimumf": "tmps_f64_minimum",
          "arith.maxnumf": "tmps_f64_maxnum", "arith.minnumf": "tmps_f64_minnum", "arith.remf": "tmps_f64_fmod"}
# the math.* ops: their rows' `f64` in the math table (triton_mps/math_functions.py)
_MATH = {name: fn.f64 for name, fn in BY_MATH_OP.items() if fn.f64}
_MATH_HINT = {"math.absf": "abs"}  # the variable name of the op's value; else the op's name


def f64_lowers(*names: str):
    """Register the software float64 lowering of `names` (ops with an f64 operand or result)."""
    return lowers(*names, when=involves_f64)


def _calls(table: dict[str, str]):
    """The lowering of ops that are one call of the library function `table[op name]`."""

    def lower(ctx: LoweringContext, op: Op) -> None:
        fn = table[op.name]
        _define(ctx, op, lambda r: fp64.call(ctx, fn, *_args(ctx, op, r)), op.name.split(".")[-1])

    return lower


f64_lowers(*_CALLS)(_calls(_CALLS))


@f64_lowers(*_MATH)
def _math(ctx: LoweringContext, op: Op) -> None:
    spec, res_t = _MATH[op.name], elem_of(op.results[0].type).msl()
    _define(ctx, op, lambda r: fp64.apply(ctx, spec, *_args(ctx, op, r), result_type=res_t),
            _MATH_HINT.get(op.name, op.name.split(".")[-1]))


@f64_lowers("arith.negf")
def _negf(ctx: LoweringContext, op: Op) -> None:
    _define(ctx, op, lambda r: f"{ctx.expr(op.operands[0], r)} ^ {_SIGN}", "neg")


@f64_lowers("tt.clampf")
def _clamp(ctx, op) -> None:
    prop = (op.attr("propagateNan") or "").strip().lower()
    x, lo, hi = op.operands

    def reg(r):
        xv = ctx.expr(x, r)
        core = fp64.call(ctx, "tmps_f64_minnum", fp64.call(ctx, "tmps_f64_maxnum", xv, ctx.expr(lo, r)),
                         ctx.expr(hi, r))
        if "all" in prop:
            core = f"({fp64.call(ctx, 'tmps_f64_isnan', xv)} ? {xv} | 0x0008000000000000ul : {core})"
        return core

    _define(ctx, op, reg, "clamp")


@f64_lowers("arith.cmpf")
def _cmpf(ctx, op) -> None:
    a, b = op.operands
    p = CMPF_PREDICATES[predicate(op, CMPF_PREDICATES)]

    def reg(r):
        x, y = ctx.expr(a, r), ctx.expr(b, r)

        def c(fn, u, v):
            return fp64.call(ctx, f"tmps_f64_{fn}", u, v)

        return {
            "false": "false", "true": "true",
            "oeq": c("eq", x, y), "ogt": c("lt", y, x), "oge": c("le", y, x), "olt": c("lt", x, y),
            "ole": c("le", x, y), "one": f"({c('lt', x, y)} || {c('lt', y, x)})",
            "ord": f"!{c('uno', x, y)}",
            "ueq": f"!({c('lt', x, y)} || {c('lt', y, x)})", "ugt": f"!{c('le', x, y)}", "uge": f"!{c('lt', x, y)}",
            "ult": f"!{c('le', y, x)}", "ule": f"!{c('lt', y, x)}", "une": f"!{c('eq', x, y)}",
            "uno": c("uno", x, y),
        }[p]

    _define(ctx, op, reg, p)


@f64_lowers("arith.sitofp", "arith.uitofp")
def _int_to_f64(ctx, op) -> None:
    (a,) = op.operands
    src = elem_of(a.type)
    signed = op.name == "arith.sitofp"

    def reg(r):
        x = ctx.expr(a, r)
        if src.name == "i1":
            v = fp64.literal(-1.0 if signed else 1.0)
            return f"({x} ? {v} : 0ul)"
        if signed:
            return fp64.call(ctx, "tmps_f64_from_i64", f"(long){x}")
        return fp64.call(ctx, "tmps_f64_from_u64", f"(ulong)({src.msl_unsigned()}){x}")

    _define(ctx, op, reg, "cvt")


@f64_lowers("arith.fptosi", "arith.fptoui")
def _f64_to_int(ctx, op) -> None:
    (a,) = op.operands
    dst = elem_of(op.results[0].type)
    signed = op.name == "arith.fptosi"

    def reg(r):
        x = ctx.expr(a, r)
        if dst.name == "i1":
            return f"(({x} & {_ABS}) != 0ul)"
        if signed:
            return f"({dst.msl()}){fp64.call(ctx, 'tmps_f64_to_i', x, str(dst.bits))}"
        return f"({dst.msl()}){fp64.call(ctx, 'tmps_f64_to_u', x, str(dst.bits))}"

    _define(ctx, op, reg, "cvt")


@f64_lowers("arith.extf", "arith.truncf", "tt.fp_to_fp")
def _float_cast(ctx, op) -> None:
    (a,) = op.operands
    src, dst = elem_of(a.type), elem_of(op.results[0].type)
    for t in (src, dst):
        if not isinstance(t, ScalarType) or not (t.name in ("f16", "bf16", "f32", "f64") or t.is_fp8):
            ctx.error(op, f"conversion between {src} and {dst} is not supported")
    rounding = (op.attr("rounding") or "").lower()
    rtz = "rtz" in rounding

    def reg(r):
        x = ctx.expr(a, r)
        if src.name == dst.name:
            return x
        if dst.name == "f64":  # widening: exact (f16, bf16 and fp8 values are floats)
            if src.is_fp8:
                xf = fp8_to_float(ctx, src, x)
            else:
                xf = x if src.name == "f32" else f"(float){x}"
            fp64.use(ctx, "tmps_f64_from_f32")
            return f"tmps_f64_from_f32({xf})"
        if dst.is_fp8:
            # Through float rounded to odd: the second rounding (to <= 4 significant bits) is then
            # correct, RTNE or RTZ (round-to-odd keeps the sticky information RTNE needs).
            xf = f"as_type<float>({fp64.narrow(ctx, 'f32', x, 'rtz' if rtz else 'odd')})"
            return float_to_fp8(ctx, dst, xf, "rtz" if rtz else "rtne")
        bits = fp64.narrow(ctx, dst.name, x, "rtz" if rtz else "rtne")
        return f"as_type<{dst.msl()}>(({'uint' if dst.name == 'f32' else 'ushort'}){bits})"

    _define(ctx, op, reg, "cvt")
