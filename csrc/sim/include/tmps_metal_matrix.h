// Part of the simulator's metal_stdlib shim (include <metal_stdlib>, not this file).
// simdgroup_matrix<T, 8, 8>, emulated as real SIMT: each lane holds only its own 2 elements.
//
// Lane layout (our choice; Apple does not document theirs): lane l, q = l / 4,
//   row  = (q / 4) * 4 + (l / 2) % 4
//   col0 = (q & 2) * 2 + (l % 2) * 2
// and the lane holds (row, col0) and (row, col0 + 1) as thread_elements()[0] and [1].
// load/store touch only the lane's own elements.
//
// Multiplies are deferred (why: a multiply needs all 32 lanes' operands, an exchange: a round of
// 32 fiber switches per 8x8x8 product was most of a tl.dot kernel's run time). A lane's
// multiply records its own operand elements in the destination matrix, as a chain of pending
// steps on top of the first step's c; the chain is completed for the whole SIMD-group by one
// exchange when the matrix is read (store, thread_elements(), an operand of another multiply),
// when it is full (16 steps), or when its c must be settled. Every step computes as an immediate multiply
// would: sums over i = 0..7 from 0.0f in float, + c, rounded once to the destination type, so
// results are bit-identical to completing each multiply on its own. A loaded or overwritten
// matrix drops its chain. Lanes must agree: the exchange's site carries the number of steps and
// a hash of their call sites, and a SIMD-group whose lanes do not all complete the same chain
// fails, naming the multiply's line (as a multiply with lanes exited or diverged did before).
// A chain never read is never completed: no check, no work (as a GPU compiler drops it).
#ifndef TMPS_METAL_MATRIX_H
#define TMPS_METAL_MATRIX_H

#include "tmps_metal_simd.h"

namespace tmps_sim {
// The layout above, once: the trusted functions below for the shim's own code, sg_row/sg_col0
// (collapsed kernels) for instrumented code (clang inlines only between like attributes).
#define TMPS_MAT_ROW(l) ((((l) / 4) / 4) * 4 + ((l) / 2) % 4)
#define TMPS_MAT_COL0(l) ((((l) / 4) & 2) * 2 + ((l) % 2) * 2)
TMPS_SHIM_TRUSTED inline unsigned mat_row(unsigned l) { return TMPS_MAT_ROW(l); }
TMPS_SHIM_TRUSTED inline unsigned mat_col0(unsigned l) { return TMPS_MAT_COL0(l); }
// Lane and element index holding (row, col): inverse of the layout above.
TMPS_SHIM_TRUSTED inline unsigned mat_lane(unsigned row, unsigned col) {
  unsigned q = ((row >> 2) << 2) | ((col >> 2) << 1) | ((row >> 1) & 1u);
  unsigned r = ((row & 1u) << 1) | ((col >> 1) & 1u);
  return q * 4 + r;
}
TMPS_SHIM_TRUSTED inline unsigned lane_now() { return tmps_sim_rt->current_thread()->thread_index_in_simdgroup; }
// The calling lane's row and first column, in one call from instrumented code (load, store):
// a trusted function is never inlined there, so each helper would be a call of its own.
struct lane_cell { unsigned row, col0; };
// The shim's out-of-line matrix functions live in the simulator's support object (compiled once,
// TMPS_SIM_SUPPORT; see tmps_metal_memcheck.h): a kernel's build only calls them.
#define TMPS_MAT_FN TMPS_SHIM_TRUSTED __attribute__((visibility("hidden"), noinline))
TMPS_MAT_FN lane_cell lane_cell_now();

// Steps a chain holds: 16 covers a K = 128 staging chunk in one exchange; each pending matrix
// takes 20 + 16 * 16 bytes of its lane's stack (the largest register tiles of upstream tests hold
// 64 accumulators per SIMD-group).
enum : unsigned { kMmaMaxSteps = 16 };
struct mma_step { float a[2], b[2]; };  // float: exact for every supported element type
// A lane's pending multiplies into one matrix, also its deposit in the completing exchange
// (only the used steps travel). After the exchange the first lane to resume writes each lane's
// result over that lane's `base` in the snapshot.
struct mma_chain {
  unsigned n;     // pending steps (0: the matrix holds its value in e_)
  unsigned sig;   // hash of the steps' call sites, in order: lanes must agree
  unsigned line;  // MSL line of the last step (for messages)
  float base[2];  // the lane's elements of the first step's c, as float (0 without c)
  mma_step step[kMmaMaxSteps];
};
static_assert(sizeof(mma_chain) <= TMPS_SIM_EXCHANGE_SLOT, "mma: a chain must fit the exchange slot");
static_assert(kMmaMaxSteps <= TMPS_SIM_SITE_MATRIX_OPS_MASK, "mma: the step count must fit the site");
}  // namespace tmps_sim

namespace metal {

template<class T, int Rows, int Cols> struct simdgroup_matrix {
  static_assert(Rows == 8 && Cols == 8, "simdgroup_matrix: only 8x8 is supported");
  static_assert(::tmps_sim::is_floatish<T>::value, "simdgroup_matrix: element type must be float, half or bfloat");
  typedef T __attribute__((ext_vector_type(2))) elements_t;
  // mutable: completing the pending multiplies of a const matrix (a store's source) changes how
  // its value is held, not the value.
  mutable elements_t e_;
  mutable ::tmps_sim::mma_chain p_;
  simdgroup_matrix() { p_.n = 0; }
  // Metal: a diagonal matrix with `d` on the diagonal.
  explicit simdgroup_matrix(T d) {
    p_.n = 0;
    unsigned l = ::tmps_sim::lane_now(), r = ::tmps_sim::mat_row(l), c = ::tmps_sim::mat_col0(l);
    e_[0] = r == c ? d : (T)0;
    e_[1] = r == c + 1 ? d : (T)0;
  }
  thread elements_t& thread_elements();
  const thread elements_t& thread_elements() const;
};
typedef simdgroup_matrix<float, 8, 8> simdgroup_float8x8;
typedef simdgroup_matrix<half, 8, 8> simdgroup_half8x8;
typedef simdgroup_matrix<bfloat, 8, 8> simdgroup_bfloat8x8;

}  // namespace metal

namespace tmps_sim {
// Destination element types of a chain, for the support object's completion.
enum : unsigned { kMatFloat = 0, kMatHalf = 1, kMatBfloat = 2 };
template<class T> struct mat_kind { enum : unsigned { value = same<T, half>::value ? kMatHalf : same<T, bfloat>::value ? kMatBfloat : kMatFloat }; };
// Completes chain c of the calling lane with the rest of its SIMD-group (one exchange; see the
// top of this file): out = the lane's two elements, rounded to the destination type `kind`.
TMPS_MAT_FN void mma_settle_chain(const mma_chain& c, unsigned kind, float out[2]);
TMPS_MAT_FN lane_cell mma_settle_chain_cell(const mma_chain& c, unsigned kind, float out[2]);

#ifdef TMPS_SIM_SUPPORT
// Completes every lane's chain from the exchange snapshot x (called by the first lane to
// resume): step by step, the 8x8 sums from every lane's operands, then each lane's
// v = TD(sum + v). Writes each lane's result over its `base`.
template<class TD> TMPS_SHIM_TRUSTED void mma_complete(tmps_sim_exchange* x) {
  const unsigned char* lane0 = x->value[0];
  unsigned n, sig0, line;
  __builtin_memcpy(&n, lane0 + __builtin_offsetof(mma_chain, n), sizeof n);
  __builtin_memcpy(&sig0, lane0 + __builtin_offsetof(mma_chain, sig), sizeof sig0);
  __builtin_memcpy(&line, lane0 + __builtin_offsetof(mma_chain, line), sizeof line);
  float v[32][2];
  for (unsigned l = 0; l < 32; ++l) {
    unsigned sig;
    __builtin_memcpy(&sig, x->value[l] + __builtin_offsetof(mma_chain, sig), sizeof sig);
    if (sig != sig0)
      tmps_sim_rt->fail(line, "the lanes of a SIMD-group completed different simdgroup_matrix multiplies (lanes diverged)");
    __builtin_memcpy(v[l], x->value[l] + __builtin_offsetof(mma_chain, base), sizeof v[l]);
  }
  typedef float row8 __attribute__((ext_vector_type(8)));
  for (unsigned s = 0; s < n; ++s) {
    const unsigned off = __builtin_offsetof(mma_chain, step) + s * sizeof(mma_step);
    float a[8][8];  // a[row][i]
    row8 b[8];      // b[i]: row i of B
    for (unsigned l = 0; l < 32; ++l) {
      mma_step p;
      __builtin_memcpy(&p, x->value[l] + off, sizeof p);
      unsigned r = mat_row(l), c0 = mat_col0(l);
      a[r][c0] = p.a[0];
      a[r][c0 + 1] = p.a[1];
      b[r][c0] = p.b[0];
      b[r][c0 + 1] = p.b[1];
    }
    // Row r of the product, 8 columns at once; each element still sums i = 0..7 from 0.0f.
    row8 d[8];
    for (unsigned r = 0; r < 8; ++r) {
      row8 acc = 0.0f;
      for (unsigned i = 0; i < 8; ++i) acc += a[r][i] * b[i];
      d[r] = acc;
    }
    for (unsigned l = 0; l < 32; ++l) {
      unsigned r = mat_row(l), c0 = mat_col0(l);
      for (unsigned k = 0; k < 2; ++k) v[l][k] = (float)(TD)(d[r][c0 + k] + v[l][k]);
    }
  }
  for (unsigned l = 0; l < 32; ++l)
    __builtin_memcpy(x->value[l] + __builtin_offsetof(mma_chain, base), v[l], sizeof v[l]);
  x->shim_state = 1u;
}

TMPS_MAT_FN void mma_settle_chain(const mma_chain& c, unsigned kind, float out[2]) {
  const unsigned size = __builtin_offsetof(mma_chain, step) + c.n * sizeof(mma_step);
  const unsigned site = TMPS_SIM_SITE_MATRIX | (c.n << TMPS_SIM_SITE_MATRIX_OPS_SHIFT) | (c.sig & 0xffffffu);
  const tmps_sim_exchange* x = tmps_sim_rt->simd_exchange(&c, size, site, c.line);
  if (x->active_mask != 0xffffffffu)
    tmps_sim_rt->fail(c.line, "simdgroup_matrix multiply needs all 32 lanes of the SIMD-group (some lanes exited or diverged)");
  // The snapshot is the runtime's scratch for this SIMD-group until its next collective, which
  // cannot complete before every lane has read its result here.
  if (x->shim_state == 0) {
    tmps_sim_exchange* w = const_cast<tmps_sim_exchange*>(x);
    if (kind == kMatHalf) mma_complete<half>(w);
    else if (kind == kMatBfloat) mma_complete<bfloat>(w);
    else mma_complete<float>(w);
  }
  __builtin_memcpy(out, x->value[x->lane] + __builtin_offsetof(mma_chain, base), 2 * sizeof(float));
}
TMPS_MAT_FN lane_cell lane_cell_now() {
  unsigned l = lane_now();
  return {mat_row(l), mat_col0(l)};
}
TMPS_MAT_FN lane_cell mma_settle_chain_cell(const mma_chain& c, unsigned kind, float out[2]) {
  if (c.n) mma_settle_chain(c, kind, out);
  return lane_cell_now();
}
#endif  // TMPS_SIM_SUPPORT

template<class T> TMPS_SHIM_TRUSTED inline void mma_settle_slow(const ::metal::simdgroup_matrix<T, 8, 8>& m) {
  float r[2];
  mma_settle_chain(m.p_, mat_kind<T>::value, r);
  m.e_[0] = (T)r[0];
  m.e_[1] = (T)r[1];
  m.p_.n = 0;
}
template<class T> TMPS_SHIM_TRUSTED inline void mma_settle(const ::metal::simdgroup_matrix<T, 8, 8>& m) {
  if (m.p_.n) mma_settle_slow(m);
}
// mma_settle, then lane_cell_now: a store's one call (inlined into the kernel: it touches m,
// a local of the kernel's frame, which needs no check there).
template<class T> inline lane_cell mma_settle_cell(const ::metal::simdgroup_matrix<T, 8, 8>& m) {
  float r[2];
  const lane_cell lc = mma_settle_chain_cell(m.p_, mat_kind<T>::value, r);
  if (m.p_.n) {
    m.e_[0] = (T)r[0];
    m.e_[1] = (T)r[1];
    m.p_.n = 0;
  }
  return lc;
}

// d = a * b + c (c null: + 0.0f), deferred: appended to d's chain.
template<class TD, class TA, class TB, class TC>
TMPS_SHIM_TRUSTED inline void mma(site s, ::metal::simdgroup_matrix<TD, 8, 8>& d, const ::metal::simdgroup_matrix<TA, 8, 8>& a,
                                  const ::metal::simdgroup_matrix<TB, 8, 8>& b, const ::metal::simdgroup_matrix<TC, 8, 8>* c) {
  mma_settle(a);
  mma_settle(b);
  const mma_step step = {{(float)a.e_[0], (float)a.e_[1]}, {(float)b.e_[0], (float)b.e_[1]}};
  mma_chain& ch = d.p_;
  if (c == nullptr) {
    ch.n = 0;
    ch.base[0] = ch.base[1] = 0.0f;
  } else if ((const void*)c == (const void*)&d) {  // accumulate in place
    if (ch.n == kMmaMaxSteps) mma_settle(d);
    if (ch.n == 0) {
      ch.base[0] = (float)d.e_[0];
      ch.base[1] = (float)d.e_[1];
    }
  } else {
    bool copied = false;
    if constexpr (same<TC, TD>::value) {  // c's pending steps round to TD as d's would: take them over
      if (c->p_.n && c->p_.n < kMmaMaxSteps) {
        __builtin_memcpy(&ch, &c->p_, __builtin_offsetof(mma_chain, step) + c->p_.n * sizeof(mma_step));
        copied = true;
      }
    }
    if (!copied) {
      mma_settle(*c);
      ch.n = 0;
      ch.base[0] = (float)c->e_[0];
      ch.base[1] = (float)c->e_[1];
    }
  }
  ch.sig = ch.n ? ch.sig * 0x9E3779B1u + s.id : s.id;
  ch.line = s.line;
  ch.step[ch.n++] = step;
}
}  // namespace tmps_sim

namespace metal {

template<class T, int R, int C> inline thread typename simdgroup_matrix<T, R, C>::elements_t& simdgroup_matrix<T, R, C>::thread_elements() {
  ::tmps_sim::mma_settle(*this);
  return e_;
}
template<class T, int R, int C> inline const thread typename simdgroup_matrix<T, R, C>::elements_t& simdgroup_matrix<T, R, C>::thread_elements() const {
  ::tmps_sim::mma_settle(*this);
  return e_;
}

template<class T, int R, int C> inline simdgroup_matrix<T, R, C> make_filled_simdgroup_matrix(T v) {
  simdgroup_matrix<T, R, C> m;
  m.e_[0] = v;
  m.e_[1] = v;
  return m;
}

// Element (row, col) of the matrix is src[(origin.y + row) * elements_per_row + origin.x + col];
// with transpose, src[(origin.y + col) * elements_per_row + origin.x + row]. P: a pointer into
// any address space. Drops d's pending multiplies (overwritten).
template<class T, int R, int C, class P>
inline void simdgroup_load(thread simdgroup_matrix<T, R, C>& d, P src, ulong elements_per_row = 8,
                           ulong2 origin = ulong2(0, 0), bool transpose = false) {
  const ::tmps_sim::lane_cell lc = ::tmps_sim::lane_cell_now();
  const unsigned r = lc.row, c0 = lc.col0;
  d.p_.n = 0;
#ifndef TMPS_SIM_STRICT  // (the strict check's address spaces do not convert to memcpy's void*)
  if (!transpose) {
    // The lane's two elements are adjacent: one access (one memcheck check, not two: these
    // loads were most of a tl.dot kernel's checked accesses).
    typedef __remove_cvref(decltype(*src)) E;
    typename ::tmps_sim::strip_space<E>::type pair[2];
    __builtin_memcpy(pair, &src[(origin.y + r) * elements_per_row + origin.x + c0], sizeof pair);
    d.e_[0] = (T)pair[0];
    d.e_[1] = (T)pair[1];
    return;
  }
#endif
  for (unsigned k = 0; k < 2; ++k) {
    ulong row = transpose ? c0 + k : r, col = transpose ? r : c0 + k;
    d.e_[k] = (T)src[(origin.y + row) * elements_per_row + origin.x + col];
  }
}
template<class T, int R, int C, class P>
inline void simdgroup_store(thread const simdgroup_matrix<T, R, C>& m, P dst, ulong elements_per_row = 8,
                            ulong2 origin = ulong2(0, 0), bool transpose = false) {
  typedef __remove_cvref(decltype(*dst)) E;
  const ::tmps_sim::lane_cell lc = ::tmps_sim::mma_settle_cell(m);
  const unsigned r = lc.row, c0 = lc.col0;
  for (unsigned k = 0; k < 2; ++k) {
    ulong row = transpose ? c0 + k : r, col = transpose ? r : c0 + k;
    dst[(origin.y + row) * elements_per_row + origin.x + col] = (typename ::tmps_sim::strip_space<E>::type)m.e_[k];
  }
}

template<class TD, class TA, class TB, class TC>
inline void simdgroup_multiply_accumulate(::tmps_sim::site s, thread simdgroup_matrix<TD, 8, 8>& d,
                                          thread const simdgroup_matrix<TA, 8, 8>& a,
                                          thread const simdgroup_matrix<TB, 8, 8>& b,
                                          thread const simdgroup_matrix<TC, 8, 8>& c) {
  ::tmps_sim::mma(s, d, a, b, &c);
}
template<class TD, class TA, class TB>
inline void simdgroup_multiply(::tmps_sim::site s, thread simdgroup_matrix<TD, 8, 8>& d,
                               thread const simdgroup_matrix<TA, 8, 8>& a, thread const simdgroup_matrix<TB, 8, 8>& b) {
  ::tmps_sim::mma(s, d, a, b, (const simdgroup_matrix<TD, 8, 8>*)nullptr);
}

}  // namespace metal

// ---- simdgroup_matrix in a collapsed kernel (sim/simd_collapse.h) ------------------------------
// There the SIMD-group runs as one call, so a matrix is one object holding all 64 elements
// (row-major), not each lane's pair: the rewrite renames the types and functions to these. Loads
// and stores stay per lane, inside the lane loops: each lane reads and writes exactly its own two
// elements with the accesses above, so memcheck sees the same accesses. A multiply runs once,
// between lane loops (every lane's operands are in place), and at once: each element sums
// i = 0..7 from 0.0f in float, + c (0.0f without c), rounded once to the destination type, as
// mma_complete does for each step of a chain: bit-identical results. (On fibers a lane runs on
// past its deferred multiplies; here every lane reaches a multiply before any goes past it. When
// lanes on both sides of a multiply fault, the two paths may report a different one first.)
namespace tmps_sim {
template<class T> struct sg_matrix {
  static_assert(is_floatish<T>::value, "simdgroup_matrix: element type must be float, half or bfloat");
  T v[8][8];
};
template<class T, int R, int C> struct sg_matrix_of {
  static_assert(R == 8 && C == 8, "simdgroup_matrix: only 8x8 is supported");
  typedef sg_matrix<T> type;
};
// simdgroup_matrix<T, R, C> in a collapsed kernel.
template<class T, int R, int C> using sg_matrix_rc = typename sg_matrix_of<T, R, C>::type;
// The layout without the trusted attribute: pure arithmetic, inlined into the kernel.
inline unsigned sg_row(unsigned l) { return TMPS_MAT_ROW(l); }
inline unsigned sg_col0(unsigned l) { return TMPS_MAT_COL0(l); }

template<class T, int R, int C> TMPS_SHIM_TRUSTED inline sg_matrix_rc<T, R, C> sg_filled(T x) {
  sg_matrix<T> m;
  for (unsigned r = 0; r < 8; ++r)
    for (unsigned c = 0; c < 8; ++c) m.v[r][c] = x;
  return m;
}

// A whole-matrix load or store with arguments the same in every lane (the rewrite emits it once,
// between lane loops): when memcheck's fast check passes each row the matrix touches (no report),
// the elements are copied unchecked in the lanes' order; otherwise the lanes run one by one,
// checked, highest first, naming the lane that faults (`lane_now`, the collapsed kernel's).
#if defined(TMPS_SIM_MEMCHECK) && TMPS_SIM_MEMCHECK && !defined(TMPS_SIM_STRICT)
extern "C" __attribute__((visibility("hidden"))) bool tmps_mc_probe(__UINTPTR_TYPE__ a, __UINTPTR_TYPE__ n);
#define TMPS_MC_PROBE(a, n) tmps_mc_probe((__UINTPTR_TYPE__)(a), (__UINTPTR_TYPE__)(n))
#else
#define TMPS_MC_PROBE(a, n) true
#endif
template<class P> TMPS_SHIM_TRUSTED inline bool sg_lines_ok(P p, ulong elements_per_row, ulong2 origin) {
  typedef typename strip_space<__remove_cvref(decltype(*p))>::type E;
  // first the span from the first row's start to the last row's end (one probe: rows lie in one
  // buffer), then row by row
  const __UINTPTR_TYPE__ lo = (__UINTPTR_TYPE__)&p[origin.y * elements_per_row + origin.x];
  const __UINTPTR_TYPE__ hi = (__UINTPTR_TYPE__)&p[(origin.y + 7) * elements_per_row + origin.x] + 8 * sizeof(E);
  if (hi > lo && TMPS_MC_PROBE(lo, hi - lo)) return true;
  for (unsigned r = 0; r < 8; ++r)
    if (!TMPS_MC_PROBE(&p[(origin.y + r) * elements_per_row + origin.x], 8 * sizeof(E))) return false;
  return true;
}
template<class T, class P>
TMPS_SHIM_TRUSTED inline void sg_copy_in(sg_matrix<T>& d, P src, ulong elements_per_row, ulong2 origin, bool transpose) {
  for (unsigned r = 0; r < 8; ++r)
    for (unsigned c = 0; c < 8; ++c)
      d.v[r][c] = (T)(transpose ? src[(origin.y + c) * elements_per_row + origin.x + r]
                                : src[(origin.y + r) * elements_per_row + origin.x + c]);
}
template<class T, class P>
TMPS_SHIM_TRUSTED inline void sg_copy_out(const sg_matrix<T>& m, P dst, ulong elements_per_row, ulong2 origin, bool transpose) {
  typedef typename strip_space<__remove_cvref(decltype(*dst))>::type E;
  for (unsigned l = 32; l-- > 0;) {  // the lanes' order: overlapping rows end as on fibers
    const unsigned r = mat_row(l), c0 = mat_col0(l);
    for (unsigned k = 0; k < 2; ++k) {
      ulong row = transpose ? c0 + k : r, col = transpose ? r : c0 + k;
      dst[(origin.y + row) * elements_per_row + origin.x + col] = (E)m.v[r][c0 + k];
    }
  }
}

// Lane `lane`'s part of simdgroup_load (same accesses as the fiber path's).
template<class T, class P>
inline void sg_load(unsigned lane, sg_matrix<T>& d, P src, ulong elements_per_row = 8, ulong2 origin = ulong2(0, 0),
                    bool transpose = false) {
  const unsigned r = sg_row(lane), c0 = sg_col0(lane);
  if (!transpose) {
    typedef __remove_cvref(decltype(*src)) E;
    typename strip_space<E>::type pair[2];
    __builtin_memcpy(pair, &src[(origin.y + r) * elements_per_row + origin.x + c0], sizeof pair);
    d.v[r][c0] = (T)pair[0];
    d.v[r][c0 + 1] = (T)pair[1];
    return;
  }
  for (unsigned k = 0; k < 2; ++k) d.v[r][c0 + k] = (T)src[(origin.y + c0 + k) * elements_per_row + origin.x + r];
}

// Lane `lane`'s part of simdgroup_store (same accesses as the fiber path's).
template<class T, class P>
inline void sg_store(unsigned lane, const sg_matrix<T>& m, P dst, ulong elements_per_row = 8,
                     ulong2 origin = ulong2(0, 0), bool transpose = false) {
  typedef __remove_cvref(decltype(*dst)) E;
  const unsigned r = sg_row(lane), c0 = sg_col0(lane);
  for (unsigned k = 0; k < 2; ++k) {
    ulong row = transpose ? c0 + k : r, col = transpose ? r : c0 + k;
    dst[(origin.y + row) * elements_per_row + origin.x + col] = (typename strip_space<E>::type)m.v[r][c0 + k];
  }
}

template<class T, class P>
inline void sg_load_all(tmps_u32& lane_now, sg_matrix<T>& d, P src, ulong elements_per_row = 8,
                        ulong2 origin = ulong2(0, 0), bool transpose = false) {
  if (sg_lines_ok(src, elements_per_row, origin)) {  // (transposed: the lines are columns)
    sg_copy_in(d, src, elements_per_row, origin, transpose);
    return;
  }
  for (unsigned l = 32; l-- > 0;) {
    lane_now = l;
    sg_load(l, d, src, elements_per_row, origin, transpose);
  }
}
template<class T, class P>
inline void sg_store_all(tmps_u32& lane_now, const sg_matrix<T>& m, P dst, ulong elements_per_row = 8,
                         ulong2 origin = ulong2(0, 0), bool transpose = false) {
  if (sg_lines_ok(dst, elements_per_row, origin)) {
    sg_copy_out(m, dst, elements_per_row, origin, transpose);
    return;
  }
  for (unsigned l = 32; l-- > 0;) {
    lane_now = l;
    sg_store(l, m, dst, elements_per_row, origin, transpose);
  }
}

// d = a * b + c (c null: + 0.0f). d may be a, b or c.
template<class TD, class TA, class TB, class TC>
TMPS_SHIM_TRUSTED inline void sg_multiply(sg_matrix<TD>& d, const sg_matrix<TA>& a, const sg_matrix<TB>& b,
                                          const sg_matrix<TC>* c) {
  typedef float row8 __attribute__((ext_vector_type(8)));
  row8 bv[8];  // bv[i]: row i of B
  for (unsigned i = 0; i < 8; ++i)
    for (unsigned k = 0; k < 8; ++k) bv[i][k] = (float)b.v[i][k];
  TD out[8][8];
  for (unsigned r = 0; r < 8; ++r) {
    row8 acc = 0.0f;
    for (unsigned i = 0; i < 8; ++i) acc += (float)a.v[r][i] * bv[i];
    for (unsigned k = 0; k < 8; ++k) out[r][k] = (TD)(acc[k] + (c ? (float)c->v[r][k] : 0.0f));
  }
  __builtin_memcpy(d.v, out, sizeof out);
}
template<class TD, class TA, class TB, class TC>
inline void sg_mma(sg_matrix<TD>& d, const sg_matrix<TA>& a, const sg_matrix<TB>& b, const sg_matrix<TC>& c) {
  sg_multiply(d, a, b, &c);
}
template<class TD, class TA, class TB>
inline void sg_mul(sg_matrix<TD>& d, const sg_matrix<TA>& a, const sg_matrix<TB>& b) {
  sg_multiply(d, a, b, (const sg_matrix<TD>*)nullptr);
}
}  // namespace tmps_sim

#endif
