// PipelineCache: hits and misses, single flight under concurrency, keys, errors not cached,
// and the cache directory rules.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>

#include <unistd.h>

#include "fake_device.h"
#include "pipeline_cache.h"

using namespace tmps;
using tmps_test::FakeDevice;
using tmps_test::FakePipeline;

namespace {

struct ScopedEnv {
  std::string name;
  bool had = false;
  std::string old;
  ScopedEnv(const char* n, const char* v) : name(n) {
    if (const char* o = std::getenv(n)) {
      had = true;
      old = o;
    }
    if (v) {
      setenv(n, v, 1);
    } else {
      unsetenv(n);
    }
  }
  ~ScopedEnv() {
    if (had) {
      setenv(name.c_str(), old.c_str(), 1);
    } else {
      unsetenv(name.c_str());
    }
  }
};

const char* kSource = "kernel void k(device float* x [[buffer(0)]]) {}";

}  // namespace

TEST(PipelineCache, MissThenHit) {
  auto dev = std::make_shared<FakeDevice>();
  PipelineCache cache(dev);
  auto a = cache.get(kSource, "k", CompileOptions{});
  auto b = cache.get(kSource, "k", CompileOptions{});
  EXPECT_EQ(a, b);
  EXPECT_EQ(a->name(), "k");
  EXPECT_EQ(dev->num_builds, 1);
  PipelineCacheStats s = cache.stats();
  EXPECT_EQ(s.hits, 1u);
  EXPECT_EQ(s.misses, 1u);
  EXPECT_EQ(s.entries, 1u);
  cache.clear();
  EXPECT_EQ(cache.stats().entries, 0u);
  auto c = cache.get(kSource, "k", CompileOptions{});
  EXPECT_NE(c, a) << "clear() forgets built pipelines";
  EXPECT_EQ(dev->num_builds, 2);
}

TEST(PipelineCache, ConcurrentRequestsBuildOnce) {
  auto dev = std::make_shared<FakeDevice>();
  dev->build_delay_ms = 50;
  PipelineCache cache(dev);
  std::vector<std::shared_ptr<Pipeline>> got(8);
  std::vector<std::thread> threads;
  for (int i = 0; i < 8; ++i) {
    threads.emplace_back([&, i] { got[i] = cache.get(kSource, "k", CompileOptions{}); });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(dev->num_builds, 1);
  for (auto& p : got) EXPECT_EQ(p, got[0]);
  EXPECT_EQ(cache.stats().misses, 1u);
  EXPECT_EQ(cache.stats().hits, 7u);
}

TEST(PipelineCache, DifferentKeysBuildInParallel) {
  auto dev = std::make_shared<FakeDevice>();
  dev->build_delay_ms = 100;
  PipelineCache cache(dev);
  auto start = std::chrono::steady_clock::now();
  std::thread t1([&] { cache.get(kSource, "a", CompileOptions{}); });
  std::thread t2([&] { cache.get(kSource, "b", CompileOptions{}); });
  t1.join();
  t2.join();
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(dev->num_builds, 2);
  EXPECT_LT(ms, 190) << "builds of different keys must not serialize on the cache lock";
}

TEST(PipelineCache, KeyDependsOnEveryInput) {
  FakeDevice dev;
  CompileOptions base;
  const std::string k0 = pipeline_key(kSource, "k", base, dev);
  EXPECT_EQ(k0.size(), 64u);
  EXPECT_EQ(k0, pipeline_key(kSource, "k", base, dev)) << "stable";
  EXPECT_NE(k0, pipeline_key(std::string(kSource) + " ", "k", base, dev));
  EXPECT_NE(k0, pipeline_key(kSource, "k2", base, dev));

  std::vector<CompileOptions> variants(6, base);
  variants[0].math_mode = MathMode::Fast;
  variants[1].math_mode = MathMode::Relaxed;
  variants[2].language_version = "3.2";
  variants[3].macros = {{"BLOCK", "128"}};
  variants[4].strict_check = false;
  variants[5].label = "add_kernel";
  for (const auto& v : variants) EXPECT_NE(k0, pipeline_key(kSource, "k", v, dev)) << v.key();

  FakeDevice other;
  other.identity = "fake:2";
  EXPECT_NE(k0, pipeline_key(kSource, "k", base, other));

  // Framing: moving a boundary between fields must change the key.
  EXPECT_NE(pipeline_key("ab", "c", base, dev), pipeline_key("a", "bc", base, dev));
  CompileOptions m1 = base, m2 = base;
  m1.macros = {{"A", "B=C"}};
  m2.macros = {{"A=B", "C"}};
  EXPECT_NE(m1.key(), m2.key());
}

TEST(PipelineCache, OptionsSelectDifferentEntries) {
  auto dev = std::make_shared<FakeDevice>();
  PipelineCache cache(dev);
  CompileOptions fast;
  fast.math_mode = MathMode::Fast;
  auto a = cache.get(kSource, "k", CompileOptions{});
  auto b = cache.get(kSource, "k", fast);
  EXPECT_NE(a, b);
  EXPECT_EQ(cache.stats().entries, 2u);
}

TEST(PipelineCache, BuildErrorsReachEveryWaiterAndAreNotCached) {
  auto dev = std::make_shared<FakeDevice>();
  dev->build_delay_ms = 50;
  std::atomic<bool> broken{true};
  dev->builder = [&](const std::string&, const std::string& entry, const CompileOptions&) -> std::shared_ptr<Pipeline> {
    if (broken) throw CompileError("program_source:3:5: error: use of undeclared identifier 'y'");
    return std::make_shared<FakePipeline>(entry, std::vector<ParamInfo>{});
  };
  PipelineCache cache(dev);
  std::atomic<int> errors{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < 4; ++i) {
    threads.emplace_back([&] {
      try {
        cache.get(kSource, "k", CompileOptions{});
      } catch (const CompileError& e) {
        if (std::string(e.what()).find("undeclared identifier") != std::string::npos) ++errors;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(errors, 4);
  EXPECT_EQ(dev->num_builds, 1);
  EXPECT_EQ(cache.stats().entries, 0u);

  broken = false;
  auto p = cache.get(kSource, "k", CompileOptions{});
  EXPECT_TRUE(p);
  EXPECT_EQ(dev->num_builds, 2) << "the failure was not cached";
}

TEST(PipelineCache, CacheDirFollowsEnvironment) {
  namespace fs = std::filesystem;
  fs::path root = fs::path(::testing::TempDir()) / ("tmps_cache_dir_test_" + std::to_string(::getpid()));
  fs::remove_all(root);
  {
    ScopedEnv a("TRITON_MPS_CACHE_DIR", (root / "explicit" / "deep").c_str());
    EXPECT_EQ(cache_dir(), (root / "explicit" / "deep").string());
    EXPECT_TRUE(fs::is_directory(root / "explicit" / "deep"));
  }
  {
    ScopedEnv a("TRITON_MPS_CACHE_DIR", nullptr);
    ScopedEnv b("XDG_CACHE_HOME", (root / "xdg").c_str());
    EXPECT_EQ(cache_dir(), (root / "xdg" / "triton_mps").string());
    EXPECT_TRUE(fs::is_directory(root / "xdg" / "triton_mps"));
  }
  {
    ScopedEnv a("TRITON_MPS_CACHE_DIR", nullptr);
    ScopedEnv b("XDG_CACHE_HOME", nullptr);
    ScopedEnv c("HOME", (root / "home").c_str());
    EXPECT_EQ(cache_dir(), (root / "home" / ".cache" / "triton_mps").string());
  }
  {
    // A file where the directory should be: a clear error naming the path.
    fs::create_directories(root);
    { std::ofstream(root / "file") << "x"; }
    ScopedEnv a("TRITON_MPS_CACHE_DIR", (root / "file").c_str());
    try {
      cache_dir();
      ADD_FAILURE() << "expected an error";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("file"), std::string::npos) << e.what();
    }
  }
  fs::remove_all(root);
}
