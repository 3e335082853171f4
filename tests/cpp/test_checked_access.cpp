// Memcheck's checked accesses (sim/checked_access.h): which loads and stores the simulator's
// translation hands to the shim's inline check, and which keep AddressSanitizer's.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "sim/checked_access.h"
#include "sim/msl_to_cpp.h"

using tmps::check_accesses;

namespace {

// `body` inside a kernel `k` with a float* and a uint4* parameter, rewritten.
std::string rewritten(const std::string& body, size_t* sites = nullptr) {
  const std::string src = "void k(device float* x, device const uint4* q, threadgroup half* s, uint i) {\n" + body + "\n}\n";
  return check_accesses(src, {"k"}, sites);
}
bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

}  // namespace

TEST(CheckedAccess, PlainLoadsAndStoresAreRewritten) {
  size_t n = 0;
  const std::string out = rewritten(
      "  float a = *x;\n"
      "  float b = i < 4u ? *x : 0.0f;\n"
      "  uint4 v = *(device const uint4*)(q + i);\n"
      "  *(threadgroup half2*)(s + 2 * i) = half2(1.0h, 2.0h);\n"
      "  if (i) *x = a + *x * b;\n"
      "  device float* p[4];\n"
      "  *p[i & 3u] = float4(v).x;\n"
      "  x[i + 1u] = x[q[i].x] * 2.0f;\n",
      &n);
  EXPECT_TRUE(has(out, "float a = TMPS_MC_LOAD(x);")) << out;
  EXPECT_TRUE(has(out, "? TMPS_MC_LOAD(x) : 0.0f")) << out;
  EXPECT_TRUE(has(out, "uint4 v = TMPS_MC_LOAD((device const uint4*)(q + i));")) << out;
  EXPECT_TRUE(has(out, "TMPS_MC_STORE((threadgroup half2*)(s + 2 * i)) = half2")) << out;
  EXPECT_TRUE(has(out, "if (i) TMPS_MC_STORE(x) = a + TMPS_MC_LOAD(x) * b;")) << out;
  EXPECT_TRUE(has(out, "TMPS_MC_STORE(p[i & 3u]) = ")) << out;
  // p[i] is the access at &p[i]; q[i].x (a member) keeps the instrumented access
  EXPECT_TRUE(has(out, "TMPS_MC_STORE(&x[i + 1u]) = TMPS_MC_LOAD(&x[q[i].x]) * 2.0f;")) << out;
  EXPECT_EQ(n, 9u);
}

TEST(CheckedAccess, LinesAreKept) {
  const std::string body = "  float a = *x;\n  // *x in a comment\n  *x =\n     a;\n";
  const std::string out = rewritten(body);
  EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), std::count(body.begin(), body.end(), '\n') + 3);
  EXPECT_TRUE(has(out, "// *x in a comment")) << out;
  EXPECT_TRUE(has(out, "TMPS_MC_STORE(x) =\n     a;")) << out;
}

TEST(CheckedAccess, OtherFormsKeepTheInstrumentedAccess) {
  size_t n = 0;
  const std::string out = rewritten(
      "  *x += 1.0f;\n"                               // read-modify-write
      "  x[i] -= 1.0f;\n"
      "  x[i]++;\n"
      "  float* h2 = &x[i];\n"
      "  thread float& r = *x;\n"                     // bound to a reference
      "  f(*x);\n"                                    // a whole argument (might be a reference)
      "  float b = as_type<float>(*x);\n"             // ... of a template call too
      "  float3 c = *(device float3*)(x);\n"          // 3-vector (four elements' bytes)
      "  packed_float4 d = *(device packed_float4*)(x);\n"
      "  float e = *(x + 1);\n"                       // pointee type unknown to the rewrite
      "  *(device S*)(x) = S();\n"                    // a struct
      "  uint g = (*q).x;\n"                          // member of the access
      "  float* h = &*x;\n"
      "  float k2 = sizeof(*x);\n",
      &n);
  EXPECT_EQ(n, 0u) << out;
  EXPECT_FALSE(has(out, "TMPS_MC_")) << out;
}

TEST(CheckedAccess, NamesDeclaredOtherwiseAreLeftAlone) {
  // `x` is also declared as something else in an inner scope: the rewrite does not guess.
  size_t n = 0;
  const std::string out = rewritten("  { float4 x = 0; }\n  float a = *x;\n  float b = *q2;\n", &n);
  EXPECT_EQ(n, 0u) << out;
}

TEST(CheckedAccess, OnlyTheNamedFunctions) {
  const std::string src =
      "inline float helper(device float* p) { return *p; }\n"
      "void k(device float* x) { *x = helper(x); }\n"
      "void k(device half* y);\n";
  const std::string out = check_accesses(src, {"k", "missing"});
  EXPECT_TRUE(has(out, "{ return *p; }")) << out;
  EXPECT_TRUE(has(out, "{ TMPS_MC_STORE(x) = helper(x); }")) << out;
}

TEST(CheckedAccess, TranslationRewritesKernelsAndCollapsedBodies) {
  const std::string src =
      "#include <metal_stdlib>\nusing namespace metal;\n"
      "kernel void k(device float* x [[buffer(0)]], uint lane [[thread_index_in_simdgroup]]) {\n"
      "  float v = *(x + lane * 0u);\n"
      "  device float* p = x + lane;\n"
      "  float a = *p;\n"
      "  float w = simd_sum(a);\n"
      "  *p = w + v;\n"
      "}\n";
  const auto t = tmps::translate_for_simulator(src, "c.metal");
  ASSERT_EQ(t.collapse.size(), 1u);
  EXPECT_EQ(t.collapse[0], "collapsed");
  // The fiber body and the collapsed function both store through the check.
  size_t stores = 0;
  for (size_t at = t.cpp.find("TMPS_MC_STORE("); at != std::string::npos; at = t.cpp.find("TMPS_MC_STORE(", at + 1)) ++stores;
  EXPECT_EQ(stores, 2u) << t.cpp;
  EXPECT_FALSE(has(t.cpp_plain, "simd_entry")) << t.cpp_plain;
  EXPECT_TRUE(has(t.cpp_plain, "TMPS_MC_STORE(p) = w + v;")) << t.cpp_plain;
}
