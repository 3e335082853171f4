"""Reference model and samples for the software float64 tests (test_fp64*.py).

Samples mix random bit patterns (every exponent, NaNs with payloads), subnormals, values near
the overflow and underflow boundaries, signed zeros, infinities, small integers and halves
(rounding ties), and pairs that cancel. References are numpy float64 (x86 SSE arithmetic is
IEEE binary64 with round to nearest even and subnormals) or exact rationals (fma, narrowing)."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

SPECIALS = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 0.5, 1.5, 2.5, -2.5, 3.0,
                     5e-324, -5e-324, 2.2250738585072014e-308, -2.2250738585072009e-308,
                     1.7976931348623157e308, -1.7976931348623157e308, 8.98846567431158e307,
                     1e-310, 4.9406564584124654e-320, 0.1, 1 / 3, 2.0 ** 52, 2.0 ** 53 + 2, 2.0 ** 63,
                     -2.0 ** 63, 2.0 ** 64, 65504.0, 65520.0, 3.4028235677973366e38, 3.4028235e38 * 1.0000001,
                     1.401298464324817e-45, 7.006492321624085e-46, 0.49999999999999994, 4503599627370495.5],
                    dtype=np.float64)


def samples(rng: np.random.Generator, n: int) -> np.ndarray:
    """n float64 values of every kind."""
    k = n // 6
    bits = rng.integers(0, 2**64, size=k, dtype=np.uint64).view(np.float64)
    mant = rng.random(k) + 1.0
    nice = mant * np.exp2(rng.integers(-40, 40, size=k)) * rng.choice([-1.0, 1.0], size=k)
    lo = (rng.random(k) + 1.0) * np.exp2(rng.integers(-1080, -1000, size=k).astype(np.float64))
    hi = (rng.random(k) + 1.0) * np.exp2(rng.integers(990, 1024, size=k).astype(np.float64))
    edge = np.concatenate([lo, hi]) * rng.choice([-1.0, 1.0], size=2 * k)
    ints = rng.integers(-64, 64, size=k) / rng.choice([1.0, 2.0, 4.0], size=k)
    out = np.concatenate([bits, nice, edge, ints])
    out = np.concatenate([out, rng.choice(SPECIALS, size=n - out.size)])
    return rng.permutation(out)


def partners(rng: np.random.Generator, x: np.ndarray) -> np.ndarray:
    """Second operands: independent values, near-equal values (cancellation), -x, x, and values
    a few binades apart (alignment shifts around the guard bits)."""
    n = x.size
    y = samples(rng, n)
    pick = rng.integers(0, 5, size=n)
    with np.errstate(all="ignore"):
        near = x * (1.0 + rng.choice([-1.0, 1.0], size=n) * np.exp2(-rng.integers(1, 60, size=n).astype(np.float64)))
        shifted = x * np.exp2(rng.integers(-60, 60, size=n).astype(np.float64)) * (1.0 + rng.random(n))
    y = np.where(pick == 1, near, y)
    y = np.where(pick == 2, -x, y)
    y = np.where(pick == 3, x, y)
    return np.where(pick == 4, shifted, y)


def same_bits(got: np.ndarray, want: np.ndarray) -> np.ndarray:
    """Element-wise: identical bits, or both NaN (payloads are not compared)."""
    got, want = np.asarray(got), np.asarray(want)
    gn, wn = np.isnan(got), np.isnan(want)
    eq = got.view(f"u{got.itemsize}") == want.view(f"u{want.itemsize}")
    return np.where(wn, gn, eq & ~gn)


def mismatches(got, want, *inputs, limit: int = 5) -> str:
    ok = same_bits(got, want)
    bad = np.flatnonzero(~ok)[:limit]
    rows = [f"#{i}: in={[float(a[i]) for a in inputs]} got={got[i]!r} want={want[i]!r}" for i in bad]
    return f"{(~ok).sum()} of {ok.size} differ: " + "; ".join(rows)


def fma_ref(a: float, b: float, c: float) -> float:
    """a * b + c rounded once (exact rationals; CPython's int division is correctly rounded)."""
    if not (math.isfinite(a) and math.isfinite(b)):
        return float(np.float64(a) * np.float64(b) + np.float64(c))
    if not math.isfinite(c):  # the exact product is finite
        return c
    exact = Fraction(a) * Fraction(b) + Fraction(c)
    if exact == 0:
        p_neg = (math.copysign(1.0, a) < 0) != (math.copysign(1.0, b) < 0)
        c_neg = math.copysign(1.0, c) < 0
        both_zero = (a == 0 or b == 0) and c == 0
        return -0.0 if both_zero and p_neg and c_neg else 0.0
    try:
        r = exact.numerator / exact.denominator
    except OverflowError:
        return math.inf if exact > 0 else -math.inf
    return (-0.0 if exact < 0 else 0.0) if r == 0 else r


def narrow_ref(x: float, ebits: int, mbits: int, mode: str, sat: int | None = None) -> int:
    """Bits of float64 `x` rounded ("rtne" / "rtz") to an IEEE-like format; NaN -> a quiet NaN.
    `sat`: saturate magnitudes (inf too) to this code (fp8's satfinite)."""
    emax = (1 << ebits) - 1
    sign = (1 << (ebits + mbits)) if math.copysign(1.0, x) < 0 else 0
    if math.isnan(x):
        return sign | (emax << mbits) | (1 << (mbits - 1))
    if math.isinf(x):
        return sign | (emax << mbits if sat is None else sat)
    if x == 0:
        return sign
    bias = (1 << (ebits - 1)) - 1
    emin = 1 - bias
    q = Fraction(abs(x))
    e = max(math.frexp(abs(x))[1] - 1, emin)
    scaled = q / Fraction(2) ** (e - mbits)
    n = round(scaled) if mode == "rtne" else math.floor(scaled)
    code = n + ((e - emin) << mbits)
    if sat is not None:
        return sign | min(code, sat)
    if code >= emax << mbits:
        code = (emax << mbits) if mode == "rtne" else (emax << mbits) - 1
    return sign | code


def to_int_ref(x: float, bits: int, signed: bool) -> int:
    """Toward zero, saturating; NaN -> 0 (negative -> 0 for unsigned)."""
    if math.isnan(x):
        return 0
    lo, hi = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if signed else (0, (1 << bits) - 1)
    if math.isinf(x):
        return hi if x > 0 else lo
    return min(max(math.trunc(x), lo), hi)
