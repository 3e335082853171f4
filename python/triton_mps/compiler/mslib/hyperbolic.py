"""Inverse hyperbolic functions on software binary64 (asinh, acosh, atanh), within 1 ulp:
logarithms of double-double arguments (log(h + l) = log_dd(h) + l/h). sinh, cosh, tanh share the
exp_k entry of explog.py (they are double-double formulas over expm1).
"""

from __future__ import annotations

from .consts import LN2_H, LN2_L, NEG, ONE
from .registry import entry

# ---- asinh, acosh, atanh -----------------------------------------------------------------------
entry("tmps_f64_ahyp", ("tmps_f64_log_dd",), f"""
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
