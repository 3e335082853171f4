// MSL scanner: kernel signatures and binding errors (the C++ rewrite: test_msl_to_cpp.cpp).
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "msl_scanner.h"

using tmps::CompileError;
using tmps::KernelDecl;
using tmps::ParamInfo;
using tmps::parse_kernels;

namespace {

// The CompileError message of parse_kernels(src), or "" if it did not throw.
std::string parse_error(const std::string& src) {
  try {
    parse_kernels(src, "k.metal");
  } catch (const CompileError& e) {
    return e.what();
  }
  return "";
}

const ParamInfo& param(const KernelDecl& k, const std::string& name) {
  for (const ParamInfo& p : k.params)
    if (p.name == name) return p;
  ADD_FAILURE() << "no parameter " << name;
  static ParamInfo none;
  return none;
}

}  // namespace

TEST(MslFrontend, ParsesRealisticSignature) {
  const std::string src = R"(#include <metal_stdlib>
using namespace metal;
struct Params { uint n; float scale; };
// kernel void commented_out(device float* x [[buffer(0)]]) {}
/* kernel void also_commented(device float* x [[buffer(0)]]) {} */
[[max_total_threads_per_threadgroup(256)]]
kernel void add(device const float* x [[buffer(0)]],
                const device float4 *y [[ buffer(1) ]],
                device float* out /* odd, comment) [[buffer(7)]] */
                    [[buffer(2)]], // a comment with ) and ,
                constant Params& p [[buffer(3)]],
                constant vec<float, 4>* table [[buffer(4)]],
                threadgroup float* scratch [[threadgroup(0)]],
                uint3 gid [[thread_position_in_grid]],
                ushort lane [[thread_index_in_simdgroup]]) {
  const char* s = "kernel void fake(device float* q [[buffer(9)]]) {";
  char c = '}';
  out[gid.x] = x[gid.x] + y[0].x * p.scale;
}
)";
  auto ks = parse_kernels(src, "add.metal");
  ASSERT_EQ(ks.size(), 1u);
  const KernelDecl& k = ks[0];
  EXPECT_EQ(k.name, "add");
  EXPECT_EQ(k.line, 7u);
  EXPECT_EQ(k.max_total_threads, 256u);
  EXPECT_FALSE(k.needs_fibers);
  ASSERT_EQ(k.params.size(), 8u);

  const ParamInfo& x = k.params[0];
  EXPECT_EQ(x.name, "x");
  EXPECT_EQ(x.type, "float");
  EXPECT_EQ(x.attribute, "buffer(0)");
  EXPECT_EQ(x.kind, ParamInfo::Kind::Buffer);
  EXPECT_EQ(x.space, ParamInfo::Space::Device);
  EXPECT_TRUE(x.is_pointer);
  EXPECT_EQ(x.index, 0u);
  EXPECT_EQ(x.line, 7u);
  EXPECT_EQ(x.type_size, 0u);

  EXPECT_EQ(param(k, "y").type, "float4");
  EXPECT_EQ(param(k, "y").attribute, "buffer(1)");
  EXPECT_EQ(param(k, "y").index, 1u);

  const ParamInfo& out = param(k, "out");  // attribute on the next line
  EXPECT_EQ(out.index, 2u);
  EXPECT_EQ(out.line, 9u);

  const ParamInfo& p = param(k, "p");
  EXPECT_EQ(p.type, "Params");
  EXPECT_EQ(p.space, ParamInfo::Space::Constant);
  EXPECT_FALSE(p.is_pointer);
  EXPECT_EQ(p.index, 3u);

  EXPECT_EQ(param(k, "table").type, "vec<float, 4>");
  EXPECT_EQ(param(k, "table").space, ParamInfo::Space::Constant);

  const ParamInfo& scratch = param(k, "scratch");
  EXPECT_EQ(scratch.kind, ParamInfo::Kind::Threadgroup);
  EXPECT_EQ(scratch.space, ParamInfo::Space::Threadgroup);
  EXPECT_EQ(scratch.index, 0u);
  EXPECT_EQ(scratch.attribute, "threadgroup(0)");

  const ParamInfo& gid = param(k, "gid");
  EXPECT_EQ(gid.kind, ParamInfo::Kind::Position);
  EXPECT_EQ(gid.type, "uint3");
  EXPECT_EQ(gid.attribute, "thread_position_in_grid");
  EXPECT_FALSE(gid.is_pointer);
  EXPECT_EQ(gid.space, ParamInfo::Space::Thread);
  EXPECT_EQ(param(k, "lane").type, "ushort");
}

TEST(MslFrontend, EveryPositionAttribute) {
  const char* attrs[] = {"thread_position_in_grid", "thread_position_in_threadgroup", "threadgroup_position_in_grid",
                         "threads_per_threadgroup", "threadgroups_per_grid", "threads_per_grid",
                         "thread_index_in_threadgroup", "thread_index_in_simdgroup", "thread_execution_width",
                         "simdgroup_index_in_threadgroup", "simdgroups_per_threadgroup", "threads_per_simdgroup",
                         "dispatch_threads_per_threadgroup", "thread_index_in_quadgroup", "quadgroup_index_in_threadgroup",
                         "quadgroups_per_threadgroup", "grid_origin", "grid_size", "dispatch_simdgroups_per_threadgroup"};
  std::string src = "kernel void k(device float* o [[buffer(0)]]";
  int i = 0;
  for (const char* a : attrs) src += ",\n  uint p" + std::to_string(i++) + " [[" + a + "]]";
  src += ") {}\n";
  auto ks = parse_kernels(src);
  ASSERT_EQ(ks.size(), 1u);
  ASSERT_EQ(ks[0].params.size(), 1u + sizeof(attrs) / sizeof(attrs[0]));
  for (size_t k = 1; k < ks[0].params.size(); ++k) {
    EXPECT_EQ(ks[0].params[k].kind, ParamInfo::Kind::Position);
    EXPECT_EQ(ks[0].params[k].attribute, attrs[k - 1]);
    EXPECT_EQ(ks[0].params[k].line, k + 1);
  }
}

TEST(MslFrontend, KernelForms) {
  const std::string src = R"(
namespace ops {
[[kernel]] void first(device float* a [[buffer(0)]]) {}
}
vertex float4 vs(uint vid [[vertex_id]]) { return 0; }
fragment half4 fs(float4 pos [[position]]) { return 0; }
[[max_total_threads_per_threadgroup(64)]] [[kernel]]
void second(device int* b [[buffer(1)]]) {}
#if 0
kernel void disabled(device float* a [[buffer(99)]]) {}
#endif
kernel void third() {}
)";
  auto ks = parse_kernels(src);
  ASSERT_EQ(ks.size(), 3u);
  EXPECT_EQ(ks[0].name, "first");
  EXPECT_EQ(ks[0].line, 3u);
  EXPECT_EQ(ks[1].name, "second");
  EXPECT_EQ(ks[1].max_total_threads, 64u);
  EXPECT_EQ(ks[1].line, 7u);
  EXPECT_EQ(ks[2].name, "third");
  EXPECT_TRUE(ks[2].params.empty());
}

TEST(MslFrontend, NeedsFibers) {
  auto with = [](const std::string& body) {
    return parse_kernels("kernel void k(device float* a [[buffer(0)]], uint s [[simdgroup_index_in_threadgroup]]) {" + body + "}")[0]
        .needs_fibers;
  };
  EXPECT_FALSE(with("a[0] = 1;"));  // the simdgroup_ attribute does not count
  EXPECT_FALSE(with("// threadgroup_barrier(mem_flags::mem_threadgroup);\n"));
  EXPECT_TRUE(with("threadgroup_barrier(mem_flags::mem_threadgroup);"));
  EXPECT_TRUE(with("a[0] = simd_sum(a[0]);"));
  EXPECT_TRUE(with("a[0] = quad_shuffle(a[0], 1);"));
  EXPECT_TRUE(with("simdgroup_barrier(mem_flags::mem_none);"));
  EXPECT_TRUE(parse_kernels("#define SYNC threadgroup_barrier(mem_flags::mem_threadgroup)\n"
                            "kernel void k(device float* a [[buffer(0)]]) { SYNC; }")[0]
                  .needs_fibers);
}

TEST(MslFrontend, EffectThreadsHint) {
  auto hint = [](const std::string& src) { return parse_kernels(src)[0].effect_threads; };
  const std::string k = "kernel void k(device float* a [[buffer(0)]]) { a[0] = 1; }\n";
  EXPECT_EQ(hint("// tmps-sim: effect_threads=64\n" + k), 64u);
  EXPECT_EQ(hint("#include <metal_stdlib>\n  // tmps-sim: effect_threads=1\n" + k), 1u);
  EXPECT_EQ(hint("// tmps-sim: effect_threads=64\n[[max_total_threads_per_threadgroup(128)]]\n" + k), 64u);
  EXPECT_EQ(hint(k), 0u);
  EXPECT_EQ(hint("// tmps-sim: effect_threads=64\n\n" + k), 0u) << "only the line right above counts";
  EXPECT_EQ(hint("// tmps-sim: effect_threads=0\n" + k), 0u);
  EXPECT_EQ(hint("// tmps-sim: effect_threads=x\n" + k), 0u);
  EXPECT_EQ(hint("// tmps-sim: effect_threads=99999999999\n" + k), 0u);
}

TEST(MslFrontend, Errors) {
  std::string e = parse_error("kernel void k(device float* a [[buffer(0)]],\n  device float* b [[texture(1)]]) {}");
  EXPECT_NE(e.find("k.metal:2: error:"), std::string::npos) << e;
  EXPECT_NE(e.find("unknown"), std::string::npos) << e;
  EXPECT_NE(e.find("'k'"), std::string::npos) << e;
  EXPECT_NE(e.find("'b'"), std::string::npos) << e;

  e = parse_error("\nkernel void k(device float* a [[buffer(0)]],\n\n  device float* b) {}");
  EXPECT_NE(e.find("k.metal:4: error:"), std::string::npos) << e;
  EXPECT_NE(e.find("missing attribute"), std::string::npos) << e;
  EXPECT_NE(e.find("'b'"), std::string::npos) << e;

  e = parse_error("kernel void k(device float* a [[buffer(31)]]) {}");
  EXPECT_NE(e.find("k.metal:1: error:"), std::string::npos) << e;
  EXPECT_NE(e.find("Metal allows 31 buffer bindings"), std::string::npos) << e;
  EXPECT_EQ(parse_error("kernel void k(device float* a [[buffer(30)]]) {}"), "");

  e = parse_error("kernel void k(device float* a [[buffer(2)]],\n device int* b [[buffer(2)]]) {}");
  EXPECT_NE(e.find("k.metal:2: error:"), std::string::npos) << e;
  EXPECT_NE(e.find("duplicate buffer index 2"), std::string::npos) << e;
  EXPECT_NE(e.find("'a'"), std::string::npos) << e;

  e = parse_error("kernel void k(threadgroup float* a [[threadgroup(0)]], threadgroup int* b [[threadgroup(0)]]) {}");
  EXPECT_NE(e.find("duplicate threadgroup index 0"), std::string::npos) << e;
  // Buffer and threadgroup indices are separate namespaces.
  EXPECT_EQ(parse_error("kernel void k(device float* a [[buffer(0)]], threadgroup int* b [[threadgroup(0)]]) {}"), "");

  e = parse_error("\n\ntemplate <typename T>\nkernel void k(device T* a [[buffer(0)]]) {}");
  EXPECT_NE(e.find("k.metal:3: error: template kernels are not supported by the simulator yet"), std::string::npos) << e;

  e = parse_error("kernel void k(device float* a [[buffer(0)]]) {\n /* never closed");
  EXPECT_NE(e.find("k.metal:2: error: unterminated"), std::string::npos) << e;

  e = parse_error("kernel float k(device float* a [[buffer(0)]]) { return 0; }");
  EXPECT_NE(e.find("must return void"), std::string::npos) << e;

  e = parse_error("kernel void k(float* a [[buffer(0)]]) {}");
  EXPECT_NE(e.find("device or constant"), std::string::npos) << e;

  e = parse_error("kernel void k(device uint* gid [[thread_position_in_grid]]) {}");
  EXPECT_NE(e.find("value parameter"), std::string::npos) << e;

  e = parse_error("kernel void k(device float* a [[buffer(0)]]) {}\nkernel void k(device float* a [[buffer(0)]]) {}");
  EXPECT_NE(e.find("k.metal:2: error: kernel 'k' is defined twice"), std::string::npos) << e;
}

// MSL 3.2 coherent(device) (issue 18 item 4): a qualifier of the device pointer, spelled directly
// or through a guarded macro whose every definition is a qualifier, never part of the type.
TEST(MslFrontend, CoherentDevice) {
  const std::string src = R"(#if __METAL_VERSION__ >= 320
#define TMPS_COHERENT coherent(device)
#else
#define TMPS_COHERENT
#endif
#define NOT_A_QUALIFIER float
kernel void k(coherent(device) device float* a [[buffer(0)]],
              device coherent(device) const half* b [[buffer(1)]],
              TMPS_COHERENT device int* c [[buffer(2)]],
              device NOT_A_QUALIFIER* d [[buffer(3)]]) {}
)";
  auto ks = parse_kernels(src, "k.metal");
  ASSERT_EQ(ks.size(), 1u);
  EXPECT_EQ(param(ks[0], "a").type, "float");
  EXPECT_EQ(param(ks[0], "b").type, "half");
  EXPECT_EQ(param(ks[0], "c").type, "int");
  EXPECT_EQ(param(ks[0], "d").type, "NOT_A_QUALIFIER");  // macros are not expanded
  for (const char* n : {"a", "b", "c"}) {
    EXPECT_EQ(param(ks[0], n).space, ParamInfo::Space::Device) << n;
    EXPECT_TRUE(param(ks[0], n).is_pointer) << n;
  }

  std::string e = parse_error("kernel void k(coherent(threadgroup) device float* a [[buffer(0)]]) {}");
  EXPECT_NE(e.find("expected coherent(device)"), std::string::npos) << e;
  e = parse_error("kernel void k(coherent(device) constant float* a [[buffer(0)]]) {}");
  EXPECT_NE(e.find("applies to device pointers"), std::string::npos) << e;
  e = parse_error("kernel void k(coherent(device) device float a [[buffer(0)]]) {}");
  EXPECT_NE(e.find("applies to device pointers"), std::string::npos) << e;
}
