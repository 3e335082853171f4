// Part of the simulator's metal_stdlib shim (include <metal_stdlib>, not this file).
// Math, integer, common, geometric and relational functions; numeric_limits; constants.
// Every function works on scalars and vectors. half and bfloat are computed in float and
// rounded back once per call. Transcendentals become libm calls, resolved when the kernel
// library is loaded. metal::fast and metal::precise name the same implementations.
#ifndef TMPS_METAL_MATH_H
#define TMPS_METAL_MATH_H

#include "tmps_metal_vector.h"

namespace tmps_sim {

// float version of a floating value (float -> float, half4 -> float4, ...).
template<class T> constexpr auto to_f(T x) {
  static_assert(is_floatish<typename vt<T>::elem>::value,
                "metal math function: argument must be float, half or bfloat (scalar or vector)");
  if constexpr (vt<T>::is_vec) return __builtin_convertvector(x, ev<float, vt<T>::n>);
  else return (float)x;
}
template<class T, class F> constexpr T from_f(F v) {
  if constexpr (vt<T>::is_vec) return __builtin_convertvector(v, T);
  else return (T)v;
}
// x as type R: a scalar becomes R's element type and is splatted when R is a vector.
template<class R, class X> constexpr R as(X x) {
  if constexpr (same<R, X>::value) return x;
  else if constexpr (!vt<X>::is_vec) return (R)(typename vt<R>::elem)x;  // convert, splat if R is a vector
  else {
    static_assert(same<R, X>::value, "metal function: arguments have different vector types");
    return R();
  }
}
// Result type of a two-argument function: both the same, a vector and a scalar (the scalar is
// converted), or two different scalars (usual arithmetic conversions: `min(gid, 10)` with a
// uint gid is uint; more permissive than Metal, which may call such a call ambiguous).
template<class A, class B, int K = (vt<A>::is_vec ? 2 : 0) + (vt<B>::is_vec ? 1 : 0)> struct common {};
template<class A, class B> struct common<A, B, 0> { typedef decltype(A() + B()) type; };
template<class A> struct common<A, A, 0> { typedef A type; };
template<class A> struct common<A, A, 3> { typedef A type; };
template<class A, class B> struct common<A, B, 2> { typedef A type; };
template<class A, class B> struct common<A, B, 1> { typedef B type; };
template<class A, class B> using common_t = typename common<A, B>::type;

template<class V, class F> constexpr V map1(V a, F f) {
  if constexpr (vt<V>::is_vec) { for (int i = 0; i < vt<V>::n; ++i) a[i] = f(a[i]); return a; }
  else return f(a);
}
template<class V, class F> constexpr V map2(V a, V b, F f) {
  if constexpr (vt<V>::is_vec) { for (int i = 0; i < vt<V>::n; ++i) a[i] = f(a[i], b[i]); return a; }
  else return f(a, b);
}
template<class V, class F> constexpr V map3(V a, V b, V c, F f) {
  if constexpr (vt<V>::is_vec) { for (int i = 0; i < vt<V>::n; ++i) a[i] = f(a[i], b[i], c[i]); return a; }
  else return f(a, b, c);
}
// Elementwise predicate: bool for a scalar, boolN for a vector.
template<class V, class F> constexpr auto mapb(V a, F f) {
  if constexpr (vt<V>::is_vec) { boolvec<vt<V>::n> r; for (int i = 0; i < vt<V>::n; ++i) r[i] = f(a[i]); return r; }
  else return (bool)f(a);
}
template<class V, class F> constexpr auto mapb2(V a, V b, F f) {
  if constexpr (vt<V>::is_vec) { boolvec<vt<V>::n> r; for (int i = 0; i < vt<V>::n; ++i) r[i] = f(a[i], b[i]); return r; }
  else return (bool)f(a, b);
}
template<class T> constexpr bool truth(T m) { return m != 0; }
constexpr bool truth(bool m) { return m; }

}  // namespace tmps_sim

// Unary float function from a clang elementwise builtin (handles vectors itself).
#define TMPS_F1B(NAME, BUILTIN)                                                            \
  template<class T> inline T NAME(T x) { return ::tmps_sim::from_f<T>(BUILTIN(::tmps_sim::to_f(x))); }
// Unary float function from a scalar float expression in `v`, applied per element.
#define TMPS_F1(NAME, EXPR)                                                                \
  template<class T> inline T NAME(T x) {                                                   \
    return ::tmps_sim::from_f<T>(::tmps_sim::map1(::tmps_sim::to_f(x), [](float v) { return (float)(EXPR); })); \
  }
// Binary float function of scalar floats `p`, `q`; one argument may be a scalar.
#define TMPS_F2(NAME, EXPR)                                                                \
  template<class A, class B> inline ::tmps_sim::common_t<A, B> NAME(A a, B b) {            \
    typedef ::tmps_sim::common_t<A, B> R;                                                  \
    return ::tmps_sim::from_f<R>(::tmps_sim::map2(::tmps_sim::to_f(::tmps_sim::as<R>(a)),  \
        ::tmps_sim::to_f(::tmps_sim::as<R>(b)), [](float p, float q) { return (float)(EXPR); })); \
  }

namespace metal {

// ---- float math ----
TMPS_F1B(sin, __builtin_elementwise_sin)
TMPS_F1B(cos, __builtin_elementwise_cos)
TMPS_F1B(tan, __builtin_elementwise_tan)
TMPS_F1B(asin, __builtin_elementwise_asin)
TMPS_F1B(acos, __builtin_elementwise_acos)
TMPS_F1B(atan, __builtin_elementwise_atan)
TMPS_F1B(sinh, __builtin_elementwise_sinh)
TMPS_F1B(cosh, __builtin_elementwise_cosh)
TMPS_F1B(tanh, __builtin_elementwise_tanh)
TMPS_F1(asinh, __builtin_asinhf(v))
TMPS_F1(acosh, __builtin_acoshf(v))
TMPS_F1(atanh, __builtin_atanhf(v))
TMPS_F1(sinpi, __builtin_sinf(v * 3.14159265358979323846f))
TMPS_F1(cospi, __builtin_cosf(v * 3.14159265358979323846f))
TMPS_F1(tanpi, __builtin_tanf(v * 3.14159265358979323846f))
TMPS_F1B(exp, __builtin_elementwise_exp)
TMPS_F1B(exp2, __builtin_elementwise_exp2)
TMPS_F1(exp10, __builtin_powf(10.0f, v))  // not exp10f: macOS libm lacks it
TMPS_F1B(log, __builtin_elementwise_log)
TMPS_F1B(log2, __builtin_elementwise_log2)
TMPS_F1B(log10, __builtin_elementwise_log10)
TMPS_F1(logb, __builtin_logbf(v))
TMPS_F1(erf, __builtin_erff(v))
TMPS_F1(erfc, __builtin_erfcf(v))
TMPS_F1(expm1, __builtin_expm1f(v))
TMPS_F1(log1p, __builtin_log1pf(v))
TMPS_F1(cbrt, __builtin_cbrtf(v))
TMPS_F1B(sqrt, __builtin_elementwise_sqrt)
TMPS_F1(rsqrt, 1.0f / __builtin_sqrtf(v))
TMPS_F1B(floor, __builtin_elementwise_floor)
TMPS_F1B(ceil, __builtin_elementwise_ceil)
TMPS_F1B(trunc, __builtin_elementwise_trunc)
TMPS_F1B(round, __builtin_elementwise_round)  // halfway cases away from zero
TMPS_F1B(rint, __builtin_elementwise_roundeven)  // halfway cases to even
TMPS_F1B(fabs, __builtin_elementwise_abs)
TMPS_F1(fract, __builtin_fminf(v - __builtin_floorf(v), 0x1.fffffep-1f))
TMPS_F1(saturate, __builtin_fminf(__builtin_fmaxf(v, 0.0f), 1.0f))
TMPS_F1(sign, v > 0.0f ? 1.0f : v < 0.0f ? -1.0f : v == v ? v : 0.0f)
TMPS_F2(pow, __builtin_powf(p, q))
TMPS_F2(powr, __builtin_powf(p, q))
TMPS_F2(atan2, __builtin_atan2f(p, q))
TMPS_F2(fmod, __builtin_fmodf(p, q))
TMPS_F2(remainder, __builtin_remainderf(p, q))
TMPS_F2(copysign, __builtin_copysignf(p, q))
TMPS_F2(fdim, p > q ? p - q : (p != p || q != q) ? p + q : 0.0f)
TMPS_F2(nextafter, __builtin_nextafterf(p, q))
TMPS_F2(fmin, __builtin_fminf(p, q))  // a NaN argument yields the other one
TMPS_F2(fmax, __builtin_fmaxf(p, q))
TMPS_F2(divide, p / q)
TMPS_F2(step, q < p ? 0.0f : 1.0f)  // step(edge, x)

template<class T> inline T fma(T a, T b, T c) {
  return ::tmps_sim::from_f<T>(__builtin_elementwise_fma(::tmps_sim::to_f(a), ::tmps_sim::to_f(b), ::tmps_sim::to_f(c)));
}
template<class T, class A> inline T mix(T x, T y, A a) {
  auto fx = ::tmps_sim::to_f(x), fy = ::tmps_sim::to_f(y);
  return ::tmps_sim::from_f<T>(fx + (fy - fx) * ::tmps_sim::to_f(::tmps_sim::as<T>(a)));
}
template<class E0, class E1, class T> inline T smoothstep(E0 e0, E1 e1, T x) {
  auto a = ::tmps_sim::to_f(::tmps_sim::as<T>(e0)), b = ::tmps_sim::to_f(::tmps_sim::as<T>(e1));
  auto t = (::tmps_sim::to_f(x) - a) / (b - a);
  t = __builtin_elementwise_min(__builtin_elementwise_max(t, 0.0f), 1.0f);
  return ::tmps_sim::from_f<T>(t * t * (3.0f - 2.0f * t));
}
template<class T> inline T sincos(T x, thread T& c) { c = cos(x); return sin(x); }
template<class T> inline T modf(T x, thread T& ip) {
  ip = trunc(x);
  return ::tmps_sim::from_f<T>(::tmps_sim::map1(::tmps_sim::to_f(x),
      [](float v) { return __builtin_isinf(v) ? __builtin_copysignf(0.0f, v) : v - __builtin_truncf(v); }));
}
template<class T, class I> inline T ldexp(T x, I k) {
  auto f = ::tmps_sim::to_f(x);
  if constexpr (::tmps_sim::vt<T>::is_vec) {
    for (int i = 0; i < ::tmps_sim::vt<T>::n; ++i) f[i] = __builtin_ldexpf(f[i], (int)::tmps_sim::as<typename ::tmps_sim::vec_of<int, ::tmps_sim::vt<T>::n>::type>(k)[i]);
  } else {
    f = __builtin_ldexpf(f, (int)k);
  }
  return ::tmps_sim::from_f<T>(f);
}
template<class T, class I> inline T frexp(T x, thread I& e) {
  auto f = ::tmps_sim::to_f(x);
  if constexpr (::tmps_sim::vt<T>::is_vec) {
    for (int i = 0; i < ::tmps_sim::vt<T>::n; ++i) { int k; f[i] = __builtin_frexpf(f[i], &k); e[i] = k; }
  } else {
    int k; f = __builtin_frexpf(f, &k); e = k;
  }
  return ::tmps_sim::from_f<T>(f);
}
template<class T> inline auto ilogb(T x) {
  typedef typename ::tmps_sim::vec_of<int, ::tmps_sim::vt<T>::n>::type R;
  auto f = ::tmps_sim::to_f(x);
  if constexpr (::tmps_sim::vt<T>::is_vec) { R r; for (int i = 0; i < ::tmps_sim::vt<T>::n; ++i) r[i] = __builtin_ilogbf(f[i]); return r; }
  else return (R)__builtin_ilogbf(f);
}

// ---- min/max/abs/clamp: integers and floats ----
template<class A, class B> constexpr ::tmps_sim::common_t<A, B> min(A a, B b) {
  typedef ::tmps_sim::common_t<A, B> R;
  if constexpr (::tmps_sim::is_floatish<R>::value)  // scalar builtin: usable in constexpr
    return (R)__builtin_fminf((float)::tmps_sim::as<R>(a), (float)::tmps_sim::as<R>(b));
  else if constexpr (::tmps_sim::is_floatish<typename ::tmps_sim::vt<R>::elem>::value)
    return ::tmps_sim::from_f<R>(__builtin_elementwise_min(::tmps_sim::to_f(::tmps_sim::as<R>(a)), ::tmps_sim::to_f(::tmps_sim::as<R>(b))));
  else return __builtin_elementwise_min(::tmps_sim::as<R>(a), ::tmps_sim::as<R>(b));
}
template<class A, class B> constexpr ::tmps_sim::common_t<A, B> max(A a, B b) {
  typedef ::tmps_sim::common_t<A, B> R;
  if constexpr (::tmps_sim::is_floatish<R>::value)  // scalar builtin: usable in constexpr
    return (R)__builtin_fmaxf((float)::tmps_sim::as<R>(a), (float)::tmps_sim::as<R>(b));
  else if constexpr (::tmps_sim::is_floatish<typename ::tmps_sim::vt<R>::elem>::value)
    return ::tmps_sim::from_f<R>(__builtin_elementwise_max(::tmps_sim::to_f(::tmps_sim::as<R>(a)), ::tmps_sim::to_f(::tmps_sim::as<R>(b))));
  else return __builtin_elementwise_max(::tmps_sim::as<R>(a), ::tmps_sim::as<R>(b));
}
template<class T> constexpr T abs(T x) {
  if constexpr (::tmps_sim::is_floatish<T>::value) return (T)__builtin_fabsf((float)x);
  else if constexpr (::tmps_sim::is_floatish<typename ::tmps_sim::vt<T>::elem>::value)
    return ::tmps_sim::from_f<T>(__builtin_elementwise_abs(::tmps_sim::to_f(x)));
  else return __builtin_elementwise_abs(x);
}
template<class T, class L, class H> constexpr T clamp(T x, L lo, H hi) { return min(max(x, ::tmps_sim::as<T>(lo)), ::tmps_sim::as<T>(hi)); }
template<class T> constexpr T min3(T a, T b, T c) { return min(min(a, b), c); }
template<class T> constexpr T max3(T a, T b, T c) { return max(max(a, b), c); }
template<class T> constexpr T median3(T a, T b, T c) { return max(min(a, b), min(max(a, b), c)); }
template<class T> inline T fmin3(T a, T b, T c) { return fmin(fmin(a, b), c); }
template<class T> inline T fmax3(T a, T b, T c) { return fmax(fmax(a, b), c); }
template<class T> inline T fmedian3(T a, T b, T c) { return fmax(fmin(a, b), fmin(fmax(a, b), c)); }

// ---- integer functions ----
template<class T> constexpr T clz(T x) {
  return ::tmps_sim::map1(x, [](auto v) { return (decltype(v))__builtin_clzg((__make_unsigned(decltype(v)))v, (int)sizeof(v) * 8); });
}
template<class T> constexpr T ctz(T x) {
  return ::tmps_sim::map1(x, [](auto v) { return (decltype(v))__builtin_ctzg((__make_unsigned(decltype(v)))v, (int)sizeof(v) * 8); });
}
template<class T> constexpr T popcount(T x) {
  return ::tmps_sim::map1(x, [](auto v) { return (decltype(v))__builtin_popcountg((__make_unsigned(decltype(v)))v); });
}
template<class T> constexpr T reverse_bits(T x) { return __builtin_elementwise_bitreverse(x); }
template<class T, class S> constexpr T rotate(T x, S s) {
  return ::tmps_sim::map2(x, ::tmps_sim::as<T>(s), [](auto v, auto k) {
    typedef __make_unsigned(decltype(v)) U;
    const unsigned bits = sizeof(v) * 8, r = (unsigned)(U)k % bits;
    return (decltype(v))(U)(((U)v << r) | (r ? (U)v >> (bits - r) : (U)0));
  });
}
template<class T> constexpr T absdiff(T x, T y) {
  return ::tmps_sim::map2(x, y, [](auto a, auto b) {
    typedef __make_unsigned(decltype(a)) U;
    return (decltype(a))(a > b ? (U)((U)a - (U)b) : (U)((U)b - (U)a));
  });
}
template<class A, class B> constexpr ::tmps_sim::common_t<A, B> add_sat(A a, B b) {
  typedef ::tmps_sim::common_t<A, B> R;
  return __builtin_elementwise_add_sat(::tmps_sim::as<R>(a), ::tmps_sim::as<R>(b));
}
template<class A, class B> constexpr ::tmps_sim::common_t<A, B> sub_sat(A a, B b) {
  typedef ::tmps_sim::common_t<A, B> R;
  return __builtin_elementwise_sub_sat(::tmps_sim::as<R>(a), ::tmps_sim::as<R>(b));
}
template<class T> constexpr T hadd(T x, T y) { return (x >> 1) + (y >> 1) + (x & y & 1); }
template<class T> constexpr T rhadd(T x, T y) { return (x >> 1) + (y >> 1) + ((x | y) & 1); }
template<class T> constexpr T mulhi(T x, T y) {
  return ::tmps_sim::map2(x, y, [](auto a, auto b) {
    typedef decltype(a) E;
    typedef __typeof__(((E)-1 < 0) ? (__int128)0 : (unsigned __int128)0) W;
    return (E)(((W)a * (W)b) >> (sizeof(E) * 8));
  });
}
template<class T> constexpr T mul24(T x, T y) { return x * y; }
template<class T> constexpr T mad24(T x, T y, T z) { return x * y + z; }
template<class T> constexpr T madhi(T x, T y, T z) { return mulhi(x, y) + z; }
template<class T> constexpr T madsat(T x, T y, T z) {
  return ::tmps_sim::map3(x, y, z, [](auto a, auto b, auto c) {
    typedef decltype(a) E;
    const bool sgn = (E)-1 < 0;
    const int bits = sizeof(E) * 8;
    __int128 lo = sgn ? -((__int128)1 << (bits - 1)) : 0;
    __int128 hi = sgn ? ((__int128)1 << (bits - 1)) - 1 : ((__int128)1 << bits) - 1;
    __int128 r = (__int128)a * (__int128)b + (__int128)c;  // 64-bit unsigned products may wrap
    return (E)(r < lo ? lo : r > hi ? hi : r);
  });
}
template<class T> constexpr T extract_bits(T x, uint offset, uint bits) {
  return ::tmps_sim::map1(x, [=](auto v) {
    typedef decltype(v) E; typedef __make_unsigned(E) U;
    const uint w = sizeof(E) * 8;
    if (bits == 0) return (E)0;
    U u = (U)((U)v << (w - offset - bits));
    if constexpr ((E)-1 < 0) return (E)((E)u >> (w - bits));  // sign-extends
    else return (E)(u >> (w - bits));
  });
}
template<class T> constexpr T insert_bits(T base, T ins, uint offset, uint bits) {
  return ::tmps_sim::map2(base, ins, [=](auto b, auto i) {
    typedef decltype(b) E; typedef __make_unsigned(E) U;
    const uint w = sizeof(E) * 8;
    U mask = bits == 0 ? (U)0 : (U)(((U)~(U)0 >> (w - bits)) << offset);
    return (E)(((U)b & (U)~mask) | (((U)i << offset) & mask));
  });
}

// ---- geometric (computed in float) ----
template<class T> inline typename ::tmps_sim::vt<T>::elem dot(T a, T b) {
  auto p = ::tmps_sim::to_f(a) * ::tmps_sim::to_f(b);
  float s = 0.0f;
  for (int i = 0; i < ::tmps_sim::vt<T>::n; ++i) s += p[i];
  return (typename ::tmps_sim::vt<T>::elem)s;
}
template<class T> inline T cross(T a, T b) {
  static_assert(::tmps_sim::vt<T>::n == 3, "cross: needs 3-component vectors");
  auto x = ::tmps_sim::to_f(a), y = ::tmps_sim::to_f(b);
  return ::tmps_sim::from_f<T>(::tmps_sim::ev<float, 3>{x.y * y.z - x.z * y.y, x.z * y.x - x.x * y.z, x.x * y.y - x.y * y.x});
}
template<class T> inline typename ::tmps_sim::vt<T>::elem length_squared(T a) { return dot(a, a); }
template<class T> inline typename ::tmps_sim::vt<T>::elem length(T a) {
  auto p = ::tmps_sim::to_f(a) * ::tmps_sim::to_f(a);
  float s = 0.0f;
  for (int i = 0; i < ::tmps_sim::vt<T>::n; ++i) s += p[i];
  return (typename ::tmps_sim::vt<T>::elem)__builtin_sqrtf(s);
}
template<class T> inline typename ::tmps_sim::vt<T>::elem distance(T a, T b) { return length(::tmps_sim::from_f<T>(::tmps_sim::to_f(a) - ::tmps_sim::to_f(b))); }
template<class T> inline typename ::tmps_sim::vt<T>::elem distance_squared(T a, T b) { return length_squared(a - b); }
template<class T> inline T normalize(T a) {
  auto f = ::tmps_sim::to_f(a);
  auto p = f * f;
  float s = 0.0f;
  for (int i = 0; i < ::tmps_sim::vt<T>::n; ++i) s += p[i];
  return ::tmps_sim::from_f<T>(f * (1.0f / __builtin_sqrtf(s)));
}
template<class T> inline T faceforward(T n, T i, T nref) { return dot(nref, i) < 0 ? n : -n; }
template<class T> inline T reflect(T i, T n) { return i - 2 * dot(n, i) * n; }

// ---- relational ----
#define TMPS_PRED(NAME, EXPR)                                                         \
  template<class T> constexpr auto NAME(T x) {                                         \
    return ::tmps_sim::mapb(::tmps_sim::to_f(x), [](float v) { return (bool)(EXPR); }); \
  }
TMPS_PRED(isnan, __builtin_isnan(v))
TMPS_PRED(isinf, __builtin_isinf(v))
TMPS_PRED(isfinite, __builtin_isfinite(v))
TMPS_PRED(isnormal, __builtin_isnormal(v))
TMPS_PRED(signbit, __builtin_signbit(v))
#undef TMPS_PRED
template<class T> constexpr auto isordered(T x, T y) {
  return ::tmps_sim::mapb2(::tmps_sim::to_f(x), ::tmps_sim::to_f(y), [](float a, float b) { return a == a && b == b; });
}
template<class T> constexpr auto isunordered(T x, T y) {
  return ::tmps_sim::mapb2(::tmps_sim::to_f(x), ::tmps_sim::to_f(y), [](float a, float b) { return a != a || b != b; });
}
// all/any take boolN, a comparison's integer mask, or a scalar bool.
template<class M> constexpr bool all(M m) {
  if constexpr (::tmps_sim::vt<M>::is_vec) {
    for (int i = 0; i < ::tmps_sim::vt<M>::n; ++i) if (!::tmps_sim::truth(m[i])) return false;
    return true;
  } else return (bool)m;
}
template<class M> constexpr bool any(M m) {
  if constexpr (::tmps_sim::vt<M>::is_vec) {
    for (int i = 0; i < ::tmps_sim::vt<M>::n; ++i) if (::tmps_sim::truth(m[i])) return true;
    return false;
  } else return (bool)m;
}
// select(a, b, c): b where c is true, else a (c: bool, boolN, or a comparison mask).
template<class T, class M> constexpr T select(T a, T b, M c) {
  if constexpr (::tmps_sim::vt<T>::is_vec && ::tmps_sim::vt<M>::is_vec) {
    static_assert((int)::tmps_sim::vt<T>::n == (int)::tmps_sim::vt<M>::n, "select: mask and values differ in size");
    for (int i = 0; i < ::tmps_sim::vt<T>::n; ++i) if (::tmps_sim::truth(c[i])) a[i] = b[i];
    return a;
  } else return c ? b : a;
}

}  // namespace metal

#define TMPS_MATH_NAMES(X)                                                                   \
  X(sin) X(cos) X(tan) X(asin) X(acos) X(atan) X(sinh) X(cosh) X(tanh) X(asinh) X(acosh)      \
  X(atanh) X(sinpi) X(cospi) X(tanpi) X(exp) X(exp2) X(exp10) X(log) X(log2) X(log10) X(logb) \
  X(erf) X(erfc) X(expm1) X(log1p) X(cbrt) X(sqrt) X(rsqrt) X(floor) X(ceil) X(trunc) X(round) \
  X(rint) X(fabs) X(abs) X(fract) X(saturate) X(sign) X(pow) X(powr) X(atan2) X(fmod)         \
  X(remainder) X(copysign) X(fdim) X(nextafter) X(fmin) X(fmax) X(divide) X(step) X(fma)      \
  X(mix) X(smoothstep) X(sincos) X(modf) X(ldexp) X(frexp) X(ilogb) X(min) X(max) X(clamp)    \
  X(fmin3) X(fmax3) X(fmedian3) X(dot) X(cross) X(length) X(length_squared) X(distance)       \
  X(distance_squared) X(normalize) X(faceforward) X(reflect) X(isnan) X(isinf) X(isfinite)    \
  X(signbit) X(select)
#define TMPS_USING(NAME) using ::metal::NAME;
namespace metal {
namespace fast { TMPS_MATH_NAMES(TMPS_USING) }
namespace precise { TMPS_MATH_NAMES(TMPS_USING) }
}  // namespace metal
#undef TMPS_USING
#undef TMPS_MATH_NAMES
#undef TMPS_F1B
#undef TMPS_F1
#undef TMPS_F2

#include "tmps_metal_limits.h"

#endif
