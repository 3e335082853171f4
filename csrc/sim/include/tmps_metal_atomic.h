// Part of the simulator's metal_stdlib shim (include <metal_stdlib>, not this file).
// Atomics. Threadgroups run on several OS threads, so these are real atomics (__atomic
// builtins). Functions take the object pointer as a template parameter so that device and
// threadgroup pointers (real address spaces in strict mode) are both accepted.
// atomic_float add/sub/min/max are compare-and-swap loops on the value's bits.
#ifndef TMPS_METAL_ATOMIC_H
#define TMPS_METAL_ATOMIC_H

#include "tmps_metal_simd.h"

namespace metal {

// Before MSL 3.2 memory_order_relaxed is the only order, and there are no thread scopes and no
// fences (docs/msl-versions.md): hidden below 320 so that such kernels fail here as on Metal.
enum memory_order {
  memory_order_relaxed = __ATOMIC_RELAXED,
#if __METAL_VERSION__ >= 320
  memory_order_consume = __ATOMIC_CONSUME,
  memory_order_acquire = __ATOMIC_ACQUIRE,
  memory_order_release = __ATOMIC_RELEASE,
  memory_order_acq_rel = __ATOMIC_ACQ_REL,
  memory_order_seq_cst = __ATOMIC_SEQ_CST,
#endif
};
#if __METAL_VERSION__ >= 320
enum thread_scope { thread_scope_thread, thread_scope_simdgroup, thread_scope_threadgroup, thread_scope_device };
#endif

template<class T> struct atomic {
  typedef T value_type;
  T value_;  // plain storage: Metal atomics are only touched through the functions below
  atomic() = default;
  atomic(const atomic&) = delete;
  atomic& operator=(const atomic&) = delete;
};
typedef atomic<int> atomic_int;
typedef atomic<uint> atomic_uint;
typedef atomic<bool> atomic_bool;
typedef atomic<float> atomic_float;
typedef atomic<ulong> atomic_ulong;
typedef atomic<long> atomic_long;

}  // namespace metal

namespace tmps_sim {
// Generic pointer to the atomic's storage (A may carry an address space, const, volatile).
template<class A> inline typename A::value_type* slot_of(A* obj) {
  return (typename A::value_type*)(__UINTPTR_TYPE__)obj;
}
template<class T, class F> inline T cas_loop(T* p, F f, int order) {
  T old;
  __atomic_load(p, &old, __ATOMIC_RELAXED);
  T next;
  do {
    next = f(old);
  } while (!__atomic_compare_exchange(p, &old, &next, true, order, __ATOMIC_RELAXED));
  return old;
}
template<class T> inline T no_float_bitop(T a) {
  static_assert(!same<T, float>::value, "atomic_fetch_and/or/xor_explicit: not available for atomic_float");
  return a;
}
template<class T> struct is_float_atomic { enum { value = same<T, float>::value }; };
}  // namespace tmps_sim

namespace metal {

#define TMPS_ATOMIC_VALUE typename ::tmps_sim::identity<typename A::value_type>::type

template<class A> inline void atomic_store_explicit(A* obj, TMPS_ATOMIC_VALUE v, memory_order o) {
  typename A::value_type x = v;
  __atomic_store(::tmps_sim::slot_of(obj), &x, (int)o);
}
template<class A> inline typename A::value_type atomic_load_explicit(A* obj, memory_order o) {
  typename A::value_type r;
  __atomic_load(::tmps_sim::slot_of(obj), &r, (int)o);
  return r;
}
template<class A> inline typename A::value_type atomic_exchange_explicit(A* obj, TMPS_ATOMIC_VALUE v, memory_order o) {
  TMPS_ATOMIC_HOOK(obj, sizeof(typename A::value_type));
  typename A::value_type x = v, r;
  __atomic_exchange(::tmps_sim::slot_of(obj), &x, &r, (int)o);
  return r;
}
// On failure *expected receives the current value (compared bitwise, also for float).
template<class A, class E>
inline bool atomic_compare_exchange_weak_explicit(A* obj, E* expected, TMPS_ATOMIC_VALUE desired, memory_order ok, memory_order fail) {
  TMPS_ATOMIC_HOOK(obj, sizeof(typename A::value_type));
  typename A::value_type d = desired;
  return __atomic_compare_exchange(::tmps_sim::slot_of(obj), (typename A::value_type*)(__UINTPTR_TYPE__)expected, &d, true, (int)ok, (int)fail);
}
template<class A, class E>
inline bool atomic_compare_exchange_strong_explicit(A* obj, E* expected, TMPS_ATOMIC_VALUE desired, memory_order ok, memory_order fail) {
  TMPS_ATOMIC_HOOK(obj, sizeof(typename A::value_type));
  typename A::value_type d = desired;
  return __atomic_compare_exchange(::tmps_sim::slot_of(obj), (typename A::value_type*)(__UINTPTR_TYPE__)expected, &d, false, (int)ok, (int)fail);
}

#define TMPS_ATOMIC_RMW(NAME, BUILTIN, FLOAT_EXPR)                                                  \
  template<class A> inline typename A::value_type NAME(A* obj, TMPS_ATOMIC_VALUE v, memory_order o) { \
    typedef typename A::value_type T;                                                                \
    TMPS_ATOMIC_HOOK(obj, sizeof(T));                                                                \
    if constexpr (::tmps_sim::is_float_atomic<T>::value) {                                           \
      return ::tmps_sim::cas_loop(::tmps_sim::slot_of(obj), [v](T a) { return (T)(FLOAT_EXPR); }, (int)o); \
    } else {                                                                                         \
      static_assert(__is_integral(T), #NAME ": needs an integer or float atomic");                   \
      return BUILTIN(::tmps_sim::slot_of(obj), v, (int)o);                                           \
    }                                                                                                \
  }
TMPS_ATOMIC_RMW(atomic_fetch_add_explicit, __atomic_fetch_add, a + v)
TMPS_ATOMIC_RMW(atomic_fetch_sub_explicit, __atomic_fetch_sub, a - v)
TMPS_ATOMIC_RMW(atomic_fetch_min_explicit, __atomic_fetch_min, __builtin_fminf(a, v))
TMPS_ATOMIC_RMW(atomic_fetch_max_explicit, __atomic_fetch_max, __builtin_fmaxf(a, v))
TMPS_ATOMIC_RMW(atomic_fetch_and_explicit, __atomic_fetch_and, ::tmps_sim::no_float_bitop(a))
TMPS_ATOMIC_RMW(atomic_fetch_or_explicit, __atomic_fetch_or, ::tmps_sim::no_float_bitop(a))
TMPS_ATOMIC_RMW(atomic_fetch_xor_explicit, __atomic_fetch_xor, ::tmps_sim::no_float_bitop(a))
#undef TMPS_ATOMIC_RMW

// Metal's 64-bit atomics: atomic_min/max_explicit on atomic_ulong, no result.
template<class A> inline void atomic_min_explicit(A* obj, TMPS_ATOMIC_VALUE v, memory_order o) { atomic_fetch_min_explicit(obj, v, o); }
template<class A> inline void atomic_max_explicit(A* obj, TMPS_ATOMIC_VALUE v, memory_order o) { atomic_fetch_max_explicit(obj, v, o); }
#undef TMPS_ATOMIC_VALUE

#if __METAL_VERSION__ >= 320
inline void atomic_thread_fence(mem_flags, memory_order o, thread_scope = thread_scope_device) { __atomic_thread_fence((int)o); }
#endif

}  // namespace metal

#endif
