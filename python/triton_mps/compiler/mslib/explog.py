"""Exponentials and logarithms on software binary64, each within 1 ulp.

- exp, exp2: x = k ln2 + r (Cody-Waite, ln2 split so that k * ln2_hi is exact), |r| <= ln2/2,
  exp(r) = 1 + r + r^2 q(r) with Taylor q (to r^12/14!), the 1 + r part in double-double, one
  rounding by the final scaling (ldexp rounds once; only subnormal results round twice);
- log, log2: x = 2^k m, m in [sqrt(1/2), sqrt(2)), f = m - 1, s = f / (2 + f),
  log(m) = f - f^2/2 + s (f^2/2 + R(s^2)) (the atanh series, Taylor to s^24) as a
  double-double; k ln2 (split) or k + log(m)/ln2 added in double-double;
- log_dd: x = 2^k m, s = (m - 1) / (m + 1) in double-double, log(m) = 2 s sum s^2n / (2n+1) (the
  first terms in double-double, the tail in double), plus k ln2 (three-part ln2). log10 = log_dd /
  ln10, log1p(x) = log_dd(1 + x rounded) + the rounding error / (1 + x), pow = exp(y log_dd|x|)
  with y log|x| as a double-double (C99 Annex F special cases);
- expm1_r: expm1(r) for |r| <= ln2/2 by a Taylor series (double-double head, double tail);
  exp_k: exp(hi + lo) = 2^k (h + l) after a three-part ln2 reduction; expm1, sinh, cosh, tanh
  are double-double formulas over them (sinh = (T + T/(T+1))/2, cosh = (E + 1/E)/2,
  tanh = T/(T+2), T = expm1(|x|) or expm1(2|x|), E = 1 + T) and live in the exp_k entry;
- exp10(x) = exp(x ln10), x ln10 as a double-double (ln10 in two parts), through exp_k.
Cost: each is a few hundred soft operations; the accuracy sweep: tools/fp64_accuracy.py.
"""

from __future__ import annotations

from fractions import Fraction

from .consts import (
    ABS,
    INF,
    INVLN2_HI,
    INVLN2_LO,
    LN2_HI,
    LN2_LO,
    LN2_LO2,
    LN2_Q,
    LN10_H,
    LN10_L,
    NEG,
    ONE,
    QUIET,
    dd,
    horner,
    inv_fact,
    lit,
    ln10,
    series,
)
from .registry import entry

# ---- exp, exp2 -------------------------------------------------------------------------------
_EXP_Q = [float(inv_fact(n)) for n in range(2, 15)]  # q(r) = sum r^(n-2)/n!
entry("tmps_f64_exp", ("tmps_f64_dd",), f"""static inline ulong tmps_f64_exp_core(ulong hi, ulong lo, int k) {{
  // 2^k * exp(hi + lo), |hi + lo| <= ln2/2 + tiny, |lo| << |hi|
  ulong r = tmps_f64_add(hi, lo);
{horner("r", _EXP_Q, "q")}
  ulong t = tmps_f64_mul(tmps_f64_mul(r, r), q);
  ulong h, l;
  tmps_dd_fast(0x3ff0000000000000ul, hi, h, l);  // 1 + hi
  l = tmps_f64_add(l, tmps_f64_add(lo, t));
  return tmps_f64_ldexp(tmps_f64_add(h, l), k);
}}
static inline ulong tmps_f64_exp(ulong x) {{
  if (tmps_f64_isnan(x)) return x | 0x0008000000000000ul;
  if (tmps_f64_lt({lit(709.8)}, x)) return 0x7ff0000000000000ul;
  if (tmps_f64_lt(x, {lit(-745.2)})) return 0ul;
  ulong kd = tmps_f64_round_int(tmps_f64_mul(x, {lit(INVLN2_HI)}), 4);
  int k = (int)tmps_f64_to_i(kd, 32);
  ulong hi = tmps_f64_fma(kd, {lit(-LN2_HI)}, x);  // exact: k * ln2_hi has <= 43 bits
  ulong lo = tmps_f64_mul(kd, {lit(-LN2_LO)});
  return tmps_f64_exp_core(hi, lo, k);
}}
static inline ulong tmps_f64_exp2(ulong x) {{
  if (tmps_f64_isnan(x)) return x | 0x0008000000000000ul;
  if (tmps_f64_lt({lit(1024.0)}, x) || x == {lit(1024.0)}) return 0x7ff0000000000000ul;
  if (tmps_f64_lt(x, {lit(-1075.0)})) return 0ul;
  ulong kd = tmps_f64_round_int(x, 4);
  int k = (int)tmps_f64_to_i(kd, 32);
  ulong f = tmps_f64_sub(x, kd);  // exact, |f| <= 1/2
  ulong hi = tmps_f64_mul(f, {lit(LN2_HI + LN2_LO)});  // f * ln2 as a double-double
  ulong lo = tmps_f64_fma(f, {lit(LN2_HI + LN2_LO)}, hi ^ 0x8000000000000000ul);
  lo = tmps_f64_fma(f, {lit(float(LN2_Q - Fraction(LN2_HI + LN2_LO)))}, lo);
  return tmps_f64_exp_core(hi, lo, k);
}}
""")

# ---- log, log2 -------------------------------------------------------------------------------
_LOG_R = [float(Fraction(2, 2 * n + 1)) for n in range(1, 13)]  # R(z)/z = sum 2/(2n+1) z^(n-1)
entry("tmps_f64_log", ("tmps_f64_dd", "tmps_f64_div", "tmps_f64_from_u64"), f"""
static inline int tmps_f64_log_core(ulong x, thread ulong& hi, thread ulong& lo) {{
  // finite x > 0: x = 2^k m, log(m) = hi + lo; returns k
  int e;
  ulong m = tmps_f64_norm(x, e);
  ulong mv = (m & 0x000ffffffffffffful) | 0x3ff0000000000000ul;  // in [1, 2)
  if ((m & 0x000ffffffffffffful) > 0x6a09e667f3bcdul) {{ mv -= 0x0010000000000000ul; e += 1; }}  // > sqrt(2): halve
  ulong f = tmps_f64_sub(mv, 0x3ff0000000000000ul);  // exact
  ulong s = tmps_f64_div(f, tmps_f64_add(f, 0x4000000000000000ul));
  ulong z = tmps_f64_mul(s, s);
{horner("z", _LOG_R, "rp")}
  ulong R = tmps_f64_mul(z, rp);
  // f^2/2 as a double-double
  ulong sq = tmps_f64_mul(f, f);
  ulong sqe = tmps_f64_fma(f, f, sq ^ 0x8000000000000000ul);
  ulong hf = tmps_f64_mul(sq, 0x3fe0000000000000ul), hfe = tmps_f64_mul(sqe, 0x3fe0000000000000ul);  // exact
  // log(1 + f) = f - f^2/2 + s (f^2/2 + R)
  hi = tmps_f64_sub(f, hf);
  lo = tmps_f64_sub(tmps_f64_sub(f, hi), hf);  // exact rounding error of hi
  lo = tmps_f64_add(lo, tmps_f64_sub(tmps_f64_mul(s, tmps_f64_add(hf, R)), hfe));
  return e;
}}
static inline ulong tmps_f64_log_special(ulong x, thread bool& done) {{
  done = true;
  if (tmps_f64_isnan(x)) return x | 0x0008000000000000ul;
  if ((x & 0x7ffffffffffffffful) == 0ul) return 0xfff0000000000000ul;
  if ((x >> 63) != 0ul) return 0x7ff8000000000000ul;
  if (x == 0x7ff0000000000000ul) return x;
  done = false;
  return 0ul;
}}
static inline ulong tmps_f64_log(ulong x) {{
  bool done;
  ulong sp = tmps_f64_log_special(x, done);
  if (done) return sp;
  ulong hi, lo;
  int k = tmps_f64_log_core(x, hi, lo);
  ulong kd = tmps_f64_from_i64((long)k);
  ulong s, e;
  tmps_dd_two_sum(tmps_f64_mul(kd, {lit(LN2_HI)}), hi, s, e);  // k ln2_hi is exact
  e = tmps_f64_add(e, tmps_f64_add(lo, tmps_f64_mul(kd, {lit(LN2_LO)})));
  return tmps_f64_add(s, e);
}}
static inline ulong tmps_f64_log2(ulong x) {{
  bool done;
  ulong sp = tmps_f64_log_special(x, done);
  if (done) return sp;
  ulong hi, lo;
  int k = tmps_f64_log_core(x, hi, lo);
  // (hi + lo) / ln2 as a double-double
  ulong p = tmps_f64_mul(hi, {lit(INVLN2_HI)});
  ulong pe = tmps_f64_fma(hi, {lit(INVLN2_HI)}, p ^ 0x8000000000000000ul);
  pe = tmps_f64_add(pe, tmps_f64_add(tmps_f64_mul(lo, {lit(INVLN2_HI)}), tmps_f64_mul(hi, {lit(INVLN2_LO)})));
  ulong s, e;
  tmps_dd_two_sum(tmps_f64_from_i64((long)k), p, s, e);
  return tmps_f64_add(s, tmps_f64_add(e, pe));
}}
""")


# ---- log_dd, log10, log1p ----------------------------------------------------------------------
_LOGS = [Fraction(1, 2 * n + 1) for n in range(17)]
_INVLN10_H, _INVLN10_L = dd(1 / ln10())
entry("tmps_f64_log_dd", ("tmps_f64_dd2", "tmps_f64_log"), f"""
static inline void tmps_f64_log_dd(ulong x, thread ulong& h, thread ulong& l) {{
  // finite x > 0: log(x) = h + l to ~100 bits
  int e;
  ulong m = tmps_f64_norm(x, e);
  ulong mv = (m & 0x000ffffffffffffful) | 0x3ff0000000000000ul;  // in [1, 2)
  if ((m & 0x000ffffffffffffful) > 0x6a09e667f3bcdul) {{ mv -= 0x0010000000000000ul; e += 1; }}  // > sqrt(2)
  ulong f = tmps_f64_sub(mv, {ONE});  // exact
  ulong dh, dl;
  tmps_dd_two_sum(0x4000000000000000ul, f, dh, dl);
  ulong sh, sl;
  tmps_dd_div(f, 0ul, dh, dl, sh, sl);  // s = f / (2 + f), |s| <= 0.1716
  ulong zh, zl;
  tmps_dd_mul(sh, sl, sh, sl, zh, zl);
{series("z", _LOGS, 4, "S")}
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
static inline void tmps_f64_log_dd2(ulong xh, ulong xl, thread ulong& h, thread ulong& l) {{
  // log(xh + xl) for a normalized double-double xh > 0: log(xh) + log1p(xl/xh), |xl/xh| <= 2^-53
  tmps_f64_log_dd(xh, h, l);
  ulong c = tmps_f64_div(xl, xh);
  tmps_dd_add(h, l, c, tmps_f64_mul(tmps_f64_mul(c, c), 0xbfe0000000000000ul), h, l);
}}
static inline ulong tmps_f64_log10(ulong x) {{
  bool done;
  ulong sp = tmps_f64_log_special(x, done);
  if (done) return sp;
  ulong h, l;
  tmps_f64_log_dd(x, h, l);
  tmps_dd_mul(h, l, {_INVLN10_H}, {_INVLN10_L}, h, l);
  return tmps_f64_add(h, l);
}}
static inline ulong tmps_f64_log1p(ulong x) {{
  if (tmps_f64_isnan(x)) return x | 0x0008000000000000ul;
  if (x == 0xbff0000000000000ul) return 0xfff0000000000000ul;  // -1
  if (x > 0xbff0000000000000ul) return 0x7ff8000000000000ul;  // < -1, -inf
  if (x == 0x7ff0000000000000ul) return x;
  if ((x & 0x7ffffffffffffffful) < 0x3c90000000000000ul) return x;  // |x| < 2^-54 (and +-0)
  ulong uh, ul, h, l;
  tmps_dd_two_sum({ONE}, x, uh, ul);
  tmps_f64_log_dd2(uh, ul, h, l);
  return tmps_f64_add(h, l);
}}
""")


# ---- exp_k, expm1, sinh, cosh, tanh --------------------------------------------------------
_EXPM1 = [inv_fact(n + 1) for n in range(20)]  # expm1(r) / r = sum r^n / (n+1)!
entry("tmps_f64_expk", ("tmps_f64_dd2", "tmps_f64_exp"), f"""
static inline int tmps_f64_red_ln2(ulong xh, ulong xl, thread ulong& rh, thread ulong& rl) {{
  // xh + xl = k ln2 + (rh + rl), |rh + rl| <= ln2/2 + tiny; |xh| < 2^11
  ulong kd = tmps_f64_round_int(tmps_f64_mul(xh, {lit(INVLN2_HI)}), 4);
  int k = (int)tmps_f64_to_i(kd, 32);
  if (k == 0) {{ rh = xh; rl = xl; return 0; }}
  ulong hi = tmps_f64_fma(kd, {lit(-LN2_HI)}, xh);  // exact
  ulong lo = tmps_f64_fma(kd, {lit(-LN2_LO)}, xl);
  lo = tmps_f64_fma(kd, {lit(-LN2_LO2)}, lo);
  tmps_dd_two_sum(hi, lo, rh, rl);
  return k;
}}
static inline void tmps_f64_expm1_r(ulong rh, ulong rl, thread ulong& h, thread ulong& l) {{
  // expm1(rh + rl), |rh + rl| <= ln2/2 + tiny, as a double-double
{series("r", _EXPM1, 5, "E")}
  tmps_dd_mul(rh, rl, Eh, El, h, l);
}}
static inline int tmps_f64_exp_k(ulong xh, ulong xl, thread ulong& h, thread ulong& l) {{
  // exp(xh + xl) = 2^k (h + l), |xh| < 2^11; returns k
  ulong rh, rl;
  int k = tmps_f64_red_ln2(xh, xl, rh, rl);
  tmps_f64_expm1_r(rh, rl, h, l);
  tmps_dd_add({ONE}, 0ul, h, l, h, l);
  return k;
}}
static inline void tmps_f64_expm1_dd(ulong x, thread ulong& h, thread ulong& l) {{
  // expm1(x) as a double-double, -60 < x < 60
  ulong rh, rl;
  int k = tmps_f64_red_ln2(x, 0ul, rh, rl);
  tmps_f64_expm1_r(rh, rl, h, l);
  if (k == 0) return;
  // 2^k (1 + p) - 1 = (2^k - 1) + 2^k p
  ulong th, tl;
  tmps_dd_two_sum(tmps_f64_ldexp({ONE}, k), 0xbff0000000000000ul, th, tl);
  tmps_dd_add(th, tl, tmps_f64_ldexp(h, k), tmps_f64_ldexp(l, k), h, l);
}}
static inline ulong tmps_f64_expm1(ulong x) {{
  if (tmps_f64_isnan(x)) return x | 0x0008000000000000ul;
  if ((x & 0x7ffffffffffffffful) < 0x3c90000000000000ul) return x;  // |x| < 2^-54 (and +-0)
  if (tmps_f64_lt(x, {lit(-40.0)})) return 0xbff0000000000000ul;  // -1 (and -inf)
  if (tmps_f64_lt({lit(50.0)}, x)) return tmps_f64_exp(x);  // the -1 is far below half an ulp
  ulong h, l;
  tmps_f64_expm1_dd(x, h, l);
  return tmps_f64_add(h, l);
}}
static inline ulong tmps_f64_exp_big_half(ulong a) {{
  // exp(a) / 2 for 40 < a (inf beyond the range), one rounding
  if (tmps_f64_lt({lit(711.0)}, a)) return 0x7ff0000000000000ul;
  ulong h, l;
  int k = tmps_f64_exp_k(a, 0ul, h, l);
  return tmps_f64_ldexp(tmps_f64_add(h, l), k - 1);
}}
static inline ulong tmps_f64_sinh(ulong x) {{
  if (tmps_f64_isnan(x)) return x | 0x0008000000000000ul;
  ulong a = x & 0x7ffffffffffffffful, sign = x & {NEG};
  if (a < 0x3e40000000000000ul) return x;  // |x| < 2^-27
  if (tmps_f64_lt({lit(40.0)}, a)) return sign | tmps_f64_exp_big_half(a);
  ulong th, tl, uh, ul, qh, ql;
  tmps_f64_expm1_dd(a, th, tl);
  tmps_dd_add(th, tl, {ONE}, 0ul, uh, ul);
  tmps_dd_div(th, tl, uh, ul, qh, ql);  // sinh = (T + T / (T + 1)) / 2
  tmps_dd_add(th, tl, qh, ql, th, tl);
  return sign | tmps_f64_mul(tmps_f64_add(th, tl), 0x3fe0000000000000ul);
}}
static inline ulong tmps_f64_cosh(ulong x) {{
  if (tmps_f64_isnan(x)) return x | 0x0008000000000000ul;
  ulong a = x & 0x7ffffffffffffffful;
  if (a < 0x3e40000000000000ul) return {ONE};
  if (tmps_f64_lt({lit(40.0)}, a)) return tmps_f64_exp_big_half(a);
  ulong th, tl, qh, ql;
  tmps_f64_expm1_dd(a, th, tl);
  tmps_dd_add(th, tl, {ONE}, 0ul, th, tl);  // E = exp(a)
  tmps_dd_div({ONE}, 0ul, th, tl, qh, ql);  // cosh = (E + 1/E) / 2
  tmps_dd_add(th, tl, qh, ql, th, tl);
  return tmps_f64_mul(tmps_f64_add(th, tl), 0x3fe0000000000000ul);
}}
static inline ulong tmps_f64_tanh(ulong x) {{
  if (tmps_f64_isnan(x)) return x | 0x0008000000000000ul;
  ulong a = x & 0x7ffffffffffffffful, sign = x & {NEG};
  if (a < 0x3e40000000000000ul) return x;
  if (tmps_f64_lt({lit(22.0)}, a)) return sign | {ONE};
  ulong th, tl, uh, ul;
  tmps_f64_expm1_dd(tmps_f64_add(a, a), th, tl);  // tanh = T / (T + 2), T = expm1(2|x|)
  tmps_dd_add(th, tl, 0x4000000000000000ul, 0ul, uh, ul);
  tmps_dd_div(th, tl, uh, ul, th, tl);
  return sign | tmps_f64_add(th, tl);
}}
""")


# ---- pow ---------------------------------------------------------------------------------------
entry("tmps_f64_pow", ("tmps_f64_log_dd", "tmps_f64_expk"), f"""
static inline ulong tmps_f64_pow(ulong x, ulong y) {{
  // C99 Annex F special cases, then |x|^y = exp(y log|x|) with y log|x| as a double-double
  ulong ax = x & 0x7ffffffffffffffful, ay = y & 0x7ffffffffffffffful;
  if (ay == 0ul || x == {ONE}) return {ONE};
  if (tmps_f64_isnan(x) || tmps_f64_isnan(y)) return tmps_f64_qnan(x, y);
  bool yint = true, yodd = false;
  if (ay < 0x4340000000000000ul) {{  // |y| < 2^53: may be odd or not integral
    yint = tmps_f64_round_int(y, 0) == y;
    yodd = yint && (tmps_f64_to_i(y, 64) & 1l) != 0l;
  }}
  bool yneg = (y >> 63) != 0ul;
  ulong osign = yodd ? x & {NEG} : 0ul;  // the result's sign
  if (ay == 0x7ff0000000000000ul) {{
    if (ax == {ONE}) return {ONE};  // (-1)^+-inf
    return ((ax > {ONE}) != yneg) ? 0x7ff0000000000000ul : 0ul;
  }}
  if (ax == 0ul) return yneg ? osign | 0x7ff0000000000000ul : osign;
  if (ax == 0x7ff0000000000000ul) return yneg ? osign : osign | 0x7ff0000000000000ul;
  if ((x >> 63) != 0ul && !yint) return 0x7ff8000000000000ul;
  ulong lh, ll;
  tmps_f64_log_dd(ax, lh, ll);
  ulong ph = tmps_f64_mul(y, lh);
  if (tmps_f64_lt({lit(710.0)}, ph)) return osign | 0x7ff0000000000000ul;
  if (tmps_f64_lt(ph, {lit(-746.0)})) return osign;
  ulong pe = tmps_f64_fma(y, lh, ph ^ {NEG});
  pe = tmps_f64_fma(y, ll, pe);
  ulong h, l;
  int k = tmps_f64_exp_k(ph, pe, h, l);
  return osign | tmps_f64_ldexp(tmps_f64_add(h, l), k);
}}
""")


# ---- exp10 ---------------------------------------------------------------------------------------
entry("tmps_f64_exp10", ("tmps_f64_expk", "tmps_f64_dd_round"), f"""static inline ulong tmps_f64_exp10(ulong x) {{
  if (tmps_f64_isnan(x)) return x | {QUIET};
  ulong a = x & {ABS};
  if (a < 0x3c60000000000000ul) return {ONE};  // |x| < 2^-57: |x ln10| below half an ulp of 1
  if (tmps_f64_lt({lit(309.0)}, x)) return {INF};
  if (tmps_f64_lt(x, {lit(-325.0)})) return 0ul;
  ulong ph = tmps_f64_mul(x, {LN10_H});
  ulong pe = tmps_f64_fma(x, {LN10_H}, ph ^ {NEG});
  pe = tmps_f64_fma(x, {LN10_L}, pe);
  ulong h, l;
  int k = tmps_f64_exp_k(ph, pe, h, l);
  return tmps_f64_dd_round(h, l, k);
}}
""")
