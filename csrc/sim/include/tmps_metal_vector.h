// Part of the simulator's metal_stdlib shim (include <metal_stdlib>, not this file).
// Vector types: clang ext_vector_type for numbers (swizzles, arithmetic built in), a small
// struct for bool vectors, MSL constructor syntax through same-named function-like macros.
#ifndef TMPS_METAL_VECTOR_H
#define TMPS_METAL_VECTOR_H

#include "tmps_metal_base.h"

#define TMPS_VEC3(S)                                          \
  typedef S S##2 __attribute__((ext_vector_type(2)));         \
  typedef S S##3 __attribute__((ext_vector_type(3)));         \
  typedef S S##4 __attribute__((ext_vector_type(4)));         \
  typedef S packed_##S##2 __attribute__((ext_vector_type(2), aligned(sizeof(S)))); \
  typedef S packed_##S##4 __attribute__((ext_vector_type(4), aligned(sizeof(S)))); \
  typedef ::tmps_sim::packed3<S> packed_##S##3;

namespace tmps_sim {

// bool vectors. clang's ext_vector_type(bool) has no .x/.xy, so bool2/3/4 are structs with
// fields x, y, z, w and operator[]. Comparisons of number vectors give clang's integer masks
// (-1/0, e.g. int4 for float4 < float4); those convert implicitly to boolN, and all(), any(),
// select() accept either. No multi-component swizzles (.xy) on bool vectors.
#define TMPS_BOOLVEC_METHODS(N, REF)                                                     \
  boolvec() = default;                                                                   \
  constexpr boolvec(bool s) { for (int i = 0; i < N; ++i) (*this)[i] = s; }             \
  template<class E> constexpr boolvec(E __attribute__((ext_vector_type(N))) m) {         \
    for (int i = 0; i < N; ++i) (*this)[i] = m[i] != 0;                                  \
  }                                                                                      \
  constexpr bool& operator[](int i) { return REF; }                                     \
  constexpr const bool& operator[](int i) const { return REF; }
template<> struct alignas(2) boolvec<2> { bool x{}, y{}; TMPS_BOOLVEC_METHODS(2, i == 0 ? x : y) };
template<> struct alignas(4) boolvec<3> { bool x{}, y{}, z{}; TMPS_BOOLVEC_METHODS(3, i == 0 ? x : i == 1 ? y : z) };
template<> struct alignas(4) boolvec<4> { bool x{}, y{}, z{}, w{}; TMPS_BOOLVEC_METHODS(4, i == 0 ? x : i == 1 ? y : i == 2 ? z : w) };
#undef TMPS_BOOLVEC_METHODS

template<int N> constexpr boolvec<N> operator!(boolvec<N> a) { for (int i = 0; i < N; ++i) a[i] = !a[i]; return a; }
#define TMPS_BOOLVEC_OP(OP)                                                              \
  template<int N> constexpr boolvec<N> operator OP(boolvec<N> a, boolvec<N> b) {        \
    for (int i = 0; i < N; ++i) a[i] = a[i] OP b[i];                                     \
    return a;                                                                            \
  }
TMPS_BOOLVEC_OP(&&) TMPS_BOOLVEC_OP(||) TMPS_BOOLVEC_OP(==) TMPS_BOOLVEC_OP(!=)
TMPS_BOOLVEC_OP(&) TMPS_BOOLVEC_OP(|) TMPS_BOOLVEC_OP(^)
#undef TMPS_BOOLVEC_OP

// packed_T3: 3 elements without padding (12 bytes for float), converts to and from T3.
template<class T> struct packed3 {
  typedef T __attribute__((ext_vector_type(3))) v3;
  T x, y, z;
  packed3() = default;
  // Copy out of another address space (strict mode: the implicit copy constructor only binds
  // to objects in the default one).
  template<class P, class = decltype(((const P*)0)->x)> constexpr packed3(const P& o) : x(o.x), y(o.y), z(o.z) {}
  constexpr packed3(v3 v) : x(v.x), y(v.y), z(v.z) {}
  constexpr packed3(T a, T b, T c) : x(a), y(b), z(c) {}
  constexpr operator v3() const { return v3{x, y, z}; }
  constexpr T& operator[](int i) { return i == 0 ? x : i == 1 ? y : z; }
  constexpr const T& operator[](int i) const { return i == 0 ? x : i == 1 ? y : z; }
#define TMPS_PACKED_OP(OP)                                                          \
  friend constexpr v3 operator OP(packed3 a, packed3 b) { return (v3)a OP (v3)b; } \
  friend constexpr v3 operator OP(packed3 a, v3 b) { return (v3)a OP b; }          \
  friend constexpr v3 operator OP(v3 a, packed3 b) { return a OP (v3)b; }          \
  friend constexpr v3 operator OP(packed3 a, T b) { return (v3)a OP b; }           \
  friend constexpr v3 operator OP(T a, packed3 b) { return a OP (v3)b; }
  TMPS_PACKED_OP(+) TMPS_PACKED_OP(-) TMPS_PACKED_OP(*) TMPS_PACKED_OP(/)
#undef TMPS_PACKED_OP
};
template<class T> struct vt<packed3<T>> { typedef T elem; enum { n = 3, is_vec = 1 }; };

// The vector (or bool vector) type with N elements of T.
template<class T, int N> struct vec_of { typedef T __attribute__((ext_vector_type(N))) type; };
template<int N> struct vec_of<bool, N> { typedef boolvec<N> type; };
template<class T> struct vec_of<T, 1> { typedef T type; };

template<class T, int N> constexpr typename vec_of<T, N>::type build(const T* a) {
  if constexpr (same<T, bool>::value) {
    boolvec<N> r;
    for (int i = 0; i < N; ++i) r[i] = a[i];
    return r;
  } else if constexpr (N == 2) {
    return ev<T, 2>{a[0], a[1]};
  } else if constexpr (N == 3) {
    return ev<T, 3>{a[0], a[1], a[2]};
  } else {
    return ev<T, 4>{a[0], a[1], a[2], a[3]};
  }
}

template<class T, class A> constexpr void put(T* out, int& i, A a) {
  if constexpr (vt<A>::is_vec) {
    for (int k = 0; k < vt<A>::n; ++k) out[i++] = (T)a[k];
  } else {
    out[i++] = (T)a;
  }
}

// MSL vector constructor: T4(), T4(s) splat, T4(v) conversion, or components flattened from
// scalars and vectors (T4(a.xy, b, c), T4(v3, w)) that must add up to exactly N.
template<class T, int N, class... A> constexpr typename vec_of<T, N>::type make(A... a) {
  constexpr int count = (0 + ... + (int)vt<A>::n);
  T tmp[N] = {};
  if constexpr (sizeof...(A) == 1 && count == 1) {
    T s = (T)(a, ...);
    for (int i = 0; i < N; ++i) tmp[i] = s;
  } else {
    static_assert(sizeof...(A) == 0 || count == N, "vector constructor: the components do not add up to the vector's size");
    int i = 0;
    (put<T>(tmp, i, a), ...);
  }
  return build<T, N>(tmp);
}

// Conversion for the `static_cast` keyword macro: between vector types it converts values like
// MSL (clang's own static_cast between same-sized vectors would reinterpret the bits).
// Value targets take the operand by value (a vector element cannot bind to a reference);
// reference and void targets take it by forwarding reference.
template<class T> struct cast_by_ref { enum { value = __is_reference(T) || __is_void(T) }; };
template<class T, class U, class = typename ::metal::enable_if<!cast_by_ref<T>::value>::type>
constexpr T cast(U x) {
  if constexpr (vt<T>::is_vec && vt<U>::is_vec && !same<__remove_cv(T), U>::value) {
    return make<typename vt<T>::elem, vt<T>::n>(x);
  } else {
    return (T)x;
  }
}
template<class T, class U, class = typename ::metal::enable_if<cast_by_ref<T>::value>::type>
constexpr T cast(U&& x, int = 0) {
  return (T)x;
}

}  // namespace tmps_sim

typedef ::tmps_sim::boolvec<2> bool2;
typedef ::tmps_sim::boolvec<3> bool3;
typedef ::tmps_sim::boolvec<4> bool4;
TMPS_VEC3(char) TMPS_VEC3(uchar) TMPS_VEC3(short) TMPS_VEC3(ushort) TMPS_VEC3(int) TMPS_VEC3(uint)
TMPS_VEC3(long) TMPS_VEC3(ulong) TMPS_VEC3(half) TMPS_VEC3(bfloat) TMPS_VEC3(float)
#undef TMPS_VEC3

namespace metal {
template<class T, int N> using vec = typename ::tmps_sim::vec_of<T, N>::type;
using ::bool2; using ::bool3; using ::bool4;
#define TMPS_USE3(S) using ::S##2; using ::S##3; using ::S##4; \
  using ::packed_##S##2; using ::packed_##S##3; using ::packed_##S##4;
TMPS_USE3(char) TMPS_USE3(uchar) TMPS_USE3(short) TMPS_USE3(ushort) TMPS_USE3(int) TMPS_USE3(uint)
TMPS_USE3(long) TMPS_USE3(ulong) TMPS_USE3(half) TMPS_USE3(bfloat) TMPS_USE3(float)
#undef TMPS_USE3
}  // namespace metal

// Constructor syntax. A function-like macro expands only when its name is followed by `(`,
// so `float4 x;` and `static_cast<float4>(y)` are untouched while `float4(a, b)` builds.
#define bool2(...) ::tmps_sim::make<bool, 2>(__VA_ARGS__)
#define bool3(...) ::tmps_sim::make<bool, 3>(__VA_ARGS__)
#define bool4(...) ::tmps_sim::make<bool, 4>(__VA_ARGS__)
#define char2(...) ::tmps_sim::make<char, 2>(__VA_ARGS__)
#define char3(...) ::tmps_sim::make<char, 3>(__VA_ARGS__)
#define char4(...) ::tmps_sim::make<char, 4>(__VA_ARGS__)
#define uchar2(...) ::tmps_sim::make<uchar, 2>(__VA_ARGS__)
#define uchar3(...) ::tmps_sim::make<uchar, 3>(__VA_ARGS__)
#define uchar4(...) ::tmps_sim::make<uchar, 4>(__VA_ARGS__)
#define short2(...) ::tmps_sim::make<short, 2>(__VA_ARGS__)
#define short3(...) ::tmps_sim::make<short, 3>(__VA_ARGS__)
#define short4(...) ::tmps_sim::make<short, 4>(__VA_ARGS__)
#define ushort2(...) ::tmps_sim::make<ushort, 2>(__VA_ARGS__)
#define ushort3(...) ::tmps_sim::make<ushort, 3>(__VA_ARGS__)
#define ushort4(...) ::tmps_sim::make<ushort, 4>(__VA_ARGS__)
#define int2(...) ::tmps_sim::make<int, 2>(__VA_ARGS__)
#define int3(...) ::tmps_sim::make<int, 3>(__VA_ARGS__)
#define int4(...) ::tmps_sim::make<int, 4>(__VA_ARGS__)
#define uint2(...) ::tmps_sim::make<uint, 2>(__VA_ARGS__)
#define uint3(...) ::tmps_sim::make<uint, 3>(__VA_ARGS__)
#define uint4(...) ::tmps_sim::make<uint, 4>(__VA_ARGS__)
#define long2(...) ::tmps_sim::make<long, 2>(__VA_ARGS__)
#define long3(...) ::tmps_sim::make<long, 3>(__VA_ARGS__)
#define long4(...) ::tmps_sim::make<long, 4>(__VA_ARGS__)
#define ulong2(...) ::tmps_sim::make<ulong, 2>(__VA_ARGS__)
#define ulong3(...) ::tmps_sim::make<ulong, 3>(__VA_ARGS__)
#define ulong4(...) ::tmps_sim::make<ulong, 4>(__VA_ARGS__)
#define half2(...) ::tmps_sim::make<half, 2>(__VA_ARGS__)
#define half3(...) ::tmps_sim::make<half, 3>(__VA_ARGS__)
#define half4(...) ::tmps_sim::make<half, 4>(__VA_ARGS__)
#define bfloat2(...) ::tmps_sim::make<bfloat, 2>(__VA_ARGS__)
#define bfloat3(...) ::tmps_sim::make<bfloat, 3>(__VA_ARGS__)
#define bfloat4(...) ::tmps_sim::make<bfloat, 4>(__VA_ARGS__)
#define float2(...) ::tmps_sim::make<float, 2>(__VA_ARGS__)
#define float3(...) ::tmps_sim::make<float, 3>(__VA_ARGS__)
#define float4(...) ::tmps_sim::make<float, 4>(__VA_ARGS__)
#define packed_float2(...) ::tmps_sim::make<float, 2>(__VA_ARGS__)
#define packed_float3(...) ::packed_float3(::tmps_sim::make<float, 3>(__VA_ARGS__))
#define packed_float4(...) ::tmps_sim::make<float, 4>(__VA_ARGS__)
#define packed_half2(...) ::tmps_sim::make<half, 2>(__VA_ARGS__)
#define packed_half3(...) ::packed_half3(::tmps_sim::make<half, 3>(__VA_ARGS__))
#define packed_half4(...) ::tmps_sim::make<half, 4>(__VA_ARGS__)

#endif
