"""Still more math functions on software float64: exp10, sinpi, cospi, rcbrt, hypot, rhypot,
norm3d, norm4d, rnorm3d, rnorm4d, remainder, fdim, nextafter, powi, ldexp/scalbn, ilogb, logb,
llrint, llround.

Built like fp64_math_ext.py (read its docstring) on fp64.py's correctly rounded primitives and the
double-double helpers of fp64_math.py / fp64_math_ext.py. The inexact functions compute a
double-double (~100 bits) and round once, scaled results included (`tmps_f64_dd_round`: (h + l) 2^k
with a single rounding, subnormal results too), so they are within 1 ulp (measured maxima in
docs/supported-ops.md); the others are exact:
- exp10(x) = exp(x ln10), x ln10 as a double-double (ln10 in two parts), fp64_math_ext's exp_k;
- sinpi, cospi: x = n/2 + f exactly (n = round(2x), |f| <= 1/4), then the sin/cos kernels of
  fp64_math.py (before their last rounding) at pi f as a double-double (tiny f scaled by 2^200
  first); sinpi(+-n) = +-0, cospi(n + 1/2) = +0 (IEEE 754-2008 9.2.1);
- rcbrt: cbrt's two Newton steps (fp64_math_ext) kept as y + c, 1/(y + c) in double-double;
- hypot, rhypot, norm3d, norm4d, rnorm3d, rnorm4d: the arguments scaled (exactly) by 2^-e, e the
  largest one's exponent, the sum of the squares in double-double (each square exact with fma),
  its double-double square root (and reciprocal), rounded once at the scale 2^e (2^-e); an
  infinite argument gives +inf (0 for the reciprocals) even with a NaN, as C's hypot;
- remainder: exact, fmod's long division keeping the quotient's last bit (ties to the even
  quotient); fdim: x > y ? x - y : +0 (one correctly rounded subtraction); nextafter: one step of
  the bit pattern;
- powi(x, n) = pow(x, (double)n) (C99 Annex F cases of pow, within 1 ulp); ldexp/scalbn one
  rounding (subnormal results correctly rounded); ilogb (CUDA's conventions: INT_MIN for 0 and
  NaN, INT_MAX for inf); logb(0) = -inf, logb(+-inf) = +inf; llrint (ties to even) and llround
  (ties away) to int64, saturating, NaN -> 0 (as float2ll_rn).
"""

from __future__ import annotations

from .fp64 import _lib
from .fp64_math import _PI, _lit
from .fp64_math_ext import NEG, ONE, _dd, _ln10

INF = "0x7ff0000000000000ul"
ABS = "0x7ffffffffffffffful"
QUIET = "0x0008000000000000ul"


PI_H, PI_L = _dd(_PI)
LN10_H, LN10_L = _dd(_ln10())

# ---- (h + l) 2^k rounded once ------------------------------------------------------------------
_lib("tmps_f64_dd_round", ("tmps_f64_dd",), f"""static inline ulong tmps_f64_dd_round(ulong a, ulong b, int k) {{
  // (a + b) 2^k with one rounding (to nearest even, subnormal and overflowing results included);
  // a, b finite, |k| < 4000. tmps_f64_add with the exponent offset by k.
  ulong aa = a & {ABS}, ab = b & {ABS};
  if (aa == 0ul) return ab == 0ul ? (a & b) : tmps_f64_ldexp(b, k);
  if (ab == 0ul) return tmps_f64_ldexp(a, k);
  if (ab > aa) {{ ulong t = a; a = b; b = t; }}
  int ea, eb;
  ulong ma = tmps_f64_norm(a, ea) << 9, mb = tmps_f64_norm(b, eb) << 9;  // leading 1 at bit 61
  mb = tmps_f64_jam(mb, ea - eb);
  ulong m;
  if (((a ^ b) >> 63) == 0ul) {{
    m = ma + mb;
  }} else {{
    m = ma - mb;
    if (m == 0ul) return 0ul;
  }}
  int s = (int)clz(m) - 1;
  return tmps_f64_round(a >> 63, ea + 1 - s + k, m << s);
}}
""")

# ---- exp10 ---------------------------------------------------------------------------------------
_lib("tmps_f64_exp10", ("tmps_f64_expk", "tmps_f64_dd_round"), f"""static inline ulong tmps_f64_exp10(ulong x) {{
  if (tmps_f64_isnan(x)) return x | {QUIET};
  ulong a = x & {ABS};
  if (a < 0x3c60000000000000ul) return {ONE};  // |x| < 2^-57: |x ln10| below half an ulp of 1
  if (tmps_f64_lt({_lit(309.0)}, x)) return {INF};
  if (tmps_f64_lt(x, {_lit(-325.0)})) return 0ul;
  ulong ph = tmps_f64_mul(x, {LN10_H});
  ulong pe = tmps_f64_fma(x, {LN10_H}, ph ^ {NEG});
  pe = tmps_f64_fma(x, {LN10_L}, pe);
  ulong h, l;
  int k = tmps_f64_exp_k(ph, pe, h, l);
  return tmps_f64_dd_round(h, l, k);
}}
""")

# ---- sinpi, cospi ------------------------------------------------------------------------------
_lib("tmps_f64_sinpi_core", ("tmps_f64_sincos", "tmps_f64_dd_round"), f"""
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
_lib("tmps_f64_sinpi", ("tmps_f64_sinpi_core",),
     "static inline ulong tmps_f64_sinpi(ulong x) { return tmps_f64_sinpi_core(x, false); }\n")
_lib("tmps_f64_cospi", ("tmps_f64_sinpi_core",),
     "static inline ulong tmps_f64_cospi(ulong x) { return tmps_f64_sinpi_core(x, true); }\n")

# ---- rcbrt ---------------------------------------------------------------------------------------
_lib("tmps_f64_rcbrt", ("tmps_f64_cbrt", "tmps_f64_dd_round"), f"""
static inline ulong tmps_f64_rcbrt(ulong x) {{
  ulong a = x & {ABS}, sign = x & {NEG};
  if (tmps_f64_isnan(x)) return x | {QUIET};
  if (a == 0ul) return sign | {INF};
  if (a == {INF}) return sign;
  ulong y, c;
  int q = tmps_f64_cbrt_parts(a, y, c);  // |x| = 2^(3q) (y + c)^3
  ulong h, l;
  tmps_dd_fast(y, c, h, l);
  tmps_dd_div({ONE}, 0ul, h, l, h, l);
  return sign | tmps_f64_dd_round(h, l, -q);
}}
""")

# ---- hypot, rhypot, norm3d, norm4d, rnorm3d, rnorm4d -----------------------------------------------
_lib("tmps_f64_norm4", ("tmps_f64_dd2", "tmps_f64_dd_round"), f"""
static inline void tmps_f64_sq_acc(ulong v, thread ulong& h, thread ulong& l) {{
  // (h, l) += v^2, the square exact (fma)
  ulong p = tmps_f64_mul(v, v), pe = tmps_f64_fma(v, v, p ^ {NEG});
  tmps_dd_add(h, l, p, pe, h, l);
}}
static inline ulong tmps_f64_norm4(ulong a, ulong b, ulong c, ulong d, bool recip) {{
  // sqrt(a^2 + b^2 + c^2 + d^2) (or its reciprocal), one rounding
  a &= {ABS}; b &= {ABS}; c &= {ABS}; d &= {ABS};
  if (a == {INF} || b == {INF} || c == {INF} || d == {INF}) return recip ? 0ul : {INF};
  if (a > {INF} || b > {INF} || c > {INF} || d > {INF}) return 0x7ff8000000000000ul;
  ulong mx = a > b ? a : b;  // non-negative: the bit patterns order as the values
  mx = mx > c ? mx : c;
  mx = mx > d ? mx : d;
  if (mx == 0ul) return recip ? {INF} : 0ul;
  int e;
  tmps_f64_norm(mx, e);  // scale by 2^-e: the largest in [1, 2); what underflows is below 2^-2000 relative
  ulong h = 0ul, l = 0ul;
  tmps_f64_sq_acc(tmps_f64_ldexp(d, -e), h, l);
  tmps_f64_sq_acc(tmps_f64_ldexp(c, -e), h, l);
  tmps_f64_sq_acc(tmps_f64_ldexp(b, -e), h, l);
  tmps_f64_sq_acc(tmps_f64_ldexp(a, -e), h, l);
  tmps_dd_sqrt(h, l, h, l);
  if (recip) {{
    tmps_dd_div({ONE}, 0ul, h, l, h, l);
    e = -e;
  }}
  return tmps_f64_dd_round(h, l, e);
}}
""")
_NORMS = {
    "hypot": ("ulong x, ulong y", "x, y, 0ul, 0ul", "false"),
    "rhypot": ("ulong x, ulong y", "x, y, 0ul, 0ul", "true"),
    "norm3d": ("ulong x, ulong y, ulong z", "x, y, z, 0ul", "false"),
    "rnorm3d": ("ulong x, ulong y, ulong z", "x, y, z, 0ul", "true"),
    "norm4d": ("ulong x, ulong y, ulong z, ulong w", "x, y, z, w", "false"),
    "rnorm4d": ("ulong x, ulong y, ulong z, ulong w", "x, y, z, w", "true"),
}
for _name, (_params, _args, _recip) in _NORMS.items():
    _lib(f"tmps_f64_{_name}", ("tmps_f64_norm4",),
         f"static inline ulong tmps_f64_{_name}({_params}) {{ return tmps_f64_norm4({_args}, {_recip}); }}\n")

# ---- remainder, fdim, nextafter ------------------------------------------------------------------
_lib("tmps_f64_remainder", ("tmps_f64_cmp", "tmps_f64_sub"), f"""
static inline ulong tmps_f64_remainder(ulong x, ulong y) {{
  // exact: x - n y, n = x / y rounded to nearest, ties to even
  ulong ax = x & {ABS}, ay = y & {ABS}, sign = x & {NEG};
  if (tmps_f64_isnan(x) || tmps_f64_isnan(y)) return tmps_f64_qnan(x, y);
  if (ax == {INF} || ay == 0ul) return 0x7ff8000000000000ul;
  if (ax < ay) {{  // n = 0 or 1 (includes x == 0 and y == inf)
    if (ay == {INF} || !tmps_f64_lt(ay, tmps_f64_add(ax, ax))) return x;  // 2|x| <= |y|: n = 0 (a tie: even)
    return (sign ^ {NEG}) | tmps_f64_sub(ay, ax);  // |y|/2 < |x| < |y|: exact (Sterbenz)
  }}
  int ex, ey;
  ulong r = tmps_f64_norm(x, ex), my = tmps_f64_norm(y, ey);
  for (int d = ex - ey; d > 0; --d) {{  // binary long division, one exponent step at a time
    if (r >= my) r -= my;
    r <<= 1;
  }}
  bool odd = r >= my;  // the quotient's last bit
  if (odd) r -= my;
  if (r + r > my || (r + r == my && odd)) {{ r = my - r; sign ^= {NEG}; }}
  if (r == 0ul) return x & {NEG};
  int s = (int)clz(r) - 1;  // exact: r < 2^53, value r 2^(ey - 52)
  return tmps_f64_round(sign >> 63, ey + 10 - s, r << s);
}}
""")
_lib("tmps_f64_fdim", ("tmps_f64_cmp", "tmps_f64_sub"), """static inline ulong tmps_f64_fdim(ulong x, ulong y) {
  if (tmps_f64_isnan(x) || tmps_f64_isnan(y)) return tmps_f64_qnan(x, y);
  return tmps_f64_lt(y, x) ? tmps_f64_sub(x, y) : 0ul;
}
""")
_lib("tmps_f64_nextafter", ("tmps_f64_cmp",), f"""static inline ulong tmps_f64_nextafter(ulong x, ulong y) {{
  if (tmps_f64_isnan(x) || tmps_f64_isnan(y)) return tmps_f64_qnan(x, y);
  if (tmps_f64_eq(x, y)) return y;
  if ((x & {ABS}) == 0ul) return (y & {NEG}) | 1ul;  // the smallest subnormal toward y
  return (tmps_f64_lt(x, y) == ((x >> 63) == 0ul)) ? x + 1ul : x - 1ul;  // away from / toward zero
}}
""")

# ---- powi, ldexp / scalbn, ilogb, logb, llrint, llround -------------------------------------------
_lib("tmps_f64_powi", ("tmps_f64_pow", "tmps_f64_from_u64"),
     "static inline ulong tmps_f64_powi(ulong x, int n) { return tmps_f64_pow(x, tmps_f64_from_i64((long)n)); }\n")
_lib("tmps_f64_scalbn", ("tmps_f64_dd",), f"""static inline ulong tmps_f64_scalbn(ulong x, int n) {{
  if (tmps_f64_isnan(x)) return x | {QUIET};
  return tmps_f64_ldexp(x, clamp(n, -2200, 2200));  // one rounding; the clamp keeps e + n in range
}}
""")
_lib("tmps_f64_ilogb", ("tmps_f64_base",), f"""static inline int tmps_f64_ilogb(ulong x) {{
  // CUDA's conventions: ilogb(0) = ilogb(NaN) = INT_MIN, ilogb(+-inf) = INT_MAX
  ulong a = x & {ABS};
  if (a == 0ul || a > {INF}) return (int)0x80000000u;
  if (a == {INF}) return 0x7fffffff;
  int e;
  tmps_f64_norm(a, e);
  return e;
}}
""")
_lib("tmps_f64_logb", ("tmps_f64_ilogb", "tmps_f64_from_u64"), f"""static inline ulong tmps_f64_logb(ulong x) {{
  ulong a = x & {ABS};
  if (a > {INF}) return x | {QUIET};
  if (a == 0ul) return {NEG} | {INF};  // -inf
  if (a == {INF}) return {INF};
  return tmps_f64_from_i64((long)tmps_f64_ilogb(a));
}}
""")
_lib("tmps_f64_llrint", ("tmps_f64_rint", "tmps_f64_to_int"),
     "static inline long tmps_f64_llrint(ulong x) { return tmps_f64_to_i(tmps_f64_round_int(x, 4), 64); }\n")
_lib("tmps_f64_llround", ("tmps_f64_rint", "tmps_f64_to_int"),
     "static inline long tmps_f64_llround(ulong x) { return tmps_f64_to_i(tmps_f64_round_int(x, 3), 64); }\n")

# libdevice symbol (tmps_<key>) -> the MSL function (each the name of its library entry)
FUNCS = {
    "exp10": "tmps_f64_exp10", "sinpi": "tmps_f64_sinpi", "cospi": "tmps_f64_cospi", "rcbrt": "tmps_f64_rcbrt",
    "hypot": "tmps_f64_hypot", "rhypot": "tmps_f64_rhypot", "norm3d": "tmps_f64_norm3d",
    "rnorm3d": "tmps_f64_rnorm3d", "norm4d": "tmps_f64_norm4d", "rnorm4d": "tmps_f64_rnorm4d",
    "remainder": "tmps_f64_remainder", "fdim": "tmps_f64_fdim", "nextafter": "tmps_f64_nextafter",
    "powi": "tmps_f64_powi", "ldexp": "tmps_f64_scalbn", "ilogb": "tmps_f64_ilogb", "logb": "tmps_f64_logb",
    "f2i_rint": "tmps_f64_llrint", "f2i_round": "tmps_f64_llround",
}
