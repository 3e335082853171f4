// Buffer pool policy (small and explicit, in the spirit of MLX's Metal allocator):
//
// * Size classes. Requests up to 16 KiB round up to a power of two (256 bytes minimum).
//   Larger requests round up to a multiple of max(16 KiB, 2^k / 8) where 2^k < bytes <= 2^(k+1):
//   16 KiB is the Apple GPU page, and 8 steps per power of two keep the waste under 12.5%
//   once requests exceed 128 KiB (below that the page granularity dominates).
// * Reuse only on an exact class match, most recently returned buffer first (warm pages).
// * Cap on cached bytes (max_cached_bytes): recycling evicts the oldest idle buffers until the
//   returned one fits; a buffer bigger than the cap (or any buffer when the cap is 0) is freed.
// * Age limit (max_buffer_age_ms; 0 = no age limit): idle buffers older than that are freed by
//   trim(), which allocate() and recycling call. The idle list is ordered by return time, so
//   trim() only looks at its front.
// * Memory pressure: if active + cached + the new buffer would exceed the device's
//   recommended working set, cached memory is released first. If the device still fails
//   (OutOfMemory or no buffer), the whole cache is emptied and the allocation retried once.
// * The buffer handed out reports length() == the requested size (it is a view of the
//   class-sized device buffer), so the launcher's size checks are exact. Stats count class
//   bytes, which is what the device really holds.
// * Handed-out buffers share the pool's State; a buffer that outlives its BufferPool is freed
//   (not cached) when released. One mutex guards the state; device calls and frees run
//   outside it.
#include "pool.h"

#include <cctype>
#include <cstdlib>
#include <limits>
#include <list>
#include <string>
#include <vector>

namespace tmps {

namespace {

constexpr size_t kMinClass = 256;
constexpr size_t kPage = 16 * 1024;

size_t round_up(size_t x, size_t step) { return (x + step - 1) / step * step; }

// Parses "123", "64K", "512m", "2G" (optionally followed by "B"). Returns false if malformed.
bool parse_bytes(const std::string& text, uint64_t* out) {
  size_t i = 0;
  uint64_t value = 0;
  const uint64_t max = std::numeric_limits<uint64_t>::max();
  while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) {
    uint64_t digit = static_cast<uint64_t>(text[i] - '0');
    if (value > (max - digit) / 10) return false;
    value = value * 10 + digit;
    ++i;
  }
  if (i == 0) return false;
  uint64_t scale = 1;
  if (i < text.size()) {
    switch (std::toupper(static_cast<unsigned char>(text[i]))) {
      case 'K': scale = 1ull << 10; break;
      case 'M': scale = 1ull << 20; break;
      case 'G': scale = 1ull << 30; break;
      case 'B': scale = 1; break;
      default: return false;
    }
    ++i;
    if (scale != 1 && i < text.size() && std::toupper(static_cast<unsigned char>(text[i])) == 'B') ++i;
  }
  if (i != text.size()) return false;
  if (value > max / scale) return false;
  *out = value * scale;
  return true;
}

}  // namespace

size_t pool_size_class(size_t bytes) {
  // Far beyond any device; also keeps the rounding below from overflowing.
  if (bytes > (size_t(1) << 62)) {
    throw OutOfMemory("buffer request of " + std::to_string(bytes) + " bytes is larger than any device allows");
  }
  if (bytes <= kMinClass) return kMinClass;
  if (bytes <= kPage) {
    size_t c = kMinClass;
    while (c < bytes) c <<= 1;
    return c;
  }
  size_t pow2 = kPage;  // largest power of two strictly below `bytes`
  while (pow2 * 2 < bytes) pow2 <<= 1;
  size_t step = std::max(kPage, pow2 / 8);
  return round_up(bytes, step);
}

PoolConfig PoolConfig::from_env() {
  PoolConfig c;
  if (const char* v = std::getenv("MPS_MAX_POOL_SIZE"); v && *v) {
    if (!parse_bytes(v, &c.max_cached_bytes)) {
      throw InvalidArgument(std::string("MPS_MAX_POOL_SIZE='") + v +
                            "' is not a byte count (expected e.g. 0, 1048576, 512M, 4G)");
    }
  }
  if (const char* v = std::getenv("MPS_MAX_BUFFER_AGE"); v && *v) {
    std::string s(v);
    uint64_t ms = 0;
    bool digits_only = s.find_first_not_of("0123456789") == std::string::npos;
    if (!digits_only || !parse_bytes(s, &ms)) {
      throw InvalidArgument("MPS_MAX_BUFFER_AGE='" + s + "' is not a number of milliseconds");
    }
    c.max_buffer_age_ms = ms;
  }
  return c;
}

// ---------------------------------------------------------------------------------------------

namespace {
// Where a released buffer goes (BufferPool::State is private, so buffers see only this).
struct Recycler {
  virtual ~Recycler() = default;
  virtual void recycle_to_cache(std::unique_ptr<RawBuffer> raw, size_t cls) = 0;
};
}  // namespace

struct BufferPool::State final : Recycler {
  struct Idle {
    std::unique_ptr<RawBuffer> raw;
    size_t size = 0;  // class size
    Clock::time_point since;
    std::multimap<size_t, std::list<Idle>::iterator>::iterator by_size;
  };

  std::shared_ptr<Device> device;
  mutable std::mutex mu;
  PoolConfig config;
  PoolStats stats;
  bool closed = false;  // the BufferPool is gone: returned buffers are freed
  std::list<Idle> idle;  // oldest first
  std::multimap<size_t, std::list<Idle>::iterator> by_size;

  // Each *_locked helper moves buffers to free into `out`; the caller destroys them unlocked.
  using FreeList = std::vector<std::unique_ptr<RawBuffer>>;

  void evict_oldest_locked(FreeList& out) {
    Idle& e = idle.front();
    by_size.erase(e.by_size);
    stats.cached_bytes -= e.size;
    stats.num_cached_buffers -= 1;
    out.push_back(std::move(e.raw));
    idle.pop_front();
  }

  void release_locked(uint64_t bytes, FreeList& out) {
    uint64_t freed = 0;
    while (freed < bytes && !idle.empty()) {
      freed += idle.front().size;
      evict_oldest_locked(out);
    }
  }

  void trim_locked(Clock::time_point now, FreeList& out) {
    if (config.max_buffer_age_ms == 0) return;
    auto max_age = std::chrono::milliseconds(config.max_buffer_age_ms);
    while (!idle.empty() && now - idle.front().since > max_age) evict_oldest_locked(out);
  }

  std::unique_ptr<RawBuffer> reuse_from_cache_locked(size_t cls) {
    auto range = by_size.equal_range(cls);
    if (range.first == range.second) return nullptr;
    auto last = std::prev(range.second);  // most recently returned of this class
    auto it = last->second;
    std::unique_ptr<RawBuffer> raw = std::move(it->raw);
    by_size.erase(last);
    idle.erase(it);
    stats.cached_bytes -= cls;
    stats.num_cached_buffers -= 1;
    return raw;
  }

  void add_active_locked(size_t cls) {
    stats.active_bytes += cls;
    if (stats.active_bytes > stats.peak_active_bytes) stats.peak_active_bytes = stats.active_bytes;
    update_peak_total_locked();
  }

  void update_peak_total_locked() {
    uint64_t total = stats.active_bytes + stats.wrapped_bytes;
    if (total > stats.peak_total_bytes) stats.peak_total_bytes = total;
  }

  // Called when a handed-out buffer is released.
  void recycle_to_cache(std::unique_ptr<RawBuffer> raw, size_t cls) override {
    FreeList to_free;
    {
      std::lock_guard<std::mutex> lock(mu);
      stats.active_bytes -= cls;
      stats.num_returned += 1;
      if (closed || cls > config.max_cached_bytes) {
        to_free.push_back(std::move(raw));
      } else {
        while (!idle.empty() && stats.cached_bytes + cls > config.max_cached_bytes) evict_oldest_locked(to_free);
        auto now = Clock::now();
        idle.push_back(Idle{std::move(raw), cls, now, {}});
        auto node = std::prev(idle.end());
        node->by_size = by_size.emplace(cls, node);
        stats.cached_bytes += cls;
        stats.num_cached_buffers += 1;
        trim_locked(now, to_free);
      }
    }
    // to_free destroyed here, outside the lock.
  }
};

namespace {

// What the user holds: a view of exactly the requested size over a class-sized device buffer.
class PooledBuffer final : public RawBuffer {
 public:
  PooledBuffer(std::unique_ptr<RawBuffer> raw, size_t requested, size_t cls,
               std::shared_ptr<Recycler> state)
      : raw_(std::move(raw)), requested_(requested), class_size_(cls), state_(std::move(state)) {}
  ~PooledBuffer() override {
    try {
      state_->recycle_to_cache(std::move(raw_), class_size_);
    } catch (...) {
      // Destructors must not throw; raw_ (if still held) is simply freed.
    }
  }
  void* contents() override { return raw_->contents(); }
  size_t length() const override { return requested_; }
  void* native_handle() override { return raw_->native_handle(); }
  uint64_t native_offset() const override { return raw_->native_offset(); }

 private:
  std::unique_ptr<RawBuffer> raw_;
  size_t requested_;
  size_t class_size_;
  std::shared_ptr<Recycler> state_;
};

}  // namespace

BufferPool::BufferPool(std::shared_ptr<Device> device, PoolConfig config)
    : state_(std::make_shared<State>()), device_(std::move(device)) {
  if (!device_) throw InvalidArgument("BufferPool needs a device");
  state_->device = device_;
  state_->config = config;
}

BufferPool::~BufferPool() {
  State::FreeList to_free;
  {
    std::lock_guard<std::mutex> lock(state_->mu);
    state_->closed = true;
    state_->release_locked(std::numeric_limits<uint64_t>::max(), to_free);
  }
}

std::shared_ptr<RawBuffer> BufferPool::allocate(size_t bytes) {
  State& s = *state_;
  size_t cls = pool_size_class(bytes);
  const DeviceInfo& info = device_->info();
  if (info.max_buffer_length != 0 && cls > info.max_buffer_length) {
    if (bytes > info.max_buffer_length) {
      throw OutOfMemory("buffer request of " + std::to_string(bytes) + " bytes exceeds the device's maximum buffer length (" +
                        std::to_string(info.max_buffer_length) + " bytes)");
    }
    cls = info.max_buffer_length;  // still consistent: every request here maps to this class
  }

  State::FreeList to_free;
  {
    std::lock_guard<std::mutex> lock(s.mu);
    s.trim_locked(Clock::now(), to_free);
    if (auto raw = s.reuse_from_cache_locked(cls)) {
      s.stats.hits += 1;
      s.add_active_locked(cls);
      return std::make_shared<PooledBuffer>(std::move(raw), bytes, cls, state_);
    }
    s.stats.misses += 1;
    const uint64_t budget = info.recommended_working_set;
    if (budget != 0) {
      uint64_t want = s.stats.active_bytes + s.stats.cached_bytes + cls;
      if (want > budget) s.release_locked(want - budget, to_free);
    }
    // Count the bytes as active now so concurrent callers see them in the budget.
    s.add_active_locked(cls);
  }
  to_free.clear();

  // A device failure other than OutOfMemory propagates; the reserved bytes are given back.
  std::unique_ptr<RawBuffer> raw;
  try {
    auto try_new = [&]() -> std::unique_ptr<RawBuffer> {
      try {
        return device_->new_buffer(cls);
      } catch (const OutOfMemory&) {
        return nullptr;
      }
    };
    raw = try_new();
    if (!raw) {
      {
        std::lock_guard<std::mutex> lock(s.mu);
        s.release_locked(std::numeric_limits<uint64_t>::max(), to_free);
      }
      to_free.clear();
      raw = try_new();
    }
  } catch (...) {
    std::lock_guard<std::mutex> lock(s.mu);
    s.stats.active_bytes -= cls;
    throw;
  }
  std::lock_guard<std::mutex> lock(s.mu);
  if (!raw) {
    s.stats.active_bytes -= cls;
    throw OutOfMemory("out of device memory: could not allocate " + std::to_string(bytes) + " bytes (size class " +
                      std::to_string(cls) + ") even after emptying the buffer cache; " +
                      std::to_string(s.stats.active_bytes) + " bytes are in use");
  }
  s.stats.num_allocations += 1;
  return std::make_shared<PooledBuffer>(std::move(raw), bytes, cls, state_);
}

std::shared_ptr<void> BufferPool::track_wrapped(size_t bytes) {
  std::shared_ptr<State> s = state_;
  {
    std::lock_guard<std::mutex> lock(s->mu);
    s->stats.wrapped_bytes += bytes;
    s->stats.num_wrapped += 1;
    s->stats.num_wraps += 1;
    s->update_peak_total_locked();
  }
  // The token's deleter uncounts; it holds the state, not the pool, so it may outlive the pool.
  return std::shared_ptr<void>(nullptr, [s, bytes](void*) {
    std::lock_guard<std::mutex> lock(s->mu);
    s->stats.wrapped_bytes -= bytes;
    s->stats.num_wrapped -= 1;
    s->stats.num_unwraps += 1;
  });
}

void BufferPool::empty_cache() { release_cached(std::numeric_limits<uint64_t>::max()); }

void BufferPool::release_cached(uint64_t bytes) {
  State::FreeList to_free;
  std::lock_guard<std::mutex> lock(state_->mu);
  state_->release_locked(bytes, to_free);
  // Freed after the lock is released (to_free is destroyed after `lock`).
}

void BufferPool::trim() {
  State::FreeList to_free;
  std::lock_guard<std::mutex> lock(state_->mu);
  state_->trim_locked(Clock::now(), to_free);
}

PoolStats BufferPool::stats() const {
  std::lock_guard<std::mutex> lock(state_->mu);
  return state_->stats;
}

void BufferPool::reset_peak() {
  std::lock_guard<std::mutex> lock(state_->mu);
  state_->stats.peak_active_bytes = state_->stats.active_bytes;
  state_->stats.peak_total_bytes = state_->stats.active_bytes + state_->stats.wrapped_bytes;
}

const PoolConfig& BufferPool::config() const {
  // The reference stays valid; callers that race with set_config must synchronize themselves.
  return state_->config;
}

void BufferPool::set_config(const PoolConfig& c) {
  State::FreeList to_free;
  std::lock_guard<std::mutex> lock(state_->mu);
  State& s = *state_;
  s.config = c;
  while (!s.idle.empty() && s.stats.cached_bytes > s.config.max_cached_bytes) s.evict_oldest_locked(to_free);
  s.trim_locked(Clock::now(), to_free);
}

const std::shared_ptr<Device>& BufferPool::device() const { return device_; }

}  // namespace tmps
