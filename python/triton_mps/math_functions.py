"""The math functions of the mps backend: one table, one row per function.

Both sides read it: the front end (language/libdevice.py, what `tl.extra.libdevice` resolves to)
makes a libdevice function of each name in a row's `libdevice`, and the TTGIR -> MSL compiler
lowers the row's `math` op (compiler/ops/elementwise.py, float64.py) and its libdevice symbol
"tmps_<name>" (`tt.extern_elementwise`, compiler/ops/libdevice.py) from the row. This module is
data only (it imports nothing of the package), so the language layer needs no compiler import.

A row's lowering, by the types of its arguments:

| type                  | column    | how                                                              |
|-----------------------|-----------|------------------------------------------------------------------|
| fp32                  | `f32`     | the MSL expression over `{0}`, `{1}`, ...                        |
| fp16, bf16, fp8       | `f32`     | arguments widened to float, the float result rounded back once    |
|                       |           | (what Triton's other backends do for math functions)             |
| integers              | `f32`     | the same column over the raw arguments (`{T}`: the result's MSL  |
|                       |           | type, `{UA}`: argument 0's unsigned type)                         |
| fp64 (`ulong` bits)   | `f64`     | a software binary64 function (compiler/mslib/) called with the   |
|                       |           | arguments, or an expression over `{0}`, ... (`{T}` as above)     |
| every float type      | `wide`    | computed in software binary64: the arguments widened exactly,    |
|                       |           | the binary64 result rounded once to the result type              |
| fp32, fp64            | `rounding`| (kind, mode) of a directed-rounding function (ops/rounding.py)   |

`f32` says `precise::` where Metal has fast and precise variants: libdevice calls it so
(Triton expects IEEE-like results from libdevice; kernels may be built with fast math on a
Mac), while the `math` op calls the function without the qualifier (`math_f32`), so the
kernel's math mode decides, as for Triton's `tl.exp`. `fast::` rows are libdevice's fast_*
names. The MSL helpers an expression calls (`tmps_*`, compiler/mslib/) are emitted with it.

`math`: the MLIR `math.*` op lowered by the row (on fp32/fp16/bf16/fp8 by `math_f32`, on fp64
by `f64`). `libdevice`: the libdevice names (space-separated) whose arguments and result are one
float type `T`: fp32, fp16 and bf16, and fp64 when the row has `f64` or `wide` (the row's
`float_types`). `signatures`: the libdevice names of other signatures that call the row's
symbol, each `"name [name ...](arg, ...) -> result [for T in type ...]"` over Triton's dtype
names: `T` stands for each of the row's float types (or of the `for T in` list) in turn;
`int1` as the result: the symbol gives int32 and the function converts it to int1 (CUDA's
bool-returning predicates). A libdevice name may gather signatures from several rows (`abs`:
fabs on floats, iabs on integers; `pow`: pow, and powi for pow(float, int32)); `LIBDEVICE`
below is every name's table, which language/libdevice.py turns into functions as it is.

Adding a math function: one row here (`math`, `libdevice` and/or `signatures` set), plus its MSL
helper in a compiler/mslib/ family module when neither Metal nor the library has one.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_ARG = re.compile(r"\{(\d+)\}")
# "ldexp scalbn(T, int32) -> T", "clz(T) -> int32 for T in int32 int64"
_SIGNATURE = re.compile(r"([\w ]+)\(([\w ,]+)\) -> (\w+)(?: for T in ([\w ]+))?")
_FLOATS = ("fp32", "fp16", "bf16")
# CUDA's integer names in conversions (float2int_rn, ll2double_rz, ...) and their dtypes
_SIGNED = (("int", "int32"), ("ll", "int64"))
_UNSIGNED = (("uint", "uint32"), ("ull", "uint64"))


def _from_float(mode: str, ints) -> tuple[str, ...]:
    """float2<int>_<mode>(fp32) -> <int> for each CUDA integer of `ints`."""
    return tuple(f"float2{c}_{mode}(fp32) -> {t}" for c, t in ints)


def _rounding_signatures(kind: str, mode: str) -> tuple[str, ...]:
    """The libdevice names of a directed-rounding row (ops/rounding.py), by its kind and mode."""
    if kind in ("add", "sub", "mul", "div", "fma", "sqrt", "rcp"):  # arithmetic on fp32 and fp64
        args = ", ".join(["T"] * {"fma": 3, "sqrt": 1, "rcp": 1}.get(kind, 2))
        return (f"{kind}_{mode}({args}) -> T for T in fp32 fp64", )
    ints = _UNSIGNED if kind[0] == "u" or kind == "d2u" else _SIGNED
    if kind == "d2f":
        return (f"double2float_{mode}(fp64) -> fp32", )
    if kind in ("d2i", "d2u"):  # saturating, NaN -> 0, as float2int_*
        return tuple(f"double2{c}_{mode}(fp64) -> {t}" for c, t in ints)
    if kind in ("i2d", "u2d"):  # from 32 bits only _rn (exact)
        return tuple(f"{c}2double_{mode}({t}) -> fp64" for c, t in ints if mode == "rn" or t.endswith("64"))
    if kind in ("i2f", "u2f"):  # the directed modes (the _rn ones are the native i2f, u2f rows)
        return tuple(f"{c}2float_{mode}({t}) -> fp32" for c, t in ints)
    return {"d2hi": ("double2hiint(fp64) -> int32", ), "d2lo": ("double2loint(fp64) -> int32", ),
            "hilo2d": ("hiloint2double(int32, int32) -> fp64", ),  # (hi, lo)
            "d_as_ll": ("double_as_longlong(fp64) -> int64", ),
            "ll_as_d": ("longlong_as_double(int64) -> fp64", )}[kind]


@dataclass(frozen=True)
class MathFn:
    name: str  # its libdevice symbol is "tmps_<name>"
    f32: str | None = None
    f64: str | None = None
    wide: str | None = None
    rounding: tuple[str, str] | None = None
    math: str = ""  # the math.* op it lowers, if any
    libdevice: str = ""  # libdevice names of the (T, ..., T) -> T signature, space-separated
    signatures: tuple[str, ...] = ()  # libdevice names of other signatures ("name(arg, ...) -> result")

    @property
    def symbol(self) -> str:
        return f"tmps_{self.name}"

    @property
    def math_f32(self) -> str:
        """The float expression of the `math` op: `f32` without Metal's `precise::` qualifier."""
        assert self.f32 is not None
        return self.f32.replace("precise::", "")

    @property
    def libdevice_names(self) -> tuple[str, ...]:
        return tuple(self.libdevice.split())

    @property
    def takes_f64(self) -> bool:
        return self.f64 is not None or self.wide is not None

    @property
    def float_types(self) -> tuple[str, ...]:
        """What `T` stands for in its libdevice signatures unless a `for T in` says otherwise."""
        return (*_FLOATS, "fp64") if self.takes_f64 else _FLOATS

    @property
    def libdevice_signatures(self) -> tuple[tuple[str, tuple[str, ...], str], ...]:
        """(libdevice name, argument dtypes, result dtype) of every libdevice function calling
        the row's symbol: the `libdevice` names, then the `signatures`."""
        out = [(n, (t, ) * self.arity, t) for n in self.libdevice_names for t in self.float_types]
        for sig in self.signatures:
            m = _SIGNATURE.fullmatch(sig)
            if m is None:
                raise ValueError(f"math_functions: {self.name}: bad libdevice signature {sig!r}")
            names, args, result, types = m.groups()
            arg_list = tuple(a.strip() for a in args.split(","))
            uses_t = "T" in arg_list or result == "T"
            for t in (types.split() if types else self.float_types) if uses_t else ("", ):
                sub = {"T": t}
                out += [(n, tuple(sub.get(a, a) for a in arg_list), sub.get(result, result)) for n in names.split()]
        return tuple(out)

    @property
    def arity(self) -> int:
        """The number of arguments its expression reads ({0}, {1}, ...)."""
        tpl = self.f32 or self.wide or ""
        return max((int(i) for i in _ARG.findall(tpl)), default=-1) + 1


_F = MathFn

FUNCTIONS: tuple[MathFn, ...] = (
    # ---- float -> float, one argument (also math.* ops) --------------------------------------------
    _F("floor", "floor({0})", f64="tmps_f64_round_int({0}, 1)", math="math.floor", libdevice="floor"),
    _F("ceil", "ceil({0})", f64="tmps_f64_round_int({0}, 2)", math="math.ceil", libdevice="ceil"),
    _F("trunc", "trunc({0})", f64="tmps_f64_round_int({0}, 0)", math="math.trunc", libdevice="trunc"),
    _F("round", "round({0})", f64="tmps_f64_round_int({0}, 3)", math="math.round", libdevice="round"),
    _F("rint", "rint({0})", f64="tmps_f64_round_int({0}, 4)", math="math.roundeven", libdevice="rint nearbyint"),
    _F("fabs", "fabs({0})", f64="{0} & 0x7ffffffffffffffful", math="math.absf", libdevice="fabs",
       signatures=("abs(T) -> T", )),
    _F("exp", "precise::exp({0})", f64="tmps_f64_exp", math="math.exp", libdevice="exp"),
    _F("exp2", "precise::exp2({0})", f64="tmps_f64_exp2", math="math.exp2", libdevice="exp2"),
    _F("log", "precise::log({0})", f64="tmps_f64_log", math="math.log", libdevice="log"),
    _F("log2", "precise::log2({0})", f64="tmps_f64_log2", math="math.log2", libdevice="log2"),
    _F("log10", "precise::log10({0})", f64="tmps_f64_log10", math="math.log10", libdevice="log10"),
    _F("sqrt", "precise::sqrt({0})", f64="tmps_f64_sqrt", math="math.sqrt", libdevice="sqrt sqrt_rn"),
    _F("rsqrt", "precise::rsqrt({0})", f64="tmps_f64_rsqrt", math="math.rsqrt", libdevice="rsqrt rsqrt_rn"),
    _F("sin", "precise::sin({0})", f64="tmps_f64_sin", math="math.sin", libdevice="sin"),
    _F("cos", "precise::cos({0})", f64="tmps_f64_cos", math="math.cos", libdevice="cos"),
    _F("tan", "precise::tan({0})", f64="tmps_f64_tan", math="math.tan", libdevice="tan"),
    _F("asin", "precise::asin({0})", f64="tmps_f64_asin", math="math.asin", libdevice="asin"),
    _F("acos", "precise::acos({0})", f64="tmps_f64_acos", math="math.acos", libdevice="acos"),
    _F("atan", "precise::atan({0})", f64="tmps_f64_atan", math="math.atan", libdevice="atan"),
    _F("sinh", "precise::sinh({0})", f64="tmps_f64_sinh", math="math.sinh", libdevice="sinh"),
    _F("cosh", "precise::cosh({0})", f64="tmps_f64_cosh", math="math.cosh", libdevice="cosh"),
    _F("tanh", "precise::tanh({0})", f64="tmps_f64_tanh", math="math.tanh", libdevice="tanh"),
    _F("asinh", "precise::asinh({0})", f64="tmps_f64_asinh", math="math.asinh", libdevice="asinh"),
    _F("acosh", "precise::acosh({0})", f64="tmps_f64_acosh", math="math.acosh", libdevice="acosh"),
    _F("atanh", "precise::atanh({0})", f64="tmps_f64_atanh", math="math.atanh", libdevice="atanh"),
    _F("expm1", "tmps_expm1({0})", f64="tmps_f64_expm1", math="math.expm1", libdevice="expm1"),
    _F("log1p", "tmps_log1p({0})", f64="tmps_f64_log1p", math="math.log1p", libdevice="log1p"),
    _F("erf", "tmps_erf({0})", f64="tmps_f64_erf", math="math.erf", libdevice="erf"),
    _F("erfc", "tmps_erfc({0})", f64="tmps_f64_erfc", math="math.erfc", libdevice="erfc"),
    _F("cbrt", "tmps_cbrt({0})", f64="tmps_f64_cbrt", math="math.cbrt", libdevice="cbrt"),
    # ---- float -> float, two or three arguments (also math.* ops) --------------------------------
    _F("pow", "precise::pow({0}, {1})", f64="tmps_f64_pow", math="math.powf", libdevice="pow"),
    _F("atan2", "precise::atan2({0}, {1})", f64="tmps_f64_atan2", math="math.atan2", libdevice="atan2"),
    _F("copysign", "copysign({0}, {1})", f64="({0} & 0x7ffffffffffffffful) | ({1} & 0x8000000000000000ul)",
       math="math.copysign", libdevice="copysign"),
    _F("fma", "fma({0}, {1}, {2})", f64="tmps_f64_fma", math="math.fma", libdevice="fma fma_rn"),
    # ---- float -> float, libdevice only ------------------------------------------------------------
    _F("saturate", "fmin(fmax({0}, 0.0f), 1.0f)", libdevice="saturatef"),
    _F("exp10", "precise::exp10({0})", f64="tmps_f64_exp10", libdevice="exp10"),
    _F("rcp", "precise::divide(1.0f, {0})", f64="tmps_f64_div(0x3ff0000000000000ul, {0})", libdevice="rcp_rn"),
    _F("sinpi", "precise::sinpi({0})", f64="tmps_f64_sinpi", libdevice="sinpi"),
    _F("cospi", "precise::cospi({0})", f64="tmps_f64_cospi", libdevice="cospi"),
    _F("rcbrt", "precise::divide(1.0f, tmps_cbrt({0}))", f64="tmps_f64_rcbrt", libdevice="rcbrt"),
    _F("logb", "tmps_logb({0})", f64="tmps_f64_logb", libdevice="logb"),
    _F("fmod", "fmod({0}, {1})", f64="tmps_f64_fmod", libdevice="fmod"),
    _F("remainder", "tmps_remainder({0}, {1})", f64="tmps_f64_remainder", libdevice="remainder"),
    _F("fmin", "fmin({0}, {1})", f64="tmps_f64_minnum", libdevice="fmin"),
    _F("fmax", "fmax({0}, {1})", f64="tmps_f64_maxnum", libdevice="fmax"),
    _F("fdim", "fdim({0}, {1})", f64="tmps_f64_fdim", libdevice="fdim"),
    _F("hypot", "tmps_norm4f({0}, {1}, 0.0f, 0.0f, false)", f64="tmps_f64_hypot", libdevice="hypot"),
    _F("rhypot", "tmps_norm4f({0}, {1}, 0.0f, 0.0f, true)", f64="tmps_f64_rhypot", libdevice="rhypot"),
    _F("nextafter", "tmps_nextafter({0}, {1})", f64="tmps_f64_nextafter", libdevice="nextafter"),
    _F("div_rn", "precise::divide({0}, {1})", f64="tmps_f64_div", libdevice="div_rn"),
    _F("add", "({0} + {1})", f64="tmps_f64_add", libdevice="add_rn"),
    _F("sub", "({0} - {1})", f64="tmps_f64_sub", libdevice="sub_rn"),
    _F("mul", "({0} * {1})", f64="tmps_f64_mul", libdevice="mul_rn"),
    # sqrt(x^2 + y^2 + z^2 (+ w^2)) and the reciprocals, as CUDA's norm3d/rnorm3d/norm4d/rnorm4d
    _F("norm3d", "tmps_norm4f({0}, {1}, {2}, 0.0f, false)", f64="tmps_f64_norm3d", libdevice="norm3d"),
    _F("rnorm3d", "tmps_norm4f({0}, {1}, {2}, 0.0f, true)", f64="tmps_f64_rnorm3d", libdevice="rnorm3d"),
    _F("norm4d", "tmps_norm4f({0}, {1}, {2}, {3}, false)", f64="tmps_f64_norm4d", libdevice="norm4d"),
    _F("rnorm4d", "tmps_norm4f({0}, {1}, {2}, {3}, true)", f64="tmps_f64_rnorm4d", libdevice="rnorm4d"),
    # Metal's fast:: variants (fewer guarantees, like CUDA's approximate intrinsics; fp32/fp16/bf16)
    _F("fast_exp", "fast::exp({0})", libdevice="fast_expf"),
    _F("fast_exp10", "fast::exp10({0})", libdevice="fast_exp10f"),
    _F("fast_log", "fast::log({0})", libdevice="fast_logf"),
    _F("fast_log2", "fast::log2({0})", libdevice="fast_log2f"),
    _F("fast_log10", "fast::log10({0})", libdevice="fast_log10f"),
    _F("fast_sin", "fast::sin({0})", libdevice="fast_sinf"),
    _F("fast_cos", "fast::cos({0})", libdevice="fast_cosf"),
    _F("fast_tan", "fast::tan({0})", libdevice="fast_tanf"),
    _F("fast_tanh", "fast::tanh({0})", libdevice="fast_tanhf"),
    _F("fast_divide", "fast::divide({0}, {1})", libdevice="fast_dividef"),
    _F("fast_pow", "fast::pow({0}, {1})", libdevice="fast_powf"),
    # ---- other signatures (`signatures`: CUDA's argument and result types) -------------------------
    _F("powi", "tmps_powi({0}, {1})", f64="tmps_f64_powi", signatures=("pow(T, int32) -> T", )),  # CUDA's powi
    _F("ldexp", "ldexp({0}, {1})", f64="tmps_f64_scalbn", signatures=("ldexp scalbn(T, int32) -> T", )),
    # float -> int / bool-like int ({T}: the result type)
    _F("ilogb", "tmps_ilogb({0})", f64="tmps_f64_ilogb", signatures=("ilogb(T) -> int32", )),
    _F("isnan", "isnan({0})", f64="({T})tmps_f64_isnan({0})", signatures=("isnan(T) -> int1", )),
    _F("isinf", "isinf({0})", f64="({T})(({0} & 0x7ffffffffffffffful) == 0x7ff0000000000000ul)",
       signatures=("isinf(T) -> int1", )),
    _F("isfinite", "isfinite({0})", f64="({T})(({0} & 0x7ffffffffffffffful) < 0x7ff0000000000000ul)",
       signatures=("finitef(T) -> int1", "isfinited(fp64) -> int1")),
    _F("signbit", "signbit({0})", f64="({T})({0} >> 63)", signatures=("signbit(T) -> int32", )),
    # float -> integer in a rounding mode: out-of-range values saturate and NaN gives 0 (as CUDA)
    _F("f2i_rint", "tmps_f2i_{T}(rint({0}))", f64="tmps_f64_llrint",
       signatures=(*_from_float("rn", _SIGNED), "llrint(T) -> int64")),
    _F("f2i_trunc", "tmps_f2i_{T}(trunc({0}))", signatures=_from_float("rz", _SIGNED)),
    _F("f2i_floor", "tmps_f2i_{T}(floor({0}))", signatures=_from_float("rd", _SIGNED)),
    _F("f2i_ceil", "tmps_f2i_{T}(ceil({0}))", signatures=_from_float("ru", _SIGNED)),
    _F("f2i_round", "tmps_f2i_{T}(round({0}))", f64="tmps_f64_llround", signatures=("llround(T) -> int64", )),
    _F("f2u_rint", "tmps_f2u_{T}(rint({0}))", signatures=_from_float("rn", _UNSIGNED)),
    _F("f2u_trunc", "tmps_f2u_{T}(trunc({0}))", signatures=_from_float("rz", _UNSIGNED)),
    _F("f2u_floor", "tmps_f2u_{T}(floor({0}))", signatures=_from_float("rd", _UNSIGNED)),
    _F("f2u_ceil", "tmps_f2u_{T}(ceil({0}))", signatures=_from_float("ru", _UNSIGNED)),
    # integers (raw arguments; {UA}: argument 0's unsigned type). TTGIR integers are signless:
    # unsigned variants need symbols of their own
    _F("iabs", "{0} < 0 ? ({UA})0 - ({UA}){0} : ({UA}){0}", signatures=("abs(T) -> T for T in int32 int64", )),
    _F("clz", "clz(({UA}){0})", signatures=("clz(T) -> int32 for T in int32 int64", )),
    _F("popc", "popcount(({UA}){0})", signatures=("popc(T) -> int32 for T in int32 int64", )),
    _F("ffs", "{0} == 0 ? 0 : (int)ctz(({UA}){0}) + 1", signatures=("ffs(T) -> int32 for T in int32 int64", )),
    _F("brev", "reverse_bits(({UA}){0})", signatures=("brev(T) -> T for T in int32 int64", )),
    _F("mulhi", "mulhi({0}, {1})", signatures=("mulhi(T, T) -> T for T in int32 int64", )),
    _F("umulhi", "mulhi(({UA}){0}, ({UA}){1})", signatures=("mulhi(T, T) -> T for T in uint32 uint64", )),
    _F("hadd", "({0} >> 1) + ({1} >> 1) + ({0} & {1} & 1)", signatures=("hadd(int32, int32) -> int32", )),
    _F("rhadd", "({0} >> 1) + ({1} >> 1) + (({0} | {1}) & 1)", signatures=("rhadd(int32, int32) -> int32", )),
    _F("uhadd", "(({UA}){0} >> 1) + (({UA}){1} >> 1) + (({UA}){0} & ({UA}){1} & 1u)",
       signatures=("hadd(uint32, uint32) -> uint32", )),
    _F("urhadd", "(({UA}){0} >> 1) + (({UA}){1} >> 1) + ((({UA}){0} | ({UA}){1}) & 1u)",
       signatures=("rhadd(uint32, uint32) -> uint32", )),
    _F("i2f", "(float){0}", signatures=("int2float_rn(int32) -> fp32", "ll2float_rn(int64) -> fp32")),
    _F("u2f", "(float)({UA}){0}", signatures=("uint2float_rn(uint32) -> fp32", "ull2float_rn(uint64) -> fp32")),
    _F("bitcast", "as_type<{T}>({0})", signatures=("float_as_int(fp32) -> int32", "float_as_uint(fp32) -> uint32",
                                                    "int_as_float(int32) -> fp32", "uint_as_float(uint32) -> fp32")),
    # CUDA's __byte_perm, __[u]mul24 (24-bit operands: signed ones sign-extended from bit 23), __[u]sad
    _F("byte_perm", "tmps_byte_perm((uint){0}, (uint){1}, (uint){2})",
       signatures=("byte_perm(T, T, T) -> T for T in int32 uint32", )),
    _F("mul24", "(uint)((int)((uint){0} << 8) >> 8) * (uint)((int)((uint){1} << 8) >> 8)",
       signatures=("mul24(int32, int32) -> int32", )),
    _F("umul24", "((uint){0} & 0xffffffu) * ((uint){1} & 0xffffffu)", signatures=("mul24(uint32, uint32) -> uint32", )),
    _F("sad", "({0} < {1} ? (uint){1} - (uint){0} : (uint){0} - (uint){1}) + (uint){2}",
       signatures=("sad(int32, int32, uint32) -> int32", )),
    _F("usad", "((uint){0} < (uint){1} ? (uint){1} - (uint){0} : (uint){0} - (uint){1}) + (uint){2}",
       signatures=("sad(uint32, uint32, uint32) -> uint32", )),
    # ---- every float type in software binary64 (compiler/mslib/bessel.py, erfgamma.py, misc.py) ------
    _F("j0", wide="tmps_f64_bessel_jy({0}, 0, false)", libdevice="j0"),
    _F("j1", wide="tmps_f64_bessel_jy({0}, 1, false)", libdevice="j1"),
    _F("y0", wide="tmps_f64_bessel_jy({0}, 0, true)", libdevice="y0"),
    _F("y1", wide="tmps_f64_bessel_jy({0}, 1, true)", libdevice="y1"),
    _F("i0", wide="tmps_f64_bessel_i({0}, 0)", libdevice="cyl_bessel_i0"),
    _F("i1", wide="tmps_f64_bessel_i({0}, 1)", libdevice="cyl_bessel_i1"),
    _F("erfinv", wide="tmps_f64_erfinv({0})", libdevice="erfinv"),
    _F("erfcinv", wide="tmps_f64_erfcinv({0})", libdevice="erfcinv"),
    _F("erfcx", wide="tmps_f64_erfcx({0})", libdevice="erfcx"),
    _F("normcdf", wide="tmps_f64_normcdf({0})", libdevice="normcdf"),
    _F("normcdfinv", wide="tmps_f64_normcdfinv({0})", libdevice="normcdfinv"),
    _F("lgamma", wide="tmps_f64_lgamma({0})", libdevice="lgamma"),
    _F("tgamma", wide="tmps_f64_tgamma({0})", libdevice="tgamma"),
    _F("jn", wide="tmps_f64_jn({1}, {0})", signatures=("jn(int32, T) -> T", )),  # {1}: the int32 order, as CUDA
    _F("yn", wide="tmps_f64_yn({1}, {0})", signatures=("yn(int32, T) -> T", )),
    _F("rcp64h", wide="tmps_f64_rcp64h({0})", signatures=("rcp64h(fp64) -> fp64", )),
    # ---- directed rounding and bit moves (ops/rounding.py; _rounding_signatures names them) --------
    # arithmetic on fp32 and fp64: <op>_<mode> (the _rn ones are the rows above)
    *(_F(f"{op}_{m}", rounding=(op, m), signatures=_rounding_signatures(op, m))
      for op in ("add", "sub", "mul", "div", "fma", "sqrt", "rcp") for m in ("rz", "rd", "ru")),
    # conversions: fp64 -> fp32 / integers, integers -> fp64 in each mode; integers -> fp32 in the
    # directed modes (the _rn ones are the native i2f, u2f)
    *(_F(f"{kind}_{m}", rounding=(kind, m), signatures=_rounding_signatures(kind, m))
      for m in ("rn", "rz", "rd", "ru") for kind in ("d2f", "d2i", "d2u", "i2d", "u2d")),
    *(_F(f"{kind}_{m}", rounding=(kind, m), signatures=_rounding_signatures(kind, m))
      for m in ("rz", "rd", "ru") for kind in ("i2f", "u2f")),
    *(_F(kind, rounding=(kind, ""), signatures=_rounding_signatures(kind, ""))
      for kind in ("d2hi", "d2lo", "hilo2d", "d_as_ll", "ll_as_d")),
)

BY_SYMBOL: dict[str, MathFn] = {fn.symbol: fn for fn in FUNCTIONS}
BY_MATH_OP: dict[str, MathFn] = {fn.math: fn for fn in FUNCTIONS if fn.math}


def _libdevice() -> dict[str, dict[tuple[str, ...], tuple[str, str]]]:
    """libdevice name -> {argument dtypes: (symbol, result dtype)}, in the order of the rows."""
    out: dict[str, dict[tuple[str, ...], tuple[str, str]]] = {}
    for fn in FUNCTIONS:
        for name, args, result in fn.libdevice_signatures:
            table = out.setdefault(name, {})
            if args in table:
                raise ValueError(f"math_functions: libdevice.{name}({', '.join(args)}) is in two rows: "
                                 f"{BY_SYMBOL[table[args][0]].name} and {fn.name}")
            table[args] = (fn.symbol, result)
    return out


# Every libdevice function: language/libdevice.py makes one of each name.
LIBDEVICE = _libdevice()


def _check() -> None:
    """One row per name and math op; each row lowers one way; a libdevice name has one arity."""
    for index, keys in ((BY_SYMBOL, [fn.symbol for fn in FUNCTIONS]),
                        (BY_MATH_OP, [fn.math for fn in FUNCTIONS if fn.math])):
        if len(index) != len(keys):
            twice = sorted({k for k in keys if keys.count(k) > 1})
            raise ValueError(f"math_functions: a name appears in two rows: {twice}")
    for fn in FUNCTIONS:
        if sum(x is not None for x in (fn.f32, fn.wide, fn.rounding)) != 1:
            raise ValueError(f"math_functions: {fn.name} needs exactly one of f32, wide, rounding")
        if fn.math and fn.f32 is None:
            raise ValueError(f"math_functions: {fn.name} lowers {fn.math} but has no f32 expression")
    for name, table in LIBDEVICE.items():
        if len({len(args) for args in table}) != 1 or not 1 <= len(next(iter(table))) <= 4:
            raise ValueError(f"math_functions: libdevice.{name}: one arity, of 1 to 4 arguments")
        if len({result == "int1" for _, result in table.values()}) != 1:
            raise ValueError(f"math_functions: libdevice.{name}: int1 results for every signature or none")


_check()
