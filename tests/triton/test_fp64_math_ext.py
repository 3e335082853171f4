"""float64 tan, hyperbolic and inverse trigonometric functions, pow, log10, log1p, expm1, erfc,
cbrt in software (compiler/mslib/) through libdevice: within ULP[name] ulp of the
exact value (mpmath at 200 bits) on random inputs of the ranges where each function is
interesting, and IEEE / C99 Annex F special values bit for bit (numpy's libm as reference).
One kernel computes every function (one compile); the long sweep is tools/fp64_accuracy.py."""

from __future__ import annotations

import warnings

import mpmath
import numpy as np
import pytest
import torch
import triton
import triton.language as tl
from fp64_ref import SPECIALS, same_bits, samples
from triton.language.extra import libdevice

N = 620  # inputs per function (not a multiple of BLOCK; pow and atan2 end with a 19 x 19 grid)
BLOCK = 128
UNARY = ["tan", "tanh", "sinh", "cosh", "log10", "log1p", "expm1", "erfc", "cbrt", "asin", "acos", "atan", "asinh",
         "acosh", "atanh"]
FUNCS = UNARY + ["pow", "atan2"]
ULP = {name: 1.0 for name in FUNCS}  # measured maxima are 0.5-0.72 (tools/fp64_accuracy.py)


@triton.jit
def _all(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    y = tl.load(y_ptr + offs, mask=m)
    tl.store(out_ptr + 0 * n + offs, libdevice.tan(tl.load(x_ptr + 0 * n + offs, mask=m)), mask=m)
    tl.store(out_ptr + 1 * n + offs, libdevice.tanh(tl.load(x_ptr + 1 * n + offs, mask=m)), mask=m)
    tl.store(out_ptr + 2 * n + offs, libdevice.sinh(tl.load(x_ptr + 2 * n + offs, mask=m)), mask=m)
    tl.store(out_ptr + 3 * n + offs, libdevice.cosh(tl.load(x_ptr + 3 * n + offs, mask=m)), mask=m)
    tl.store(out_ptr + 4 * n + offs, libdevice.log10(tl.load(x_ptr + 4 * n + offs, mask=m)), mask=m)
    tl.store(out_ptr + 5 * n + offs, libdevice.log1p(tl.load(x_ptr + 5 * n + offs, mask=m)), mask=m)
    tl.store(out_ptr + 6 * n + offs, libdevice.expm1(tl.load(x_ptr + 6 * n + offs, mask=m)), mask=m)
    tl.store(out_ptr + 7 * n + offs, libdevice.erfc(tl.load(x_ptr + 7 * n + offs, mask=m)), mask=m)
    tl.store(out_ptr + 8 * n + offs, libdevice.cbrt(tl.load(x_ptr + 8 * n + offs, mask=m)), mask=m)
    tl.store(out_ptr + 9 * n + offs, libdevice.asin(tl.load(x_ptr + 9 * n + offs, mask=m)), mask=m)
    tl.store(out_ptr + 10 * n + offs, libdevice.acos(tl.load(x_ptr + 10 * n + offs, mask=m)), mask=m)
    tl.store(out_ptr + 11 * n + offs, libdevice.atan(tl.load(x_ptr + 11 * n + offs, mask=m)), mask=m)
    tl.store(out_ptr + 12 * n + offs, libdevice.asinh(tl.load(x_ptr + 12 * n + offs, mask=m)), mask=m)
    tl.store(out_ptr + 13 * n + offs, libdevice.acosh(tl.load(x_ptr + 13 * n + offs, mask=m)), mask=m)
    tl.store(out_ptr + 14 * n + offs, libdevice.atanh(tl.load(x_ptr + 14 * n + offs, mask=m)), mask=m)
    tl.store(out_ptr + 15 * n + offs, libdevice.pow(tl.load(x_ptr + 15 * n + offs, mask=m), y), mask=m)
    tl.store(out_ptr + 16 * n + offs, libdevice.atan2(tl.load(x_ptr + 16 * n + offs, mask=m), y), mask=m)


GRID = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 0.5, -0.5, 2.0, -2.0, 3.0, -3.0, 2.5, -2.5,
                 2.0 ** 53 + 2, -(2.0 ** 53) - 2, 5e-324, -1.7976931348623157e308])


def _logu(rng, lo: float, hi: float, k: int) -> np.ndarray:
    """k values with log2 uniform in [lo, hi), random signs."""
    return np.exp2(rng.uniform(lo, hi, k)) * rng.choice([-1.0, 1.0], k)


def inputs(rng, name: str, n: int) -> np.ndarray:
    """n inputs for `name`: its interesting ranges, every magnitude, and the special values."""
    k = n // 4
    u = rng.uniform
    ranges = {
        "tan": [u(-10, 10, k), np.pi / 2 * rng.integers(-40, 40, k) + u(-1e-8, 1e-8, k)],
        "tanh": [u(-25, 25, k), _logu(rng, -60, 4, k)],
        "sinh": [u(-45, 45, k), _logu(rng, -60, 6, k), u(705, 711, 8)],
        "cosh": [u(-45, 45, k), _logu(rng, -60, 6, k), u(705, 711, 8)],
        "log10": [np.abs(_logu(rng, -1074, 1024, k)), 10.0 ** rng.integers(-300, 300, 16)],
        "log1p": [_logu(rng, -70, 0, k), np.abs(_logu(rng, -1, 1000, k)), -1 + np.exp2(-rng.integers(1, 53, 8))],
        "expm1": [u(-45, 50, k), _logu(rng, -70, 0, k), u(700, 710, 8)],
        "erfc": [u(-7, 7, k), u(4, 28, k)],
        "cbrt": [_logu(rng, -1074, 1024, k), rng.integers(-50, 50, 16).astype(np.float64) ** 3],
        "asin": [u(-1, 1, k), _logu(rng, -70, 0, k), np.sign(u(-1, 1, 8)) * (1 - np.exp2(-rng.integers(2, 53, 8)))],
        "acos": [u(-1, 1, k), _logu(rng, -70, 0, k), np.sign(u(-1, 1, 8)) * (1 - np.exp2(-rng.integers(2, 53, 8)))],
        "atan": [u(-10, 10, k), _logu(rng, -70, 70, k)],
        "asinh": [u(-10, 10, k), _logu(rng, -70, 70, k)],
        "acosh": [1 + np.exp2(-u(0, 52, k)), np.abs(_logu(rng, 0, 1024, k))],
        "atanh": [u(-1, 1, k), _logu(rng, -70, 0, k), np.sign(u(-1, 1, 8)) * (1 - np.exp2(-rng.integers(2, 53, 8)))],
        "pow": [np.abs(_logu(rng, -20, 20, k)), -np.abs(_logu(rng, -8, 8, 16))],
        "atan2": [_logu(rng, -70, 70, k)],
    }[name]
    out = np.concatenate(ranges + [SPECIALS, samples(rng, k)])
    return rng.permutation(np.resize(out, n))


def pow_exponents(rng, x: np.ndarray) -> np.ndarray:
    """Exponents for pow: integers (odd and even, for negative bases), halves, random reals scaled to
    keep |y log x| in range most of the time, and every kind of value."""
    n = x.size
    with np.errstate(all="ignore"):
        scaled = rng.uniform(-700, 700, n) / np.where(np.abs(np.log(np.abs(x))) > 1e-3, np.log(np.abs(x)), 1.0)
    pick = rng.integers(0, 4, n)
    y = np.where(pick == 0, rng.integers(-40, 40, n).astype(np.float64), scaled)
    y = np.where(pick == 1, rng.integers(-80, 80, n) / 2.0, y)
    y = np.where(pick == 2, samples(rng, n), y)
    return np.where(~np.isfinite(y), 3.0, y)


def exact(name: str, x: float, y: float):
    """mpmath value at the exact doubles (200 bits)."""
    xm, ym = mpmath.mpf(x), mpmath.mpf(y)
    if name == "cbrt":
        return mpmath.sign(xm) * mpmath.cbrt(abs(xm))
    if name == "pow":
        return mpmath.power(xm, ym)
    if name == "atan2":
        return mpmath.atan2(xm, ym)
    if name == "erfc" and x > 40:
        return mpmath.mpf(0)  # < 2^-2300 (mpmath's erfc overflows on huge arguments)
    return getattr(mpmath, name)(xm)


def numpy_ref(name: str, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    f = {"asin": np.arcsin, "acos": np.arccos, "atan": np.arctan, "asinh": np.arcsinh, "acosh": np.arccosh,
         "atanh": np.arctanh, "pow": np.power, "atan2": np.arctan2}.get(name)
    if name == "erfc":
        import math
        return np.array([math.erfc(v) for v in x])
    f = f or getattr(np, name)
    with np.errstate(all="ignore"):
        return f(x, y) if name in ("pow", "atan2") else f(x)


def ulp_error(got: float, ex) -> float:
    """|got - ex| in units of the last place of ex (binary64, subnormals included)."""
    if abs(ex) > mpmath.mpf(np.finfo(np.float64).max):
        return 0.0 if np.isinf(got) and (got > 0) == (ex > 0) else np.inf
    if not np.isfinite(got):
        return np.inf
    e = int(mpmath.floor(mpmath.log(abs(ex), 2))) if ex != 0 else -1074
    return float(abs(mpmath.mpf(got) - ex) / mpmath.mpf(2) ** max(e - 52, -1074))


def errors(name: str, x: np.ndarray, y: np.ndarray, got: np.ndarray) -> list[tuple[float, float, float, float]]:
    """(ulp error, x, y, got) per finite input; special values must equal numpy's bit for bit
    (an error of inf when they do not)."""
    ref = numpy_ref(name, x, y)
    binary = name in ("pow", "atan2")  # signed zeros: numpy's, mpmath has none
    out = []
    for j in range(x.size):
        g, r = got[j], ref[j]
        if not (np.isfinite(x[j]) and np.isfinite(y[j])) or not np.isfinite(r) or x[j] == 0 or binary and y[j] == 0:
            ok = bool(same_bits(np.array([g]), np.array([r]))[0])
            # a nonzero finite numpy value (an input is 0) may differ from ours within the bound
            if not ok and np.isfinite(x[j]) and np.isfinite(y[j]) and not np.isnan(r) and r != 0 and np.isfinite(r):
                ok = ulp_error(g, exact(name, float(x[j]), float(y[j]))) <= ULP[name]
            out.append((0.0 if ok else np.inf, x[j], y[j], g))
            continue
        out.append((ulp_error(g, exact(name, float(x[j]), float(y[j]))), x[j], y[j], g))
    return out


def run_all(mps_driver, rng, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Inputs [len(FUNCS), n], second operands [n] (pow's exponents, atan2's x) and the results."""
    dev = mps_driver.get_active_torch_device()
    x = np.stack([inputs(rng, name, n) for name in FUNCS])
    y = pow_exponents(rng, x[FUNCS.index("pow")])
    y2 = np.concatenate([_logu(rng, -70, 70, n - n // 3), samples(rng, n // 3)])
    y = np.where(rng.integers(0, 2, n) == 0, y, rng.permutation(y2))  # shared by pow and atan2
    # every pair of special values (C99 Annex F cases of pow and atan2) at the end of both rows
    gx, gy = (g.ravel() for g in np.meshgrid(GRID, GRID))
    for name in ("pow", "atan2"):
        x[FUNCS.index(name), -gx.size:] = gx
    y[-gy.size:] = gy
    out = torch.full((len(FUNCS) * n,), float("nan"), dtype=torch.float64, device=dev)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        _all[(triton.cdiv(n, BLOCK),)](torch.from_numpy(x.ravel()).to(dev), torch.from_numpy(y).to(dev), out, n,
                                       BLOCK=BLOCK)
    return x, y, out.cpu().numpy().reshape(len(FUNCS), n)


@pytest.fixture(scope="module")
def results(mps_driver):
    mpmath.mp.prec = 200
    return run_all(mps_driver, np.random.default_rng(29), N)


@pytest.mark.parametrize("name", FUNCS)
def test_fp64_math_ext(results, name):
    x, y, got = results
    i = FUNCS.index(name)
    errs = errors(name, x[i], y if name in ("pow", "atan2") else np.zeros_like(y), got[i])
    err, at, at_y, g = max(errs, key=lambda e: e[0])
    assert err <= ULP[name], f"{name}: {err:.3f} ulp at x={at!r} y={at_y!r} (got {g!r})"
