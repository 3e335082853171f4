"""libdevice Bessel functions (j0, j1, y0, y1, cyl_bessel_i0, cyl_bessel_i1; compiler/mslib/bessel.py)
against mpmath at 30 digits: random values over [-30, 30], points near the zeros and near the
series/asymptotic switches, tiny and huge arguments, the overflow edge of I0/I1 and the special
values (CUDA libdevice's conventions: J, Y -> 0 at +inf, Y(x < 0) = NaN, Y(+-0) = -inf,
I0(+-inf) = +inf, I1(+-inf) = +-inf)."""

from __future__ import annotations

import math
import warnings

import mpmath
import numpy as np
import pytest
import torch
import triton
import triton.language as tl
from triton.language.extra import libdevice

FUNCS = ["j0", "j1", "y0", "y1", "cyl_bessel_i0", "cyl_bessel_i1"]
N = 256
BLOCK = 128
POISON = 12345.0


@triton.jit
def _bessel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    tl.store(out_ptr + 0 * n + offs, libdevice.j0(x), mask=m)
    tl.store(out_ptr + 1 * n + offs, libdevice.j1(x), mask=m)
    tl.store(out_ptr + 2 * n + offs, libdevice.y0(x), mask=m)
    tl.store(out_ptr + 3 * n + offs, libdevice.y1(x), mask=m)
    tl.store(out_ptr + 4 * n + offs, libdevice.cyl_bessel_i0(x), mask=m)
    tl.store(out_ptr + 5 * n + offs, libdevice.cyl_bessel_i1(x), mask=m)


def _inputs(rng: np.random.Generator, n: int) -> np.ndarray:
    zeros = [float(z(nu, k)) for z in (mpmath.besseljzero, mpmath.besselyzero) for nu in (0, 1) for k in (1, 2, 5)]
    near_zeros = np.array(zeros) * (1.0 + rng.uniform(-1e-7, 1e-7, len(zeros)))
    switches = np.concatenate([14.0 + rng.uniform(-0.01, 0.01, 6), 20.0 + rng.uniform(-0.01, 0.01, 4), [14.0, 20.0]])
    specials = [0.0, -0.0, np.inf, -np.inf, np.nan, 1e-300, 5e-324, 1e-30, 3e-39, 1e-7, 1e5, 1.5e20, 1e300,
                88.0, 89.0, 700.0, 713.5, 714.5, -713.5, 2.0 * math.exp(-0.5772156649015329)]
    fixed = np.concatenate([near_zeros, -near_zeros[:4], switches, -switches[:3], specials])
    k = n - fixed.size
    m = k - k // 2 - k // 4
    scaled = rng.uniform(-1.0, 1.0, m) * np.exp2(rng.integers(-60, 12, m))  # tiny to ~2000
    rand = np.concatenate([rng.uniform(-30.0, 30.0, k // 2), rng.uniform(-3.0, 3.0, k // 4), scaled])
    return rng.permutation(np.concatenate([fixed, rand]))


def _special(name: str, x: float) -> float | None:
    """CUDA libdevice's values where the functions have no finite nonzero value (None: elsewhere)."""
    if math.isnan(x):
        return math.nan
    if name in ("y0", "y1") and x == 0.0:
        return -math.inf
    if name in ("y0", "y1") and x < 0.0:
        return math.nan
    if math.isinf(x):
        if name.startswith("cyl"):
            return x if name.endswith("i1") else math.inf
        return 0.0
    return None


def _exact(name: str, x: float) -> float:
    nu = int(name[-1])
    xm = mpmath.mpf(x)
    if name.startswith("cyl"):
        return float(mpmath.besseli(nu, xm))
    return float((mpmath.besselj if name[0] == "j" else mpmath.bessely)(nu, xm))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_bessel(mps_driver, dtype):
    dev = mps_driver.get_active_torch_device()
    x64 = _inputs(np.random.default_rng(7), N)
    x = torch.from_numpy(x64).to(dtype)
    out = torch.full((6 * N,), POISON, dtype=dtype, device=dev)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # fp64 is emulated
        _bessel[(triton.cdiv(N, BLOCK),)](x.to(dev), out, N, BLOCK=BLOCK)
    got = out.cpu().numpy().reshape(6, N).astype(np.float64)
    xs = x.numpy().astype(np.float64)  # the values the kernel saw (rounded to float32 for float32)
    # float64: far inside the 1e-7 the brief allows (measured: < 1e-11 absolute); float32: the
    # binary64 value rounded once (0.5 ulp), near the zeros the binary64 absolute error
    rtol, atol = (1e-9, 1e-10) if dtype == torch.float64 else (1.2e-7, 2e-11)
    fmax = float(torch.finfo(dtype).max)
    mpmath.mp.dps = 30
    bad = []
    for i, name in enumerate(FUNCS):
        for j, v in enumerate(xs):
            g = got[i, j]
            want = _special(name, v)
            if want is None:
                want = _exact(name, v)
                if abs(want) > fmax:
                    want = math.copysign(math.inf, want)
            if math.isnan(want) or math.isinf(want):
                ok = (math.isnan(g) if math.isnan(want) else g == want)
            else:
                ok = abs(g - want) <= atol + rtol * abs(want)
            if not ok:
                bad.append(f"{name}({v!r}) = {g!r}, want {want!r}")
    assert not bad, f"{len(bad)} wrong:\n" + "\n".join(bad[:20])


def test_bessel_half_types(mps_driver):
    """fp16 and bf16 arguments: the binary64 value rounded once to the result type."""
    dev = mps_driver.get_active_torch_device()
    x = torch.linspace(-9.0, 9.0, 97)
    for dtype in (torch.float16, torch.bfloat16):
        xh = x.to(dtype)
        out = torch.full((6 * 97,), POISON, dtype=dtype, device=dev)
        _bessel[(1,)](xh.to(dev), out, 97, BLOCK=BLOCK)
        got = out.cpu().reshape(6, 97)
        xd = xh.double()
        refs = [torch.special.bessel_j0(xd), torch.special.bessel_j1(xd), torch.special.bessel_y0(xd),
                torch.special.bessel_y1(xd), torch.special.i0(xd), torch.special.i1(xd)]
        for name, g, want in zip(FUNCS, got, refs, strict=True):
            torch.testing.assert_close(g, want.to(dtype), rtol=0, atol=0, equal_nan=True, msg=name)
