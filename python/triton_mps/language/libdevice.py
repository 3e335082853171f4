"""`tl.extra.libdevice` for the mps backend.

The backend's `get_module_map()` maps `triton.language.extra.libdevice` (and the CUDA/HIP
libdevice modules, whose names are the same) to this module, so `libdevice.tanh(x)` in a kernel
calls `tanh` below. Each function emits `tt.extern_elementwise` with a symbol of our own
("tmps_<name>"), the symbol of a row of the math table (triton_mps/math_functions.py), through
which the TTGIR -> MSL compiler lowers it. The functions whose arguments and result are one float
type are made here from the rows' `libdevice` names; the others are spelled below.

Types: float functions take fp32, fp16 and bf16 (fp16/bf16 are computed in float and rounded
back once, as Triton's other backends do); the functions whose row has an fp64 lowering
(`_F64`) also take fp64, computed in software float64 (compiler/mslib/: correctly rounded,
or within 1 ulp for exp/log/sin/...), which covers every float64 function of CUDA's
libdevice (the rounding variants and conversions: below); so do
pow(fp64, int32), ldexp/scalbn(fp64, int32), ilogb(fp64) -> int32 and llrint/llround(fp64) -> int64.
The Bessel functions (j0, j1, y0, y1, cyl_bessel_i0, cyl_bessel_i1) take every float type and are
computed in software float64 whatever the type (compiler/mslib/bessel.py); so are the special
functions erfinv, erfcinv, erfcx, normcdf, normcdfinv, lgamma, tgamma, jn, yn (and rcp64h, fp64
only) (compiler/mslib/erfgamma.py, bessel.py).
The rounding-mode names (add/sub/mul/div/fma/sqrt/rcp_rz/rd/ru on fp32 and fp64, double2float_*,
double2{int,uint,ll,ull}_*, {int,uint,ll,ull}2float_*, {int,uint,ll,ull}2double_*) are correctly
rounded in their mode, computed in integer arithmetic (compiler/mslib/rounding.py); double_as_longlong,
longlong_as_double, hiloint2double, double2hiint/loint move bits; byte_perm, mul24, sad follow CUDA.
Any other type combination is rejected here with the accepted combinations. A name Triton's
libdevice has that we did not map would resolve to a function that raises a clear error when a
kernel calls it (today every name is mapped: tests/compiler/test_libdevice.py checks).
Return types follow CUDA's libdevice (e.g. `isnan` gives int1, `signbit` int32).
"""

from __future__ import annotations

from triton.language import core

from ..math_functions import FUNCTIONS as _FUNCTIONS

_F = ("fp32", "fp16", "bf16")


def _call(name: str, args, table: dict, _semantic, to_bool: bool = False):
    """extern_elementwise with `table` {(arg dtype names): (symbol, result dtype name)}."""
    tensors = [_semantic.to_tensor(a) for a in args]
    got = tuple(t.dtype.name for t in tensors)
    if got not in table:
        accepted = "; ".join("(" + ", ".join(k) + ")" for k in table)
        raise ValueError(f"libdevice.{name} on the mps backend takes {accepted}; got ({', '.join(got)})"
                         + (" (Metal has no fp64: software fp64 covers only some functions)" if "fp64" in got else ""))
    typed = {tuple(core.dtype(n) for n in k): (sym, core.dtype(r)) for k, (sym, r) in table.items()}
    out = core.extern_elementwise("", "", tensors, typed, is_pure=True, _semantic=_semantic)
    return out.to(core.int1, _semantic=_semantic) if to_bool else out


# the symbols that also take fp64: those whose row in the math table has an fp64 lowering
_F64 = frozenset(fn.symbol for fn in _FUNCTIONS if fn.takes_f64)


def _same(sym: str, arity: int, types=_F) -> dict:
    """Every argument and the result of one float type (and fp64 for the symbols in _F64)."""
    if sym in _F64:
        types = (*types, "fp64")
    return {(t, ) * arity: (sym, t) for t in types}


def _fn1(name: str, table: dict, to_bool: bool = False):
    @core.extern
    def fn(arg0, _semantic=None):
        return _call(name, [arg0], table, _semantic, to_bool)

    fn.__name__ = fn.__qualname__ = name
    return fn


def _fn2(name: str, table: dict):
    @core.extern
    def fn(arg0, arg1, _semantic=None):
        return _call(name, [arg0, arg1], table, _semantic)

    fn.__name__ = fn.__qualname__ = name
    return fn


def _fn3(name: str, table: dict):
    @core.extern
    def fn(arg0, arg1, arg2, _semantic=None):
        return _call(name, [arg0, arg1, arg2], table, _semantic)

    fn.__name__ = fn.__qualname__ = name
    return fn


def _fn4(name: str, table: dict):
    @core.extern
    def fn(arg0, arg1, arg2, arg3, _semantic=None):
        return _call(name, [arg0, arg1, arg2, arg3], table, _semantic)

    fn.__name__ = fn.__qualname__ = name
    return fn


_G = globals()

# ---- float -> float: the math table's `libdevice` names (arguments and result one float type) ----
_FN = {1: _fn1, 2: _fn2, 3: _fn3, 4: _fn4}
for _row in _FUNCTIONS:
    for _name in _row.libdevice_names:
        _table = _same(_row.symbol, _row.arity)
        if _name == "pow":  # pow(float, int32) as CUDA's powi
            _table.update({(t, "int32"): ("tmps_powi", t) for t in (*_F, "fp64")})
        _G[_name] = _FN[_row.arity](_name, _table)

ldexp = _fn2("ldexp", {(t, "int32"): ("tmps_ldexp", t) for t in (*_F, "fp64")})
scalbn = _fn2("scalbn", {(t, "int32"): ("tmps_ldexp", t) for t in (*_F, "fp64")})
ilogb = _fn1("ilogb", {(t, ): ("tmps_ilogb", "int32") for t in (*_F, "fp64")})

# ---- special functions: every float type, in software float64 (compiler/mslib/erfgamma.py, bessel.py);
# the one-argument ones are rows of the math table (above)
jn = _fn2("jn", {("int32", t): ("tmps_jn", t) for t in (*_F, "fp64")})  # (order, x) as CUDA
yn = _fn2("yn", {("int32", t): ("tmps_yn", t) for t in (*_F, "fp64")})
rcp64h = _fn1("rcp64h", {("fp64", ): ("tmps_rcp64h", "fp64")})

# ---- predicates (CUDA's result types: isnan/isinf/finitef -> int1, signbit -> int32) ---------
isnan = _fn1("isnan", {(t, ): ("tmps_isnan", "int32") for t in (*_F, "fp64")}, to_bool=True)
isinf = _fn1("isinf", {(t, ): ("tmps_isinf", "int32") for t in (*_F, "fp64")}, to_bool=True)
finitef = _fn1("finitef", {(t, ): ("tmps_isfinite", "int32") for t in (*_F, "fp64")}, to_bool=True)
isfinited = _fn1("isfinited", {("fp64", ): ("tmps_isfinite", "int32")}, to_bool=True)
signbit = _fn1("signbit", {(t, ): ("tmps_signbit", "int32") for t in (*_F, "fp64")})

# ---- abs, integer functions ------------------------------------------------------------------
abs = _fn1("abs", {**_same("tmps_fabs", 1), ("int32", ): ("tmps_iabs", "int32"), ("int64", ): ("tmps_iabs", "int64")})
clz = _fn1("clz", {("int32", ): ("tmps_clz", "int32"), ("int64", ): ("tmps_clz", "int32")})
popc = _fn1("popc", {("int32", ): ("tmps_popc", "int32"), ("int64", ): ("tmps_popc", "int32")})
ffs = _fn1("ffs", {("int32", ): ("tmps_ffs", "int32"), ("int64", ): ("tmps_ffs", "int32")})
brev = _fn1("brev", {("int32", ): ("tmps_brev", "int32"), ("int64", ): ("tmps_brev", "int64")})
# TTGIR integers are signless: unsigned variants need symbols of their own
mulhi = _fn2("mulhi", {("int32", "int32"): ("tmps_mulhi", "int32"), ("uint32", "uint32"): ("tmps_umulhi", "uint32"),
                       ("int64", "int64"): ("tmps_mulhi", "int64"), ("uint64", "uint64"): ("tmps_umulhi", "uint64")})
hadd = _fn2("hadd", {("int32", "int32"): ("tmps_hadd", "int32"), ("uint32", "uint32"): ("tmps_uhadd", "uint32")})
rhadd = _fn2("rhadd", {("int32", "int32"): ("tmps_rhadd", "int32"), ("uint32", "uint32"): ("tmps_urhadd", "uint32")})

# ---- conversions -----------------------------------------------------------------------------
# float -> integer with a rounding mode; out-of-range values saturate and NaN gives 0 (as CUDA)
_ROUND = {"rn": "rint", "rz": "trunc", "rd": "floor", "ru": "ceil"}
_INT_NAMES = {"int": "int32", "uint": "uint32", "ll": "int64", "ull": "uint64"}
for _short, _int in _INT_NAMES.items():
    for _mode, _how in _ROUND.items():
        _name = f"float2{_short}_{_mode}"
        _kind = "f2u" if _int.startswith("u") else "f2i"
        _G[_name] = _fn1(_name, {("fp32", ): (f"tmps_{_kind}_{_how}", _int)})
llrint = _fn1("llrint", {(t, ): ("tmps_f2i_rint", "int64") for t in (*_F, "fp64")})
llround = _fn1("llround", {(t, ): ("tmps_f2i_round", "int64") for t in (*_F, "fp64")})
int2float_rn = _fn1("int2float_rn", {("int32", ): ("tmps_i2f", "fp32")})
uint2float_rn = _fn1("uint2float_rn", {("uint32", ): ("tmps_u2f", "fp32")})
ll2float_rn = _fn1("ll2float_rn", {("int64", ): ("tmps_i2f", "fp32")})
ull2float_rn = _fn1("ull2float_rn", {("uint64", ): ("tmps_u2f", "fp32")})
float_as_int = _fn1("float_as_int", {("fp32", ): ("tmps_bitcast", "int32")})
float_as_uint = _fn1("float_as_uint", {("fp32", ): ("tmps_bitcast", "uint32")})
int_as_float = _fn1("int_as_float", {("int32", ): ("tmps_bitcast", "fp32")})
uint_as_float = _fn1("uint_as_float", {("uint32", ): ("tmps_bitcast", "fp32")})


# ---- rounding modes (compiler/mslib/rounding.py: correctly rounded in each mode, in integer arithmetic) ----
# directed-rounding arithmetic on fp32 and fp64 (the _rn ones are above)
for _mode in ("rz", "rd", "ru"):
    for _op, _fn in (("add", _fn2), ("sub", _fn2), ("mul", _fn2), ("div", _fn2), ("fma", _fn3),
                     ("sqrt", _fn1), ("rcp", _fn1)):
        _arity = {_fn1: 1, _fn2: 2, _fn3: 3}[_fn]
        _table = {(t, ) * _arity: (f"tmps_{_op}_{_mode}", t) for t in ("fp32", "fp64")}
        _G[f"{_op}_{_mode}"] = _fn(f"{_op}_{_mode}", _table)
for _mode in _ROUND:
    _G[f"double2float_{_mode}"] = _fn1(f"double2float_{_mode}", {("fp64", ): (f"tmps_d2f_{_mode}", "fp32")})
    for _short, _int in _INT_NAMES.items():  # saturating, NaN -> 0, as float2int_*
        _kind = "d2u" if _int.startswith("u") else "d2i"
        _G[f"double2{_short}_{_mode}"] = _fn1(f"double2{_short}_{_mode}", {("fp64", ): (f"tmps_{_kind}_{_mode}", _int)})
    _G[f"ll2double_{_mode}"] = _fn1(f"ll2double_{_mode}", {("int64", ): (f"tmps_i2d_{_mode}", "fp64")})
    _G[f"ull2double_{_mode}"] = _fn1(f"ull2double_{_mode}", {("uint64", ): (f"tmps_u2d_{_mode}", "fp64")})
    if _mode != "rn":  # the _rn ones are the native conversions above
        for _short, _int in _INT_NAMES.items():
            _kind = "u2f" if _int.startswith("u") else "i2f"
            _table = {(_int, ): (f"tmps_{_kind}_{_mode}", "fp32")}
            _G[f"{_short}2float_{_mode}"] = _fn1(f"{_short}2float_{_mode}", _table)
int2double_rn = _fn1("int2double_rn", {("int32", ): ("tmps_i2d_rn", "fp64")})  # exact
uint2double_rn = _fn1("uint2double_rn", {("uint32", ): ("tmps_u2d_rn", "fp64")})
double_as_longlong = _fn1("double_as_longlong", {("fp64", ): ("tmps_d_as_ll", "int64")})
longlong_as_double = _fn1("longlong_as_double", {("int64", ): ("tmps_ll_as_d", "fp64")})
double2hiint = _fn1("double2hiint", {("fp64", ): ("tmps_d2hi", "int32")})
double2loint = _fn1("double2loint", {("fp64", ): ("tmps_d2lo", "int32")})
hiloint2double = _fn2("hiloint2double", {("int32", "int32"): ("tmps_hilo2d", "fp64")})  # (hi, lo)

# ---- integer functions with CUDA's semantics -------------------------------------------------
byte_perm = _fn3("byte_perm", {("int32", ) * 3: ("tmps_byte_perm", "int32"),
                               ("uint32", ) * 3: ("tmps_byte_perm", "uint32")})
mul24 = _fn2("mul24", {("int32", "int32"): ("tmps_mul24", "int32"), ("uint32", "uint32"): ("tmps_umul24", "uint32")})
sad = _fn3("sad", {("int32", "int32", "uint32"): ("tmps_sad", "int32"),
                   ("uint32", "uint32", "uint32"): ("tmps_usad", "uint32")})

del _row, _name, _table, _short, _int, _mode, _how, _kind, _op, _fn, _arity

MAPPED = sorted(n for n, v in list(_G.items()) if callable(v) and getattr(v, "__triton_builtin__", False))


def _unsupported(name: str):
    @core.extern
    def fn(*args, _semantic=None):
        raise ValueError(f"libdevice.{name} is not available on the mps backend (no Metal equivalent mapped); "
                         f"available: {', '.join(MAPPED)}")

    fn.__name__ = fn.__qualname__ = name
    return fn


def __getattr__(name: str):
    # Triton resolves every libdevice name a kernel's module imports, used or not: unmapped
    # names must resolve (to a function that fails only when a kernel calls it).
    if name.startswith("__"):
        raise AttributeError(name)
    return _unsupported(name)
