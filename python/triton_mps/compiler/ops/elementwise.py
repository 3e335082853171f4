"""arith.* / math.* / casts and Triton's elementwise ops, register by register.

fp16/bf16 arithmetic is done in float and rounded back (exact for + - * /, and what Triton's
other backends do for math functions). Signed i32/i64 add/sub/mul go through unsigned types so
that overflow wraps (signed overflow is undefined in C++, which the simulator compiles).
"""

from __future__ import annotations

import re

from ..ir import Op
from ..lowering import LoweringContext, lowers
from ..types import PointerType, ScalarType, TensorType, elem_of

# ---------------------------------------------------------------------------------------------
# helpers


def _ety(v) -> ScalarType:
    return elem_of(v.type)


def _is_small_float(t) -> bool:
    return isinstance(t, ScalarType) and t.name in ("f16", "bf16")


def _f(ctx, v, r) -> str:
    """Operand as float arithmetic input (half/bfloat widened to float)."""
    x = ctx.expr(v, r)
    return f"(float){x}" if _is_small_float(_ety(v)) else x


def _back(t: ScalarType, x: str) -> str:
    return f"({t.msl()})({x})" if _is_small_float(t) else x


def _u(t: ScalarType, x: str) -> str:
    return f"({t.msl_unsigned()}){x}"


def _helper(ctx: LoweringContext, key: str, text: str) -> None:
    ctx.e.helper(key, text)


def _define_map(ctx, op, fn, hint=None):
    res = op.results[0]
    ctx.define(res, fn, hint=hint or ctx.hint(res, op.name.split(".")[-1]))


# ---------------------------------------------------------------------------------------------
# constants

_HEX = re.compile(r"^0x[0-9A-Fa-f]+$")


def _parse_scalar_text(ctx, op, txt: str, t: ScalarType):
    txt = txt.strip()
    if txt in ("true", "false"):
        return 1 if txt == "true" else 0
    if t.is_float:
        if _HEX.match(txt):
            import struct

            bits = int(txt, 16)
            if t.name == "f32":
                return struct.unpack("<f", struct.pack("<I", bits))[0]
            if t.name == "f16":
                import numpy as np

                return float(np.array([bits], np.uint16).view(np.float16)[0])
            if t.name == "bf16":
                return struct.unpack("<f", struct.pack("<I", bits << 16))[0]
        return float(txt)
    return int(txt, 0)


def _small_float_literal(ctx, value: float, t: ScalarType) -> str:
    """Literal for an f16/bf16 constant: the exact value as float, then converted."""
    import numpy as np

    if t.name == "f16":
        value = float(np.float16(value))
    return ctx.literal(value, t)


@lowers("arith.constant")
def constant(ctx: LoweringContext, op: Op):
    res = op.results[0]
    t = _ety(res)
    body = op.text.split("arith.constant", 1)[1]
    body = body.rsplit(" : ", 1)[0].strip()
    if body.startswith("dense<"):
        inner = body[len("dense<"):-1].strip()
        if inner.startswith("["):
            ctx.error(op, "non-uniform dense tensor constants are not supported yet")
        val = _parse_scalar_text(ctx, op, inner, t)
    else:
        val = _parse_scalar_text(ctx, op, body, t)
    lit = ctx.literal(val, t)
    if isinstance(res.type, TensorType):
        ctx.bind(res, lit)
    else:
        ctx.define(res, lit, hint=ctx.hint(res, "c"))


# ---------------------------------------------------------------------------------------------
# float binary / unary

_FBIN = {"arith.addf": "+", "arith.subf": "-", "arith.mulf": "*", "arith.divf": "/"}


@lowers(*_FBIN)
def float_binary(ctx, op):
    a, b = op.operands
    t = _ety(op.results[0])
    sym = _FBIN[op.name]
    _define_map(ctx, op, lambda r: _back(t, f"{_f(ctx, a, r)} {sym} {_f(ctx, b, r)}"))


@lowers("tt.precise_divf")
def precise_div(ctx, op):
    a, b = op.operands
    t = _ety(op.results[0])
    _define_map(ctx, op, lambda r: _back(t, f"precise::divide({_f(ctx, a, r)}, {_f(ctx, b, r)})"), hint="div")


@lowers("tt.precise_sqrt")
def precise_sqrt(ctx, op):
    (a,) = op.operands
    t = _ety(op.results[0])
    _define_map(ctx, op, lambda r: _back(t, f"precise::sqrt({_f(ctx, a, r)})"), hint="sqrt")


@lowers("arith.remf")
def remf(ctx, op):
    a, b = op.operands
    t = _ety(op.results[0])
    _define_map(ctx, op, lambda r: _back(t, f"fmod({_f(ctx, a, r)}, {_f(ctx, b, r)})"), hint="rem")


@lowers("arith.negf")
def negf(ctx, op):
    (a,) = op.operands
    t = _ety(op.results[0])
    _define_map(ctx, op, lambda r: f"-{ctx.expr(a, r)}" if not _is_small_float(t) else _back(t, f"-{_f(ctx, a, r)}"), hint="neg")


_MAXIMUM = """inline float tmps_maximumf(float a, float b) {
  // NaN-propagating maximum; -0 < +0 (LLVM `maximum`).
  if (a != a) return a;
  if (b != b) return b;
  if (a == b) return as_type<uint>(a) & 0x80000000u ? b : a;
  return a > b ? a : b;
}
inline float tmps_minimumf(float a, float b) {
  if (a != a) return a;
  if (b != b) return b;
  if (a == b) return as_type<uint>(a) & 0x80000000u ? a : b;
  return a < b ? a : b;
}
"""


@lowers("arith.maximumf", "arith.minimumf", "arith.maxnumf", "arith.minnumf")
def float_minmax(ctx, op):
    a, b = op.operands
    t = _ety(op.results[0])
    if op.name in ("arith.maximumf", "arith.minimumf"):
        _helper(ctx, "maximumf", _MAXIMUM)
        fn = "tmps_" + op.name.split(".")[1]
    else:
        fn = "fmax" if op.name == "arith.maxnumf" else "fmin"
    _define_map(ctx, op, lambda r: _back(t, f"{fn}({_f(ctx, a, r)}, {_f(ctx, b, r)})"), hint=fn.replace("tmps_", ""))


@lowers("tt.clampf")
def clampf(ctx, op):
    x, lo, hi = op.operands
    t = _ety(op.results[0])
    prop = (op.attr("propagateNan") or "").strip().lower()

    def reg(r):
        xf = _f(ctx, x, r)
        core = f"fmin(fmax({xf}, {_f(ctx, lo, r)}), {_f(ctx, hi, r)})"
        if "all" in prop:
            core = f"({xf} != {xf} ? {xf} : {core})"
        return _back(t, core)

    _define_map(ctx, op, reg, hint="clamp")


# math functions: name -> (MSL expression template over float `{0}`, `{1}`, `{2}`)
_MATH_F = {
    "math.exp": "exp({0})", "math.exp2": "exp2({0})", "math.log": "log({0})", "math.log2": "log2({0})",
    "math.log10": "log10({0})", "math.sqrt": "sqrt({0})", "math.rsqrt": "rsqrt({0})",
    "math.sin": "sin({0})", "math.cos": "cos({0})", "math.tan": "tan({0})", "math.tanh": "tanh({0})",
    "math.sinh": "sinh({0})", "math.cosh": "cosh({0})", "math.asin": "asin({0})", "math.acos": "acos({0})",
    "math.atan": "atan({0})", "math.asinh": "asinh({0})", "math.acosh": "acosh({0})", "math.atanh": "atanh({0})",
    "math.absf": "fabs({0})", "math.floor": "floor({0})", "math.ceil": "ceil({0})",
    "math.trunc": "trunc({0})", "math.round": "round({0})", "math.roundeven": "rint({0})",
    "math.erf": "tmps_erf({0})", "math.erfc": "(1.0f - tmps_erf({0}))", "math.log1p": "tmps_log1p({0})",
    "math.expm1": "tmps_expm1({0})", "math.cbrt": "tmps_cbrt({0})",
    "math.fma": "fma({0}, {1}, {2})", "math.powf": "pow({0}, {1})", "math.atan2": "atan2({0}, {1})",
    "math.copysign": "copysign({0}, {1})",
}

# Metal lacks erf, log1p, expm1 and cbrt: our own versions (float).
_FLOAT_HELPERS = {
    "tmps_erf": """inline float tmps_erf(float x) {
  // erfc by a Chebyshev fit (fractional error < 1.2e-7), erf = 1 - erfc; small |x| by series.
  float z = fabs(x);
  if (z < 0.5f) {
    float z2 = x * x;
    return x * (1.1283791671f + z2 * (-0.3761263890f + z2 * (0.1128379167f + z2 * (-0.0268661706f + z2 * 0.0052239776f))));
  }
  float t = 1.0f / (1.0f + 0.5f * z);
  float r = t * exp(-z * z - 1.26551223f + t * (1.00002368f + t * (0.37409196f + t * (0.09678418f +
            t * (-0.18628806f + t * (0.27886807f + t * (-1.13520398f + t * (1.48851587f +
            t * (-0.82215223f + t * 0.17087277f)))))))));
  return x >= 0.0f ? 1.0f - r : r - 1.0f;
}
""",
    "tmps_log1p": """inline float tmps_log1p(float x) {
  float u = 1.0f + x;
  return u == 1.0f ? x : log(u) * (x / (u - 1.0f));
}
""",
    "tmps_expm1": """inline float tmps_expm1(float x) {
  if (fabs(x) < 1e-5f) return x + 0.5f * x * x;
  float u = exp(x);
  if (u == 1.0f) return x;
  float um1 = u - 1.0f;
  if (um1 == -1.0f) return -1.0f;
  if (isinf(u)) return u;
  return um1 * x / log(u);
}
""",
    "tmps_cbrt": """inline float tmps_cbrt(float x) {
  if (x == 0.0f || isinf(x) || x != x) return x;
  float y = copysign(pow(fabs(x), 1.0f / 3.0f), x);
  return y - (y * y * y - x) / (3.0f * y * y);  // one Newton step
}
""",
}


def _math_expr(ctx, template: str, args: list[str]) -> str:
    for name, text in _FLOAT_HELPERS.items():
        if name in template:
            _helper(ctx, name, text)
    return template.format(*args)


@lowers(*_MATH_F)
def float_math(ctx, op):
    t = _ety(op.results[0])
    tpl = _MATH_F[op.name]
    _define_map(ctx, op, lambda r: _back(t, _math_expr(ctx, tpl, [_f(ctx, a, r) for a in op.operands])),
                hint=op.name.split(".")[1])


# libdevice names (Triton's extern_elementwise) -> templates over float args
_LIBDEVICE = {
    "exp": "exp({0})", "exp2": "exp2({0})", "exp10": "exp10({0})", "log": "log({0})", "log2": "log2({0})",
    "log10": "log10({0})", "sqrt": "sqrt({0})", "rsqrt": "rsqrt({0})", "sin": "sin({0})", "cos": "cos({0})",
    "tan": "tan({0})", "tanh": "tanh({0})", "sinh": "sinh({0})", "cosh": "cosh({0})", "asin": "asin({0})",
    "acos": "acos({0})", "atan": "atan({0})", "asinh": "asinh({0})", "acosh": "acosh({0})",
    "atanh": "atanh({0})", "fabs": "fabs({0})", "floor": "floor({0})", "ceil": "ceil({0})",
    "trunc": "trunc({0})", "round": "round({0})", "rint": "rint({0})", "nearbyint": "rint({0})",
    "erf": "tmps_erf({0})", "erfc": "(1.0f - tmps_erf({0}))", "log1p": "tmps_log1p({0})",
    "expm1": "tmps_expm1({0})", "cbrt": "tmps_cbrt({0})", "pow": "pow({0}, {1})", "powf": "pow({0}, {1})",
    "atan2": "atan2({0}, {1})", "fmod": "fmod({0}, {1})", "fmin": "fmin({0}, {1})", "fmax": "fmax({0}, {1})",
    "copysign": "copysign({0}, {1})", "hypot": "sqrt({0} * {0} + {1} * {1})", "fma": "fma({0}, {1}, {2})",
    "div_rn": "precise::divide({0}, {1})", "sqrt_rn": "precise::sqrt({0})", "fdiv_rn": "precise::divide({0}, {1})",
    "isnan": "isnan({0})", "isinf": "isinf({0})", "signbit": "signbit({0})", "finitef": "isfinite({0})",
    "isfinited": "isfinite({0})",
}


@lowers("tt.extern_elementwise")
def extern_elementwise(ctx, op):
    sym = (op.attr("symbol") or "").strip('"')
    name = re.sub(r"^__nv_", "", sym)
    base = name[:-1] if name.endswith("f") and name[:-1] in _LIBDEVICE else name
    tpl = _LIBDEVICE.get(base)
    res = op.results[0]
    t = _ety(res)
    if tpl is None or not (t.is_float or base in ("isnan", "isinf", "signbit", "finitef", "isfinited")):
        ctx.error(op, f"extern function '{sym}' has no Metal equivalent in this backend")
    if t.is_float:
        _define_map(ctx, op, lambda r: _back(t, _math_expr(ctx, tpl, [_f(ctx, a, r) for a in op.operands])), hint=base)
    else:
        _define_map(ctx, op, lambda r: f"({t.msl()})({_math_expr(ctx, tpl, [_f(ctx, a, r) for a in op.operands])})", hint=base)


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
        _define_map(ctx, op, lambda r: f"{ctx.expr(a, r)} {fn} {ctx.expr(b, r)}")
    elif t.bits >= 32:
        _define_map(ctx, op, lambda r: _wrap(t, f"{_u(t, ctx.expr(a, r))} {sym} {_u(t, ctx.expr(b, r))}"))
    else:
        _define_map(ctx, op, lambda r: f"({t.msl()})({ctx.expr(a, r)} {sym} {ctx.expr(b, r)})")


@lowers("arith.andi", "arith.ori", "arith.xori")
def int_bitwise(ctx, op):
    a, b = op.operands
    t = _ety(op.results[0])
    sym = {"arith.andi": "&", "arith.ori": "|", "arith.xori": "^"}[op.name]
    if t.name == "i1":
        sym = {"&": "&&", "|": "||", "^": "!="}[sym]
        _define_map(ctx, op, lambda r: f"{ctx.expr(a, r)} {sym} {ctx.expr(b, r)}")
    else:
        _define_map(ctx, op, lambda r: f"({t.msl()})({ctx.expr(a, r)} {sym} {ctx.expr(b, r)})")


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

    _define_map(ctx, op, reg, hint=op.name.split(".")[1])


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


@lowers("arith.divsi", "arith.divui", "arith.remsi", "arith.remui", "arith.floordivsi", "arith.ceildivsi", "arith.ceildivui")
def int_div(ctx, op):
    a, b = op.operands
    t = _ety(op.results[0])
    if t.name == "i1":
        ctx.error(op, "division of i1 values is not supported")
    s = _div_helpers(ctx, t)
    fn = f"tmps_{op.name.split('.')[1]}_{s}"
    _define_map(ctx, op, lambda r: f"{fn}({ctx.expr(a, r)}, {ctx.expr(b, r)})", hint=op.name.split(".")[1])


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

    _define_map(ctx, op, reg, hint=op.name.split(".")[1])


@lowers("math.absi")
def absi(ctx, op):
    (a,) = op.operands
    t = _ety(op.results[0])
    _define_map(ctx, op, lambda r: f"({t.msl()})({ctx.expr(a, r)} < 0 ? ({t.msl_unsigned()})0 - {_u(t, ctx.expr(a, r))} : {_u(t, ctx.expr(a, r))})", hint="abs")


@lowers("math.ctlz", "math.cttz", "math.ctpop")
def bitcount(ctx, op):
    (a,) = op.operands
    t = _ety(op.results[0])
    fn = {"math.ctlz": "clz", "math.cttz": "ctz", "math.ctpop": "popcount"}[op.name]
    _define_map(ctx, op, lambda r: f"({t.msl()}){fn}({_u(t, ctx.expr(a, r))})", hint=fn)


@lowers("tt.mulhiui")
def mulhiui(ctx, op):
    a, b = op.operands
    t = _ety(op.results[0])
    if t.bits == 32:
        f = lambda r: f"(int)(((ulong)(uint){ctx.expr(a, r)} * (ulong)(uint){ctx.expr(b, r)}) >> 32)"  # noqa: E731
    else:
        f = lambda r: f"({t.msl()})mulhi({_u(t, ctx.expr(a, r))}, {_u(t, ctx.expr(b, r))})"  # noqa: E731
    _define_map(ctx, op, f, hint="mulhi")


# ---------------------------------------------------------------------------------------------
# comparisons and select

_CMPI = ["==", "!=", "<", "<=", ">", ">=", "<", "<=", ">", ">="]
_CMPI_NAMES = ["eq", "ne", "slt", "sle", "sgt", "sge", "ult", "ule", "ugt", "uge"]
_CMPF_NAMES = ["false", "oeq", "ogt", "oge", "olt", "ole", "one", "ord", "ueq", "ugt", "uge", "ult", "ule", "une", "uno", "true"]


def _predicate(op, names) -> int:
    word = op.text.split(op.name, 1)[1].strip().split(",")[0].strip()
    if word in names:
        return names.index(word)
    p = op.int_attr("predicate")
    if p is None:
        raise ValueError(f"cannot read predicate of {op.text!r}")
    return p


@lowers("arith.cmpi")
def cmpi(ctx, op):
    a, b = op.operands
    t = _ety(a)
    p = _predicate(op, _CMPI_NAMES)
    sym = _CMPI[p]
    unsigned = p >= 6

    def reg(r):
        x, y = ctx.expr(a, r), ctx.expr(b, r)
        if isinstance(t, PointerType):
            return f"(ulong){x} {sym} (ulong){y}"
        if unsigned and t.name != "i1":
            x, y = _u(t, x), _u(t, y)
        return f"{x} {sym} {y}"

    _define_map(ctx, op, reg, hint=_CMPI_NAMES[p])


@lowers("arith.cmpf")
def cmpf(ctx, op):
    a, b = op.operands
    p = _predicate(op, _CMPF_NAMES)
    name = _CMPF_NAMES[p]

    def reg(r):
        x, y = _f(ctx, a, r), _f(ctx, b, r)
        return {
            "false": "false", "true": "true",
            "oeq": f"{x} == {y}", "ogt": f"{x} > {y}", "oge": f"{x} >= {y}", "olt": f"{x} < {y}",
            "ole": f"{x} <= {y}", "one": f"({x} < {y} || {x} > {y})", "ord": f"({x} == {x} && {y} == {y})",
            "ueq": f"!({x} < {y} || {x} > {y})", "ugt": f"!({x} <= {y})", "uge": f"!({x} < {y})",
            "ult": f"!({x} >= {y})", "ule": f"!({x} > {y})", "une": f"{x} != {y}",
            "uno": f"({x} != {x} || {y} != {y})",
        }[name]

    _define_map(ctx, op, reg, hint=name)


@lowers("arith.select")
def select(ctx, op):
    c, a, b = op.operands
    _define_map(ctx, op, lambda r: f"{ctx.expr(c, r)} ? {ctx.expr(a, r)} : {ctx.expr(b, r)}", hint="sel")


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
    _define_map(ctx, op, lambda r: _cast_int(ctx, src, dst, ctx.expr(a, r), signed), hint=op.name.split(".")[1])


@lowers("arith.sitofp", "arith.uitofp")
def int_to_float(ctx, op):
    (a,) = op.operands
    src, dst = _ety(a), _ety(op.results[0])
    signed = op.name == "arith.sitofp"

    def reg(r):
        x = ctx.expr(a, r)
        if src.name == "i1":
            v = f"({x} ? -1.0f : 0.0f)" if signed else f"({x} ? 1.0f : 0.0f)"
            return _back(dst, v) if dst.name != "f32" else v
        if not signed:
            x = _u(src, x)
        if dst.name == "f32":
            return f"(float){x}"
        if dst.name == "f16":
            return f"(half){x}"
        return f"(bfloat)(float){x}"  # bfloat from integers via float (Metal converts float->bfloat)

    _define_map(ctx, op, reg, hint="cvt")


@lowers("arith.fptosi", "arith.fptoui")
def float_to_int(ctx, op):
    (a,) = op.operands
    dst = _ety(op.results[0])
    signed = op.name == "arith.fptosi"

    def reg(r):
        x = _f(ctx, a, r)
        if dst.name == "i1":
            return f"{x} != 0.0f"
        if signed:
            return f"({dst.msl()}){x}"
        return f"({dst.msl()})({dst.msl_unsigned()}){x}"

    _define_map(ctx, op, reg, hint="cvt")


def _float_convert(ctx, src: ScalarType, dst: ScalarType, x: str, rounding: str = "") -> str:
    if src.name == dst.name:
        return x
    if dst.name == "f32":
        return f"(float){x}"
    if rounding == "rtz":
        if dst.name != "bf16":
            raise ValueError("round-toward-zero conversion to f16 is not supported")
        xf = x if src.name == "f32" else f"(float){x}"
        return f"as_type<bfloat>((ushort)(as_type<uint>({xf}) >> 16))"
    if src.name == "f32":
        return f"({dst.msl()}){x}"
    return f"({dst.msl()})(float){x}"


@lowers("arith.extf", "arith.truncf", "tt.fp_to_fp")
def float_casts(ctx, op):
    (a,) = op.operands
    src, dst = _ety(a), _ety(op.results[0])
    for t in (src, dst):
        if not isinstance(t, ScalarType) or t.name not in ("f16", "bf16", "f32"):
            ctx.error(op, f"conversion involving {t} is not supported by the Metal backend (fp8/fp64)")
    rounding = (op.attr("rounding") or "").lower()
    try:
        _define_map(ctx, op, lambda r: _float_convert(ctx, src, dst, ctx.expr(a, r), "rtz" if "rtz" in rounding else ""), hint="cvt")
    except ValueError as exc:
        ctx.error(op, str(exc))


@lowers("arith.bitcast", "tt.bitcast")
def bitcast(ctx, op):
    (a,) = op.operands
    src, dst = _ety(a), _ety(op.results[0])
    if isinstance(dst, PointerType) or isinstance(src, PointerType):
        _define_map(ctx, op, lambda r: f"({dst.msl()})({ctx.expr(a, r)})", hint="cast")
    elif src.name == "i1" or dst.name == "i1":
        _define_map(ctx, op, lambda r: ctx.expr(a, r), hint="cast")
    else:
        _define_map(ctx, op, lambda r: f"as_type<{dst.msl()}>({ctx.expr(a, r)})", hint="cast")
