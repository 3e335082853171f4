"""The core of software binary64: IEEE binary64 carried as `ulong` bits, computed with integer
arithmetic (add, sub, mul, div, sqrt, fma, comparisons, min/max, conversions, rounding to
integers). The design and its conventions: mslib/fp64.py, the module lowerings call.
"""

from __future__ import annotations

from .registry import entry

entry("tmps_f64_base", (), """static inline bool tmps_f64_isnan(ulong a) {
  return (a & 0x7ffffffffffffffful) > 0x7ff0000000000000ul;
}
static inline ulong tmps_f64_qnan(ulong a, ulong b) {
  // a NaN operand's payload, quieted (the first NaN, as x86 and ARM return)
  return (tmps_f64_isnan(a) ? a : b) | 0x0008000000000000ul;
}
static inline ulong tmps_f64_total_key(ulong b) {
  // IEEE totalOrder as an unsigned order: negatives reversed below positives
  return (b >> 63) != 0ul ? ~b : b | 0x8000000000000000ul;
}
static inline ulong tmps_f64_jam(ulong m, int d) {
  // m >> d with the bits shifted out OR-ed into bit 0 (sticky)
  if (d <= 0) return m;
  if (d >= 64) return (ulong)(m != 0ul);
  return (m >> d) | (ulong)((m << (64 - d)) != 0ul);
}
static inline ulong tmps_f64_norm(ulong a, thread int& e) {
  // finite nonzero a: significand with its leading 1 at bit 52, value = sig * 2^(e - 52)
  int be = (int)((a >> 52) & 0x7fful);
  ulong m = a & 0x000ffffffffffffful;
  if (be == 0) {
    int s = (int)clz(m) - 11;
    e = -1022 - s;
    return m << s;
  }
  e = be - 1023;
  return m | 0x0010000000000000ul;
}
static inline ulong tmps_f64_round(ulong sign, int e, ulong sig) {
  // sig: leading 1 at bit 62, bit 0 sticky; value = sig * 2^(e - 62). Round to nearest even.
  int x = e + 1022;  // biased exponent - 1: the hidden bit of the rounded significand adds the 1
  if (x < 0) {
    sig = tmps_f64_jam(sig, -x);  // subnormal (or zero) result
    x = 0;
  } else if (x >= 0x7fd) {
    if (x > 0x7fd || sig + 0x200ul >= 0x8000000000000000ul) return (sign << 63) | 0x7ff0000000000000ul;
  }
  ulong rest = sig & 0x3fful;
  sig = (sig + 0x200ul) >> 10;
  if (rest == 0x200ul) sig &= ~1ul;  // a tie: to even
  return (sign << 63) + ((ulong)x << 52) + sig;  // a carry out of the significand bumps the exponent
}
static inline ulong tmps_f64_overflow(ulong sign, int mode) {
  // an overflowing result: inf when `mode` rounds away from zero for this sign, else the largest finite
  bool inf = mode == 0 || (mode == 2 && sign != 0ul) || (mode == 3 && sign == 0ul);
  return (sign << 63) | (inf ? 0x7ff0000000000000ul : 0x7feffffffffffffful);
}
static inline ulong tmps_f64_round_m(ulong sign, int e, ulong sig, int mode) {
  // tmps_f64_round with a rounding mode (libdevice's _rn/_rz/_rd/_ru): 0 nearest even, 1 toward zero,
  // 2 down (toward -inf), 3 up (toward +inf)
  int x = e + 1022;
  if (x < 0) {
    sig = tmps_f64_jam(sig, -x);
    x = 0;
  } else if (x > 0x7fd) {
    return tmps_f64_overflow(sign, mode);
  }
  ulong rest = sig & 0x3fful, m = sig >> 10;
  bool up = mode == 0 ? (rest > 0x200ul || (rest == 0x200ul && (m & 1ul) != 0ul))
                      : (mode != 1 && rest != 0ul && (mode == 2) == (sign != 0ul));
  ulong r = ((ulong)x << 52) + m + (ulong)up;  // a carry out of the significand bumps the exponent
  return r >= 0x7ff0000000000000ul ? tmps_f64_overflow(sign, mode) : (sign << 63) | r;
}
""")

entry("tmps_f64_add", ("tmps_f64_base",), """static inline ulong tmps_f64_add_m(ulong a, ulong b, int mode) {
  ulong aa = a & 0x7ffffffffffffffful, ab = b & 0x7ffffffffffffffful;
  if (aa > 0x7ff0000000000000ul || ab > 0x7ff0000000000000ul) return tmps_f64_qnan(a, b);
  if (aa == 0x7ff0000000000000ul) return (ab == aa && ((a ^ b) >> 63) != 0ul) ? 0x7ff8000000000000ul : a;
  if (ab == 0x7ff0000000000000ul) return b;
  if (aa == 0ul) return ab == 0ul ? (mode == 2 ? a | b : a & b) : b;  // -0 + -0 = -0, +0 + -0 = +0 (-0 down)
  if (ab == 0ul) return a;
  if (ab > aa) { ulong t = a; a = b; b = t; }  // |a| >= |b|
  int ea, eb;
  ulong ma = tmps_f64_norm(a, ea) << 9, mb = tmps_f64_norm(b, eb) << 9;  // leading 1 at bit 61
  mb = tmps_f64_jam(mb, ea - eb);
  ulong m;
  if (((a ^ b) >> 63) == 0ul) {
    m = ma + mb;
  } else {
    m = ma - mb;
    if (m == 0ul) return mode == 2 ? 0x8000000000000000ul : 0ul;  // x - x = +0 (-0 rounding down)
  }
  int s = (int)clz(m) - 1;  // leading 1 to bit 62
  return tmps_f64_round_m(a >> 63, ea + 1 - s, m << s, mode);
}
static inline ulong tmps_f64_add(ulong a, ulong b) { return tmps_f64_add_m(a, b, 0); }
""")

entry("tmps_f64_sub", ("tmps_f64_add",), """static inline ulong tmps_f64_sub_m(ulong a, ulong b, int mode) {
  return tmps_f64_add_m(a, tmps_f64_isnan(b) ? b : b ^ 0x8000000000000000ul, mode);
}
static inline ulong tmps_f64_sub(ulong a, ulong b) { return tmps_f64_sub_m(a, b, 0); }
""")

entry("tmps_f64_mul", ("tmps_f64_base",), """static inline ulong tmps_f64_mul_m(ulong a, ulong b, int mode) {
  ulong sign = (a ^ b) >> 63;
  ulong aa = a & 0x7ffffffffffffffful, ab = b & 0x7ffffffffffffffful;
  if (aa > 0x7ff0000000000000ul || ab > 0x7ff0000000000000ul) return tmps_f64_qnan(a, b);
  if (aa == 0x7ff0000000000000ul || ab == 0x7ff0000000000000ul)
    return (aa == 0ul || ab == 0ul) ? 0x7ff8000000000000ul : (sign << 63) | 0x7ff0000000000000ul;
  if (aa == 0ul || ab == 0ul) return sign << 63;
  int ea, eb;
  ulong ma = tmps_f64_norm(a, ea) << 10, mb = tmps_f64_norm(b, eb) << 11;  // leading 1 at 62, 63
  ulong hi = mulhi(ma, mb), lo = ma * mb;  // product: leading 1 at bit 125 or 126 of 128
  int e = ea + eb + 1;
  if (hi < 0x4000000000000000ul) {
    hi = (hi << 1) | (lo >> 63);
    lo <<= 1;
    e -= 1;
  }
  return tmps_f64_round_m(sign, e, hi | (ulong)(lo != 0ul), mode);
}
static inline ulong tmps_f64_mul(ulong a, ulong b) { return tmps_f64_mul_m(a, b, 0); }
""")

entry("tmps_f64_div", ("tmps_f64_base",), """static inline ulong tmps_f64_div_m(ulong a, ulong b, int mode) {
  ulong sign = (a ^ b) >> 63;
  ulong aa = a & 0x7ffffffffffffffful, ab = b & 0x7ffffffffffffffful;
  if (aa > 0x7ff0000000000000ul || ab > 0x7ff0000000000000ul) return tmps_f64_qnan(a, b);
  if (aa == 0x7ff0000000000000ul)
    return ab == 0x7ff0000000000000ul ? 0x7ff8000000000000ul : (sign << 63) | 0x7ff0000000000000ul;
  if (ab == 0x7ff0000000000000ul) return sign << 63;
  if (ab == 0ul) return aa == 0ul ? 0x7ff8000000000000ul : (sign << 63) | 0x7ff0000000000000ul;
  if (aa == 0ul) return sign << 63;
  int ea, eb;
  ulong ma = tmps_f64_norm(a, ea), mb = tmps_f64_norm(b, eb);
  int e = ea - eb;
  if (ma < mb) { ma <<= 1; e -= 1; }  // quotient in [1, 2)
  // restoring division, one quotient bit per step: 55 bits (leading 1 at bit 54)
  ulong q = 0ul, r = ma;
  for (int i = 0; i < 55; ++i) {
    q <<= 1;
    if (r >= mb) { r -= mb; q |= 1ul; }
    r <<= 1;
  }
  return tmps_f64_round_m(sign, e, (q << 8) | (ulong)(r != 0ul), mode);
}
static inline ulong tmps_f64_div(ulong a, ulong b) { return tmps_f64_div_m(a, b, 0); }
""")

entry("tmps_f64_sqrt", ("tmps_f64_base",), """static inline ulong tmps_f64_sqrt_m(ulong a, int mode) {
  if (tmps_f64_isnan(a)) return a | 0x0008000000000000ul;
  if ((a & 0x7ffffffffffffffful) == 0ul) return a;  // sqrt(-0) = -0
  if ((a >> 63) != 0ul) return 0x7ff8000000000000ul;
  if (a == 0x7ff0000000000000ul) return a;
  int e;
  ulong m = tmps_f64_norm(a, e);
  if ((e & 1) != 0) { m <<= 1; e -= 1; }  // even exponent: m in [2^52, 2^54)
  // digit-by-digit square root of m * 2^56: 55 root bits, two radicand bits per step
  ulong root = 0ul, rem = 0ul;
  for (int i = 0; i < 55; ++i) {
    ulong two = i <= 26 ? (m >> (52 - 2 * i)) & 3ul : 0ul;
    rem = (rem << 2) | two;
    ulong trial = (root << 2) | 1ul;
    root <<= 1;
    if (rem >= trial) { rem -= trial; root |= 1ul; }
  }
  return tmps_f64_round_m(0ul, e / 2, (root << 8) | (ulong)(rem != 0ul), mode);
}
static inline ulong tmps_f64_sqrt(ulong a) { return tmps_f64_sqrt_m(a, 0); }
""")

entry("tmps_f64_fma", ("tmps_f64_add", "tmps_f64_mul"), """
static inline void tmps_u128_shr_jam(thread ulong& h, thread ulong& l, int d) {
  // (h:l) >> d with the bits shifted out OR-ed into bit 0
  if (d <= 0) return;
  if (d >= 128) { l = (ulong)((h | l) != 0ul); h = 0ul; return; }
  if (d >= 64) {
    ulong sticky = (ulong)(l != 0ul || (d > 64 && (h << (128 - d)) != 0ul));
    l = (d == 64 ? h : h >> (d - 64)) | sticky;
    h = 0ul;
    return;
  }
  ulong sticky = (ulong)((l << (64 - d)) != 0ul);
  l = (l >> d) | (h << (64 - d)) | sticky;
  h >>= d;
}
static inline ulong tmps_f64_fma_m(ulong a, ulong b, ulong c, int mode) {
  // a * b + c with one rounding
  ulong aa = a & 0x7ffffffffffffffful, ab = b & 0x7ffffffffffffffful, ac = c & 0x7ffffffffffffffful;
  if (aa > 0x7ff0000000000000ul || ab > 0x7ff0000000000000ul || ac > 0x7ff0000000000000ul)
    return tmps_f64_qnan(tmps_f64_isnan(a) || tmps_f64_isnan(b) ? a : c, tmps_f64_isnan(b) ? b : c);
  ulong sp = (a ^ b) >> 63;
  if (aa == 0x7ff0000000000000ul || ab == 0x7ff0000000000000ul) {
    if (aa == 0ul || ab == 0ul) return 0x7ff8000000000000ul;
    if (ac == 0x7ff0000000000000ul && (c >> 63) != sp) return 0x7ff8000000000000ul;
    return (sp << 63) | 0x7ff0000000000000ul;
  }
  if (ac == 0x7ff0000000000000ul) return c;
  if (aa == 0ul || ab == 0ul) return tmps_f64_add_m(sp << 63, c, mode);  // exact zero product
  if (ac == 0ul) return tmps_f64_mul_m(a, b, mode);  // the exact sum is the nonzero product: its sign wins
  int ea, eb, ec;
  ulong ma = tmps_f64_norm(a, ea), mb = tmps_f64_norm(b, eb), mc = tmps_f64_norm(c, ec);
  // 128-bit fixed point with the leading bit at 124 (or 125): value = X * 2^(E - 124)
  ulong lo = ma * mb, hi = mulhi(ma, mb);  // leading 1 at bit 104 or 105
  ulong ph = (hi << 20) | (lo >> 44), pl = lo << 20;
  ulong ch = mc << 8, cl = 0ul;
  int ep = ea + eb, e;
  if (ep >= ec) { tmps_u128_shr_jam(ch, cl, ep - ec); e = ep; }
  else { tmps_u128_shr_jam(ph, pl, ec - ep); e = ec; }
  ulong sign, sh, sl;
  if (sp == (c >> 63)) {
    sl = pl + cl;
    sh = ph + ch + (ulong)(sl < pl);
    sign = sp;
  } else if (ph > ch || (ph == ch && pl >= cl)) {
    sl = pl - cl;
    sh = ph - ch - (ulong)(pl < cl);
    sign = sp;
  } else {
    sl = cl - pl;
    sh = ch - ph - (ulong)(cl < pl);
    sign = c >> 63;
  }
  if ((sh | sl) == 0ul) return mode == 2 ? 0x8000000000000000ul : 0ul;  // exact cancellation: +0 (-0 down)
  int lz = sh != 0ul ? (int)clz(sh) : 64 + (int)clz(sl);
  int s = lz - 1;  // leading 1 to bit 126
  if (s >= 64) { sh = sl << (s - 64); sl = 0ul; }
  else if (s > 0) { sh = (sh << s) | (sl >> (64 - s)); sl <<= s; }
  return tmps_f64_round_m(sign, e + 2 - s, sh | (ulong)(sl != 0ul), mode);
}
static inline ulong tmps_f64_fma(ulong a, ulong b, ulong c) { return tmps_f64_fma_m(a, b, c, 0); }
""")

# ---- comparisons and min/max -------------------------------------------------------------------

entry("tmps_f64_cmp", ("tmps_f64_base",), """static inline long tmps_f64_key(ulong a) {
  // a signed integer order of the values (non-NaN a): -0 and +0 both map to 0
  return (a >> 63) != 0ul ? -(long)(a & 0x7ffffffffffffffful) : (long)a;
}
static inline bool tmps_f64_lt(ulong a, ulong b) {
  return !tmps_f64_isnan(a) && !tmps_f64_isnan(b) && tmps_f64_key(a) < tmps_f64_key(b);
}
static inline bool tmps_f64_le(ulong a, ulong b) {
  return !tmps_f64_isnan(a) && !tmps_f64_isnan(b) && tmps_f64_key(a) <= tmps_f64_key(b);
}
static inline bool tmps_f64_eq(ulong a, ulong b) {
  return !tmps_f64_isnan(a) && !tmps_f64_isnan(b) && tmps_f64_key(a) == tmps_f64_key(b);
}
static inline bool tmps_f64_uno(ulong a, ulong b) { return tmps_f64_isnan(a) || tmps_f64_isnan(b); }
""")

entry("tmps_f64_minmax", ("tmps_f64_cmp",), """static inline long tmps_f64_tkey(ulong a) {
  // IEEE totalOrder key of non-NaN a: -0 < +0
  return (a >> 63) != 0ul ? -(long)(a & 0x7ffffffffffffffful) - 1l : (long)a;
}
static inline ulong tmps_f64_maximum(ulong a, ulong b) {
  // NaN-propagating (LLVM maximum), -0 < +0
  if (tmps_f64_isnan(a) || tmps_f64_isnan(b)) return tmps_f64_qnan(a, b);
  return tmps_f64_tkey(a) >= tmps_f64_tkey(b) ? a : b;
}
static inline ulong tmps_f64_minimum(ulong a, ulong b) {
  if (tmps_f64_isnan(a) || tmps_f64_isnan(b)) return tmps_f64_qnan(a, b);
  return tmps_f64_tkey(a) <= tmps_f64_tkey(b) ? a : b;
}
static inline ulong tmps_f64_maxnum(ulong a, ulong b) {
  // a NaN operand is ignored (LLVM maxnum / C fmax), -0 < +0
  if (tmps_f64_isnan(a)) return tmps_f64_isnan(b) ? tmps_f64_qnan(a, b) : b;
  if (tmps_f64_isnan(b)) return a;
  return tmps_f64_tkey(a) >= tmps_f64_tkey(b) ? a : b;
}
static inline ulong tmps_f64_minnum(ulong a, ulong b) {
  if (tmps_f64_isnan(a)) return tmps_f64_isnan(b) ? tmps_f64_qnan(a, b) : b;
  if (tmps_f64_isnan(b)) return a;
  return tmps_f64_tkey(a) <= tmps_f64_tkey(b) ? a : b;
}
""")

# ---- conversions -------------------------------------------------------------------------------

entry("tmps_f64_from_f32", (), """static inline ulong tmps_f64_from_f32(float x) {
  // exact
  uint u = as_type<uint>(x);
  ulong sign = (ulong)(u >> 31) << 63;
  uint be = (u >> 23) & 0xffu, m = u & 0x7fffffu;
  if (be == 0xffu) return sign | 0x7ff0000000000000ul | ((ulong)m << 29);  // inf, NaN (payload kept)
  if (be == 0u) {
    if (m == 0u) return sign;
    int s = (int)clz(m) - 8;  // subnormal: normalize (leading 1 to bit 23)
    return sign | ((ulong)(1023 - 126 - s) << 52) | ((ulong)((m << s) & 0x7fffffu) << 29);
  }
  return sign | ((ulong)(be + 896u) << 52) | ((ulong)m << 29);
}
""")

entry("tmps_f64_from_u64", ("tmps_f64_base",), """static inline ulong tmps_f64_from_mag(ulong sign, ulong u) {
  // sign, magnitude -> nearest binary64
  if (u == 0ul) return 0ul;
  int lz = (int)clz(u);
  u <<= lz;  // leading 1 at bit 63
  return tmps_f64_round(sign, 63 - lz, (u >> 1) | (u & 1ul));
}
static inline ulong tmps_f64_from_u64(ulong u) { return tmps_f64_from_mag(0ul, u); }
static inline ulong tmps_f64_from_i64(long i) {
  return i < 0l ? tmps_f64_from_mag(1ul, 0ul - (ulong)i) : tmps_f64_from_mag(0ul, (ulong)i);
}
""")

entry("tmps_f64_to_int", ("tmps_f64_base",), """static inline ulong tmps_f64_trunc_mag(ulong a, thread bool& big) {
  // |a| truncated to an integer; big when |a| >= 2^64 (or inf)
  int be = (int)((a >> 52) & 0x7fful);
  big = be >= 1023 + 64;
  if (be < 1023 || big) return 0ul;
  ulong m = (a & 0x000ffffffffffffful) | 0x0010000000000000ul;
  int e = be - 1023;
  return e >= 52 ? m << (e - 52) : m >> (52 - e);
}
static inline long tmps_f64_to_i(ulong a, int bits) {
  // toward zero, saturating to the bits-wide signed range; NaN -> 0 (CUDA's cvt.rzi)
  if (tmps_f64_isnan(a)) return 0l;
  bool big;
  ulong m = tmps_f64_trunc_mag(a, big);
  ulong lim = 1ul << (bits - 1);  // |MIN|
  if ((a >> 63) != 0ul) return (big || m >= lim) ? -(long)(lim - 1ul) - 1l : -(long)m;
  return (big || m >= lim) ? (long)(lim - 1ul) : (long)m;
}
static inline ulong tmps_f64_to_u(ulong a, int bits) {
  // toward zero, saturating to [0, 2^bits - 1]; NaN and negatives -> 0
  if (tmps_f64_isnan(a) || (a >> 63) != 0ul) return 0ul;
  bool big;
  ulong m = tmps_f64_trunc_mag(a, big);
  ulong mx = bits == 64 ? ~0ul : (1ul << bits) - 1ul;
  return (big || m > mx) ? mx : m;
}
""")


def narrow_helper(key: str, ebits: int, mbits: int, mode: str) -> tuple[str, str]:
    """(name, text) of binary64 bits -> an IEEE format's bits (uint) with `ebits`/`mbits`,
    rounding `mode`: "rtne", "rtz" or "odd" (round to odd: sticky in the last bit, so that
    a second rounding to a format >= 2 bits narrower is correct)."""
    name = f"tmps_f64_to_{key}_{mode}"
    bias = (1 << (ebits - 1)) - 1
    emax = (1 << ebits) - 1
    inc = {"rtne": "if (rem > half || (rem == half && (mant & 1ul) != 0ul)) mant += 1ul;",
           "rtz": "", "odd": "if (rem != 0ul) mant |= 1ul;"}[mode]
    over = "inf" if mode == "rtne" else "max"
    text = f"""static inline uint {name}(ulong a) {{
  // binary64 -> {key} bits ({ebits}-bit exponent, {mbits}-bit fraction), {mode}
  ulong sign = (a >> 63) << {ebits + mbits};
  ulong inf = {emax}ul << {mbits};
  int be = (int)((a >> 52) & 0x7fful);
  ulong f = a & 0x000ffffffffffffful;
  if (be == 0x7ff) return (uint)(sign | inf | (f != 0ul ? (1ul << {mbits - 1}) | (f >> {52 - mbits}) : 0ul));
  if ((a & 0x7ffffffffffffffful) == 0ul) return (uint)sign;
  int e;
  ulong m = tmps_f64_norm(a, e);  // leading 1 at bit 52
  int te = e + {bias};  // target biased exponent
  if (te >= {emax}) return (uint)(sign | {"inf" if over == "inf" else "(inf - 1ul)"});
  int sh = {52 - mbits} + (te >= 1 ? 0 : 1 - te);
  ulong mant, rem, half;
  if (sh >= 64) {{ mant = 0ul; rem = 1ul; half = 2ul; }}  // far below the smallest subnormal
  else {{ mant = m >> sh; rem = m & ((1ul << sh) - 1ul); half = 1ul << (sh - 1); }}
  {inc}
  ulong r = ((ulong)(te >= 1 ? te - 1 : 0) << {mbits}) + mant;  // carries into the exponent
  if (r >= inf) r = {"inf" if over == "inf" else "inf - 1ul"};
  return (uint)(sign | r);
}}
"""
    return name, text


# ---- rounding to integers, sign operations ------------------------------------------------------

entry("tmps_f64_rint", ("tmps_f64_base",), """static inline ulong tmps_f64_round_int(ulong a, int mode) {
  // to an integral value: mode 0 toward zero, 1 floor, 2 ceil, 3 nearest (ties away), 4 nearest even
  int be = (int)((a >> 52) & 0x7fful);
  if (be >= 1023 + 52) return tmps_f64_isnan(a) ? a | 0x0008000000000000ul : a;  // integral, inf, NaN
  ulong sign = a & 0x8000000000000000ul;
  bool neg = sign != 0ul;
  if (be < 1023) {  // |a| < 1
    if ((a & 0x7ffffffffffffffful) == 0ul) return a;
    bool one = mode == 1 ? neg : mode == 2 ? !neg : mode == 3 ? be == 1022
               : (mode == 4 && be == 1022 && (a & 0x000ffffffffffffful) != 0ul);
    return sign | (one ? 0x3ff0000000000000ul : 0ul);
  }
  ulong frac = 0x000ffffffffffffful >> (be - 1023);  // fraction bits of a
  if ((a & frac) == 0ul) return a;
  ulong t = a & ~frac;  // toward zero
  ulong unit = frac + 1ul;  // one unit in the last integer place, in the same binade
  bool up;
  if (mode == 0) up = false;
  else if (mode == 1) up = neg;
  else if (mode == 2) up = !neg;
  else {
    ulong r = a & frac, h = unit >> 1;
    up = r > h || (r == h && (mode == 3 || (t & unit) != 0ul));
  }
  return up ? t + unit : t;  // a carry into the exponent is the next binade: exact
}
""")
