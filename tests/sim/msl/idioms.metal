// Compile-only coverage of common MSL idioms against the simulator's metal_stdlib shim:
// program-scope constant arrays, constant struct references, packed_float3, vector
// constructors and swizzles, math from metal::fast / metal::precise, static_cast, as_type,
// kernel-scope threadgroup arrays and atomics, [[threadgroup(0)]] memory, SIMD-group
// reductions/shuffles/ballot, simdgroup_matrix on device and threadgroup pointers.
// It must compile in normal and strict (-DTMPS_SIM_STRICT) mode. The values it writes are
// not meant to be checked.
//
// Bindings:  buffer(0) device float4* out, buffer(1) const device float4* in,
//            buffer(2) constant Params&, buffer(3) device half*, buffer(4) device atomic_uint*,
//            buffer(5) const device packed_float3*, buffer(6) device float* (>= 64 floats),
//            threadgroup(0) >= 32 floats. Dispatch: threadgroups of 32 threads.
#include <metal_simdgroup_matrix>
#include <metal_atomic>
using namespace metal;

struct Params { uint n; float scale; float2 offs; };
constant float kTable[4] = {1.0f, 2.0f, 3.0f, 4.0f};
constant constexpr int kTile = 8;

template<typename T> METAL_FUNC T square(T x) { return x * x; }
static inline float helper(const device float* p, uint i) { return p[i] * 2.0f; }
inline float tg_read(const threadgroup float* p, uint i) { return p[i]; }

kernel void idioms(device float4* out [[buffer(0)]],
                   const device float4* in [[buffer(1)]],
                   constant Params& prm [[buffer(2)]],
                   device half* hout [[buffer(3)]],
                   device atomic_uint* counter [[buffer(4)]],
                   const device packed_float3* pk [[buffer(5)]],
                   device float* flat [[buffer(6)]],
                   threadgroup float* dyn [[threadgroup(0)]],
                   uint3 gid3 [[thread_position_in_grid]],
                   uint2 tid2 [[thread_position_in_threadgroup]],
                   ushort lane [[thread_index_in_simdgroup]],
                   uint tcount [[threads_per_grid]]) {
  threadgroup float tile[kTile][kTile + 1];
  threadgroup atomic_int local_count;
  const uint gid = gid3.x;
  if (gid >= prm.n) return;
  float4 v = in[gid];
  v.xyz *= prm.scale;
  v.w = dot(v.xy, prm.offs) + kTable[gid & 3];
  float3 p = float3(pk[gid]) + float3(1);
  v += float4(p, 0.0f);
  v = clamp(v, 0.0f, 1.0f) + max(in[gid], float4(0)) + abs(in[gid]) + mix(v, in[gid], 0.5f);
  v = select(v, float4(0), isnan(v));
  v = fast::exp(v) + precise::sqrt(fabs(v)) + metal::pow(v, 2.0f) + rsqrt(v + 1.0f);
  float s = length(v.xyz) + distance(v.xy, in[gid].xy) + square(v.x) + helper(flat, gid);
  half h = half(s) * half(0.5f) + static_cast<half>(v.y);
  half4 hv = half4(v) * h;
  hout[gid] = hv.x + hv.w;
  int4 iv = int4(v * 10.0f);
  uint4 uv = as_type<uint4>(v);
  uv = uv >> 3u;
  iv = iv & int4(0xff);
  ushort2 us = ushort2(tid2);
  tile[tid2.y % kTile][tid2.x % kTile] = s;
  dyn[lane] = s;
  if (lane == 0) atomic_store_explicit(&local_count, 0, memory_order_relaxed);
  threadgroup_barrier(mem_flags::mem_threadgroup);
  atomic_fetch_add_explicit(&local_count, 1, memory_order_relaxed);
  float t = tile[0][0] + tg_read(dyn, 0);
  float r = simd_sum(t) + simd_shuffle(t, (ushort)(lane ^ 1)) + quad_broadcast(t, 0);
  r += metal::simd_max(in[gid].x);
  float4 rv = simd_sum(in[gid]);
  bool any_big = simd_any(r > 100.0f);
  if (simd_is_first()) atomic_fetch_add_explicit(counter, 1u, memory_order_relaxed);
  uint bal = (uint)(ulong)simd_ballot(any_big);
  simdgroup_float8x8 a, b, c;
  simdgroup_load(a, flat, 8);
  simdgroup_load(b, (const device float*)flat, 8, ulong2(0, 0), true);
  simdgroup_load(c, &tile[0][0], kTile + 1);
  simdgroup_multiply_accumulate(c, a, b, c);
  simdgroup_store(c, flat, 8);
  simdgroup_store(c, &tile[0][0], kTile + 1);
  thread auto& e = c.thread_elements();
  out[gid] = v + rv + float4(float(iv.x), float(uv.y), float(us.x), r + float(bal) + e[0]);
  bool4 m = v > 0.5f;
  if (all(m) || any(!m)) out[gid].x += 1.0f;
  out[gid].y = numeric_limits<float>::max() > 0 ? float(popcount(gid)) : 0.0f;
  out[gid].z = float(clz(gid)) + float(min(gid, 10)) + float(tcount);
  float ip; out[gid].w += modf(v.x, ip) + ip + atan2(v.x, v.y) + fmod(v.x, 3.0f);
  for (int i = 0; i < kTile; ++i) { out[gid].x += float(i) * M_PI_F; }
  out[gid] = float4(uint4(atomic_load_explicit(counter, memory_order_relaxed)));
}
