"""Rounding modes: libdevice's directed-rounding arithmetic and conversions (the _rn/_rz/_rd/_ru
names), in integer arithmetic, correctly rounded in every mode.

Modes are small integers passed to the MSL helpers (constants at every call site, so the
compiler folds them): 0 to nearest even, 1 toward zero, 2 down (toward -inf), 3 up (toward +inf).

float64 (`add/sub/mul/div/sqrt/fma/rcp_{rz,rd,ru}` on fp64, ll2double_*, ull2double_*): the
software binary64 primitives of mslib/core.py take the mode in their last rounding step
(`tmps_f64_round_m`); the nearest-even ops are those primitives with mode 0. The exact result
(or, for div and sqrt, the truncated result and a sticky remainder bit) is rounded once.

float32 (`add/sub/mul/div/sqrt/fma/rcp_*` on fp32, int2float_*, ..., double2float_*): computed
here on the operands' bits, never with the GPU's float unit (which rounds to nearest only):
- `tmps_f32_round_m(sign, e, sig, mode)` rounds a significand with its leading 1 at bit 62 and
  a sticky bit 0 to binary32 (overflow per mode, gradual underflow), as tmps_f64_round_m does;
- mul: the 48-bit product of the 24-bit significands is exact in a ulong;
- add/sub/fma: the two addends (for fma the exact 48-bit product) are aligned at bit 61 in a
  ulong, the smaller shifted right with the bits shifted out OR-ed into bit 0 (sticky). The
  larger addend has zeros below bit 14, so the computed sum is either exact or strictly inside
  the same interval between two even integers as the exact sum, and every rounding boundary
  (bit 38 and up after normalization, which moves the sticky bit up at most 2 places when it
  is set) is such an even integer: the rounding is the exact sum's in every mode. An exactly zero
  sum is +0, or -0 when rounding down (IEEE 754 6.3);
- div: one 64-bit integer division (24-bit significand << 40) / 24-bit significand gives a
  40/41-bit truncated quotient; the remainder's being nonzero is the sticky bit;
- sqrt: the 27-bit integer square root R of the significand scaled to 2^52..2^54 (a float
  estimate, one integer Newton step, then exact R*R comparisons fix it to floor(sqrt)); sticky =
  R*R != radicand.
No result passes through a second rounding, so there is no double-rounding issue (rounding the
nearest-even float64 result again toward zero would be wrong: a quotient just below a float32 f
whose nearest float64 is f gives f, where toward zero is the float32 below f).

Conversions: double2float_* rounds the float64 significand with tmps_f32_round_m; {int, uint,
ll, ull}2float_* and ll/ull2double_* round the integer's magnitude (leading 1 moved to bit 63);
double2{int,uint,ll,ull}_* round to an integral float64 in the mode (tmps_f64_round_int) and
then saturate as float2int_* do (NaN -> 0, out of range -> the nearest bound).
"""

from __future__ import annotations

from .registry import entry

# (fp32-only entries do not depend on the tmps_f64_* ones: a kernel using a helper named tmps_f64*
# gets the "float64 is emulated" warning)
entry("tmps_f32_round", (), """static inline ulong tmps_f32_jam(ulong m, int d) {
  // m >> d with the bits shifted out OR-ed into bit 0 (sticky)
  if (d <= 0) return m;
  if (d >= 64) return (ulong)(m != 0ul);
  return (m >> d) | (ulong)((m << (64 - d)) != 0ul);
}
static inline uint tmps_f32_overflow(uint sign, int mode) {
  // an overflowing binary32 result: inf when `mode` rounds away from zero for this sign, else the largest
  // finite value
  bool inf = mode == 0 || (mode == 2 && sign != 0u) || (mode == 3 && sign == 0u);
  return (sign << 31) | (inf ? 0x7f800000u : 0x7f7fffffu);
}
static inline uint tmps_f32_round_m(uint sign, int e, ulong sig, int mode) {
  // sig: leading 1 at bit 62, bit 0 sticky; value = sig * 2^(e - 62). Rounded to binary32 bits by mode
  // (0 nearest even, 1 toward zero, 2 down, 3 up).
  int x = e + 126;  // biased exponent - 1: the hidden bit adds the 1
  if (x < 0) {
    sig = tmps_f32_jam(sig, -x);  // subnormal (or zero) result
    x = 0;
  } else if (x > 253) {
    return tmps_f32_overflow(sign, mode);
  }
  ulong rest = sig & 0x7ffffffffful;  // the 39 bits below the 24-bit significand
  uint m = (uint)(sig >> 39);
  bool up = mode == 0 ? (rest > 0x4000000000ul || (rest == 0x4000000000ul && (m & 1u) != 0u))
                      : (mode != 1 && rest != 0ul && (mode == 2) == (sign != 0u));
  uint r = ((uint)x << 23) + m + (uint)up;  // a carry out of the significand bumps the exponent
  return r >= 0x7f800000u ? tmps_f32_overflow(sign, mode) : (sign << 31) | r;
}
static inline uint tmps_f32_norm(uint a, thread int& e) {
  // finite nonzero binary32 bits: significand with its leading 1 at bit 23, value = sig * 2^(e - 23)
  int be = (int)((a >> 23) & 0xffu);
  uint m = a & 0x7fffffu;
  if (be == 0) {
    int s = (int)clz(m) - 8;
    e = -126 - s;
    return m << s;
  }
  e = be - 127;
  return m | 0x800000u;
}
static inline uint tmps_f32_qnan(uint a, uint b) {
  // a NaN operand's payload, quieted (the first NaN)
  return ((a & 0x7fffffffu) > 0x7f800000u ? a : b) | 0x400000u;
}
""")

entry("tmps_f32_arith", ("tmps_f32_round",), """
static inline uint tmps_f32_sum_m(uint sa, int ea, ulong ma, uint sb, int eb, ulong mb, int mode) {
  // (-1)^sa ma 2^(ea - 61) + (-1)^sb mb 2^(eb - 61), ma and mb with their leading 1 at bit 61 and
  // zeros below bit 14, rounded once by mode
  if (eb > ea || (eb == ea && mb > ma)) {
    uint ts = sa; sa = sb; sb = ts;
    int te = ea; ea = eb; eb = te;
    ulong tm = ma; ma = mb; mb = tm;
  }
  mb = tmps_f32_jam(mb, ea - eb);
  ulong m;
  if (sa == sb) {
    m = ma + mb;
  } else {
    m = ma - mb;
    if (m == 0ul) return mode == 2 ? 0x80000000u : 0u;  // exact zero: +0, -0 rounding down
  }
  int s = (int)clz(m) - 1;  // leading 1 to bit 62
  return tmps_f32_round_m(sa, ea + 1 - s, m << s, mode);
}
static inline uint tmps_f32_add_m(uint a, uint b, int mode) {
  uint aa = a & 0x7fffffffu, ab = b & 0x7fffffffu;
  if (aa > 0x7f800000u || ab > 0x7f800000u) return tmps_f32_qnan(a, b);
  if (aa == 0x7f800000u) return (ab == aa && ((a ^ b) >> 31) != 0u) ? 0x7fc00000u : a;
  if (ab == 0x7f800000u) return b;
  if (aa == 0u) return ab == 0u ? (mode == 2 ? a | b : a & b) : b;  // zeros: -0 only if both, or rounding down
  if (ab == 0u) return a;
  int ea, eb;
  ulong ma = (ulong)tmps_f32_norm(a, ea) << 38, mb = (ulong)tmps_f32_norm(b, eb) << 38;
  return tmps_f32_sum_m(a >> 31, ea, ma, b >> 31, eb, mb, mode);
}
static inline uint tmps_f32_sub_m(uint a, uint b, int mode) {
  return tmps_f32_add_m(a, (b & 0x7fffffffu) > 0x7f800000u ? b : b ^ 0x80000000u, mode);
}
static inline uint tmps_f32_mul_m(uint a, uint b, int mode) {
  uint sign = (a ^ b) >> 31;
  uint aa = a & 0x7fffffffu, ab = b & 0x7fffffffu;
  if (aa > 0x7f800000u || ab > 0x7f800000u) return tmps_f32_qnan(a, b);
  if (aa == 0x7f800000u || ab == 0x7f800000u) return (aa == 0u || ab == 0u) ? 0x7fc00000u : (sign << 31) | 0x7f800000u;
  if (aa == 0u || ab == 0u) return sign << 31;
  int ea, eb;
  ulong p = (ulong)tmps_f32_norm(a, ea) * (ulong)tmps_f32_norm(b, eb);  // exact: leading 1 at bit 46 or 47
  int lz = (int)clz(p);
  return tmps_f32_round_m(sign, ea + eb + 17 - lz, p << (lz - 1), mode);
}
static inline uint tmps_f32_div_m(uint a, uint b, int mode) {
  uint sign = (a ^ b) >> 31;
  uint aa = a & 0x7fffffffu, ab = b & 0x7fffffffu;
  if (aa > 0x7f800000u || ab > 0x7f800000u) return tmps_f32_qnan(a, b);
  if (aa == 0x7f800000u) return ab == 0x7f800000u ? 0x7fc00000u : (sign << 31) | 0x7f800000u;
  if (ab == 0x7f800000u) return sign << 31;
  if (ab == 0u) return aa == 0u ? 0x7fc00000u : (sign << 31) | 0x7f800000u;
  if (aa == 0u) return sign << 31;
  int ea, eb;
  ulong n = (ulong)tmps_f32_norm(a, ea) << 40;
  ulong d = (ulong)tmps_f32_norm(b, eb);
  ulong q = n / d, r = n - q * d;  // q: leading 1 at bit 39 or 40
  int lz = (int)clz(q);
  return tmps_f32_round_m(sign, ea - eb + 23 - lz, (q << (lz - 1)) | (ulong)(r != 0ul), mode);
}
static inline uint tmps_f32_sqrt_m(uint a, int mode) {
  if ((a & 0x7fffffffu) > 0x7f800000u) return a | 0x400000u;
  if ((a & 0x7fffffffu) == 0u) return a;  // sqrt(-0) = -0
  if ((a >> 31) != 0u) return 0x7fc00000u;
  if (a == 0x7f800000u) return a;
  int e;
  ulong m = (ulong)tmps_f32_norm(a, e);
  if ((e & 1) != 0) { m <<= 1; e -= 1; }
  ulong n = m << 29;  // value = n * 2^(e - 52), n in [2^52, 2^54), e even
  ulong root = (ulong)sqrt((float)n);  // within a few units of floor(sqrt(n)) in [2^26, 2^27)
  root = (root + n / root) >> 1;  // one Newton step: within 1
  while (root * root > n) root -= 1ul;
  while ((root + 1ul) * (root + 1ul) <= n) root += 1ul;
  return tmps_f32_round_m(0u, e / 2, (root << 36) | (ulong)(root * root != n), mode);
}
static inline uint tmps_f32_fma_m(uint a, uint b, uint c, int mode) {
  // a * b + c with one rounding
  uint aa = a & 0x7fffffffu, ab = b & 0x7fffffffu, ac = c & 0x7fffffffu;
  if (aa > 0x7f800000u || ab > 0x7f800000u || ac > 0x7f800000u)
    return tmps_f32_qnan(aa > 0x7f800000u || ab > 0x7f800000u ? a : c, ab > 0x7f800000u ? b : c);
  uint sp = (a ^ b) >> 31;
  if (aa == 0x7f800000u || ab == 0x7f800000u) {
    if (aa == 0u || ab == 0u) return 0x7fc00000u;
    if (ac == 0x7f800000u && (c >> 31) != sp) return 0x7fc00000u;
    return (sp << 31) | 0x7f800000u;
  }
  if (ac == 0x7f800000u) return c;
  if (aa == 0u || ab == 0u) return tmps_f32_add_m(sp << 31, c, mode);  // exact zero product
  if (ac == 0u) return tmps_f32_mul_m(a, b, mode);  // the exact sum is the nonzero product
  int ea, eb, ec;
  ulong p = (ulong)tmps_f32_norm(a, ea) * (ulong)tmps_f32_norm(b, eb);  // exact, leading 1 at bit 46 or 47
  int lz = (int)clz(p);
  ulong mc = (ulong)tmps_f32_norm(c, ec) << 38;
  return tmps_f32_sum_m(sp, ea + eb + 17 - lz, p << (lz - 2), c >> 31, ec, mc, mode);
}
""")

entry("tmps_f32_cvt", ("tmps_f32_round",), """static inline uint tmps_f32_from_i64_m(long v, int mode) {
  // a 64-bit integer (any 32-bit one sign- or zero-extended) -> binary32 bits, rounded by mode
  uint sign = v < 0l ? 1u : 0u;
  ulong u = v < 0l ? 0ul - (ulong)v : (ulong)v;
  if (u == 0ul) return 0u;
  int lz = (int)clz(u);
  u <<= lz;  // leading 1 at bit 63
  return tmps_f32_round_m(sign, 63 - lz, (u >> 1) | (u & 1ul), mode);
}
static inline uint tmps_f32_from_u64_m(ulong u, int mode) {
  if (u == 0ul) return 0u;
  int lz = (int)clz(u);
  u <<= lz;
  return tmps_f32_round_m(0u, 63 - lz, (u >> 1) | (u & 1ul), mode);
}
""")

entry("tmps_f64_cvt_m", ("tmps_f64_base", "tmps_f32_round"), """
static inline ulong tmps_f64_from_mag_m(ulong sign, ulong u, int mode) {
  if (u == 0ul) return 0ul;
  int lz = (int)clz(u);
  u <<= lz;
  return tmps_f64_round_m(sign, 63 - lz, (u >> 1) | (u & 1ul), mode);
}
static inline ulong tmps_f64_from_i64_m(long v, int mode) {
  return v < 0l ? tmps_f64_from_mag_m(1ul, 0ul - (ulong)v, mode) : tmps_f64_from_mag_m(0ul, (ulong)v, mode);
}
static inline uint tmps_f64_to_f32_m(ulong a, int mode) {
  // binary64 bits -> binary32 bits, rounded by mode; NaN keeps the top of its payload, quieted
  uint sign = (uint)(a >> 63);
  ulong aa = a & 0x7ffffffffffffffful;
  if (aa > 0x7ff0000000000000ul) return (sign << 31) | 0x7fc00000u | (uint)((aa >> 29) & 0x7fffffu);
  if (aa == 0x7ff0000000000000ul) return (sign << 31) | 0x7f800000u;
  if (aa == 0ul) return sign << 31;
  int e;
  ulong m = tmps_f64_norm(a, e);  // leading 1 at bit 52
  return tmps_f32_round_m(sign, e, m << 10, mode);
}
""")
