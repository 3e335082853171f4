// Part of the simulator's metal_stdlib shim (include <metal_stdlib>, not this file).
// Scalar types, address-space words, the runtime pointer, bfloat conversion, basic traits.
#ifndef TMPS_METAL_BASE_H
#define TMPS_METAL_BASE_H

#include "tmps_sim_abi.h"  // before the address-space macros: it uses `thread` as a name

// The loader fills this in before any kernel runs; the MSL frontend defines it.
extern "C" __attribute__((visibility("default"))) const tmps_sim_runtime* tmps_sim_rt;

// TMPS_FLOPS(n): the emitted MSL's count of scalar FLOPs (the compiler's prelude defines it
// empty for Metal). Compiled away here; the counting build of a kernel (SimDevice, made when
// the simulator's counters are on) redefines it at the top of its source, after this header
// (which may come precompiled), to call tmps_sim_rt->count_flops.
#ifndef TMPS_FLOPS
#define TMPS_FLOPS(n) ((void)0)
#endif

// The MSL version the kernel is compiled for, as Metal's compiler defines it (320 for 3.2): the
// simulator passes -D__METAL_VERSION__ from the kernel's language_version. API that Metal
// introduced after that version is hidden below it (docs/msl-versions.md). 310 (macOS 14, the
// oldest we support) when compiled without it.
#ifndef __METAL_VERSION__
#define __METAL_VERSION__ 310
#endif
#define __HAVE_BFLOAT__ 1
// MSL 3.2 `coherent(device)` on a device pointer: its plain loads and stores are coherent across
// threadgroups. The simulator's memory always is: a no-op at 3.2. Below 3.2 Metal has no such
// qualifier; the name the compiler then reports says why.
// The strict check spells it `volatile`, Metal's strictest possible reading (a qualifier an
// implicit conversion cannot drop): clang then rejects emitted MSL that relies on dropping it
// implicitly, while explicit casts stay fine. Not in real builds: volatile slows every access.
#if __METAL_VERSION__ >= 320 && defined(TMPS_SIM_STRICT)
#define coherent(scope) volatile
#elif __METAL_VERSION__ >= 320
#define coherent(scope)
#else
#define coherent(scope) coherent_device_needs_MSL_3_2_macOS_15
#endif
#define METAL_FUNC inline __attribute__((__always_inline__))
#define kernel
#define threadgroup_imageblock

#ifdef TMPS_SIM_STRICT
// Real address spaces: clang then rejects device<->thread pointer mixing and constant writes.
#define device __attribute__((address_space(1)))
#define constant const __attribute__((address_space(2)))
#define threadgroup __attribute__((address_space(3)))
#define thread
#else
#define device
#define constant const
#define threadgroup
#define thread
#endif
// `constant` carries const: Metal's constant address space is read-only, and a program-scope
// `constant float k = 1;` must be a constant here too.

typedef unsigned char uchar;
typedef unsigned short ushort;
typedef unsigned int uint;
typedef unsigned long ulong;  // 64-bit on every LP64 host we run on, as in MSL
typedef _Float16 half;        // needs -Xclang -ffloat16-excess-precision=none
typedef __bf16 bfloat;
typedef __SIZE_TYPE__ size_t;
typedef __PTRDIFF_TYPE__ ptrdiff_t;
typedef __INTPTR_TYPE__ intptr_t;
typedef __UINTPTR_TYPE__ uintptr_t;
typedef __INT8_TYPE__ int8_t;
typedef __INT16_TYPE__ int16_t;
typedef __INT32_TYPE__ int32_t;
typedef __INT64_TYPE__ int64_t;
typedef __UINT8_TYPE__ uint8_t;
typedef __UINT16_TYPE__ uint16_t;
typedef __UINT32_TYPE__ uint32_t;
typedef __UINT64_TYPE__ uint64_t;

namespace tmps_sim {
// float -> bfloat: round to nearest even; NaN stays a quiet NaN with its sign and top payload
// bits. The one rule for both the compiler's conversions (__truncsfbf2 below) and the
// translated `(bfloat)(x)` casts (inline: a conversion is a few integer operations, not a
// call). Other operand types keep the compiler's conversion.
__attribute__((always_inline)) constexpr __bf16 to_bfloat(float f) {
  unsigned u = __builtin_bit_cast(unsigned, f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return __builtin_bit_cast(__bf16, (unsigned short)((u >> 16) | 0x40u));
  u += 0x7fffu + ((u >> 16) & 1u);
  return __builtin_bit_cast(__bf16, (unsigned short)(u >> 16));
}
template<class T> __attribute__((always_inline)) constexpr __bf16 to_bfloat(T x) { return (__bf16)x; }
}  // namespace tmps_sim

// Compiler-rt stand-ins, defined only in the simulator's support object (TMPS_SIM_SUPPORT,
// compiled once and linked into every kernel library; see sim_compiler.cpp): kernels only
// call them, through the conversions clang lowers to these names.
#ifdef TMPS_SIM_SUPPORT
// float/double -> bfloat. clang lowers these conversions to compiler-rt calls that zig's
// compiler-rt lacks; define them here (weak + hidden: one copy per kernel library, never
// interposed by a libgcc that has its own). Round to nearest even; NaN stays a quiet NaN.
extern "C" __attribute__((weak, visibility("hidden"))) __bf16 __truncsfbf2(float f) {
  return ::tmps_sim::to_bfloat(f);
}
// half <-> float/double. With a CPU target that has F16C (x86-64-v3) or FCVT (ARMv8), clang
// converts in hardware; on the baseline x86-64 target it calls these compiler-rt functions.
// Both give the same bits: IEEE round to nearest even with subnormals, and NaN payloads kept
// and quieted as F16C and FCVT do.
extern "C" __attribute__((weak, visibility("hidden"))) _Float16 __truncsfhf2(float f) {
  unsigned u = __builtin_bit_cast(unsigned, f);
  unsigned short sign = (unsigned short)((u >> 16) & 0x8000u);
  unsigned a = u & 0x7fffffffu;
  unsigned short h;
  if (a > 0x7f800000u) {
    h = (unsigned short)(sign | 0x7e00u | ((a >> 13) & 0x3ffu));
  } else if (a >= 0x477ff000u) {  // >= 65520 rounds to infinity (and infinity itself)
    h = (unsigned short)(sign | 0x7c00u);
  } else if (a >= 0x38800000u) {  // normal half: rebias the exponent, round the 13 dropped bits
    unsigned m = a - 0x38000000u;
    m += 0xfffu + ((m >> 13) & 1u);
    h = (unsigned short)(sign | (m >> 13));
  } else if (a < 0x33000000u) {  // below 2^-25 (half the smallest subnormal): zero
    h = sign;
  } else {  // subnormal half: value = mant * 2^(e-150) = r * 2^-24
    unsigned e = a >> 23, mant = (a & 0x7fffffu) | 0x800000u, shift = 126u - e;
    unsigned r = mant >> shift, rem = mant & ((1u << shift) - 1u), halfway = 1u << (shift - 1u);
    if (rem > halfway || (rem == halfway && (r & 1u))) ++r;
    h = (unsigned short)(sign | r);
  }
  return __builtin_bit_cast(_Float16, h);
}
extern "C" __attribute__((weak, visibility("hidden"))) float __extendhfsf2(_Float16 x) {
  unsigned short b = __builtin_bit_cast(unsigned short, x);
  unsigned sign = (unsigned)(b & 0x8000u) << 16, e = (b >> 10) & 0x1fu, m = b & 0x3ffu;
  if (e == 31) return __builtin_bit_cast(float, sign | 0x7f800000u | (m ? 0x400000u : 0u) | (m << 13));
  if (e == 0) {
    float v = (float)m * 0x1p-24f;  // exact: at most 10 significant bits
    return __builtin_bit_cast(float, sign | __builtin_bit_cast(unsigned, v));
  }
  return __builtin_bit_cast(float, sign | ((e + 112u) << 23) | (m << 13));
}
extern "C" __attribute__((weak, visibility("hidden"))) double __extendhfdf2(_Float16 x) { return (double)__extendhfsf2(x); }

// double -> float rounded to odd: a later rounding to a narrower type then equals the direct,
// correctly rounded conversion (no double rounding).
static inline float tmps_round_to_odd_float(double d) {
  float f = (float)d;
  if (d != d) return f;
  unsigned u = __builtin_bit_cast(unsigned, f);
  double fa = f < 0 ? -(double)f : (double)f, da = d < 0 ? -d : d;
  if (fa > da) u -= 1;  // rounded away from zero: step back toward zero (also inf -> FLT_MAX)
  if ((double)__builtin_bit_cast(float, u) != d) u |= 1;
  return __builtin_bit_cast(float, u);
}
extern "C" __attribute__((weak, visibility("hidden"))) _Float16 __truncdfhf2(double d) {
  return __truncsfhf2(tmps_round_to_odd_float(d));
}

extern "C" __attribute__((weak, visibility("hidden"))) __bf16 __truncdfbf2(double d) {
  return __truncsfbf2(tmps_round_to_odd_float(d));
}
#endif  // TMPS_SIM_SUPPORT

namespace tmps_sim {

template<class T, int N> using ev = T __attribute__((ext_vector_type(N)));
template<int N> struct boolvec;

// Shape of a value: scalar (n = 1) or vector (n = components).
template<class T> struct vt { typedef T elem; enum { n = 1, is_vec = 0 }; };
template<class E, int N> struct vt<E __attribute__((ext_vector_type(N)))> { typedef E elem; enum { n = N, is_vec = 1 }; };
template<int N> struct vt<boolvec<N>> { typedef bool elem; enum { n = N, is_vec = 1 }; };

template<class A, class B> struct same { enum { value = 0 }; };
template<class A> struct same<A, A> { enum { value = 1 }; };
template<class T> struct is_floatish { enum { value = same<T, float>::value || same<T, half>::value || same<T, bfloat>::value }; };
template<class T> struct identity { typedef T type; };
template<class T> struct strip_space { typedef T type; };
template<class T, int N> struct strip_space<__attribute__((address_space(N))) T> { typedef T type; };

struct sg_ctx;  // tmps_metal_simd.h: a SIMD-group run as one (the simulator's collapsed kernels)
// A call site of a SIMD-group function: `sg` is null except in a collapsed kernel, where the
// frontend's rewrite (sim/simd_collapse.h) puts a local `tmps_sg` in scope of TMPS_SITE.
struct site { tmps_u32 id, line; sg_ctx* sg; };

}  // namespace tmps_sim

namespace metal {
using ::uchar; using ::ushort; using ::uint; using ::ulong; using ::half; using ::bfloat;
using ::size_t; using ::ptrdiff_t;
using ::int8_t; using ::int16_t; using ::int32_t; using ::int64_t;
using ::uint8_t; using ::uint16_t; using ::uint32_t; using ::uint64_t;

// Type traits (the small subset MSL code commonly uses).
template<class T, T v> struct integral_constant { static constexpr T value = v; constexpr operator T() const { return v; } };
typedef integral_constant<bool, true> true_type;
typedef integral_constant<bool, false> false_type;
template<class A, class B> struct is_same : false_type {};
template<class A> struct is_same<A, A> : true_type {};
template<bool B, class T = void> struct enable_if {};
template<class T> struct enable_if<true, T> { typedef T type; };
template<bool B, class T = void> using enable_if_t = typename enable_if<B, T>::type;
template<bool B, class T, class F> struct conditional { typedef T type; };
template<class T, class F> struct conditional<false, T, F> { typedef F type; };
template<bool B, class T, class F> using conditional_t = typename conditional<B, T, F>::type;
template<class T> struct remove_cv { typedef __remove_cv(T) type; };
template<class T> using remove_cv_t = typename remove_cv<T>::type;
template<class T> struct remove_reference { typedef __remove_reference_t(T) type; };
template<class T> using remove_reference_t = typename remove_reference<T>::type;
template<class T> struct remove_address_space { typedef typename tmps_sim::strip_space<T>::type type; };
template<class T> struct make_unsigned { typedef __make_unsigned(T) type; };
template<class T> struct make_signed { typedef __make_signed(T) type; };
template<class T> struct is_floating_point : integral_constant<bool, tmps_sim::is_floatish<remove_cv_t<T>>::value> {};
template<class T> struct is_integral : integral_constant<bool, __is_integral(T)> {};
template<class T> struct is_signed : integral_constant<bool, __is_signed(T)> {};
template<class T> struct is_unsigned : integral_constant<bool, __is_unsigned(T)> {};
template<class T> struct is_arithmetic : integral_constant<bool, __is_integral(T) || is_floating_point<T>::value> {};
template<class T> struct is_scalar : integral_constant<bool, !tmps_sim::vt<T>::is_vec && __is_scalar(T)> {};
template<class T> struct is_vector : integral_constant<bool, tmps_sim::vt<T>::is_vec> {};
template<class T> struct vec_elements : integral_constant<int, tmps_sim::vt<T>::n> {};
template<class T> struct is_pointer : integral_constant<bool, __is_pointer(T)> {};
template<class T> struct is_trivially_copyable : integral_constant<bool, __is_trivially_copyable(T)> {};
template<class T> constexpr T&& move_(T& x) { return (T&&)x; }

// as_type<T>(x): reinterpret the bits (sizes must match, as in MSL).
template<class T, class U> constexpr T as_type(U x) {
  static_assert(sizeof(T) == sizeof(U), "as_type: source and destination sizes differ");
  return __builtin_bit_cast(T, x);
}

// metal::array: fixed-size array usable by value.
template<class T, size_t N> struct array {
  T elems_[N ? N : 1];
  constexpr T& operator[](size_t i) { return elems_[i]; }
  constexpr const T& operator[](size_t i) const { return elems_[i]; }
  constexpr size_t size() const { return N; }
  constexpr bool empty() const { return N == 0; }
  constexpr T* data() { return elems_; }
  constexpr const T* data() const { return elems_; }
  constexpr T* begin() { return elems_; }
  constexpr T* end() { return elems_ + N; }
  constexpr const T* begin() const { return elems_; }
  constexpr const T* end() const { return elems_ + N; }
};

}  // namespace metal

namespace tmps_sim {
// Storage of a kernel-scope `threadgroup T name;` (the frontend rewrites the declaration).
template<class T> inline threadgroup T& threadgroup_static(tmps_u32 id, tmps_u32 line) {
  void* p = tmps_sim_rt->threadgroup_static(id, sizeof(T), alignof(T), line);
  return *(threadgroup T*)(__UINTPTR_TYPE__)p;
}
}  // namespace tmps_sim

#endif
