"""Bessel functions J0, J1, Y0, Y1, I0, I1 on software float64 (fp64.py, fp64_math.py).

libdevice's j0/j1/y0/y1/cyl_bessel_i0/cyl_bessel_i1 for every float type: fp32/fp16/bf16
arguments are widened to binary64, computed here and rounded back once (float series cancel
badly for |x| ~ 5..14, where the terms reach ~10^3 times the result; binary64 leaves > 10 digits).

The mathematics (t = x^2/4, H_k = 1 + 1/2 + ... + 1/k, gamma = Euler's constant):
- |x| < 14: power series, 13 / 24 / 40 terms for |x| < 2 / 7 / 14, Horner in t (the terms peak
  near k = |x|/2 at < 10^5, so the absolute error stays < 1e-11; measured max 7.4e-12 near 14):
    J0 = sum (-t)^k / k!^2,  J1 = x/2 sum (-t)^k / (k! (k+1)!)
    Y0 = 2/pi [(ln(x/2) + gamma) J0 + sum_{k>=1} (-1)^(k+1) H_k t^k / k!^2]
    Y1 = 2/pi [(ln(x/2) + gamma) J1 - x/4 sum (H_k + H_{k+1}) (-t)^k / (k! (k+1)!)] - 2/(pi x)
- |x| >= 14: Hankel's asymptotic expansion with a_k(nu) = prod_{j<=k} (4nu^2 - (2j-1)^2) / (k! 8^k),
    P = sum (-1)^k a_2k / x^2k, Q = sum (-1)^k a_2k+1 / x^(2k+1) (12 terms each; the smallest
    term at x = 14 is ~e^-28), chi = x - (2nu+1) pi/4:
    J = sqrt(2/(pi x)) (P cos chi - Q sin chi),  Y = sqrt(2/(pi x)) (P sin chi + Q cos chi),
    cos/sin chi from sin x and cos x (exactly reduced in fp64_math) by the angle-sum formulas;
- I0, I1: the same series with all terms positive for |x| < 20 (no cancellation); beyond,
    I = e^x / sqrt(2 pi x) sum (-1)^k a_k(nu) / x^k (20 terms), e^x as e^(x/2) e^(x/2) so that
    the result overflows only when I does (|x| > ~713.98).
Parity: J0, I0 even; J1, I1 odd; Y0, Y1 NaN for x < 0 and -inf at +-0. At +-inf: J, Y -> 0
(Y(-inf) NaN), I0 -> +inf, I1 -> +-inf. NaN -> NaN. Constants are exact rationals rounded once.
"""

from __future__ import annotations

from decimal import Decimal, getcontext
from fractions import Fraction
from math import factorial

from . import fp64_math  # noqa: F401  (registers exp/log/sin/cos/rsqrt in fp64.LIB)
from .fp64 import _lib, bits_of

getcontext().prec = 60
_PI = Decimal("3.14159265358979323846264338327950288419716939937510582097494459")
_GAMMA = Decimal("0.577215664901532860606512090082402431042159335939923598805767")
TWO_OVER_PI = float(2 / _PI)
INV_SQRT_PI = float(1 / _PI.sqrt())
INV_SQRT_2PI = float(1 / (2 * _PI).sqrt())
GAMMA_MINUS_LN2 = float(_GAMMA - Decimal(2).ln())

SERIES_TERMS = 40
ASYM_TERMS = 12  # each of P and Q
I_ASYM_TERMS = 20
JY_SWITCH = 14.0
I_SWITCH = 20.0


def _harmonic(k: int) -> Fraction:
    return sum((Fraction(1, j) for j in range(1, k + 1)), Fraction(0))


def _a(nu: int, k: int) -> Fraction:
    p = Fraction(1)
    for j in range(1, k + 1):
        p *= 4 * nu * nu - (2 * j - 1) ** 2
    return p / (factorial(k) * 8 ** k)


def _tables() -> dict[str, list[float]]:
    n = SERIES_TERMS
    f = factorial
    return {
        "j0": [float(Fraction((-1) ** k, f(k) ** 2)) for k in range(n)],
        "j1": [float(Fraction((-1) ** k, f(k) * f(k + 1))) for k in range(n)],
        # Y0's sum divided by t: coefficient of t^(k-1), k >= 1
        "y0": [float((-1) ** (k + 1) * _harmonic(k) / f(k) ** 2) for k in range(1, n + 1)],
        "y1": [float((-1) ** k * (_harmonic(k) + _harmonic(k + 1)) / (f(k) * f(k + 1))) for k in range(n)],
        "i0": [float(Fraction(1, f(k) ** 2)) for k in range(n)],
        "i1": [float(Fraction(1, f(k) * f(k + 1))) for k in range(n)],
        "p0": [float((-1) ** k * _a(0, 2 * k)) for k in range(ASYM_TERMS)],
        "q0": [float((-1) ** k * _a(0, 2 * k + 1)) for k in range(ASYM_TERMS)],
        "p1": [float((-1) ** k * _a(1, 2 * k)) for k in range(ASYM_TERMS)],
        "q1": [float((-1) ** k * _a(1, 2 * k + 1)) for k in range(ASYM_TERMS)],
        "ia0": [float((-1) ** k * _a(0, k)) for k in range(I_ASYM_TERMS)],
        "ia1": [float((-1) ** k * _a(1, k)) for k in range(I_ASYM_TERMS)],
    }


TABLES = _tables()
_OFFSET: dict[str, int] = {}
_flat: list[float] = []
for _key, _vals in TABLES.items():
    _OFFSET[_key] = len(_flat)
    _flat.extend(_vals)
del _key, _vals


def _lit(x: float) -> str:
    return f"0x{bits_of(x):016x}ul"


def _poly(key: str, z: str, n: str | None = None) -> str:
    return f"tmps_bessel_poly({_OFFSET[key]}, {n or len(TABLES[key])}, {z})"


# Series terms by |x|: the first omitted term t^n / n!^2 is < 1e-19 (< 2e-16 for I at |x| = 20,
# where I0 = 4e7), far below the rounding errors of the largest terms (>= 1)
def _series_terms(ax: str) -> str:
    return f"(tmps_f64_lt({ax}, {_lit(2.0)}) ? 13 : (tmps_f64_lt({ax}, {_lit(7.0)}) ? 24 : {SERIES_TERMS}))"


_ONE = _lit(1.0)
_HALF = _lit(0.5)
_NAN = "0x7ff8000000000000ul"
_INF = "0x7ff0000000000000ul"
_SIGN = "0x8000000000000000ul"
_table = ",\n  ".join(", ".join(_lit(v) for v in _flat[i:i + 4]) for i in range(0, len(_flat), 4))

_lib("tmps_f64_bessel", ("tmps_f64_dd", "tmps_f64_div", "tmps_f64_sqrt", "tmps_f64_rsqrt", "tmps_f64_log",
                         "tmps_f64_exp", "tmps_f64_sincos"), f"""constant ulong tmps_bessel_c[{len(_flat)}] = {{
  {_table}}};
static inline ulong tmps_bessel_poly(int off, int n, ulong z) {{
  // sum_k c[off + k] z^k (Horner with fmas)
  ulong r = tmps_bessel_c[off + n - 1];
  for (int k = n - 2; k >= 0; --k) r = tmps_f64_fma(r, z, tmps_bessel_c[off + k]);
  return r;
}}
static inline ulong tmps_f64_bessel_jy(ulong x, int nu, bool want_y) {{
  // J_nu(x) or Y_nu(x), nu in {{0, 1}}
  if (tmps_f64_isnan(x)) return x | 0x0008000000000000ul;
  ulong ax = x & 0x7ffffffffffffffful;
  bool neg = (x >> 63) != 0ul;
  if (want_y) {{
    if (ax == 0ul) return 0xfff0000000000000ul;
    if (neg) return {_NAN};
  }}
  if (ax == {_INF}) return 0ul;
  ulong r;
  if (tmps_f64_lt(ax, {_lit(JY_SWITCH)})) {{
    ulong t = tmps_f64_mul(tmps_f64_mul(ax, ax), {_lit(0.25)});
    int ns = {_series_terms("ax")};
    ulong hx = tmps_f64_mul(ax, {_HALF});
    ulong sj = nu == 0 ? {_poly("j0", "t", "ns")} : {_poly("j1", "t", "ns")};
    ulong j = nu == 0 ? sj : tmps_f64_mul(hx, sj);
    if (!want_y) {{
      r = j;
    }} else {{
      // ln(x/2) + gamma as ln(x) + (gamma - ln 2): x/2 would round to 0 for the least subnormal
      ulong lg = tmps_f64_add(tmps_f64_log(ax), {_lit(GAMMA_MINUS_LN2)});
      if (nu == 0) {{
        ulong s = tmps_f64_fma(lg, j, tmps_f64_mul(t, {_poly("y0", "t", "ns")}));
        r = tmps_f64_mul({_lit(TWO_OVER_PI)}, s);
      }} else {{
        ulong s = tmps_f64_fma(lg, j, tmps_f64_mul(tmps_f64_mul(ax, {_lit(-0.25)}), {_poly("y1", "t", "ns")}));
        r = tmps_f64_sub(tmps_f64_mul({_lit(TWO_OVER_PI)}, s), tmps_f64_div({_lit(TWO_OVER_PI)}, ax));
      }}
    }}
  }} else {{
    ulong w = tmps_f64_div({_ONE}, ax);
    ulong z = tmps_f64_mul(w, w);
    ulong p = nu == 0 ? {_poly("p0", "z")} : {_poly("p1", "z")};
    ulong q = tmps_f64_mul(w, nu == 0 ? {_poly("q0", "z")} : {_poly("q1", "z")});
    ulong s = tmps_f64_sin(ax), c = tmps_f64_cos(ax);
    ulong spc = tmps_f64_add(s, c), smc = tmps_f64_sub(s, c);
    // sqrt(2) cos(chi), sqrt(2) sin(chi) for chi = x - pi/4 (nu = 0) or x - 3pi/4 (nu = 1)
    ulong cc = nu == 0 ? spc : smc;
    ulong ss = nu == 0 ? smc : spc ^ {_SIGN};
    ulong v = want_y ? tmps_f64_fma(p, ss, tmps_f64_mul(q, cc)) : tmps_f64_fma(p, cc, tmps_f64_mul(q, ss) ^ {_SIGN});
    r = tmps_f64_mul(tmps_f64_mul({_lit(INV_SQRT_PI)}, tmps_f64_rsqrt(ax)), v);
  }}
  return (neg && nu == 1) ? r ^ {_SIGN} : r;
}}
static inline ulong tmps_f64_bessel_i(ulong x, int nu) {{
  // I_nu(x), nu in {{0, 1}}
  if (tmps_f64_isnan(x)) return x | 0x0008000000000000ul;
  ulong ax = x & 0x7ffffffffffffffful;
  bool neg = (x >> 63) != 0ul;
  ulong r;
  if (ax == {_INF}) {{
    r = {_INF};
  }} else if (tmps_f64_lt(ax, {_lit(I_SWITCH)})) {{
    ulong t = tmps_f64_mul(tmps_f64_mul(ax, ax), {_lit(0.25)});
    int ns = {_series_terms("ax")};
    r = nu == 0 ? {_poly("i0", "t", "ns")} : tmps_f64_mul(tmps_f64_mul(ax, {_HALF}), {_poly("i1", "t", "ns")});
  }} else {{
    ulong w = tmps_f64_div({_ONE}, ax);
    ulong sum = nu == 0 ? {_poly("ia0", "w")} : {_poly("ia1", "w")};
    ulong e = tmps_f64_exp(tmps_f64_mul(ax, {_HALF}));
    ulong a = tmps_f64_mul(tmps_f64_mul(e, {_lit(INV_SQRT_2PI)}), tmps_f64_rsqrt(ax));
    r = tmps_f64_mul(e, tmps_f64_mul(a, sum));
  }}
  return (neg && nu == 1) ? r ^ {_SIGN} : r;
}}
""")

# libdevice symbol (language/libdevice.py) -> the binary64 expression over `{0}` (ulong bits)
CALLS = {
    "tmps_j0": "tmps_f64_bessel_jy({0}, 0, false)", "tmps_j1": "tmps_f64_bessel_jy({0}, 1, false)",
    "tmps_y0": "tmps_f64_bessel_jy({0}, 0, true)", "tmps_y1": "tmps_f64_bessel_jy({0}, 1, true)",
    "tmps_i0": "tmps_f64_bessel_i({0}, 0)", "tmps_i1": "tmps_f64_bessel_i({0}, 1)",
}
