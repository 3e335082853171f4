// The simulator's metal_stdlib shim: Metal Shading Language as freestanding C++17.
// Every public header (<metal_stdlib>, <metal_math>, ...) includes this one file.
//
// How to compile a kernel TU (no system headers; everything comes from compiler builtins):
//   zig c++ -shared -fPIC -O2 -g0 -nostdinc -nostdinc++ -fno-exceptions -fno-rtti \
//     -Xclang -ffloat16-excess-precision=none -Xclang -fbfloat16-excess-precision=none \
//     -std=c++17 -I <this dir> -x c++ k.cpp -o k.so
//   (the two excess-precision flags round every half / bfloat operation like the GPU does,
//   instead of keeping intermediates in float).
// Strict check (Metal's address spaces, no double): syntax only, about 0.05 s:
//   zig clang -fsyntax-only -nostdinc -nostdinc++ -fno-exceptions -fno-rtti \
//     -Xclang -ffloat16-excess-precision=none -std=c++17 -DTMPS_SIM_STRICT -I <this dir> -x c++ k.cpp
//   Use `zig clang` (the plain clang driver): `zig c++ -fsyntax-only` reports a bogus
//   "failed to rename" error and exits non-zero. See /work/notes/strict_check.md.
//
// Contract with the MSL frontend:
//   - `kernel` expands to nothing; device/constant/threadgroup/thread expand to nothing
//     (constant: to `const`) unless TMPS_SIM_STRICT, where device/constant/threadgroup are
//     clang address spaces 1/2/3 (constant also const), `double`, `goto`, `virtual` are
//     poisoned, and `coherent(device)` (MSL 3.2) is `volatile` (no implicit drop to a plain pointer).
//     SIMD-/quad-group data functions take only Metal's value types there (tmps_metal_simd.h).
//   - ::tmps_sim::threadgroup_static<T>(id, line): storage of a kernel-scope threadgroup T.
//   - ::tmps_sim::position<T>(const tmps_u32 (&v)[3]) and position<T>(tmps_u32): thread
//     positions as the parameter's type (scalar: v[0]; N-vector: first N).
//   - `extern "C" const tmps_sim_runtime* tmps_sim_rt;` is only declared here.
// Strict-mode false positive: copying a struct out of (or assigning one into) device/constant/
// threadgroup memory fails (clang has no generic address space in C++); scalars, vectors and
// pointers are fine. Do not use -ffast-math (breaks NaN/inf, half rounding, bfloat conversion).
// Not C++: MSL half literals (1.0h) must be rewritten by the frontend, e.g. to half(1.0f).
// Differences from Metal: unsuffixed floating literals (1.0) are double here, so `x * 1.0`
// is computed in double and rounded once (Metal has no double); C-style casts between vector types
// reinterpret bits (use T4(v) or static_cast<T4>(v), which convert); comparisons of number
// vectors give clang integer masks (-1/0) that convert to boolN; boolN has .x/.y/.z/.w and [i]
// but no multi-component swizzles; vec<T, N>(a, b, ...) with several arguments is not
// supported (vec<T, N>(s) splats; use float4(...) etc.).
#ifndef TMPS_METAL_H
#define TMPS_METAL_H

#pragma GCC visibility push(hidden)  // shim functions need no dynamic exports
#include "tmps_metal_base.h"
#include "tmps_metal_vector.h"
#include "tmps_metal_math.h"
#include "tmps_metal_simd.h"
#include "tmps_metal_matrix.h"
#include "tmps_metal_memcheck.h"
#include "tmps_metal_atomic.h"

namespace tmps_sim {
// Thread positions as the kernel parameter's type. Trusted (tmps_metal_simd.h): they read the
// runtime's thread record, which memcheck's fast path does not cover.
template<class T> TMPS_SHIM_TRUSTED inline T position(const tmps_u32 (&v)[3]) {
  typedef typename vt<T>::elem E;
  if constexpr (vt<T>::n == 2) return make<E, 2>(v[0], v[1]);
  else if constexpr (vt<T>::n == 3) return make<E, 3>(v[0], v[1], v[2]);
  else {
    static_assert(vt<T>::n == 1, "thread position: a scalar or a 2- or 3-component vector");
    return (T)v[0];
  }
}
template<class T> TMPS_SHIM_TRUSTED inline T position(tmps_u32 v) { return (T)v; }
}  // namespace tmps_sim
#pragma GCC visibility pop

// What TMPS_SITE names outside a collapsed kernel's SIMD-group statements: no SIMD-group context
// (the rewrite declares a local `tmps_sg` that hides this one; sim/simd_collapse.h).
static ::tmps_sim::sg_ctx* const tmps_sg __attribute__((unused)) = 0;

// Call-site ids for SIMD-group functions and source lines for barriers. A function-like
// macro does not re-expand its own name, so both `simd_sum(x)` and `metal::simd_sum(x)` work.
#define TMPS_SITE ::tmps_sim::site{__COUNTER__, __LINE__, tmps_sg}
#define threadgroup_barrier(...) threadgroup_barrier(TMPS_SITE, __VA_ARGS__)
#define simdgroup_barrier(...) simdgroup_barrier(TMPS_SITE, __VA_ARGS__)
#define simdgroup_multiply_accumulate(...) simdgroup_multiply_accumulate(TMPS_SITE, __VA_ARGS__)
#define simdgroup_multiply(...) simdgroup_multiply(TMPS_SITE, __VA_ARGS__)
#define simd_sum(...) simd_sum(TMPS_SITE, __VA_ARGS__)
#define simd_product(...) simd_product(TMPS_SITE, __VA_ARGS__)
#define simd_min(...) simd_min(TMPS_SITE, __VA_ARGS__)
#define simd_max(...) simd_max(TMPS_SITE, __VA_ARGS__)
#define simd_and(...) simd_and(TMPS_SITE, __VA_ARGS__)
#define simd_or(...) simd_or(TMPS_SITE, __VA_ARGS__)
#define simd_xor(...) simd_xor(TMPS_SITE, __VA_ARGS__)
#define simd_prefix_inclusive_sum(...) simd_prefix_inclusive_sum(TMPS_SITE, __VA_ARGS__)
#define simd_prefix_exclusive_sum(...) simd_prefix_exclusive_sum(TMPS_SITE, __VA_ARGS__)
#define simd_prefix_inclusive_product(...) simd_prefix_inclusive_product(TMPS_SITE, __VA_ARGS__)
#define simd_prefix_exclusive_product(...) simd_prefix_exclusive_product(TMPS_SITE, __VA_ARGS__)
#define simd_shuffle(...) simd_shuffle(TMPS_SITE, __VA_ARGS__)
#define simd_shuffle_xor(...) simd_shuffle_xor(TMPS_SITE, __VA_ARGS__)
#define simd_shuffle_up(...) simd_shuffle_up(TMPS_SITE, __VA_ARGS__)
#define simd_shuffle_down(...) simd_shuffle_down(TMPS_SITE, __VA_ARGS__)
#define simd_shuffle_rotate_up(...) simd_shuffle_rotate_up(TMPS_SITE, __VA_ARGS__)
#define simd_shuffle_rotate_down(...) simd_shuffle_rotate_down(TMPS_SITE, __VA_ARGS__)
#define simd_shuffle_and_fill_up(...) simd_shuffle_and_fill_up(TMPS_SITE, __VA_ARGS__)
#define simd_shuffle_and_fill_down(...) simd_shuffle_and_fill_down(TMPS_SITE, __VA_ARGS__)
#define simd_broadcast(...) simd_broadcast(TMPS_SITE, __VA_ARGS__)
#define simd_broadcast_first(...) simd_broadcast_first(TMPS_SITE, __VA_ARGS__)
#define simd_ballot(...) simd_ballot(TMPS_SITE, __VA_ARGS__)
#define simd_all(...) simd_all(TMPS_SITE, __VA_ARGS__)
#define simd_any(...) simd_any(TMPS_SITE, __VA_ARGS__)
#define simd_is_first() simd_is_first(TMPS_SITE)
#define simd_active_threads_mask() simd_active_threads_mask(TMPS_SITE)
#define quad_sum(...) quad_sum(TMPS_SITE, __VA_ARGS__)
#define quad_product(...) quad_product(TMPS_SITE, __VA_ARGS__)
#define quad_min(...) quad_min(TMPS_SITE, __VA_ARGS__)
#define quad_max(...) quad_max(TMPS_SITE, __VA_ARGS__)
#define quad_and(...) quad_and(TMPS_SITE, __VA_ARGS__)
#define quad_or(...) quad_or(TMPS_SITE, __VA_ARGS__)
#define quad_xor(...) quad_xor(TMPS_SITE, __VA_ARGS__)
#define quad_prefix_inclusive_sum(...) quad_prefix_inclusive_sum(TMPS_SITE, __VA_ARGS__)
#define quad_prefix_exclusive_sum(...) quad_prefix_exclusive_sum(TMPS_SITE, __VA_ARGS__)
#define quad_prefix_inclusive_product(...) quad_prefix_inclusive_product(TMPS_SITE, __VA_ARGS__)
#define quad_prefix_exclusive_product(...) quad_prefix_exclusive_product(TMPS_SITE, __VA_ARGS__)
#define quad_shuffle(...) quad_shuffle(TMPS_SITE, __VA_ARGS__)
#define quad_shuffle_xor(...) quad_shuffle_xor(TMPS_SITE, __VA_ARGS__)
#define quad_shuffle_up(...) quad_shuffle_up(TMPS_SITE, __VA_ARGS__)
#define quad_shuffle_down(...) quad_shuffle_down(TMPS_SITE, __VA_ARGS__)
#define quad_shuffle_rotate_up(...) quad_shuffle_rotate_up(TMPS_SITE, __VA_ARGS__)
#define quad_shuffle_rotate_down(...) quad_shuffle_rotate_down(TMPS_SITE, __VA_ARGS__)
#define quad_shuffle_and_fill_up(...) quad_shuffle_and_fill_up(TMPS_SITE, __VA_ARGS__)
#define quad_shuffle_and_fill_down(...) quad_shuffle_and_fill_down(TMPS_SITE, __VA_ARGS__)
#define quad_broadcast(...) quad_broadcast(TMPS_SITE, __VA_ARGS__)
#define quad_broadcast_first(...) quad_broadcast_first(TMPS_SITE, __VA_ARGS__)
#define quad_ballot(...) quad_ballot(TMPS_SITE, __VA_ARGS__)
#define quad_all(...) quad_all(TMPS_SITE, __VA_ARGS__)
#define quad_any(...) quad_any(TMPS_SITE, __VA_ARGS__)
#define quad_is_first() quad_is_first(TMPS_SITE)
#define quad_active_threads_mask() quad_active_threads_mask(TMPS_SITE)

// MSL's static_cast converts vector values; clang's reinterprets same-sized vectors.
#define static_cast ::tmps_sim::cast

// `constant const T` (a common MSL spelling) repeats const once `constant` means const.
#pragma clang diagnostic ignored "-Wduplicate-decl-specifier"

#ifdef TMPS_SIM_STRICT
// Not MSL: doubles, goto, virtual functions, inline assembly, dynamic allocation (the strict
// check's diagnostics name each "not supported in Metal").
#pragma clang poison double goto virtual asm __asm__ __asm new delete
#endif

#endif
