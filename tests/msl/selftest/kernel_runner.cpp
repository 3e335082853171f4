// Executes the test kernels with one SIMD-group per threadgroup: lanes run in sequence and
// collectives resolve by repeated rounds (valid for kernels whose lanes only interact through
// collectives and through memory written before being read in lane order).
#include "bare_reduce_sum.cpp"
#include "bare_softmax_half4.cpp"
#include "bare_simdgroup_matmul.cpp"
#include "bare_bfloat_ops.cpp"
#include "bare_scan_shuffle.cpp"
extern "C" int printf(const char*, ...);
extern "C" const tmps_sim_runtime* tmps_sim_rt = nullptr;
static int g_fail = 0;
#define CHECK(c) do { if (!(c)) { ++g_fail; printf("FAIL line %d: %s\n", __LINE__, #c); } } while (0)

static tmps_sim_thread g_thread;
static tmps_sim_exchange g_snap[64], g_next[64];
static unsigned g_call;
static const tmps_sim_thread* m_current() { return &g_thread; }
static const tmps_sim_exchange* m_exchange(const void* v, tmps_u32 size, tmps_u32, tmps_u32) {
  unsigned j = g_call++, lane = g_thread.thread_index_in_simdgroup;
  __builtin_memcpy(g_next[j].value[lane], v, size);
  g_next[j].size = size;
  g_next[j].active_mask |= 1u << lane;
  return &g_snap[j];
}
static void m_barrier(tmps_u32, tmps_u32) {}
static void m_fail(tmps_u32, const char*) {}
static unsigned char g_tg[8][4096];
static void* m_tgstatic(tmps_u32 id, tmps_u64, tmps_u64, tmps_u32) { return g_tg[id]; }
static tmps_sim_runtime g_rt = {TMPS_SIM_ABI_VERSION, m_barrier, m_barrier, m_exchange, m_tgstatic, m_fail, m_current};

// Runs threadgroup (gx, gy) of 32 threads (1-D in x) `rounds` times.
template<class F> static void run_group(unsigned gx, unsigned gy, int rounds, F body) {
  __builtin_memset(g_snap, 0, sizeof g_snap);
  for (int r = 0; r < rounds; ++r) {
    __builtin_memset(g_next, 0, sizeof g_next);
    for (unsigned l = 0; l < 32; ++l) {
      g_thread.thread_index_in_simdgroup = l;
      g_thread.thread_index_in_quadgroup = l & 3;
      g_call = 0;
      body(l, gx * 32 + l, gx, gy);
    }
    __builtin_memcpy(g_snap, g_next, sizeof g_snap);
  }
}

extern "C" int run_kernels() {
  tmps_sim_rt = &g_rt;
  {  // reduce_sum, 32 threads per group
    static float in[1000], out[32];
    unsigned n = 1000;
    for (unsigned i = 0; i < n; ++i) in[i] = (float)(i % 7);
    for (unsigned g = 0; g < 32; ++g)
      run_group(g, 0, 4, [&](unsigned l, unsigned gid, unsigned tg, unsigned) { reduce_sum(in, out, n, gid, tg, l, 0, 1); });
    for (unsigned g = 0; g < 32; ++g) {
      float want = 0;
      for (unsigned i = g * 32; i < g * 32 + 32 && i < n; ++i) want += in[i];
      CHECK(out[g] == want);
    }
  }
  {  // softmax_half4: 2 rows of 64
    static half x[2 * 64], y[2 * 64];
    unsigned cols = 64;
    for (int i = 0; i < 128; ++i) x[i] = (half)(float)((i * 37 % 19) - 9) * (half)0.25f;
    for (unsigned r = 0; r < 2; ++r)
      run_group(r, 0, 8, [&](unsigned l, unsigned, unsigned row, unsigned) {
        softmax_half4((const half4*)x, (half4*)y, cols, row, l, 32, l, 0, 1);
      });
    for (unsigned r = 0; r < 2; ++r) {
      float m = -1e30f, s = 0, tot = 0;
      for (unsigned c = 0; c < cols; ++c) m = max(m, (float)x[r * 64 + c]);
      for (unsigned c = 0; c < cols; ++c) s += __builtin_expf((float)x[r * 64 + c] - m);
      for (unsigned c = 0; c < cols; ++c) {
        float want = __builtin_expf((float)x[r * 64 + c] - m) / s;
        CHECK(__builtin_fabsf((float)y[r * 64 + c] - want) <= 1e-3f * want + 1e-6f);
        tot += (float)y[r * 64 + c];
      }
      CHECK(__builtin_fabsf(tot - 1) < 1e-2f);
    }
  }
  {  // simdgroup_matmul 16x24 * 24x16
    const unsigned M = 16, N = 16, K = 24;
    static half A[M * K], B[K * N];
    static float C[M * N];
    for (unsigned i = 0; i < M; ++i) for (unsigned k = 0; k < K; ++k) A[i * K + k] = (half)(float)((int)((i + k) % 5) - 2);
    for (unsigned k = 0; k < K; ++k) for (unsigned j = 0; j < N; ++j) B[k * N + j] = (half)(float)((k * j) % 3);
    uint3 dims = uint3(M, N, K);
    for (unsigned ty = 0; ty < M / 8; ++ty)
      for (unsigned tx = 0; tx < N / 8; ++tx)
        run_group(tx, ty, 4, [&](unsigned, unsigned, unsigned gx, unsigned gy) { simdgroup_matmul(A, B, C, dims, uint2(gx, gy)); });
    for (unsigned i = 0; i < M; ++i)
      for (unsigned j = 0; j < N; ++j) {
        float want = 0;
        for (unsigned k = 0; k < K; ++k) want += (float)A[i * K + k] * (float)B[k * N + j];
        CHECK(C[i * N + j] == want);
      }
  }
  {  // bfloat_axpy
    static bfloat4 x[4], y[4];
    static half h[4];
    static uint bits[4];
    float a = 2.0f;
    x[0] = bfloat4(1.5f, 1, 2, 3); y[0] = bfloat4(0.0078125f, 0, 0, 0);
    x[1] = bfloat4(1.0f); y[1] = bfloat4(1.0f);
    x[2] = bfloat4(100.0f, 0.1f, -3, 7); y[2] = bfloat4(0.5f);
    x[3] = bfloat4(3.0f); y[3] = bfloat4(-6.0f);
    for (unsigned i = 0; i < 4; ++i) bfloat_axpy(x, y, h, bits, a, i);
    CHECK((float)y[0].x == 3.0f && (float)y[0].y == 2.0f && (float)y[1].x == 3.0f && (float)y[3].x == 0.0f);
    CHECK((float)y[2].x == 200.0f && bits[1] == 0x3f80u && bits[0] == 0x3f80u + 1u);
    CHECK(h[1] == (half)2.0f && h[0] == (half)3.75f);
  }
  {  // scan_shuffle, 32 per group
    static uint in[64], scan[64], bf[64], nb[64], qd[64], bl[64];
    for (unsigned i = 0; i < 64; ++i) in[i] = i % 5;
    for (unsigned g = 0; g < 2; ++g)
      run_group(g, 0, 16, [&](unsigned l, unsigned gid, unsigned, unsigned) { scan_shuffle(in, scan, bf, nb, qd, bl, gid, (ushort)l, 0, 1); });
    for (unsigned g = 0; g < 2; ++g) {
      unsigned run = 0, mx = 0, ballot = 0;
      for (unsigned l = 0; l < 32; ++l) { mx = max(mx, in[g * 32 + l]); if (in[g * 32 + l] & 1) ballot |= 1u << l; }
      for (unsigned l = 0; l < 32; ++l) {
        unsigned i = g * 32 + l;
        run += in[i];
        if (l != 31) CHECK(scan[i] == run);  // the sequential mock cannot honour the barrier for lane 31
        CHECK(bf[i] == mx);
        unsigned left = l > 0 ? in[i - 1] : in[i], right = l < 31 ? in[i + 1] : in[i];
        CHECK(nb[i] == left + right);
        unsigned qb = i & ~3u;
        CHECK(qd[i] == in[qb] + in[qb + 1] + in[qb + 2] + in[qb + 3]);
        CHECK(bl[i] == ballot);
      }
    }
  }
  printf("kernels: %d failures\n", g_fail);
  return g_fail;
}
