// Self-test of the simulator's metal_stdlib shim (tests/sim/test_shim.py builds it as a .so, runs it via ctypes).
// A mock runtime runs the 32 lanes one after another; collectives resolve by repeated rounds.
#include <metal_stdlib>
using namespace metal;

extern "C" int printf(const char*, ...);
extern "C" const tmps_sim_runtime* tmps_sim_rt = nullptr;

static int g_fail = 0, g_checks = 0;
#define CHECK(c) do { ++g_checks; if (!(c)) { ++g_fail; printf("FAIL %s:%d: %s\n", __FILE__, __LINE__, #c); } } while (0)
static bool near(float a, float b, float tol = 1e-5f) { return __builtin_fabsf(a - b) <= tol * (1 + __builtin_fabsf(b)); }

// ---------- mock runtime: lanes run one after another; collectives by fixed-point rounds ----------
static tmps_sim_thread g_thread;
static tmps_sim_exchange g_snap[64], g_next[64];
static unsigned g_call;  // index of the exchange within the current lane's run
static const tmps_sim_thread* m_current() { return &g_thread; }
static const tmps_sim_exchange* m_exchange(const void* v, tmps_u32 size, tmps_u32, tmps_u32) {
  unsigned j = g_call++;
  unsigned lane = g_thread.thread_index_in_simdgroup;
  __builtin_memcpy(g_next[j].value[lane], v, size);
  g_next[j].size = size;
  g_next[j].active_mask |= 1u << lane;
  g_snap[j].lane = lane;  // as the runtime does: the caller's lane, read before it next calls in
  return &g_snap[j];
}
static void m_barrier(tmps_u32, tmps_u32) {}
static int g_failed_line = 0;
static void m_fail(tmps_u32 line, const char*) { g_failed_line = (int)line; }
static unsigned char g_tg_mem[4096];
static void* m_tgstatic(tmps_u32, tmps_u64, tmps_u64, tmps_u32) { return g_tg_mem; }
static tmps_sim_runtime g_rt = {TMPS_SIM_ABI_VERSION, m_barrier, m_barrier, m_exchange, m_tgstatic, m_fail, m_current};

// Runs body(lane) for every lane in `mask`, `rounds` times, so that after round k the first k
// exchanges of every lane see all lanes' deposits. Results of the last round are final.
template<class F> static void run_lanes(unsigned mask, int rounds, F body) {
  __builtin_memset(g_snap, 0, sizeof g_snap);
  for (int r = 0; r < rounds; ++r) {
    __builtin_memset(g_next, 0, sizeof g_next);
    g_failed_line = 0;
    for (unsigned l = 0; l < 32; ++l) {
      if (!((mask >> l) & 1)) continue;
      g_thread.thread_index_in_simdgroup = l;
      g_thread.thread_index_in_quadgroup = l & 3;
      g_call = 0;
      body(l);
    }
    __builtin_memcpy(g_snap, g_next, sizeof g_snap);
  }
}

// ---------- vectors ----------
static void test_vectors() {
  float4 a = float4(1, 2, 3, 4);
  CHECK(a.x == 1 && a.y == 2 && a.z == 3 && a.w == 4);
  float4 s = float4(2.5f);
  CHECK(all(s == 2.5f));
  float2 p = float2(5, 6), q = float2(7, 8);
  float4 pq = float4(p, q);
  CHECK(pq.x == 5 && pq.w == 8);
  float4 f3w = float4(float3(1), 9);
  CHECK(f3w.x == 1 && f3w.z == 1 && f3w.w == 9);
  float4 mixed = float4(1, p, 3);
  CHECK(mixed.y == 5 && mixed.z == 6 && mixed.w == 3);
  half4 h = half4(a);
  CHECK(h.z == (half)3);
  float4 back = float4(h);
  CHECK(back.w == 4);
  uint2 u = uint2(a.zw);
  CHECK(u.x == 3 && u.y == 4);
  int4 iv = int4(-1, 2, -3, 4);
  float4 cv = static_cast<float4>(iv);  // value conversion, not bits
  CHECK(cv.x == -1.0f && cv.w == 4.0f);
  float fl = 2.5f;
  float& fr = static_cast<float&>(fl);
  fr = 3.5f;
  static_cast<void>(fr);
  float4 el = float4(1.75f, 2, 3, 4);
  CHECK(fl == 3.5f && static_cast<int>(el.x) == 1 && static_cast<half>(el.y) == (half)2 && static_cast<uint>(-1) == 0xffffffffu);
  CHECK(all(static_cast<int2>(el.xy) == int2(1, 2)) && all(static_cast<float4>(float4(1)) == 1.0f));
  int mv = 4;
  int&& rr = static_cast<int&&>(mv);
  CHECK(rr == 4);
  uint4 bits = as_type<uint4>(float4(1.0f));
  CHECK(bits.x == 0x3f800000u);
  CHECK(as_type<float>(0x40000000u) == 2.0f);
  float3 sw = a.zyx;
  CHECK(sw.x == 3 && sw.z == 1);
  a.xy = float2(10, 20);
  CHECK(a.x == 10 && a.y == 20 && a.z == 3);
  CHECK(a.r == 10 && a.a == 4);
  CHECK(sizeof(float3) == 16 && sizeof(packed_float3) == 12 && sizeof(half4) == 8 && sizeof(bfloat4) == 8);
  CHECK(sizeof(bool4) == 4 && sizeof(long2) == 16 && alignof(packed_float4) == 4);
  // bool vectors
  bool4 m = float4(1, 5, 3, 7) > float4(2, 2, 2, 2);
  CHECK(!m.x && m.y && m.z && m.w);
  CHECK(any(m) && !all(m));
  CHECK(all(bool4(true)) && !any(bool4(false)));
  bool4 m2 = !m;
  CHECK(m2.x && !m2.y);
  CHECK(all((m || m2) == bool4(true)));
  float4 sel = select(float4(0), float4(1, 2, 3, 4), m);
  CHECK(sel.x == 0 && sel.y == 2 && sel.w == 4);
  float4 sel2 = select(float4(0), float4(1), float4(1, 2, 3, 4) < 2.5f);
  CHECK(sel2.x == 1 && sel2.y == 1 && sel2.z == 0);
  CHECK(select(1.0f, 2.0f, true) == 2.0f);
  float4 fromb = float4(m);
  CHECK(fromb.x == 0 && fromb.y == 1);
  bool2 b2 = bool2(true, false);
  CHECK(b2[0] && !b2[1]);
  half2 hh = half2(1, 2) * (half)3;
  CHECK(hh.y == (half)6);
  long2 l2 = long2(1L << 40, 3);
  CHECK(l2.x == (1L << 40));
  packed_float3 pk = packed_float3(1, 2, 3);
  float3 up = float3(pk);
  CHECK(up.y == 2 && pk[2] == 3);
  float3 sum = pk + float3(1);
  CHECK(sum.z == 4);
  vec<float, 4> vv = float4(1);
  CHECK(vv.w == 1);
  float4 z = float4();
  CHECK(all(z == 0.0f));
  constexpr float4 cx = float4(1, 2, 3, 4);
  static_assert(cx.y == 2, "constexpr constructor");
  CHECK(::tmps_sim::position<uint>(g_thread.thread_position_in_grid) == g_thread.thread_position_in_grid[0]);
  tmps_u32 pos[3] = {7, 8, 9};
  uint3 p3 = ::tmps_sim::position<uint3>(pos);
  ushort2 p2 = ::tmps_sim::position<ushort2>(pos);
  CHECK(p3.z == 9 && p2.y == 8 && ::tmps_sim::position<ushort>(pos) == 7 && ::tmps_sim::position<int>(5u) == 5);
  char4 c4 = char4(-1, 2, 3, 4);
  uchar4 uc = uchar4(c4);
  CHECK(uc.x == 255);
}

// ---------- bfloat / half ----------
static unsigned short bf_ref(float f) {  // nearest of the two candidates, ties to even
  unsigned u = __builtin_bit_cast(unsigned, f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return 0xffff;  // NaN marker
  unsigned lo = u & 0xffff0000u, hi = lo + 0x10000u;
  double dl = (double)__builtin_bit_cast(float, lo), dh = (double)__builtin_bit_cast(float, hi);
  if ((lo & 0x7fffffffu) == 0x7f7f0000u) dh = (double)0x1p128 * ((u >> 31) ? -1.0 : 1.0);  // next would be inf
  double dx = (double)f;
  double el = __builtin_fabs(dx - dl), eh = __builtin_fabs(dx - dh);
  if (el < eh) return lo >> 16;
  if (eh < el) return hi >> 16;
  return ((lo >> 16) & 1) ? hi >> 16 : lo >> 16;
}
static void test_bfloat_half() {
  unsigned x = 12345;
  int bad = 0;
  for (int i = 0; i < 2000000; ++i) {
    x = x * 1664525u + 1013904223u;
    unsigned b = x;
    if (i < 65536 * 2) b = (0x3f800000u & 0xffff0000u) + (unsigned)i * 3;  // dense near 1.0: ties
    float f = __builtin_bit_cast(float, b);
    bfloat h = (bfloat)f;
    unsigned short got = __builtin_bit_cast(unsigned short, h);
    unsigned short want = bf_ref(f);
    if (want == 0xffff) { if ((got & 0x7fff) <= 0x7f80 || !(got & 0x40)) ++bad; continue; }
    if (got != want) { if (bad < 5) printf("bf16 %08x -> %04x want %04x\n", b, got, want); ++bad; }
  }
  CHECK(bad == 0);
  volatile float one_tie = 1.00390625f;       // 1 + 2^-8: tie, even is 1.0
  volatile float odd_tie = 1.01171875f;       // 1 + 3*2^-8: tie, even is 1 + 2^-6
  CHECK((float)(bfloat)one_tie == 1.0f);
  CHECK((float)(bfloat)odd_tie == 1.015625f);
  volatile float inf = __builtin_inff(), big = 3.4e38f;
  CHECK(__builtin_isinf((float)(bfloat)inf));
  CHECK(__builtin_isinf((float)(bfloat)big));  // rounds past bf16 max
  volatile double d = 1.00390625000001;       // just above the tie: must round up (no double rounding)
  CHECK((float)(bfloat)d == 1.0078125f);
  volatile double dn = __builtin_nan("");
  CHECK(__builtin_isnan((float)(bfloat)dn));
  // bfloat arithmetic rounds each op
  volatile float fa = 256.0f;
  bfloat ba = (bfloat)fa, bb = (bfloat)1.0f;
  bfloat bs = (bfloat)(ba + bb);
  CHECK((float)bs == 256.0f);
  bfloat4 bv = bfloat4(1.5f, 2, 3, 4);
  float4 bf = float4(bv * bfloat4(2));
  CHECK(bf.x == 3 && bf.w == 8);
  // half: no excess precision
  volatile float f2048 = 2048.0f;
  half hx = (half)f2048, hy = (half)1.0f;
  half hs = (hx + hy) - hx;
  CHECK(hs == (half)0);
  volatile float third = 1.0f / 3.0f;
  half ht = (half)third;
  CHECK(__builtin_bit_cast(unsigned short, ht) == 0x3555);
  CHECK(numeric_limits<half>::max() == (half)65504.0f && HALF_MAX == (half)65504.0f);
  CHECK((float)numeric_limits<bfloat>::max() == 0x1.fep127f);
  CHECK(numeric_limits<float>::epsilon() == 0x1p-23f && numeric_limits<half>::epsilon() == (half)0x1p-10f);
  CHECK(numeric_limits<int>::max() == 2147483647 && numeric_limits<uint>::max() == 4294967295u);
  CHECK(numeric_limits<float>::lowest() == -FLT_MAX && __builtin_isinf(numeric_limits<float>::infinity()));
  CHECK(__builtin_isnan(numeric_limits<half>::quiet_NaN()) && numeric_limits<ulong>::max() == ~0ul);
  CHECK(numeric_limits<short>::min() == -32768 && numeric_limits<char>::min() == -128);
}

// ---------- math ----------
static void test_math() {
  volatile float v = 0.5f;
  float x = v;
  CHECK(near(sin(x), 0.479425538f) && near(cos(x), 0.877582562f) && near(exp(x), 1.6487212707f));
  CHECK(near(pow(2.0f, 10.0f), 1024) && near(exp10(2.0f), 100) && near(log2(8.0f), 3) && near(rsqrt(4.0f), 0.5f));
  CHECK(near(atan2(1.0f, 1.0f), M_PI_4_F) && near(tanh(x), 0.46211716f) && near(asinh(x), 0.48121182f));
  CHECK(near(erf(x), 0.52049988f) && near(cbrt(27.0f), 3));
  float4 s4 = sin(float4(0, x, 1, 2));
  CHECK(near(s4.y, 0.479425538f) && near(s4.w, 0.909297427f));
  half4 hs = sin(half4(x));
  CHECK(__builtin_fabsf((float)hs.x - 0.4794f) < 1e-3f);
  bfloat bs = exp((bfloat)1.0f);
  CHECK((float)bs == 2.71875f);
  CHECK(fract(-0.25f) == 0.75f && fract(1.5f) == 0.5f);
  CHECK(sign(-3.0f) == -1 && sign(2.0f) == 1 && sign(0.0f) == 0 && sign(NAN) == 0);
  CHECK(fmod(7.5f, 2.0f) == 1.5f && near(remainder(7.5f, 2.0f), -0.5f));
  CHECK(round(2.5f) == 3 && rint(2.5f) == 2 && rint(3.5f) == 4 && trunc(-2.7f) == -2 && floor(-2.5f) == -3 && ceil(2.1f) == 3);
  CHECK(clamp(5.0f, 0.0f, 1.0f) == 1 && saturate(-1.0f) == 0 && saturate(0.5f) == 0.5f);
  float4 cl = clamp(float4(-1, 0.5f, 2, 3), 0.0f, 1.0f);
  CHECK(cl.x == 0 && cl.y == 0.5f && cl.w == 1);
  CHECK(mix(1.0f, 3.0f, 0.25f) == 1.5f && step(1.0f, 0.5f) == 0 && step(1.0f, 1.0f) == 1);
  float4 st = step(0.5f, float4(0, 1, 0.5f, 0.2f));
  CHECK(st.x == 0 && st.y == 1 && st.z == 1 && st.w == 0);
  CHECK(smoothstep(0.0f, 1.0f, 0.5f) == 0.5f && smoothstep(0.0f, 1.0f, 2.0f) == 1);
  CHECK(min(1, 2) == 1 && max(3u, 4u) == 4 && min(-1.0f, 2.0f) == -1 && max(half(1), half(2)) == (half)2);
  float4 mx = max(float4(1, 5, 3, 7), 4.0f);
  CHECK(mx.x == 4 && mx.y == 5);
  int4 mi = min(int4(1, 5, 3, 7), int4(4));
  CHECK(mi.y == 4 && mi.x == 1);
  CHECK(fmax(NAN, 1.0f) == 1.0f && fmin(2.0f, NAN) == 2.0f);
  CHECK(abs(-3) == 3 && abs(-2.5f) == 2.5f && fabs(-1.0f) == 1 && all(abs(int2(-1, 2)) == int2(1, 2)));
  CHECK(fma(2.0f, 3.0f, 1.0f) == 7 && near(dot(float3(1, 2, 3), float3(4, 5, 6)), 32));
  float3 cr = cross(float3(1, 0, 0), float3(0, 1, 0));
  CHECK(cr.z == 1 && cr.x == 0);
  CHECK(near(length(float2(3, 4)), 5) && near(distance(float2(0), float2(3, 4)), 5));
  float2 nv = normalize(float2(3, 4));
  CHECK(near(nv.x, 0.6f) && near(nv.y, 0.8f));
  CHECK(dot(half2(1, 2), half2(3, 4)) == (half)11);
  float ip;
  CHECK(modf(2.75f, ip) == 0.75f && ip == 2);
  float c;
  CHECK(near(sincos(x, c), 0.479425538f) && near(c, 0.877582562f));
  int e;
  CHECK(frexp(8.0f, e) == 0.5f && e == 4 && ldexp(0.5f, 4) == 8);
  int2 e2;
  float2 fr = frexp(float2(8, 1), e2);
  CHECK(fr.y == 0.5f && e2.y == 1 && all(ldexp(float2(1), int2(1, 2)) == float2(2, 4)));
  CHECK(isnan(NAN) && !isnan(1.0f) && isinf(INFINITY) && isfinite(1.0f) && signbit(-0.0f) && !signbit(0.0f));
  bool4 nn = isnan(float4(0, NAN, 1, NAN));
  CHECK(!nn.x && nn.y && nn.w);
  CHECK(isnan((half)NAN) && nextafter(1.0f, 2.0f) == 1.0f + 0x1p-23f && copysign(1.0f, -2.0f) == -1);
  CHECK(fast::exp(0.0f) == 1 && precise::sqrt(4.0f) == 2 && metal::fast::divide(1.0f, 4.0f) == 0.25f);
  // integers
  CHECK(popcount(0xF0F0u) == 8 && clz(1u) == 31 && clz(0u) == 32 && ctz(8) == 3 && ctz(0) == 32 && clz((ushort)1) == 15);
  CHECK(reverse_bits(1u) == 0x80000000u && rotate(0x80000001u, 1u) == 3u && rotate((uchar)0x81, (uchar)4) == 0x18);
  CHECK(all(popcount(uint2(3, 7)) == uint2(2, 3)));
  CHECK(mulhi(0x80000000u, 4u) == 2u && mulhi(-2, 0x40000000) == -1 && mulhi(~0ul, 2ul) == 1ul);
  CHECK(add_sat(2147483647, 1) == 2147483647 && sub_sat(0u, 1u) == 0u && add_sat((uchar)250, (uchar)10) == 255);
  CHECK(absdiff(-5, 5) == 10 && absdiff(3u, 10u) == 7u && hadd(7, 9) == 8 && rhadd(7, 8) == 8);
  CHECK(madsat(100000, 100000, 0) == 2147483647 && extract_bits(0xABCDu, 4, 8) == 0xBCu && extract_bits(0xF0, 4, 4) == -1);
  CHECK(insert_bits(0u, 0xFu, 4, 4) == 0xF0u && median3(3, 1, 2) == 2 && max3(1, 5, 3) == 5);
  CHECK(INT_MAX == 2147483647 && M_PI_F > 3.14f && M_PI_H == (half)3.140625f && MAXFLOAT == FLT_MAX);
  uint gid = 20;
  CHECK(min(gid, 10) == 10u && max(half(1), 2.0f) == 2.0f && clamp(300, 0, 255) == 255);
  constexpr float cm = max(1.0f, 2.0f);
  static_assert(cm == 2.0f, "constexpr max");
  static_assert(is_same<uint, unsigned int>::value && is_floating_point<half>::value && !is_floating_point<int>::value, "traits");
  static_assert(vec_elements<float3>::value == 3, "vec_elements");
  metal::array<int, 3> arr = {{1, 2, 3}};
  CHECK(arr[2] == 3 && arr.size() == 3);
}

// ---------- atomics ----------
extern "C" int pthread_create(unsigned long*, const void*, void* (*)(void*), void*);
extern "C" int pthread_join(unsigned long, void**);
static atomic_float g_af;
static atomic_int g_ai;
static void* adder(void*) {
  for (int i = 0; i < 100000; ++i) {
    atomic_fetch_add_explicit(&g_af, 1.0f, memory_order_relaxed);
    atomic_fetch_add_explicit(&g_ai, 2, memory_order_relaxed);
  }
  return nullptr;
}
static void test_atomics() {
  atomic_int ai;
  atomic_store_explicit(&ai, 5, memory_order_relaxed);
  CHECK(atomic_fetch_add_explicit(&ai, 3, memory_order_relaxed) == 5);
  CHECK(atomic_fetch_sub_explicit(&ai, 1, memory_order_relaxed) == 8);
  CHECK(atomic_fetch_max_explicit(&ai, 100, memory_order_relaxed) == 7);
  CHECK(atomic_fetch_min_explicit(&ai, -4, memory_order_relaxed) == 100);
  CHECK(atomic_load_explicit(&ai, memory_order_relaxed) == -4);
  CHECK(atomic_exchange_explicit(&ai, 12, memory_order_relaxed) == -4);
  CHECK(atomic_fetch_and_explicit(&ai, 4, memory_order_relaxed) == 12 && atomic_fetch_or_explicit(&ai, 3, memory_order_relaxed) == 4);
  CHECK(atomic_fetch_xor_explicit(&ai, 1, memory_order_relaxed) == 7 && atomic_load_explicit(&ai, memory_order_relaxed) == 6);
  int expected = 5;
  CHECK(!atomic_compare_exchange_weak_explicit(&ai, &expected, 9, memory_order_relaxed, memory_order_relaxed) && expected == 6);
  CHECK(atomic_compare_exchange_strong_explicit(&ai, &expected, 9, memory_order_relaxed, memory_order_relaxed));
  CHECK(atomic_load_explicit(&ai, memory_order_relaxed) == 9);
  atomic_uint au;
  atomic_store_explicit(&au, 0u, memory_order_relaxed);
  CHECK(atomic_fetch_sub_explicit(&au, 1, memory_order_relaxed) == 0u && atomic_load_explicit(&au, memory_order_relaxed) == 0xffffffffu);
  CHECK(atomic_fetch_max_explicit(&au, 5u, memory_order_relaxed) == 0xffffffffu);  // unsigned max
  atomic_float af;
  atomic_store_explicit(&af, 1.5f, memory_order_relaxed);
  CHECK(atomic_fetch_add_explicit(&af, 2.0f, memory_order_relaxed) == 1.5f);
  CHECK(atomic_fetch_sub_explicit(&af, 0.5f, memory_order_relaxed) == 3.5f);
  CHECK(atomic_fetch_max_explicit(&af, 10.0f, memory_order_relaxed) == 3.0f);
  CHECK(atomic_fetch_min_explicit(&af, -1.0f, memory_order_relaxed) == 10.0f);
  CHECK(atomic_exchange_explicit(&af, 7.0f, memory_order_relaxed) == -1.0f && atomic_load_explicit(&af, memory_order_relaxed) == 7.0f);
  float fe = 7.0f;
  CHECK(atomic_compare_exchange_weak_explicit(&af, &fe, 8.0f, memory_order_relaxed, memory_order_relaxed) || atomic_load_explicit(&af, memory_order_relaxed) == 8.0f);
  atomic_bool ab;
  atomic_store_explicit(&ab, true, memory_order_relaxed);
  CHECK(atomic_exchange_explicit(&ab, false, memory_order_relaxed) == true && !atomic_load_explicit(&ab, memory_order_relaxed));
  atomic_ulong aul;
  atomic_store_explicit(&aul, 5ul, memory_order_relaxed);
  atomic_max_explicit(&aul, 1ul << 40, memory_order_relaxed);
  atomic_min_explicit(&aul, 1ul << 41, memory_order_relaxed);
  CHECK(atomic_load_explicit(&aul, memory_order_relaxed) == (1ul << 40));
  atomic_thread_fence(mem_flags::mem_device, memory_order_seq_cst);
  // several OS threads
  atomic_store_explicit(&g_af, 0.0f, memory_order_relaxed);
  atomic_store_explicit(&g_ai, 0, memory_order_relaxed);
  unsigned long th[4];
  for (int i = 0; i < 4; ++i) pthread_create(&th[i], nullptr, adder, nullptr);
  for (int i = 0; i < 4; ++i) pthread_join(th[i], nullptr);
  CHECK(atomic_load_explicit(&g_af, memory_order_relaxed) == 400000.0f);
  CHECK(atomic_load_explicit(&g_ai, memory_order_relaxed) == 800000);
}

// ---------- SIMD-group functions ----------
static void test_simd() {
  float sum[32], incl[32], excl[32], shx[32], sup[32], sdn[32], rup[32], bro[32], first[32];
  int imax[32], iand[32], prod_ex[32];
  ulong ballot[32];
  bool isf[32], allv[32], anyv[32];
  unsigned active = 0xffffffffu & ~(1u << 5) & ~(1u << 30);  // lanes 5 and 30 exited
  run_lanes(active, 16, [&](unsigned l) {
    float v = (float)(l + 1);
    sum[l] = simd_sum(v);
    incl[l] = simd_prefix_inclusive_sum(v);
    excl[l] = simd_prefix_exclusive_sum(v);
    shx[l] = simd_shuffle_xor(v, 1);
    sup[l] = simd_shuffle_up(v, 2);
    sdn[l] = metal::simd_shuffle_down(v, 1);
    rup[l] = simd_shuffle_rotate_up(v, 1);
    bro[l] = simd_broadcast(v, 7);
    first[l] = simd_broadcast_first(v);
    imax[l] = simd_max((int)l * (l % 2 ? 1 : -1));
    iand[l] = simd_and(0xff | (1 << l));
    prod_ex[l] = quad_prefix_exclusive_product((int)l + 1);
    ballot[l] = (ulong)simd_ballot(l % 3 == 0);
    isf[l] = simd_is_first();
    allv[l] = simd_all(l != 31);
    anyv[l] = simd_any(l == 31);
  });
  float total = 0;
  for (unsigned l = 0; l < 32; ++l) if ((active >> l) & 1) total += (float)(l + 1);
  float run = 0;
  for (unsigned l = 0; l < 32; ++l) {
    if (!((active >> l) & 1)) continue;
    float v = (float)(l + 1);
    CHECK(sum[l] == total);
    CHECK(excl[l] == run);
    run += v;
    CHECK(incl[l] == run);
    unsigned src = l ^ 1;
    CHECK(shx[l] == (((active >> src) & 1) ? (float)(src + 1) : v));
    CHECK(sup[l] == (l >= 2 && ((active >> (l - 2)) & 1) ? (float)(l - 1) : v));
    CHECK(sdn[l] == (l + 1 < 32 && ((active >> (l + 1)) & 1) ? (float)(l + 2) : v));
    unsigned ru = (l + 31) % 32;
    CHECK(rup[l] == (((active >> ru) & 1) ? (float)(ru + 1) : v));
    CHECK(bro[l] == 8.0f && first[l] == 1.0f);
    CHECK(imax[l] == 31 && iand[l] == 0xff);
    unsigned qb = l & ~3u;
    int pe = 1;
    for (unsigned j = qb; j < l; ++j) if ((active >> j) & 1) pe *= (int)j + 1;
    CHECK(prod_ex[l] == pe);
    ulong want = 0;
    for (unsigned j = 0; j < 32; ++j) if (((active >> j) & 1) && j % 3 == 0) want |= 1ul << j;
    CHECK(ballot[l] == want);
    CHECK(isf[l] == (l == 0));
    CHECK(allv[l] == false && anyv[l] == true);
  }
  // quad and vector values
  float4 qs[32];
  half hsum[32];
  uint qsh[32];
  run_lanes(0xffffffffu, 4, [&](unsigned l) {
    qs[l] = quad_sum(float4((float)l, 1, 2, 3));
    hsum[l] = simd_sum((half)0.5f);
    qsh[l] = quad_shuffle(l * 10, 2);
  });
  for (unsigned l = 0; l < 32; ++l) {
    unsigned b = l & ~3u;
    CHECK(qs[l].x == (float)(4 * b + 6) && qs[l].y == 4);
    CHECK(hsum[l] == (half)16);
    CHECK(qsh[l] == (b + 2) * 10);
  }
  int fd[32], fu[32], fm[32], qf[32];
  run_lanes(0xffffffffu, 4, [&](unsigned l) {
    fd[l] = simd_shuffle_and_fill_down((int)l, 100 + (int)l, 3);
    fu[l] = simd_shuffle_and_fill_up((int)l, 100 + (int)l, 2);
    fm[l] = simd_shuffle_and_fill_down((int)l, 100 + (int)l, 1, 8);
    qf[l] = quad_shuffle_and_fill_up((int)l, 100 + (int)l, 1);
  });
  for (unsigned l = 0; l < 32; ++l) {
    CHECK(fd[l] == (l + 3 < 32 ? (int)l + 3 : 100 + (int)(l + 3 - 32)));
    CHECK(fu[l] == (l >= 2 ? (int)l - 2 : 100 + (int)(30 + l)));
    unsigned sb = l & ~7u, i = l - sb;
    CHECK(fm[l] == (i + 1 < 8 ? (int)l + 1 : 100 + (int)sb));
    unsigned qb = l & ~3u, qi = l - qb;
    CHECK(qf[l] == (qi >= 1 ? (int)l - 1 : 100 + (int)(qb + 3)));
  }
  simd_vote vt = simd_vote(0xful, 0xful);
  CHECK(vt.all() && vt.any());
}

// Deferred multiplies: chains longer than a chain holds, accumulators of every float type,
// chains taken over from another matrix, operands that are pending products: each result must
// equal multiplying one at a time (sums over i from 0.0f in float, + c, rounded to the
// destination type), as this reference does.
template<class TD, class TA> static void chain_case(int steps, unsigned seed) {
  static float A[48][64], B[48][64], C0[64], want[64], twant[64];
  unsigned s = seed;
  for (int t = 0; t < steps; ++t)
    for (int i = 0; i < 64; ++i) {
      s = s * 1103515245u + 12345u; A[t][i] = (float)(TA)((float)((int)(s >> 8) % 100003 - 50001) * 0.0009765625f);
      s = s * 1103515245u + 12345u; B[t][i] = (float)(TA)((float)((int)(s >> 8) % 70001 - 35000) * 0.000013f);
    }
  for (int i = 0; i < 64; ++i) { s = s * 1103515245u + 12345u; C0[i] = (float)(TD)((float)((int)(s >> 8) % 9999 - 4999) * 0.01f); }
  for (int i = 0; i < 64; ++i) want[i] = C0[i];
  for (int t = 0; t < steps; ++t) {
    float next[64];
    for (int r = 0; r < 8; ++r)
      for (int c = 0; c < 8; ++c) {
        float acc = 0;
        for (int k = 0; k < 8; ++k) acc += A[t][r * 8 + k] * B[t][k * 8 + c];
        next[r * 8 + c] = (float)(TD)(acc + want[r * 8 + c]);
      }
    for (int i = 0; i < 64; ++i) want[i] = next[i];
    if (t == steps / 2 - 1)
      for (int i = 0; i < 64; ++i) twant[i] = want[i];  // the copy's value (taken over half way)
  }
  static TD in_place[64], copy_out[64], half_way[64];
  static TA at[48][64], bt[48][64];
  static TD c0t[64];
  for (int t = 0; t < steps; ++t) for (int i = 0; i < 64; ++i) { at[t][i] = (TA)A[t][i]; bt[t][i] = (TA)B[t][i]; }
  for (int i = 0; i < 64; ++i) c0t[i] = (TD)C0[i];
  run_lanes(0xffffffffu, 8, [&](unsigned) {
    simdgroup_matrix<TD, 8, 8> acc, snap;
    simdgroup_load(acc, c0t);
    for (int t = 0; t < steps; ++t) {
      simdgroup_matrix<TA, 8, 8> a, b;
      simdgroup_load(a, at[t]);
      simdgroup_load(b, bt[t]);
      simdgroup_multiply_accumulate(acc, a, b, acc);
      if (t == steps / 2 - 1) snap = acc;  // a copy of a pending chain
    }
    // the second half again, into a matrix whose c is the pending copy (its steps taken over)
    simdgroup_matrix<TD, 8, 8> other = make_filled_simdgroup_matrix<TD, 8, 8>((TD)7);
    for (int t = steps / 2; t < steps; ++t) {
      simdgroup_matrix<TA, 8, 8> a, b;
      simdgroup_load(a, at[t]);
      simdgroup_load(b, bt[t]);
      simdgroup_multiply_accumulate(other, a, b, t == steps / 2 ? snap : other);
    }
    simdgroup_store(acc, in_place);
    simdgroup_store(other, copy_out);
    simdgroup_store(snap, half_way);
  });
  bool ok = true, ok_half = true;
  for (int i = 0; i < 64; ++i) {
    ok = ok && (float)in_place[i] == want[i] && (float)copy_out[i] == want[i];
    ok_half = ok_half && (float)half_way[i] == twant[i];
  }
  CHECK(ok);
  CHECK(ok_half);
  if (!ok || !ok_half) printf("  chain_case: steps %d, sizeof TD %d, TA %d\n", steps, (int)sizeof(TD), (int)sizeof(TA));
}

static void test_matrix_chains() {
  static const int kSteps[] = {2, 3, 15, 16, 17, 47};  // (at least 2: half of the steps go to a copy)
  for (int steps : kSteps) {
    chain_case<float, float>(steps, 11u + steps);
    chain_case<float, half>(steps, 23u + steps);
    chain_case<half, half>(steps, 37u + steps);
    chain_case<bfloat, bfloat>(steps, 41u + steps);
  }
  // An operand that is a pending product is completed first; pending products as both operands.
  float X[64], Y[64], Z[64], want[64];
  for (int i = 0; i < 64; ++i) { X[i] = (float)(i % 9) - 4; Y[i] = (float)((i * 7) % 5) * 0.5f; }
  float xy[64], sq[64];
  for (int r = 0; r < 8; ++r) for (int c = 0; c < 8; ++c) {
    float acc = 0; for (int k = 0; k < 8; ++k) acc += X[r * 8 + k] * Y[k * 8 + c];
    xy[r * 8 + c] = acc + 0.0f;
  }
  for (int r = 0; r < 8; ++r) for (int c = 0; c < 8; ++c) {
    float acc = 0; for (int k = 0; k < 8; ++k) acc += xy[r * 8 + k] * xy[k * 8 + c];
    sq[r * 8 + c] = acc + xy[r * 8 + c];
  }
  for (int i = 0; i < 64; ++i) want[i] = sq[i];
  run_lanes(0xffffffffu, 4, [&](unsigned) {
    simdgroup_float8x8 x, y, p;
    simdgroup_load(x, X);
    simdgroup_load(y, Y);
    simdgroup_multiply(p, x, y);
    simdgroup_multiply_accumulate(p, p, p, p);  // every operand the pending product
    simdgroup_store(p, Z);
  });
  bool ok = true;
  for (int i = 0; i < 64; ++i) ok = ok && Z[i] == want[i];
  CHECK(ok);
  // A chain read through thread_elements(); a load over a pending chain drops it.
  float T[64];
  run_lanes(0xffffffffu, 3, [&](unsigned) {
    simdgroup_float8x8 x, y, p;
    simdgroup_load(x, X);
    simdgroup_load(y, Y);
    simdgroup_multiply(p, x, y);
    float e0 = p.thread_elements()[0];
    simdgroup_multiply(p, x, y);
    simdgroup_load(p, Y);  // overwrites the pending product
    p.thread_elements()[0] = e0;
    simdgroup_store(p, T);
  });
  ok = true;
  for (unsigned l = 0; l < 32; ++l) {
    unsigned r = ::tmps_sim::mat_row(l), c = ::tmps_sim::mat_col0(l);
    ok = ok && T[r * 8 + c] == xy[r * 8 + c] && T[r * 8 + c + 1] == Y[r * 8 + c + 1];
  }
  CHECK(ok);
  // Lanes that completed different chains (diverged) fail.
  g_failed_line = 0;
  float W[64];
  run_lanes(0xffffffffu, 2, [&](unsigned l) {
    simdgroup_float8x8 x, d;
    simdgroup_load(x, X);
    if (l < 16) simdgroup_multiply(d, x, x);
    else simdgroup_multiply(d, x, x);
    simdgroup_store(d, W);
  });
  CHECK(g_failed_line != 0);
}

// ---------- simdgroup_matrix ----------
static void test_matrix() {
  float A[64], B[64], C[64], D[64], want[64], DT[64];
  unsigned s = 1;
  for (int i = 0; i < 64; ++i) {
    s = s * 1103515245u + 12345u; A[i] = (float)((s >> 16) % 17) - 8;
    s = s * 1103515245u + 12345u; B[i] = (float)((s >> 16) % 13) * 0.25f;
    s = s * 1103515245u + 12345u; C[i] = (float)((s >> 16) % 7);
  }
  for (int r = 0; r < 8; ++r)
    for (int c = 0; c < 8; ++c) {
      float acc = 0;
      for (int k = 0; k < 8; ++k) acc += A[r * 8 + k] * B[k * 8 + c];
      want[r * 8 + c] = acc + C[r * 8 + c];
    }
  // layout covers every element exactly once
  int seen[64] = {};
  for (unsigned l = 0; l < 32; ++l) {
    unsigned r = ::tmps_sim::mat_row(l), c = ::tmps_sim::mat_col0(l);
    seen[r * 8 + c]++; seen[r * 8 + c + 1]++;
    CHECK(::tmps_sim::mat_lane(r, c) == l && ::tmps_sim::mat_lane(r, c + 1) == l);
  }
  for (int i = 0; i < 64; ++i) CHECK(seen[i] == 1);
  run_lanes(0xffffffffu, 2, [&](unsigned) {
    simdgroup_float8x8 a, b, c, d;
    simdgroup_load(a, A);
    simdgroup_load(b, B, 8);
    simdgroup_load(c, C, 8, ulong2(0, 0));
    simdgroup_multiply_accumulate(d, a, b, c);
    simdgroup_store(d, D, 8);
    simdgroup_store(d, DT, 8, ulong2(0, 0), true);
  });
  for (int i = 0; i < 64; ++i) CHECK(D[i] == want[i]);
  for (int r = 0; r < 8; ++r) for (int c = 0; c < 8; ++c) CHECK(DT[c * 8 + r] == want[r * 8 + c]);
  // Rounded sums (fractions over 2^-20..2^10): each element must come out of i = 0..7 from 0,
  // then + c, as this reference computes it; a second multiply right after the first (a new
  // exchange) must not reuse the first one's sums.
  float RA[64], RB[64], RC[64], R1[64], R2[64], want1[64], want2[64];
  for (int i = 0; i < 64; ++i) {
    s = s * 1103515245u + 12345u; RA[i] = (float)((int)(s >> 8) % 100003 - 50001) * 0.0009765625f;
    s = s * 1103515245u + 12345u; RB[i] = (float)((int)(s >> 8) % 70001 - 35000) * 0.000001f;
    s = s * 1103515245u + 12345u; RC[i] = (float)((int)(s >> 8) % 9999 - 4999) * 0.0001f;  // small: c must not hide the sums' low bits
  }
  for (int r = 0; r < 8; ++r)
    for (int c = 0; c < 8; ++c) {
      float acc = 0, acc2 = 0;
      for (int k = 0; k < 8; ++k) acc += RA[r * 8 + k] * RB[k * 8 + c];
      want1[r * 8 + c] = acc + RC[r * 8 + c];
      for (int k = 0; k < 8; ++k) acc2 += RB[r * 8 + k] * RA[k * 8 + c];
      want2[r * 8 + c] = acc2 + want1[r * 8 + c];
    }
  run_lanes(0xffffffffu, 3, [&](unsigned) {
    simdgroup_float8x8 a, b, c, d, e;
    simdgroup_load(a, RA);
    simdgroup_load(b, RB);
    simdgroup_load(c, RC);
    simdgroup_multiply_accumulate(d, a, b, c);
    simdgroup_multiply_accumulate(e, b, a, d);
    simdgroup_store(d, R1);
    simdgroup_store(e, R2);
  });
  for (int i = 0; i < 64; ++i) CHECK(R1[i] == want1[i] && R2[i] == want2[i]);
  // half inputs, transposed load from a 16-wide buffer at an origin, multiply without C
  half Hbig[16 * 16];
  for (int i = 0; i < 256; ++i) Hbig[i] = (half)(float)(i % 11 - 5);
  float E[64];
  run_lanes(0xffffffffu, 2, [&](unsigned) {
    simdgroup_half8x8 a, bt;
    simdgroup_load(a, Hbig, 16, ulong2(8, 0));          // rows 0..7, cols 8..15
    simdgroup_load(bt, Hbig, 16, ulong2(0, 8), true);  // transpose of rows 8..15, cols 0..7
    simdgroup_float8x8 e;
    simdgroup_multiply(e, a, bt);
    simdgroup_store(e, E);
  });
  for (int r = 0; r < 8; ++r)
    for (int c = 0; c < 8; ++c) {
      float acc = 0;
      for (int k = 0; k < 8; ++k) acc += (float)Hbig[r * 16 + 8 + k] * (float)Hbig[(8 + c) * 16 + k];
      CHECK(E[r * 8 + c] == acc);
    }
  // filled / diagonal / thread_elements
  float F[64];
  run_lanes(0xffffffffu, 1, [&](unsigned) {
    simdgroup_float8x8 f = make_filled_simdgroup_matrix<float, 8, 8>(2.0f);
    simdgroup_float8x8 dg = simdgroup_float8x8(3.0f);
    f.thread_elements()[0] += dg.thread_elements()[0];
    f.thread_elements()[1] += dg.thread_elements()[1];
    simdgroup_store(f, F);
  });
  for (int r = 0; r < 8; ++r) for (int c = 0; c < 8; ++c) CHECK(F[r * 8 + c] == (r == c ? 5.0f : 2.0f));
  // partial SIMD-group must fail (when the product is read: multiplies are deferred until then)
  g_failed_line = 0;
  float P[64];
  run_lanes(0x7fffffffu, 2, [&](unsigned) {
    simdgroup_float8x8 a = make_filled_simdgroup_matrix<float, 8, 8>(1.0f), d;
    simdgroup_multiply(d, a, a);
    simdgroup_store(d, P);
  });
  CHECK(g_failed_line != 0);
  test_matrix_chains();
}

static void test_threadgroup_static() {
  auto& buf = ::tmps_sim::threadgroup_static<float[16]>(0, __LINE__);
  buf[3] = 4.0f;
  CHECK((void*)&buf[0] == (void*)g_tg_mem && ((float*)g_tg_mem)[3] == 4.0f);
  threadgroup_barrier(mem_flags::mem_threadgroup | mem_flags::mem_device);
  simdgroup_barrier(mem_flags::mem_none);
}

extern "C" int run_all() {
  tmps_sim_rt = &g_rt;
  test_vectors();
  test_bfloat_half();
  test_math();
  test_atomics();
  test_simd();
  test_matrix();
  test_threadgroup_static();
  printf("%d checks, %d failed\n", g_checks, g_fail);
  return g_fail;
}
