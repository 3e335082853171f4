"""Bessel functions J0, J1, Y0, Y1, I0, I1, Jn, Yn on software float64.

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
    cos/sin chi from sin x and cos x (exactly reduced in trig.py) by the angle-sum formulas;
- I0, I1: the same series with all terms positive for |x| < 20 (no cancellation); beyond,
    I = e^x / sqrt(2 pi x) sum (-1)^k a_k(nu) / x^k (20 terms), e^x as e^(x/2) e^(x/2) so that
    the result overflows only when I does (|x| > ~713.98).
Parity: J0, I0 even; J1, I1 odd; Y0, Y1 NaN for x < 0 and -inf at +-0. At +-inf: J, Y -> 0
(Y(-inf) NaN), I0 -> +inf, I1 -> +-inf. NaN -> NaN. Constants are exact rationals rounded once.
- jn, yn (int32 order n, J_-n = (-1)^n J_n, J_n(-x) = (-1)^n J_n(x)): for x <= max(|n|, 30) Miller's
  backward recurrence in double-double from m = t + 60 + t/8 (t = max(n, x)), normalized by
  J0 + 2 sum J_2k = 1; Y0 = 2/pi [(log(x/2) + gamma) J0 + 2 sum (-1)^(k+1) J_2k / k] (Neumann) and
  Y1 from the Wronskian J1 Y0 - J0 Y1 = 2/(pi x), both from the same J's; beyond x = 30 the seeds
  J0, J1, Y0, Y1 from Hankel's expansion in double-double (20 + 20 terms, sin x and cos x from the
  exact reduction of trig.py and double-double Taylor kernels); upward recurrences (J for
  x > n, Y always) in double-double with a running power-of-two scale; x < 2^-29: the leading
  terms (x/2)^n / n! and -(n-1)!/pi (2/x)^n in the log domain; J_n = 0 without recurrence when
  (x/2)^n / n! < e^-765. Cost: O(max(n, x)) double-double steps (yn stops once it overflows).
"""

from __future__ import annotations

from decimal import Decimal
from fractions import Fraction
from math import factorial

from .consts import (
    EULER_GAMMA_DEC,
    GAMMA_Q,
    INF,
    ISP_H,
    ISP_L,
    LN2_H,
    LN2_L,
    LOGPI_H,
    LOGPI_L,
    NAN,
    NEG,
    ONE,
    PI,
    PI_DEC,
    dd,
    frac_to_dd,
    lit,
    series,
)
from .registry import entry

TWO_OVER_PI = float(2 / PI_DEC)
INV_SQRT_PI = float(1 / PI_DEC.sqrt())
INV_SQRT_2PI = float(1 / (2 * PI_DEC).sqrt())
GAMMA_MINUS_LN2 = float(EULER_GAMMA_DEC - Decimal(2).ln())

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


def _poly(key: str, z: str, n: str | None = None) -> str:
    return f"tmps_bessel_poly({_OFFSET[key]}, {n or len(TABLES[key])}, {z})"


# Series terms by |x|: the first omitted term t^n / n!^2 is < 1e-19 (< 2e-16 for I at |x| = 20,
# where I0 = 4e7), far below the rounding errors of the largest terms (>= 1)
def _series_terms(ax: str) -> str:
    return f"(tmps_f64_lt({ax}, {lit(2.0)}) ? 13 : (tmps_f64_lt({ax}, {lit(7.0)}) ? 24 : {SERIES_TERMS}))"


_ONE = lit(1.0)
_HALF = lit(0.5)
_NAN = "0x7ff8000000000000ul"
_INF = "0x7ff0000000000000ul"
_SIGN = "0x8000000000000000ul"
_table = ",\n  ".join(", ".join(lit(v) for v in _flat[i:i + 4]) for i in range(0, len(_flat), 4))

entry("tmps_f64_bessel", ("tmps_f64_dd", "tmps_f64_div", "tmps_f64_sqrt", "tmps_f64_rsqrt", "tmps_f64_log",
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
  if (tmps_f64_lt(ax, {lit(JY_SWITCH)})) {{
    ulong t = tmps_f64_mul(tmps_f64_mul(ax, ax), {lit(0.25)});
    int ns = {_series_terms("ax")};
    ulong hx = tmps_f64_mul(ax, {_HALF});
    ulong sj = nu == 0 ? {_poly("j0", "t", "ns")} : {_poly("j1", "t", "ns")};
    ulong j = nu == 0 ? sj : tmps_f64_mul(hx, sj);
    if (!want_y) {{
      r = j;
    }} else {{
      // ln(x/2) + gamma as ln(x) + (gamma - ln 2): x/2 would round to 0 for the least subnormal
      ulong lg = tmps_f64_add(tmps_f64_log(ax), {lit(GAMMA_MINUS_LN2)});
      if (nu == 0) {{
        ulong s = tmps_f64_fma(lg, j, tmps_f64_mul(t, {_poly("y0", "t", "ns")}));
        r = tmps_f64_mul({lit(TWO_OVER_PI)}, s);
      }} else {{
        ulong s = tmps_f64_fma(lg, j, tmps_f64_mul(tmps_f64_mul(ax, {lit(-0.25)}), {_poly("y1", "t", "ns")}));
        r = tmps_f64_sub(tmps_f64_mul({lit(TWO_OVER_PI)}, s), tmps_f64_div({lit(TWO_OVER_PI)}, ax));
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
    r = tmps_f64_mul(tmps_f64_mul({lit(INV_SQRT_PI)}, tmps_f64_rsqrt(ax)), v);
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
  }} else if (tmps_f64_lt(ax, {lit(I_SWITCH)})) {{
    ulong t = tmps_f64_mul(tmps_f64_mul(ax, ax), {lit(0.25)});
    int ns = {_series_terms("ax")};
    r = nu == 0 ? {_poly("i0", "t", "ns")} : tmps_f64_mul(tmps_f64_mul(ax, {_HALF}), {_poly("i1", "t", "ns")});
  }} else {{
    ulong w = tmps_f64_div({_ONE}, ax);
    ulong sum = nu == 0 ? {_poly("ia0", "w")} : {_poly("ia1", "w")};
    ulong e = tmps_f64_exp(tmps_f64_mul(ax, {_HALF}));
    ulong a = tmps_f64_mul(tmps_f64_mul(e, {lit(INV_SQRT_2PI)}), tmps_f64_rsqrt(ax));
    r = tmps_f64_mul(e, tmps_f64_mul(a, sum));
  }}
  return (neg && nu == 1) ? r ^ {_SIGN} : r;
}}
""")


# ---- jn, yn ---------------------------------------------------------------------------------
MILLER_X = 30.0  # Miller's recurrence (and Y0, Y1 from its J's) for x <= max(n, MILLER_X)
_RECIP = [frac_to_dd(Fraction(1, k)) for k in range(1, 49)]  # 1/k, k <= (m = 30 + 60 + 3) / 2
_recip_tab = ", ".join(f"{lit(h)}, {lit(lo)}" for h, lo in _RECIP)
TWO_OVER_PI_H, TWO_OVER_PI_L = dd(2 / PI)
GAMMA_H, GAMMA_L = dd(GAMMA_Q)
HANKEL_TERMS = 20  # each of P and Q at x > 30: the last term is < 1e-23 relative
_hankel = "\n".join(series("z", [Fraction((-1) ** k) * _a(nu, 2 * k + odd)
                                                 for k in range(HANKEL_TERMS)], 4, f"{pq}{nu}")
                     for nu in (0, 1) for pq, odd in (("P", 0), ("Q", 1)))
_sin_r = series("r2", [Fraction((-1) ** n, factorial(2 * n + 1)) for n in range(14)], 6, "S")
_cos_r = series("r2", [Fraction((-1) ** n, factorial(2 * n)) for n in range(14)], 6, "C")
entry("tmps_f64_sp_jn", ("tmps_f64_bessel", "tmps_f64_minmax", "tmps_f64_sp_gamma", "tmps_f64_dd2"), f"""
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
      if (tmps_f64_lt(lh, {lit(-1100.0)})) r = 0ul;
      else {{
        tmps_sp_lgamma_pos(tmps_f64_from_i64(nn + 1l), gh, gl);
        tmps_dd_add(lh, ll, gh ^ {NEG}, gl ^ {NEG}, lh, ll);
        int k = tmps_f64_exp_k(lh, ll, lh, ll);
        r = tmps_f64_ldexp(tmps_f64_add(lh, ll), k);
      }}
    }}
  }} else if (tmps_f64_le(ax, tmps_f64_maxnum(tmps_f64_from_i64(nn), {lit(MILLER_X)}))) {{
    // 0 <= J_n(x) <= (x/2)^n / n!: 0 when that is below 2^-1100 (saves Miller's O(n) steps for n >> x)
    if (nn > 200l) {{
      ulong lh = tmps_f64_mul(tmps_f64_from_i64(nn), tmps_f64_log(tmps_f64_mul(ax, 0x3fe0000000000000ul)));
      ulong gh, gl;
      tmps_sp_lgamma_pos(tmps_f64_from_i64(nn + 1l), gh, gl);
      if (tmps_f64_lt(tmps_f64_sub(lh, gh), {lit(-765.0)})) return flip ? {NEG} : 0ul;
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
    if (tmps_f64_lt({lit(800.0)}, lh)) r = 0xfff0000000000000ul;
    else {{
      tmps_sp_lgamma_pos(tmps_f64_from_i64(nn), gh, gl);
      tmps_dd_add(lh, ll, gh, gl, lh, ll);
      tmps_dd_add(lh, ll, {LOGPI_H} ^ {NEG}, {LOGPI_L} ^ {NEG}, lh, ll);
      if (tmps_f64_lt({lit(710.0)}, lh)) r = 0xfff0000000000000ul;
      else {{
        int k = tmps_f64_exp_k(lh, ll, lh, ll);
        r = tmps_f64_ldexp(tmps_f64_add(lh, ll), k) ^ {NEG};
      }}
    }}
  }} else {{
    ulong y0h, y0l, y1h, y1l;
    if (tmps_f64_lt({lit(MILLER_X)}, x)) {{  // Hankel's expansion
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

