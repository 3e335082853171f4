"""float64 exp10, sinpi, cospi, rcbrt, hypot, rhypot, norm3d, rnorm3d, norm4d, rnorm4d, powi
(pow(fp64, int32)) in software (compiler/mslib/) through libdevice: within ULP[name] ulp
of the exact value (mpmath at 200 bits; the sums of squares exact in Fraction), and exactly the
value when that is a double (exp10(22), hypot(3, 4), sinpi(1/2), ...). remainder, fdim, nextafter,
ldexp, scalbn, logb, ilogb, llrint, llround are exact: compared bit for bit with exact references
(CPython's math.remainder is exact, numpy's nextafter / ldexp / frexp are exact, rounding to
integers in Fraction). Special values (signed zeros, infinities, NaN, subnormals, overflow and
underflow edges, sinpi/cospi at integers and halves, remainder ties) are compared bit for bit with
the IEEE / C99 rules (NaN payloads not compared). One kernel computes every function (one
compile); the long sweep is tools/fp64_accuracy.py."""

from __future__ import annotations

import math
import warnings
from fractions import Fraction

import mpmath
import numpy as np
import pytest
import torch
import triton
import triton.language as tl
from fp64_ref import SPECIALS, partners, samples
from triton.language.extra import libdevice

N = 2000  # inputs per function (not a multiple of BLOCK)
BLOCK = 128
# float results (rows of the float output): within ULP ulp, or exact (EXACT)
FLOAT_FUNCS = ["exp10", "sinpi", "cospi", "rcbrt", "hypot", "rhypot", "norm3d", "rnorm3d", "norm4d", "rnorm4d",
               "powi", "remainder", "fdim", "nextafter", "ldexp", "scalbn", "logb"]
INT_FUNCS = ["ilogb", "llrint", "llround"]  # integer results (bit exact)
FUNCS = FLOAT_FUNCS + INT_FUNCS
EXACT = {"remainder", "fdim", "nextafter", "ldexp", "scalbn", "logb"} | set(INT_FUNCS)
ULP = {name: 0.0 if name in EXACT else 1.0 for name in FUNCS}
ARITY = {"hypot": 2, "rhypot": 2, "remainder": 2, "fdim": 2, "nextafter": 2, "norm3d": 3, "rnorm3d": 3,
         "norm4d": 4, "rnorm4d": 4}
WITH_INT = {"powi", "ldexp", "scalbn"}  # (fp64, int32)
I32_MIN, I32_MAX = -(2 ** 31), 2 ** 31 - 1
I64_MIN, I64_MAX = -(2 ** 63), 2 ** 63 - 1


@triton.jit
def _row(p, row, n, offs, m):
    return tl.load(p + row * n + offs, mask=m)


@triton.jit
def _all(x_ptr, y_ptr, z_ptr, w_ptr, i_ptr, out_ptr, i32_ptr, i64_ptr, n, BLOCK: tl.constexpr):
    # row k of x/y/z/w/i holds function k's operands; float results in out rows 0-16
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    o = out_ptr + offs
    tl.store(o + 0 * n, libdevice.exp10(_row(x_ptr, 0, n, offs, m)), mask=m)
    tl.store(o + 1 * n, libdevice.sinpi(_row(x_ptr, 1, n, offs, m)), mask=m)
    tl.store(o + 2 * n, libdevice.cospi(_row(x_ptr, 2, n, offs, m)), mask=m)
    tl.store(o + 3 * n, libdevice.rcbrt(_row(x_ptr, 3, n, offs, m)), mask=m)
    x, y = _row(x_ptr, 4, n, offs, m), _row(y_ptr, 4, n, offs, m)
    tl.store(o + 4 * n, libdevice.hypot(x, y), mask=m)
    x, y = _row(x_ptr, 5, n, offs, m), _row(y_ptr, 5, n, offs, m)
    tl.store(o + 5 * n, libdevice.rhypot(x, y), mask=m)
    x, y, z = _row(x_ptr, 6, n, offs, m), _row(y_ptr, 6, n, offs, m), _row(z_ptr, 6, n, offs, m)
    tl.store(o + 6 * n, libdevice.norm3d(x, y, z), mask=m)
    x, y, z = _row(x_ptr, 7, n, offs, m), _row(y_ptr, 7, n, offs, m), _row(z_ptr, 7, n, offs, m)
    tl.store(o + 7 * n, libdevice.rnorm3d(x, y, z), mask=m)
    x, y, z, w = (_row(x_ptr, 8, n, offs, m), _row(y_ptr, 8, n, offs, m), _row(z_ptr, 8, n, offs, m),
                  _row(w_ptr, 8, n, offs, m))
    tl.store(o + 8 * n, libdevice.norm4d(x, y, z, w), mask=m)
    x, y, z, w = (_row(x_ptr, 9, n, offs, m), _row(y_ptr, 9, n, offs, m), _row(z_ptr, 9, n, offs, m),
                  _row(w_ptr, 9, n, offs, m))
    tl.store(o + 9 * n, libdevice.rnorm4d(x, y, z, w), mask=m)
    tl.store(o + 10 * n, libdevice.pow(_row(x_ptr, 10, n, offs, m), _row(i_ptr, 10, n, offs, m)), mask=m)
    tl.store(o + 11 * n, libdevice.remainder(_row(x_ptr, 11, n, offs, m), _row(y_ptr, 11, n, offs, m)), mask=m)
    tl.store(o + 12 * n, libdevice.fdim(_row(x_ptr, 12, n, offs, m), _row(y_ptr, 12, n, offs, m)), mask=m)
    tl.store(o + 13 * n, libdevice.nextafter(_row(x_ptr, 13, n, offs, m), _row(y_ptr, 13, n, offs, m)), mask=m)
    tl.store(o + 14 * n, libdevice.ldexp(_row(x_ptr, 14, n, offs, m), _row(i_ptr, 14, n, offs, m)), mask=m)
    tl.store(o + 15 * n, libdevice.scalbn(_row(x_ptr, 15, n, offs, m), _row(i_ptr, 15, n, offs, m)), mask=m)
    tl.store(o + 16 * n, libdevice.logb(_row(x_ptr, 16, n, offs, m)), mask=m)
    tl.store(i32_ptr + offs, libdevice.ilogb(_row(x_ptr, 17, n, offs, m)), mask=m)
    tl.store(i64_ptr + offs, libdevice.llrint(_row(x_ptr, 18, n, offs, m)), mask=m)
    tl.store(i64_ptr + n + offs, libdevice.llround(_row(x_ptr, 19, n, offs, m)), mask=m)


def _logu(rng, lo: float, hi: float, k: int) -> np.ndarray:
    """k values with log2 uniform in [lo, hi), random signs."""
    return np.exp2(rng.uniform(lo, hi, k)) * rng.choice([-1.0, 1.0], k)


def _bits_few(rng, k: int, bits: int = 20) -> np.ndarray:
    """k values with few significant bits (exact multiples, ties), every magnitude."""
    return rng.integers(1, 2 ** bits, k) * np.exp2(rng.integers(-1070, 1000, k).astype(np.float64) - bits) \
        * rng.choice([-1.0, 1.0], k)


def inputs(rng, name: str, n: int) -> tuple[np.ndarray, ...]:
    """(x, y, z, w, i) for `name` (unused operands random): its interesting ranges, every magnitude,
    special values."""
    k = n // 4
    u = rng.uniform
    ints = rng.integers(-60, 60, k).astype(np.float64)
    ranges = {
        "exp10": [u(-330, 311, k), _logu(rng, -70, 8, k), np.arange(-22.0, 23.0), u(308.0, 308.3, 8),
                  u(-324.0, -322.5, 8)],
        "sinpi": [u(-10, 10, k), _logu(rng, -1074, 60, k), ints / 2, ints / 2 + _logu(rng, -52, -20, k),
                  np.array([1 / 6, 1 / 3, 0.25, -0.75, 2.0 ** 52 + 1, 2.0 ** 53 - 1, 2.0 ** 52 + 0.5 + 0.5])],
        "rcbrt": [_logu(rng, -1074, 1024, k), rng.integers(-50, 50, 16).astype(np.float64) ** 3,
                  np.exp2(3.0 * rng.integers(-340, 340, 16))],
        "hypot": [_logu(rng, -1074, 1024, k), _logu(rng, -40, 40, k)],
        "powi": [_logu(rng, -20, 20, k), 1 + _logu(rng, -50, -20, k), rng.integers(-8, 8, k).astype(np.float64)],
        "remainder": [_bits_few(rng, k), _logu(rng, -1074, 1024, k)],
        "ldexp": [samples(rng, k), _logu(rng, -1074, 1024, k)],
        "logb": [_logu(rng, -1074, 1024, k)],
        "llrint": [u(-100, 100, k), ints / 2, np.array([0.49999999999999994, 2.0 ** 63, -(2.0 ** 63), 2.0 ** 62 + 2048,
                                                         -(2.0 ** 63) - 2048, 9.2e18, 4503599627370495.5])],
    }
    key = {"cospi": "sinpi", "rhypot": "hypot", "norm3d": "hypot", "rnorm3d": "hypot", "norm4d": "hypot",
           "rnorm4d": "hypot", "fdim": "ldexp", "nextafter": "ldexp", "scalbn": "ldexp", "ilogb": "logb",
           "llround": "llrint"}.get(name, name)
    x = np.concatenate(ranges[key] + [SPECIALS, samples(rng, k)])
    x = rng.permutation(np.resize(x, n))
    y, z, w = samples(rng, n), samples(rng, n), samples(rng, n)
    i = rng.integers(-60, 60, n).astype(np.int32)
    if key == "hypot":  # partners a few binades apart (the scaling), equal, tiny, huge, triples
        with np.errstate(all="ignore"):
            for arr in (y, z, w):
                pick = rng.integers(0, 4, n)
                near = x * np.exp2(rng.integers(-60, 60, n).astype(np.float64)) * (1 + rng.random(n))
                arr[:] = np.where(pick < 2, near, np.where(pick == 2, _logu(rng, -1074, 1024, n), arr))
        trip = np.array([[3, 4, 0, 0], [5, 12, 0, 0], [2, 3, 6, 0], [1, 2, 2, 0], [1, 1, 1, 1], [2, 4, 5, 6],
                         [1e308, 1e308, 0, 0], [5e-324, 5e-324, 5e-324, 5e-324], [np.inf, np.nan, 1, 1],
                         [np.nan, -np.inf, 0, 0], [np.nan, 1, 1, 1], [0, -0.0, 0, 0], [1e-320, 3e-320, 0, 0]])
        s = np.exp2(rng.integers(-1000, 1000, trip.shape[0]).astype(np.float64))
        s[6:] = 1
        tx = trip * s[:, None]
        x[-13:], y[-13:], z[-13:], w[-13:] = tx.T
    if name == "remainder":  # ties (x = (j + 1/2) y), exact multiples, huge quotients, random pairs
        y = np.abs(_bits_few(rng, n, 12)) * rng.choice([-1.0, 1.0], n)
        j = rng.integers(-2 ** 20, 2 ** 20, n).astype(np.float64)
        pick = rng.integers(0, 5, n)
        with np.errstate(all="ignore"):
            y = np.where(pick == 0, samples(rng, n), y)
            x = np.where(pick == 1, (j + 0.5) * y, x)
            x = np.where(pick == 2, j * y, x)
            x = np.where(pick == 3, np.nextafter((j + 0.5) * y, np.inf), x)
        x[:30] = [1e300, 1.7976931348623157e308, 5e-324, 3.0, -3.0, 5.0, 1.5, 2.5, -2.5, 0.0, -0.0, np.inf, np.nan,
                  7.0, 1.0, 4.0, 6.0, -6.0, 0.75, 1e-310, 2.0, 1.0, 1e10, -1e10, 2.0 ** 1023, 5e-324, 1.0, 3.5, 3.5,
                  -1.25]
        y[:30] = [1e-300, 5e-324, 1.7976931348623157e308, 2.0, 2.0, 2.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, np.inf,
                  np.inf, -np.inf, 0.0, -0.0, 0.5, 3e-310, np.nan, 2.0, 3.0, 3.0, 3.0, 1e-323, 1.5, 1.0, 7.0, 2.5]
    if name in ("fdim", "nextafter"):
        y = partners(rng, x)
    if name in ("ldexp", "scalbn"):  # into and out of the subnormals and overflow, and huge counts
        e = np.where(np.isfinite(x) & (x != 0), np.frexp(np.where(np.isfinite(x), x, 1.0))[1], 0)
        pick = rng.integers(0, 5, n)
        i = np.where(pick == 0, -1074 - e + rng.integers(-3, 60, n), rng.integers(-2200, 2200, n))
        i = np.where(pick == 1, 1024 - e + rng.integers(-3, 3, n), i)
        i = np.where(pick == 2, rng.integers(-3, 3, n), i)
        i[:6] = [I32_MIN, I32_MAX, I32_MIN + 1, 0, -1075, 2098]
        x[:6] = [1.0, 1e-300, 1e300, 3.0, 1.5, 5e-324]
        i = i.astype(np.int32)
    if name == "powi":  # small and large counts, x near 1 with huge counts, the extremes
        pick = rng.integers(0, 4, n)
        with np.errstate(all="ignore"):
            fit = 700 / np.maximum(np.abs(np.log(np.abs(np.where(x == 0, 2.0, x)))), 1e-12)
        big = np.nan_to_num(np.minimum(fit, 2.0 ** 31 - 1)) * rng.uniform(-1, 1, n)
        i = np.where(pick == 0, big, i).astype(np.int64)
        i = np.where(pick == 1, rng.integers(-1100, 1100, n), i)
        i[:8] = [I32_MIN, I32_MAX, 0, 0, -1, 1, 2, -2]
        x[:8] = [1.0000000001, 0.9999999999, np.nan, 0.0, -0.0, -np.inf, -0.0, np.inf]
        i = i.astype(np.int32)
    return x, y, z, w, i


# ---- references ----------------------------------------------------------------------------------

def _f(v) -> Fraction:
    return Fraction(float(v))


def exact(name: str, x: float, y: float, z: float, w: float, i: int):
    """The exact value (an mpf at 200 bits, or a float when it is exactly a float: the exact
    functions and the special values)."""
    if name == "exp10":
        if math.isnan(x):
            return math.nan
        if math.isinf(x):
            return math.inf if x > 0 else 0.0
        return mpmath.power(10, mpmath.mpf(x))
    if name in ("sinpi", "cospi"):
        if not math.isfinite(x):
            return math.nan
        two = Fraction(x) * 2
        if two.denominator == 1:  # an integer or a half: exact; sinpi(+-n) = +-0, cospi(n + 1/2) = +0
            t = int(abs(two)) % 4
            if name == "cospi":
                return [1.0, 0.0, -1.0, 0.0][t]
            return [0.0, 1.0, 0.0, -1.0][t] * math.copysign(1.0, x) if t % 2 else math.copysign(0.0, x)
        return (mpmath.sinpi if name == "sinpi" else mpmath.cospi)(mpmath.mpf(x))
    if name == "rcbrt":
        if math.isnan(x):
            return math.nan
        if x == 0:
            return math.copysign(math.inf, x)
        if math.isinf(x):
            return math.copysign(0.0, x)
        return mpmath.sign(x) / mpmath.cbrt(abs(mpmath.mpf(x)))
    if name in ("hypot", "rhypot", "norm3d", "rnorm3d", "norm4d", "rnorm4d"):
        args = [x, y, z, w][:ARITY[name]]
        recip = name.startswith("r")
        if any(math.isinf(a) for a in args):
            return 0.0 if recip else math.inf
        if any(math.isnan(a) for a in args):
            return math.nan
        s = sum(_f(a) ** 2 for a in args)
        if s == 0:
            return math.inf if recip else 0.0
        r = mpmath.sqrt(mpmath.mpf(s.numerator) / s.denominator)
        return 1 / r if recip else r
    if name == "powi":
        if math.isnan(x) or x == 0 or math.isinf(x) or i == 0:
            with np.errstate(all="ignore"):
                return float(np.power(np.float64(x), np.float64(i)))
        return mpmath.power(mpmath.mpf(x), i)
    if name == "remainder":
        if math.isnan(x) or math.isnan(y) or math.isinf(x) or y == 0:
            return math.nan
        return math.remainder(x, y)  # exact (CPython computes it exactly)
    if name == "fdim":
        if math.isnan(x) or math.isnan(y):
            return math.nan
        with np.errstate(all="ignore"):
            return float(np.float64(x) - np.float64(y)) if x > y else 0.0  # one IEEE subtraction
    if name == "nextafter":
        with np.errstate(all="ignore"):
            return float(np.nextafter(np.float64(x), np.float64(y)))
    if name in ("ldexp", "scalbn"):
        with np.errstate(all="ignore"):
            return float(np.ldexp(np.float64(x), max(min(int(i), 3000), -3000)))  # glibc ldexp: exact
    if name == "logb":
        if math.isnan(x):
            return math.nan
        if x == 0:
            return -math.inf
        if math.isinf(x):
            return math.inf
        return float(math.frexp(x)[1] - 1)
    if name == "ilogb":
        if math.isnan(x) or x == 0:
            return I32_MIN
        if math.isinf(x):
            return I32_MAX
        return math.frexp(x)[1] - 1
    if name in ("llrint", "llround"):
        if math.isnan(x):
            return 0
        if math.isinf(x):
            return I64_MAX if x > 0 else I64_MIN
        f = Fraction(x)
        if name == "llrint":
            r = round(f)  # Fraction rounds half to even
        else:
            r = math.floor(abs(f) + Fraction(1, 2)) * (1 if f >= 0 else -1)
        return max(I64_MIN, min(I64_MAX, int(r)))
    raise KeyError(name)


def _bits(v: float) -> int:
    return int(np.float64(v).view(np.uint64))


def ulp_error(got: float, ex) -> float:
    """|got - ex| in units of the last place of ex (binary64, subnormals included); a float `ex`
    (exactly representable, or special) must be matched bit for bit (NaN: any NaN)."""
    if isinstance(ex, float):
        if math.isnan(ex):
            return 0.0 if math.isnan(got) else math.inf
        return 0.0 if _bits(got) == _bits(ex) else math.inf
    if abs(ex) >= mpmath.mpf(2) ** 1024 - mpmath.mpf(2) ** 970:  # rounds to inf (DBL_MAX + half an ulp)
        return 0.0 if np.isinf(got) and (got > 0) == (ex > 0) else math.inf
    if not np.isfinite(got):
        return math.inf
    if ex != 0 and abs(ex) >= mpmath.mpf(2) ** -1074 and float(ex) == ex:  # exactly a double: exact result
        return 0.0 if got == float(ex) else math.inf
    e = int(mpmath.floor(mpmath.log(abs(ex), 2))) if ex != 0 else -1074
    return float(abs(mpmath.mpf(got) - ex) / mpmath.mpf(2) ** max(e - 52, -1074))


def errors(name: str, args: tuple[np.ndarray, ...], got: np.ndarray) -> list[tuple[float, tuple, object]]:
    """(ulp error, the inputs, got) per input; exact functions: 0 or inf."""
    x, y, z, w, i = args
    out = []
    for j in range(x.size):
        a = (float(x[j]), float(y[j]), float(z[j]), float(w[j]), int(i[j]))
        ex = exact(name, *a)
        g = got[j]
        if name in INT_FUNCS:
            err = 0.0 if int(g) == ex else math.inf
        else:
            err = ulp_error(float(g), ex)
        out.append((err, a, g))
    return out


def describe(name: str, a: tuple) -> str:
    x, y, z, w, i = a
    ar = ARITY.get(name, 1)
    parts = [f"x={x!r}", f"y={y!r}", f"z={z!r}", f"w={w!r}"][:ar]
    if name in WITH_INT:
        parts.append(f"n={i}")
    return " ".join(parts)


def run_all(mps_driver, rng, n: int):
    """Inputs {name: (x, y, z, w, i)} and results {name: array}."""
    dev = mps_driver.get_active_torch_device()
    ins = {name: inputs(rng, name, n) for name in FUNCS}
    x, y, z, w, i = (np.stack([ins[name][k] for name in FUNCS]) for k in range(5))

    def t(a):
        return torch.from_numpy(np.ascontiguousarray(a).ravel()).to(dev)

    out = torch.full((len(FLOAT_FUNCS) * n,), float("nan"), dtype=torch.float64, device=dev)  # poisoned
    o32 = torch.full((n,), 0x5A5A5A5A, dtype=torch.int32, device=dev)
    o64 = torch.full((2 * n,), 0x5A5A5A5A5A5A5A5A, dtype=torch.int64, device=dev)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        _all[(triton.cdiv(n, BLOCK),)](t(x), t(y), t(z), t(w), t(i), out, o32, o64, n, BLOCK=BLOCK)
    res = dict(zip(FLOAT_FUNCS, out.cpu().numpy().reshape(len(FLOAT_FUNCS), n), strict=True))
    res["ilogb"] = o32.cpu().numpy()
    res["llrint"], res["llround"] = o64.cpu().numpy().reshape(2, n)
    return ins, res


@pytest.fixture(scope="module")
def results(mps_driver):
    mpmath.mp.prec = 200
    return run_all(mps_driver, np.random.default_rng(31), N)


@pytest.mark.parametrize("name", FUNCS)
def test_fp64_math_ext2(results, name):
    ins, res = results
    errs = errors(name, ins[name], res[name])
    err, a, g = max(errs, key=lambda e: e[0])
    assert err <= ULP[name], f"{name}: {err:.3f} ulp at {describe(name, a)} (got {g!r}, want {exact(name, *a)!r})"


# ---- the fp32 / fp16 / bf16 versions of logb, norm3d, ... (added with these) and hypot, rhypot -----

@triton.jit
def _small(x_ptr, y_ptr, z_ptr, w_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x, y = tl.load(x_ptr + offs, mask=m), tl.load(y_ptr + offs, mask=m)
    z, w = tl.load(z_ptr + offs, mask=m), tl.load(w_ptr + offs, mask=m)
    tl.store(out_ptr + 0 * n + offs, libdevice.logb(x), mask=m)
    tl.store(out_ptr + 1 * n + offs, libdevice.norm3d(x, y, z), mask=m)
    tl.store(out_ptr + 2 * n + offs, libdevice.rnorm3d(x, y, z), mask=m)
    tl.store(out_ptr + 3 * n + offs, libdevice.norm4d(x, y, z, w), mask=m)
    tl.store(out_ptr + 4 * n + offs, libdevice.rnorm4d(x, y, z, w), mask=m)
    tl.store(out_ptr + 5 * n + offs, libdevice.hypot(x, y), mask=m)
    tl.store(out_ptr + 6 * n + offs, libdevice.rhypot(x, y), mask=m)


SMALL = ["logb", "norm3d", "rnorm3d", "norm4d", "rnorm4d", "hypot", "rhypot"]
# computed in float (fp16/bf16 rounded back once; mslib/fp32.py tmps_norm4f, tmps_logb): the
# norms (hypot too) from a float-float sum of squares and one corrected square root (measured:
# <= 0.5 ulp for normal results, 0.70 where a reciprocal is subnormal (a second rounding); fp16 /
# bf16 <= 0.5); logb exact.
SMALL_ULP = {"logb": 0.0, "norm3d": 1.0, "rnorm3d": 1.0, "norm4d": 1.0, "rnorm4d": 1.0, "hypot": 1.0, "rhypot": 1.0}


def _ulps_narrow(got: np.ndarray, ex: np.ndarray, dtype) -> np.ndarray:
    """|got - ex| in ulps of ex in `dtype` (ex exact in float64; specials must match)."""
    fi = torch.finfo(dtype)
    tiny = fi.tiny * fi.eps  # the smallest subnormal
    with np.errstate(all="ignore"):
        e = np.floor(np.log2(np.abs(ex)))
        ulp = np.maximum(np.exp2(e) * fi.eps, tiny)
        err = np.abs(got - ex) / ulp
    special = ~np.isfinite(ex) | (ex == 0) | (np.abs(ex) >= fi.max * (1 + fi.eps / 2))
    same = (got == ex) | (np.isnan(got) & np.isnan(ex)) | (np.isinf(got) & (np.abs(ex) >= fi.max * (1 + fi.eps / 2)))
    return np.where(special, np.where(same, 0.0, np.inf), err)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
def test_narrow_float_versions(mps_driver, dtype):
    dev = mps_driver.get_active_torch_device()
    rng = np.random.default_rng(5)
    n = 1000
    fi = torch.finfo(dtype)
    lo, hi = np.log2(fi.tiny * fi.eps), np.log2(fi.max)
    cols = []
    for _ in range(4):
        v = _logu(rng, lo, hi, n)
        cols.append(np.where(rng.integers(0, 4, n) == 0, _logu(rng, -8, 8, n), v))  # some moderate values
    x, y, z, w = cols
    y = np.where(rng.integers(0, 2, n) == 0, x * np.exp2(rng.integers(-12, 12, n)), y)  # comparable magnitudes
    sp = np.array([[0, 0, 0, 0], [-0.0, 0, 0, 0], [np.inf, np.nan, 1, 1], [np.nan, 1, 1, 1], [3, 4, 0, 0],
                   [2, 3, 6, 0], [1, 1, 1, 1], [1, 2, 2, 4], [fi.max, fi.max, 0, 0], [fi.tiny * fi.eps] * 4,
                   [fi.tiny, 0, 0, 0], [-np.inf, 0, 0, 0]])
    x[:len(sp)], y[:len(sp)], z[:len(sp)], w[:len(sp)] = sp.T
    ins = [torch.from_numpy(a).to(dtype) for a in (x, y, z, w)]  # rounded to dtype
    xs = [a.double().numpy() for a in ins]
    out = torch.full((len(SMALL) * n,), float("nan"), dtype=dtype, device=dev)
    _small[(triton.cdiv(n, BLOCK),)](*(a.to(dev) for a in ins), out, n, BLOCK=BLOCK)
    got = out.cpu().double().numpy().reshape(len(SMALL), n)
    X, Y, Z, W = xs
    with np.errstate(all="ignore"):
        mag = np.frexp(np.where(np.isfinite(X) & (X != 0), X, 1.0))[1] - 1.0
        logb = np.where(np.isnan(X), np.nan, np.where(X == 0, -np.inf, np.where(np.isinf(X), np.inf, mag)))
        # the sums of squares in float64 carry 2^-53 relative error: far below the fp32 ulp
        s3 = np.sqrt(np.float64(X) ** 2 + Y ** 2 + Z ** 2)
        s4 = np.sqrt(np.float64(X) ** 2 + Y ** 2 + Z ** 2 + W ** 2)
        inf3 = np.isinf(X) | np.isinf(Y) | np.isinf(Z)
        inf4 = inf3 | np.isinf(W)
        inf2 = np.isinf(X) | np.isinf(Y)
        s2 = np.sqrt(np.float64(X) ** 2 + Y ** 2)
        ref = {"logb": logb, "norm3d": np.where(inf3, np.inf, s3), "rnorm3d": np.where(inf3, 0.0, 1 / s3),
               "norm4d": np.where(inf4, np.inf, s4), "rnorm4d": np.where(inf4, 0.0, 1 / s4),
               "hypot": np.where(inf2, np.inf, s2), "rhypot": np.where(inf2, 0.0, 1 / s2)}
    worst = {}
    for k, name in enumerate(SMALL):
        err = _ulps_narrow(got[k], ref[name], dtype)
        j = int(np.argmax(err))
        worst[name] = (float(err[j]), f"x={X[j]!r} y={Y[j]!r} z={Z[j]!r} w={W[j]!r}: got {got[k][j]!r}, "
                                      f"want {ref[name][j]!r}")
    bad = {name: v for name, v in worst.items() if v[0] > SMALL_ULP[name]}
    assert not bad, f"{dtype}: " + "; ".join(f"{name} {e:.3f} ulp at {at}" for name, (e, at) in bad.items())
