"""The error and gamma function families on software binary64: erf, erfc (within 1 ulp), and
libdevice's erfinv, erfcinv, erfcx, normcdf, normcdfinv, lgamma, tgamma for every float type
(ops/libdevice.py widens fp32/fp16/bf16 exactly and rounds the binary64 result once).

- erf: |x| < 6: x * 2/sqrt(pi) * sum (-x^2)^n / (n! (2n+1)) by Horner in double-double with
  exact coefficients (enough terms for |x|; cancellation for large |x| costs < 50 of ~106 bits);
  |x| >= 6: +-1;
- erfc: x < 4: 1 - erf (erf as a double-double); x >= 4: exp(-x^2) times the continued fraction
  1/(x + (1/2)/(x + 1/(x + (3/2)/...))) / sqrt(pi) (inner terms in double, the outer three and
  the product in double-double; its text: `erfcx_cf`, shared with erfcx), scaled once at the end;
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

Measured (tools/libdevice_special_accuracy.py, mpmath at 160 bits; fp64: 3000 fresh inputs per
family over the whole domain with the special values, two seeds; fp32 3000, fp16/bf16 1500):
fp64 erfinv 0.54 ulp (subnormal results; 0.50 elsewhere), erfcinv, erfcx, normcdf, normcdfinv,
tgamma, yn 0.50 ulp; jn (bessel.py) 0.50 ulp (0.94 at a double next to the first zero of J0, where the value
is ~1e-17); lgamma 0.50 ulp except at its zeros on the negative axis, where the absolute error is
~2e-28 (the double-double sum of terms ~1): over 1 ulp only for |lgamma| < ~1e-12, i.e. x within
~1e-12 of a zero (7679 ulp at the double nearest the zero -2.7476826467274127, value 1.7e-16).
fp32, fp16, bf16: <= 0.500 ulp (correctly rounded on every input measured).
"""


from __future__ import annotations

from fractions import Fraction
from math import factorial

from .consts import (
    GAMMA_Q,
    INF,
    ISP_H,
    ISP_L,
    LN2_HI,
    LN2_LO,
    LN2_LO2,
    LOGPI_H,
    LOGPI_L,
    NAN,
    NEG,
    ONE,
    PI,
    PI_DEC,
    PI_H,
    PI_L,
    TSP,
    TSP_HI,
    TSP_LO,
    bits_of,
    dd,
    dec_frac,
    frac_to_dd,
    inv_fact,
    lit,
    series,
    sqrt_fraction,
)
from .registry import entry

# ---- erf ---------------------------------------------------------------------------------------
_ERF_TERMS = 150
_erf_c = [frac_to_dd(Fraction((-1) ** n) * inv_fact(n) / (2 * n + 1)) for n in range(_ERF_TERMS)]
_erf_table = ",\n  ".join(f"0x{bits_of(h):016x}ul, 0x{bits_of(lo):016x}ul" for h, lo in _erf_c)
entry("tmps_f64_erf", ("tmps_f64_dd",), f"""constant ulong tmps_f64_erf_c[{2 * _ERF_TERMS}] = {{
  {_erf_table}}};
static inline void tmps_f64_erf_dd(ulong ax, thread ulong& sh, thread ulong& sl) {{
  // erf(ax) as a double-double, 2^-55 <= ax < 6:
  // 2/sqrt(pi) ax sum_n (-ax^2)^n / (n! (2n+1)), Horner in double-double
  int terms = tmps_f64_lt(ax, 0x3ff0000000000000ul) ? 30 : (tmps_f64_lt(ax, {lit(3.0)}) ? 75 : {_ERF_TERMS});
  // z = x^2 as a double-double
  ulong zh = tmps_f64_mul(ax, ax), zl = tmps_f64_fma(ax, ax, zh ^ 0x8000000000000000ul);
  sh = tmps_f64_erf_c[2 * (terms - 1)];
  sl = tmps_f64_erf_c[2 * (terms - 1) + 1];
  for (int n = terms - 2; n >= 0; --n) {{
    ulong ph, pl;
    tmps_dd_mul(sh, sl, zh, zl, ph, pl);
    tmps_dd_add(ph, pl, tmps_f64_erf_c[2 * n], tmps_f64_erf_c[2 * n + 1], sh, sl);
  }}
  ulong th, tl;
  tmps_dd_mul(sh, sl, ax, 0ul, th, tl);
  tmps_dd_mul(th, tl, {lit(TSP_HI)}, {lit(TSP_LO)}, sh, sl);
}}
static inline ulong tmps_f64_erf(ulong x) {{
  if (tmps_f64_isnan(x)) return x | 0x0008000000000000ul;
  ulong ax = x & 0x7ffffffffffffffful;
  ulong sign = x & 0x8000000000000000ul;
  if (tmps_f64_le({lit(6.0)}, ax)) return sign | 0x3ff0000000000000ul;
  if (ax < 0x3c80000000000000ul)  // |x| < 2^-55: x 2/sqrt(pi), one rounding
    return tmps_f64_fma(x, {lit(TSP_HI)}, tmps_f64_mul(x, {lit(TSP_LO)}));
  ulong sh, sl;
  tmps_f64_erf_dd(ax, sh, sl);
  return sign | tmps_f64_add(sh, sl);
}}
""")


# ---- erfc --------------------------------------------------------------------------------------


def erfcx_cf(a: str) -> str:
    """MSL statements leaving (th, tl) = a + (1/2)/(a + (2/2)/(a + (3/2)/...)), `a` >= 4 (finite):
    the continued fraction of erfcx(a) = 1/sqrt(pi) / (th + tl); inner terms in double, the outer
    three in double-double (erfc and erfcx both use it)."""
    return f"""  int terms = tmps_f64_lt({a}, {lit(6.0)}) ? 40 : 20;
  ulong t = {a};
  for (int n = terms; n > 3; --n)
    t = tmps_f64_add({a}, tmps_f64_div(tmps_f64_mul(tmps_f64_from_i64((long)n), 0x3fe0000000000000ul), t));
  ulong th = t, tl = 0ul;
  for (int n = 3; n > 0; --n) {{
    ulong qh, ql;
    tmps_dd_div(tmps_f64_mul(tmps_f64_from_i64((long)n), 0x3fe0000000000000ul), 0ul, th, tl, qh, ql);
    tmps_dd_add({a}, 0ul, qh, ql, th, tl);
  }}
"""


entry("tmps_f64_erfc", ("tmps_f64_erf", "tmps_f64_expk"), f"""static inline ulong tmps_f64_erfc(ulong x) {{
  if (tmps_f64_isnan(x)) return x | 0x0008000000000000ul;
  ulong a = x & 0x7ffffffffffffffful;
  if (a < 0x3c80000000000000ul) return {ONE};  // |x| < 2^-55
  ulong h, l;
  if ((x >> 63) != 0ul) {{  // 1 + erf|x|
    if (tmps_f64_le({lit(6.0)}, a)) return 0x4000000000000000ul;
    tmps_f64_erf_dd(a, h, l);
    tmps_dd_add({ONE}, 0ul, h, l, h, l);
    return tmps_f64_add(h, l);
  }}
  if (tmps_f64_lt(a, {lit(4.0)})) {{  // 1 - erf(x): erf's ~100 bits leave > 60 after the cancellation
    tmps_f64_erf_dd(a, h, l);
    tmps_dd_add({ONE}, 0ul, h ^ {NEG}, l ^ {NEG}, h, l);
    return tmps_f64_add(h, l);
  }}
  if (tmps_f64_lt({lit(27.3)}, a)) return 0ul;  // erfc < 2^-1076
  // continued fraction: erfc(x) = exp(-x^2) / sqrt(pi) / (x + (1/2)/(x + (2/2)/(x + (3/2)/...)))
{erfcx_cf('a')}  ulong fh, fl;
  tmps_dd_div({ISP_H}, {ISP_L}, th, tl, fh, fl);
  ulong zh = tmps_f64_mul(a, a), zl = tmps_f64_fma(a, a, zh ^ {NEG});
  int k = tmps_f64_exp_k(zh ^ {NEG}, zl ^ {NEG}, h, l);
  tmps_dd_mul(h, l, fh, fl, h, l);
  return tmps_f64_ldexp(tmps_f64_add(h, l), k);
}}
""")


_SQRT2 = sqrt_fraction(Fraction(2))
_SQRTPI = sqrt_fraction(PI)
SQ2_H, SQ2_L = dd(_SQRT2)
ISQ2_H, ISQ2_L = dd(1 / _SQRT2)
SPI2_H, SPI2_L = dd(_SQRTPI / 2)  # sqrt(pi)/2


def _erfinv_series(n: int) -> list[float]:
    """erfinv(y) = sum_k a_k w^(2k+1), w = y sqrt(pi)/2: a_k = c_k / (2k+1)."""
    c = [Fraction(1)]
    for k in range(1, n):
        c.append(sum((c[m] * c[k - 1 - m] / ((m + 1) * (2 * m + 1)) for m in range(k)), Fraction(0)))
    return [float(c[k] / (2 * k + 1)) for k in range(n)]


ERFINV_TERMS = 20
_ERFINV = _erfinv_series(ERFINV_TERMS)
_erfinv_tab = ", ".join(lit(v) for v in _ERFINV)

entry("tmps_f64_sp_erf", ("tmps_f64_erfc", "tmps_f64_expk", "tmps_f64_log", "tmps_f64_minmax", "tmps_f64_sqrt"), f"""
constant ulong tmps_sp_erfinv_c[{ERFINV_TERMS}] = {{{_erfinv_tab}}};
static inline void tmps_sp_erfcx_cf(ulong a, thread ulong& h, thread ulong& l) {{
  // a >= 4: erfcx(a) = 1/sqrt(pi) / (a + (1/2)/(a + (2/2)/(a + (3/2)/...))) as a double-double
{erfcx_cf('a')}  tmps_dd_div({ISP_H}, {ISP_L}, th, tl, h, l);
}}
static inline int tmps_sp_erfc_k(ulong zh, ulong zl, thread ulong& h, thread ulong& l) {{
  // erfc(zh + zl) = 2^k (h + l) for a double-double 0 <= zh (finite); 0 beyond 27.3
  if (zh < 0x3c80000000000000ul) {{  // zh < 2^-55: 1 - 2z/sqrt(pi)
    tmps_dd_fast({ONE}, tmps_f64_mul(tmps_f64_add(zh, zl), {TSP}) ^ {NEG}, h, l);
    return 0;
  }}
  if (tmps_f64_lt(zh, {lit(4.0)})) {{
    tmps_f64_erf_dd(zh, h, l);
    tmps_dd_add({ONE}, 0ul, h ^ {NEG}, l ^ {NEG}, h, l);
    // - zl erf'(zh) = - zl 2/sqrt(pi) exp(-zh^2)
    ulong c = tmps_f64_mul(tmps_f64_mul(zl, {TSP}), tmps_f64_exp(tmps_f64_mul(zh, zh) ^ {NEG}));
    tmps_dd_add(h, l, c ^ {NEG}, 0ul, h, l);
    return 0;
  }}
  if (tmps_f64_lt({lit(27.3)}, zh)) {{ h = 0ul; l = 0ul; return 0; }}  // erfc < 2^-1076
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
  if (tmps_f64_le({lit(4.0)}, a)) {{ tmps_sp_erfcx_cf(a, h, l); return 0; }}
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
  if ((x >> 63) != 0ul && tmps_f64_lt({lit(26.7)}, a)) return {INF};  // 2 exp(x^2) overflows
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
  ulong x2 = tmps_f64_fma(tmps_f64_log(tmps_f64_mul(t, {lit(float(PI))})), 0xbfe0000000000000ul, t);
  ulong x = tmps_f64_sqrt(tmps_f64_maxnum(x2, {lit(0.05)}));
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
  if (tmps_f64_le(q, {lit(1.5)})) {{  // erfinv(1 - q), 1 - q exact
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


HL2PI_H, HL2PI_L = dd(dec_frac((2 * PI_DEC).ln() / 2))  # log(2 pi)/2
LGAMMA_TERMS = 30  # lgamma(1 + d) = d sum_k t_k d^(k-1), |d| <= 1/4: 0.25^30/31 < 2^-64 of the first
_LGT = [-GAMMA_Q] + [Fraction((-1) ** k) * _zeta(k) / k for k in range(2, LGAMMA_TERMS + 1)]
STIRLING_TERMS = 18  # z >= 16: the first omitted term is < 1e-32 (absolute accuracy near the zeros)
_stir_series = series("w2", [_B[2 * k] / (2 * k * (2 * k - 1)) for k in range(1, STIRLING_TERMS + 1)],
                                     3, "S")
_lgt_series = series("d", _LGT, 6, "T")
_sin_series = series("z", [Fraction((-1) ** n, factorial(2 * n + 1)) for n in range(20)], 9, "S")
_log_series = series("z", [Fraction(1, 2 * n + 1) for n in range(17)], 12, "S")
entry("tmps_f64_sp_gamma", ("tmps_f64_log_dd", "tmps_f64_expk", "tmps_f64_sincos"), f"""
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
    ulong b = tmps_f64_mul(kd, {lit(LN2_LO)});
    ulong be = tmps_f64_fma(kd, {lit(LN2_LO)}, b ^ {NEG});
    be = tmps_f64_fma(kd, {lit(LN2_LO2)}, be);
    ulong th, tl;
    tmps_dd_two_sum(tmps_f64_mul(kd, {lit(LN2_HI)}), b, th, tl);
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
  if (tmps_f64_le({lit(0.75)}, x) && tmps_f64_le(x, {lit(1.25)})) {{
    tmps_sp_lgamma_near(tmps_f64_sub(x, {ONE}), h, l);
    return;
  }}
  if (tmps_f64_le({lit(1.75)}, x) && tmps_f64_le(x, {lit(2.25)})) {{  // log1p(d) + lgamma(1 + d)
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
  while (tmps_f64_lt(zh, {lit(16.0)})) {{
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
  if (a > {lit(2.0 ** 900)}) {{  // x (log x - 1) (the rest is below 2^-880 relative); poles for x < 0
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
  if (tmps_f64_lt({lit(171.7)}, x)) return {INF};
  if (sign != 0ul && tmps_f64_lt({lit(190.0)}, a)) {{  // |gamma| < 2^-1100 (or a pole: NaN)
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
