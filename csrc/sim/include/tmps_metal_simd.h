// Part of the simulator's metal_stdlib shim (include <metal_stdlib>, not this file).
// Barriers and SIMD-group / quad-group functions, implemented over the runtime's exchange:
// every lane deposits its value, gets the snapshot of all participants and computes its own
// result. Lanes that did not reach the call site (exited, or diverged) are inactive: they
// contribute nothing to reductions, and a shuffle that reads an inactive (or out-of-range)
// lane returns the caller's own value. Reductions and prefix operations run in lane order.
//
// Each call site needs a unique id: the same-named macros at the end of tmps_metal.h insert
// `::tmps_sim::site{__COUNTER__, __LINE__}` as the first argument.
#ifndef TMPS_METAL_SIMD_H
#define TMPS_METAL_SIMD_H

#include "tmps_metal_math.h"

namespace metal {

enum class mem_flags : unsigned {
  mem_none = TMPS_MEM_NONE,
  mem_device = TMPS_MEM_DEVICE,
  mem_threadgroup = TMPS_MEM_THREADGROUP,
  mem_texture = TMPS_MEM_TEXTURE,
  mem_threadgroup_imageblock = TMPS_MEM_THREADGROUP_IMAGEBLOCK,
};
constexpr mem_flags operator|(mem_flags a, mem_flags b) { return (mem_flags)((unsigned)a | (unsigned)b); }
constexpr mem_flags operator&(mem_flags a, mem_flags b) { return (mem_flags)((unsigned)a & (unsigned)b); }

inline void threadgroup_barrier(::tmps_sim::site s, mem_flags f) { tmps_sim_rt->threadgroup_barrier((unsigned)f, s.line); }
inline void simdgroup_barrier(::tmps_sim::site s, mem_flags f) { tmps_sim_rt->simdgroup_barrier((unsigned)f, s.line); }

// Result of simd_ballot: bit i is lane i's predicate; all()/any() look at active lanes only.
class simd_vote {
 public:
  typedef ulong vote_t;
  explicit constexpr simd_vote(vote_t v = 0, vote_t active = 0xffffffffu) : v_(v), active_(active) {}
  explicit constexpr operator vote_t() const { return v_; }
  constexpr bool all() const { return (v_ & active_) == active_; }
  constexpr bool any() const { return v_ != 0; }
 private:
  vote_t v_, active_;
};
class quad_vote {
 public:
  typedef ushort vote_t;
  explicit constexpr quad_vote(vote_t v = 0, vote_t active = 0xf) : v_(v), active_(active) {}
  explicit constexpr operator vote_t() const { return v_; }
  constexpr bool all() const { return (v_ & active_) == active_; }
  constexpr bool any() const { return v_ != 0; }
 private:
  vote_t v_, active_;
};

}  // namespace metal

namespace tmps_sim {

// Shim code that touches only the runtime's SIMD-group exchange and the calling lane's own
// values, never memory a kernel addresses: memcheck does not instrument it. (The exchange
// buffers are checked as "private" memory otherwise: for tl.dot kernels that slow path was
// over half the run time.) The whole chain from the metal:: entry points down is trusted:
// clang inlines only between functions of the same sanitizer attributes, so one instrumented
// link in the chain means an out-of-line call per link and, worse, the caller's value stored
// in an instrumented stack slot whose check takes memcheck's slow path (measured on softmax:
// a quarter of a warm run went to those checks and calls).
#define TMPS_SHIM_TRUSTED __attribute__((no_sanitize("address")))



// The exchange of a collapsed kernel (sim/simd_collapse.h): the SIMD-group runs as one call,
// and a statement with a SIMD-group function runs twice over the lanes. Phase 1: each lane
// deposits its operand (and gets a result computed from its own value only, discarded).
// Phase 2: each lane computes its result from every lane's deposit with the code below, so
// results are those of the fiber path's exchange.
struct sg_ctx {
  unsigned phase = 1, lane = 0, active = 0;
  alignas(16) unsigned char value[TMPS_SIM_SIMD_WIDTH][64];
};

// A collapsed kernel tells the runtime where it keeps the lane it runs (the runtime's memory:
// not a kernel access; out of line once per SIMD-group call, see TMPS_SHIM_TRUSTED).
TMPS_SHIM_TRUSTED inline void publish_lane(const volatile tmps_u32** at, const tmps_u32* lane) { *at = lane; }
// The lanes' positions into the collapsed kernel's own array (the runtime's memory, not checked).
template<class T> TMPS_SHIM_TRUSTED inline void copy_lanes(T (&dst)[32], const T* src) { __builtin_memcpy(dst, src, sizeof dst); }
// `c ? a : b` of a collapsed kernel's lane values, both read first (reading a lane value is always
// safe): the compiler then selects between values. The conditional of two array elements is an
// lvalue, compiled as a load from a select of their addresses, which memcheck cannot prove to be
// the kernel's own stack: a checked load per lane (most of a scan's run time).
template<class C, class A, class B> inline __remove_cvref(decltype(true ? A() : B())) pick(C c, A a, B b) { return c ? a : b; }

// simd_shuffle_xor of a collapsed kernel's whole SIMD-group (every lane present: the scheduler
// collapses full SIMD-groups only): lane l gets lane l ^ (mask & 31)'s value, as grp<32>::shuffle_xor.
// Inline (not trusted): it touches only the kernel's own lane array.
template<class T> inline void sg_shuffle_xor(T (&x)[32], unsigned mask) {
  T in[32];
  for (unsigned l = 0; l < 32u; ++l) in[l] = x[l];
  const unsigned m = mask & 31u;
  for (unsigned l = 0; l < 32u; ++l) x[l] = in[l ^ m];
}

// A collapsed kernel's lane array of a number vector kept per component (sim/simd_collapse.cpp,
// soa_type): c[k][lane] is component k of the lane's value. Lane loops then move scalars, which
// clang vectorizes across lanes (its loop vectorizer refuses loops with vector-typed values).
template<class T, int N> struct soa {
  alignas(32) T c[N][32];
};
// `v = value` for one lane: the value converts as in an assignment to the vector type.
template<class T, int N, class V> inline void soa_set(soa<T, N>& a, unsigned lane, const V& value) {
  typename vec_of<T, N>::type w;
  w = value;
  for (int k = 0; k < N; ++k) a.c[k][lane] = w[k];
}
template<class T, int N> inline void sg_shuffle_xor(soa<T, N>& x, unsigned mask) {
  for (int k = 0; k < N; ++k) sg_shuffle_xor(x.c[k], mask);
}

// One exchange as seen by the calling lane: every participant's deposit plus the group (32
// lanes for simd_*, the caller's 4 lanes for quad_*).
struct group_view {
  const unsigned char* values;  // lane i's deposit at values + i * stride
  unsigned stride;
  unsigned lane;    // caller's lane in the SIMD-group
  unsigned base;    // first lane of the caller's group
  unsigned width;   // 32 or 4
  unsigned active;  // active lanes of the caller's group (SIMD-group lane bits)
  TMPS_SHIM_TRUSTED bool on(unsigned l) const { return l < 32 && ((active >> l) & 1u); }
};

template<class T> TMPS_SHIM_TRUSTED inline group_view exchange(site s, const T& v, unsigned width) {
  static_assert(sizeof(T) <= 64, "SIMD-group function: value larger than 64 bytes");
  group_view g;
  unsigned all;
  if (s.sg) {
    sg_ctx& c = *s.sg;
    g.values = &c.value[0][0];
    g.stride = 64u;
    g.lane = c.lane;
    if (c.phase == 1u) __builtin_memcpy(c.value[c.lane], &v, sizeof(T));
    all = c.phase == 1u ? 1u << c.lane : c.active;
  } else {
    const tmps_sim_exchange* x = tmps_sim_rt->simd_exchange(&v, sizeof(T), s.id, s.line);
    g.values = &x->value[0][0];
    g.stride = TMPS_SIM_EXCHANGE_SLOT;
    g.lane = x->lane;
    all = x->active_mask;
  }
  g.width = width;
  g.base = g.lane & ~(width - 1u);
  unsigned gm = width >= 32 ? 0xffffffffu : (((1u << width) - 1u) << g.base);
  g.active = all & gm;
  return g;
}
template<class T> TMPS_SHIM_TRUSTED inline T value_of(const group_view& g, unsigned lane) {
  T r;
  __builtin_memcpy(&r, g.values + lane * g.stride, sizeof(T));
  return r;
}

// Reduction over active lanes of the group in lane order; `upto`: only lanes < upto (+1 if
// inclusive). Returns `init` when no lane qualifies (exclusive prefix of the first lane).
template<class T, class Op> TMPS_SHIM_TRUSTED inline T fold(const group_view& g, T init, unsigned end, Op op) {
  T acc = init;
  bool first = true;
  for (unsigned l = g.base; l < end; ++l) {
    if (!g.on(l)) continue;
    T v = value_of<T>(g, l);
    acc = first ? v : op(acc, v);
    first = false;
  }
  return acc;
}
template<class T> TMPS_SHIM_TRUSTED inline T read_or_own(const group_view& g, unsigned src, T own) {
  return g.on(src) ? value_of<T>(g, src) : own;
}
template<class T> TMPS_SHIM_TRUSTED inline T zero_of() { return (T)0; }
template<class T> TMPS_SHIM_TRUSTED inline T one_of() { return (T)1; }

struct op_add { template<class T> TMPS_SHIM_TRUSTED T operator()(T a, T b) const { return a + b; } };
struct op_mul { template<class T> TMPS_SHIM_TRUSTED T operator()(T a, T b) const { return a * b; } };
struct op_min { template<class T> TMPS_SHIM_TRUSTED T operator()(T a, T b) const { return ::metal::min(a, b); } };
struct op_max { template<class T> TMPS_SHIM_TRUSTED T operator()(T a, T b) const { return ::metal::max(a, b); } };
struct op_and { template<class T> TMPS_SHIM_TRUSTED T operator()(T a, T b) const { return a & b; } };
struct op_or { template<class T> TMPS_SHIM_TRUSTED T operator()(T a, T b) const { return a | b; } };
struct op_xor { template<class T> TMPS_SHIM_TRUSTED T operator()(T a, T b) const { return a ^ b; } };

// The value types of Metal's SIMD-/quad-group data functions (shuffles, reductions, prefix
// operations, broadcasts): scalars and 2- to 4-component vectors of the 8- to 32-bit integer and
// floating-point types. Not bool and not 64-bit integers (Metal code moves those through
// uint / uint2 with as_type, as the compiler does), not structs. The strict check enforces it;
// normal builds accept any value of at most 64 bytes.
template<class T> struct simd_value {
  typedef typename vt<T>::elem E;
  enum {
    ok = vt<T>::n <= 4 && (same<E, float>::value || same<E, half>::value || same<E, bfloat>::value ||
                           same<E, int>::value || same<E, uint>::value || same<E, short>::value ||
                           same<E, ushort>::value || same<E, char>::value || same<E, signed char>::value ||
                           same<E, uchar>::value)
  };
};
#ifdef TMPS_SIM_STRICT
#define TMPS_SIMD_VALUE(T) \
  static_assert(::tmps_sim::simd_value<T>::ok, "SIMD-group function: not a Metal SIMD-group value type (scalars and vectors of 8- to 32-bit integers, half, bfloat, float; move bool and 64-bit values with as_type)")
#else
#define TMPS_SIMD_VALUE(T) static_assert(true, "")
#endif

// The group functions, for a group of width W (32: simd, 4: quad).
template<unsigned W> struct grp {
  template<class T, class Op> TMPS_SHIM_TRUSTED static T reduce(site s, T v, Op op) {
    group_view g = exchange(s, v, W);
    return fold(g, v, g.base + W, op);
  }
  template<class T, class Op> TMPS_SHIM_TRUSTED static T prefix(site s, T v, Op op, T init, bool inclusive) {
    group_view g = exchange(s, v, W);
    return fold(g, init, g.lane + (inclusive ? 1u : 0u), op);
  }
  // Shuffle helpers: the source lane index is relative to the group.
  template<class T> TMPS_SHIM_TRUSTED static T shuffle(site s, T v, unsigned idx) {
    group_view g = exchange(s, v, W);
    return idx < W ? read_or_own(g, g.base + idx, v) : v;
  }
  template<class T> TMPS_SHIM_TRUSTED static T shuffle_xor(site s, T v, unsigned mask) {
    group_view g = exchange(s, v, W);
    return read_or_own(g, g.base + ((g.lane - g.base) ^ (mask & (W - 1u))), v);
  }
  template<class T> TMPS_SHIM_TRUSTED static T shuffle_up(site s, T v, unsigned delta) {
    group_view g = exchange(s, v, W);
    unsigned i = g.lane - g.base;
    return delta <= i ? read_or_own(g, g.lane - delta, v) : v;
  }
  template<class T> TMPS_SHIM_TRUSTED static T shuffle_down(site s, T v, unsigned delta) {
    group_view g = exchange(s, v, W);
    unsigned i = g.lane - g.base;
    return delta < W - i ? read_or_own(g, g.lane + delta, v) : v;
  }
  template<class T> TMPS_SHIM_TRUSTED static T rotate_up(site s, T v, unsigned delta) {
    group_view g = exchange(s, v, W);
    return read_or_own(g, g.base + ((g.lane - g.base + W - delta % W) % W), v);
  }
  template<class T> TMPS_SHIM_TRUSTED static T rotate_down(site s, T v, unsigned delta) {
    group_view g = exchange(s, v, W);
    return read_or_own(g, g.base + ((g.lane - g.base + delta) % W), v);
  }
  // Shift across the concatenation of data (this group) and fill (next group, for down; the
  // previous one, for up), in sub-groups of `mod` lanes (a power of two, at most W).
  template<class T> TMPS_SHIM_TRUSTED static T fill_down(site s, T v, T fill, unsigned delta, unsigned mod) {
    struct pair { T d, f; } mine = {v, fill};
    group_view g = exchange(s, mine, W);
    unsigned m = mod == 0 || mod > W ? W : mod, sub = g.lane & ~(m - 1u), i = g.lane - sub + delta;
    unsigned src = sub + (i % m);
    if (!g.on(src)) return v;
    pair p = value_of<pair>(g, src);
    return i < m ? p.d : p.f;
  }
  template<class T> TMPS_SHIM_TRUSTED static T fill_up(site s, T v, T fill, unsigned delta, unsigned mod) {
    struct pair { T d, f; } mine = {v, fill};
    group_view g = exchange(s, mine, W);
    unsigned m = mod == 0 || mod > W ? W : mod, sub = g.lane & ~(m - 1u), i = g.lane - sub;
    unsigned src = sub + ((i + m - delta % m) % m);
    if (!g.on(src)) return v;
    pair p = value_of<pair>(g, src);
    return i >= delta ? p.d : p.f;
  }
  template<class T> TMPS_SHIM_TRUSTED static T broadcast_first(site s, T v) {
    group_view g = exchange(s, v, W);
    return value_of<T>(g, (unsigned)__builtin_ctz(g.active));
  }
  // Bits of active lanes whose predicate is true, relative to the group's first lane.
  TMPS_SHIM_TRUSTED static unsigned ballot(site s, bool b, unsigned* active) {
    group_view g = exchange(s, b, W);
    unsigned bits = 0;
    for (unsigned l = g.base; l < g.base + W; ++l)
      if (g.on(l) && value_of<bool>(g, l)) bits |= 1u << (l - g.base);
    *active = W >= 32 ? g.active : (g.active >> g.base);
    return bits;
  }
  TMPS_SHIM_TRUSTED static bool is_first(site s) {
    group_view g = exchange(s, (unsigned char)0, W);
    return g.lane == (unsigned)__builtin_ctz(g.active);
  }
};

}  // namespace tmps_sim

namespace metal {

#define TMPS_GROUP_FUNCS(P, W, VOTE)                                                                          \
  template<class T> TMPS_SHIM_TRUSTED inline T P##_sum(::tmps_sim::site s, T v) { TMPS_SIMD_VALUE(T); return ::tmps_sim::grp<W>::reduce(s, v, ::tmps_sim::op_add()); } \
  template<class T> TMPS_SHIM_TRUSTED inline T P##_product(::tmps_sim::site s, T v) { TMPS_SIMD_VALUE(T); return ::tmps_sim::grp<W>::reduce(s, v, ::tmps_sim::op_mul()); } \
  template<class T> TMPS_SHIM_TRUSTED inline T P##_min(::tmps_sim::site s, T v) { TMPS_SIMD_VALUE(T); return ::tmps_sim::grp<W>::reduce(s, v, ::tmps_sim::op_min()); } \
  template<class T> TMPS_SHIM_TRUSTED inline T P##_max(::tmps_sim::site s, T v) { TMPS_SIMD_VALUE(T); return ::tmps_sim::grp<W>::reduce(s, v, ::tmps_sim::op_max()); } \
  template<class T> TMPS_SHIM_TRUSTED inline T P##_and(::tmps_sim::site s, T v) { TMPS_SIMD_VALUE(T); return ::tmps_sim::grp<W>::reduce(s, v, ::tmps_sim::op_and()); } \
  template<class T> TMPS_SHIM_TRUSTED inline T P##_or(::tmps_sim::site s, T v) { TMPS_SIMD_VALUE(T); return ::tmps_sim::grp<W>::reduce(s, v, ::tmps_sim::op_or()); } \
  template<class T> TMPS_SHIM_TRUSTED inline T P##_xor(::tmps_sim::site s, T v) { TMPS_SIMD_VALUE(T); return ::tmps_sim::grp<W>::reduce(s, v, ::tmps_sim::op_xor()); } \
  template<class T> TMPS_SHIM_TRUSTED inline T P##_prefix_inclusive_sum(::tmps_sim::site s, T v) { TMPS_SIMD_VALUE(T);                             \
    return ::tmps_sim::grp<W>::prefix(s, v, ::tmps_sim::op_add(), ::tmps_sim::zero_of<T>(), true); }          \
  template<class T> TMPS_SHIM_TRUSTED inline T P##_prefix_exclusive_sum(::tmps_sim::site s, T v) { TMPS_SIMD_VALUE(T);                             \
    return ::tmps_sim::grp<W>::prefix(s, v, ::tmps_sim::op_add(), ::tmps_sim::zero_of<T>(), false); }         \
  template<class T> TMPS_SHIM_TRUSTED inline T P##_prefix_inclusive_product(::tmps_sim::site s, T v) { TMPS_SIMD_VALUE(T);                         \
    return ::tmps_sim::grp<W>::prefix(s, v, ::tmps_sim::op_mul(), ::tmps_sim::one_of<T>(), true); }           \
  template<class T> TMPS_SHIM_TRUSTED inline T P##_prefix_exclusive_product(::tmps_sim::site s, T v) { TMPS_SIMD_VALUE(T);                         \
    return ::tmps_sim::grp<W>::prefix(s, v, ::tmps_sim::op_mul(), ::tmps_sim::one_of<T>(), false); }          \
  template<class T> TMPS_SHIM_TRUSTED inline T P##_shuffle(::tmps_sim::site s, T v, ushort lane) { TMPS_SIMD_VALUE(T); return ::tmps_sim::grp<W>::shuffle(s, v, lane); } \
  template<class T> TMPS_SHIM_TRUSTED inline T P##_broadcast(::tmps_sim::site s, T v, ushort lane) { TMPS_SIMD_VALUE(T); return ::tmps_sim::grp<W>::shuffle(s, v, lane); } \
  template<class T> TMPS_SHIM_TRUSTED inline T P##_shuffle_xor(::tmps_sim::site s, T v, ushort mask) { TMPS_SIMD_VALUE(T); return ::tmps_sim::grp<W>::shuffle_xor(s, v, mask); } \
  template<class T> TMPS_SHIM_TRUSTED inline T P##_shuffle_up(::tmps_sim::site s, T v, ushort d) { TMPS_SIMD_VALUE(T); return ::tmps_sim::grp<W>::shuffle_up(s, v, d); } \
  template<class T> TMPS_SHIM_TRUSTED inline T P##_shuffle_down(::tmps_sim::site s, T v, ushort d) { TMPS_SIMD_VALUE(T); return ::tmps_sim::grp<W>::shuffle_down(s, v, d); } \
  template<class T> TMPS_SHIM_TRUSTED inline T P##_shuffle_rotate_up(::tmps_sim::site s, T v, ushort d) { TMPS_SIMD_VALUE(T); return ::tmps_sim::grp<W>::rotate_up(s, v, d); } \
  template<class T> TMPS_SHIM_TRUSTED inline T P##_shuffle_rotate_down(::tmps_sim::site s, T v, ushort d) { TMPS_SIMD_VALUE(T); return ::tmps_sim::grp<W>::rotate_down(s, v, d); } \
  template<class T> TMPS_SHIM_TRUSTED inline T P##_shuffle_and_fill_down(::tmps_sim::site s, T v, T fill, ushort d, ushort mod = W) { TMPS_SIMD_VALUE(T); \
    return ::tmps_sim::grp<W>::fill_down(s, v, fill, d, mod); }                                                \
  template<class T> TMPS_SHIM_TRUSTED inline T P##_shuffle_and_fill_up(::tmps_sim::site s, T v, T fill, ushort d, ushort mod = W) { TMPS_SIMD_VALUE(T); \
    return ::tmps_sim::grp<W>::fill_up(s, v, fill, d, mod); }                                                  \
  template<class T> TMPS_SHIM_TRUSTED inline T P##_broadcast_first(::tmps_sim::site s, T v) { TMPS_SIMD_VALUE(T); return ::tmps_sim::grp<W>::broadcast_first(s, v); } \
  TMPS_SHIM_TRUSTED inline VOTE P##_ballot(::tmps_sim::site s, bool b) {                                                         \
    unsigned active; unsigned bits = ::tmps_sim::grp<W>::ballot(s, b, &active);                               \
    return VOTE((VOTE::vote_t)bits, (VOTE::vote_t)active); }                                                   \
  TMPS_SHIM_TRUSTED inline bool P##_all(::tmps_sim::site s, bool b) { unsigned a; return ::tmps_sim::grp<W>::ballot(s, b, &a) == a; } \
  TMPS_SHIM_TRUSTED inline bool P##_any(::tmps_sim::site s, bool b) { unsigned a; return ::tmps_sim::grp<W>::ballot(s, b, &a) != 0; } \
  TMPS_SHIM_TRUSTED inline bool P##_is_first(::tmps_sim::site s) { return ::tmps_sim::grp<W>::is_first(s); }                    \
  TMPS_SHIM_TRUSTED inline VOTE P##_active_threads_mask(::tmps_sim::site s) {                                                    \
    unsigned active; ::tmps_sim::grp<W>::ballot(s, true, &active);                                            \
    return VOTE((VOTE::vote_t)active, (VOTE::vote_t)active); }

TMPS_GROUP_FUNCS(simd, 32u, simd_vote)
TMPS_GROUP_FUNCS(quad, 4u, quad_vote)
#undef TMPS_GROUP_FUNCS

}  // namespace metal

#endif
