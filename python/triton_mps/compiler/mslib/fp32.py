"""float (fp32) functions Metal lacks, as MSL helpers (fp16/bf16 calls widen to float first):
erf, erfc, log1p, expm1, cbrt (math.* ops and libdevice), libdevice's byte_perm, powi,
remainder, nextafter, logb, ilogb and the hypot/norm family (tmps_norm4f); LLVM's NaN-propagating
maximum/minimum; 64-bit integers to float rounded to odd (for a second, correct rounding).
"""

from __future__ import annotations

from .registry import entry

entry("tmps_erf", (), """inline float tmps_erf(float x) {
  // erfc by a Chebyshev fit (fractional error < 1.2e-7), erf = 1 - erfc; small |x| by series.
  float z = fabs(x);
  if (z < 0.5f) {
    float z2 = x * x;
    return x * (1.1283791671f + z2 * (-0.3761263890f + z2 * (0.1128379167f +
                z2 * (-0.0268661706f + z2 * 0.0052239776f))));
  }
  float t = 1.0f / (1.0f + 0.5f * z);
  float r = t * exp(-z * z - 1.26551223f + t * (1.00002368f + t * (0.37409196f + t * (0.09678418f +
            t * (-0.18628806f + t * (0.27886807f + t * (-1.13520398f + t * (1.48851587f +
            t * (-0.82215223f + t * 0.17087277f)))))))));
  return x >= 0.0f ? 1.0f - r : r - 1.0f;
}
""")

entry("tmps_log1p", (), """inline float tmps_log1p(float x) {
  float u = 1.0f + x;
  if (u == 1.0f || u == INFINITY) return u == 1.0f ? x : u;  // log1p(-inf) stays NaN below
  return log(u) * (x / (u - 1.0f));
}
""")

entry("tmps_expm1", (), """inline float tmps_expm1(float x) {
  if (fabs(x) < 1e-5f) return x + 0.5f * x * x;
  float u = exp(x);
  if (u == 1.0f) return x;
  float um1 = u - 1.0f;
  if (um1 == -1.0f) return -1.0f;
  if (isinf(u)) return u;
  return um1 * x / log(u);
}
""")

entry("tmps_cbrt", (), """inline float tmps_cbrt(float x) {
  if (x == 0.0f || isinf(x) || x != x) return x;
  float y = copysign(pow(fabs(x), 1.0f / 3.0f), x);
  return y - (y * y * y - x) / (3.0f * y * y);  // one Newton step
}
""")

entry("tmps_byte_perm", (), """inline uint tmps_byte_perm(uint x, uint y, uint s) {
  // byte n of the result is byte s<4n+2:4n> of the 8 bytes {y, x} (x the low 4)
  ulong v = ((ulong)y << 32) | (ulong)x;
  uint r = 0u;
  for (uint n = 0u; n < 4u; ++n) r |= (uint)((v >> (((s >> (4u * n)) & 7u) * 8u)) & 0xfful) << (8u * n);
  return r;
}
""")

entry("tmps_erfc", ("tmps_erf",), """inline float tmps_erfc(float x) {
  // Same fit as tmps_erf, kept as erfc for x >= 0.5 so that the tail keeps its relative accuracy.
  float z = fabs(x);
  if (z < 0.5f) return 1.0f - tmps_erf(x);
  float t = 1.0f / (1.0f + 0.5f * z);
  float r = t * exp(-z * z - 1.26551223f + t * (1.00002368f + t * (0.37409196f + t * (0.09678418f +
            t * (-0.18628806f + t * (0.27886807f + t * (-1.13520398f + t * (1.48851587f +
            t * (-0.82215223f + t * 0.17087277f)))))))));
  return x >= 0.0f ? r : 2.0f - r;
}
""")

entry("tmps_powi", (), """inline float tmps_powi(float x, int n) {
  // by squaring, as CUDA's powi; 1/x^|n| for negative n
  uint m = n < 0 ? 0u - (uint)n : (uint)n;
  float r = 1.0f, b = x;
  while (m != 0u) { if (m & 1u) r *= b; b *= b; m >>= 1; }
  return n < 0 ? 1.0f / r : r;
}
""")

entry("tmps_remainder", (), """inline float tmps_remainder(float x, float y) {
  // IEEE remainder: x - n*y with n = x/y rounded to nearest even, from the exact fmod.
  if (x != x || y != y || isinf(x) || y == 0.0f) return NAN;
  if (isinf(y)) return x;
  float ay = fabs(y);
  float r = fmod(fabs(x), ay);  // exact, in [0, |y|)
  float n_odd = fmod(fabs(x) - r, 2.0f * ay) != 0.0f ? 1.0f : 0.0f;  // only matters for a tie
  float two_r = 2.0f * r;
  if (two_r > ay || (two_r == ay && n_odd != 0.0f)) r -= ay;
  return copysign(1.0f, x) * r;
}
""")

entry("tmps_nextafter", (), """inline float tmps_nextafter(float x, float y) {
  if (x != x || y != y) return x + y;
  if (x == y) return y;
  if (x == 0.0f) return copysign(as_type<float>(1u), y);
  uint u = as_type<uint>(x);
  u = ((x < y) == (x > 0.0f)) ? u + 1u : u - 1u;
  return as_type<float>(u);
}
""")

entry("tmps_logb", (), """inline float tmps_logb(float x) {
  // the exponent as a float: logb(0) = -inf, logb(+-inf) = +inf, NaN -> NaN
  if (x != x) return x;
  if (x == 0.0f) return -INFINITY;
  if (isinf(x)) return INFINITY;
  uint e = (as_type<uint>(x) >> 23) & 0xffu;
  if (e != 0u) return (float)((int)e - 127);
  return (float)(-118 - (int)clz(as_type<uint>(x) & 0x7fffffu));  // subnormal
}
""")

entry("tmps_norm4f", (), """inline float tmps_norm4f(float a, float b, float c, float d, bool recip) {
  // sqrt(a^2 + b^2 + c^2 + d^2) (or 1 / it): the arguments scaled exactly by 2^-e (the largest in
  // [1, 2)), the sum of squares as a float-float (exact squares by fma), its square root (and
  // reciprocal) corrected once, scaled back. An infinite argument wins over NaN (as hypot).
  a = fabs(a); b = fabs(b); c = fabs(c); d = fabs(d);
  if (isinf(a) || isinf(b) || isinf(c) || isinf(d)) return recip ? 0.0f : INFINITY;
  if (a != a || b != b || c != c || d != d) return NAN;
  float m = fmax(fmax(a, b), fmax(c, d));
  if (m == 0.0f) return recip ? INFINITY : 0.0f;
  uint mb = as_type<uint>(m) >> 23;
  int e = mb == 0u ? -126 : (int)mb - 127;
  float v[4] = {ldexp(d, -e), ldexp(c, -e), ldexp(b, -e), ldexp(a, -e)};
  float sh = 0.0f, sl = 0.0f;
  for (int i = 0; i < 4; ++i) {
    float p = v[i] * v[i], pe = fma(v[i], v[i], -p);
    float s = sh + p, bb = s - sh;
    sl += ((sh - (s - bb)) + (p - bb)) + pe;  // two-sum error + the square's error
    sh = s;
  }
  float s = sh + sl;
  sl = sl - (s - sh);
  sh = s;
  float r = sqrt(sh);
  float rc = (fma(-r, r, sh) + sl) / (2.0f * r);  // r + rc = sqrt(sh + sl) to ~2^-45
  if (!recip) return ldexp(r + rc, e);
  float y = 1.0f / r;
  float t = fma(-y, r, 1.0f) - y * rc;  // 1 - y (r + rc)
  return ldexp(fma(y, t, y), -e);
}
""")

entry("tmps_ilogb", (), """inline int tmps_ilogb(float x) {
  // CUDA's conventions: ilogb(0) = ilogb(NaN) = INT_MIN, ilogb(inf) = INT_MAX
  if (x != x || x == 0.0f) return (int)0x80000000u;
  if (isinf(x)) return 0x7fffffff;
  uint e = (as_type<uint>(x) >> 23) & 0xffu;
  if (e != 0u) return (int)e - 127;
  return -118 - (int)clz(as_type<uint>(x) & 0x7fffffu);  // subnormal: m * 2^-149
}
""")

entry("maximumf", (), """inline float tmps_maximumf(float a, float b) {
  // NaN-propagating maximum; -0 < +0 (LLVM `maximum`).
  if (a != a) return a;
  if (b != b) return b;
  if (a == b) return as_type<uint>(a) & 0x80000000u ? b : a;
  return a > b ? a : b;
}
inline float tmps_minimumf(float a, float b) {
  if (a != a) return a;
  if (b != b) return b;
  if (a == b) return as_type<uint>(a) & 0x80000000u ? a : b;
  return a < b ? a : b;
}
""")

entry("tmps_u64_to_float_odd", (), """static inline float tmps_u64_to_float_odd(ulong u) {
  float f = (float)u;  // to nearest even; then: toward zero, and odd when inexact
  bool big = f >= 18446744073709551616.0f;
  uint b = as_type<uint>(f);
  if (big || (ulong)f > u) b -= 1u;
  if (big || (ulong)f != u) b |= 1u;
  return as_type<float>(b);
}""")

entry("tmps_i64_to_float_odd", ("tmps_u64_to_float_odd",), """static inline float tmps_i64_to_float_odd(long v) {
  return v < 0 ? -tmps_u64_to_float_odd(-(ulong)v) : tmps_u64_to_float_odd((ulong)v);
}""")
