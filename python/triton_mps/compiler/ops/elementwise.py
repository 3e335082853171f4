"""arith.* / math.* / casts and Triton's elementwise ops, register by register.

fp16/bf16 arithmetic is done in float and rounded back (exact for + - * /, and what Triton's
other backends do for math functions). Signed i32/i64 add/sub/mul go through unsigned types so
that overflow wraps (signed overflow is undefined in C++, which the simulator compiles).
"""

from __future__ import annotations

import re

from ...math_functions import BY_MATH_OP
from ..ir import CMPF_PREDICATES, CMPI_PREDICATES, Op, predicate
from ..lowering import LoweringContext, lowers
from ..mslib import fp8
from ..mslib.fp8 import float_to_fp8, fp8_to_float
from ..mslib.registry import use, use_called
from ..types import PointerType, ScalarType, TensorType, elem_of

# ---------------------------------------------------------------------------------------------
# helpers


def _ety(v) -> ScalarType:
    return elem_of(v.type)


def _is_small_float(t) -> bool:
    """Narrower than float: computed in float and rounded back (f16, bf16 and the fp8 formats)."""
    return isinstance(t, ScalarType) and (t.name in ("f16", "bf16") or t.name in fp8.FORMATS)


def as_float(ctx, v, r) -> str:
    """Operand as float arithmetic input (half/bfloat/fp8 widened to float)."""
    x = ctx.expr(v, r)
    t = _ety(v)
    if isinstance(t, ScalarType) and t.is_fp8:
        return fp8_to_float(ctx, t, x)
    if isinstance(t, ScalarType) and t.name == "f64":  # ulong bits: never native arithmetic
        ctx.error(None, "float64 operands of this operation are not supported (software float64 covers "
                        "arithmetic, comparisons, conversions and the math functions whose row in "
                        "triton_mps/math_functions.py has an f64 lowering)")
    return f"(float){x}" if _is_small_float(t) else x


def round_back(ctx: LoweringContext, t: ScalarType, x: str) -> str:
    """A float result `x` rounded back to the narrow type `t` (RTNE)."""
    if isinstance(t, ScalarType) and t.is_fp8:
        return float_to_fp8(ctx, t, x)
    return f"({t.msl()})({x})" if _is_small_float(t) else x


def _u(t: ScalarType, x: str) -> str:
    return f"({t.msl_unsigned()}){x}"


def _helper(ctx: LoweringContext, key: str, text: str) -> None:
    ctx.e.helper(key, text)


def define_map(ctx, op, fn, hint=None):
    res = op.results[0]
    ctx.define(res, fn, hint=hint or ctx.hint(res, op.name.split(".")[-1]))


# ---------------------------------------------------------------------------------------------
# constants

@lowers("arith.constant")
def constant(ctx: LoweringContext, op: Op):
    res = op.results[0]
    t = _ety(res)
    if op.attrs.get("nonuniform"):
        ctx.error(op, "non-uniform dense tensor constants are not supported yet")
    if "value" not in op.attrs:
        ctx.error(op, f"cannot read the value of {op.text!r}")
    lit = ctx.literal(op.attrs["value"], t)
    if isinstance(res.type, TensorType):
        ctx.bind(res, lit)
    else:
        ctx.define(res, lit, hint=ctx.hint(res, "c"))


@lowers("ub.poison")
def poison(ctx: LoweringContext, op: Op):
    """An undefined value (e.g. the initial value of a loop-carried variable that is always
    written before it is read): zero of its type, so that the emitted code is deterministic."""
    res = op.results[0]
    lit = ctx.literal(0, _ety(res))
    if isinstance(res.type, TensorType):
        ctx.bind(res, lit)
    else:
        ctx.define(res, lit, hint=ctx.hint(res, "poison"))


# ---------------------------------------------------------------------------------------------
# float binary / unary

_FBIN = {"arith.addf": "+", "arith.subf": "-", "arith.mulf": "*", "arith.divf": "/"}


def _mul_feeds_fma(ctx, mul) -> bool:
    """The mulf's result has one use, as one operand of an addf/subf in the same block."""
    res = mul.results[0]
    block = ctx.block_stack[-1] if ctx.block_stack else None
    if res.uses != 1 or block is None:
        return False
    for o in block.ops:
        if o.name in ("arith.addf", "arith.subf") and any(v is res for v in o.operands):
            return True
    return False


_PRIMARY = re.compile(r"(\(float\))?[A-Za-z_][A-Za-z0-9_]*|[0-9][0-9.]*(e[+-]?[0-9]+)?f?")


def _negated(x: str) -> str:
    """-x as MSL text. A bare '-' prefix only before a name or an unsigned literal: before a
    negative literal it would make `--3.75f` (a decrement, which Metal rejects)."""
    return f"-{x}" if _PRIMARY.fullmatch(x) else f"-({x})"


@lowers(*_FBIN)
def float_binary(ctx, op):
    a, b = op.operands
    res = op.results[0]
    t = _ety(res)
    sym = _FBIN[op.name]
    if op.name == "arith.mulf" and ctx.state.fp_fusion and _mul_feeds_fma(ctx, op):
        # Its user emits fma(a, b, c): the product is not rounded (enable_fp_fusion). The
        # binding is never emitted on its own: the mulf has no other use.
        ctx.state.fused_muls[res.id] = (a, b)
        ctx.bind(res, [f"({as_float(ctx, a, r)} * {as_float(ctx, b, r)})" for r in range(ctx.num_regs(res))])
        return
    if op.name in ("arith.addf", "arith.subf"):
        for i, m in enumerate((a, b)):
            pair = ctx.state.fused_muls.get(m.id)
            if pair is None:
                continue
            x, y = pair
            c = b if i == 0 else a
            # x*y + c, x*y - c = fma(x, y, -c), c - x*y = fma(-x, y, c): one rounding each.
            neg_c = op.name == "arith.subf" and i == 0
            neg_x = op.name == "arith.subf" and i == 1
            define_map(ctx, op, lambda r, x=x, y=y, c=c, neg_c=neg_c, neg_x=neg_x: round_back(
                ctx, t, f"fma({_negated(as_float(ctx, x, r)) if neg_x else as_float(ctx, x, r)}, "
                        f"{as_float(ctx, y, r)}, "
                        f"{_negated(as_float(ctx, c, r)) if neg_c else as_float(ctx, c, r)})"), hint="fma")
            return
    define_map(ctx, op, lambda r: round_back(ctx, t, f"{as_float(ctx, a, r)} {sym} {as_float(ctx, b, r)}"))


@lowers("tt.precise_divf")
def precise_div(ctx, op):
    a, b = op.operands
    t = _ety(op.results[0])
    define_map(ctx, op, lambda r: round_back(ctx, t, f"precise::divide({as_float(ctx, a, r)}, {as_float(ctx, b, r)})"),
               hint="div")


@lowers("tt.precise_sqrt")
def precise_sqrt(ctx, op):
    (a,) = op.operands
    t = _ety(op.results[0])
    define_map(ctx, op, lambda r: round_back(ctx, t, f"precise::sqrt({as_float(ctx, a, r)})"), hint="sqrt")


@lowers("arith.remf")
def remf(ctx, op):
    a, b = op.operands
    t = _ety(op.results[0])
    define_map(ctx, op, lambda r: round_back(ctx, t, f"fmod({as_float(ctx, a, r)}, {as_float(ctx, b, r)})"), hint="rem")


@lowers("arith.negf")
def negf(ctx, op):
    (a,) = op.operands
    t = _ety(op.results[0])
    define_map(ctx, op, lambda r: f"-{ctx.expr(a, r)}" if not _is_small_float(t)
                else round_back(ctx, t, f"-{as_float(ctx, a, r)}"), hint="neg")


@lowers("arith.maximumf", "arith.minimumf", "arith.maxnumf", "arith.minnumf")
def float_minmax(ctx, op):
    a, b = op.operands
    t = _ety(op.results[0])
    if op.name in ("arith.maximumf", "arith.minimumf"):
        use(ctx, "maximumf")  # mslib/fp32.py
        fn = "tmps_" + op.name.split(".")[1]
    else:
        fn = "fmax" if op.name == "arith.maxnumf" else "fmin"
    define_map(ctx, op, lambda r: round_back(ctx, t, f"{fn}({as_float(ctx, a, r)}, {as_float(ctx, b, r)})"),
                hint=fn.replace("tmps_", ""))


@lowers("tt.clampf")
def clampf(ctx, op):
    x, lo, hi = op.operands
    t = _ety(op.results[0])
    prop = op.attrs.get("propagateNan", "")

    def reg(r):
        xf = as_float(ctx, x, r)
        core = f"fmin(fmax({xf}, {as_float(ctx, lo, r)}), {as_float(ctx, hi, r)})"
        if prop == "all":
            core = f"({xf} != {xf} ? {xf} : {core})"
        return round_back(ctx, t, core)

    define_map(ctx, op, reg, hint="clamp")


# math.* ops: one row each in the math table (triton_mps/math_functions.py), whose `math_f32` is
# the float expression; on fp64 the row's `f64` (ops/float64.py)

def _math_expr(ctx, template: str, args: list[str]) -> str:
    use_called(ctx, template)  # the float helpers it calls (mslib/fp32.py)
    return template.format(*args)


@lowers(*BY_MATH_OP)
def float_math(ctx, op):
    t = _ety(op.results[0])
    tpl = BY_MATH_OP[op.name].math_f32
    define_map(ctx, op, lambda r: round_back(ctx, t, _math_expr(ctx, tpl, [as_float(ctx, a, r) for a in op.operands])),
                hint=op.name.split(".")[1])


# ---------------------------------------------------------------------------------------------
# integer ops


def _wrap(t: ScalarType, expr_unsigned: str) -> str:
    return f"({t.msl()})({expr_unsigned})"


@lowers("arith.addi", "arith.subi", "arith.muli")
def int_arith(ctx, op):
    a, b = op.operands
    t = _ety(op.results[0])
    sym = {"arith.addi": "+", "arith.subi": "-", "arith.muli": "*"}[op.name]
    if t.name == "i1":
        fn = {"+": "!=", "-": "!=", "*": "&&"}[sym]
        define_map(ctx, op, lambda r: f"{ctx.expr(a, r)} {fn} {ctx.expr(b, r)}")
    elif t.bits >= 32:
        define_map(ctx, op, lambda r: _wrap(t, f"{_u(t, ctx.expr(a, r))} {sym} {_u(t, ctx.expr(b, r))}"))
    else:
        define_map(ctx, op, lambda r: f"({t.msl()})({ctx.expr(a, r)} {sym} {ctx.expr(b, r)})")


@lowers("arith.andi", "arith.ori", "arith.xori")
def int_bitwise(ctx, op):
    a, b = op.operands
    t = _ety(op.results[0])
    sym = {"arith.andi": "&", "arith.ori": "|", "arith.xori": "^"}[op.name]
    if t.name == "i1":
        sym = {"&": "&&", "|": "||", "^": "!="}[sym]
        define_map(ctx, op, lambda r: f"{ctx.expr(a, r)} {sym} {ctx.expr(b, r)}")
    else:
        define_map(ctx, op, lambda r: f"({t.msl()})({ctx.expr(a, r)} {sym} {ctx.expr(b, r)})")


@lowers("arith.shli", "arith.shrsi", "arith.shrui")
def shifts(ctx, op):
    a, b = op.operands
    t = _ety(op.results[0])
    n = t.bits
    ut = t.msl_unsigned()

    def reg(r):
        x, s = ctx.expr(a, r), ctx.expr(b, r)
        amt = f"({ut}){s}"
        if op.name == "arith.shli":
            return f"{amt} < {n}u ? ({t.msl()})(({ut}){x} << {amt}) : ({t.msl()})0"
        if op.name == "arith.shrui":
            return f"{amt} < {n}u ? ({t.msl()})(({ut}){x} >> {amt}) : ({t.msl()})0"
        return f"({t.msl()})({x} >> ({amt} < {n}u ? {amt} : {n - 1}u))"

    define_map(ctx, op, reg, hint=op.name.split(".")[1])


def _div_helpers(ctx, t: ScalarType) -> str:
    """Per-type division helpers: no trap on x/0 or MIN/-1 (masked lanes may divide by zero)."""
    s, u = t.msl(), t.msl_unsigned()
    key = f"div_{s}"
    _helper(ctx, key, f"""inline {s} tmps_divsi_{s}({s} a, {s} b) {{
  if (b == 0) return 0;
  if (b == -1) return ({s})(({u})0 - ({u})a);
  return a / b;
}}
inline {s} tmps_remsi_{s}({s} a, {s} b) {{ return (b == 0 || b == -1) ? ({s})0 : ({s})(a % b); }}
inline {s} tmps_divui_{s}({s} a, {s} b) {{ return b == 0 ? ({s})0 : ({s})(({u})a / ({u})b); }}
inline {s} tmps_remui_{s}({s} a, {s} b) {{ return b == 0 ? ({s})0 : ({s})(({u})a % ({u})b); }}
inline {s} tmps_floordivsi_{s}({s} a, {s} b) {{
  {s} q = tmps_divsi_{s}(a, b);
  return (b != 0 && (a % (b == -1 ? ({s})1 : b)) != 0 && ((a < 0) != (b < 0))) ? ({s})(q - 1) : q;
}}
inline {s} tmps_ceildivsi_{s}({s} a, {s} b) {{
  {s} q = tmps_divsi_{s}(a, b);
  return (b != 0 && (a % (b == -1 ? ({s})1 : b)) != 0 && ((a < 0) == (b < 0))) ? ({s})(q + 1) : q;
}}
inline {s} tmps_ceildivui_{s}({s} a, {s} b) {{
  if (b == 0) return 0;
  {u} q = ({u})a / ({u})b;
  return ({s})((({u})a % ({u})b) != 0 ? q + 1 : q);
}}
""")
    return s


@lowers("arith.divsi", "arith.divui", "arith.remsi", "arith.remui", "arith.floordivsi", "arith.ceildivsi",
        "arith.ceildivui")
def int_div(ctx, op):
    a, b = op.operands
    t = _ety(op.results[0])
    if t.name == "i1":
        ctx.error(op, "division of i1 values is not supported")
    s = _div_helpers(ctx, t)
    fn = f"tmps_{op.name.split('.')[1]}_{s}"
    define_map(ctx, op, lambda r: f"{fn}({ctx.expr(a, r)}, {ctx.expr(b, r)})", hint=op.name.split(".")[1])


@lowers("arith.maxsi", "arith.minsi", "arith.maxui", "arith.minui")
def int_minmax(ctx, op):
    a, b = op.operands
    t = _ety(op.results[0])
    signed = op.name.endswith("si")
    cmp = ">" if "max" in op.name else "<"

    def reg(r):
        x, y = ctx.expr(a, r), ctx.expr(b, r)
        if signed or t.name == "i1":
            return f"{x} {cmp} {y} ? {x} : {y}"
        return f"{_u(t, x)} {cmp} {_u(t, y)} ? {x} : {y}"

    define_map(ctx, op, reg, hint=op.name.split(".")[1])


@lowers("math.absi")
def absi(ctx, op):
    (a,) = op.operands
    t = _ety(op.results[0])
    u = t.msl_unsigned()
    define_map(ctx, op, lambda r: f"({t.msl()})({ctx.expr(a, r)} < 0 ? ({u})0 - {_u(t, ctx.expr(a, r))} : "
                                   f"{_u(t, ctx.expr(a, r))})", hint="abs")


@lowers("math.ctlz", "math.cttz", "math.ctpop")
def bitcount(ctx, op):
    (a,) = op.operands
    t = _ety(op.results[0])
    fn = {"math.ctlz": "clz", "math.cttz": "ctz", "math.ctpop": "popcount"}[op.name]
    define_map(ctx, op, lambda r: f"({t.msl()}){fn}({_u(t, ctx.expr(a, r))})", hint=fn)


@lowers("tt.mulhiui")
def mulhiui(ctx, op):
    a, b = op.operands
    t = _ety(op.results[0])
    if t.bits == 32:
        f = lambda r: f"(int)(((ulong)(uint){ctx.expr(a, r)} * (ulong)(uint){ctx.expr(b, r)}) >> 32)"  # noqa: E731
    else:
        f = lambda r: f"({t.msl()})mulhi({_u(t, ctx.expr(a, r))}, {_u(t, ctx.expr(b, r))})"  # noqa: E731
    define_map(ctx, op, f, hint="mulhi")


# ---------------------------------------------------------------------------------------------
# comparisons and select

_CMPI = ["==", "!=", "<", "<=", ">", ">=", "<", "<=", ">", ">="]  # by CMPI_PREDICATES index


@lowers("arith.cmpi")
def cmpi(ctx, op):
    a, b = op.operands
    t = _ety(a)
    p = predicate(op, CMPI_PREDICATES)
    sym = _CMPI[p]
    unsigned = p >= 6

    def reg(r):
        x, y = ctx.expr(a, r), ctx.expr(b, r)
        if isinstance(t, PointerType):
            return f"(ulong){x} {sym} (ulong){y}"
        if unsigned and t.name != "i1":
            x, y = _u(t, x), _u(t, y)
        return f"{x} {sym} {y}"

    define_map(ctx, op, reg, hint=CMPI_PREDICATES[p])


@lowers("arith.cmpf")
def cmpf(ctx, op):
    a, b = op.operands
    p = predicate(op, CMPF_PREDICATES)
    name = CMPF_PREDICATES[p]

    def reg(r):
        x, y = as_float(ctx, a, r), as_float(ctx, b, r)
        return {
            "false": "false", "true": "true",
            "oeq": f"{x} == {y}", "ogt": f"{x} > {y}", "oge": f"{x} >= {y}", "olt": f"{x} < {y}",
            "ole": f"{x} <= {y}", "one": f"({x} < {y} || {x} > {y})", "ord": f"({x} == {x} && {y} == {y})",
            "ueq": f"!({x} < {y} || {x} > {y})", "ugt": f"!({x} <= {y})", "uge": f"!({x} < {y})",
            "ult": f"!({x} >= {y})", "ule": f"!({x} > {y})", "une": f"{x} != {y}",
            "uno": f"({x} != {x} || {y} != {y})",
        }[name]

    define_map(ctx, op, reg, hint=name)


@lowers("arith.select")
def select(ctx, op):
    c, a, b = op.operands
    define_map(ctx, op, lambda r: f"{ctx.expr(c, r)} ? {ctx.expr(a, r)} : {ctx.expr(b, r)}", hint="sel")


# ---------------------------------------------------------------------------------------------
# casts


def _cast_int(ctx, src: ScalarType, dst: ScalarType, x: str, signed: bool) -> str:
    if dst.name == "i1":
        return f"(({x}) & 1) != 0" if src.name != "i1" else x
    if src.name == "i1":
        return f"({x} ? ({dst.msl()})-1 : ({dst.msl()})0)" if signed else f"({dst.msl()}){x}"
    if signed or dst.bits <= src.bits:
        return f"({dst.msl()}){x}"
    return f"({dst.msl()})({src.msl_unsigned()}){x}"


@lowers("arith.extsi", "arith.extui", "arith.trunci", "arith.index_cast", "arith.index_castui")
def int_casts(ctx, op):
    (a,) = op.operands
    src, dst = _ety(a), _ety(op.results[0])
    signed = op.name in ("arith.extsi", "arith.index_cast")
    define_map(ctx, op, lambda r: _cast_int(ctx, src, dst, ctx.expr(a, r), signed), hint=op.name.split(".")[1])


@lowers("arith.sitofp", "arith.uitofp")
def int_to_float(ctx, op):
    (a,) = op.operands
    src, dst = _ety(a), _ety(op.results[0])
    signed = op.name == "arith.sitofp"

    def reg(r):
        x = ctx.expr(a, r)
        if src.name == "i1":
            v = f"({x} ? -1.0f : 0.0f)" if signed else f"({x} ? 1.0f : 0.0f)"
            return round_back(ctx, dst, v) if dst.name != "f32" else v
        if not signed:
            x = _u(src, x)
        if dst.name == "f32":
            return f"(float){x}"
        if dst.name == "f16":
            return f"(half){x}"
        # bfloat and fp8 through float (Metal converts float -> bfloat): a 32/64-bit integer
        # goes to float rounded to odd, so that the second rounding gives the correctly
        # rounded result (RTNE to float first would round twice: 2**24+2**16+1 -> bfloat)
        xf = f"(float){x}" if src.bits < 32 else _int_to_float_odd(ctx, x, signed)
        if dst.is_fp8:
            return float_to_fp8(ctx, dst, xf)
        return f"(bfloat){xf}"

    define_map(ctx, op, reg, hint="cvt")


def _int_to_float_odd(ctx, x: str, signed: bool) -> str:
    """An integer (already unsigned when not `signed`) converted to float rounded to odd."""
    if not signed:
        use(ctx, "tmps_u64_to_float_odd")  # mslib/fp32.py
        return f"tmps_u64_to_float_odd((ulong){x})"
    use(ctx, "tmps_i64_to_float_odd")
    return f"tmps_i64_to_float_odd((long){x})"


@lowers("arith.fptosi", "arith.fptoui")
def float_to_int(ctx, op):
    (a,) = op.operands
    dst = _ety(op.results[0])
    signed = op.name == "arith.fptosi"

    def reg(r):
        x = as_float(ctx, a, r)
        if dst.name == "i1":
            return f"{x} != 0.0f"
        if signed:
            return f"({dst.msl()}){x}"
        return f"({dst.msl()})({dst.msl_unsigned()}){x}"

    define_map(ctx, op, reg, hint="cvt")


def _float_convert(ctx, src: ScalarType, dst: ScalarType, x: str, rounding: str = "") -> str:
    if src.name == dst.name:
        return x
    if src.is_fp8 or dst.is_fp8:
        # Through float: exact for every upcast (fp8 values are floats, halves and bfloats), and
        # one rounding for a downcast since half/bfloat -> float is exact.
        xf = fp8_to_float(ctx, src, x) if src.is_fp8 else (x if src.name == "f32" else f"(float){x}")
        if dst.is_fp8:
            return float_to_fp8(ctx, dst, xf, "rtz" if rounding == "rtz" else "rtne")
        return xf if dst.name == "f32" else f"({dst.msl()}){xf}"
    if dst.name == "f32":
        return f"(float){x}"
    if rounding == "rtz":
        # Round to nearest (the hardware conversion), then one step toward zero when that
        # rounded away from zero; NaN stays NaN and an overflow to inf becomes the largest
        # finite value, as round-toward-zero requires.
        t = dst.msl()
        name = f"tmps_rtz_{t}"
        ctx.e.helper(name, f"""static inline {t} {name}(float x) {{
  {t} r = ({t})x;
  if (x != x) return r;
  if (fabs((float)r) > fabs(x)) r = as_type<{t}>((ushort)(as_type<ushort>(r) - 1));
  return r;
}}""")
        xf = x if src.name == "f32" else f"(float){x}"
        return f"{name}({xf})"
    if src.name == "f32":
        return f"({dst.msl()}){x}"
    return f"({dst.msl()})(float){x}"


@lowers("arith.extf", "arith.truncf", "tt.fp_to_fp")
def float_casts(ctx, op):
    (a,) = op.operands
    src, dst = _ety(a), _ety(op.results[0])
    for t in (src, dst):
        if not isinstance(t, ScalarType) or not (t.name in ("f16", "bf16", "f32") or t.is_fp8):
            ctx.error(op, f"conversion involving {t} is not supported by the Metal backend (fp64)")
    mode = "rtz" if op.attrs.get("rounding") == "rtz" else ""
    define_map(ctx, op, lambda r: _float_convert(ctx, src, dst, ctx.expr(a, r), mode), hint="cvt")


@lowers("arith.bitcast", "tt.bitcast")
def bitcast(ctx, op):
    (a,) = op.operands
    src, dst = _ety(a), _ety(op.results[0])
    if isinstance(dst, PointerType) or isinstance(src, PointerType):
        define_map(ctx, op, lambda r: f"({ctx.msl_type(dst)})({ctx.expr(a, r)})", hint="cast")
    elif src.name == "i1" or dst.name == "i1":
        define_map(ctx, op, lambda r: ctx.expr(a, r), hint="cast")
    else:
        define_map(ctx, op, lambda r: f"as_type<{dst.msl()}>({ctx.expr(a, r)})", hint="cast")


# ---- tt.map_elementwise: a scalar function applied to each element (or `pack` elements) -----

@lowers("tt.map_elementwise")
def map_elementwise(ctx, op):
    """The region runs once per group of `pack` registers, inline: its arguments are the groups'
    elements operand by operand (a0, a1, b0, b1 for pack=2), its results those of each output in
    turn. The region may branch (an early `return` in the Python function becomes cf.cond_br):
    every path ends in tt.map_elementwise.return, which assigns the result variables declared
    here. A group past the last register repeats the last one (computed again, same value)."""
    pack = op.int_attr("pack") or 1
    block = op.regions[0].blocks[0]
    if len(block.args) != pack * len(op.operands):
        ctx.error(op, f"region takes {len(block.args)} arguments for {len(op.operands)} operands x pack {pack}")
    n = ctx.num_regs(op.results[0]) if op.results else ctx.num_regs(op.operands[0])
    outs = [ctx.declare(v, hint="mapped") for v in op.results]
    types = [ctx.msl_type(v) for v in op.results]
    for g in range(0, n, pack):
        regs = [min(g + k, n - 1) for k in range(pack)]
        args = [ctx.expr(v, r) for v in op.operands for r in regs]
        targets = [(names[r], t) for names, t in zip(outs, types, strict=True) for r in regs]
        ctx.map_results.append(targets)
        try:
            with ctx.e.block(""):
                ctx.lower_block(block, args)
        finally:
            ctx.map_results.pop()


@lowers("tt.map_elementwise.return")
def map_elementwise_return(ctx, op):
    if not ctx.map_results:
        ctx.error(op, "tt.map_elementwise.return outside tt.map_elementwise")
    targets = ctx.map_results[-1]
    if len(op.operands) != len(targets):
        ctx.error(op, f"region returns {len(op.operands)} values for {len(targets)} results")
    ctx.assign([nm for nm, _ in targets], [ctx.expr(v) for v in op.operands], [t for _, t in targets])
