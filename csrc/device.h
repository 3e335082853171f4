// The device interface shared by the Metal backend (macOS, metal-cpp) and the CPU simulator.
//
// Everything above this header (pool, pipeline cache, Launcher, Python bindings) is written
// once against it. A backend implements: raw shared-storage buffers, building a pipeline from
// MSL source, and executing a batch of encoded dispatches.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "errors.h"
#include "metal_limits.h"

namespace tmps {

struct DeviceInfo {
  std::string name;                     // "Apple M2 Max", "triton-mps simulator"
  uint64_t registry_id = 0;             // IORegistry id on macOS; 0 for the simulator
  std::string gpu_family;               // "apple7" .. "apple10"; the simulator reports "apple9"
  int generation = 0;                   // 1 for M1 (apple7) ... 5 for M5 (apple10)
  uint32_t max_threads_per_threadgroup = limits::kMaxThreadsPerThreadgroup;
  uint32_t max_threadgroup_memory = limits::kMaxThreadgroupMemory;  // bytes
  uint64_t recommended_working_set = 0;     // bytes
  bool unified_memory = true;
  uint32_t simd_width = limits::kSimdWidth;
  uint32_t max_buffer_bindings = limits::kMaxBufferBindings;
  uint64_t max_buffer_length = 0;
  bool is_simulator = false;
  bool is_emulated = false;          // the Metal backend on the emulated Metal runtime (Linux, csrc/metal_emu/)
  uint32_t cpu_threads = 0;          // the simulator: worker threads that run a dispatch; 0 on a GPU
  std::string msl_version = "3.2";  // newest Metal Shading Language the OS compiles ("3.1" on macOS 14)
};

// Metal's math modes. Triton semantics are not fast-math: Safe is our default.
enum class MathMode { Safe, Relaxed, Fast };

// Bounds checking of every device-memory access (simulator memcheck): on unless
// $TRITON_MPS_MEMCHECK is "0" (benchmarks). Throws InvalidArgument on another value.
bool memcheck_default();

struct CompileOptions {
  MathMode math_mode = MathMode::Safe;
  std::string language_version = "3.1";                     // MSL version asked of Metal
  std::vector<std::pair<std::string, std::string>> macros;  // preprocessor definitions
  bool strict_check = true;  // simulator: also compile with real address spaces (Metal's rules)
  bool memcheck = memcheck_default();  // simulator: check every access against its buffer
  std::string label;         // shows in diagnostics (e.g. the Triton kernel name)
  // The threadgroup size the kernel is dispatched with (num_warps * 32), 0 if unknown. Metal:
  // set on the pipeline descriptor so the compiler budgets registers for it; without it a
  // register-heavy kernel may get a lower maxTotalThreadsPerThreadgroup than it needs.
  uint32_t max_total_threads = 0;
  // A caller waits for this build (false: a background build, backend/prebuild.py). The
  // simulator runs a background build's compiler processes nicer than ours: they take idle
  // cores but yield to the thread compiling. Not part of key(): the pipeline is the same.
  bool waited_for = true;

  // Stable text form, part of the pipeline cache key.
  std::string key() const;
};

// A shared-storage (CPU and GPU visible) allocation owned by a backend.
class RawBuffer {
 public:
  virtual ~RawBuffer() = default;
  virtual void* contents() = 0;        // CPU address of byte 0
  virtual size_t length() const = 0;   // bytes
  virtual void* native_handle() = 0;   // MTL::Buffer* on Metal, contents() on the simulator
  // Where byte 0 of contents() lies inside native_handle()'s buffer (Metal: host memory is
  // wrapped from the start of its first page, so the caller's pointer can be page-unaligned).
  virtual uint64_t native_offset() const { return 0; }
};

// How a kernel parameter is bound, from the kernel's MSL signature.
struct ParamInfo {
  enum class Kind { Buffer, Threadgroup, Position };
  enum class Space { Device, Constant, Threadgroup, Thread };
  std::string name;
  std::string type;       // element/value type as written ("float", "Params")
  std::string attribute;  // "buffer(2)", "thread_position_in_grid"
  Kind kind = Kind::Buffer;
  Space space = Space::Device;
  uint32_t index = 0;       // binding index
  bool is_pointer = true;   // T* (array) vs T& / T (exactly one value)
  uint64_t type_size = 0;   // sizeof(T) when known (simulator), else 0
  uint32_t line = 0;        // MSL line
};

// A compute pipeline: one kernel function ready to dispatch.
class Pipeline {
 public:
  virtual ~Pipeline() = default;
  virtual const std::string& name() const = 0;
  virtual const std::vector<ParamInfo>& params() const = 0;
  virtual uint32_t max_total_threads_per_threadgroup() const = 0;
  virtual uint32_t thread_execution_width() const = 0;
  virtual uint32_t static_threadgroup_memory() const = 0;  // bytes known at build time (0 if unknown)
  virtual uint32_t source_line() const = 0;                // MSL line of the kernel (0 if unknown)
};

// One argument binding of a dispatch.
struct Binding {
  enum class Kind { Buffer, Bytes };
  Kind kind = Kind::Buffer;
  uint32_t index = 0;                 // [[buffer(index)]]
  std::shared_ptr<RawBuffer> buffer;  // Kind::Buffer: kept alive until the dispatch completed
  uint64_t offset = 0;                // byte offset into buffer
  std::vector<uint8_t> bytes;         // Kind::Bytes: inline constant data (setBytes)
};

struct Dispatch {
  std::shared_ptr<Pipeline> pipeline;
  std::vector<Binding> bindings;
  std::array<uint32_t, 3> threadgroups{1, 1, 1};       // grid size in threadgroups
  std::array<uint32_t, 3> threads_per_group{1, 1, 1};  // threadgroup size
  std::vector<std::pair<uint32_t, uint32_t>> threadgroup_memory;  // (index, bytes) for [[threadgroup(n)]]
};

// GPU start/end of one dispatch, filled when its batch completed (nanoseconds, device clock).
struct DispatchTiming {
  bool ready = false;
  double start_ns = 0;
  double end_ns = 0;
  std::string error;  // set if the batch holding this dispatch failed
  // What a counting backend measured for this dispatch (the simulator with counting on: bytes,
  // barriers, FLOPs...; name -> value); empty otherwise.
  std::vector<std::pair<std::string, double>> counters;
};

// A batch of dispatches that the backend executes in order (a command buffer on Metal).
class Batch {
 public:
  virtual ~Batch() = default;
  // Append a dispatch. `timing`, when given, is filled once the batch completed.
  virtual void encode(const Dispatch& d, std::shared_ptr<DispatchTiming> timing) = 0;
  virtual size_t size() const = 0;
  // Submit; returns at once on Metal. The simulator may execute here.
  virtual void commit() = 0;
  // Block until the batch completed. Throws DispatchError if any dispatch failed.
  virtual void wait() = 0;
};

class Device : public std::enable_shared_from_this<Device> {
 public:
  virtual ~Device() = default;
  virtual const DeviceInfo& info() const = 0;
  // A new shared-storage buffer of at least `bytes` (not pooled; the pool sits above this).
  // Throws OutOfMemory when the backend cannot allocate.
  virtual std::unique_ptr<RawBuffer> new_buffer(size_t bytes) = 0;
  // Wrap caller-owned host memory without copying (must outlive the wrapper).
  // Metal needs page-aligned address and length; throws InvalidArgument otherwise.
  virtual std::unique_ptr<RawBuffer> wrap_host_memory(void* ptr, size_t bytes) = 0;
  // Wrap a backend-native buffer handle (an MTL::Buffer*, e.g. a torch `mps` tensor's storage),
  // retaining it. Only the Metal backend has native handles.
  virtual std::unique_ptr<RawBuffer> wrap_native_buffer(void* handle) {
    throw InvalidArgument("device '" + info().name + "' has no native buffers to wrap (Metal only)");
  }
  // Compile MSL and build the pipeline for `entry`. No caching here: PipelineCache sits above.
  // Throws CompileError with the compiler's message (MSL line numbers) on bad source.
  virtual std::shared_ptr<Pipeline> build_pipeline(const std::string& source, const std::string& entry,
                                                   const CompileOptions& options) = 0;
  virtual std::unique_ptr<Batch> new_batch() = 0;
  // Why this device cannot run `pipeline` ("" when it can): another backend's pipeline, or one
  // built for another GPU. build_dispatch (launcher.cpp) refuses such a launch with it. The
  // default accepts every pipeline (the simulator's batches check their own).
  virtual std::string pipeline_mismatch(const Pipeline& pipeline) const { return ""; }
  // Stable identity for cache keys ("sim:<abi>:<compiler>", "metal:<registry id>:<os build>").
  virtual std::string cache_identity() const = 0;
};

// Devices available in this process: Metal devices first (macOS), then the simulator.
std::vector<std::shared_ptr<Device>> enumerate_devices();
// The simulator device (always available).
std::shared_ptr<Device> simulator_device();

// Implemented by the backends.
std::shared_ptr<Device> make_sim_device();
std::vector<std::shared_ptr<Device>> enumerate_metal_devices();  // empty off macOS

}  // namespace tmps
