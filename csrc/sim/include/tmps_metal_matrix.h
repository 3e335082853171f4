// Part of the simulator's metal_stdlib shim (include <metal_stdlib>, not this file).
// simdgroup_matrix<T, 8, 8>, emulated as real SIMT: each lane holds only its own 2 elements.
//
// Lane layout (our choice; Apple does not document theirs): lane l, q = l / 4,
//   row  = (q / 4) * 4 + (l / 2) % 4
//   col0 = (q & 2) * 2 + (l % 2) * 2
// and the lane holds (row, col0) and (row, col0 + 1) as thread_elements()[0] and [1].
// load/store touch only the lane's own elements; multiply(-accumulate) gathers the operands of
// all 32 lanes through one SIMD-group exchange, accumulates in float, rounds once.
#ifndef TMPS_METAL_MATRIX_H
#define TMPS_METAL_MATRIX_H

#include "tmps_metal_simd.h"

namespace tmps_sim {
TMPS_SHIM_TRUSTED inline unsigned mat_row(unsigned l) { unsigned q = l / 4; return (q / 4) * 4 + (l / 2) % 4; }
TMPS_SHIM_TRUSTED inline unsigned mat_col0(unsigned l) { unsigned q = l / 4; return (q & 2) * 2 + (l % 2) * 2; }
// Lane and element index holding (row, col): inverse of the layout above.
TMPS_SHIM_TRUSTED inline unsigned mat_lane(unsigned row, unsigned col) {
  unsigned q = ((row >> 2) << 2) | ((col >> 2) << 1) | ((row >> 1) & 1u);
  unsigned r = ((row & 1u) << 1) | ((col >> 1) & 1u);
  return q * 4 + r;
}
TMPS_SHIM_TRUSTED inline unsigned lane_now() { return tmps_sim_rt->current_thread()->thread_index_in_simdgroup; }
}  // namespace tmps_sim

namespace metal {

template<class T, int Rows, int Cols> struct simdgroup_matrix {
  static_assert(Rows == 8 && Cols == 8, "simdgroup_matrix: only 8x8 is supported");
  static_assert(::tmps_sim::is_floatish<T>::value, "simdgroup_matrix: element type must be float, half or bfloat");
  typedef T __attribute__((ext_vector_type(2))) elements_t;
  elements_t e_;
  simdgroup_matrix() = default;
  // Metal: a diagonal matrix with `d` on the diagonal.
  explicit simdgroup_matrix(T d) {
    unsigned l = ::tmps_sim::lane_now(), r = ::tmps_sim::mat_row(l), c = ::tmps_sim::mat_col0(l);
    e_[0] = r == c ? d : (T)0;
    e_[1] = r == c + 1 ? d : (T)0;
  }
  thread elements_t& thread_elements() { return e_; }
  const thread elements_t& thread_elements() const { return e_; }
};
typedef simdgroup_matrix<float, 8, 8> simdgroup_float8x8;
typedef simdgroup_matrix<half, 8, 8> simdgroup_half8x8;
typedef simdgroup_matrix<bfloat, 8, 8> simdgroup_bfloat8x8;

template<class T, int R, int C> inline simdgroup_matrix<T, R, C> make_filled_simdgroup_matrix(T v) {
  simdgroup_matrix<T, R, C> m;
  m.e_[0] = v;
  m.e_[1] = v;
  return m;
}

// Element (row, col) of the matrix is src[(origin.y + row) * elements_per_row + origin.x + col];
// with transpose, src[(origin.y + col) * elements_per_row + origin.x + row]. P: a pointer into
// any address space.
template<class T, int R, int C, class P>
inline void simdgroup_load(thread simdgroup_matrix<T, R, C>& d, P src, ulong elements_per_row = 8,
                           ulong2 origin = ulong2(0, 0), bool transpose = false) {
  unsigned l = ::tmps_sim::lane_now(), r = ::tmps_sim::mat_row(l), c0 = ::tmps_sim::mat_col0(l);
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
  unsigned l = ::tmps_sim::lane_now(), r = ::tmps_sim::mat_row(l), c0 = ::tmps_sim::mat_col0(l);
  for (unsigned k = 0; k < 2; ++k) {
    ulong row = transpose ? c0 + k : r, col = transpose ? r : c0 + k;
    dst[(origin.y + row) * elements_per_row + origin.x + col] = (typename ::tmps_sim::strip_space<E>::type)m.e_[k];
  }
}

}  // namespace metal

namespace tmps_sim {
// d = a * b + c (c may be null). One exchange carries every lane's elements of a and b (c is
// only read by its own lane). The first lane to resume computes all 64 sums a * b from the
// snapshot, each into its lane's slot after the deposit, and marks the snapshot (shim_state);
// every lane then adds its own c. Computing per lane instead read 12 other lanes' slots from
// every lane's fiber, cache misses that made this the largest item of a tl.dot kernel's
// profile. Each sum still runs i = 0..7 from 0.0f, then + c, rounded once to TD.
struct mma_pack { float a[2], b[2]; };  // float: exact for every supported element type
enum : unsigned { kMmaDone = 1u, kMmaSums = sizeof(mma_pack) };  // shim_state; offset of the sums in a slot
static_assert(kMmaSums + 2 * sizeof(float) <= TMPS_SIM_EXCHANGE_SLOT, "mma: the sums must fit the slot");

TMPS_SHIM_TRUSTED inline void mma_sums(tmps_sim_exchange* x) {
  float a[8][8], b[8][8];  // a[row][i], b[i][col]
  for (unsigned l = 0; l < 32; ++l) {
    mma_pack p;
    __builtin_memcpy(&p, x->value[l], sizeof p);
    unsigned r = mat_row(l), c0 = mat_col0(l);
    a[r][c0] = p.a[0];
    a[r][c0 + 1] = p.a[1];
    b[r][c0] = p.b[0];
    b[r][c0 + 1] = p.b[1];
  }
  for (unsigned l = 0; l < 32; ++l) {
    unsigned r = mat_row(l), c0 = mat_col0(l);
    float sums[2];
    for (unsigned k = 0; k < 2; ++k) {
      float acc = 0.0f;
      for (unsigned i = 0; i < 8; ++i) acc += a[r][i] * b[i][c0 + k];
      sums[k] = acc;
    }
    __builtin_memcpy(x->value[l] + kMmaSums, sums, sizeof sums);
  }
  x->shim_state = kMmaDone;
}

template<class TD, class TA, class TB, class TC>
TMPS_SHIM_TRUSTED inline void mma(site s, ::metal::simdgroup_matrix<TD, 8, 8>& d, const ::metal::simdgroup_matrix<TA, 8, 8>& a,
                const ::metal::simdgroup_matrix<TB, 8, 8>& b, const ::metal::simdgroup_matrix<TC, 8, 8>* c) {
  mma_pack mine;
  float own_c[2];
  for (int k = 0; k < 2; ++k) {
    mine.a[k] = (float)a.e_[k];
    mine.b[k] = (float)b.e_[k];
    own_c[k] = c ? (float)c->e_[k] : 0.0f;
  }
  const tmps_sim_exchange* x = tmps_sim_rt->simd_exchange(&mine, sizeof mine, s.id | TMPS_SIM_SITE_MATRIX, s.line);
  if (x->active_mask != 0xffffffffu)
    tmps_sim_rt->fail(s.line, "simdgroup_matrix multiply needs all 32 lanes of the SIMD-group (some lanes exited or diverged)");
  // The snapshot is the runtime's scratch for this SIMD-group until its next collective, which
  // cannot complete before every lane has read its sums here.
  if (x->shim_state != kMmaDone) mma_sums(const_cast<tmps_sim_exchange*>(x));
  float sums[2];
  __builtin_memcpy(sums, x->value[x->lane] + kMmaSums, sizeof sums);
  for (unsigned k = 0; k < 2; ++k) d.e_[k] = (TD)(sums[k] + own_c[k]);
}
}  // namespace tmps_sim

namespace metal {
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

#endif
