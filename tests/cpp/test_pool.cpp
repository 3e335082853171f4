// BufferPool policy: size classes, reuse, cap, aging, memory pressure, threads, stats.
#include <gtest/gtest.h>

#include <cstdlib>
#include <random>
#include <thread>

#include "fake_device.h"
#include "pool.h"

using namespace tmps;
using tmps_test::FakeDevice;

namespace {

std::shared_ptr<BufferPool> make_pool(const std::shared_ptr<FakeDevice>& dev, uint64_t cap = 1ull << 30,
                                      uint64_t age_ms = 60000) {
  PoolConfig c;
  c.max_cached_bytes = cap;
  c.max_buffer_age_ms = age_ms;
  return std::make_shared<BufferPool>(dev, c);
}

// Sets an environment variable for one scope.
struct ScopedEnv {
  std::string name;
  ScopedEnv(const char* n, const char* v) : name(n) {
    if (v) {
      setenv(n, v, 1);
    } else {
      unsetenv(n);
    }
  }
  ~ScopedEnv() { unsetenv(name.c_str()); }
};

}  // namespace

TEST(PoolSizeClass, SmallRequestsArePowersOfTwoFrom256) {
  EXPECT_EQ(pool_size_class(0), 256u);
  EXPECT_EQ(pool_size_class(1), 256u);
  EXPECT_EQ(pool_size_class(256), 256u);
  EXPECT_EQ(pool_size_class(257), 512u);
  EXPECT_EQ(pool_size_class(1000), 1024u);
  EXPECT_EQ(pool_size_class(4097), 8192u);
  EXPECT_EQ(pool_size_class(16384), 16384u);
}

TEST(PoolSizeClass, LargeRequestsArePageMultiplesWithBoundedWaste) {
  const size_t page = 16384;
  EXPECT_EQ(pool_size_class(page + 1), 2 * page);
  EXPECT_EQ(pool_size_class(128 * 1024 + 1), 144 * 1024u);  // step 16 KiB
  EXPECT_EQ(pool_size_class((1u << 20) + 1), (1u << 20) + (1u << 17));  // step 128 KiB
  std::mt19937_64 rng(7);
  size_t prev_bytes = 0, prev_class = 0;
  for (int i = 0; i < 20000; ++i) {
    size_t bytes = page + 1 + rng() % (size_t(1) << 34);
    size_t c = pool_size_class(bytes);
    ASSERT_GE(c, bytes);
    ASSERT_EQ(c % page, 0u) << bytes;
    if (bytes > 128 * 1024) {
      ASSERT_LE(double(c - bytes), 0.125 * double(bytes)) << bytes;
    }
    ASSERT_EQ(pool_size_class(c), c) << "a class must map to itself";
    if (bytes >= prev_bytes && prev_bytes) {
      ASSERT_GE(c, prev_class);
    }
    prev_bytes = bytes;
    prev_class = c;
  }
  EXPECT_THROW(pool_size_class(~size_t(0)), OutOfMemory);
}

TEST(Pool, ReusesSameClassAndReportsRequestedLength) {
  auto dev = std::make_shared<FakeDevice>();
  auto pool = make_pool(dev);
  auto a = pool->allocate(1000);
  EXPECT_EQ(a->length(), 1000u);
  void* p = a->contents();
  a.reset();
  EXPECT_EQ(pool->stats().cached_bytes, 1024u);
  auto b = pool->allocate(900);  // same 1024-byte class
  EXPECT_EQ(b->contents(), p);
  EXPECT_EQ(b->length(), 900u);
  auto c = pool->allocate(900);  // cache now empty: a new buffer
  EXPECT_NE(c->contents(), p);
  PoolStats s = pool->stats();
  EXPECT_EQ(s.hits, 1u);
  EXPECT_EQ(s.misses, 2u);
  EXPECT_EQ(s.num_allocations, 2u);
  EXPECT_EQ(s.active_bytes, 2048u);
  EXPECT_EQ(dev->num_new_buffer_calls, 2);
  EXPECT_EQ(dev->allocation_sizes(), (std::vector<size_t>{1024, 1024}));
}

TEST(Pool, DifferentClassIsNotReused) {
  auto dev = std::make_shared<FakeDevice>();
  auto pool = make_pool(dev);
  pool->allocate(1000).reset();
  auto b = pool->allocate(3000);
  EXPECT_EQ(pool->stats().hits, 0u);
  EXPECT_EQ(pool->stats().cached_bytes, 1024u);
  EXPECT_EQ(dev->live_buffers, 2);
}

TEST(Pool, CapEvictsOldestAndNeverExceeded) {
  auto dev = std::make_shared<FakeDevice>();
  auto pool = make_pool(dev, /*cap=*/4096);
  {
    std::vector<std::shared_ptr<RawBuffer>> held;
    for (int i = 0; i < 4; ++i) held.push_back(pool->allocate(1024));
    std::vector<void*> ptrs;
    for (auto& h : held) ptrs.push_back(h->contents());
    held.clear();  // returned oldest (index 0) first
    EXPECT_EQ(pool->stats().cached_bytes, 4096u);
    auto big = pool->allocate(2048);
    big.reset();  // needs 2048: the two oldest 1024s go
    PoolStats s = pool->stats();
    EXPECT_EQ(s.cached_bytes, 4096u);
    EXPECT_EQ(s.num_cached_buffers, 3u);
    EXPECT_EQ(dev->live_buffers, 3);
  }
  // Bigger than the cap: freed at once.
  auto huge = pool->allocate(8192);
  huge.reset();
  EXPECT_LE(pool->stats().cached_bytes, 4096u);
  EXPECT_EQ(dev->live_buffers, 3);
  // Random churn never goes above the cap.
  std::mt19937 rng(1);
  std::vector<std::shared_ptr<RawBuffer>> live;
  for (int i = 0; i < 500; ++i) {
    if (live.size() < 8 && rng() % 2) {
      live.push_back(pool->allocate(1 + rng() % 5000));
    } else if (!live.empty()) {
      live.erase(live.begin() + rng() % live.size());
    }
    ASSERT_LE(pool->stats().cached_bytes, 4096u);
  }
}

TEST(Pool, ZeroCapCachesNothing) {
  auto dev = std::make_shared<FakeDevice>();
  auto pool = make_pool(dev, 0);
  pool->allocate(100).reset();
  EXPECT_EQ(pool->stats().cached_bytes, 0u);
  EXPECT_EQ(dev->live_buffers, 0);
  pool->allocate(100).reset();
  EXPECT_EQ(pool->stats().hits, 0u);
}

TEST(Pool, IdleBuffersAgeOut) {
  auto dev = std::make_shared<FakeDevice>();
  auto pool = make_pool(dev, 1 << 20, /*age_ms=*/20);
  pool->allocate(1000).reset();
  pool->trim();
  EXPECT_EQ(pool->stats().num_cached_buffers, 1u) << "young buffers stay";
  std::this_thread::sleep_for(std::chrono::milliseconds(60));
  pool->trim();
  EXPECT_EQ(pool->stats().cached_bytes, 0u);
  EXPECT_EQ(dev->live_buffers, 0);

  // allocate() trims too: the old 1024 goes although a different class is requested.
  pool->allocate(1000).reset();
  std::this_thread::sleep_for(std::chrono::milliseconds(60));
  auto other = pool->allocate(5000);
  EXPECT_EQ(pool->stats().num_cached_buffers, 0u);
  EXPECT_EQ(dev->live_buffers, 1);
}

TEST(Pool, EmptyCacheAndReleaseCached) {
  auto dev = std::make_shared<FakeDevice>();
  auto pool = make_pool(dev);
  std::vector<std::shared_ptr<RawBuffer>> held;
  for (size_t sz : {256, 512, 1024, 2048}) held.push_back(pool->allocate(sz));
  held.clear();
  EXPECT_EQ(pool->stats().cached_bytes, 256u + 512 + 1024 + 2048);
  pool->release_cached(600);  // oldest first: 256 then 512
  EXPECT_EQ(pool->stats().cached_bytes, 1024u + 2048);
  EXPECT_EQ(dev->live_buffers, 2);
  pool->empty_cache();
  EXPECT_EQ(pool->stats().cached_bytes, 0u);
  EXPECT_EQ(pool->stats().num_cached_buffers, 0u);
  EXPECT_EQ(dev->live_buffers, 0);
}

TEST(Pool, AllocationFailureEmptiesCacheAndRetries) {
  auto dev = std::make_shared<FakeDevice>();
  auto pool = make_pool(dev);
  pool->allocate(1000).reset();
  ASSERT_EQ(pool->stats().cached_bytes, 1024u);
  dev->fail_allocations = 1;
  auto b = pool->allocate(4000);
  ASSERT_TRUE(b);
  EXPECT_EQ(pool->stats().cached_bytes, 0u);
  EXPECT_EQ(dev->live_buffers, 1);
  EXPECT_EQ(dev->num_new_buffer_calls, 3);  // first, failed, retried
  EXPECT_EQ(pool->stats().num_allocations, 2u);
}

TEST(Pool, NullFromDeviceIsAFailureToo) {
  auto dev = std::make_shared<FakeDevice>();
  auto pool = make_pool(dev);
  pool->allocate(1000).reset();
  dev->return_null = true;
  dev->fail_allocations = 1;
  auto b = pool->allocate(4000);
  ASSERT_TRUE(b);
  EXPECT_EQ(pool->stats().cached_bytes, 0u);
}

TEST(Pool, OutOfMemoryWhenRetryFailsToo) {
  auto dev = std::make_shared<FakeDevice>();
  auto pool = make_pool(dev);
  auto keep = pool->allocate(1000);
  dev->fail_allocations = 2;
  try {
    pool->allocate(4000);
    FAIL() << "expected OutOfMemory";
  } catch (const OutOfMemory& e) {
    EXPECT_NE(std::string(e.what()).find("4000"), std::string::npos) << e.what();
  }
  PoolStats s = pool->stats();
  EXPECT_EQ(s.active_bytes, 1024u) << "a failed request must not stay counted";
  EXPECT_EQ(s.num_allocations, 1u);
  // The pool works again once the device does.
  EXPECT_TRUE(pool->allocate(4000));
}

TEST(Pool, CapacityPressureReleasesCacheFirst) {
  auto dev = std::make_shared<FakeDevice>();
  dev->capacity = 4096;  // the device itself refuses beyond this
  auto pool = make_pool(dev);
  std::vector<std::shared_ptr<RawBuffer>> held;
  for (int i = 0; i < 4; ++i) held.push_back(pool->allocate(1024));
  held.clear();
  auto b = pool->allocate(4096);  // only fits after the four idle buffers are freed
  EXPECT_EQ(b->length(), 4096u);
  EXPECT_EQ(pool->stats().cached_bytes, 0u);
}

TEST(Pool, RecommendedWorkingSetReleasesCacheBeforeAllocating) {
  auto dev = std::make_shared<FakeDevice>();
  dev->mutable_info().recommended_working_set = 8192;
  auto pool = make_pool(dev);
  std::vector<std::shared_ptr<RawBuffer>> held;
  for (int i = 0; i < 4; ++i) held.push_back(pool->allocate(1024));
  held.clear();
  int64_t calls = dev->num_new_buffer_calls;
  auto b = pool->allocate(6000);  // class 8192: 4096 cached + 8192 > 8192
  EXPECT_EQ(pool->stats().cached_bytes, 0u);
  EXPECT_EQ(dev->num_new_buffer_calls, calls + 1) << "released up front, no failed attempt";
}

TEST(Pool, StatsPeakHitsMisses) {
  auto dev = std::make_shared<FakeDevice>();
  auto pool = make_pool(dev);
  auto a = pool->allocate(1024);
  auto b = pool->allocate(2048);
  EXPECT_EQ(pool->stats().peak_active_bytes, 3072u);
  b.reset();
  EXPECT_EQ(pool->stats().active_bytes, 1024u);
  EXPECT_EQ(pool->stats().peak_active_bytes, 3072u);
  pool->reset_peak();
  EXPECT_EQ(pool->stats().peak_active_bytes, 1024u);
  auto c = pool->allocate(2000);
  PoolStats s = pool->stats();
  EXPECT_EQ(s.hits, 1u);
  EXPECT_EQ(s.misses, 2u);
  EXPECT_EQ(s.peak_active_bytes, 3072u);
}

TEST(Pool, WrappedMemoryIsCountedUntilItsTokenDies) {
  auto dev = std::make_shared<FakeDevice>();
  auto pool = make_pool(dev);
  auto a = pool->allocate(1024);
  auto w = pool->track_wrapped(5000);
  PoolStats s = pool->stats();
  EXPECT_EQ(s.wrapped_bytes, 5000u);
  EXPECT_EQ(s.num_wrapped, 1u);
  EXPECT_EQ(s.num_wraps, 1u);
  EXPECT_EQ(s.active_bytes, 1024u) << "wrapped memory is not pool memory";
  EXPECT_EQ(s.peak_total_bytes, 6024u);
  EXPECT_EQ(dev->live_buffers, 1) << "tracking allocates nothing";
  a.reset();
  EXPECT_EQ(pool->stats().num_returned, 1u);
  w.reset();
  s = pool->stats();
  EXPECT_EQ(s.wrapped_bytes, 0u);
  EXPECT_EQ(s.num_wrapped, 0u);
  EXPECT_EQ(s.num_unwraps, 1u);
  EXPECT_EQ(s.peak_total_bytes, 6024u);
  pool->reset_peak();
  EXPECT_EQ(pool->stats().peak_total_bytes, 0u);
  std::shared_ptr<void> late = pool->track_wrapped(10);
  pool.reset();
  late.reset();  // a token that outlives its pool uncounts into the pool's state, still alive
}

TEST(Pool, SetConfigAppliesAtOnce) {
  auto dev = std::make_shared<FakeDevice>();
  auto pool = make_pool(dev);
  std::vector<std::shared_ptr<RawBuffer>> held;
  for (int i = 0; i < 4; ++i) held.push_back(pool->allocate(1024));
  held.clear();
  PoolConfig c = pool->config();
  c.max_cached_bytes = 2048;
  pool->set_config(c);
  EXPECT_EQ(pool->stats().cached_bytes, 2048u);
  EXPECT_EQ(pool->config().max_cached_bytes, 2048u);
  EXPECT_EQ(dev->live_buffers, 2);
}

TEST(Pool, BuffersOutliveThePool) {
  auto dev = std::make_shared<FakeDevice>();
  std::shared_ptr<RawBuffer> survivor;
  {
    auto pool = make_pool(dev);
    pool->allocate(512).reset();  // cached
    survivor = pool->allocate(3000);
    EXPECT_EQ(dev->live_buffers, 2);
  }
  EXPECT_EQ(dev->live_buffers, 1) << "the pool's cache is freed with it";
  std::memset(survivor->contents(), 0xab, survivor->length());
  survivor.reset();
  EXPECT_EQ(dev->live_buffers, 0) << "a buffer returned after the pool died is freed";
}

TEST(Pool, MaxBufferLength) {
  auto dev = std::make_shared<FakeDevice>();
  dev->mutable_info().max_buffer_length = 100000;
  auto pool = make_pool(dev);
  auto b = pool->allocate(99000);  // class would be 112 KiB > limit: allocated at the limit
  EXPECT_EQ(dev->allocation_sizes().back(), 100000u);
  EXPECT_THROW(pool->allocate(100001), OutOfMemory);
}

TEST(Pool, ConcurrentAllocateFree) {
  auto dev = std::make_shared<FakeDevice>();
  auto pool = make_pool(dev, /*cap=*/64 * 1024);
  constexpr int kThreads = 4, kOps = 3000;
  std::atomic<int> corrupted{0};
  std::atomic<uint64_t> requests{0};
  auto worker = [&](int id) {
    std::mt19937 rng(id);
    std::vector<std::shared_ptr<RawBuffer>> mine;
    for (int i = 0; i < kOps; ++i) {
      if (mine.size() < 6 && rng() % 3 != 0) {
        auto b = pool->allocate(1 + rng() % 20000);
        ++requests;
        // Mark it as ours; nobody else may be handed the same memory meanwhile.
        std::memset(b->contents(), id + 1, b->length());
        mine.push_back(std::move(b));
      } else if (!mine.empty()) {
        size_t k = rng() % mine.size();
        auto* p = static_cast<unsigned char*>(mine[k]->contents());
        for (size_t j = 0; j < mine[k]->length(); j += 97) {
          if (p[j] != id + 1) {
            ++corrupted;
            break;
          }
        }
        mine.erase(mine.begin() + k);
      }
    }
  };
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) threads.emplace_back(worker, t);
  for (auto& t : threads) t.join();
  EXPECT_EQ(corrupted, 0);
  PoolStats s = pool->stats();
  EXPECT_EQ(s.active_bytes, 0u);
  EXPECT_EQ(s.hits + s.misses, requests.load());
  EXPECT_EQ(s.num_allocations, s.misses);
  EXPECT_GT(s.hits, 0u);
  EXPECT_LE(s.cached_bytes, 64u * 1024);
  EXPECT_EQ(uint64_t(dev->live_buffers), s.num_cached_buffers);
  EXPECT_EQ(dev->live_bytes(), s.cached_bytes);
}

TEST(PoolConfigEnv, ParsesSizesAndAges) {
  {
    ScopedEnv a("MPS_MAX_POOL_SIZE", nullptr), b("MPS_MAX_BUFFER_AGE", nullptr);
    PoolConfig d = PoolConfig::from_env();
    EXPECT_EQ(d.max_cached_bytes, 1ull << 30);
    EXPECT_EQ(d.max_buffer_age_ms, 60000u);
  }
  struct Case {
    const char* text;
    uint64_t bytes;
  } cases[] = {{"0", 0}, {"123", 123}, {"64K", 64 << 10}, {"512m", 512ull << 20}, {"4G", 4ull << 30}, {"2GB", 2ull << 30}};
  for (const Case& c : cases) {
    ScopedEnv e("MPS_MAX_POOL_SIZE", c.text);
    EXPECT_EQ(PoolConfig::from_env().max_cached_bytes, c.bytes) << c.text;
  }
  ScopedEnv age("MPS_MAX_BUFFER_AGE", "250");
  EXPECT_EQ(PoolConfig::from_env().max_buffer_age_ms, 250u);
}

TEST(PoolConfigEnv, MalformedValuesNameTheVariable) {
  for (const char* bad : {"abc", "12X", "-5", "1.5G", "99999999999999999999", "16GG"}) {
    ScopedEnv e("MPS_MAX_POOL_SIZE", bad);
    try {
      PoolConfig::from_env();
      ADD_FAILURE() << "accepted " << bad;
    } catch (const InvalidArgument& err) {
      EXPECT_NE(std::string(err.what()).find("MPS_MAX_POOL_SIZE"), std::string::npos);
    }
  }
  ScopedEnv e("MPS_MAX_BUFFER_AGE", "10s");
  try {
    PoolConfig::from_env();
    ADD_FAILURE() << "accepted 10s";
  } catch (const InvalidArgument& err) {
    EXPECT_NE(std::string(err.what()).find("MPS_MAX_BUFFER_AGE"), std::string::npos);
  }
}
