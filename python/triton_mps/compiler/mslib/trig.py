"""Trigonometric functions on software binary64, each within 1 ulp.

- sin, cos: exact reduction modulo pi/2 for every |x| > pi/4 (Payne-Hanek: the 53-bit
  significand times a 192-bit window of 2/pi from a 1280-bit table; >= 128 fraction bits),
  r = frac * pi/2 as a double-double, then the classic kernels sin(r + t), cos(r + t)
  (Taylor to r^17 / r^16);
- tan: the same reduction, then the quotient of the ksin/kcos kernels taken before their last
  rounding (double-doubles);
- atan_dd: v in [0, 1]: c = round(8v)/8, atan(v) = atan(c) + atan((v - c)/(1 + v c)) with
  atan(c) from a table (computed here in integer fixed point) and a short odd series; atan,
  atan2, asin = atan2(x, sqrt(1 - x^2)), acos = atan2(sqrt(1 - x^2), x) with the square
  root and the quotients in double-double;
- sinpi, cospi: x = n/2 + f exactly (n = round(2x), |f| <= 1/4), then the sin/cos kernels (before
  their last rounding) at pi f as a double-double (tiny f scaled by 2^200 first); sinpi(+-n) = +-0,
  cospi(n + 1/2) = +0 (IEEE 754-2008 9.2.1).
"""

from __future__ import annotations

from fractions import Fraction

from .consts import (
    ABS,
    INF,
    NEG,
    ONE,
    PI_H,
    PI_L,
    PIO2_H,
    PIO2_HI,
    PIO2_L,
    PIO2_LO,
    PIO4_H,
    QUIET,
    atan_fixed,
    dd,
    horner,
    inv_fact,
    lit,
    series,
    two_over_pi_words,
)
from .registry import entry

# ---- sin, cos --------------------------------------------------------------------------------
_WORDS = two_over_pi_words()
_SIN = [float(Fraction((-1) ** k) * inv_fact(2 * k + 1)) for k in range(2, 9)]  # S2..S8
_COS = [float(Fraction((-1) ** (k + 1)) * inv_fact(2 * k + 2)) for k in range(1, 9)]  # C1..C8
_table = ", ".join(f"0x{w:016x}ul" for w in _WORDS)
entry("tmps_f64_sincos", ("tmps_f64_dd",), f"""constant ulong tmps_f64_2opi[{len(_WORDS)}] = {{{_table}}};
static inline ulong tmps_f64_2opi_bits(int i) {{
  // 64 bits of 2/pi starting at fraction bit i (bit 1 is the first after the binary point)
  int q = (i - 1) >> 6, o = (i - 1) & 63;
  ulong w = tmps_f64_2opi[q];
  return o == 0 ? w : (w << o) | (tmps_f64_2opi[q + 1] >> (64 - o));
}}
static inline int tmps_f64_rem_pio2(ulong ax, thread ulong& rh, thread ulong& rl) {{
  // finite ax = |x| > pi/4: ax = n pi/2 + (rh + rl), |rh + rl| <= pi/4; returns n mod 4
  int e;
  ulong m = tmps_f64_norm(ax, e);
  int E = e - 52;  // ax = m 2^E
  int i0 = max(1, E - 1);  // earlier bits of 2/pi only add multiples of 4 to ax 2/pi
  ulong w0 = tmps_f64_2opi_bits(i0), w1 = tmps_f64_2opi_bits(i0 + 64), w2 = tmps_f64_2opi_bits(i0 + 128);
  // P = m * (w0:w1:w2), 256 bits p3:p2:p1:p0; weight of bit 0: 2^(E - i0 - 191)
  ulong p0 = m * w2, c = mulhi(m, w2);
  ulong t = m * w1;
  ulong p1 = t + c;
  c = mulhi(m, w1) + (ulong)(p1 < t);
  t = m * w0;
  ulong p2 = t + c;
  ulong p3 = mulhi(m, w0) + (ulong)(p2 < t);
  int b = 191 + i0 - E;  // bit of P with weight 1 (the units of ax 2/pi)
  // integer part mod 4: bits b, b+1; fraction: the 128 bits below b -> fh:fl
  ulong fh, fl, lim;
  int n;
  if (b >= 192) {{
    int s = b - 192;
    n = (int)((p3 >> s) & 3ul);
    fh = s == 0 ? p2 : (p3 << (64 - s)) | (p2 >> s);
    fl = s == 0 ? p1 : (p2 << (64 - s)) | (p1 >> s);
  }} else {{  // b in [190, 191]
    int s = b - 128;  // 62 or 63
    n = (int)(((p3 << (64 - s)) | (p2 >> s)) & 3ul);
    fh = (p2 << (64 - s)) | (p1 >> s);
    fl = (p1 << (64 - s)) | (p0 >> s);
  }}
  ulong sign = 0ul;
  if ((fh >> 63) != 0ul) {{  // fraction >= 1/2: round n up, r negative
    n = (n + 1) & 3;
    fl = 0ul - fl;
    fh = 0ul - fh - (ulong)(fl != 0ul);
    sign = 1ul;
  }}
  if ((fh | fl) == 0ul) {{ rh = 0ul; rl = 0ul; return n; }}
  // fraction (fh:fl) * 2^-128 as a double-double, then times pi/2
  int lz = fh != 0ul ? (int)clz(fh) : 64 + (int)clz(fl);
  if (lz >= 64) {{ fh = fl << (lz - 64); fl = 0ul; }}
  else if (lz > 0) {{ fh = (fh << lz) | (fl >> (64 - lz)); fl <<= lz; }}
  int fe = -1 - lz;  // value = fh:fl * 2^(fe - 127), leading 1 at bit 127
  // dh: the top 53 bits (truncated, exact); dl: the other 75 bits, rounded
  ulong dh = tmps_f64_round(sign, fe, (fh >> 11) << 10);
  ulong mh = fh & 0x7fful, ml = fl, dl = 0ul;
  if ((mh | ml) != 0ul) {{
    int lz2 = mh != 0ul ? (int)clz(mh) : 64 + (int)clz(ml);  // >= 53
    ulong hh = lz2 >= 64 ? ml << (lz2 - 64) : (mh << lz2) | (ml >> (64 - lz2));
    ulong ll = lz2 >= 64 ? 0ul : ml << lz2;
    dl = tmps_f64_round(sign, fe - lz2, (hh >> 1) | (ulong)((hh & 1ul) != 0ul || ll != 0ul));
  }}
  // (dh + dl) * pi/2
  tmps_dd_mul(dh, dl, {lit(PIO2_HI)}, {lit(PIO2_LO)}, rh, rl);
  return n;
}}
static inline ulong tmps_f64_ksin(ulong x, ulong y) {{
  // sin(x + y), |x + y| <= pi/4, |y| << |x|
  ulong z = tmps_f64_mul(x, x), v = tmps_f64_mul(z, x);
{horner("z", _SIN, "r")}
  // x - ((z (y/2 - v r) - y) - v S1)
  ulong inner = tmps_f64_sub(tmps_f64_mul(z, tmps_f64_sub(tmps_f64_mul(y, 0x3fe0000000000000ul),
                                                          tmps_f64_mul(v, r))), y);
  return tmps_f64_sub(x, tmps_f64_sub(inner, tmps_f64_mul(v, {lit(-1.0 / 6.0)})));
}}
static inline void tmps_f64_ksin_dd(ulong x, ulong y, thread ulong& h, thread ulong& l) {{
  // ksin's value before its last rounding, as a double-double (tan's quotient)
  ulong z = tmps_f64_mul(x, x), v = tmps_f64_mul(z, x);
{horner("z", _SIN, "r")}
  ulong inner = tmps_f64_sub(tmps_f64_mul(z, tmps_f64_sub(tmps_f64_mul(y, 0x3fe0000000000000ul),
                                                          tmps_f64_mul(v, r))), y);
  ulong w = tmps_f64_mul(v, {lit(-1.0 / 6.0)}), we = tmps_f64_fma(v, {lit(-1.0 / 6.0)}, w ^ 0x8000000000000000ul);
  tmps_dd_fast(x, tmps_f64_sub(w, inner), h, l);
  l = tmps_f64_add(l, we);
}}
static inline void tmps_f64_kcos_parts(ulong x, ulong y, thread ulong& w, thread ulong& corr) {{
  // cos(x + y) = w + corr (unrounded), |x + y| <= pi/4
  ulong z = tmps_f64_mul(x, x);
{horner("z", _COS, "c")}
  ulong r = tmps_f64_mul(z, c);
  ulong hz = tmps_f64_mul(z, 0x3fe0000000000000ul);
  w = tmps_f64_sub(0x3ff0000000000000ul, hz);
  corr = tmps_f64_add(tmps_f64_sub(tmps_f64_sub(0x3ff0000000000000ul, w), hz),
                      tmps_f64_sub(tmps_f64_mul(z, r), tmps_f64_mul(x, y)));
}}
static inline ulong tmps_f64_kcos(ulong x, ulong y) {{
  // cos(x + y), |x + y| <= pi/4
  ulong w, corr;
  tmps_f64_kcos_parts(x, y, w, corr);
  return tmps_f64_add(w, corr);
}}
static inline void tmps_f64_kcos_dd(ulong x, ulong y, thread ulong& h, thread ulong& l) {{
  // kcos's value before its last rounding, as a double-double
  ulong w, corr;
  tmps_f64_kcos_parts(x, y, w, corr);
  tmps_dd_fast(w, corr, h, l);
}}
static inline ulong tmps_f64_sincos(ulong x, bool want_cos) {{
  ulong ax = x & 0x7ffffffffffffffful;
  if (ax >= 0x7ff0000000000000ul) return tmps_f64_isnan(x) ? x | 0x0008000000000000ul : 0x7ff8000000000000ul;
  if (ax < 0x3e40000000000000ul) return want_cos ? 0x3ff0000000000000ul : x;  // |x| < 2^-27
  ulong rh = ax, rl = 0ul;
  int n = 0;
  if (ax > {lit(0.7853981633974483)}) n = tmps_f64_rem_pio2(ax, rh, rl);
  if (want_cos) {{
    ulong v = (n & 1) != 0 ? tmps_f64_ksin(rh, rl) : tmps_f64_kcos(rh, rl);
    return (n == 1 || n == 2) ? v ^ 0x8000000000000000ul : v;
  }}
  ulong v = (n & 1) != 0 ? tmps_f64_kcos(rh, rl) : tmps_f64_ksin(rh, rl);
  if (n >= 2) v ^= 0x8000000000000000ul;
  return (x >> 63) != 0ul ? v ^ 0x8000000000000000ul : v;
}}
static inline ulong tmps_f64_sin(ulong x) {{ return tmps_f64_sincos(x, false); }}
static inline ulong tmps_f64_cos(ulong x) {{ return tmps_f64_sincos(x, true); }}
""")


# ---- atan, atan2, asin, acos ---------------------------------------------------------------------
_ATAN_TAB = [dd(atan_fixed(k, 8)) for k in range(9)]
_atan_table = ", ".join(f"{h}, {lo}" for h, lo in _ATAN_TAB)
_ATANS = [Fraction((-1) ** n, 2 * n + 1) for n in range(11)]
entry("tmps_f64_atan", ("tmps_f64_dd2",), f"""constant ulong tmps_f64_atan_c[18] = {{{_atan_table}}};
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
{series("z", _ATANS, 2, "S")}
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
    return sign | (xneg ? {lit(2.356194490192345)} : {PIO4_H});
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


# ---- tan ---------------------------------------------------------------------------------------
entry("tmps_f64_tan", ("tmps_f64_sincos", "tmps_f64_dd2"), f"""static inline ulong tmps_f64_tan(ulong x) {{
  ulong ax = x & 0x7ffffffffffffffful;
  if (ax >= 0x7ff0000000000000ul) return tmps_f64_isnan(x) ? x | 0x0008000000000000ul : 0x7ff8000000000000ul;
  if (ax < 0x3e40000000000000ul) return x;  // |x| < 2^-27
  ulong rh = ax, rl = 0ul;
  int n = 0;
  if (ax > {lit(0.7853981633974483)}) n = tmps_f64_rem_pio2(ax, rh, rl);
  ulong sh, sl, ch, cl;
  tmps_f64_ksin_dd(rh, rl, sh, sl);
  tmps_f64_kcos_dd(rh, rl, ch, cl);
  if ((n & 1) != 0) {{ tmps_dd_div(ch, cl, sh, sl, sh, sl); sh ^= {NEG}; sl ^= {NEG}; }}
  else tmps_dd_div(sh, sl, ch, cl, sh, sl);
  return tmps_f64_add(sh, sl) ^ (x & {NEG});
}}
""")


# ---- sinpi, cospi ------------------------------------------------------------------------------
entry("tmps_f64_sinpi_core", ("tmps_f64_sincos", "tmps_f64_dd_round"), f"""
static inline ulong tmps_f64_sinpi_core(ulong x, bool want_cos) {{
  // sin(pi x) or cos(pi x) = sin(pi (|x| + 1/2))
  ulong ax = x & {ABS};
  if (ax >= {INF}) return tmps_f64_isnan(x) ? x | {QUIET} : 0x7ff8000000000000ul;
  ulong sign = want_cos ? 0ul : x & {NEG};  // sinpi is odd, cospi even
  if (ax >= 0x4340000000000000ul) return want_cos ? {ONE} : sign;  // |x| >= 2^53: an even integer
  ulong nd = tmps_f64_round_int(tmps_f64_add(ax, ax), 4);  // 2|x| is exact
  int q = (int)(tmps_f64_to_i(nd, 64) & 3l) + (want_cos ? 1 : 0);
  ulong f = tmps_f64_sub(ax, tmps_f64_mul(nd, 0x3fe0000000000000ul));  // exact, |f| <= 1/4
  q &= 3;  // sin(pi (q/2 + f)): sin(pi f), cos(pi f), -sin(pi f), -cos(pi f)
  ulong qs = q >= 2 ? {NEG} : 0ul;
  ulong af = f & {ABS};
  if ((q & 1) != 0) {{
    if (af < 0x3c00000000000000ul) return {ONE} ^ qs ^ sign;  // |f| < 2^-63: cos(pi f) rounds to 1
  }} else if (af == 0ul) {{
    return sign;  // sinpi(+-n) = +-0, cospi(n + 1/2) = +0
  }}
  int k = 0;
  if (af < 0x07b0000000000000ul) {{ f = tmps_f64_ldexp(f, 200); k = -200; }}  // |f| < 2^-900: exact products below
  ulong ph = tmps_f64_mul(f, {PI_H});
  ulong pe = tmps_f64_fma(f, {PI_H}, ph ^ {NEG});
  pe = tmps_f64_fma(f, {PI_L}, pe);
  tmps_dd_fast(ph, pe, ph, pe);
  ulong h, l;
  if ((q & 1) != 0) tmps_f64_kcos_dd(ph, pe, h, l);
  else if (k != 0) {{ h = ph; l = pe; }}  // sin(t) = t (1 - t^2/6 ...), t < 2^-890
  else tmps_f64_ksin_dd(ph, pe, h, l);
  return tmps_f64_dd_round(h, l, k) ^ qs ^ sign;
}}
""")
entry("tmps_f64_sinpi", ("tmps_f64_sinpi_core",),
     "static inline ulong tmps_f64_sinpi(ulong x) { return tmps_f64_sinpi_core(x, false); }\n")
entry("tmps_f64_cospi", ("tmps_f64_sinpi_core",),
     "static inline ulong tmps_f64_cospi(ulong x) { return tmps_f64_sinpi_core(x, true); }\n")
