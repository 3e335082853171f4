"""More math functions on software float64: tan, the hyperbolic and inverse trigonometric
functions, pow, log10, log1p, expm1, erfc, cbrt.

Built on fp64.py's correctly rounded primitives and fp64_math.py's double-double helpers
(tmps_dd_*). Each function computes its result as a double-double (~100 bits) with one final
rounding, so results are within 1 ulp (measured maxima in docs/supported-ops.md):
- log_dd: x = 2^k m, m in [sqrt(1/2), sqrt(2)), s = (m - 1) / (m + 1) in double-double,
  log(m) = 2 s sum s^2n / (2n+1) (the first terms in double-double, the tail in double), plus k ln2
  (three-part ln2). log10 = log_dd / ln10, log1p(x) = log_dd(1 + x rounded) + the rounding error
  / (1 + x), pow = exp(y log_dd|x|) with y log|x| as a double-double (C99 Annex F special cases);
- expm1_r: expm1(r) for |r| <= ln2/2 by a Taylor series (double-double head, double tail);
  exp_k: exp(hi + lo) = 2^k (h + l) after a three-part ln2 reduction; expm1, sinh, cosh, tanh
  are double-double formulas over them (sinh = (T + T/(T+1))/2, cosh = (E + 1/E)/2,
  tanh = T/(T+2), T = expm1(|x|) or expm1(2|x|), E = 1 + T);
- atan_dd: v in [0, 1]: c = round(8v)/8, atan(v) = atan(c) + atan((v - c)/(1 + v c)) with
  atan(c) from a table (computed here in integer fixed point) and a short odd series; atan,
  atan2, asin = atan2(x, sqrt(1 - x^2)), acos = atan2(sqrt(1 - x^2), x) with the square
  root and the quotients in double-double; asinh, acosh, atanh are logarithms of double-double
  arguments (log(h + l) = log_dd(h) + l/h);
- tan: the exact pi/2 reduction of sin/cos, then the quotient of the ksin/kcos kernels taken
  before their last rounding (double-doubles);
- erfc: x < 4: 1 - erf (erf as a double-double, fp64_math.py); x >= 4: exp(-x^2) times the
  continued fraction 1/(x + (1/2)/(x + 1/(x + (3/2)/...))) / sqrt(pi) (inner terms in double,
  the outer three and the product in double-double), scaled once at the end;
- cbrt: a float guess (exp2(log2(m)/3)), then two Newton corrections with exact residuals.
Cost: each is a few hundred soft operations (double-double steps, 2-6 bit-serial divisions):
measured on the simulator (2 busy cores, 2^14 elements) 5.7 us per element on average over
the 17 functions, about 3x exp. The accuracy sweep: tools/fp64_accuracy.py.
"""

from __future__ import annotations

from fractions import Fraction

from .fp64 import _lib
from .fp64_math import _LN2_Q, _PI, INVLN2_HI, LN2_HI, LN2_LO, TSP_HI, TSP_LO, _frac_to_dd, _horner, _inv_fact, _lit

LN2_LO2 = float(_LN2_Q - Fraction(LN2_HI) - Fraction(LN2_LO))


def _ln10() -> Fraction:
    """ln 10 = 3 ln2 + ln(5/4), ln(5/4) = 2 atanh(1/9)."""
    t = Fraction(1, 9)
    s = sum(2 * t ** (2 * n + 1) / (2 * n + 1) for n in range(45))
    return 3 * _LN2_Q + s


def _atan_fixed(p: int, q: int, bits: int = 240) -> Fraction:
    """atan(p/q) to ~`bits` bits (Euler's series, integer fixed point)."""
    d = p * p + q * q
    term = (p * q << bits) // d
    total, n = term, 1
    while term:
        term = term * 2 * n * p * p // ((2 * n + 1) * d)
        total += term
        n += 1
    return Fraction(total, 1 << bits)


def _dd(q: Fraction) -> tuple[str, str]:
    h, lo = _frac_to_dd(q)
    return _lit(h), _lit(lo)


def _series(var: str, coeffs: list[Fraction], n_dd: int, out: str) -> str:
    """(out_h, out_l) = sum_n coeffs[n] var^n, var the double-double (var_h, var_l): the terms from
    n_dd on by a double Horner on var_h (they are small), the first n_dd in double-double."""
    lines = [_horner(f"{var}h", [float(c) for c in coeffs[n_dd:]], f"{out}h"), f"  ulong {out}l = 0ul;"]
    for c in reversed(coeffs[:n_dd]):
        ch, cl = _dd(c)
        lines.append(f"  tmps_dd_mul({out}h, {out}l, {var}h, {var}l, {out}h, {out}l);")
        lines.append(f"  tmps_dd_add({out}h, {out}l, {ch}, {cl}, {out}h, {out}l);")
    return "\n".join(lines)


NEG = "0x8000000000000000ul"
ONE = "0x3ff0000000000000ul"
PI_H, PI_L = _dd(_PI)
PIO2_H, PIO2_L = _dd(_PI / 2)
PIO4_H, PIO4_L = _dd(_PI / 4)
LN2_H, LN2_L = _dd(_LN2_Q)

# ---- double-double division and square root ----------------------------------------------------
_lib("tmps_f64_dd2", ("tmps_f64_dd", "tmps_f64_div", "tmps_f64_sqrt", "tmps_f64_from_u64"), """
static inline void tmps_dd_div(ulong ah, ulong al, ulong bh, ulong bl, thread ulong& h, thread ulong& l) {
  // (ah + al) / (bh + bl), finite, b != 0: q1 + (a - q1 b) / b
  ulong q1 = tmps_f64_div(ah, bh);
  ulong ph, pl;
  tmps_dd_mul(q1, 0ul, bh, bl, ph, pl);
  ulong rh, rl;
  tmps_dd_add(ah, al, ph ^ 0x8000000000000000ul, pl ^ 0x8000000000000000ul, rh, rl);
  tmps_dd_fast(q1, tmps_f64_div(rh, bh), h, l);
}
static inline void tmps_dd_sqrt(ulong ah, ulong al, thread ulong& h, thread ulong& l) {
  // sqrt(ah + al), ah + al >= 0 finite: s + (a - s^2) / (2 s)
  ulong s = tmps_f64_sqrt(ah);
  if ((s & 0x7ffffffffffffffful) == 0ul) { h = 0ul; l = 0ul; return; }
  ulong sq = tmps_f64_mul(s, s), sqe = tmps_f64_fma(s, s, sq ^ 0x8000000000000000ul);
  ulong r = tmps_f64_add(tmps_f64_sub(tmps_f64_sub(ah, sq), sqe), al);  // ah - sq is exact
  tmps_dd_fast(s, tmps_f64_div(r, tmps_f64_add(s, s)), h, l);
}
""")

# ---- log_dd, log10, log1p ----------------------------------------------------------------------
_LOGS = [Fraction(1, 2 * n + 1) for n in range(17)]
_INVLN10_H, _INVLN10_L = _dd(1 / _ln10())
_lib("tmps_f64_log_dd", ("tmps_f64_dd2", "tmps_f64_log"), f"""
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
{_series("z", _LOGS, 4, "S")}
  tmps_dd_mul(sh, sl, Sh, Sl, h, l);
  h = tmps_f64_add(h, h);
  l = tmps_f64_add(l, l);
  if (e != 0) {{  // + e ln2, ln2 in three parts (e ln2_hi is exact)
    ulong kd = tmps_f64_from_i64((long)e);
    ulong b = tmps_f64_mul(kd, {_lit(LN2_LO)});
    ulong be = tmps_f64_fma(kd, {_lit(LN2_LO)}, b ^ {NEG});
    be = tmps_f64_fma(kd, {_lit(LN2_LO2)}, be);
    ulong th, tl;
    tmps_dd_two_sum(tmps_f64_mul(kd, {_lit(LN2_HI)}), b, th, tl);
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
_EXPM1 = [_inv_fact(n + 1) for n in range(20)]  # expm1(r) / r = sum r^n / (n+1)!
_lib("tmps_f64_expk", ("tmps_f64_dd2", "tmps_f64_exp"), f"""
static inline int tmps_f64_red_ln2(ulong xh, ulong xl, thread ulong& rh, thread ulong& rl) {{
  // xh + xl = k ln2 + (rh + rl), |rh + rl| <= ln2/2 + tiny; |xh| < 2^11
  ulong kd = tmps_f64_round_int(tmps_f64_mul(xh, {_lit(INVLN2_HI)}), 4);
  int k = (int)tmps_f64_to_i(kd, 32);
  if (k == 0) {{ rh = xh; rl = xl; return 0; }}
  ulong hi = tmps_f64_fma(kd, {_lit(-LN2_HI)}, xh);  // exact
  ulong lo = tmps_f64_fma(kd, {_lit(-LN2_LO)}, xl);
  lo = tmps_f64_fma(kd, {_lit(-LN2_LO2)}, lo);
  tmps_dd_two_sum(hi, lo, rh, rl);
  return k;
}}
static inline void tmps_f64_expm1_r(ulong rh, ulong rl, thread ulong& h, thread ulong& l) {{
  // expm1(rh + rl), |rh + rl| <= ln2/2 + tiny, as a double-double
{_series("r", _EXPM1, 5, "E")}
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
  if (tmps_f64_lt(x, {_lit(-40.0)})) return 0xbff0000000000000ul;  // -1 (and -inf)
  if (tmps_f64_lt({_lit(50.0)}, x)) return tmps_f64_exp(x);  // the -1 is far below half an ulp
  ulong h, l;
  tmps_f64_expm1_dd(x, h, l);
  return tmps_f64_add(h, l);
}}
static inline ulong tmps_f64_exp_big_half(ulong a) {{
  // exp(a) / 2 for 40 < a (inf beyond the range), one rounding
  if (tmps_f64_lt({_lit(711.0)}, a)) return 0x7ff0000000000000ul;
  ulong h, l;
  int k = tmps_f64_exp_k(a, 0ul, h, l);
  return tmps_f64_ldexp(tmps_f64_add(h, l), k - 1);
}}
static inline ulong tmps_f64_sinh(ulong x) {{
  if (tmps_f64_isnan(x)) return x | 0x0008000000000000ul;
  ulong a = x & 0x7ffffffffffffffful, sign = x & {NEG};
  if (a < 0x3e40000000000000ul) return x;  // |x| < 2^-27
  if (tmps_f64_lt({_lit(40.0)}, a)) return sign | tmps_f64_exp_big_half(a);
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
  if (tmps_f64_lt({_lit(40.0)}, a)) return tmps_f64_exp_big_half(a);
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
  if (tmps_f64_lt({_lit(22.0)}, a)) return sign | {ONE};
  ulong th, tl, uh, ul;
  tmps_f64_expm1_dd(tmps_f64_add(a, a), th, tl);  // tanh = T / (T + 2), T = expm1(2|x|)
  tmps_dd_add(th, tl, 0x4000000000000000ul, 0ul, uh, ul);
  tmps_dd_div(th, tl, uh, ul, th, tl);
  return sign | tmps_f64_add(th, tl);
}}
""")

# ---- pow ---------------------------------------------------------------------------------------
_lib("tmps_f64_pow", ("tmps_f64_log_dd", "tmps_f64_expk"), f"""
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
  if (tmps_f64_lt({_lit(710.0)}, ph)) return osign | 0x7ff0000000000000ul;
  if (tmps_f64_lt(ph, {_lit(-746.0)})) return osign;
  ulong pe = tmps_f64_fma(y, lh, ph ^ {NEG});
  pe = tmps_f64_fma(y, ll, pe);
  ulong h, l;
  int k = tmps_f64_exp_k(ph, pe, h, l);
  return osign | tmps_f64_ldexp(tmps_f64_add(h, l), k);
}}
""")

# ---- atan, atan2, asin, acos ---------------------------------------------------------------------
_ATAN_TAB = [_dd(_atan_fixed(k, 8)) for k in range(9)]
_atan_table = ", ".join(f"{h}, {lo}" for h, lo in _ATAN_TAB)
_ATANS = [Fraction((-1) ** n, 2 * n + 1) for n in range(11)]
_lib("tmps_f64_atan", ("tmps_f64_dd2",), f"""constant ulong tmps_f64_atan_c[18] = {{{_atan_table}}};
static inline void tmps_f64_atan_dd(ulong vh, ulong vl, thread ulong& h, thread ulong& l) {{
  // atan(vh + vl), 0 <= v <= 1 (+ tiny): atan(c) + atan((v - c) / (1 + v c)), c = k/8 nearest v
  int k = (int)tmps_f64_to_i(tmps_f64_round_int(tmps_f64_mul(vh, 0x4020000000000000ul), 4), 32);
  ulong wh = vh, wl = vl;
  if (k != 0) {{
    ulong c = tmps_f64_mul(tmps_f64_from_i64((long)k), 0x3fc0000000000000ul);
    ulong nh, nl, dh, dl;
    tmps_dd_add(vh, vl, c ^ {NEG}, 0ul, nh, nl);
    tmps_dd_add({ONE}, 0ul, tmps_f64_mul(vh, c), tmps_f64_mul(vl, c), dh, dl);  // v c: exact
    tmps_dd_div(nh, nl, dh, dl, wh, wl);  // |w| <= 1/16
  }}
  ulong zh, zl;
  tmps_dd_mul(wh, wl, wh, wl, zh, zl);
{_series("z", _ATANS, 2, "S")}
  tmps_dd_mul(wh, wl, Sh, Sl, h, l);
  if (k != 0) tmps_dd_add(tmps_f64_atan_c[2 * k], tmps_f64_atan_c[2 * k + 1], h, l, h, l);
}}
static inline void tmps_f64_atan2_dd(ulong yh, ulong yl, ulong xh, ulong xl, thread ulong& h, thread ulong& l) {{
  // the angle of (x, y) in [0, pi/2] for double-doubles x, y >= 0, not both zero
  ulong vh, vl;
  if (tmps_f64_le(yh, xh)) {{
    tmps_dd_div(yh, yl, xh, xl, vh, vl);
    tmps_f64_atan_dd(vh, vl, h, l);
  }} else {{
    tmps_dd_div(xh, xl, yh, yl, vh, vl);
    tmps_f64_atan_dd(vh, vl, h, l);
    tmps_dd_add({PIO2_H}, {PIO2_L}, h ^ {NEG}, l ^ {NEG}, h, l);
  }}
}}
static inline ulong tmps_f64_atan(ulong x) {{
  if (tmps_f64_isnan(x)) return x | 0x0008000000000000ul;
  ulong a = x & 0x7ffffffffffffffful, sign = x & {NEG};
  if (a < 0x3e30000000000000ul) return x;  // |x| < 2^-28
  if (a == 0x7ff0000000000000ul) return sign | {PIO2_H};
  ulong h, l;
  tmps_f64_atan2_dd(a, 0ul, {ONE}, 0ul, h, l);
  return sign | tmps_f64_add(h, l);
}}
static inline ulong tmps_f64_atan2(ulong y, ulong x) {{
  if (tmps_f64_isnan(x) || tmps_f64_isnan(y)) return tmps_f64_qnan(y, x);
  ulong ay = y & 0x7ffffffffffffffful, ax = x & 0x7ffffffffffffffful, sign = y & {NEG};
  bool xneg = (x >> 63) != 0ul;
  if (ay == 0ul) return sign | (xneg ? {PI_H} : 0ul);
  if (ay == 0x7ff0000000000000ul) {{
    if (ax != 0x7ff0000000000000ul) return sign | {PIO2_H};
    return sign | (xneg ? {_lit(2.356194490192345)} : {PIO4_H});
  }}
  if (ax == 0x7ff0000000000000ul) return sign | (xneg ? {PI_H} : 0ul);
  if (ax == 0ul) return sign | {PIO2_H};
  if (ax < 0x2000000000000000ul && ay < 0x2000000000000000ul) {{  // both < 2^-511: scale (exactly) up
    ax = tmps_f64_ldexp(ax, 600);
    ay = tmps_f64_ldexp(ay, 600);
  }}
  ulong h, l;
  tmps_f64_atan2_dd(ay, 0ul, ax, 0ul, h, l);
  if (xneg) tmps_dd_add({PI_H}, {PI_L}, h ^ {NEG}, l ^ {NEG}, h, l);
  return sign | tmps_f64_add(h, l);
}}
static inline void tmps_f64_sqrt1m(ulong a, thread ulong& h, thread ulong& l) {{
  // sqrt(1 - a^2) as a double-double, 0 <= a <= 1
  ulong sq = tmps_f64_mul(a, a), sqe = tmps_f64_fma(a, a, sq ^ {NEG});
  tmps_dd_add({ONE}, 0ul, sq ^ {NEG}, sqe ^ {NEG}, h, l);
  tmps_dd_sqrt(h, l, h, l);
}}
static inline ulong tmps_f64_asin(ulong x) {{
  if (tmps_f64_isnan(x)) return x | 0x0008000000000000ul;
  ulong a = x & 0x7ffffffffffffffful, sign = x & {NEG};
  if (a > {ONE}) return 0x7ff8000000000000ul;
  if (a < 0x3e40000000000000ul) return x;  // |x| < 2^-27
  ulong ch, cl, h, l;
  tmps_f64_sqrt1m(a, ch, cl);
  tmps_f64_atan2_dd(a, 0ul, ch, cl, h, l);
  return sign | tmps_f64_add(h, l);
}}
static inline ulong tmps_f64_acos(ulong x) {{
  if (tmps_f64_isnan(x)) return x | 0x0008000000000000ul;
  ulong a = x & 0x7ffffffffffffffful;
  if (a > {ONE}) return 0x7ff8000000000000ul;
  ulong ch, cl, h, l;
  tmps_f64_sqrt1m(a, ch, cl);
  tmps_f64_atan2_dd(ch, cl, a, 0ul, h, l);
  if ((x >> 63) != 0ul) tmps_dd_add({PI_H}, {PI_L}, h ^ {NEG}, l ^ {NEG}, h, l);
  return tmps_f64_add(h, l);
}}
""")

# ---- asinh, acosh, atanh -----------------------------------------------------------------------
_lib("tmps_f64_ahyp", ("tmps_f64_log_dd",), f"""
static inline ulong tmps_f64_asinh(ulong x) {{
  if (tmps_f64_isnan(x)) return x | 0x0008000000000000ul;
  ulong a = x & 0x7ffffffffffffffful, sign = x & {NEG};
  if (a < 0x3e40000000000000ul || a == 0x7ff0000000000000ul) return x;  // |x| < 2^-27, inf
  ulong h, l;
  if (a > 0x41b0000000000000ul) {{  // |x| > 2^28: log(2|x|) = log|x| + ln2
    tmps_f64_log_dd(a, h, l);
    tmps_dd_add(h, l, {LN2_H}, {LN2_L}, h, l);
    return sign | tmps_f64_add(h, l);
  }}
  ulong sh, sl;  // log(a + sqrt(a^2 + 1))
  ulong sq = tmps_f64_mul(a, a), sqe = tmps_f64_fma(a, a, sq ^ {NEG});
  tmps_dd_add({ONE}, 0ul, sq, sqe, sh, sl);
  tmps_dd_sqrt(sh, sl, sh, sl);
  tmps_dd_add(sh, sl, a, 0ul, sh, sl);
  tmps_f64_log_dd2(sh, sl, h, l);
  return sign | tmps_f64_add(h, l);
}}
static inline ulong tmps_f64_acosh(ulong x) {{
  if (tmps_f64_isnan(x)) return x | 0x0008000000000000ul;
  if ((x >> 63) != 0ul || x < {ONE}) return 0x7ff8000000000000ul;
  if (x == 0x7ff0000000000000ul) return x;
  ulong h, l;
  if (x > 0x41b0000000000000ul) {{  // x > 2^28: log(2x)
    tmps_f64_log_dd(x, h, l);
    tmps_dd_add(h, l, {LN2_H}, {LN2_L}, h, l);
    return tmps_f64_add(h, l);
  }}
  ulong sh, sl;  // log(x + sqrt(x^2 - 1))
  ulong sq = tmps_f64_mul(x, x), sqe = tmps_f64_fma(x, x, sq ^ {NEG});
  tmps_dd_add(sq, sqe, 0xbff0000000000000ul, 0ul, sh, sl);
  tmps_dd_sqrt(sh, sl, sh, sl);
  tmps_dd_add(sh, sl, x, 0ul, sh, sl);
  tmps_f64_log_dd2(sh, sl, h, l);
  return tmps_f64_add(h, l);
}}
static inline ulong tmps_f64_atanh(ulong x) {{
  if (tmps_f64_isnan(x)) return x | 0x0008000000000000ul;
  ulong a = x & 0x7ffffffffffffffful, sign = x & {NEG};
  if (a > {ONE}) return 0x7ff8000000000000ul;
  if (a == {ONE}) return sign | 0x7ff0000000000000ul;
  if (a < 0x3e30000000000000ul) return x;  // |x| < 2^-28
  ulong nh, nl, dh, dl, h, l;  // log((1 + a) / (1 - a)) / 2
  tmps_dd_two_sum({ONE}, a, nh, nl);
  tmps_dd_two_sum({ONE}, a ^ {NEG}, dh, dl);
  tmps_dd_div(nh, nl, dh, dl, nh, nl);
  tmps_f64_log_dd2(nh, nl, h, l);
  return sign | tmps_f64_mul(tmps_f64_add(h, l), 0x3fe0000000000000ul);
}}
""")

# ---- tan ---------------------------------------------------------------------------------------
_lib("tmps_f64_tan", ("tmps_f64_sincos", "tmps_f64_dd2"), f"""static inline ulong tmps_f64_tan(ulong x) {{
  ulong ax = x & 0x7ffffffffffffffful;
  if (ax >= 0x7ff0000000000000ul) return tmps_f64_isnan(x) ? x | 0x0008000000000000ul : 0x7ff8000000000000ul;
  if (ax < 0x3e40000000000000ul) return x;  // |x| < 2^-27
  ulong rh = ax, rl = 0ul;
  int n = 0;
  if (ax > {_lit(0.7853981633974483)}) n = tmps_f64_rem_pio2(ax, rh, rl);
  ulong sh, sl, ch, cl;
  tmps_f64_ksin_dd(rh, rl, sh, sl);
  tmps_f64_kcos_dd(rh, rl, ch, cl);
  if ((n & 1) != 0) {{ tmps_dd_div(ch, cl, sh, sl, sh, sl); sh ^= {NEG}; sl ^= {NEG}; }}
  else tmps_dd_div(sh, sl, ch, cl, sh, sl);
  return tmps_f64_add(sh, sl) ^ (x & {NEG});
}}
""")

# ---- erfc --------------------------------------------------------------------------------------
_ISP_H, _ISP_L = _lit(TSP_HI / 2), _lit(TSP_LO / 2)  # 1/sqrt(pi)
_lib("tmps_f64_erfc", ("tmps_f64_erf", "tmps_f64_expk"), f"""static inline ulong tmps_f64_erfc(ulong x) {{
  if (tmps_f64_isnan(x)) return x | 0x0008000000000000ul;
  ulong a = x & 0x7ffffffffffffffful;
  if (a < 0x3c80000000000000ul) return {ONE};  // |x| < 2^-55
  ulong h, l;
  if ((x >> 63) != 0ul) {{  // 1 + erf|x|
    if (tmps_f64_le({_lit(6.0)}, a)) return 0x4000000000000000ul;
    tmps_f64_erf_dd(a, h, l);
    tmps_dd_add({ONE}, 0ul, h, l, h, l);
    return tmps_f64_add(h, l);
  }}
  if (tmps_f64_lt(a, {_lit(4.0)})) {{  // 1 - erf(x): erf's ~100 bits leave > 60 after the cancellation
    tmps_f64_erf_dd(a, h, l);
    tmps_dd_add({ONE}, 0ul, h ^ {NEG}, l ^ {NEG}, h, l);
    return tmps_f64_add(h, l);
  }}
  if (tmps_f64_lt({_lit(27.3)}, a)) return 0ul;  // erfc < 2^-1076
  // continued fraction: erfc(x) = exp(-x^2) / sqrt(pi) / (x + (1/2)/(x + (2/2)/(x + (3/2)/...)))
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
  ulong fh, fl;
  tmps_dd_div({_ISP_H}, {_ISP_L}, th, tl, fh, fl);
  ulong zh = tmps_f64_mul(a, a), zl = tmps_f64_fma(a, a, zh ^ {NEG});
  int k = tmps_f64_exp_k(zh ^ {NEG}, zl ^ {NEG}, h, l);
  tmps_dd_mul(h, l, fh, fl, h, l);
  return tmps_f64_ldexp(tmps_f64_add(h, l), k);
}}
""")

# ---- cbrt --------------------------------------------------------------------------------------
_lib("tmps_f64_cbrt", ("tmps_f64_dd2", "tmps_f64_from_f32"), f"""
// a (finite, > 0) = 2^(3q) mv with mv in [1, 8): returns q and cbrt(mv) as y + c (~2^-80 relative;
// rcbrt in fp64_math_more.py uses the pair).
static inline int tmps_f64_cbrt_parts(ulong a, thread ulong& y, thread ulong& c) {{
  int e;
  ulong m = tmps_f64_norm(a, e);
  int q = e >= 0 ? e / 3 : -((2 - e) / 3);  // floor(e / 3)
  int r = e - 3 * q;  // 0, 1, 2
  ulong mv = ((ulong)(1023 + r) << 52) | (m & 0x000ffffffffffffful);
  float f = as_type<float>(((uint)(127 + r) << 23) | (uint)((m & 0x000ffffffffffffful) >> 29));
  y = tmps_f64_from_f32(exp2(log2(f) * (1.0f / 3.0f)));  // ~2^-20 relative
  c = 0ul;
  for (int i = 0; i < 2; ++i) {{  // y += (mv - y^3) / (3 y^2), the residual exact in double-double
    ulong sq = tmps_f64_mul(y, y), sqe = tmps_f64_fma(y, y, sq ^ {NEG});
    ulong ch, cl, rh, rl;
    tmps_dd_mul(sq, sqe, y, 0ul, ch, cl);
    tmps_dd_add(mv, 0ul, ch ^ {NEG}, cl ^ {NEG}, rh, rl);
    c = tmps_f64_div(rh, tmps_f64_mul(sq, {_lit(3.0)}));
    if (i == 0) y = tmps_f64_add(y, c);
  }}
  return q;
}}
static inline ulong tmps_f64_cbrt(ulong x) {{
  ulong a = x & 0x7ffffffffffffffful, sign = x & {NEG};
  if (a >= 0x7ff0000000000000ul || a == 0ul) return tmps_f64_isnan(x) ? x | 0x0008000000000000ul : x;
  ulong y, c;
  int q = tmps_f64_cbrt_parts(a, y, c);
  return sign | tmps_f64_ldexp(tmps_f64_add(y, c), q);
}}
""")

# the MSL function that implements each math function on f64 (and the library entry that holds it)
FUNCS = {
    "tan": "tmps_f64_tan", "tanh": "tmps_f64_tanh", "sinh": "tmps_f64_sinh", "cosh": "tmps_f64_cosh",
    "pow": "tmps_f64_pow", "log10": "tmps_f64_log10", "log1p": "tmps_f64_log1p", "expm1": "tmps_f64_expm1",
    "erfc": "tmps_f64_erfc", "cbrt": "tmps_f64_cbrt", "asin": "tmps_f64_asin", "acos": "tmps_f64_acos",
    "atan": "tmps_f64_atan", "atan2": "tmps_f64_atan2", "asinh": "tmps_f64_asinh", "acosh": "tmps_f64_acosh",
    "atanh": "tmps_f64_atanh",
}
