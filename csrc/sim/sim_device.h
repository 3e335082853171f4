// The CPU simulator as a tmps::Device: MSL is translated to C++ (msl_scanner), compiled
// into a shared object against our metal_stdlib shim (sim_compiler), cached on disk
// (object_cache), loaded with dlopen, and dispatched by the fiber scheduler.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "core/device.h"
#include "scheduler.h"

namespace tmps::sim {

// How build_pipeline found its kernel library (for tests and diagnostics).
struct SimBuildStats {
  uint64_t compiled = 0;         // compiled because nothing usable was on disk
  uint64_t disk_hits = 0;        // verified .so on disk loaded without compiling
  uint64_t memory_hits = 0;      // library already loaded in this process
  uint64_t rejected_entries = 0; // on-disk entries that failed verification or loading
};

class SimDevice : public Device {
 public:
  SimDevice();
  ~SimDevice() override;

  const DeviceInfo& info() const override { return info_; }
  std::unique_ptr<RawBuffer> new_buffer(size_t bytes) override;
  std::unique_ptr<RawBuffer> wrap_host_memory(void* ptr, size_t bytes) override;
  std::shared_ptr<Pipeline> build_pipeline(const std::string& source, const std::string& entry,
                                           const CompileOptions& options) override;
  std::unique_ptr<Batch> new_batch() override;
  std::string cache_identity() const override;

  SimBuildStats build_stats() const;

 private:
  DeviceInfo info_;
  std::shared_ptr<Scheduler> scheduler_;  // shared with batches, which may outlive the device
  std::atomic<uint64_t> compiled_{0}, disk_hits_{0}, memory_hits_{0}, rejected_{0};
};

}  // namespace tmps::sim
