// Prefix sums and shuffles: a threadgroup-wide inclusive scan built from
// simd_prefix_inclusive_sum and threadgroup memory, a butterfly max with simd_shuffle_xor,
// neighbour exchange with simd_shuffle_up/down, and quad-group sums.
//
// Bindings:  buffer(0) const device uint* in     n uints
//            buffer(1) device uint* scan         n uints: inclusive scan within each threadgroup
//            buffer(2) device uint* butterfly    n uints: max of in over the SIMD-group
//            buffer(3) device uint* neighbours   n uints: in[i-1] + in[i+1] within the
//                                                SIMD-group (missing neighbour: in[i] itself)
//            buffer(4) device uint* quads        n uints: sum of in over the 4-lane quad
//            buffer(5) device uint* ballots      n uints: low 32 bits of simd_ballot(in odd)
// Dispatch:  1-D, 128 threads per threadgroup, n a multiple of 128 (full SIMD-groups).
// Expected:  scan[i] = sum of in[g*128 .. i] for i in threadgroup g; the other outputs as above
//            (lane l of a SIMD-group holds element i = 32*s + l). E.g. in[i] = i % 5.
#include <metal_stdlib>
using namespace metal;

kernel void scan_shuffle(const device uint* in [[buffer(0)]],
                         device uint* scan [[buffer(1)]],
                         device uint* butterfly [[buffer(2)]],
                         device uint* neighbours [[buffer(3)]],
                         device uint* quads [[buffer(4)]],
                         device uint* ballots [[buffer(5)]],
                         uint gid [[thread_position_in_grid]],
                         ushort lane [[thread_index_in_simdgroup]],
                         ushort sg [[simdgroup_index_in_threadgroup]],
                         ushort nsg [[simdgroups_per_threadgroup]]) {
  threadgroup uint totals[32];
  const uint v = in[gid];

  uint inclusive = simd_prefix_inclusive_sum(v);
  if (lane == 31) totals[sg] = inclusive;
  threadgroup_barrier(mem_flags::mem_threadgroup);
  if (sg == 0) {
    uint t = lane < nsg ? totals[lane] : 0u;
    uint before = simd_prefix_exclusive_sum(t);
    if (lane < nsg) totals[lane] = before;
  }
  threadgroup_barrier(mem_flags::mem_threadgroup);
  scan[gid] = inclusive + totals[sg];

  uint m = v;
  for (ushort off = 16; off > 0; off /= 2) {
    m = max(m, simd_shuffle_xor(m, off));
  }
  butterfly[gid] = m;

  uint left = simd_shuffle_up(v, 1);
  uint right = simd_shuffle_down(v, 1);
  neighbours[gid] = left + right;

  quads[gid] = quad_sum(v);
  ballots[gid] = (uint)(ulong)simd_ballot((v & 1) != 0);
}
