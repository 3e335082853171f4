"""float64 in software: IEEE binary64 carried as `ulong` bits, computed with integer arithmetic.

Apple GPUs have no fp64 and MSL has no `double`. Every f64 value lives in a `ulong` holding its
IEEE bits (arguments, registers, memory, threadgroup scratch, shuffles); every operation is a
program-scope MSL helper emitted on first use (with the helpers it calls), so the simulator runs
exactly the code a Mac runs. Results are correctly rounded (round to nearest even) for add, sub,
mul, div, sqrt, fma and every conversion; min/max, comparisons, abs/neg/copysign and the
rounding functions (floor, ceil, trunc, round, rint) are exact. NaN results are quiet; an
invalid operation (inf - inf, 0 * inf, sqrt(-1), ...) gives the default NaN 0x7ff8000000000000,
a NaN operand is returned quieted. Subnormals are kept (no flush to zero).

Conventions inside the helpers (value = sig * 2^(e - k) with the leading 1 of `sig` at bit k):
- `tmps_f64_norm(a, e)`: a finite nonzero value as (sig with its leading 1 at bit 52, e);
- `tmps_f64_round(sign, e, sig)`: sig with its leading 1 at bit 62 (bit 0 sticky) rounded to
  nearest even into binary64, with overflow to inf and gradual underflow.
- `tmps_f64_round_m(sign, e, sig, mode)`: the same in a rounding mode (0 nearest even, 1 toward
  zero, 2 down, 3 up); add/sub/mul/div/sqrt/fma are `tmps_f64_<op>_m(..., mode)` with the
  nearest-even `tmps_f64_<op>` calling them with mode 0 (libdevice's _rz/_rd/_ru: mslib/rounding.py).

Cost: add/mul/fma are a few dozen integer instructions; div and sqrt are bit-serial (55
steps); exp/log/sin/cos are 20-40 soft operations (mslib/explog.py, trig.py). Measured on the simulator
(2 busy cores, 2^18 elements, memcheck off), ns per element f32 -> f64: add 10 -> 127,
mul 6 -> 117, fma 10 -> 107, sqrt 16 -> 431, div 45 -> 1625, exp 49 -> 1897, sin 21 -> 1205.
A one-time Python warning at compile says that fp64 is emulated and slow.
"""


from __future__ import annotations

import warnings

from . import core
from .consts import ABS_MASK as ABS
from .consts import DNAN, SIGN, bits_of, literal_bits, py_value
from .consts import INF_BITS as INF
from .registry import call, use, use_called

_warned = False


def literal(value: float) -> str:
    """MSL literal (ulong bits) of a Python float as binary64."""
    return f"0x{bits_of(value):016x}ul"


def notice(kernel: str) -> None:
    """Once per process: fp64 is emulated (a warning, not an error)."""
    global _warned
    if _warned:
        return
    _warned = True
    warnings.warn(f"kernel '{kernel}' uses float64, which Apple GPUs lack: triton-mps emulates it in software "
                  "(exact IEEE binary64, but each operation costs tens to hundreds of integer instructions)",
                  RuntimeWarning, stacklevel=2)


def narrow(ctx, key: str, x: str, mode: str = "rtne") -> str:
    """binary64 bits `x` -> bits (uint) of f32 / f16 / bf16 (key), rounded by `mode`."""
    ebits, mbits = {"f32": (8, 23), "f16": (5, 10), "bf16": (8, 7)}[key]
    use(ctx, "tmps_f64_base")
    name, text = core.narrow_helper(key, ebits, mbits, mode)
    ctx.e.helper(name, text)
    return f"{name}({x})"


def apply(ctx, spec: str, *args: str, result_type: str = "") -> str:
    """A binary64 function of the math table (triton_mps/math_functions.py, `f64`) applied to
    `args`: `spec` is a library function's name, called with them, or an MSL expression over
    {0}, {1}, ... ({T}: `result_type`), whose library calls are emitted with it."""
    if "{" not in spec:
        return call(ctx, spec, *args)
    use_called(ctx, spec)
    return spec.format(*args, T=result_type)


def is_f64(t) -> bool:
    return getattr(t, "name", None) == "f64"


__all__ = ["ABS", "DNAN", "INF", "SIGN", "apply", "bits_of", "call", "is_f64", "literal", "literal_bits", "narrow",
           "notice", "py_value", "use"]
