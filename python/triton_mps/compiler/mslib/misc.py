"""The exact functions of software binary64 (and rcp64h).

- fmod: exact (binary long division over the exponent difference); remainder: exact, fmod's long
  division keeping the quotient's last bit (ties to the even quotient); fdim: x > y ? x - y : +0
  (one correctly rounded subtraction); nextafter: one step of the bit pattern;
- powi(x, n) = pow(x, (double)n) (C99 Annex F cases of pow, within 1 ulp); ldexp/scalbn one
  rounding (subnormal results correctly rounded); ilogb (CUDA's conventions: INT_MIN for 0 and
  NaN, INT_MAX for inf); logb(0) = -inf, logb(+-inf) = +inf; llrint (ties to even) and llround
  (ties away) to int64, saturating, NaN -> 0 (as float2ll_rn);
- rcp64h: CUDA's rcp.approx.ftz.f64 (below).
"""

from __future__ import annotations

from .consts import ABS, INF, NEG, QUIET
from .registry import entry

# ---- fmod --------------------------------------------------------------------------------------
entry("tmps_f64_fmod", ("tmps_f64_base",), """static inline ulong tmps_f64_fmod(ulong x, ulong y) {
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


# ---- remainder, fdim, nextafter ------------------------------------------------------------------
entry("tmps_f64_remainder", ("tmps_f64_cmp", "tmps_f64_sub"), f"""
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
entry("tmps_f64_fdim", ("tmps_f64_cmp", "tmps_f64_sub"), """static inline ulong tmps_f64_fdim(ulong x, ulong y) {
  if (tmps_f64_isnan(x) || tmps_f64_isnan(y)) return tmps_f64_qnan(x, y);
  return tmps_f64_lt(y, x) ? tmps_f64_sub(x, y) : 0ul;
}
""")
entry("tmps_f64_nextafter", ("tmps_f64_cmp",), f"""static inline ulong tmps_f64_nextafter(ulong x, ulong y) {{
  if (tmps_f64_isnan(x) || tmps_f64_isnan(y)) return tmps_f64_qnan(x, y);
  if (tmps_f64_eq(x, y)) return y;
  if ((x & {ABS}) == 0ul) return (y & {NEG}) | 1ul;  // the smallest subnormal toward y
  return (tmps_f64_lt(x, y) == ((x >> 63) == 0ul)) ? x + 1ul : x - 1ul;  // away from / toward zero
}}
""")

# ---- powi, ldexp / scalbn, ilogb, logb, llrint, llround -------------------------------------------
entry("tmps_f64_powi", ("tmps_f64_pow", "tmps_f64_from_u64"),
     "static inline ulong tmps_f64_powi(ulong x, int n) { return tmps_f64_pow(x, tmps_f64_from_i64((long)n)); }\n")
entry("tmps_f64_scalbn", ("tmps_f64_dd",), f"""static inline ulong tmps_f64_scalbn(ulong x, int n) {{
  if (tmps_f64_isnan(x)) return x | {QUIET};
  return tmps_f64_ldexp(x, clamp(n, -2200, 2200));  // one rounding; the clamp keeps e + n in range
}}
""")
entry("tmps_f64_ilogb", ("tmps_f64_base",), f"""static inline int tmps_f64_ilogb(ulong x) {{
  // CUDA's conventions: ilogb(0) = ilogb(NaN) = INT_MIN, ilogb(+-inf) = INT_MAX
  ulong a = x & {ABS};
  if (a == 0ul || a > {INF}) return (int)0x80000000u;
  if (a == {INF}) return 0x7fffffff;
  int e;
  tmps_f64_norm(a, e);
  return e;
}}
""")
entry("tmps_f64_logb", ("tmps_f64_ilogb", "tmps_f64_from_u64"), f"""static inline ulong tmps_f64_logb(ulong x) {{
  ulong a = x & {ABS};
  if (a > {INF}) return x | {QUIET};
  if (a == 0ul) return {NEG} | {INF};  // -inf
  if (a == {INF}) return {INF};
  return tmps_f64_from_i64((long)tmps_f64_ilogb(a));
}}
""")
entry("tmps_f64_llrint", ("tmps_f64_rint", "tmps_f64_to_int"),
     "static inline long tmps_f64_llrint(ulong x) { return tmps_f64_to_i(tmps_f64_round_int(x, 4), 64); }\n")
entry("tmps_f64_llround", ("tmps_f64_rint", "tmps_f64_to_int"),
     "static inline long tmps_f64_llround(ulong x) { return tmps_f64_to_i(tmps_f64_round_int(x, 3), 64); }\n")

# libdevice symbol (tmps_<key>) -> the MSL function (each the name of its library entry)

# ---- rcp64h -----------------------------------------------------------------------------------
# CUDA's rcp.approx.ftz.f64: the reciprocal of the upper 32 bits of x (1 sign, 11 exponent, 20
# fraction bits) with the low 32 bits of the result zero, subnormal inputs and results flushed to
# zero. Here: 1/hi(x) correctly rounded, then rounded to nearest even at 20 fraction bits
# (deterministic, within 2^-21 relative of 1/hi(x); CUDA documents only an approximation).
entry("tmps_f64_sp_rcp64h", ("tmps_f64_div",), """static inline ulong tmps_f64_rcp64h(ulong x) {
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
