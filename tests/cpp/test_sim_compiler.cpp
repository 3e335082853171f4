// Simulator compiler driver: translate MSL, build a shared object against the real shim, load
// it, read its kernel table and run an entry point by hand; strict Metal checks.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>

#include "msl_scanner.h"
#include "sim/msl_to_cpp.h"
#include "sim/include/tmps_sim_abi.h"
#include "sim/sim_compiler.h"

namespace {

// Skips the test when no kernel compiler is installed (the message says what to install).
#define REQUIRE_TOOLCHAIN()                                   \
  do {                                                        \
    try {                                                     \
      tmps::sim::find_toolchain();                            \
      tmps::sim::shim_dir();                                  \
    } catch (const tmps::Unavailable& e) {                    \
      GTEST_SKIP() << "simulator compiler unavailable: " << e.what(); \
    }                                                         \
  } while (0)

// The tests' libraries go to a fresh folder, removed (with what the tests built) at exit.
struct TempDir {
  std::string path;
  bool made = false;
  TempDir() {
    char tmpl[] = "/tmp/tmps-sim-compiler-test-XXXXXX";
    const char* d = mkdtemp(tmpl);
    made = d != nullptr;
    path = made ? d : "/tmp";
  }
  ~TempDir() {
    std::error_code ignored;
    if (made) std::filesystem::remove_all(path, ignored);
  }
};

std::string temp_dir() {
  static TempDir dir;
  return dir.path;
}

struct Library {
  void* handle = nullptr;
  explicit Library(const std::string& path) { handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL); }
  ~Library() {
    if (handle) dlclose(handle);
  }
  template <class T>
  T* sym(const char* name) const {
    return reinterpret_cast<T*>(dlsym(handle, name));
  }
};

std::string build(const std::string& msl, const std::string& name, const tmps::CompileOptions& opts = {}) {
  auto t = tmps::translate_for_simulator(msl, name + ".metal");
  std::string out = temp_dir() + "/" + name + ".so";
  tmps::sim::compile_shared_object(t.cpp, out, opts);
  return out;
}

std::string compile_error(const std::string& msl, bool strict) {
  try {
    auto t = tmps::translate_for_simulator(msl, "kernel.metal");
    if (strict) tmps::sim::strict_check(t.cpp, {});
    else tmps::sim::compile_shared_object(t.cpp, temp_dir() + "/bad.so", {});
  } catch (const tmps::CompileError& e) {
    return e.what();
  }
  return "";
}

// A minimal runtime for kernels without barriers: anything else is a test failure.
[[noreturn]] void rt_fail(tmps_u32 line, const char* message) {
  ADD_FAILURE() << "kernel called fail() at line " << line << ": " << message;
  std::abort();
}
void* rt_threadgroup_static(tmps_u32, tmps_u64, tmps_u64, tmps_u32 line) {
  ADD_FAILURE() << "unexpected threadgroup_static at line " << line;
  return nullptr;
}
const tmps_sim_runtime kRuntime = {TMPS_SIM_ABI_VERSION, nullptr, nullptr, nullptr, rt_threadgroup_static, rt_fail, nullptr};

const char* kSaxpy = R"(#include <metal_stdlib>
using namespace metal;
struct Params { uint n; float scale; };
namespace ops {
kernel void saxpy(device const float* x [[buffer(0)]],
                  device float* y [[buffer(2)]],
                  constant Params& p [[buffer(5)]],
                  uint gid [[thread_position_in_grid]],
                  uint3 tg [[threadgroup_position_in_grid]]) {
  if (gid < p.n) y[gid] = p.scale * x[gid] + y[gid] + float(tg.x);
}
}
[[max_total_threads_per_threadgroup(128)]]
kernel void fill(device half* out [[buffer(0)]], uint i [[thread_position_in_grid]]) {
  out[i] = 1.5h;
}
)";

}  // namespace

TEST(SimCompiler, ToolchainDescribed) {
  REQUIRE_TOOLCHAIN();
  const auto& tc = tmps::sim::find_toolchain();
  EXPECT_FALSE(tc.cxx.empty());
  EXPECT_NE(tc.description.find("clang"), std::string::npos) << tc.description;
  EXPECT_FALSE(tc.version.empty());
  EXPECT_EQ(&tc, &tmps::sim::find_toolchain());  // cached
}

TEST(SimCompiler, TableAndEntry) {
  REQUIRE_TOOLCHAIN();
  std::string so = build(kSaxpy, "saxpy");
  Library lib(so);
  ASSERT_NE(lib.handle, nullptr) << dlerror();

  auto* abi = lib.sym<const tmps_u32>("tmps_sim_abi_version");
  auto* count = lib.sym<const tmps_u32>("tmps_sim_num_kernels");
  auto* table = lib.sym<const tmps_sim_kernel>("tmps_sim_kernels");
  auto* rt = lib.sym<const tmps_sim_runtime*>("tmps_sim_rt");
  ASSERT_TRUE(abi && count && table && rt);
  EXPECT_EQ(*abi, TMPS_SIM_ABI_VERSION);
  ASSERT_EQ(*count, 2u);
  *rt = &kRuntime;

  const tmps_sim_kernel& k = table[0];
  EXPECT_STREQ(k.name, "saxpy");
  EXPECT_EQ(k.num_params, 5u);
  EXPECT_EQ(k.needs_fibers, 0u);
  EXPECT_EQ(k.max_total_threads_per_threadgroup, 0u);
  EXPECT_EQ(k.line, 5u);
  EXPECT_EQ(lib.sym<void>("tmps_sim_entry_saxpy"), reinterpret_cast<void*>(k.entry));
  struct Expect { const char* name; const char* type; const char* attr; tmps_u32 kind, index, space, ptr; tmps_u64 size; tmps_u32 line; };
  const Expect want[] = {
      {"x", "float", "buffer(0)", TMPS_PARAM_BUFFER, 0, TMPS_SPACE_DEVICE, 1, 4, 5},
      {"y", "float", "buffer(2)", TMPS_PARAM_BUFFER, 2, TMPS_SPACE_DEVICE, 1, 4, 6},
      {"p", "Params", "buffer(5)", TMPS_PARAM_BUFFER, 5, TMPS_SPACE_CONSTANT, 0, 8, 7},
      {"gid", "uint", "thread_position_in_grid", TMPS_PARAM_POSITION, 0, TMPS_SPACE_THREAD, 0, 4, 8},
      {"tg", "uint3", "threadgroup_position_in_grid", TMPS_PARAM_POSITION, 0, TMPS_SPACE_THREAD, 0, 16, 9},
  };
  for (tmps_u32 i = 0; i < 5; ++i) {
    const tmps_sim_param& p = k.params[i];
    SCOPED_TRACE(want[i].name);
    EXPECT_STREQ(p.name, want[i].name);
    EXPECT_STREQ(p.type, want[i].type);
    EXPECT_STREQ(p.attribute, want[i].attr);
    EXPECT_EQ(p.kind, want[i].kind);
    EXPECT_EQ(p.index, want[i].index);
    EXPECT_EQ(p.address_space, want[i].space);
    EXPECT_EQ(p.is_pointer, want[i].ptr);
    EXPECT_EQ(p.type_size, want[i].size);
    EXPECT_EQ(p.line, want[i].line);
  }
  const tmps_sim_kernel& f = table[1];
  EXPECT_STREQ(f.name, "fill");
  EXPECT_EQ(f.max_total_threads_per_threadgroup, 128u);
  ASSERT_EQ(f.num_params, 2u);
  EXPECT_EQ(f.params[0].type_size, 2u);  // half

  // Run saxpy for 6 threads (n = 5: the last one is masked) in threadgroup 3.
  float x[6] = {1, 2, 3, 4, 5, 6};
  float y[6] = {10, 20, 30, 40, 50, 60};
  struct { tmps_u32 n; float scale; } params = {5, 2.0f};
  void* buffers[TMPS_SIM_MAX_BUFFERS] = {};
  tmps_u64 sizes[TMPS_SIM_MAX_BUFFERS] = {};
  void* groups[TMPS_SIM_MAX_THREADGROUP_BINDINGS] = {};
  buffers[0] = x, sizes[0] = sizeof x;
  buffers[2] = y, sizes[2] = sizeof y;
  buffers[5] = &params, sizes[5] = sizeof params;
  tmps_sim_args args{buffers, sizes, groups};
  for (tmps_u32 gid = 0; gid < 6; ++gid) {
    tmps_sim_thread th{};
    th.thread_position_in_grid[0] = gid;
    th.threadgroup_position_in_grid[0] = 3;
    th.threads_per_simdgroup = 32;
    k.entry(&args, &th);
  }
  for (int i = 0; i < 5; ++i) EXPECT_FLOAT_EQ(y[i], 2.0f * x[i] + 10.0f * (i + 1) + 3.0f) << i;
  EXPECT_FLOAT_EQ(y[5], 60.0f);

  _Float16 h[2] = {0, 0};
  buffers[0] = h;
  tmps_sim_thread th{};
  th.thread_position_in_grid[0] = 1;
  f.entry(&args, &th);
  EXPECT_EQ(float(h[1]), 1.5f);
  EXPECT_EQ(float(h[0]), 0.0f);
}

TEST(SimCompiler, CompileErrorNamesMslLine) {
  REQUIRE_TOOLCHAIN();
  std::string e = compile_error(
      "#include <metal_stdlib>\nusing namespace metal;\nkernel void k(device float* a [[buffer(0)]]) {\n"
      "  a[0] = 1.0f;\n  a[1] = undeclared_name;\n}\n",
      false);
  EXPECT_NE(e.find("kernel.metal:5:"), std::string::npos) << e;
  EXPECT_NE(e.find("undeclared_name"), std::string::npos) << e;
  // The failed build leaves nothing behind.
  EXPECT_NE(access((temp_dir() + "/bad.so").c_str(), F_OK), 0);
}

TEST(SimCompiler, StrictCheck) {
  REQUIRE_TOOLCHAIN();
  // Valid Metal passes the strict check (threadgroup memory, constant reads, positions).
  const char* ok = R"(#include <metal_stdlib>
using namespace metal;
struct Params { uint n; };
kernel void k(device float* out [[buffer(0)]], constant Params& p [[buffer(1)]],
              threadgroup float* dyn [[threadgroup(0)]],
              uint tid [[thread_index_in_threadgroup]]) {
  threadgroup float s[32];
  s[tid] = float(p.n);
  dyn[tid] = s[tid];
  out[tid] = dyn[tid];
}
)";
  EXPECT_EQ(compile_error(ok, true), "");
  EXPECT_EQ(compile_error(ok, false), "");

  std::string e = compile_error(
      "#include <metal_stdlib>\nusing namespace metal;\n"
      "kernel void k(constant float* c [[buffer(0)]], uint i [[thread_position_in_grid]]) {\n  c[i] = 1.0f;\n}\n",
      true);
  EXPECT_EQ(e.rfind("Metal would reject this kernel", 0), 0u) << e;
  EXPECT_NE(e.find("kernel.metal:4:"), std::string::npos) << e;

  e = compile_error(
      "#include <metal_stdlib>\nusing namespace metal;\n"
      "kernel void k(device float* a [[buffer(0)]]) {\n  double d = a[0];\n  a[0] = d;\n}\n",
      true);
  EXPECT_EQ(e.rfind("Metal would reject this kernel", 0), 0u) << e;
  EXPECT_NE(e.find("kernel.metal:4:"), std::string::npos) << e;
}

TEST(SimCompiler, MacrosAndAtomicOutput) {
  REQUIRE_TOOLCHAIN();
  tmps::CompileOptions opts;
  opts.macros = {{"SCALE", "3.0f"}};
  std::string so = build(
      "#include <metal_stdlib>\nkernel void k(device float* a [[buffer(0)]]) { a[0] = SCALE; }\n", "macro", opts);
  Library lib(so);
  ASSERT_NE(lib.handle, nullptr) << dlerror();
  auto* table = lib.sym<const tmps_sim_kernel>("tmps_sim_kernels");
  ASSERT_NE(table, nullptr);
  float a = 0;
  void* buffers[TMPS_SIM_MAX_BUFFERS] = {&a};
  tmps_u64 sizes[TMPS_SIM_MAX_BUFFERS] = {4};
  void* groups[TMPS_SIM_MAX_THREADGROUP_BINDINGS] = {};
  tmps_sim_args args{buffers, sizes, groups};
  tmps_sim_thread th{};
  table[0].entry(&args, &th);
  EXPECT_EQ(a, 3.0f);
  // Only the final file is left in the directory: temp sources/objects were cleaned up.
  std::string cmd = "ls " + temp_dir() + " | grep -c tmp- || true";
  FILE* p = popen(cmd.c_str(), "r");
  ASSERT_NE(p, nullptr);
  char buf[32] = {};
  fgets(buf, sizeof buf, p);
  pclose(p);
  EXPECT_EQ(std::string(buf), "0\n");
}

// Safe math (the default) must not contract a*b+c into an FMA nor assume finite values.
TEST(SimCompiler, SafeMathIsIeee) {
  REQUIRE_TOOLCHAIN();
  const char* src = R"(#include <metal_stdlib>
using namespace metal;
kernel void k(device float* v [[buffer(0)]]) {
  v[3] = v[0] * v[1] + v[2];
  v[5] = (v[4] != v[4]) ? 1.0f : 0.0f;
}
)";
  float a = 1.0f + 1.0f / 4096.0f;  // a*a = 1 + 2^-11 + 2^-24: the 2^-24 survives only in an FMA
  auto run = [&](tmps::MathMode mode, const std::string& name) {
    tmps::CompileOptions opts;
    opts.math_mode = mode;
    Library lib(build(src, name, opts));
    EXPECT_NE(lib.handle, nullptr) << dlerror();
    float v[6] = {a, a, -(1.0f + 1.0f / 2048.0f), -1, __builtin_nanf(""), -1};
    if (!lib.handle) return std::pair<float, float>(-1, -1);
    auto* table = lib.sym<const tmps_sim_kernel>("tmps_sim_kernels");
    void* buffers[TMPS_SIM_MAX_BUFFERS] = {v};
    tmps_u64 sizes[TMPS_SIM_MAX_BUFFERS] = {sizeof v};
    void* groups[TMPS_SIM_MAX_THREADGROUP_BINDINGS] = {};
    tmps_sim_args args{buffers, sizes, groups};
    tmps_sim_thread th{};
    table[0].entry(&args, &th);
    return std::pair<float, float>(v[3], v[5]);
  };
  auto safe = run(tmps::MathMode::Safe, "safe");
  EXPECT_EQ(safe.first, 0.0f);   // rounded product, then the add
  EXPECT_EQ(safe.second, 1.0f);  // NaN is not equal to itself
  // The other modes build and run too (their results may legitimately differ).
  run(tmps::MathMode::Relaxed, "relaxed");
  run(tmps::MathMode::Fast, "fast");
}

// Kernels in an anonymous namespace, renamed with host_name, taking void* and grid_origin.
TEST(SimCompiler, UnusualKernels) {
  REQUIRE_TOOLCHAIN();
  const char* src = R"(#include <metal_stdlib>
using namespace metal;
namespace {
struct P { uint n; };
kernel void anon(device uint* a [[buffer(0)]], constant P& p [[buffer(1)]], uint2 o [[grid_origin]]) {
  a[0] = p.n + o.x + o.y;
}
}
kernel void named [[host_name("renamed")]] (device void* raw [[buffer(3)]]) { ((device uint*)raw)[0] = 7; }
)";
  Library lib(build(src, "unusual"));
  ASSERT_NE(lib.handle, nullptr) << dlerror();
  auto* count = lib.sym<const tmps_u32>("tmps_sim_num_kernels");
  auto* table = lib.sym<const tmps_sim_kernel>("tmps_sim_kernels");
  ASSERT_TRUE(count && table);
  ASSERT_EQ(*count, 2u);
  EXPECT_STREQ(table[0].name, "anon");
  EXPECT_STREQ(table[1].name, "renamed");
  EXPECT_NE(lib.sym<void>("tmps_sim_entry_renamed"), nullptr);
  EXPECT_EQ(table[1].params[0].type_size, 0u);  // void
  EXPECT_EQ(table[1].params[0].index, 3u);
  uint32_t a[2] = {0, 0};
  struct { uint32_t n; } p = {40};
  void* buffers[TMPS_SIM_MAX_BUFFERS] = {a, &p, nullptr, a + 1};
  tmps_u64 sizes[TMPS_SIM_MAX_BUFFERS] = {4, 4, 0, 4};
  void* groups[TMPS_SIM_MAX_THREADGROUP_BINDINGS] = {};
  tmps_sim_args args{buffers, sizes, groups};
  tmps_sim_thread th{};
  th.thread_position_in_grid[0] = 5;  // grid_origin ignores positions: always 0
  table[0].entry(&args, &th);
  table[1].entry(&args, &th);
  EXPECT_EQ(a[0], 40u);
  EXPECT_EQ(a[1], 7u);
}

// Background builds' compilers run nicer than the caller (ChildNice), and only while asked.
TEST(SimCompiler, ChildNiceSetsTheChildrensPriorityWhileItLives) {
  const std::string nice = tmps::sim::which("nice");
  if (nice.empty()) GTEST_SKIP() << "no `nice` command to read a child's priority";
  auto child_nice = [&] {
    const tmps::sim::RunResult r = tmps::sim::run_process({nice});
    EXPECT_EQ(r.status, 0) << r.output;
    return std::atoi(r.output.c_str());
  };
  const int ours = child_nice();
  {
    tmps::sim::ChildNice nicer(10);
    EXPECT_EQ(child_nice(), std::min(19, ours + 10));
  }
  EXPECT_EQ(child_nice(), ours);
}
