// Part of the simulator's metal_stdlib shim (include <metal_stdlib>, not this file).
// numeric_limits for every MSL scalar type, and the constants of metal_math / float.h.
#ifndef TMPS_METAL_LIMITS_H
#define TMPS_METAL_LIMITS_H

#include "tmps_metal_base.h"

namespace metal {

template<class T> struct numeric_limits {
  static constexpr bool is_specialized = false;
};

#define TMPS_INT_LIMITS(T, LO, HI, DIGITS)                                    \
  template<> struct numeric_limits<T> {                                       \
    static constexpr bool is_specialized = true;                              \
    static constexpr bool is_signed = (T)-1 < (T)0;                           \
    static constexpr bool is_integer = true;                                  \
    static constexpr bool is_exact = true;                                    \
    static constexpr bool has_infinity = false;                               \
    static constexpr bool has_quiet_NaN = false;                              \
    static constexpr int digits = DIGITS;                                     \
    static constexpr int radix = 2;                                           \
    static constexpr T min() { return LO; }                                   \
    static constexpr T max() { return HI; }                                   \
    static constexpr T lowest() { return LO; }                                \
    static constexpr T epsilon() { return 0; }                                \
    static constexpr T round_error() { return 0; }                            \
    static constexpr T infinity() { return 0; }                               \
    static constexpr T quiet_NaN() { return 0; }                              \
    static constexpr T signaling_NaN() { return 0; }                          \
    static constexpr T denorm_min() { return 0; }                             \
  };
TMPS_INT_LIMITS(bool, false, true, 1)
TMPS_INT_LIMITS(char, (char)-128, (char)127, 7)
TMPS_INT_LIMITS(signed char, (signed char)-128, (signed char)127, 7)
TMPS_INT_LIMITS(unsigned char, (unsigned char)0, (unsigned char)255, 8)
TMPS_INT_LIMITS(short, (short)-32768, (short)32767, 15)
TMPS_INT_LIMITS(unsigned short, (unsigned short)0, (unsigned short)65535, 16)
TMPS_INT_LIMITS(int, -2147483647 - 1, 2147483647, 31)
TMPS_INT_LIMITS(unsigned int, 0u, 4294967295u, 32)
TMPS_INT_LIMITS(long, -9223372036854775807L - 1, 9223372036854775807L, 63)
TMPS_INT_LIMITS(unsigned long, 0ul, 18446744073709551615ul, 64)
TMPS_INT_LIMITS(long long, -9223372036854775807LL - 1, 9223372036854775807LL, 63)
TMPS_INT_LIMITS(unsigned long long, 0ull, 18446744073709551615ull, 64)
#undef TMPS_INT_LIMITS

// Float limits from bit patterns (B: the unsigned type of the same width).
#define TMPS_FLOAT_LIMITS(T, B, DIGITS, MIN, MAX, EPS, INF, QNAN, SNAN, DENORM, MINEXP, MAXEXP) \
  template<> struct numeric_limits<T> {                                       \
    static constexpr bool is_specialized = true;                              \
    static constexpr bool is_signed = true;                                   \
    static constexpr bool is_integer = false;                                 \
    static constexpr bool is_exact = false;                                   \
    static constexpr bool has_infinity = true;                                \
    static constexpr bool has_quiet_NaN = true;                               \
    static constexpr int digits = DIGITS;                                     \
    static constexpr int radix = 2;                                           \
    static constexpr int min_exponent = MINEXP;                               \
    static constexpr int max_exponent = MAXEXP;                               \
    static constexpr T min() { return __builtin_bit_cast(T, (B)MIN); }        \
    static constexpr T max() { return __builtin_bit_cast(T, (B)MAX); }        \
    static constexpr T lowest() { return -max(); }                            \
    static constexpr T epsilon() { return __builtin_bit_cast(T, (B)EPS); }    \
    static constexpr T round_error() { return (T)0.5f; }                      \
    static constexpr T infinity() { return __builtin_bit_cast(T, (B)INF); }   \
    static constexpr T quiet_NaN() { return __builtin_bit_cast(T, (B)QNAN); } \
    static constexpr T signaling_NaN() { return __builtin_bit_cast(T, (B)SNAN); } \
    static constexpr T denorm_min() { return __builtin_bit_cast(T, (B)DENORM); } \
  };
TMPS_FLOAT_LIMITS(float, unsigned, 24, 0x00800000u, 0x7f7fffffu, 0x34000000u, 0x7f800000u, 0x7fc00000u, 0x7fa00000u, 1u, -125, 128)
TMPS_FLOAT_LIMITS(half, unsigned short, 11, 0x0400, 0x7bff, 0x1400, 0x7c00, 0x7e00, 0x7d00, 1, -13, 16)
TMPS_FLOAT_LIMITS(bfloat, unsigned short, 8, 0x0080, 0x7f7f, 0x3c00, 0x7f80, 0x7fc0, 0x7fa0, 1, -125, 128)
#undef TMPS_FLOAT_LIMITS

}  // namespace metal

#define MAXFLOAT 0x1.fffffep127f
#define HUGE_VALF __builtin_huge_valf()
#define INFINITY __builtin_inff()
#define NAN __builtin_nanf("")
#define FLT_MAX 0x1.fffffep127f
#define FLT_MIN 0x1p-126f
#define FLT_EPSILON 0x1p-23f
#define FLT_DIG 6
#define FLT_MANT_DIG 24
#define FLT_MAX_EXP 128
#define FLT_MIN_EXP -125
#define FLT_MAX_10_EXP 38
#define FLT_MIN_10_EXP -37
#define FLT_RADIX 2
#define HALF_MAX ((half)65504.0f)
#define HALF_MIN ((half)0x1p-14f)
#define HALF_EPSILON ((half)0x1p-10f)
#define HALF_DIG 3
#define HALF_MANT_DIG 11
#define HALF_MAX_EXP 16
#define HALF_MIN_EXP -13
#define HALF_MAX_10_EXP 4
#define HALF_MIN_10_EXP -4
#define BFLOAT_MAX ((bfloat)0x1.fep127f)
#define BFLOAT_MIN ((bfloat)0x1p-126f)
#define BFLOAT_EPSILON ((bfloat)0x1p-7f)
#define CHAR_BIT 8
#define SCHAR_MAX 127
#define SCHAR_MIN (-128)
#define UCHAR_MAX 255
#define CHAR_MAX SCHAR_MAX
#define CHAR_MIN SCHAR_MIN
#define SHRT_MAX 32767
#define SHRT_MIN (-32768)
#define USHRT_MAX 65535
#define INT_MAX 2147483647
#define INT_MIN (-2147483647 - 1)
#define UINT_MAX 4294967295u
#define LONG_MAX 9223372036854775807L
#define LONG_MIN (-9223372036854775807L - 1)
#define ULONG_MAX 18446744073709551615ul

#define M_E_F 2.71828182845904523536f
#define M_LOG2E_F 1.44269504088896340736f
#define M_LOG10E_F 0.434294481903251827651f
#define M_LN2_F 0.693147180559945309417f
#define M_LN10_F 2.30258509299404568402f
#define M_PI_F 3.14159265358979323846f
#define M_PI_2_F 1.57079632679489661923f
#define M_PI_4_F 0.785398163397448309616f
#define M_1_PI_F 0.318309886183790671538f
#define M_2_PI_F 0.636619772367581343076f
#define M_2_SQRTPI_F 1.12837916709551257390f
#define M_SQRT2_F 1.41421356237309504880f
#define M_SQRT1_2_F 0.707106781186547524401f
#define M_E_H ((half)M_E_F)
#define M_LOG2E_H ((half)M_LOG2E_F)
#define M_LOG10E_H ((half)M_LOG10E_F)
#define M_LN2_H ((half)M_LN2_F)
#define M_LN10_H ((half)M_LN10_F)
#define M_PI_H ((half)M_PI_F)
#define M_PI_2_H ((half)M_PI_2_F)
#define M_PI_4_H ((half)M_PI_4_F)
#define M_1_PI_H ((half)M_1_PI_F)
#define M_2_PI_H ((half)M_2_PI_F)
#define M_2_SQRTPI_H ((half)M_2_SQRTPI_F)
#define M_SQRT2_H ((half)M_SQRT2_F)
#define M_SQRT1_2_H ((half)M_SQRT1_2_F)

#endif
