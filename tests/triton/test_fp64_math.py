"""float64 math functions in software (compiler/mslib/): within 1 ulp of the exact value
(mpmath at 200 bits) on random inputs of every magnitude, exact on special values; fmod exact."""

from __future__ import annotations

import warnings

import mpmath
import numpy as np
import torch
import triton
import triton.language as tl
from fp64_ref import SPECIALS, mismatches, same_bits, samples
from triton.language.extra import libdevice

N = 1500
BLOCK = 128
FUNCS = ["exp", "exp2", "log", "log2", "sin", "cos", "erf", "rsqrt"]


@triton.jit
def _math(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    tl.store(out_ptr + 0 * n + offs, tl.exp(x), mask=m)
    tl.store(out_ptr + 1 * n + offs, tl.exp2(x), mask=m)
    tl.store(out_ptr + 2 * n + offs, tl.log(x), mask=m)
    tl.store(out_ptr + 3 * n + offs, tl.log2(x), mask=m)
    tl.store(out_ptr + 4 * n + offs, tl.sin(x), mask=m)
    tl.store(out_ptr + 5 * n + offs, tl.cos(x), mask=m)
    tl.store(out_ptr + 6 * n + offs, tl.erf(x), mask=m)
    tl.store(out_ptr + 7 * n + offs, tl.rsqrt(x), mask=m)
    tl.store(out_ptr + 8 * n + offs, x % tl.load(y_ptr + offs, mask=m), mask=m)


def _inputs(rng) -> np.ndarray:
    """Every magnitude and the ranges where each function is interesting."""
    k = N // 6
    parts = [
        samples(rng, k),  # all exponents, specials, huge arguments for sin/cos
        rng.uniform(-750.0, 712.0, k),  # exp/exp2 over their whole range
        rng.uniform(-1100.0, 1030.0, k),
        np.exp(rng.uniform(-745.0, 709.0, k)),  # log: positive values of every size
        1.0 + rng.uniform(-0.3, 0.45, k) * np.exp2(-rng.integers(0, 50, k).astype(np.float64)),  # log near 1
        rng.uniform(-7.0, 7.0, k),  # erf, sin/cos in the first periods
    ]
    near_pi = np.array([np.pi / 2 * j for j in range(-50, 50)]) + rng.uniform(-1e-9, 1e-9, 100)
    out = np.concatenate(parts + [near_pi, SPECIALS, [6381956970095103.0 * 2.0 ** 797, 5.0e-324, 0.785398163397448]])
    return rng.permutation(np.resize(out, N))


def _exact(name: str, x: float):
    """mpmath value of the function at the exact double x (None: not finite / special)."""
    xm = mpmath.mpf(x)
    if name == "exp":
        return mpmath.exp(xm)
    if name == "exp2":
        return mpmath.power(2, xm)
    if name in ("log", "log2"):
        return None if x <= 0 else (mpmath.log(xm) if name == "log" else mpmath.log(xm, 2))
    if name == "rsqrt":
        return None if x <= 0 else 1 / mpmath.sqrt(xm)
    return {"sin": mpmath.sin, "cos": mpmath.cos, "erf": mpmath.erf}[name](xm)


def _ulp_error(got: float, exact) -> float:
    """|got - exact| in units of the last place of exact (binary64, subnormals included)."""
    e = int(mpmath.floor(mpmath.log(abs(exact), 2))) if exact != 0 else -1074
    ulp = mpmath.mpf(2) ** max(e - 52, -1074)
    if abs(exact) > mpmath.mpf(np.finfo(np.float64).max):
        return 0.0 if np.isinf(got) and (got > 0) == (exact > 0) else np.inf
    if not np.isfinite(got):
        return np.inf
    return float(abs(mpmath.mpf(got) - exact) / ulp)


def test_fp64_math_functions(mps_driver):
    rng = np.random.default_rng(17)
    dev = mps_driver.get_active_torch_device()
    x = _inputs(rng)
    y = samples(rng, N)
    out = torch.full((9 * N,), float("nan"), dtype=torch.float64, device=dev)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        _math[(triton.cdiv(N, BLOCK),)](torch.from_numpy(x).to(dev), torch.from_numpy(y).to(dev), out, N, BLOCK=BLOCK)
    got = out.cpu().numpy().reshape(9, N)
    mpmath.mp.prec = 200
    with np.errstate(all="ignore"):
        specials = {"exp": np.exp(x), "exp2": np.exp2(x), "log": np.log(x), "log2": np.log2(x), "sin": np.sin(x),
                    "cos": np.cos(x), "erf": np.sign(x) * (np.abs(x) >= 6), "rsqrt": 1 / np.sqrt(x)}
    worst = {}
    for i, name in enumerate(FUNCS):
        errs = []
        for j, v in enumerate(x):
            g = got[i, j]
            ex = _exact(name, float(v)) if np.isfinite(v) else None
            if ex is None:  # NaN, infinities, log/rsqrt of <= 0: IEEE special values, exactly
                assert same_bits(np.array([g]), specials[name][j:j + 1]).all(), (name, v, g)
                continue
            errs.append((_ulp_error(float(g), ex), v, g))
        worst[name] = max(errs)
        err, at, g = worst[name]
        assert err <= 1.0, f"{name}: {err:.3f} ulp at x={at!r} (got {g!r})"
    want = np.fmod(x, y)
    assert same_bits(got[8], want).all(), "fmod: " + mismatches(got[8], want, x, y)
    print({k: round(v[0], 3) for k, v in worst.items()})


@triton.jit
def _libdevice(x_ptr, y_ptr, out_ptr, flags_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    y = tl.load(y_ptr + offs, mask=m)
    tl.store(out_ptr + 0 * n + offs, libdevice.rint(x), mask=m)
    tl.store(out_ptr + 1 * n + offs, libdevice.trunc(x), mask=m)
    tl.store(out_ptr + 2 * n + offs, libdevice.round(x), mask=m)
    tl.store(out_ptr + 3 * n + offs, libdevice.fmod(x, y), mask=m)
    tl.store(out_ptr + 4 * n + offs, libdevice.copysign(x, y), mask=m)
    tl.store(out_ptr + 5 * n + offs, libdevice.div_rn(x, y), mask=m)
    flags = (libdevice.isnan(x).to(tl.int32) | (libdevice.isinf(x).to(tl.int32) << 1)
             | (libdevice.signbit(x) << 2))
    tl.store(flags_ptr + offs, flags, mask=m)


def test_fp64_libdevice(mps_driver):
    """libdevice functions that take fp64 on this backend (libdevice._F64), bit-exact."""
    rng = np.random.default_rng(23)
    dev = mps_driver.get_active_torch_device()
    n = 700
    x = np.concatenate([samples(rng, n - 200), rng.integers(-20, 20, 200) / 2.0])  # halves: rint/round ties
    y = samples(rng, n)
    out = torch.full((6 * n,), float("nan"), dtype=torch.float64, device=dev)
    flags = torch.full((n,), -1, dtype=torch.int32, device=dev)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        _libdevice[(triton.cdiv(n, BLOCK),)](torch.from_numpy(x).to(dev), torch.from_numpy(y).to(dev), out, flags, n,
                                             BLOCK=BLOCK)
    got = out.cpu().numpy().reshape(6, n)
    with np.errstate(all="ignore"):
        rounded = np.where(np.abs(x - np.trunc(x)) == 0.5, np.trunc(x) + np.sign(x), np.round(x))
        refs = [np.rint(x), np.trunc(x), np.where(np.isfinite(x), rounded, x), np.fmod(x, y), np.copysign(x, y), x / y]
    for i, want in enumerate(refs):
        assert same_bits(got[i], want).all(), f"#{i}: {mismatches(got[i], want, x, y)}"
    want_flags = np.isnan(x).astype(np.int32) | (np.isinf(x) << 1) | (np.signbit(x) << 2)
    assert np.array_equal(flags.cpu().numpy(), want_flags)
