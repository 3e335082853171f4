"""Special functions on software binary64: erfinv, erfcinv, erfcx, normcdf, normcdfinv, lgamma,
tgamma, jn, yn and rcp64h (libdevice names), for every float type (ops/special.py widens
fp32/fp16/bf16 exactly and rounds the binary64 result once).

Built on fp64_math.py / fp64_math_ext.py (erf as a double-double, exp_k, log_dd, the sin/cos
kernels, the double-double helpers tmps_dd_*) and fp64_bessel.py (J0, J1, Y0, Y1):
- erfc_k(z), z a double-double >= 0: erfc = 2^k (h + l); z < 4: 1 - erf_dd(zh) - zl erf'(zh);
  z >= 4: the continued fraction of erfc.c (erfcx) times exp(-z^2) with z^2 as a double-double.
  normcdf(x) = erfc(-x/sqrt2)/2 with -x/sqrt2 a double-double (the rounding of x/sqrt2 alone
  costs ~x^2 ulp in the tails); erfcx(x) = the continued fraction (x >= 4) or erfc exp(x^2),
  and 2 exp(x^2) - erfcx(-x) for x < 0;
- erfinv(y), |y| <= 1/2: the Maclaurin series of erfinv in w = y sqrt(pi)/2 (20 terms, exact
  rational coefficients: c_k = sum c_m c_(k-1-m) / ((m+1)(2m+1))), then one Newton step with the
  residual erf_dd(x) - y in double-double; 1/2 < |y| < 1: erfcinv(1 - |y|) (1 - |y| exact);
  erfcinv(q), 0 < q < 1/2: x0 from erfc(x) ~ exp(-x^2)/(x sqrt(pi)), three Newton steps on
  log erfc(x) - log q in double, one last step with the relative residual (erfc_k(x) - q)/erfc
  in double-double; erfcinv(q) = erfinv(1 - q) for q in [1/2, 3/2], -erfcinv(2 - q) above;
  normcdfinv(p) = -sqrt2 erfcinv(2p) (the product in double-double);
- lgamma as a double-double (logarithms by tmps_sp_log_dd, ~2^-100): |x - 1| <= 1/4:
  d (-gamma + sum (-1)^k zeta(k)/k d^(k-1)) (30 terms, zeta by Euler-Maclaurin in rationals),
  |x - 2| <= 1/4: log1p(d) + lgamma(1 + d); other x < 16:
  shifted to z = x + n >= 16 with the product x (x+1) ... in double-double, then Stirling's series
  (18 terms, < 1e-32) in double-double; x < 0: log pi - log|x sin(pi x)| - lgamma(-x) with sin(pi x)
  from the exact reduction of x mod 1 and a double-double Taylor series; x > 2^900: x (log x - 1).
  tgamma = +-exp(lgamma) from the same double-double (exp_k), with its sign from floor(-x);
- jn, yn (int32 order n, J_-n = (-1)^n J_n, J_n(-x) = (-1)^n J_n(x)): for x <= max(|n|, 30) Miller's
  backward recurrence in double-double from m = t + 60 + t/8 (t = max(n, x)), normalized by
  J0 + 2 sum J_2k = 1; Y0 = 2/pi [(log(x/2) + gamma) J0 + 2 sum (-1)^(k+1) J_2k / k] (Neumann) and
  Y1 from the Wronskian J1 Y0 - J0 Y1 = 2/(pi x), both from the same J's; beyond x = 30 the seeds
  J0, J1, Y0, Y1 from Hankel's expansion in double-double (20 + 20 terms, sin x and cos x from the
  exact reduction of fp64_math.py and double-double Taylor kernels); upward recurrences (J for
  x > n, Y always) in double-double with a running power-of-two scale; x < 2^-29: the leading
  terms (x/2)^n / n! and -(n-1)!/pi (2/x)^n in the log domain; J_n = 0 without recurrence when
  (x/2)^n / n! < e^-765. Cost: O(max(n, x)) double-double steps (yn stops once it overflows);
- rcp64h: CUDA's rcp.approx.ftz.f64 made deterministic (see below).

Measured (tools/libdevice_special_accuracy.py, mpmath at 160 bits; fp64: 3000 fresh inputs per
family over the whole domain with the special values, two seeds; fp32 3000, fp16/bf16 1500):
fp64 erfinv 0.54 ulp (subnormal results; 0.50 elsewhere), erfcinv, erfcx, normcdf, normcdfinv,
tgamma, yn 0.50 ulp; jn 0.50 ulp (0.94 at a double next to the first zero of J0, where the value
is ~1e-17); lgamma 0.50 ulp except at its zeros on the negative axis, where the absolute error is
~2e-28 (the double-double sum of terms ~1): over 1 ulp only for |lgamma| < ~1e-12, i.e. x within
~1e-12 of a zero (7679 ulp at the double nearest the zero -2.7476826467274127, value 1.7e-16).
fp32, fp16, bf16: <= 0.500 ulp (correctly rounded on every input measured).
"""

from __future__ import annotations

from fractions import Fraction
from math import factorial

from . import fp64_bessel, fp64_math_ext  # also register their helpers (bessel, erfc, expk, log_dd) in fp64.LIB
from .fp64 import _lib
from .fp64_math import _PI, TSP_HI, TSP_LO, _frac_to_dd, _lit
from .fp64_math_ext import _dd

NEG = "0x8000000000000000ul"
ONE = "0x3ff0000000000000ul"
INF = "0x7ff0000000000000ul"
NAN = "0x7ff8000000000000ul"


def _sqrt_fraction(q: Fraction, bits: int = 240) -> Fraction:
    """sqrt(q) to ~`bits` bits (integer square root)."""
    from math import isqrt
    return Fraction(isqrt(int(q * (1 << (2 * bits)))), 1 << bits)


_SQRT2 = _sqrt_fraction(Fraction(2))
_SQRTPI = _sqrt_fraction(_PI)
SQ2_H, SQ2_L = _dd(_SQRT2)
ISQ2_H, ISQ2_L = _dd(1 / _SQRT2)
SPI2_H, SPI2_L = _dd(_SQRTPI / 2)  # sqrt(pi)/2
ISP_H, ISP_L = _lit(TSP_HI / 2), _lit(TSP_LO / 2)  # 1/sqrt(pi)
TSP = _lit(TSP_HI)


def _erfinv_series(n: int) -> list[float]:
    """erfinv(y) = sum_k a_k w^(2k+1), w = y sqrt(pi)/2: a_k = c_k / (2k+1)."""
    c = [Fraction(1)]
    for k in range(1, n):
        c.append(sum((c[m] * c[k - 1 - m] / ((m + 1) * (2 * m + 1)) for m in range(k)), Fraction(0)))
    return [float(c[k] / (2 * k + 1)) for k in range(n)]


ERFINV_TERMS = 20
_ERFINV = _erfinv_series(ERFINV_TERMS)
_erfinv_tab = ", ".join(_lit(v) for v in _ERFINV)

_lib("tmps_f64_sp_erf", ("tmps_f64_erfc", "tmps_f64_expk", "tmps_f64_log", "tmps_f64_minmax", "tmps_f64_sqrt"), f"""
constant ulong tmps_sp_erfinv_c[{ERFINV_TERMS}] = {{{_erfinv_tab}}};
static inline void tmps_sp_erfcx_cf(ulong a, thread ulong& h, thread ulong& l) {{
  // a >= 4: erfcx(a) = 1/sqrt(pi) / (a + (1/2)/(a + (2/2)/(a + (3/2)/...))) as a double-double
  int terms = tmps_f64_lt(a, {_lit(6.0)}) ? 40 : 20;
  ulong t = a;
  for (int n = terms; n > 3; --n)
    t = tmps_f64_add(a, tmps_f64_div(tmps_f64_mul(tmps_f64_from_i64((long)n), 0x3fe0000000000000ul), t));
  ulong th = t, tl = 0ul;
  for (int n = 3; n > 0; --n) {{
    ulong qh, ql;
    tmps_dd_div(tmps_f64_mul(tmps_f64_from_i64((long)n), 0x3fe0000000000000ul), 0ul, th, tl, qh, ql);
    tmps_dd_add(a, 0ul, qh, ql, th, tl);
  }}
  tmps_dd_div({ISP_H}, {ISP_L}, th, tl, h, l);
}}
static inline int tmps_sp_erfc_k(ulong zh, ulong zl, thread ulong& h, thread ulong& l) {{
  // erfc(zh + zl) = 2^k (h + l) for a double-double 0 <= zh (finite); 0 beyond 27.3
  if (zh < 0x3c80000000000000ul) {{  // zh < 2^-55: 1 - 2z/sqrt(pi)
    tmps_dd_fast({ONE}, tmps_f64_mul(tmps_f64_add(zh, zl), {TSP}) ^ {NEG}, h, l);
    return 0;
  }}
  if (tmps_f64_lt(zh, {_lit(4.0)})) {{
    tmps_f64_erf_dd(zh, h, l);
    tmps_dd_add({ONE}, 0ul, h ^ {NEG}, l ^ {NEG}, h, l);
    // - zl erf'(zh) = - zl 2/sqrt(pi) exp(-zh^2)
    ulong c = tmps_f64_mul(tmps_f64_mul(zl, {TSP}), tmps_f64_exp(tmps_f64_mul(zh, zh) ^ {NEG}));
    tmps_dd_add(h, l, c ^ {NEG}, 0ul, h, l);
    return 0;
  }}
  if (tmps_f64_lt({_lit(27.3)}, zh)) {{ h = 0ul; l = 0ul; return 0; }}  // erfc < 2^-1076
  ulong fh, fl;
  tmps_sp_erfcx_cf(zh, fh, fl);
  // erfcx(zh + zl) = erfcx(zh) (1 + zl (2 zh - 2 / (sqrt(pi) erfcx(zh)))): zl/zh reaches 2^-54
  ulong c = tmps_f64_mul(zl, tmps_f64_sub(tmps_f64_add(zh, zh), tmps_f64_div({TSP}, fh)));
  tmps_dd_add(fh, fl, tmps_f64_mul(fh, c), 0ul, fh, fl);
  ulong sh = tmps_f64_mul(zh, zh), se = tmps_f64_fma(zh, zh, sh ^ {NEG});
  se = tmps_f64_fma(tmps_f64_add(zh, zh), zl, se);  // (zh + zl)^2 = sh + se
  int k = tmps_f64_exp_k(sh ^ {NEG}, se ^ {NEG}, h, l);
  tmps_dd_mul(h, l, fh, fl, h, l);
  return k;
}}
static inline int tmps_sp_erfcx_pos(ulong a, thread ulong& h, thread ulong& l) {{
  // erfcx(a) = 2^k (h + l) for finite a >= 2^-55
  if (tmps_f64_le({_lit(4.0)}, a)) {{ tmps_sp_erfcx_cf(a, h, l); return 0; }}
  tmps_f64_erf_dd(a, h, l);
  tmps_dd_add({ONE}, 0ul, h ^ {NEG}, l ^ {NEG}, h, l);
  ulong sh = tmps_f64_mul(a, a), se = tmps_f64_fma(a, a, sh ^ {NEG}), eh, el;
  int k = tmps_f64_exp_k(sh, se, eh, el);
  tmps_dd_mul(h, l, eh, el, h, l);
  return k;
}}
static inline ulong tmps_f64_erfcx(ulong x) {{
  if (tmps_f64_isnan(x)) return x | 0x0008000000000000ul;
  ulong a = x & 0x7ffffffffffffffful;
  if (a < 0x3c80000000000000ul) return {ONE};  // |x| < 2^-55: 1 -+ 2|x|/sqrt(pi) rounds to 1
  if (x == {INF}) return 0ul;
  if ((x >> 63) != 0ul && tmps_f64_lt({_lit(26.7)}, a)) return {INF};  // 2 exp(x^2) overflows
  if (x == {INF}) return 0ul;
  ulong h, l;
  int k = tmps_sp_erfcx_pos(a, h, l);
  if ((x >> 63) == 0ul) return tmps_f64_ldexp(tmps_f64_add(h, l), k);
  // x < 0: 2 exp(x^2) - erfcx(|x|) = 2^(j+1) [(eh + el) - 2^(k-j-1) (h + l)]
  ulong sh = tmps_f64_mul(a, a), se = tmps_f64_fma(a, a, sh ^ {NEG}), eh, el;
  int j = tmps_f64_exp_k(sh, se, eh, el);
  int d = k - j - 1;
  if (d > -200) tmps_dd_add(eh, el, tmps_f64_ldexp(h, d) ^ {NEG}, tmps_f64_ldexp(l, d) ^ {NEG}, eh, el);
  return tmps_f64_ldexp(tmps_f64_add(eh, el), j + 1);
}}
static inline ulong tmps_f64_normcdf(ulong x) {{
  // erfc(-x/sqrt2)/2, -x/sqrt2 as a double-double
  if (tmps_f64_isnan(x)) return x | 0x0008000000000000ul;
  if ((x & 0x7ffffffffffffffful) == {INF}) return (x >> 63) != 0ul ? 0ul : {ONE};
  ulong zh = tmps_f64_mul(x, {ISQ2_H} ^ {NEG});
  ulong zl = tmps_f64_fma(x, {ISQ2_H} ^ {NEG}, zh ^ {NEG});
  zl = tmps_f64_fma(x, {ISQ2_L} ^ {NEG}, zl);
  ulong h, l;
  if ((zh >> 63) == 0ul) {{
    int k = tmps_sp_erfc_k(zh, zl, h, l);
    return tmps_f64_ldexp(tmps_f64_add(h, l), k - 1);
  }}
  // 1 - erfc(|z|)/2
  int k = tmps_sp_erfc_k(zh ^ {NEG}, zl ^ {NEG}, h, l);
  if (k < -200) return {ONE};
  tmps_dd_add({ONE}, 0ul, tmps_f64_ldexp(h, k - 1) ^ {NEG}, tmps_f64_ldexp(l, k - 1) ^ {NEG}, h, l);
  return tmps_f64_add(h, l);
}}
static inline void tmps_sp_erfinv_small(ulong y, thread ulong& h, thread ulong& l) {{
  // erfinv(y), 0 < |y| <= 1/2, as a double-double
  ulong a = y & 0x7ffffffffffffffful, sign = y & {NEG};
  if (a < 0x3c90000000000000ul) {{  // |y| < 2^-54: y sqrt(pi)/2 (the cubic term is < 2^-108 relative)
    h = tmps_f64_mul(a, {SPI2_H});
    l = tmps_f64_fma(a, {SPI2_L}, tmps_f64_fma(a, {SPI2_H}, h ^ {NEG}));
    h |= sign; l ^= sign;
    return;
  }}
  ulong w = tmps_f64_mul(a, {SPI2_H}), w2 = tmps_f64_mul(w, w);
  ulong p = tmps_sp_erfinv_c[{ERFINV_TERMS - 1}];
  for (int k = {ERFINV_TERMS - 2}; k >= 0; --k) p = tmps_f64_fma(p, w2, tmps_sp_erfinv_c[k]);
  ulong x = tmps_f64_mul(w, p);  // ~1e-11 relative at |y| = 1/2
  // Newton: x - (erf(x) - a) / (2/sqrt(pi) exp(-x^2)), the residual in double-double
  ulong eh, el;
  tmps_f64_erf_dd(x, eh, el);
  tmps_dd_add(eh, el, a ^ {NEG}, 0ul, eh, el);
  ulong dx = tmps_f64_div(tmps_f64_add(eh, el), tmps_f64_mul({TSP}, tmps_f64_exp(tmps_f64_mul(x, x) ^ {NEG})));
  tmps_dd_fast(x, dx ^ {NEG}, h, l);
  h ^= sign; l ^= sign;
}}
static inline void tmps_sp_erfcinv_small(ulong q, thread ulong& h, thread ulong& l) {{
  // erfcinv(q), 0 < q < 1/2 (x > 0.47), as a double-double
  ulong lq = tmps_f64_log(q), t = lq ^ {NEG};
  // erfc(x) ~ exp(-x^2) / (x sqrt(pi)): x^2 ~ t - log(pi t)/2
  ulong x2 = tmps_f64_fma(tmps_f64_log(tmps_f64_mul(t, {_lit(float(_PI))})), 0xbfe0000000000000ul, t);
  ulong x = tmps_f64_sqrt(tmps_f64_maxnum(x2, {_lit(0.05)}));
  ulong eh, el;
  for (int i = 0; i < 3; ++i) {{  // Newton on log erfc(x) - log q: x += log(erfc(x)/q) sqrt(pi)/2 erfcx(x)
    int k = tmps_sp_erfcx_pos(x, eh, el);
    ulong e = tmps_f64_ldexp(tmps_f64_add(eh, el), k);
    ulong g = tmps_f64_sub(tmps_f64_sub(tmps_f64_log(e), tmps_f64_mul(x, x)), lq);
    x = tmps_f64_fma(tmps_f64_mul(g, {SPI2_H}), e, x);
  }}
  // last step: dx = (erfc(x) - q) / erfc(x) * sqrt(pi)/2 * erfcx(x), the residual in double-double
  int k = tmps_sp_erfc_k(x, 0ul, h, l);
  ulong ch = h;
  tmps_dd_add(h, l, tmps_f64_ldexp(q, -k) ^ {NEG}, 0ul, h, l);
  ulong rel = tmps_f64_div(tmps_f64_add(h, l), ch);
  ulong sh = tmps_f64_mul(x, x), se = tmps_f64_fma(x, x, sh ^ {NEG}), xh, xl;
  int j = tmps_f64_exp_k(sh, se, xh, xl);
  ulong e = tmps_f64_ldexp(tmps_f64_mul(ch, xh), j + k);  // erfcx(x), to ~1 ulp
  tmps_dd_fast(x, tmps_f64_mul(tmps_f64_mul(rel, {SPI2_H}), e), h, l);
}}
static inline void tmps_sp_erfcinv_dd(ulong q, thread ulong& h, thread ulong& l) {{
  // 0 < q < 2
  if (tmps_f64_lt(q, 0x3fe0000000000000ul)) {{ tmps_sp_erfcinv_small(q, h, l); return; }}
  if (tmps_f64_le(q, {_lit(1.5)})) {{  // erfinv(1 - q), 1 - q exact
    ulong y = tmps_f64_sub({ONE}, q);
    if ((y & 0x7ffffffffffffffful) == 0ul) {{ h = 0ul; l = 0ul; return; }}
    tmps_sp_erfinv_small(y, h, l);
    return;
  }}
  tmps_sp_erfcinv_small(tmps_f64_sub(0x4000000000000000ul, q), h, l);  // 2 - q exact
  h ^= {NEG}; l ^= {NEG};
}}
static inline ulong tmps_f64_erfinv(ulong y) {{
  if (tmps_f64_isnan(y)) return y | 0x0008000000000000ul;
  ulong a = y & 0x7ffffffffffffffful, sign = y & {NEG};
  if (a > {ONE}) return {NAN};
  if (a == {ONE}) return sign | {INF};
  if (a == 0ul) return y;
  ulong h, l;
  if (a < 0x3c90000000000000ul) {{  // |y| < 2^-54: y sqrt(pi)/2, scaled by 2^110 so that no part underflows
    ulong b = tmps_f64_ldexp(a, 110);  // (the cubic term is < 2^-108 relative)
    h = tmps_f64_mul(b, {SPI2_H});
    l = tmps_f64_fma(b, {SPI2_L}, tmps_f64_fma(b, {SPI2_H}, h ^ {NEG}));
    return sign | tmps_f64_ldexp(tmps_f64_add(h, l), -110);
  }}
  if (tmps_f64_le(a, 0x3fe0000000000000ul)) tmps_sp_erfinv_small(y, h, l);
  else {{
    tmps_sp_erfcinv_small(tmps_f64_sub({ONE}, a), h, l);  // 1 - |y| exact
    h ^= sign; l ^= sign;
  }}
  return tmps_f64_add(h, l);
}}
static inline ulong tmps_f64_erfcinv(ulong q) {{
  if (tmps_f64_isnan(q)) return q | 0x0008000000000000ul;
  if ((q >> 63) != 0ul && q != {NEG}) return {NAN};
  if ((q & 0x7ffffffffffffffful) == 0ul) return {INF};
  if (q == 0x4000000000000000ul) return {INF} | {NEG};
  if (tmps_f64_lt(0x4000000000000000ul, q)) return {NAN};
  ulong h, l;
  tmps_sp_erfcinv_dd(q, h, l);
  return tmps_f64_add(h, l);
}}
static inline ulong tmps_f64_normcdfinv(ulong p) {{
  // -sqrt2 erfcinv(2p)
  if (tmps_f64_isnan(p)) return p | 0x0008000000000000ul;
  if ((p >> 63) != 0ul && p != {NEG}) return {NAN};
  if ((p & 0x7ffffffffffffffful) == 0ul) return {INF} | {NEG};
  if (p == {ONE}) return {INF};
  if (tmps_f64_lt({ONE}, p)) return {NAN};
  ulong h, l;
  tmps_sp_erfcinv_dd(tmps_f64_add(p, p), h, l);
  tmps_dd_mul(h, l, {SQ2_H} ^ {NEG}, {SQ2_L} ^ {NEG}, h, l);
  return tmps_f64_add(h, l);
}}
""")

# ---- lgamma, tgamma --------------------------------------------------------------------------


def _bernoulli(n: int) -> list[Fraction]:
    """B_0..B_n (B_1 = -1/2), by the defining recurrence sum_{j<=m} C(m+1, j) B_j = 0."""
    from math import comb
    b = [Fraction(1)]
    for m in range(1, n + 1):
        b.append(-sum((comb(m + 1, j) * b[j] for j in range(m)), Fraction(0)) / (m + 1))
    return b


_B = _bernoulli(40)


def _zeta(s: int, n: int = 16, terms: int = 12) -> Fraction:
    """zeta(s), s >= 2, by Euler-Maclaurin at N = n (error ~ (2 pi N)^-(2 terms), far below 2^-110)."""
    z = sum((Fraction(1, k ** s) for k in range(1, n)), Fraction(0))
    z += Fraction(1, (s - 1) * n ** (s - 1)) + Fraction(1, 2 * n ** s)
    rise = Fraction(s)  # s (s+1) ... (s + 2j - 2)
    for j in range(1, terms + 1):
        z += _B[2 * j] / factorial(2 * j) * rise / Fraction(n) ** (s + 2 * j - 1)
        rise *= (s + 2 * j - 1) * (s + 2 * j)
    return z


def _dec_frac(d) -> Fraction:
    return Fraction(str(d))


_GAMMA_Q = _dec_frac(fp64_bessel._GAMMA)
_PI_DEC = fp64_bessel._PI
HL2PI_H, HL2PI_L = _dd(_dec_frac((2 * _PI_DEC).ln() / 2))  # log(2 pi)/2
LOGPI_H, LOGPI_L = _dd(_dec_frac(_PI_DEC.ln()))
PI_H, PI_L = _dd(_PI)
LN2_H, LN2_L = fp64_math_ext.LN2_H, fp64_math_ext.LN2_L
LGAMMA_TERMS = 30  # lgamma(1 + d) = d sum_k t_k d^(k-1), |d| <= 1/4: 0.25^30/31 < 2^-64 of the first
_LGT = [-_GAMMA_Q] + [Fraction((-1) ** k) * _zeta(k) / k for k in range(2, LGAMMA_TERMS + 1)]
STIRLING_TERMS = 18  # z >= 16: the first omitted term is < 1e-32 (absolute accuracy near the zeros)
_stir_series = fp64_math_ext._series("w2", [_B[2 * k] / (2 * k * (2 * k - 1)) for k in range(1, STIRLING_TERMS + 1)],
                                     3, "S")
_lgt_series = fp64_math_ext._series("d", _LGT, 6, "T")
_sin_series = fp64_math_ext._series("z", [Fraction((-1) ** n, factorial(2 * n + 1)) for n in range(20)], 9, "S")
_log_series = fp64_math_ext._series("z", [Fraction(1, 2 * n + 1) for n in range(17)], 12, "S")
_lib("tmps_f64_sp_gamma", ("tmps_f64_log_dd", "tmps_f64_expk", "tmps_f64_sincos"), f"""
static inline void tmps_sp_log_dd(ulong xh, ulong xl, thread ulong& h, thread ulong& l) {{
  // log(xh + xl) for a normalized double-double xh > 0, to ~2^-100 relative: fp64_math_ext's log_dd
  // (x = 2^e m, s = (m-1)/(m+1), 2s sum s^2n/(2n+1)) with 12 of its 17 terms in double-double (its
  // double tail costs ~1e-24 absolute: lgamma near its zeros subtracts such logarithms)
  int e;
  ulong m = tmps_f64_norm(xh, e);
  ulong mv = (m & 0x000ffffffffffffful) | 0x3ff0000000000000ul;  // in [1, 2)
  if ((m & 0x000ffffffffffffful) > 0x6a09e667f3bcdul) {{ mv -= 0x0010000000000000ul; e += 1; }}  // > sqrt(2)
  ulong fh, fl, dh, dl, sh, sl, zh, zl;
  tmps_dd_add(mv, 0ul, {NEG} | {ONE}, 0ul, fh, fl);  // m - 1 (exact), + the scaled low part
  tmps_dd_add(fh, fl, tmps_f64_ldexp(xl, -e), 0ul, fh, fl);
  tmps_dd_add(fh, fl, 0x4000000000000000ul, 0ul, dh, dl);
  tmps_dd_div(fh, fl, dh, dl, sh, sl);  // s = f / (2 + f)
  tmps_dd_mul(sh, sl, sh, sl, zh, zl);
{_log_series}
  tmps_dd_mul(sh, sl, Sh, Sl, h, l);
  h = tmps_f64_add(h, h);
  l = tmps_f64_add(l, l);
  if (e != 0) {{  // + e ln2, ln2 in three parts (e ln2_hi is exact)
    ulong kd = tmps_f64_from_i64((long)e);
    ulong b = tmps_f64_mul(kd, {_lit(fp64_math_ext.LN2_LO)});
    ulong be = tmps_f64_fma(kd, {_lit(fp64_math_ext.LN2_LO)}, b ^ {NEG});
    be = tmps_f64_fma(kd, {_lit(fp64_math_ext.LN2_LO2)}, be);
    ulong th, tl;
    tmps_dd_two_sum(tmps_f64_mul(kd, {_lit(fp64_math_ext.LN2_HI)}), b, th, tl);
    tmps_dd_add(th, tmps_f64_add(tl, be), h, l, h, l);
  }}
}}
static inline void tmps_sp_lgamma_near(ulong d, thread ulong& h, thread ulong& l) {{
  // lgamma(1 + d), |d| <= 1/4: d (-gamma + sum_k>=2 (-1)^k zeta(k)/k d^(k-1))
  ulong dh = d, dl = 0ul;
{_lgt_series}
  tmps_dd_mul(Th, Tl, d, 0ul, h, l);
}}
static inline void tmps_sp_lgamma_pos(ulong x, thread ulong& h, thread ulong& l) {{
  // lgamma(x) as a double-double, 0 < x <= 2^900
  if (tmps_f64_le({_lit(0.75)}, x) && tmps_f64_le(x, {_lit(1.25)})) {{
    tmps_sp_lgamma_near(tmps_f64_sub(x, {ONE}), h, l);
    return;
  }}
  if (tmps_f64_le({_lit(1.75)}, x) && tmps_f64_le(x, {_lit(2.25)})) {{  // log1p(d) + lgamma(1 + d)
    ulong d = tmps_f64_sub(x, 0x4000000000000000ul), uh, ul, gh, gl;
    tmps_sp_lgamma_near(d, h, l);
    tmps_dd_two_sum({ONE}, d, uh, ul);
    tmps_sp_log_dd(uh, ul, gh, gl);
    tmps_dd_add(h, l, gh, gl, h, l);
    return;
  }}
  // z = x + n >= 16, P = x (x+1) ... (x+n-1): lgamma(x) = lgamma(z) - log P
  ulong zh = x, zl = 0ul, ph = {ONE}, pl = 0ul;
  bool shifted = false;
  while (tmps_f64_lt(zh, {_lit(16.0)})) {{
    tmps_dd_mul(ph, pl, zh, zl, ph, pl);
    tmps_dd_add(zh, zl, {ONE}, 0ul, zh, zl);
    shifted = true;
  }}
  // Stirling: (z - 1/2) log z - z + log(2 pi)/2 + sum B_2k / (2k (2k-1) z^(2k-1))
  ulong lh, ll, ah, al;
  tmps_sp_log_dd(zh, zl, lh, ll);
  tmps_dd_add(zh, zl, 0xbfe0000000000000ul, 0ul, ah, al);
  tmps_dd_mul(ah, al, lh, ll, h, l);
  tmps_dd_add(h, l, zh ^ {NEG}, zl ^ {NEG}, h, l);
  tmps_dd_add(h, l, {HL2PI_H}, {HL2PI_L}, h, l);
  ulong wh, wl, w2h, w2l;  // the series in double-double: its ~1/(12 z) would cost 2^-60 absolute
  tmps_dd_div({ONE}, 0ul, zh, zl, wh, wl);
  tmps_dd_mul(wh, wl, wh, wl, w2h, w2l);
{_stir_series}
  tmps_dd_mul(Sh, Sl, wh, wl, Sh, Sl);
  tmps_dd_add(h, l, Sh, Sl, h, l);
  if (shifted) {{
    tmps_sp_log_dd(ph, pl, lh, ll);
    tmps_dd_add(h, l, lh ^ {NEG}, ll ^ {NEG}, h, l);
  }}
}}
static inline bool tmps_sp_lgamma_dd(ulong x, thread ulong& h, thread ulong& l, thread bool& neg) {{
  // finite x != 0, |x| <= 2^900: lgamma(x) = h + l and the sign of gamma(x) (neg);
  // false at the poles (x a negative integer)
  neg = false;
  if ((x >> 63) == 0ul) {{ tmps_sp_lgamma_pos(x, h, l); return true; }}
  ulong a = x ^ {NEG};
  if (a >= 0x4330000000000000ul) return false;  // |x| >= 2^52: an integer
  if (a < 0x3c30000000000000ul) {{  // |x| < 2^-60: -log|x| (gamma x is below 2^-60 relative)
    tmps_f64_log_dd(a, h, l);
    h ^= {NEG}; l ^= {NEG};
    neg = true;
    return true;
  }}
  // reflection: gamma(x) gamma(-x) = -pi / (x sin(pi x)): lgamma(x) = log pi - log|x sin(pi x)| - lgamma(-x)
  ulong fl = tmps_f64_round_int(a, 1);
  ulong f = tmps_f64_sub(a, fl);  // exact, in [0, 1)
  if (f == 0ul) return false;
  neg = (tmps_f64_to_i(fl, 64) & 1l) == 0l;
  ulong g = tmps_f64_le(f, 0x3fe0000000000000ul) ? f : tmps_f64_sub({ONE}, f);  // sin(pi f) = sin(pi g), exact
  ulong th, tl, zh, zl;  // sin(t), t = pi g <= pi/2, by its Taylor series in double-double (~2^-100)
  tmps_dd_mul(g, 0ul, {PI_H}, {PI_L}, th, tl);
  tmps_dd_mul(th, tl, th, tl, zh, zl);
{_sin_series}
  tmps_dd_mul(Sh, Sl, th, tl, Sh, Sl);
  ulong sh, sl;
  tmps_dd_mul(Sh, Sl, a, 0ul, sh, sl);
  ulong qh, ql, gh, gl;
  tmps_sp_log_dd(sh, sl, qh, ql);
  tmps_sp_lgamma_pos(a, gh, gl);
  tmps_dd_add({LOGPI_H}, {LOGPI_L}, qh ^ {NEG}, ql ^ {NEG}, h, l);
  tmps_dd_add(h, l, gh ^ {NEG}, gl ^ {NEG}, h, l);
  return true;
}}
static inline ulong tmps_f64_lgamma(ulong x) {{
  if (tmps_f64_isnan(x)) return x | 0x0008000000000000ul;
  ulong a = x & 0x7ffffffffffffffful;
  if (a == 0ul || a == {INF}) return {INF};
  if (a > {_lit(2.0 ** 900)}) {{  // x (log x - 1) (the rest is below 2^-880 relative); poles for x < 0
    if ((x >> 63) != 0ul) return {INF};
    ulong lh, ll;
    tmps_f64_log_dd(x, lh, ll);
    tmps_dd_add(lh, ll, 0xbff0000000000000ul, 0ul, lh, ll);
    return tmps_f64_fma(x, lh, tmps_f64_mul(x, ll));
  }}
  ulong h, l;
  bool neg;
  if (!tmps_sp_lgamma_dd(x, h, l, neg)) return {INF};
  return tmps_f64_add(h, l);
}}
static inline ulong tmps_f64_tgamma(ulong x) {{
  if (tmps_f64_isnan(x)) return x | 0x0008000000000000ul;
  ulong a = x & 0x7ffffffffffffffful, sign = x & {NEG};
  if (a == 0ul) return sign | {INF};
  if (x == {INF}) return x;
  if (tmps_f64_lt({_lit(171.7)}, x)) return {INF};
  if (sign != 0ul && tmps_f64_lt({_lit(190.0)}, a)) {{  // |gamma| < 2^-1100 (or a pole: NaN)
    if (a >= 0x4330000000000000ul || tmps_f64_round_int(a, 1) == a) return {NAN};
    return (tmps_f64_to_i(tmps_f64_round_int(a, 1), 64) & 1l) == 0l ? {NEG} : 0ul;
  }}
  ulong h, l;
  bool neg;
  if (!tmps_sp_lgamma_dd(x, h, l, neg)) return {NAN};
  int k = tmps_f64_exp_k(h, l, h, l);
  ulong r = tmps_f64_ldexp(tmps_f64_add(h, l), k);
  return neg ? r ^ {NEG} : r;
}}
""")

# ---- jn, yn ---------------------------------------------------------------------------------
MILLER_X = 30.0  # Miller's recurrence (and Y0, Y1 from its J's) for x <= max(n, MILLER_X)
_RECIP = [_frac_to_dd(Fraction(1, k)) for k in range(1, 49)]  # 1/k, k <= (m = 30 + 60 + 3) / 2
_recip_tab = ", ".join(f"{_lit(h)}, {_lit(lo)}" for h, lo in _RECIP)
TWO_OVER_PI_H, TWO_OVER_PI_L = _dd(2 / _PI)
GAMMA_H, GAMMA_L = _dd(_GAMMA_Q)
HANKEL_TERMS = 20  # each of P and Q at x > 30: the last term is < 1e-23 relative
_hankel = "\n".join(fp64_math_ext._series("z", [Fraction((-1) ** k) * fp64_bessel._a(nu, 2 * k + odd)
                                                 for k in range(HANKEL_TERMS)], 4, f"{pq}{nu}")
                     for nu in (0, 1) for pq, odd in (("P", 0), ("Q", 1)))
_sin_r = fp64_math_ext._series("r2", [Fraction((-1) ** n, factorial(2 * n + 1)) for n in range(14)], 6, "S")
_cos_r = fp64_math_ext._series("r2", [Fraction((-1) ** n, factorial(2 * n)) for n in range(14)], 6, "C")
_lib("tmps_f64_sp_jn", ("tmps_f64_bessel", "tmps_f64_minmax", "tmps_f64_sp_gamma", "tmps_f64_dd2"), f"""
static inline void tmps_sp_hankel(ulong x, thread ulong* out) {{
  // x > 30: J0, J1, Y0, Y1 (out[0..7], double-doubles) by Hankel's expansion in double-double:
  // with s = sin x, c = cos x (exact reduction, double-double Taylor kernels), A = 1/sqrt(pi x):
  // J0 = A (P0 (s+c) - Q0 (s-c)), Y0 = A (P0 (s-c) + Q0 (s+c)), J1 = A (P1 (s-c) + Q1 (s+c)),
  // Y1 = A (Q1 (s-c) - P1 (s+c))
  ulong wh, wl, zh, zl;
  tmps_dd_div({ONE}, 0ul, x, 0ul, wh, wl);
  tmps_dd_mul(wh, wl, wh, wl, zh, zl);
{_hankel}
  tmps_dd_mul(Q0h, Q0l, wh, wl, Q0h, Q0l);
  tmps_dd_mul(Q1h, Q1l, wh, wl, Q1h, Q1l);
  ulong rh, rl, r2h, r2l;
  int n = tmps_f64_rem_pio2(x, rh, rl);
  tmps_dd_mul(rh, rl, rh, rl, r2h, r2l);
{_sin_r}
{_cos_r}
  tmps_dd_mul(Sh, Sl, rh, rl, Sh, Sl);
  ulong sh = (n & 1) != 0 ? Ch : Sh, sl = (n & 1) != 0 ? Cl : Sl;
  ulong ch = (n & 1) != 0 ? Sh : Ch, cl = (n & 1) != 0 ? Sl : Cl;
  if (n == 2 || n == 3) {{ sh ^= {NEG}; sl ^= {NEG}; }}
  if (n == 1 || n == 2) {{ ch ^= {NEG}; cl ^= {NEG}; }}
  ulong ph, pl, mh, ml, ah, al;  // s + c, s - c, A
  tmps_dd_add(sh, sl, ch, cl, ph, pl);
  tmps_dd_add(sh, sl, ch ^ {NEG}, cl ^ {NEG}, mh, ml);
  tmps_dd_sqrt(x, 0ul, ah, al);
  tmps_dd_div({ISP_H}, {ISP_L}, ah, al, ah, al);
  ulong th, tl, uh, ul;
  tmps_dd_mul(P0h, P0l, ph, pl, th, tl); tmps_dd_mul(Q0h, Q0l, mh, ml, uh, ul);
  tmps_dd_add(th, tl, uh ^ {NEG}, ul ^ {NEG}, th, tl); tmps_dd_mul(th, tl, ah, al, out[0], out[1]);
  tmps_dd_mul(P1h, P1l, mh, ml, th, tl); tmps_dd_mul(Q1h, Q1l, ph, pl, uh, ul);
  tmps_dd_add(th, tl, uh, ul, th, tl); tmps_dd_mul(th, tl, ah, al, out[2], out[3]);
  tmps_dd_mul(P0h, P0l, mh, ml, th, tl); tmps_dd_mul(Q0h, Q0l, ph, pl, uh, ul);
  tmps_dd_add(th, tl, uh, ul, th, tl); tmps_dd_mul(th, tl, ah, al, out[4], out[5]);
  tmps_dd_mul(Q1h, Q1l, mh, ml, th, tl); tmps_dd_mul(P1h, P1l, ph, pl, uh, ul);
  tmps_dd_add(th, tl, uh ^ {NEG}, ul ^ {NEG}, th, tl); tmps_dd_mul(th, tl, ah, al, out[6], out[7]);
}}
constant ulong tmps_sp_recip[{2 * len(_RECIP)}] = {{{_recip_tab}}};
static inline void tmps_sp_coef(ulong th, ulong tl, long k, thread ulong& ch, thread ulong& cl) {{
  // 2k/x = k (th + tl) as a double-double
  ulong kd = tmps_f64_from_i64(k);
  ch = tmps_f64_mul(kd, th);
  cl = tmps_f64_fma(kd, tl, tmps_f64_fma(kd, th, ch ^ {NEG}));
}}
static inline void tmps_sp_two_over(ulong ax, thread ulong& h, thread ulong& l) {{
  // 2/ax as a double-double
  h = tmps_f64_div(0x4000000000000000ul, ax);
  l = tmps_f64_div(tmps_f64_fma(h ^ {NEG}, ax, 0x4000000000000000ul), ax);
}}
static inline void tmps_sp_miller(ulong ax, long nn, bool neumann, thread ulong& ah, thread ulong& al,
                                  thread ulong& sh, thread ulong& sl, thread ulong& b0h, thread ulong& b0l,
                                  thread ulong& b1h, thread ulong& b1l, thread ulong& wh, thread ulong& wl) {{
  // Miller: b_(k-1) = (2k/x) b_k - b_(k+1) from b_m = 1, b_(m+1) = 0, in double-double; then
  // J_k(x) = b_k / S with S = b_0 + 2 (b_2 + b_4 + ...). a = b_nn, b0, b1, S and (neumann, for
  // Y0) w = sum_k>=1 (-1)^(k+1) b_2k / k. 2^-29 <= ax <= max(nn, 30).
  ulong th, tl;
  tmps_sp_two_over(ax, th, tl);
  // start m: J_m / J_t < 1e-17 for t = max(n, x) needs m - t > ~15 (t/2)^(1/3) (the Airy zone)
  long xi = tmps_f64_to_i(ax, 64);
  long t = nn > xi ? nn : xi;
  long m = t + 60l + t / 8l;
  m += m & 1l;  // even
  ulong bh = {ONE}, bl = 0ul, ph = 0ul, pl = 0ul;
  sh = 0ul; sl = 0ul; ah = 0ul; al = 0ul; wh = 0ul; wl = 0ul; b1h = 0ul; b1l = 0ul;
  for (long k = m; k > 0l; --k) {{  // (bh, bl) = b_k, (ph, pl) = b_k+1
    if ((k & 1l) == 0l) {{
      tmps_dd_add(sh, sl, bh, bl, sh, sl);
      if (neumann) {{
        long j = k / 2l;
        ulong qh, ql;
        tmps_dd_mul(bh, bl, tmps_sp_recip[2 * (j - 1)], tmps_sp_recip[2 * (j - 1) + 1], qh, ql);
        if ((j & 1l) == 0l) {{ qh ^= {NEG}; ql ^= {NEG}; }}
        tmps_dd_add(wh, wl, qh, ql, wh, wl);
      }}
    }}
    if (k == nn) {{ ah = bh; al = bl; }}
    if (k == 1l) {{ b1h = bh; b1l = bl; }}
    ulong ch, cl, nh, nl;
    tmps_sp_coef(th, tl, k, ch, cl);
    tmps_dd_mul(ch, cl, bh, bl, nh, nl);
    tmps_dd_add(nh, nl, ph ^ {NEG}, pl ^ {NEG}, nh, nl);
    ph = bh; pl = bl; bh = nh; bl = nl;
    if ((bh & 0x7ffffffffffffffful) > 0x6570000000000000ul) {{  // |b| > 2^600: rescale everything
      bh = tmps_f64_ldexp(bh, -600); bl = tmps_f64_ldexp(bl, -600);
      ph = tmps_f64_ldexp(ph, -600); pl = tmps_f64_ldexp(pl, -600);
      sh = tmps_f64_ldexp(sh, -600); sl = tmps_f64_ldexp(sl, -600);
      ah = tmps_f64_ldexp(ah, -600); al = tmps_f64_ldexp(al, -600);
      wh = tmps_f64_ldexp(wh, -600); wl = tmps_f64_ldexp(wl, -600);
      b1h = tmps_f64_ldexp(b1h, -600); b1l = tmps_f64_ldexp(b1l, -600);
    }}
  }}
  b0h = bh; b0l = bl;
  if (nn == 0l) {{ ah = bh; al = bl; }}
  tmps_dd_add(tmps_f64_ldexp(sh, 1), tmps_f64_ldexp(sl, 1), bh, bl, sh, sl);
}}
static inline ulong tmps_sp_forward(ulong ax, long nn, ulong bmh, ulong bml, ulong bh, ulong bl) {{
  // b_(k+1) = (2k/x) b_k - b_(k-1) from (b_0, b_1) to b_nn, nn >= 2, in double-double, scaled by
  // 2^e against overflow (J below x, Y everywhere: the growing solutions)
  ulong th, tl;
  tmps_sp_two_over(ax, th, tl);
  int e = 0;
  for (long k = 1l; k < nn; ++k) {{
    ulong ch, cl, nh, nl;
    tmps_sp_coef(th, tl, k, ch, cl);
    tmps_dd_mul(ch, cl, bh, bl, nh, nl);
    tmps_dd_add(nh, nl, bmh ^ {NEG}, bml ^ {NEG}, nh, nl);
    bmh = bh; bml = bl; bh = nh; bl = nl;
    if ((bh & 0x7ffffffffffffffful) > 0x6570000000000000ul) {{
      bh = tmps_f64_ldexp(bh, -600); bl = tmps_f64_ldexp(bl, -600);
      bmh = tmps_f64_ldexp(bmh, -600); bml = tmps_f64_ldexp(bml, -600);
      e += 600;
      if (e > 1200) return (bh & {NEG}) | {INF};
    }}
  }}
  return tmps_f64_ldexp(tmps_f64_add(bh, bl), e);
}}
static inline ulong tmps_f64_jn(int n, ulong x) {{
  if (tmps_f64_isnan(x)) return x | 0x0008000000000000ul;
  long nn = (long)n;
  bool flip = false;
  if (nn < 0) {{ nn = -nn; flip = (nn & 1l) != 0l; }}  // J_-n = (-1)^n J_n
  ulong ax = x & 0x7ffffffffffffffful;
  if ((x >> 63) != 0ul && (nn & 1l) != 0l) flip = !flip;  // J_n(-x) = (-1)^n J_n(x)
  ulong r;
  if (ax == {INF}) r = 0ul;
  else if (ax < 0x3e20000000000000ul) {{  // |x| < 2^-29: (x/2)^n / n! (the next term is < 2^-60 relative)
    if (nn == 0l) r = {ONE};
    else if (ax == 0ul) r = 0ul;
    else {{
      ulong lh, ll, gh, gl;
      tmps_f64_log_dd(ax, lh, ll);
      tmps_dd_add(lh, ll, {LN2_H} ^ {NEG}, {LN2_L} ^ {NEG}, lh, ll);
      tmps_dd_mul(lh, ll, tmps_f64_from_i64(nn), 0ul, lh, ll);
      if (tmps_f64_lt(lh, {_lit(-1100.0)})) r = 0ul;
      else {{
        tmps_sp_lgamma_pos(tmps_f64_from_i64(nn + 1l), gh, gl);
        tmps_dd_add(lh, ll, gh ^ {NEG}, gl ^ {NEG}, lh, ll);
        int k = tmps_f64_exp_k(lh, ll, lh, ll);
        r = tmps_f64_ldexp(tmps_f64_add(lh, ll), k);
      }}
    }}
  }} else if (tmps_f64_le(ax, tmps_f64_maxnum(tmps_f64_from_i64(nn), {_lit(MILLER_X)}))) {{
    // 0 <= J_n(x) <= (x/2)^n / n!: 0 when that is below 2^-1100 (saves Miller's O(n) steps for n >> x)
    if (nn > 200l) {{
      ulong lh = tmps_f64_mul(tmps_f64_from_i64(nn), tmps_f64_log(tmps_f64_mul(ax, 0x3fe0000000000000ul)));
      ulong gh, gl;
      tmps_sp_lgamma_pos(tmps_f64_from_i64(nn + 1l), gh, gl);
      if (tmps_f64_lt(tmps_f64_sub(lh, gh), {_lit(-765.0)})) return flip ? {NEG} : 0ul;
    }}
    ulong ah, al, sh, sl, b0h, b0l, b1h, b1l, wh, wl;
    tmps_sp_miller(ax, nn, false, ah, al, sh, sl, b0h, b0l, b1h, b1l, wh, wl);
    tmps_dd_div(ah, al, sh, sl, ah, al);
    r = tmps_f64_add(ah, al);
  }} else {{  // x > max(n, 30): forward from J0, J1 (Hankel's expansion)
    ulong s[8];
    tmps_sp_hankel(ax, s);
    r = nn <= 1l ? tmps_f64_add(s[2 * nn], s[2 * nn + 1]) : tmps_sp_forward(ax, nn, s[0], s[1], s[2], s[3]);
  }}
  return flip ? r ^ {NEG} : r;
}}
static inline ulong tmps_f64_yn(int n, ulong x) {{
  if (tmps_f64_isnan(x)) return x | 0x0008000000000000ul;
  long nn = (long)n;
  bool flip = false;
  if (nn < 0) {{ nn = -nn; flip = (nn & 1l) != 0l; }}  // Y_-n = (-1)^n Y_n
  ulong r;
  if ((x & 0x7ffffffffffffffful) == 0ul) r = 0xfff0000000000000ul;
  else if ((x >> 63) != 0ul) return {NAN};
  else if (x == {INF}) r = 0ul;
  else if (nn >= 1l && x < 0x0030000000000000ul) r = 0xfff0000000000000ul;  // x < 2^-1020: -2/(pi x) overflows
  else if (nn >= 2l && x < 0x3e20000000000000ul) {{
    // x < 2^-29: -(n-1)!/pi (2/x)^n (the next term is < 2^-60 relative), in the log domain
    ulong lh, ll, gh, gl;
    tmps_f64_log_dd(x, lh, ll);
    tmps_dd_add({LN2_H}, {LN2_L}, lh ^ {NEG}, ll ^ {NEG}, lh, ll);
    tmps_dd_mul(lh, ll, tmps_f64_from_i64(nn), 0ul, lh, ll);
    if (tmps_f64_lt({_lit(800.0)}, lh)) r = 0xfff0000000000000ul;
    else {{
      tmps_sp_lgamma_pos(tmps_f64_from_i64(nn), gh, gl);
      tmps_dd_add(lh, ll, gh, gl, lh, ll);
      tmps_dd_add(lh, ll, {LOGPI_H} ^ {NEG}, {LOGPI_L} ^ {NEG}, lh, ll);
      if (tmps_f64_lt({_lit(710.0)}, lh)) r = 0xfff0000000000000ul;
      else {{
        int k = tmps_f64_exp_k(lh, ll, lh, ll);
        r = tmps_f64_ldexp(tmps_f64_add(lh, ll), k) ^ {NEG};
      }}
    }}
  }} else {{
    ulong y0h, y0l, y1h, y1l;
    if (tmps_f64_lt({_lit(MILLER_X)}, x)) {{  // Hankel's expansion
      ulong s[8];
      tmps_sp_hankel(x, s);
      y0h = s[4]; y0l = s[5]; y1h = s[6]; y1l = s[7];
    }} else {{
      // Y0 = 2/pi [(log(x/2) + gamma) J0 + 2 sum_k>=1 (-1)^(k+1) J_2k / k] (Neumann), Y1 from the
      // Wronskian J1 Y0 - J0 Y1 = 2/(pi x), all in double-double (J from Miller, exact for small x: J0 = 1)
      ulong j0h = {ONE}, j0l = 0ul, j1h = tmps_f64_mul(x, 0x3fe0000000000000ul), j1l = 0ul, wh = 0ul, wl = 0ul;
      if (x >= 0x3e20000000000000ul) {{
        ulong ah, al, sh, sl, b0h, b0l, b1h, b1l;
        tmps_sp_miller(x, 1l, true, ah, al, sh, sl, b0h, b0l, b1h, b1l, wh, wl);
        tmps_dd_div(b0h, b0l, sh, sl, j0h, j0l);
        tmps_dd_div(b1h, b1l, sh, sl, j1h, j1l);
        tmps_dd_div(wh, wl, sh, sl, wh, wl);
      }}
      ulong lh, ll;
      tmps_f64_log_dd(x, lh, ll);
      tmps_dd_add(lh, ll, {LN2_H} ^ {NEG}, {LN2_L} ^ {NEG}, lh, ll);
      tmps_dd_add(lh, ll, {GAMMA_H}, {GAMMA_L}, lh, ll);
      tmps_dd_mul(lh, ll, j0h, j0l, y0h, y0l);
      tmps_dd_add(y0h, y0l, tmps_f64_ldexp(wh, 1), tmps_f64_ldexp(wl, 1), y0h, y0l);
      tmps_dd_mul(y0h, y0l, {TWO_OVER_PI_H}, {TWO_OVER_PI_L}, y0h, y0l);
      ulong qh, ql;
      tmps_dd_div({TWO_OVER_PI_H}, {TWO_OVER_PI_L}, x, 0ul, qh, ql);
      tmps_dd_mul(j1h, j1l, y0h, y0l, y1h, y1l);
      tmps_dd_add(y1h, y1l, qh ^ {NEG}, ql ^ {NEG}, y1h, y1l);
      tmps_dd_div(y1h, y1l, j0h, j0l, y1h, y1l);
    }}
    if (nn == 0l) r = tmps_f64_add(y0h, y0l);
    else if (nn == 1l) r = tmps_f64_add(y1h, y1l);
    else r = tmps_sp_forward(x, nn, y0h, y0l, y1h, y1l);
  }}
  return flip ? r ^ {NEG} : r;
}}
""")

# ---- rcp64h -----------------------------------------------------------------------------------
# CUDA's rcp.approx.ftz.f64: the reciprocal of the upper 32 bits of x (1 sign, 11 exponent, 20
# fraction bits) with the low 32 bits of the result zero, subnormal inputs and results flushed to
# zero. Here: 1/hi(x) correctly rounded, then rounded to nearest even at 20 fraction bits
# (deterministic, within 2^-21 relative of 1/hi(x); CUDA documents only an approximation).
_lib("tmps_f64_sp_rcp64h", ("tmps_f64_div",), """static inline ulong tmps_f64_rcp64h(ulong x) {
  if (tmps_f64_isnan(x)) return x | 0x0008000000000000ul;
  ulong sign = x & 0x8000000000000000ul;
  ulong h = x & 0xffffffff00000000ul;
  if ((h & 0x7ff0000000000000ul) == 0ul) return sign | 0x7ff0000000000000ul;  // +-0, subnormal: flushed
  ulong r = tmps_f64_div(0x3ff0000000000000ul, h) & 0x7ffffffffffffffful;
  if (r < 0x0010000000000000ul) return sign;  // subnormal (or 0, from inf): flushed
  r = (r + 0x7ffffffful + ((r >> 32) & 1ul)) & 0xffffffff00000000ul;  // to nearest even; may carry to inf
  return sign | r;
}
""")

# libdevice symbol (language/libdevice.py) -> (binary64 expression over `{0}` (ulong bits), library entry)
CALLS: dict[str, tuple[str, str]] = {
    "tmps_erfinv": ("tmps_f64_erfinv({0})", "tmps_f64_sp_erf"),
    "tmps_erfcinv": ("tmps_f64_erfcinv({0})", "tmps_f64_sp_erf"),
    "tmps_erfcx": ("tmps_f64_erfcx({0})", "tmps_f64_sp_erf"),
    "tmps_normcdf": ("tmps_f64_normcdf({0})", "tmps_f64_sp_erf"),
    "tmps_normcdfinv": ("tmps_f64_normcdfinv({0})", "tmps_f64_sp_erf"),
    "tmps_lgamma": ("tmps_f64_lgamma({0})", "tmps_f64_sp_gamma"),
    "tmps_tgamma": ("tmps_f64_tgamma({0})", "tmps_f64_sp_gamma"),
    # {1}: the int32 order
    "tmps_jn": ("tmps_f64_jn({1}, {0})", "tmps_f64_sp_jn"),
    "tmps_yn": ("tmps_f64_yn({1}, {0})", "tmps_f64_sp_jn"),
    "tmps_rcp64h": ("tmps_f64_rcp64h({0})", "tmps_f64_sp_rcp64h"),
}
