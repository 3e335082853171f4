"""tt.extern_elementwise: the `tl.extra.libdevice` functions, lowered through one symbol table.

language/libdevice.py (what `tl.extra.libdevice` resolves to on this backend) emits one symbol
"tmps_<name>" per function; `SYMBOLS` says how each one lowers:
- `f32`: the Metal expression for float arguments ({0}, {1}, ... widened to float; the float result
  rounded back to half/bfloat/fp8 once), or for integer arguments (raw). {T} is the result's MSL
  type, {UA} argument 0's unsigned type. precise:: where Triton expects IEEE-like results (kernels
  may be built with fast math on a Mac), fast:: only for the fast_* names. The MSL helpers it calls
  (mslib/fp32.py) are emitted with it.
- `f64`: the symbol also takes fp64 (software binary64, values are `ulong` bits): the library
  function called with the arguments, or an expression over them.
- `wide`: every float type computed in software binary64 (Bessel and special functions): the
  arguments widened exactly, the binary64 result rounded once to the result type.
- `rounding`: (kind, mode) of a directed-rounding function (ops/rounding.py).
Adding a libdevice function: its name in language/libdevice.py and its row here (plus its MSL
helper in a mslib/ family module when neither Metal nor the library has one).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..ir import Op, involves_f64
from ..lowering import LoweringContext, lowers
from ..mslib import fp64
from ..mslib.registry import use_called
from ..types import ScalarType, elem_of
from .elementwise import as_float, define_map, round_back
from .rounding import SYMBOLS as ROUNDING_SYMBOLS
from .rounding import lower as lower_rounding


@dataclass(frozen=True)
class Fn:
    f32: str | None = None
    f64: str | None = None
    wide: str | None = None
    rounding: tuple[str, str] | None = None


SYMBOLS: dict[str, Fn] = {
    # float -> float ({0}, {1}, ...: float arguments; f64: the binary64 function, or an expression)
    "tmps_floor": Fn("floor({0})", f64="tmps_f64_round_int({0}, 1)"),
    "tmps_ceil": Fn("ceil({0})", f64="tmps_f64_round_int({0}, 2)"),
    "tmps_trunc": Fn("trunc({0})", f64="tmps_f64_round_int({0}, 0)"),
    "tmps_round": Fn("round({0})", f64="tmps_f64_round_int({0}, 3)"),
    "tmps_rint": Fn("rint({0})", f64="tmps_f64_round_int({0}, 4)"),
    "tmps_fabs": Fn("fabs({0})", f64="{0} & 0x7ffffffffffffffful"),
    "tmps_saturate": Fn("fmin(fmax({0}, 0.0f), 1.0f)"),
    "tmps_exp": Fn("precise::exp({0})", f64="tmps_f64_exp"),
    "tmps_exp2": Fn("precise::exp2({0})", f64="tmps_f64_exp2"),
    "tmps_exp10": Fn("precise::exp10({0})", f64="tmps_f64_exp10"),
    "tmps_log": Fn("precise::log({0})", f64="tmps_f64_log"),
    "tmps_log2": Fn("precise::log2({0})", f64="tmps_f64_log2"),
    "tmps_log10": Fn("precise::log10({0})", f64="tmps_f64_log10"),
    "tmps_sqrt": Fn("precise::sqrt({0})", f64="tmps_f64_sqrt"),
    "tmps_rsqrt": Fn("precise::rsqrt({0})", f64="tmps_f64_rsqrt"),
    "tmps_rcp": Fn("precise::divide(1.0f, {0})", f64="tmps_f64_div(0x3ff0000000000000ul, {0})"),
    "tmps_sin": Fn("precise::sin({0})", f64="tmps_f64_sin"),
    "tmps_cos": Fn("precise::cos({0})", f64="tmps_f64_cos"),
    "tmps_tan": Fn("precise::tan({0})", f64="tmps_f64_tan"),
    "tmps_sinpi": Fn("precise::sinpi({0})", f64="tmps_f64_sinpi"),
    "tmps_cospi": Fn("precise::cospi({0})", f64="tmps_f64_cospi"),
    "tmps_asin": Fn("precise::asin({0})", f64="tmps_f64_asin"),
    "tmps_acos": Fn("precise::acos({0})", f64="tmps_f64_acos"),
    "tmps_atan": Fn("precise::atan({0})", f64="tmps_f64_atan"),
    "tmps_sinh": Fn("precise::sinh({0})", f64="tmps_f64_sinh"),
    "tmps_cosh": Fn("precise::cosh({0})", f64="tmps_f64_cosh"),
    "tmps_tanh": Fn("precise::tanh({0})", f64="tmps_f64_tanh"),
    "tmps_asinh": Fn("precise::asinh({0})", f64="tmps_f64_asinh"),
    "tmps_acosh": Fn("precise::acosh({0})", f64="tmps_f64_acosh"),
    "tmps_atanh": Fn("precise::atanh({0})", f64="tmps_f64_atanh"),
    "tmps_expm1": Fn("tmps_expm1({0})", f64="tmps_f64_expm1"),
    "tmps_log1p": Fn("tmps_log1p({0})", f64="tmps_f64_log1p"),
    "tmps_erf": Fn("tmps_erf({0})", f64="tmps_f64_erf"),
    "tmps_erfc": Fn("tmps_erfc({0})", f64="tmps_f64_erfc"),
    "tmps_cbrt": Fn("tmps_cbrt({0})", f64="tmps_f64_cbrt"),
    "tmps_rcbrt": Fn("precise::divide(1.0f, tmps_cbrt({0}))", f64="tmps_f64_rcbrt"),
    "tmps_fast_exp": Fn("fast::exp({0})"),
    "tmps_fast_exp10": Fn("fast::exp10({0})"),
    "tmps_fast_log": Fn("fast::log({0})"),
    "tmps_fast_log2": Fn("fast::log2({0})"),
    "tmps_fast_log10": Fn("fast::log10({0})"),
    "tmps_fast_sin": Fn("fast::sin({0})"),
    "tmps_fast_cos": Fn("fast::cos({0})"),
    "tmps_fast_tan": Fn("fast::tan({0})"),
    "tmps_fast_tanh": Fn("fast::tanh({0})"),
    "tmps_pow": Fn("precise::pow({0}, {1})", f64="tmps_f64_pow"),
    "tmps_powi": Fn("tmps_powi({0}, {1})", f64="tmps_f64_powi"),
    "tmps_atan2": Fn("precise::atan2({0}, {1})", f64="tmps_f64_atan2"),
    "tmps_fmod": Fn("fmod({0}, {1})", f64="tmps_f64_fmod"),
    "tmps_remainder": Fn("tmps_remainder({0}, {1})", f64="tmps_f64_remainder"),
    "tmps_fmin": Fn("fmin({0}, {1})", f64="tmps_f64_minnum"),
    "tmps_fmax": Fn("fmax({0}, {1})", f64="tmps_f64_maxnum"),
    "tmps_copysign": Fn("copysign({0}, {1})", f64="({0} & 0x7ffffffffffffffful) | ({1} & 0x8000000000000000ul)"),
    "tmps_fdim": Fn("fdim({0}, {1})", f64="tmps_f64_fdim"),
    "tmps_hypot": Fn("tmps_norm4f({0}, {1}, 0.0f, 0.0f, false)", f64="tmps_f64_hypot"),
    "tmps_rhypot": Fn("tmps_norm4f({0}, {1}, 0.0f, 0.0f, true)", f64="tmps_f64_rhypot"),
    "tmps_nextafter": Fn("tmps_nextafter({0}, {1})", f64="tmps_f64_nextafter"),
    "tmps_div_rn": Fn("precise::divide({0}, {1})", f64="tmps_f64_div"),
    "tmps_fast_divide": Fn("fast::divide({0}, {1})"),
    "tmps_fast_pow": Fn("fast::pow({0}, {1})"),
    "tmps_add": Fn("({0} + {1})", f64="tmps_f64_add"),
    "tmps_sub": Fn("({0} - {1})", f64="tmps_f64_sub"),
    "tmps_mul": Fn("({0} * {1})", f64="tmps_f64_mul"),
    "tmps_fma": Fn("fma({0}, {1}, {2})", f64="tmps_f64_fma"),
    "tmps_ldexp": Fn("ldexp({0}, {1})", f64="tmps_f64_scalbn"),
    "tmps_logb": Fn("tmps_logb({0})", f64="tmps_f64_logb"),
    "tmps_norm3d": Fn("tmps_norm4f({0}, {1}, {2}, 0.0f, false)", f64="tmps_f64_norm3d"),
    "tmps_rnorm3d": Fn("tmps_norm4f({0}, {1}, {2}, 0.0f, true)", f64="tmps_f64_rnorm3d"),
    "tmps_norm4d": Fn("tmps_norm4f({0}, {1}, {2}, {3}, false)", f64="tmps_f64_norm4d"),
    "tmps_rnorm4d": Fn("tmps_norm4f({0}, {1}, {2}, {3}, true)", f64="tmps_f64_rnorm4d"),
    # float -> int / bool-like int ({T}: the result type)
    "tmps_ilogb": Fn("tmps_ilogb({0})", f64="tmps_f64_ilogb"),
    "tmps_isnan": Fn("isnan({0})", f64="({T})tmps_f64_isnan({0})"),
    "tmps_isinf": Fn("isinf({0})", f64="({T})(({0} & 0x7ffffffffffffffful) == 0x7ff0000000000000ul)"),
    "tmps_isfinite": Fn("isfinite({0})", f64="({T})(({0} & 0x7ffffffffffffffful) < 0x7ff0000000000000ul)"),
    "tmps_signbit": Fn("signbit({0})", f64="({T})({0} >> 63)"),
    "tmps_f2i_rint": Fn("tmps_f2i_{T}(rint({0}))", f64="tmps_f64_llrint"),
    "tmps_f2i_trunc": Fn("tmps_f2i_{T}(trunc({0}))"),
    "tmps_f2i_floor": Fn("tmps_f2i_{T}(floor({0}))"),
    "tmps_f2i_ceil": Fn("tmps_f2i_{T}(ceil({0}))"),
    "tmps_f2i_round": Fn("tmps_f2i_{T}(round({0}))", f64="tmps_f64_llround"),
    "tmps_f2u_rint": Fn("tmps_f2u_{T}(rint({0}))"),
    "tmps_f2u_trunc": Fn("tmps_f2u_{T}(trunc({0}))"),
    "tmps_f2u_floor": Fn("tmps_f2u_{T}(floor({0}))"),
    "tmps_f2u_ceil": Fn("tmps_f2u_{T}(ceil({0}))"),
    # integers (raw arguments; {UA}: argument 0's unsigned type)
    "tmps_iabs": Fn("{0} < 0 ? ({UA})0 - ({UA}){0} : ({UA}){0}"),
    "tmps_clz": Fn("clz(({UA}){0})"),
    "tmps_popc": Fn("popcount(({UA}){0})"),
    "tmps_ffs": Fn("{0} == 0 ? 0 : (int)ctz(({UA}){0}) + 1"),
    "tmps_brev": Fn("reverse_bits(({UA}){0})"),
    "tmps_mulhi": Fn("mulhi({0}, {1})"),
    "tmps_umulhi": Fn("mulhi(({UA}){0}, ({UA}){1})"),
    "tmps_hadd": Fn("({0} >> 1) + ({1} >> 1) + ({0} & {1} & 1)"),
    "tmps_rhadd": Fn("({0} >> 1) + ({1} >> 1) + (({0} | {1}) & 1)"),
    "tmps_uhadd": Fn("(({UA}){0} >> 1) + (({UA}){1} >> 1) + (({UA}){0} & ({UA}){1} & 1u)"),
    "tmps_urhadd": Fn("(({UA}){0} >> 1) + (({UA}){1} >> 1) + ((({UA}){0} | ({UA}){1}) & 1u)"),
    "tmps_i2f": Fn("(float){0}"),
    "tmps_u2f": Fn("(float)({UA}){0}"),
    "tmps_bitcast": Fn("as_type<{T}>({0})"),
    # CUDA's __byte_perm, __[u]mul24 (24-bit operands: signed ones sign-extended from bit 23), __[u]sad
    "tmps_byte_perm": Fn("tmps_byte_perm((uint){0}, (uint){1}, (uint){2})"),
    "tmps_mul24": Fn("(uint)((int)((uint){0} << 8) >> 8) * (uint)((int)((uint){1} << 8) >> 8)"),
    "tmps_umul24": Fn("((uint){0} & 0xffffffu) * ((uint){1} & 0xffffffu)"),
    "tmps_sad": Fn("({0} < {1} ? (uint){1} - (uint){0} : (uint){0} - (uint){1}) + (uint){2}"),
    "tmps_usad": Fn("((uint){0} < (uint){1} ? (uint){1} - (uint){0} : (uint){0} - (uint){1}) + (uint){2}"),
    # every float type in software binary64 (mslib/bessel.py, erfgamma.py, misc.py); {1}: the int32 order
    "tmps_j0": Fn(wide="tmps_f64_bessel_jy({0}, 0, false)"),
    "tmps_j1": Fn(wide="tmps_f64_bessel_jy({0}, 1, false)"),
    "tmps_y0": Fn(wide="tmps_f64_bessel_jy({0}, 0, true)"),
    "tmps_y1": Fn(wide="tmps_f64_bessel_jy({0}, 1, true)"),
    "tmps_i0": Fn(wide="tmps_f64_bessel_i({0}, 0)"),
    "tmps_i1": Fn(wide="tmps_f64_bessel_i({0}, 1)"),
    "tmps_erfinv": Fn(wide="tmps_f64_erfinv({0})"),
    "tmps_erfcinv": Fn(wide="tmps_f64_erfcinv({0})"),
    "tmps_erfcx": Fn(wide="tmps_f64_erfcx({0})"),
    "tmps_normcdf": Fn(wide="tmps_f64_normcdf({0})"),
    "tmps_normcdfinv": Fn(wide="tmps_f64_normcdfinv({0})"),
    "tmps_lgamma": Fn(wide="tmps_f64_lgamma({0})"),
    "tmps_tgamma": Fn(wide="tmps_f64_tgamma({0})"),
    "tmps_jn": Fn(wide="tmps_f64_jn({1}, {0})"),
    "tmps_yn": Fn(wide="tmps_f64_yn({1}, {0})"),
    "tmps_rcp64h": Fn(wide="tmps_f64_rcp64h({0})"),
    # directed rounding and bit moves: tmps_<op>_<mode>, tmps_d2f_<mode>, ... (ops/rounding.py)
    **{sym: Fn(rounding=kind_mode) for sym, kind_mode in ROUNDING_SYMBOLS.items()},
}
F64_SYMBOLS = frozenset(s for s, fn in SYMBOLS.items() if fn.f64)  # language/libdevice.py offers fp64 for them
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
        a = [ctx.expr(v, r) for v in op.operands]
        if "{" not in f64:  # a library function of the arguments
            return fp64.call(ctx, f64, *a)
        use_called(ctx, f64)
        return f64.format(*a, T=res_t.msl())

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
