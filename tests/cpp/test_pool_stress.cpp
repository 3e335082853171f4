// BufferPool under load: 4 threads allocate and free buffers of random sizes, each stamped by
// its owner and checked before it is freed; afterwards every statistic is back at its baseline
// and the device holds no buffer. TMPS_POOL_STRESS_ALLOCS allocations in all (each freed):
// 200k in the default suite (cheap), 1M under AddressSanitizer in scripts/sanitize.sh (where a
// use-after-free or a leak fails the run).
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <random>
#include <thread>
#include <vector>

#include "fake_device.h"
#include "pool.h"

using namespace tmps;
using tmps_test::FakeDevice;

namespace {

uint64_t total_allocations() {
  if (const char* v = std::getenv("TMPS_POOL_STRESS_ALLOCS"); v && *v) return std::strtoull(v, nullptr, 10);
  return 200000;
}

// Stamp the first and last bytes (all of a small buffer): cheap enough for a million ops, and
// enough to see two owners handed the same memory.
void stamp(RawBuffer& b, unsigned char id) {
  auto* p = static_cast<unsigned char*>(b.contents());
  const size_t n = b.length();
  std::memset(p, id, n < 64 ? n : 32);
  if (n >= 64) std::memset(p + n - 32, id, 32);
}

bool stamped(RawBuffer& b, unsigned char id) {
  auto* p = static_cast<const unsigned char*>(b.contents());
  const size_t n = b.length();
  const size_t head = n < 64 ? n : 32;
  for (size_t i = 0; i < head; ++i)
    if (p[i] != id) return false;
  if (n >= 64)
    for (size_t i = n - 32; i < n; ++i)
      if (p[i] != id) return false;
  return true;
}

}  // namespace

TEST(PoolStress, FourThreadsRandomSizesReturnToBaseline) {
  auto dev = std::make_shared<FakeDevice>();
  PoolConfig c;
  c.max_cached_bytes = 8u << 20;  // small cap: eviction runs all the time
  c.max_buffer_age_ms = 60000;
  auto pool = std::make_shared<BufferPool>(dev, c);
  const PoolStats base = pool->stats();

  constexpr int kThreads = 4;
  const uint64_t per_thread = total_allocations() / kThreads;
  std::atomic<uint64_t> corrupted{0}, requests{0};
  auto worker = [&](int id) {
    std::mt19937_64 rng(0x5eed + id);
    std::vector<std::shared_ptr<RawBuffer>> mine;
    const auto tag = static_cast<unsigned char>(id + 1);
    uint64_t allocs = 0;
    while (allocs < per_thread || !mine.empty()) {
      const bool grow = allocs < per_thread && (mine.empty() || (mine.size() < 32 && rng() % 2));
      if (grow) {
        // Mostly small, sometimes large (past the 16 KiB page classes), sometimes empty.
        const uint64_t r = rng() % 100;
        const size_t bytes = r < 2 ? 0 : r < 90 ? 1 + rng() % 4096 : 16384 + rng() % (1u << 20);
        auto b = pool->allocate(bytes);
        ++requests;
        ++allocs;
        if (b->length() != bytes) ++corrupted;
        stamp(*b, tag);
        mine.push_back(std::move(b));
      } else {
        const size_t k = rng() % mine.size();
        if (!stamped(*mine[k], tag)) ++corrupted;
        mine[k] = std::move(mine.back());
        mine.pop_back();
      }
    }
  };
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) threads.emplace_back(worker, t);
  for (auto& t : threads) t.join();

  EXPECT_EQ(corrupted.load(), 0u);
  PoolStats s = pool->stats();
  EXPECT_EQ(s.active_bytes, base.active_bytes);
  EXPECT_EQ(s.hits + s.misses, requests.load());
  EXPECT_EQ(s.num_allocations, s.misses);
  EXPECT_LE(s.cached_bytes, c.max_cached_bytes);
  EXPECT_EQ(uint64_t(dev->live_buffers), s.num_cached_buffers);
  pool->empty_cache();
  s = pool->stats();
  EXPECT_EQ(s.cached_bytes, base.cached_bytes);
  EXPECT_EQ(s.num_cached_buffers, base.num_cached_buffers);
  EXPECT_EQ(dev->live_buffers.load(), 0);
  EXPECT_EQ(dev->live_bytes(), 0u);
}
