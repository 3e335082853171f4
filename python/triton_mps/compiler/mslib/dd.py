"""Double-double arithmetic on software binary64 (an unevaluated sum hi + lo, ~106 bits): two_sum,
fast_two_sum, fma-based products, sums, ldexp (tmps_f64_dd); division and square root (tmps_f64_dd2);
(h + l) 2^k with one rounding, subnormal results included (tmps_f64_dd_round). Every function
family builds on these.
"""

from __future__ import annotations

from .consts import ABS
from .registry import entry

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
entry("tmps_f64_dd", ("tmps_f64_fma", "tmps_f64_sub", "tmps_f64_rint", "tmps_f64_to_int", "tmps_f64_cmp"), _DD)


# ---- double-double division and square root ----------------------------------------------------
entry("tmps_f64_dd2", ("tmps_f64_dd", "tmps_f64_div", "tmps_f64_sqrt", "tmps_f64_from_u64"), """
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


# ---- (h + l) 2^k rounded once ------------------------------------------------------------------
entry("tmps_f64_dd_round", ("tmps_f64_dd",), f"""static inline ulong tmps_f64_dd_round(ulong a, ulong b, int k) {{
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
