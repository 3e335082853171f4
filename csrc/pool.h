// Buffer pool: unified-memory buffers from size classes with reuse (see pool.cpp for policy).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>

#include "device.h"

namespace tmps {

struct PoolStats {
  uint64_t active_bytes = 0;      // bytes in buffers handed out and not yet returned
  uint64_t peak_active_bytes = 0;
  uint64_t cached_bytes = 0;      // bytes in idle buffers kept for reuse
  uint64_t num_allocations = 0;   // allocations from the device (misses that allocated)
  uint64_t hits = 0;              // requests served from the cache
  uint64_t misses = 0;            // requests that needed a new device allocation
  uint64_t num_cached_buffers = 0;
  uint64_t num_returned = 0;      // handed-out buffers released by their last user
  // Memory the runtime wraps without allocating it (numpy arrays, torch tensors, ... bound to a
  // launch): counted here so that one place sees every buffer, never cached or freed by the pool.
  uint64_t wrapped_bytes = 0;     // bytes in live wrappers
  uint64_t num_wrapped = 0;       // live wrappers
  uint64_t num_wraps = 0;         // wrappers made
  uint64_t num_unwraps = 0;       // wrappers released
  uint64_t peak_total_bytes = 0;  // peak of active_bytes + wrapped_bytes
};

struct PoolConfig {
  uint64_t max_cached_bytes = 1ull << 30;  // MPS_MAX_POOL_SIZE
  uint64_t max_buffer_age_ms = 60000;      // MPS_MAX_BUFFER_AGE
  // Read MPS_MAX_POOL_SIZE (bytes; suffixes K/M/G accepted) and MPS_MAX_BUFFER_AGE (ms).
  // Throws InvalidArgument on a malformed value.
  static PoolConfig from_env();
};

// Size class of a request: what the pool actually allocates for `bytes`.
size_t pool_size_class(size_t bytes);

class BufferPool : public std::enable_shared_from_this<BufferPool> {
 public:
  using Clock = std::chrono::steady_clock;
  BufferPool(std::shared_ptr<Device> device, PoolConfig config);
  ~BufferPool();

  // A buffer for `bytes`: its length() is exactly `bytes` (a view of the class-sized device
  // buffer, so the launcher's size checks are exact). When the last reference drops it returns to the cache
  // (if the pool is still alive and the cache has room), else it is freed.
  // On allocation failure: release the cache and retry once, then throw OutOfMemory.
  std::shared_ptr<RawBuffer> allocate(size_t bytes);

  // Counts `bytes` of caller-owned memory the runtime wrapped (see PoolStats::wrapped_bytes)
  // until the returned token is destroyed; the token may outlive the pool.
  std::shared_ptr<void> track_wrapped(size_t bytes);

  void empty_cache();                  // free every idle buffer
  void release_cached(uint64_t bytes); // free idle buffers (oldest first) until `bytes` freed
  void trim();                         // free idle buffers older than max age
  PoolStats stats() const;
  void reset_peak();
  const PoolConfig& config() const;
  void set_config(const PoolConfig& c);  // applies caps at once
  const std::shared_ptr<Device>& device() const;

 private:
  struct State;
  std::shared_ptr<State> state_;  // shared with returned buffers' deleters
  std::shared_ptr<Device> device_;
};

}  // namespace tmps
