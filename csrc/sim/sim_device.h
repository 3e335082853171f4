// The CPU simulator as a tmps::Device: MSL is translated to C++ (msl_to_cpp), compiled
// into a shared object against our metal_stdlib shim (sim_compiler), cached on disk
// (object_cache), loaded with dlopen, and dispatched by the fiber scheduler.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "device.h"
#include "scheduler.h"

namespace tmps::sim {

// How build_pipeline found its kernel libraries (for tests and diagnostics).
struct SimBuildStats {
  uint64_t compiled = 0;         // compiled because nothing usable was on disk
  uint64_t disk_hits = 0;        // verified .so on disk loaded without compiling
  uint64_t memory_hits = 0;      // library already loaded in this process
  uint64_t rejected_entries = 0; // on-disk entries that failed verification or loading
  uint64_t promoted = 0;         // -O0 kernels rebuilt at -O2 after running long (Tiering)
};

struct BuildCounters;

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
  std::shared_ptr<BuildCounters> counters_;  // shared with pipelines (their -O2 rebuilds)
};

}  // namespace tmps::sim
