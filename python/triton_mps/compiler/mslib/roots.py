"""Roots on software binary64, within 1 ulp.

- rsqrt: the double-rounded quotient 1/sqrt(x), then one Newton step with an exact residual;
- cbrt: a float guess (exp2(log2(m)/3)), then two Newton corrections with exact residuals;
  rcbrt: the same two steps kept as y + c, 1/(y + c) in double-double;
- hypot, rhypot, norm3d, norm4d, rnorm3d, rnorm4d: the arguments scaled (exactly) by 2^-e, e the
  largest one's exponent, the sum of the squares in double-double (each square exact with fma),
  its double-double square root (and reciprocal), rounded once at the scale 2^e (2^-e); an
  infinite argument gives +inf (0 for the reciprocals) even with a NaN, as C's hypot.
"""

from __future__ import annotations

from .consts import ABS, INF, NEG, ONE, QUIET, lit
from .registry import entry

# ---- rsqrt -------------------------------------------------------------------------------------
entry("tmps_f64_rsqrt", ("tmps_f64_dd", "tmps_f64_div", "tmps_f64_sqrt"), """
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

# ---- cbrt --------------------------------------------------------------------------------------
entry("tmps_f64_cbrt", ("tmps_f64_dd2", "tmps_f64_from_f32"), f"""
// a (finite, > 0) = 2^(3q) mv with mv in [1, 8): returns q and cbrt(mv) as y + c (~2^-80 relative;
// tmps_f64_rcbrt uses the pair).
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
    c = tmps_f64_div(rh, tmps_f64_mul(sq, {lit(3.0)}));
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


# ---- rcbrt ---------------------------------------------------------------------------------------
entry("tmps_f64_rcbrt", ("tmps_f64_cbrt", "tmps_f64_dd_round"), f"""
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
entry("tmps_f64_norm4", ("tmps_f64_dd2", "tmps_f64_dd_round"), f"""
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
    entry(f"tmps_f64_{_name}", ("tmps_f64_norm4",),
         f"static inline ulong tmps_f64_{_name}({_params}) {{ return tmps_f64_norm4({_args}, {_recip}); }}\n")
