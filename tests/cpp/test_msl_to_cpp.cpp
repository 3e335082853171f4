// The simulator's MSL -> C++ rewrite (sim/msl_to_cpp): lines kept, attributes blanked,
// kernel-scope threadgroup variables made runtime-shared, half literals cast, the generated tail.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "errors.h"
#include "sim/msl_to_cpp.h"

using tmps::CompileError;
using tmps::translate_for_simulator;

namespace {

size_t count_lines(const std::string& s) { return std::count(s.begin(), s.end(), '\n'); }

// `cpp` with memcheck's checked accesses (sim/checked_access.h, tested on their own) spelled
// as in the source again: TMPS_MC_LOAD(&p[i]) -> p[i], TMPS_MC_STORE(p) -> *p.
std::string without_checks(std::string cpp) {
  for (const char* m : {"TMPS_MC_LOAD(", "TMPS_MC_STORE("}) {
    for (size_t at = cpp.find(m); at != std::string::npos; at = cpp.find(m, at)) {
      const size_t open = at + std::char_traits<char>::length(m) - 1;
      size_t close = open;
      for (int depth = 0;; ++close) {
        if (cpp[close] == '(') ++depth;
        if (cpp[close] == ')' && --depth == 0) break;
      }
      std::string inner = cpp.substr(open + 1, close - open - 1);
      inner = inner[0] == '&' ? inner.substr(1) : "*" + inner;
      cpp.replace(at, close + 1 - at, inner);
    }
  }
  return cpp;
}

}  // namespace

TEST(MslToCpp, TranslateKeepsLinesAndRewrites) {
  const std::string src = R"(#include <metal_stdlib>
using namespace metal;
kernel void reduce(device const float* x [[buffer(0)]],
                   device float* out [[buffer(1)]],
                   threadgroup float* dyn [[threadgroup(0)]],
                   uint tid [[thread_index_in_threadgroup]]) {
  threadgroup float partial[256];
  threadgroup atomic_uint counter;
  threadgroup float4 tile[8][8], other
      [4];
  threadgroup float* alias = partial;
  half h = 1.5h + 2h;
  partial[tid] = x[tid];
  threadgroup_barrier(mem_flags::mem_threadgroup);
  out[0] = partial[0] + float(h);
}
)";
  auto t = translate_for_simulator(src, "red.metal");
  const std::string cpp = without_checks(t.cpp);
  ASSERT_EQ(t.kernels.size(), 1u);
  EXPECT_TRUE(t.kernels[0].needs_fibers);
  EXPECT_EQ(cpp.rfind("#include <metal_stdlib>\n#line 1 \"red.metal\"\n", 0), 0u);
  // The user's source occupies the same lines after the two prefix lines.
  size_t body = cpp.find('\n', cpp.find('\n') + 1) + 1;
  std::string translated = cpp.substr(body, src.size() + 400);
  translated = translated.substr(0, translated.find("// ---- generated"));
  EXPECT_EQ(count_lines(translated), count_lines(src) + 2);  // + the blank lines before the tail
  auto line_of = [&](const std::string& needle) {
    size_t at = translated.find(needle);
    EXPECT_NE(at, std::string::npos) << needle << "\n" << translated;
    return at == std::string::npos ? 0 : 1 + count_lines(translated.substr(0, at));
  };
  EXPECT_EQ(line_of("auto& partial = ::tmps_sim::threadgroup_static<float[256]>(0u, __LINE__);"), 7u);
  EXPECT_EQ(line_of("auto& counter = ::tmps_sim::threadgroup_static<atomic_uint>(1u, __LINE__);"), 8u);
  EXPECT_EQ(line_of("auto& tile = ::tmps_sim::threadgroup_static<float4[8][8]>(2u, __LINE__); "
                    "auto& other = ::tmps_sim::threadgroup_static<float4[4]>(3u, __LINE__);"),
            9u);
  EXPECT_EQ(line_of("threadgroup float* alias = partial;"), 11u);  // pointers stay as written
  EXPECT_EQ(line_of("half h = ((half)1.5) + ((half)2);"), 12u);
  EXPECT_EQ(line_of("out[0] = partial[0]"), 15u);
  // Attributes and the kernel keyword are blanked, not removed.
  EXPECT_EQ(translated.find("[["), std::string::npos);
  EXPECT_EQ(translated.find("kernel void"), std::string::npos);
  EXPECT_EQ(line_of("uint tid "), 6u);
  // The tail: entry, table, runtime pointer.
  EXPECT_NE(cpp.find("void tmps_sim_entry_reduce(const tmps_sim_args* tmps_args, const tmps_sim_thread* tmps_thread)"), std::string::npos);
  EXPECT_NE(cpp.find("tmps_args->threadgroup_buffers[0]"), std::string::npos);
  EXPECT_NE(cpp.find("::tmps_sim::position<"), std::string::npos);
  EXPECT_NE(cpp.find("tmps_thread->thread_index_in_threadgroup"), std::string::npos);
  EXPECT_NE(cpp.find("tmps_sim_kernels["), std::string::npos);
  EXPECT_NE(cpp.find("tmps_sim_rt"), std::string::npos);
  EXPECT_NE(cpp.find("tmps_sim_abi_version"), std::string::npos);
}

// `(bfloat)(x)` and `(bfloat)name` become the shim's inline conversion only where that is the
// whole operand; other casts keep the compiler's conversion (the same bits, test_sim_kernels.py).
TEST(MslToCpp, BfloatCastsOfOneParenthesizedOperand) {
  const std::string src = R"(kernel void k(device bfloat* y [[buffer(0)]], device const float* x [[buffer(1)]],
                  device const uchar* u [[buffer(2)]], uint i [[thread_position_in_grid]]) {
  y[0] = (bfloat)(x[i] * 2.0f) + (bfloat)(1.0f);
  y[1] = (bfloat)(uchar)u[i];
  y[2] = (bfloat)(x)[i];
  y[3] = (bfloat)(x[i], x[0]);
  y[4] = bfloat(x[i]);
  y[5] = (bfloat)x[i];
  float f = x[i];
  y[6] = (bfloat)f + (bfloat)f.x;
}
)";
  const std::string cpp = without_checks(translate_for_simulator(src, "b.metal").cpp);
  EXPECT_NE(cpp.find("y[0] = ::tmps_sim::to_bfloat(x[i] * 2.0f) + ::tmps_sim::to_bfloat(1.0f);"), std::string::npos) << cpp;
  EXPECT_NE(cpp.find("y[6] = ::tmps_sim::to_bfloat(f) + (bfloat)f.x;"), std::string::npos) << cpp;
  for (const char* kept : {"y[1] = (bfloat)(uchar)u[i];", "y[2] = (bfloat)(x)[i];", "y[3] = (bfloat)(x[i], x[0]);",
                           "y[4] = bfloat(x[i]);", "y[5] = (bfloat)x[i];"})
    EXPECT_NE(cpp.find(kept), std::string::npos) << kept << "\n" << cpp;
}

TEST(MslToCpp, ThreadgroupInitializerIsAnError) {
  try {
    translate_for_simulator("kernel void k(device float* a [[buffer(0)]]) {\n  threadgroup float s = 0;\n}");
    FAIL() << "expected CompileError";
  } catch (const CompileError& e) {
    EXPECT_NE(std::string(e.what()).find("kernel.metal:2: error:"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("initializer"), std::string::npos) << e.what();
  }
}

// SIMD-group collapse (sim/simd_collapse.h): what it takes, what it refuses and why.
std::string collapse_of(const std::string& body) {
  const std::string src = "#include <metal_stdlib>\nusing namespace metal;\n"
                          "kernel void k(device float* x [[buffer(0)]], constant uint& n [[buffer(1)]],\n"
                          "              uint3 pid [[threadgroup_position_in_grid]], uint lane [[thread_index_in_simdgroup]]) {\n" +
                          body + "\n}\n";
  auto t = translate_for_simulator(src, "c.metal");
  EXPECT_EQ(t.collapse.size(), 1u);
  if (t.collapse[0] == "collapsed") {
    EXPECT_NE(t.cpp.find("tmps_sim_simd_entry_k"), std::string::npos);
    EXPECT_EQ(t.cpp_plain.find("tmps_sim_simd_entry_k"), std::string::npos);
  } else {
    EXPECT_EQ(t.cpp, t.cpp_plain);
  }
  return t.collapse[0];
}

TEST(SimdCollapse, UniformLoopsAroundSimdFunctionsCollapse) {
  EXPECT_EQ(collapse_of("  float v = x[lane];\n"
                        "  for (uint i = 0; i < n; ++i) { v = v + simd_shuffle_xor(v, (ushort)1); }\n"
                        "  if (pid.x == 0) { float s = simd_sum(v); x[lane] = s; }\n"
                        "  threadgroup_barrier(mem_flags::mem_threadgroup);\n"
                        "  if (lane > 3) x[lane] = v;"),
            "collapsed");
}

TEST(SimdCollapse, KernelsWithoutSynchronisationNeedNone) {
  EXPECT_EQ(collapse_of("  x[lane] = 1.0f;"), "not needed");
  // barriers alone: left to fibers (nothing to gain)
  EXPECT_NE(collapse_of("  x[lane] = 1.0f;\n  threadgroup_barrier(mem_flags::mem_device);\n  x[lane] += 1.0f;").find("barriers only"),
            std::string::npos);
}

TEST(SimdCollapse, RefusalsSayWhy) {
  EXPECT_NE(collapse_of("  float v = x[lane];\n  if (lane < 3) v = simd_sum(v);\n  x[lane] = v;")
                .find("control flow that differs between lanes"),
            std::string::npos);
  EXPECT_NE(collapse_of("  float v = x[lane];\n  for (uint i = 0; i < (uint)x[0]; ++i) v = simd_sum(v);\n  x[lane] = v;")
                .find("control flow that differs between lanes"),
            std::string::npos);  // a bound read from memory: not provably the same in every lane
  EXPECT_NE(collapse_of("  float v = simd_sum(x[lane]);\n  x[lane] = v;").find("read through a pointer"), std::string::npos);
  EXPECT_NE(collapse_of("  if (lane == 0) return;\n  x[lane] = simd_sum(1.0f);").find("return"), std::string::npos);
  // simdgroup_matrix: per lane only through load/store; declared only where every lane is
  EXPECT_NE(collapse_of("  simdgroup_float8x8 m;\n  simdgroup_load(m, x, 8);\n  x[lane] = m.thread_elements()[0] + simd_sum(1.0f);")
                .find("thread_elements"),
            std::string::npos);
  EXPECT_EQ(collapse_of("  if (lane < 40u) { simdgroup_float8x8 m;\n  simdgroup_load(m, x, 8); }\n  x[lane] = simd_sum(1.0f);"),
            "a simdgroup_matrix declared where the lanes differ ('m')");
  EXPECT_NE(collapse_of("  simdgroup_float8x8 m;\n  simdgroup_load(m, x, 8);\n  if (lane < 4u) simdgroup_multiply(m, m, m);")
                .find("control flow that differs between lanes"),
            std::string::npos);
  EXPECT_NE(collapse_of("  simdgroup_float8x8 m, n;\n  simdgroup_multiply(m, n, n);").find("declaration the rewrite does not read"),
            std::string::npos);
}

TEST(SimdCollapse, SimdgroupMatricesCollapseWhole) {
  const std::string body = "  simdgroup_float8x8 a;\n  simdgroup_load(a, x + lane, 8);\n"
                           "  simdgroup_float8x8 c = make_filled_simdgroup_matrix<float, 8, 8>(1.0f);\n"
                           "  for (uint i = 0; i < n; ++i) simdgroup_multiply_accumulate(c, a, a, c);\n"
                           "  simdgroup_store(c, x, 8);";
  EXPECT_EQ(collapse_of(body), "collapsed");
  const std::string src = "#include <metal_stdlib>\nusing namespace metal;\n"
                          "kernel void k(device float* x [[buffer(0)]], constant uint& n [[buffer(1)]],\n"
                          "              uint lane [[thread_index_in_simdgroup]]) {\n" + body + "\n}\n";
  const std::string cpp = translate_for_simulator(src, "c.metal").cpp;
  const std::string fn = cpp.substr(cpp.find("tmps_sg_fn_0"));
  // whole matrices; the load (per lane: its address differs between lanes) in a lane loop, the
  // multiply once (outside the lane loops), the store of the whole matrix at once (its operands
  // are the same in every lane)
  EXPECT_NE(fn.find("::tmps_sim::sg_matrix<float> a ;"), std::string::npos) << fn;
  EXPECT_NE(fn.find("::tmps_sim::sg_load ( tmps_l , a , x + lane[tmps_l] , 8 )"), std::string::npos) << fn;
  EXPECT_NE(fn.find("::tmps_sim::sg_store_all(tmps_lane_now, c , x , 8 )"), std::string::npos) << fn;
  const size_t mma = fn.find("::tmps_sim::sg_mma ( c , a , a , c )");
  ASSERT_NE(mma, std::string::npos) << fn;
  const std::string before = fn.substr(0, mma);
  EXPECT_EQ(before.rfind("for (unsigned tmps_l"), before.find("for (unsigned tmps_l")) << fn;  // one lane loop (the load's), closed
  EXPECT_EQ(fn.substr(mma).find("for (unsigned tmps_l"), std::string::npos) << fn;
}

// `tid >> 5` of the linear thread index is the SIMD-group's index: uniform, unless an operator
// that binds tighter takes part.
std::string collapse_with_tid(const std::string& body) {
  const std::string src = "#include <metal_stdlib>\nusing namespace metal;\n"
                          "kernel void k(device float* x [[buffer(0)]], uint tid [[thread_index_in_threadgroup]]) {\n" +
                          body + "\n}\n";
  return translate_for_simulator(src, "c.metal").collapse.at(0);
}

TEST(SimdCollapse, SimdgroupIndexFromLinearThreadIndex) {
  EXPECT_EQ(collapse_with_tid("  uint w = tid >> 5u;\n  float v = x[tid];\n  if (w < 2u) v = simd_sum(v);\n  x[tid] = v;"),
            "collapsed");
  EXPECT_EQ(collapse_with_tid("  uint w = (tid / 32u) & 1u;\n  float v = x[tid];\n  if (w == 0u) v = simd_sum(v);\n  x[tid] = v;"),
            "collapsed");
  for (const char* w : {"tid >> 5u + 1u", "tid >> 4u", "1u + tid >> 5u", "tid / 16u", "tid * 2u >> 5u", "tid & 31u"})
    EXPECT_NE(collapse_with_tid(std::string("  uint w = ") + w + ";\n  float v = x[tid];\n  if (w < 2u) v = simd_sum(v);\n  x[tid] = v;")
                  .find("control flow that differs between lanes"),
              std::string::npos)
        << w;
}

// The C++ of a kernel's collapsed SIMD-group function ("" when it did not collapse).
std::string collapsed_function(const std::string& src) {
  auto t = translate_for_simulator(src, "c.metal");
  EXPECT_EQ(t.collapse.at(0), "collapsed");
  const size_t at = t.cpp.find("tmps_sg_fn_0");
  return at == std::string::npos ? "" : t.cpp.substr(at);
}

// A lane value used in one region only stays a local of its lane loop; one that crosses a
// SIMD-group function is an array of 32. `c ? x : y` of lane values selects values (pick).
TEST(SimdCollapse, RegionLocalValuesStayScalars) {
  const std::string src = "#include <metal_stdlib>\nusing namespace metal;\n"
                          "kernel void k(device float* x [[buffer(0)]], uint lane [[thread_index_in_simdgroup]]) {\n"
                          "  float v = x[lane];\n  float w = v * 2.0f;\n  bool odd = (lane & 1u) != 0u;\n"
                          "  float s = simd_sum(w);\n  float t = odd ? s : w;\n  float u = t + 1.0f;\n  x[lane] = u;\n}\n";
  const std::string fn = collapsed_function(src);
  EXPECT_EQ(fn.find("v[32]"), std::string::npos) << fn;  // v: before the sum only
  EXPECT_NE(fn.find("w[32]"), std::string::npos) << fn;  // w: the sum's operand, and after it
  EXPECT_NE(fn.find("odd[32]"), std::string::npos) << fn;
  EXPECT_EQ(fn.find("u[32]"), std::string::npos) << fn;
  EXPECT_NE(fn.find("float t = ::tmps_sim::pick(odd[tmps_l], s[tmps_l], w[tmps_l]);"), std::string::npos) << fn;
}

// A lane vector used by component only (and assigned whole at the start of a statement) is one
// array per component, so lane loops move scalars; one used whole stays an array of vectors.
TEST(SimdCollapse, LaneVectorsUsedByComponentAreKeptPerComponent) {
  const std::string src = "#include <metal_stdlib>\nusing namespace metal;\n"
                          "kernel void k(device float* x [[buffer(0)]], uint lane [[thread_index_in_simdgroup]]) {\n"
                          "  float a = x[lane];\n"
                          "  uint2 s = simd_shuffle_xor(uint2(as_type<uint>(a), 1u), (ushort)(1u));\n"
                          "  float2 w = simd_shuffle_xor(float2(a, 2.0f), (ushort)(2u));\n"
                          "  float4 p = simd_shuffle_xor(float4(a), (ushort)(4u));\n"
                          "  if (lane == 3u) s = uint2(7u);\n"
                          "  float2 t = w * 2.0f;\n"
                          "  float3 q = p.xyz;\n"
                          "  x[lane] = as_type<float>(s.x) + t.y + q.z + p.w;\n}\n";
  const std::string fn = collapsed_function(src);
  EXPECT_NE(fn.find("::tmps_sim::soa<uint, 2> s;"), std::string::npos) << fn;
  EXPECT_NE(fn.find("if ( lane[tmps_l] == 3u ) ::tmps_sim::soa_set(s, tmps_l, uint2 ( 7u ))"), std::string::npos) << fn;
  EXPECT_NE(fn.find("s.c[0][tmps_l]"), std::string::npos) << fn;
  EXPECT_NE(fn.find("float2 w[32];"), std::string::npos) << fn;  // used whole
  EXPECT_NE(fn.find("float4 p[32];"), std::string::npos) << fn;  // a swizzle of two or more
}

// The source's own pure functions (by-value parameters, no memory access, calling only pure
// functions) may run once for the SIMD-group: a loop bound through one is uniform; a helper that
// reads memory is not.
TEST(SimdCollapse, PureHelpersAreUniform) {
  auto with = [](const std::string& helpers, const std::string& bound) {
    const std::string src = "#include <metal_stdlib>\nusing namespace metal;\n" + helpers +
                            "kernel void k(device float* x [[buffer(0)]], constant int& n [[buffer(1)]],\n"
                            "              uint lane [[thread_index_in_simdgroup]]) {\n"
                            "  int m = " + bound + ";\n  float v = x[lane];\n"
                            "  for (int i = 0; i < m; ++i) v = simd_sum(v);\n  x[lane] = v;\n}\n";
    return translate_for_simulator(src, "c.metal").collapse.at(0);
  };
  const std::string div = "inline int divsi(int a, int b) {\n  if (b == 0) return 0;\n  return a / b;\n}\n"
                          "inline int ceildiv(int a, int b) { int q = divsi(a, b); return (q * b != a) ? q + 1 : q; }\n";
  EXPECT_EQ(with(div, "ceildiv(n, 64)"), "collapsed");
  EXPECT_NE(with("inline int first(device const int* p) { return p[0]; }\n", "first((device const int*)x)")
                .find("control flow that differs between lanes"),
            std::string::npos);
  EXPECT_NE(with("constant int table[2] = {1, 2};\ninline int pick2(int i) { return table[i & 1]; }\n", "pick2(n)")
                .find("control flow that differs between lanes"),
            std::string::npos);
  EXPECT_NE(with("inline int plus1(thread const int& a) { return a + 1; }\n", "plus1(n)")
                .find("control flow that differs between lanes"),
            std::string::npos);  // a reference parameter: not taken as pure
  // an overload that reads memory makes the name impure
  EXPECT_NE(with("inline int get(int a) { return a; }\ninline int get(device const int* p) { return p[0]; }\n",
                 "get((device const int*)x)")
                .find("control flow that differs between lanes"),
            std::string::npos);
}
