"""Math functions on software float64 (fp64.py), each within 1 ulp.

Built from the correctly rounded soft-float primitives, with the error-prone steps done in
double-double (an unevaluated sum hi + lo: two_sum, fma-based products):
- exp, exp2: x = k ln2 + r (Cody-Waite, ln2 split so that k * ln2_hi is exact), |r| <= ln2/2,
  exp(r) = 1 + r + r^2 q(r) with Taylor q (to r^12/14!), the 1 + r part in double-double, one
  rounding by the final scaling (ldexp rounds once; only subnormal results round twice);
- log, log2: x = 2^k m, m in [sqrt(1/2), sqrt(2)), f = m - 1, s = f / (2 + f),
  log(m) = f - f^2/2 + s (f^2/2 + R(s^2)) (the atanh series, Taylor to s^24) as a
  double-double; k ln2 (split) or k + log(m)/ln2 added in double-double;
- sin, cos: exact reduction modulo pi/2 for every |x| > pi/4 (Payne-Hanek: the 53-bit
  significand times a 192-bit window of 2/pi from a 1280-bit table; >= 128 fraction bits),
  r = frac * pi/2 as a double-double, then the classic kernels sin(r + t), cos(r + t)
  (Taylor to r^17 / r^16);
- erf: |x| < 6: x * 2/sqrt(pi) * sum (-x^2)^n / (n! (2n+1)) by Horner in double-double with
  exact coefficients (enough terms for |x|; cancellation for large |x| costs < 50 of ~106 bits);
  |x| >= 6: +-1;
- fmod: exact (binary long division over the exponent difference).
Constants are exact binary64 bit patterns computed here with integer arithmetic.
"""

from __future__ import annotations

from fractions import Fraction

from .fp64 import _lib, bits_of


def _lit(x: float) -> str:
    return f"0x{bits_of(x):016x}ul"


def _frac_to_dd(q: Fraction) -> tuple[float, float]:
    hi = q.numerator / q.denominator  # correctly rounded
    lo = (q - Fraction(hi))
    return hi, lo.numerator / lo.denominator


def _pi_fixed(bits: int) -> int:
    """floor(pi * 2^bits) (Machin's formula in integers, 32 guard bits)."""
    g = bits + 32
    one = 1 << g

    def atan_inv(n: int) -> int:
        total, term, k, n2 = 0, one // n, 1, n * n
        while term:
            total += term // k if (k // 2) % 2 == 0 else -(term // k)
            term //= n2
            k += 2
        return total

    return (16 * atan_inv(5) - 4 * atan_inv(239)) >> 32


_PI_BITS = 1400
_PI = Fraction(_pi_fixed(_PI_BITS), 1 << _PI_BITS)
def _ln2() -> Fraction:
    """ln 2 to ~200 bits: sum 1/(k 2^k)."""
    g = 260
    s = sum(Fraction(1, k * (1 << k)) for k in range(1, g))
    return s


def _split(q: Fraction, bits: int) -> tuple[float, float]:
    """(hi with at most `bits` significant bits, lo = q - hi rounded)."""
    e = q.numerator.bit_length() - q.denominator.bit_length()
    scale = Fraction(2) ** (bits - 1 - e)
    hi = Fraction(int(q * scale)) / scale
    lo = q - hi
    return float(hi), lo.numerator / lo.denominator


_LN2_Q = _ln2()
LN2_HI, LN2_LO = _split(_LN2_Q, 32)
INVLN2_HI, INVLN2_LO = _frac_to_dd(1 / _LN2_Q)
PIO2_HI, PIO2_LO = _frac_to_dd(_PI / 2)

def _two_over_pi_words(n: int = 21) -> list[int]:
    """2/pi in 64-bit words, most significant first: word j holds fraction bits 64j+1..64j+64."""
    nbits = 64 * n
    x = (1 << (nbits + 1)) * _PI.denominator // _PI.numerator  # floor(2/pi * 2^nbits)
    return [(x >> (64 * (n - 1 - j))) & 0xFFFFFFFFFFFFFFFF for j in range(n)]


def _sqrt_pi_dd() -> tuple[float, float]:
    """2/sqrt(pi) as a double-double (Newton on the rational approximation of pi)."""
    y = Fraction(1128379167095512573896158903121545171688, 10 ** 39)  # ~2/sqrt(pi), refined below
    target = 4 / _PI  # y^2 = 4/pi
    for _ in range(4):
        y = (y + target / y) / 2
        y = Fraction(int(y * (1 << 300)), 1 << 300)
    return _frac_to_dd(y)


TSP_HI, TSP_LO = _sqrt_pi_dd()

_DD = """static inline void tmps_dd_two_sum(ulong a, ulong b, thread ulong& s, thread ulong& e) {
  // s + e == a + b exactly (Knuth)
  s = tmps_f64_add(a, b);
  ulong bb = tmps_f64_sub(s, a);
  e = tmps_f64_add(tmps_f64_sub(a, tmps_f64_sub(s, bb)), tmps_f64_sub(b, bb));
}
static inline void tmps_dd_fast(ulong a, ulong b, thread ulong& s, thread ulong& e) {
  // |a| >= |b| (or a == 0): s + e == a + b exactly
  s = tmps_f64_add(a, b);
  e = tmps_f64_sub(b, tmps_f64_sub(s, a));
}
static inline void tmps_dd_mul(ulong ah, ulong al, ulong bh, ulong bl, thread ulong& h, thread ulong& l) {
  // (ah + al)(bh + bl), normalized
  ulong p = tmps_f64_mul(ah, bh);
  ulong e = tmps_f64_fma(ah, bh, p ^ 0x8000000000000000ul);
  e = tmps_f64_add(e, tmps_f64_add(tmps_f64_mul(ah, bl), tmps_f64_mul(al, bh)));
  tmps_dd_fast(p, e, h, l);
}
static inline void tmps_dd_add(ulong ah, ulong al, ulong bh, ulong bl, thread ulong& h, thread ulong& l) {
  ulong s, e;
  tmps_dd_two_sum(ah, bh, s, e);
  e = tmps_f64_add(e, tmps_f64_add(al, bl));
  tmps_dd_fast(s, e, h, l);
}
static inline ulong tmps_f64_ldexp(ulong y, int k) {
  // y * 2^k, one rounding
  ulong ay = y & 0x7ffffffffffffffful;
  if (ay == 0ul || ay >= 0x7ff0000000000000ul) return y;
  int e;
  ulong m = tmps_f64_norm(y, e);
  return tmps_f64_round(y >> 63, e + k, m << 10);
}
"""
_lib("tmps_f64_dd", ("tmps_f64_fma", "tmps_f64_sub", "tmps_f64_rint", "tmps_f64_to_int", "tmps_f64_cmp"), _DD)


def _horner(var: str, coeffs: list[float], out: str) -> str:
    """`ulong out = c0 + var*(c1 + var*(...))` with fmas (coeffs low to high order)."""
    expr = _lit(coeffs[-1])
    lines = [f"  ulong {out} = {expr};"]
    for c in reversed(coeffs[:-1]):
        lines.append(f"  {out} = tmps_f64_fma({out}, {var}, {_lit(c)});")
    return "\n".join(lines)


def _inv_fact(n: int) -> Fraction:
    f = 1
    for i in range(2, n + 1):
        f *= i
    return Fraction(1, f)


# ---- exp, exp2 -------------------------------------------------------------------------------
_EXP_Q = [float(_inv_fact(n)) for n in range(2, 15)]  # q(r) = sum r^(n-2)/n!
_lib("tmps_f64_exp", ("tmps_f64_dd",), f"""static inline ulong tmps_f64_exp_core(ulong hi, ulong lo, int k) {{
  // 2^k * exp(hi + lo), |hi + lo| <= ln2/2 + tiny, |lo| << |hi|
  ulong r = tmps_f64_add(hi, lo);
{_horner("r", _EXP_Q, "q")}
  ulong t = tmps_f64_mul(tmps_f64_mul(r, r), q);
  ulong h, l;
  tmps_dd_fast(0x3ff0000000000000ul, hi, h, l);  // 1 + hi
  l = tmps_f64_add(l, tmps_f64_add(lo, t));
  return tmps_f64_ldexp(tmps_f64_add(h, l), k);
}}
static inline ulong tmps_f64_exp(ulong x) {{
  if (tmps_f64_isnan(x)) return x | 0x0008000000000000ul;
  if (tmps_f64_lt({_lit(709.8)}, x)) return 0x7ff0000000000000ul;
  if (tmps_f64_lt(x, {_lit(-745.2)})) return 0ul;
  ulong kd = tmps_f64_round_int(tmps_f64_mul(x, {_lit(INVLN2_HI)}), 4);
  int k = (int)tmps_f64_to_i(kd, 32);
  ulong hi = tmps_f64_fma(kd, {_lit(-LN2_HI)}, x);  // exact: k * ln2_hi has <= 43 bits
  ulong lo = tmps_f64_mul(kd, {_lit(-LN2_LO)});
  return tmps_f64_exp_core(hi, lo, k);
}}
static inline ulong tmps_f64_exp2(ulong x) {{
  if (tmps_f64_isnan(x)) return x | 0x0008000000000000ul;
  if (tmps_f64_lt({_lit(1024.0)}, x) || x == {_lit(1024.0)}) return 0x7ff0000000000000ul;
  if (tmps_f64_lt(x, {_lit(-1075.0)})) return 0ul;
  ulong kd = tmps_f64_round_int(x, 4);
  int k = (int)tmps_f64_to_i(kd, 32);
  ulong f = tmps_f64_sub(x, kd);  // exact, |f| <= 1/2
  ulong hi = tmps_f64_mul(f, {_lit(LN2_HI + LN2_LO)});  // f * ln2 as a double-double
  ulong lo = tmps_f64_fma(f, {_lit(LN2_HI + LN2_LO)}, hi ^ 0x8000000000000000ul);
  lo = tmps_f64_fma(f, {_lit(float(_LN2_Q - Fraction(LN2_HI + LN2_LO)))}, lo);
  return tmps_f64_exp_core(hi, lo, k);
}}
""")

# ---- log, log2 -------------------------------------------------------------------------------
_LOG_R = [float(Fraction(2, 2 * n + 1)) for n in range(1, 13)]  # R(z)/z = sum 2/(2n+1) z^(n-1)
_lib("tmps_f64_log", ("tmps_f64_dd", "tmps_f64_div", "tmps_f64_from_u64"), f"""
static inline int tmps_f64_log_core(ulong x, thread ulong& hi, thread ulong& lo) {{
  // finite x > 0: x = 2^k m, log(m) = hi + lo; returns k
  int e;
  ulong m = tmps_f64_norm(x, e);
  ulong mv = (m & 0x000ffffffffffffful) | 0x3ff0000000000000ul;  // in [1, 2)
  if ((m & 0x000ffffffffffffful) > 0x6a09e667f3bcdul) {{ mv -= 0x0010000000000000ul; e += 1; }}  // > sqrt(2): halve
  ulong f = tmps_f64_sub(mv, 0x3ff0000000000000ul);  // exact
  ulong s = tmps_f64_div(f, tmps_f64_add(f, 0x4000000000000000ul));
  ulong z = tmps_f64_mul(s, s);
{_horner("z", _LOG_R, "rp")}
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
  tmps_dd_two_sum(tmps_f64_mul(kd, {_lit(LN2_HI)}), hi, s, e);  // k ln2_hi is exact
  e = tmps_f64_add(e, tmps_f64_add(lo, tmps_f64_mul(kd, {_lit(LN2_LO)})));
  return tmps_f64_add(s, e);
}}
static inline ulong tmps_f64_log2(ulong x) {{
  bool done;
  ulong sp = tmps_f64_log_special(x, done);
  if (done) return sp;
  ulong hi, lo;
  int k = tmps_f64_log_core(x, hi, lo);
  // (hi + lo) / ln2 as a double-double
  ulong p = tmps_f64_mul(hi, {_lit(INVLN2_HI)});
  ulong pe = tmps_f64_fma(hi, {_lit(INVLN2_HI)}, p ^ 0x8000000000000000ul);
  pe = tmps_f64_add(pe, tmps_f64_add(tmps_f64_mul(lo, {_lit(INVLN2_HI)}), tmps_f64_mul(hi, {_lit(INVLN2_LO)})));
  ulong s, e;
  tmps_dd_two_sum(tmps_f64_from_i64((long)k), p, s, e);
  return tmps_f64_add(s, tmps_f64_add(e, pe));
}}
""")

# ---- sin, cos --------------------------------------------------------------------------------
_WORDS = _two_over_pi_words()
_SIN = [float(Fraction((-1) ** k) * _inv_fact(2 * k + 1)) for k in range(2, 9)]  # S2..S8
_COS = [float(Fraction((-1) ** (k + 1)) * _inv_fact(2 * k + 2)) for k in range(1, 9)]  # C1..C8
_table = ", ".join(f"0x{w:016x}ul" for w in _WORDS)
_lib("tmps_f64_sincos", ("tmps_f64_dd",), f"""constant ulong tmps_f64_2opi[{len(_WORDS)}] = {{{_table}}};
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
  tmps_dd_mul(dh, dl, {_lit(PIO2_HI)}, {_lit(PIO2_LO)}, rh, rl);
  return n;
}}
static inline ulong tmps_f64_ksin(ulong x, ulong y) {{
  // sin(x + y), |x + y| <= pi/4, |y| << |x|
  ulong z = tmps_f64_mul(x, x), v = tmps_f64_mul(z, x);
{_horner("z", _SIN, "r")}
  // x - ((z (y/2 - v r) - y) - v S1)
  ulong inner = tmps_f64_sub(tmps_f64_mul(z, tmps_f64_sub(tmps_f64_mul(y, 0x3fe0000000000000ul),
                                                          tmps_f64_mul(v, r))), y);
  return tmps_f64_sub(x, tmps_f64_sub(inner, tmps_f64_mul(v, {_lit(-1.0 / 6.0)})));
}}
static inline void tmps_f64_ksin_dd(ulong x, ulong y, thread ulong& h, thread ulong& l) {{
  // ksin's value before its last rounding, as a double-double (tan's quotient)
  ulong z = tmps_f64_mul(x, x), v = tmps_f64_mul(z, x);
{_horner("z", _SIN, "r")}
  ulong inner = tmps_f64_sub(tmps_f64_mul(z, tmps_f64_sub(tmps_f64_mul(y, 0x3fe0000000000000ul),
                                                          tmps_f64_mul(v, r))), y);
  ulong w = tmps_f64_mul(v, {_lit(-1.0 / 6.0)}), we = tmps_f64_fma(v, {_lit(-1.0 / 6.0)}, w ^ 0x8000000000000000ul);
  tmps_dd_fast(x, tmps_f64_sub(w, inner), h, l);
  l = tmps_f64_add(l, we);
}}
static inline void tmps_f64_kcos_parts(ulong x, ulong y, thread ulong& w, thread ulong& corr) {{
  // cos(x + y) = w + corr (unrounded), |x + y| <= pi/4
  ulong z = tmps_f64_mul(x, x);
{_horner("z", _COS, "c")}
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
  if (ax > {_lit(0.7853981633974483)}) n = tmps_f64_rem_pio2(ax, rh, rl);
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

# ---- erf ---------------------------------------------------------------------------------------
_ERF_TERMS = 150
_erf_c = [_frac_to_dd(Fraction((-1) ** n) * _inv_fact(n) / (2 * n + 1)) for n in range(_ERF_TERMS)]
_erf_table = ",\n  ".join(f"0x{bits_of(h):016x}ul, 0x{bits_of(lo):016x}ul" for h, lo in _erf_c)
_lib("tmps_f64_erf", ("tmps_f64_dd",), f"""constant ulong tmps_f64_erf_c[{2 * _ERF_TERMS}] = {{
  {_erf_table}}};
static inline void tmps_f64_erf_dd(ulong ax, thread ulong& sh, thread ulong& sl) {{
  // erf(ax) as a double-double, 2^-55 <= ax < 6:
  // 2/sqrt(pi) ax sum_n (-ax^2)^n / (n! (2n+1)), Horner in double-double
  int terms = tmps_f64_lt(ax, 0x3ff0000000000000ul) ? 30 : (tmps_f64_lt(ax, {_lit(3.0)}) ? 75 : {_ERF_TERMS});
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
  tmps_dd_mul(th, tl, {_lit(TSP_HI)}, {_lit(TSP_LO)}, sh, sl);
}}
static inline ulong tmps_f64_erf(ulong x) {{
  if (tmps_f64_isnan(x)) return x | 0x0008000000000000ul;
  ulong ax = x & 0x7ffffffffffffffful;
  ulong sign = x & 0x8000000000000000ul;
  if (tmps_f64_le({_lit(6.0)}, ax)) return sign | 0x3ff0000000000000ul;
  if (ax < 0x3c80000000000000ul)  // |x| < 2^-55: x 2/sqrt(pi), one rounding
    return tmps_f64_fma(x, {_lit(TSP_HI)}, tmps_f64_mul(x, {_lit(TSP_LO)}));
  ulong sh, sl;
  tmps_f64_erf_dd(ax, sh, sl);
  return sign | tmps_f64_add(sh, sl);
}}
""")

# ---- fmod --------------------------------------------------------------------------------------
_lib("tmps_f64_fmod", ("tmps_f64_base",), """static inline ulong tmps_f64_fmod(ulong x, ulong y) {
  // exact: x - trunc(x / y) y, with the sign of x
  ulong ax = x & 0x7ffffffffffffffful, ay = y & 0x7ffffffffffffffful;
  if (tmps_f64_isnan(x) || tmps_f64_isnan(y)) return tmps_f64_qnan(x, y);
  if (ax == 0x7ff0000000000000ul || ay == 0ul) return 0x7ff8000000000000ul;
  if (ax < ay) return x;  // includes x == 0 and y == inf
  int ex, ey;
  ulong r = tmps_f64_norm(x, ex), my = tmps_f64_norm(y, ey);
  for (int d = ex - ey; d > 0; --d) {  // binary long division, one exponent step at a time
    if (r >= my) r -= my;
    r <<= 1;
  }
  if (r >= my) r -= my;
  if (r == 0ul) return x & 0x8000000000000000ul;
  int s = (int)clz(r) - 1;  // exact: r < 2^53, value r 2^(ey - 52)
  return tmps_f64_round(x >> 63, ey + 10 - s, r << s);
}
""")

# ---- rsqrt -------------------------------------------------------------------------------------
_lib("tmps_f64_rsqrt", ("tmps_f64_dd", "tmps_f64_div", "tmps_f64_sqrt"), """
static inline ulong tmps_f64_rsqrt(ulong x) {
  // 1/sqrt(x): the double-rounded quotient, then one Newton step with an exact residual
  if (tmps_f64_isnan(x)) return x | 0x0008000000000000ul;
  if ((x & 0x7ffffffffffffffful) == 0ul) return x | 0x7ff0000000000000ul;  // +-0 -> +-inf
  if ((x >> 63) != 0ul) return 0x7ff8000000000000ul;
  if (x == 0x7ff0000000000000ul) return 0ul;
  int e;
  tmps_f64_norm(x, e);
  int h = e >> 1;  // x = x' 4^h with x' in [1, 4): no overflow or underflow of y^2 below
  ulong xs = tmps_f64_ldexp(x, -2 * h);
  ulong y = tmps_f64_div(0x3ff0000000000000ul, tmps_f64_sqrt(xs));
  ulong t = tmps_f64_mul(y, y), te = tmps_f64_fma(y, y, t ^ 0x8000000000000000ul);
  ulong r = tmps_f64_fma(xs ^ 0x8000000000000000ul, t, 0x3ff0000000000000ul);  // 1 - x y^2
  r = tmps_f64_fma(xs ^ 0x8000000000000000ul, te, r);
  y = tmps_f64_fma(tmps_f64_mul(y, 0x3fe0000000000000ul), r, y);
  return tmps_f64_ldexp(y, -h);
}
""")
