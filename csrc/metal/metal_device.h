// The Metal backend (macOS only): tmps::Device on top of metal-cpp.
//
// Ownership: every Objective-C object is held by NS::SharedPtr (Ref<T> below). Methods whose
// names start with new/alloc/copy hand back +1 references (NS::TransferPtr); everything else
// is autoreleased (NS::RetainPtr when we keep it, and a local AutoreleasePool around every
// entry point, because a Python process has no run loop draining one for us).
//
// Compiled only on Apple platforms (CMakeLists.txt) and, for a compile/link check, on Linux by
// tools/macos_check.py. Exactly one TU (metal_impl.cpp) defines the metal-cpp
// *_PRIVATE_IMPLEMENTATION macros.
#pragma once

#include <Foundation/Foundation.hpp>
#include <Metal/Metal.hpp>

#include <condition_variable>
#include <cstdint>
#include <memory>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "device.h"
#include "sim/memcheck.h"  // SourceOrigins: MSL line -> Triton source line

namespace tmps {
namespace metal {

template <class T>
using Ref = NS::SharedPtr<T>;

class PipelineArchive;  // the binary-archive disk cache of pipelines: pipeline_archive.h

// Conversions shared by the Metal TUs (metal_device.cpp, pipeline_archive.cpp).
NS::String* ns_string(const std::string& s);  // autoreleased
std::string to_string(const NS::String* s);   // "" for null
std::string describe(const NS::Error* error);  // Metal's message, or that it gave none

// Drains the objects Metal autoreleased during a scope.
class AutoreleasePool {
 public:
  AutoreleasePool();
  AutoreleasePool(const AutoreleasePool&) = delete;
  AutoreleasePool& operator=(const AutoreleasePool&) = delete;

 private:
  Ref<NS::AutoreleasePool> pool_;
};

// An MTL::Buffer, or the range [base, base + length) of one (host memory wrapped page-rounded).
class MetalBuffer final : public RawBuffer {
 public:
  explicit MetalBuffer(Ref<MTL::Buffer> buffer);
  MetalBuffer(Ref<MTL::Buffer> buffer, size_t base, size_t length);
  // A view of a shared no-copy wrap of host pages (MetalDevice::wrap_host_memory): `wrap`
  // holds the MTLBuffer and stays alive while any view of it does.
  MetalBuffer(std::shared_ptr<const Ref<MTL::Buffer>> wrap, size_t base, size_t length);
  void* contents() override;  // NULL for private (GPU-only) storage
  size_t length() const override;
  void* native_handle() override;  // MTL::Buffer*
  uint64_t native_offset() const override { return base_; }

 private:
  Ref<MTL::Buffer> buffer_;
  std::shared_ptr<const Ref<MTL::Buffer>> wrap_;  // set for shared host wraps
  size_t base_ = 0;
  size_t length_;
};

class MetalPipeline final : public Pipeline {
 public:
  MetalPipeline(std::string name, std::vector<ParamInfo> params, uint32_t line, Ref<MTL::ComputePipelineState> state,
                std::shared_ptr<const sim::SourceOrigins> origins = nullptr);
  const std::string& name() const override { return name_; }
  const std::vector<ParamInfo>& params() const override { return params_; }
  uint32_t max_total_threads_per_threadgroup() const override { return max_threads_; }
  uint32_t thread_execution_width() const override { return execution_width_; }
  uint32_t static_threadgroup_memory() const override { return static_threadgroup_memory_; }
  uint32_t source_line() const override { return line_; }
  MTL::ComputePipelineState* state() const { return state_.get(); }
  // Shader validation mode: the Triton lines behind the MSL (null otherwise).
  const sim::SourceOrigins* origins() const { return origins_.get(); }

 private:
  std::string name_;
  std::vector<ParamInfo> params_;
  uint32_t line_;
  Ref<MTL::ComputePipelineState> state_;
  uint32_t max_threads_;
  uint32_t execution_width_;
  uint32_t static_threadgroup_memory_;
  std::shared_ptr<const sim::SourceOrigins> origins_;
};

// Counter sample buffers are costly to create and Metal limits how many may exist: the device
// keeps free ones, and a batch borrows them until its timings were read.
class SampleBufferPool {
 public:
  static constexpr NS::UInteger kSamplesPerBuffer = 64;  // 32 timed dispatches per buffer
  SampleBufferPool(Ref<MTL::Device> device, Ref<MTL::CounterSet> set);
  Ref<MTL::CounterSampleBuffer> acquire();  // null if Metal could not make one
  void give_back(std::vector<Ref<MTL::CounterSampleBuffer>> buffers);

 private:
  std::mutex mu_;
  Ref<MTL::Device> device_;
  Ref<MTL::CounterSet> set_;
  std::vector<Ref<MTL::CounterSampleBuffer>> free_;
};

// How dispatches are timed on this device (see MetalBatch).
struct TimerSupport {
  Ref<MTL::CounterSet> timestamps;  // set: stage-boundary counter sampling; null: command-buffer times
  std::shared_ptr<SampleBufferPool> samples;  // set with `timestamps`
};

class MetalDevice final : public Device {
 public:
  explicit MetalDevice(Ref<MTL::Device> device);
  ~MetalDevice() override;  // in metal_device.cpp, where PipelineArchive is complete
  const DeviceInfo& info() const override { return info_; }
  std::unique_ptr<RawBuffer> new_buffer(size_t bytes) override;
  std::unique_ptr<RawBuffer> wrap_host_memory(void* ptr, size_t bytes) override;
  std::unique_ptr<RawBuffer> wrap_native_buffer(void* handle) override;
  std::shared_ptr<Pipeline> build_pipeline(const std::string& source, const std::string& entry,
                                           const CompileOptions& options) override;
  std::unique_ptr<Batch> new_batch() override;
  std::string pipeline_mismatch(const Pipeline& pipeline) const override;
  std::string cache_identity() const override { return identity_; }

  MTL::Device* mtl() const { return device_.get(); }
  bool shader_validation() const { return validation_; }

 private:
  Ref<MTL::Device> device_;
  Ref<MTL::CommandQueue> queue_;
  DeviceInfo info_;
  std::string identity_;
  bool validation_ = false;  // Metal's shader validation is on in this process
  TimerSupport timer_;
  std::unique_ptr<PipelineArchive> archive_;  // pipeline_archive.h
  // No-copy wraps of host pages in use, by page range: launches in flight that bind the same
  // host memory share one MTLBuffer, so Metal's hazard tracking orders them (two MTLBuffers
  // over the same pages are unrelated resources to Metal).
  std::mutex wraps_mu_;
  std::map<std::pair<uintptr_t, uintptr_t>, std::weak_ptr<const Ref<MTL::Buffer>>> host_wraps_;
};

// Metal's rules for one dispatch on `device` (pipeline, thread count, bindings, threadgroup
// memory), asserted: Launcher::build_dispatch validated the dispatch for the user, so a violation
// here is a bug (an internal error). Shared by MetalBatch and the PyTorch MPS stream
// (torch_stream.cpp).
void validate_dispatch(MTL::Device* device, const DeviceInfo& info, const Dispatch& d);
// Sets the pipeline, bindings and threadgroup memory of `d` on `enc` and dispatches it. Inline
// bytes over Metal's 4 KiB setBytes limit go through a new buffer appended to `scratch_buffers`
// (keep it until the dispatch completed).
void encode_dispatch(MTL::Device* device, MTL::ComputeCommandEncoder* enc, const Dispatch& d,
                     std::vector<Ref<MTL::Buffer>>& scratch_buffers);

// State shared between a batch and the completion handlers of its command buffers. Holds every
// resource the GPU uses until the last command buffer completed (command buffers are created
// with unretained references: retaining here is cheaper than Metal retaining per setBuffer).
struct BatchState {
  struct Timed {
    std::shared_ptr<DispatchTiming> timing;
    Ref<MTL::CounterSampleBuffer> samples;  // counter mode: samples [index, index + 1]
    NS::UInteger index = 0;
    size_t command_buffer = 0;  // fallback mode: the dispatch's own command buffer
  };
  struct GpuTimes {
    double start_s = 0;
    double end_s = 0;
  };

  std::mutex mu;
  std::condition_variable done_cv;
  bool done = false;
  size_t pending = 0;  // committed command buffers whose completion handler has not run
  std::string error;
  std::vector<std::shared_ptr<RawBuffer>> buffers;
  std::vector<std::shared_ptr<Pipeline>> pipelines;
  std::vector<Ref<MTL::Buffer>> scratch;  // setBytes data over Metal's 4 KiB limit
  std::vector<Timed> timed;
  std::vector<GpuTimes> gpu_times;  // per command buffer
  std::vector<Ref<MTL::CounterSampleBuffer>> sample_buffers;  // borrowed from sample_pool
  std::shared_ptr<SampleBufferPool> sample_pool;
  Ref<MTL::Device> device;
  MTL::Timestamp cpu0 = 0, gpu0 = 0;  // clock correlation sampled at commit
  bool validation = false;  // shader validation: command buffers' logs are read at completion

  void on_completed(size_t index, MTL::CommandBuffer* cb);  // completion handler body

 private:
  void finish();  // last command buffer completed: fill timings, drop resources (mu held)
};

// One batch = command buffers on the device's queue, executed in order. Untimed dispatches share
// one open compute encoder. A timed dispatch gets its own compute pass whose descriptor samples
// GPU timestamps at the start and end of the pass (stage-boundary sampling, what Apple GPUs
// support); the ticks are converted to CPU nanoseconds with sampleTimestamps() taken at commit
// and at completion. On a device without stage-boundary sampling the timed dispatch gets its own
// command buffer and its time is that command buffer's GPUStartTime..GPUEndTime, which includes
// the command buffer's own start-up on the GPU (a few µs): an upper bound, not the kernel alone.
class MetalBatch final : public Batch {
 public:
  MetalBatch(Ref<MTL::Device> device, Ref<MTL::CommandQueue> queue, TimerSupport timer, const DeviceInfo& info,
             bool validation = false);
  ~MetalBatch() override;
  void encode(const Dispatch& d, std::shared_ptr<DispatchTiming> timing) override;
  size_t size() const override { return size_; }
  void commit() override;
  void wait() override;

 private:
  MTL::CommandBuffer* current_command_buffer();  // opens a new one when none is open
  void close_command_buffer();                    // ends the open encoder; next encode starts a new buffer
  void end_encoder();
  void encode_into(MTL::ComputeCommandEncoder* enc, const Dispatch& d);
  void validate(const Dispatch& d) const;
  // A free pair of samples in a counter sample buffer; false if Metal could not make one.
  bool reserve_samples(Ref<MTL::CounterSampleBuffer>& buffer, NS::UInteger& index);

  Ref<MTL::Device> device_;
  Ref<MTL::CommandQueue> queue_;
  TimerSupport timer_;
  DeviceInfo info_;
  std::shared_ptr<BatchState> state_;
  std::vector<Ref<MTL::CommandBuffer>> command_buffers_;
  bool command_buffer_open_ = false;
  Ref<MTL::ComputeCommandEncoder> encoder_;  // the open untimed encoder, if any
  Ref<MTL::CounterSampleBuffer> samples_;    // current sample buffer for timed passes
  NS::UInteger samples_used_ = 0;
  size_t size_ = 0;
  bool committed_ = false;
  bool validation_ = false;  // each dispatch in its own encoder labelled with the kernel's name
};

// Shader validation (TRITON_MPS_METAL_VALIDATION=1): sets MTL_SHADER_VALIDATION=1 and
// MTL_DEBUG_LAYER=1 unless the user set them; Metal reads them when the process creates its
// first device, so this runs before device discovery. True if shader validation is then on.
bool enable_shader_validation();
// A DispatchError message from a command buffer's shader validation logs ("" when it has none):
// kernel, Metal's description, MSL line and, through `pipelines`, the Triton line.
std::string validation_report(MTL::CommandBuffer* cb, const std::vector<std::shared_ptr<Pipeline>>& pipelines);

}  // namespace metal
}  // namespace tmps
