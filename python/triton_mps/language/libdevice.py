"""`tl.extra.libdevice` for the mps backend.

The backend's `get_module_map()` maps `triton.language.extra.libdevice` (and the CUDA/HIP
libdevice modules, whose names are the same) to this module, so `libdevice.tanh(x)` in a kernel
calls `tanh` below. Each function emits `tt.extern_elementwise` with a symbol of our own
("tmps_<name>"), the symbol of a row of the math table (triton_mps/math_functions.py), through
which the TTGIR -> MSL compiler lowers it. Every function is made here from the table's
`LIBDEVICE` (each row's `libdevice` names and `signatures`: the argument and result types); no
function is spelled in this module.

Types: float functions take fp32, fp16 and bf16 (fp16/bf16 are computed in float and rounded
back once, as Triton's other backends do); the functions whose row has an fp64 lowering
(`f64` or `wide`) also take fp64, computed in software float64 (compiler/mslib/: correctly rounded,
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

from ..math_functions import LIBDEVICE as _LIBDEVICE


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


def _fn1(name: str, table: dict, to_bool: bool = False):
    @core.extern
    def fn(arg0, _semantic=None):
        return _call(name, [arg0], table, _semantic, to_bool)

    fn.__name__ = fn.__qualname__ = name
    return fn


def _fn2(name: str, table: dict, to_bool: bool = False):
    @core.extern
    def fn(arg0, arg1, _semantic=None):
        return _call(name, [arg0, arg1], table, _semantic, to_bool)

    fn.__name__ = fn.__qualname__ = name
    return fn


def _fn3(name: str, table: dict, to_bool: bool = False):
    @core.extern
    def fn(arg0, arg1, arg2, _semantic=None):
        return _call(name, [arg0, arg1, arg2], table, _semantic, to_bool)

    fn.__name__ = fn.__qualname__ = name
    return fn


def _fn4(name: str, table: dict, to_bool: bool = False):
    @core.extern
    def fn(arg0, arg1, arg2, arg3, _semantic=None):
        return _call(name, [arg0, arg1, arg2, arg3], table, _semantic, to_bool)

    fn.__name__ = fn.__qualname__ = name
    return fn


_G = globals()

# ---- every libdevice function: the math table's LIBDEVICE (a row's `libdevice` names and `signatures`) ----
_FN = {1: _fn1, 2: _fn2, 3: _fn3, 4: _fn4}
for _name, _rows in _LIBDEVICE.items():
    _to_bool = all(r == "int1" for _, r in _rows.values())  # the symbol gives int32 (math_functions.py)
    _table = {args: (sym, "int32" if r == "int1" else r) for args, (sym, r) in _rows.items()}
    _G[_name] = _FN[len(next(iter(_rows)))](_name, _table, _to_bool)

del _name, _rows, _to_bool, _table

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
