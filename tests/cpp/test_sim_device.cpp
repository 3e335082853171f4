// SimDevice end to end: MSL -> frontend -> clang (zig) -> on-disk cache -> dlopen -> scheduler.
// Needs the simulator toolchain (pip install ziglang); skipped with a message when absent.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "errors.h"
#include "sha256.h"
#include "sim/sim_compiler.h"
#include "sim/sim_device.h"

namespace fs = std::filesystem;

namespace {

using tmps::Binding;
using tmps::Dispatch;
using tmps::DispatchTiming;
using tmps::sim::SimDevice;

const char* kReduceSource = R"(#include <metal_stdlib>
using namespace metal;

// Sum of each threadgroup's elements: simd_sum, then one partial per SIMD-group in
// threadgroup memory, then simd_sum again in the first SIMD-group.
kernel void reduce_sum(device const float* in [[buffer(0)]],
                       device float* out [[buffer(1)]],
                       constant uint& n [[buffer(2)]],
                       uint gid [[thread_position_in_grid]],
                       uint tg [[threadgroup_position_in_grid]],
                       uint lane [[thread_index_in_simdgroup]],
                       uint sg [[simdgroup_index_in_threadgroup]],
                       uint nsg [[simdgroups_per_threadgroup]]) {
  threadgroup float partial[32];
  float v = gid < n ? in[gid] : 0.0f;
  v = simd_sum(v);
  if (lane == 0) partial[sg] = v;
  threadgroup_barrier(mem_flags::mem_threadgroup);
  if (sg == 0) {
    float w = lane < nsg ? partial[lane] : 0.0f;
    w = simd_sum(w);
    if (lane == 0) out[tg] = w;
  }
}

kernel void scale(device float* x [[buffer(0)]],
                  constant float& factor [[buffer(1)]],
                  uint i [[thread_position_in_grid]]) {
  x[i] = x[i] * factor;
}

kernel void divergent(device float* x [[buffer(0)]],
                      uint tid [[thread_index_in_threadgroup]]) {
  if (tid < 32) {
    threadgroup_barrier(mem_flags::mem_none);
  }
  x[tid] = 1.0f;
}
)";

bool toolchain_available(std::string* why) {
  try {
    tmps::sim::find_toolchain();
    tmps::sim::shim_dir();
    return true;
  } catch (const std::exception& e) {
    *why = e.what();
    return false;
  }
}

class SimDeviceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    if (!toolchain_available(&why)) GTEST_SKIP() << "simulator toolchain unavailable: " << why;
    cache_ = fs::temp_directory_path() /
             ("tmps-simdev-" + std::to_string(::getpid()) + "-" +
              ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(cache_);
    fs::create_directories(cache_);
    old_cache_ = std::getenv("TRITON_MPS_CACHE_DIR") ? std::getenv("TRITON_MPS_CACHE_DIR") : "";
    ::setenv("TRITON_MPS_CACHE_DIR", cache_.c_str(), 1);
  }
  void TearDown() override {
    if (cache_.empty()) return;
    if (old_cache_.empty())
      ::unsetenv("TRITON_MPS_CACHE_DIR");
    else
      ::setenv("TRITON_MPS_CACHE_DIR", old_cache_.c_str(), 1);
    std::error_code ec;
    fs::remove_all(cache_, ec);
  }

  std::vector<fs::path> cached_objects() const {
    std::vector<fs::path> v;
    for (const auto& e : fs::directory_iterator(cache_ / "sim"))
      if (e.path().extension() == ".so") v.push_back(e.path());
    return v;
  }

  fs::path cache_;
  std::string old_cache_;
};

Binding buffer_binding(uint32_t index, std::shared_ptr<tmps::RawBuffer> b) {
  Binding x;
  x.kind = Binding::Kind::Buffer;
  x.index = index;
  x.buffer = std::move(b);
  return x;
}

template <class T>
Binding bytes_binding(uint32_t index, const T& v) {
  Binding x;
  x.kind = Binding::Kind::Bytes;
  x.index = index;
  x.bytes.resize(sizeof(T));
  std::memcpy(x.bytes.data(), &v, sizeof(T));
  return x;
}

// Runs reduce_sum over n elements (i % 13) and checks every threadgroup's sum.
double run_reduction(SimDevice& dev, const std::shared_ptr<tmps::Pipeline>& p, uint32_t n, uint32_t tpg) {
  const uint32_t groups = (n + tpg - 1) / tpg;
  std::shared_ptr<tmps::RawBuffer> in = dev.new_buffer(size_t(n) * 4), out = dev.new_buffer(size_t(groups) * 4);
  auto* x = static_cast<float*>(in->contents());
  for (uint32_t i = 0; i < n; ++i) x[i] = float(i % 13);
  Dispatch d;
  d.pipeline = p;
  d.bindings = {buffer_binding(0, in), buffer_binding(1, out), bytes_binding(2, n)};
  d.threadgroups = {groups, 1, 1};
  d.threads_per_group = {tpg, 1, 1};
  auto timing = std::make_shared<DispatchTiming>();
  auto batch = dev.new_batch();
  batch->encode(d, timing);
  auto t0 = std::chrono::steady_clock::now();
  batch->commit();
  batch->wait();
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_TRUE(timing->ready);
  EXPECT_TRUE(timing->error.empty());
  EXPECT_LE(timing->start_ns, timing->end_ns);
  const auto* y = static_cast<const float*>(out->contents());
  for (uint32_t g = 0; g < groups; ++g) {
    float expect = 0;
    for (uint32_t i = g * tpg; i < std::min(n, (g + 1) * tpg); ++i) expect += float(i % 13);
    if (y[g] != expect) {
      ADD_FAILURE() << "threadgroup " << g << ": " << y[g] << " != " << expect;
      break;
    }
  }
  return secs;
}

TEST(SimDeviceInfo, Reports) {
  auto dev = tmps::make_sim_device();
  const auto& i = dev->info();
  EXPECT_EQ(i.name, "triton-mps simulator");
  EXPECT_EQ(i.gpu_family, "apple9");
  EXPECT_EQ(i.generation, 3);
  EXPECT_EQ(i.max_threads_per_threadgroup, 1024u);
  EXPECT_EQ(i.max_threadgroup_memory, 32768u);
  EXPECT_EQ(i.simd_width, 32u);
  EXPECT_EQ(i.max_buffer_bindings, 31u);
  EXPECT_TRUE(i.unified_memory);
  EXPECT_TRUE(i.is_simulator);
  EXPECT_GT(i.recommended_working_set, 0u);
  EXPECT_EQ(dev->cache_identity().rfind("sim:" + std::to_string(TMPS_SIM_ABI_VERSION) + ":", 0), 0u) << dev->cache_identity();

  auto b = dev->new_buffer(100);
  EXPECT_EQ(b->length(), 100u);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(b->contents()) % 16384, 0u);
  EXPECT_EQ(b->native_handle(), b->contents());
  std::vector<char> host(64);
  auto w = dev->wrap_host_memory(host.data(), host.size());
  EXPECT_EQ(w->contents(), host.data());
  EXPECT_THROW(dev->wrap_host_memory(nullptr, 16), tmps::InvalidArgument);
}

TEST_F(SimDeviceTest, BuildsAndRunsReduction) {
  SimDevice dev;
  tmps::CompileOptions opt;
  auto p = dev.build_pipeline(kReduceSource, "reduce_sum", opt);
  ASSERT_EQ(p->name(), "reduce_sum");
  EXPECT_EQ(p->thread_execution_width(), 32u);
  EXPECT_EQ(p->max_total_threads_per_threadgroup(), 1024u);
  EXPECT_EQ(p->source_line(), 6u);
  const auto& params = p->params();
  ASSERT_GE(params.size(), 3u);
  EXPECT_EQ(params[0].name, "in");
  EXPECT_EQ(params[0].type_size, 4u);
  EXPECT_EQ(params[2].name, "n");
  EXPECT_EQ(params[2].index, 2u);
  EXPECT_FALSE(params[2].is_pointer);
  run_reduction(dev, p, 10000, 128);  // last threadgroup partial
  run_reduction(dev, p, 4096, 1024);
  // One build, and one more if the runs took long enough to promote it (tiering).
  EXPECT_EQ(dev.build_stats().compiled - dev.build_stats().promoted, 1u);
}

TEST_F(SimDeviceTest, DiskCacheHitInSecondDevice) {
  tmps::CompileOptions opt;
  {
    SimDevice a;
    auto p = a.build_pipeline(kReduceSource, "reduce_sum", opt);
    EXPECT_EQ(a.build_stats().compiled, 1u);
    // Same library while loaded: memory hit, also from another device instance.
    SimDevice b;
    auto q = b.build_pipeline(kReduceSource, "scale", opt);
    EXPECT_EQ(b.build_stats().memory_hits, 1u);
    EXPECT_EQ(b.build_stats().compiled, 0u);
  }
  ASSERT_EQ(cached_objects().size(), 1u);
  SimDevice c;  // the library was unloaded: now it comes from disk
  auto p = c.build_pipeline(kReduceSource, "reduce_sum", opt);
  EXPECT_EQ(c.build_stats().disk_hits, 1u);
  EXPECT_EQ(c.build_stats().compiled, 0u);
  run_reduction(c, p, 2048, 256);
  // Other options are another entry.
  opt.math_mode = tmps::MathMode::Fast;
  auto f = c.build_pipeline(kReduceSource, "reduce_sum", opt);
  EXPECT_EQ(c.build_stats().compiled, 1u);
  EXPECT_EQ(cached_objects().size(), 2u);
}

TEST_F(SimDeviceTest, CorruptedOrTruncatedEntriesAreRecompiled) {
  tmps::CompileOptions opt;
  { SimDevice a; a.build_pipeline(kReduceSource, "reduce_sum", opt); }
  auto objs = cached_objects();
  ASSERT_EQ(objs.size(), 1u);
  const fs::path so = objs[0];
  const auto full = fs::file_size(so);

  // Truncated.
  fs::resize_file(so, full / 2);
  {
    SimDevice b;
    auto p = b.build_pipeline(kReduceSource, "reduce_sum", opt);
    EXPECT_EQ(b.build_stats().compiled, 1u);
    EXPECT_EQ(b.build_stats().rejected_entries, 1u);
    EXPECT_EQ(fs::file_size(so), full);
    run_reduction(b, p, 1024, 128);
  }
  // Same size, one byte flipped in the middle.
  {
    std::fstream f(so, std::ios::in | std::ios::out | std::ios::binary);
    f.seekg(full / 2);
    char c = 0;
    f.read(&c, 1);
    c = static_cast<char>(c ^ 0x5A);
    f.seekp(full / 2);
    f.write(&c, 1);
  }
  {
    SimDevice b;
    auto p = b.build_pipeline(kReduceSource, "reduce_sum", opt);
    EXPECT_EQ(b.build_stats().compiled, 1u);
    run_reduction(b, p, 1024, 128);
  }
  // Garbage with a sidecar that matches it (e.g. written by a broken tool): dlopen fails
  // and the entry is rebuilt instead of crashing.
  {
    std::ofstream(so, std::ios::binary | std::ios::trunc) << "not an ELF file";
    std::ofstream(so.string() + ".meta", std::ios::binary | std::ios::trunc)
        << "tmps-sim-meta-v1\nsize " << fs::file_size(so) << "\nsha256 " << tmps::sha256_file_hex(so.string()) << "\n";
  }
  {
    SimDevice b;
    auto p = b.build_pipeline(kReduceSource, "reduce_sum", opt);
    EXPECT_EQ(b.build_stats().compiled, 1u);
    EXPECT_EQ(b.build_stats().rejected_entries, 1u);
    run_reduction(b, p, 1024, 128);
  }
  // Missing sidecar.
  fs::remove(so.string() + ".meta");
  {
    SimDevice b;
    b.build_pipeline(kReduceSource, "reduce_sum", opt);
    EXPECT_EQ(b.build_stats().compiled, 1u);
    EXPECT_TRUE(fs::exists(so.string() + ".meta"));
  }
}

TEST_F(SimDeviceTest, MissingKernelListsKernels) {
  SimDevice dev;
  try {
    dev.build_pipeline(kReduceSource, "nope", {});
    ADD_FAILURE() << "no exception";
  } catch (const tmps::CompileError& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("'nope'"), std::string::npos) << m;
    EXPECT_NE(m.find("reduce_sum"), std::string::npos) << m;
    EXPECT_NE(m.find("scale"), std::string::npos) << m;
  }
}

TEST_F(SimDeviceTest, BatchRunsInOrderAndReportsErrors) {
  SimDevice dev;
  auto scale = dev.build_pipeline(kReduceSource, "scale", {});
  auto divergent = dev.build_pipeline(kReduceSource, "divergent", {});
  std::shared_ptr<tmps::RawBuffer> x = dev.new_buffer(64 * 4);
  auto* v = static_cast<float*>(x->contents());
  for (int i = 0; i < 64; ++i) v[i] = float(i);
  auto make = [&](float factor) {
    Dispatch d;
    d.pipeline = scale;
    d.bindings = {buffer_binding(0, x), bytes_binding(1, factor)};
    d.threadgroups = {2, 1, 1};
    d.threads_per_group = {32, 1, 1};
    return d;
  };
  {
    auto batch = dev.new_batch();
    batch->encode(make(2.0f), nullptr);
    batch->encode(make(3.0f), nullptr);
    EXPECT_EQ(batch->size(), 2u);
    batch->commit();
    batch->wait();
    for (int i = 0; i < 64; ++i) ASSERT_EQ(v[i], float(i * 6));
  }
  {
    // A divergent barrier fails the batch with the MSL line; later dispatches are skipped.
    Dispatch bad;
    bad.pipeline = divergent;
    bad.bindings = {buffer_binding(0, x)};
    bad.threadgroups = {1, 1, 1};
    bad.threads_per_group = {64, 1, 1};
    auto t1 = std::make_shared<DispatchTiming>(), t2 = std::make_shared<DispatchTiming>();
    auto batch = dev.new_batch();
    batch->encode(bad, t1);
    batch->encode(make(10.0f), t2);
    batch->commit();
    try {
      batch->wait();
      ADD_FAILURE() << "no exception";
    } catch (const tmps::DispatchError& e) {
      std::string m = e.what();
      EXPECT_NE(m.find("divergent barrier"), std::string::npos) << m;
      EXPECT_NE(m.find("'divergent'"), std::string::npos) << m;
      EXPECT_NE(m.find("line 35"), std::string::npos) << m;
    }
    EXPECT_TRUE(t1->ready && t2->ready);
    EXPECT_FALSE(t2->error.empty());
    // Threads 0-31 never got past the barrier; the x10 dispatch after the failure did not run.
    EXPECT_EQ(v[5], float(5 * 6));
    EXPECT_EQ(v[40], 1.0f) << "threads 32-63 of the divergent kernel ran to their end";
  }
  {
    // Unbound parameter.
    Dispatch d = make(1.0f);
    d.bindings.pop_back();
    auto batch = dev.new_batch();
    batch->encode(d, nullptr);
    batch->commit();
    EXPECT_THROW(batch->wait(), tmps::InvalidArgument);
  }
}

TEST_F(SimDeviceTest, PerfMillionThreadReduction) {
  SimDevice dev;
  auto p = dev.build_pipeline(kReduceSource, "reduce_sum", {});
  run_reduction(dev, p, 1u << 16, 128);  // warm up
  double t = run_reduction(dev, p, 1u << 20, 128);
  std::printf("[perf] MSL reduce_sum (simd_sum + barrier), 1M threads at 128/threadgroup: %.3f s\n", t);
}

}  // namespace

namespace {
// Per thread, a long chain of float arithmetic whose result depends on every step: -O0 and
// -O2 builds must give the same bits (no fast math, no contraction at either level).
const char* kBusySource = R"(#include <metal_stdlib>
using namespace metal;
kernel void busy(device float* out [[buffer(0)]], constant uint& steps [[buffer(1)]],
                 uint i [[thread_position_in_grid]]) {
  float x = float(i) * 0.001f + 0.5f;
  for (uint k = 0; k < steps; ++k) x = x * 0.9999f + sin(x) * 0.01f + float(k & 7u) * 1e-4f;
  out[i] = x;
}
)";

// Runs `p` over n threads in threadgroups of 64 with `bindings`, and waits.
void run_1d(SimDevice& dev, const std::shared_ptr<tmps::Pipeline>& p, std::vector<Binding> bindings, uint32_t n) {
  Dispatch d;
  d.pipeline = p;
  d.bindings = std::move(bindings);
  d.threadgroups = {n / 64, 1, 1};
  d.threads_per_group = {64, 1, 1};
  auto batch = dev.new_batch();
  batch->encode(d, nullptr);
  batch->commit();
  batch->wait();
}

std::vector<float> run_busy(SimDevice& dev, const std::shared_ptr<tmps::Pipeline>& p, uint32_t steps) {
  const uint32_t n = 256;
  std::shared_ptr<tmps::RawBuffer> out = dev.new_buffer(n * 4);
  std::memset(out->contents(), 0xFF, n * 4);  // poison: NaN
  run_1d(dev, p, {buffer_binding(0, out), bytes_binding(1, steps)}, n);
  const auto* y = static_cast<const float*>(out->contents());
  return std::vector<float>(y, y + n);
}
}  // namespace

// Tiering: a new kernel is built at -O0; after 50 ms of dispatches it is rebuilt at -O2 (once),
// later dispatches run that build, and both give the same bits. A second device finds the -O2
// build on disk and uses it at once.
TEST_F(SimDeviceTest, QuickBuildIsPromotedAfterRunningLong) {
  ::unsetenv("TRITON_MPS_SIM_OPT");
  tmps::CompileOptions opt;
  std::vector<float> first;
  {
    SimDevice dev;
    auto p = dev.build_pipeline(kBusySource, "busy", opt);
    EXPECT_EQ(dev.build_stats().compiled, 1u);
    first = run_busy(dev, p, 64);  // short: stays at -O0
    EXPECT_EQ(dev.build_stats().promoted, 0u);
    for (float v : first) ASSERT_TRUE(std::isfinite(v));
    std::vector<float> long_run;
    for (int i = 0; i < 50 && dev.build_stats().promoted == 0; ++i) long_run = run_busy(dev, p, 20000);
    EXPECT_EQ(dev.build_stats().promoted, 1u);
    EXPECT_EQ(dev.build_stats().compiled, 2u);
    EXPECT_EQ(cached_objects().size(), 2u);
    const std::vector<float> after = run_busy(dev, p, 20000);  // the -O2 build
    EXPECT_EQ(std::memcmp(after.data(), long_run.data(), after.size() * 4), 0) << "-O0 and -O2 results differ";
    EXPECT_EQ(dev.build_stats().promoted, 1u);
    const std::vector<float> again = run_busy(dev, p, 64);
    EXPECT_EQ(std::memcmp(again.data(), first.data(), again.size() * 4), 0) << "-O0 and -O2 results differ";
  }
  SimDevice second;
  auto q = second.build_pipeline(kBusySource, "busy", opt);
  EXPECT_EQ(second.build_stats().disk_hits, 1u);
  EXPECT_EQ(second.build_stats().compiled, 0u);
  for (int i = 0; i < 3; ++i) run_busy(second, q, 20000);
  EXPECT_EQ(second.build_stats().promoted, 0u);  // already -O2: nothing to promote
}

// Tiering is ski rental: a kernel whose -O0 build was slow waits longer (2.5x that build) before
// its -O2 rebuild; the build time comes from the cache entry's sidecar.
TEST_F(SimDeviceTest, SlowQuickBuildWaitsLongerToPromote) {
  ::unsetenv("TRITON_MPS_SIM_OPT");
  tmps::CompileOptions opt;
  {
    SimDevice dev;
    dev.build_pipeline(kBusySource, "busy", opt);
    ASSERT_EQ(dev.build_stats().compiled, 1u);
  }
  ASSERT_EQ(cached_objects().size(), 1u);
  const fs::path meta = cached_objects()[0].string() + ".meta";
  std::string text;
  {
    std::ifstream in(meta);
    std::stringstream ss;
    ss << in.rdbuf();
    text = ss.str();
  }
  const size_t at = text.find("build_ns ");
  ASSERT_NE(at, std::string::npos) << text;
  EXPECT_GT(std::stod(text.substr(at + 9)), 0.0);  // the build was timed
  const auto record = [&](const char* ns) { std::ofstream(meta, std::ios::trunc) << text.substr(0, at) << "build_ns " << ns << "\n"; };
  const auto run_until_promoted = [&](SimDevice& dev, const std::shared_ptr<tmps::Pipeline>& p) {
    for (int i = 0; i < 50 && dev.build_stats().promoted == 0; ++i) run_busy(dev, p, 20000);
  };
  record("1000000000000");  // a 1000 s -O0 build: never worth rebuilding here
  {
    SimDevice dev;
    auto p = dev.build_pipeline(kBusySource, "busy", opt);
    EXPECT_EQ(dev.build_stats().disk_hits, 1u);
    run_until_promoted(dev, p);
    EXPECT_EQ(dev.build_stats().promoted, 0u);
  }
  record("1000");  // a fast build: promoted after the usual 50 ms
  {
    SimDevice dev;
    auto p = dev.build_pipeline(kBusySource, "busy", opt);
    EXPECT_EQ(dev.build_stats().disk_hits, 1u);
    run_until_promoted(dev, p);
    EXPECT_EQ(dev.build_stats().promoted, 1u);
  }
}

// kBusySource plus which build ran each thread (__OPTIMIZE__: -O2).
const char* kTieredSource = R"(#include <metal_stdlib>
using namespace metal;
kernel void tiered(device float* out [[buffer(0)]], constant uint& steps [[buffer(1)]],
                   device uint* optimized [[buffer(2)]], uint i [[thread_position_in_grid]]) {
  float x = float(i) * 0.001f + 0.5f;
  for (uint k = 0; k < steps; ++k) x = x * 0.9999f + sin(x) * 0.01f + float(k & 7u) * 1e-4f;
  out[i] = x;
#ifdef __OPTIMIZE__
  optimized[i] = 1u;
#else
  optimized[i] = 0u;
#endif
}
)";

// One large dispatch of a -O0 kernel (64 threadgroups or more) runs 1/16 of its threadgroups,
// projects the rest at that rate and, when the rebuild pays, runs the rest on the -O2 build:
// promoted partway through its first dispatch, with the same bits as a whole -O2 run.
TEST_F(SimDeviceTest, LargeFirstDispatchIsPromotedPartway) {
  ::unsetenv("TRITON_MPS_SIM_OPT");
  const uint32_t n = 64 * 64;  // 64 threadgroups of 64
  const auto run = [&](SimDevice& dev, const std::shared_ptr<tmps::Pipeline>& p, uint32_t steps) {
    std::shared_ptr<tmps::RawBuffer> out = dev.new_buffer(n * 4), flag = dev.new_buffer(n * 4);
    std::memset(out->contents(), 0xFF, n * 4);
    std::memset(flag->contents(), 0xFF, n * 4);
    run_1d(dev, p, {buffer_binding(0, out), bytes_binding(1, steps), buffer_binding(2, flag)}, n);
    const auto* x = static_cast<const float*>(out->contents());
    const auto* f = static_cast<const uint32_t*>(flag->contents());
    return std::make_pair(std::vector<float>(x, x + n), std::vector<uint32_t>(f, f + n));
  };
  tmps::CompileOptions opt;
  SimDevice dev;
  auto p = dev.build_pipeline(kTieredSource, "tiered", opt);
  ASSERT_EQ(dev.build_stats().compiled, 1u);
  const auto [split, split_flags] = run(dev, p, 60000);
  EXPECT_EQ(dev.build_stats().promoted, 1u);
  for (uint32_t i = 0; i < n; ++i)
    ASSERT_EQ(split_flags[i], i < n / 16 ? 0u : 1u) << "thread " << i << ": the first 1/16 run at -O0, the rest at -O2";
  const auto [whole, whole_flags] = run(dev, p, 60000);
  for (uint32_t v : whole_flags) ASSERT_EQ(v, 1u);
  EXPECT_EQ(std::memcmp(split.data(), whole.data(), n * 4), 0) << "-O0 and -O2 results differ";
  // A short dispatch of a new -O0 kernel runs whole at -O0.
  SimDevice other;
  tmps::CompileOptions opt2;
  opt2.math_mode = tmps::MathMode::Fast;  // another cache entry
  auto q = other.build_pipeline(kTieredSource, "tiered", opt2);
  const auto short_run = run(other, q, 10);
  EXPECT_EQ(other.build_stats().promoted, 0u);
  for (uint32_t v : short_run.second) ASSERT_EQ(v, 0u);
}

TEST_F(SimDeviceTest, OptLevelSetting) {
  tmps::CompileOptions opt;
  ::setenv("TRITON_MPS_SIM_OPT", "2", 1);
  {
    SimDevice dev;
    auto p = dev.build_pipeline(kBusySource, "busy", opt);
    for (int i = 0; i < 3; ++i) run_busy(dev, p, 20000);
    EXPECT_EQ(dev.build_stats().compiled, 1u);
    EXPECT_EQ(dev.build_stats().promoted, 0u);
  }
  ::setenv("TRITON_MPS_SIM_OPT", "0", 1);
  {
    SimDevice dev;
    opt.math_mode = tmps::MathMode::Fast;  // another entry
    auto p = dev.build_pipeline(kBusySource, "busy", opt);
    for (int i = 0; i < 3; ++i) run_busy(dev, p, 20000);
    EXPECT_EQ(dev.build_stats().compiled, 1u);
    EXPECT_EQ(dev.build_stats().promoted, 0u);
  }
  ::setenv("TRITON_MPS_SIM_OPT", "3", 1);
  {
    SimDevice dev;
    opt.math_mode = tmps::MathMode::Safe;
    EXPECT_THROW(dev.build_pipeline(kReduceSource, "reduce_sum", opt), tmps::InvalidArgument);
  }
  ::unsetenv("TRITON_MPS_SIM_OPT");
}

// A dispatch of 4M threads or more is run by the -O2 build at once (its -O0 run alone would
// take seconds).
TEST_F(SimDeviceTest, HugeDispatchPromotesFirst) {
  ::unsetenv("TRITON_MPS_SIM_OPT");
  SimDevice dev;
  tmps::CompileOptions opt;
  auto p = dev.build_pipeline(kReduceSource, "scale", opt);
  const uint32_t n = 1u << 22;
  std::shared_ptr<tmps::RawBuffer> x = dev.new_buffer(size_t(n) * 4);
  auto* v = static_cast<float*>(x->contents());
  for (uint32_t i = 0; i < n; ++i) v[i] = float(i % 1000);
  const float factor = 0.5f;
  Dispatch d;
  d.pipeline = p;
  d.bindings = {buffer_binding(0, x), bytes_binding(1, factor)};
  d.threadgroups = {n / 256, 1, 1};
  d.threads_per_group = {256, 1, 1};
  auto batch = dev.new_batch();
  batch->encode(d, nullptr);
  batch->commit();
  batch->wait();
  EXPECT_EQ(dev.build_stats().promoted, 1u);
  for (uint32_t i = 0; i < n; i += 4099) ASSERT_EQ(v[i], float(i % 1000) * 0.5f);
}
