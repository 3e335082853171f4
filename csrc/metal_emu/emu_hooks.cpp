// Test hooks: see emu_hooks.h.
#include "metal_emu/emu_hooks.h"

#include <Metal/Metal.hpp>

#include <mutex>
#include <stdexcept>

#include "metal_emu/metal_objects.h"
#include "metal_emu/objc_runtime.h"

extern "C" MTL::Device* MTLCreateSystemDefaultDevice();

// PyTorch's MPS stream singleton, by the mangled name libtorch_cpu exports it under
// (_ZN2at3mps13MPSStreamImpl7_streamE; the real member is an MPSStream*): set when the fake
// PyTorch below makes its stream, as getDefaultMPSStream() sets the real one. csrc/metal/
// fork_check.cpp reads it before a fork to tell that the process used Metal through PyTorch.
namespace at::mps {
struct MPSStreamImpl {
  static void* _stream;
};
void* MPSStreamImpl::_stream = nullptr;
}  // namespace at::mps

namespace tmps::emu {

std::map<std::string, long> hook_stats() {
  EmuCounters c = emu_counters();
  ObjectStats o = object_stats();
  long live = 0;
  for (const auto& [name, n] : o.live) live += n;
  return {{"command_buffers_committed", c.command_buffers_committed},
          {"dispatches", c.dispatches},
          {"counter_sample_buffers", c.counter_sample_buffers},
          {"archive_serializations", c.archive_serializations},
          {"archive_compiles", c.archive_compiles},
          {"no_copy_buffers", c.no_copy_buffers},
          {"pipelines_built", c.pipelines_built},
          {"pipelines_from_archive", c.pipelines_from_archive},
          {"command_buffers_with_error_options", c.command_buffers_with_error_options},
          {"libraries_safe_math", c.libraries_safe_math},
          {"libraries_relaxed_math", c.libraries_relaxed_math},
          {"libraries_fast_math", c.libraries_fast_math},
          {"objects_allocated", o.allocated},
          {"objects_deallocated", o.deallocated},
          {"objects_live", live},
          {"autorelease_without_pool", o.autorelease_without_pool}};
}

std::map<std::string, long> hook_live_objects() { return object_stats().live; }
std::vector<std::string> hook_violations() { return violations(); }
void hook_clear_violations() { clear_violations(); }
void hook_set_unhinted_thread_limit(uint32_t limit) { set_unhinted_thread_limit(limit); }
void hook_set_hinted_thread_limit(uint32_t limit) { set_hinted_thread_limit(limit); }
void hook_fail_timestamps(bool fail) { fail_timestamps(fail); }
int hook_gpu_family(const std::string& chip) { return emulated_gpu_family(chip); }
void hook_hold_queues(bool hold) { hold_queues(hold); }

uintptr_t hook_new_buffer(uint64_t bytes, bool private_storage) {
  MTL::Device* device = MTLCreateSystemDefaultDevice();
  auto options = private_storage ? MTL::ResourceStorageModePrivate : MTL::ResourceStorageModeShared;
  MTL::Buffer* b = device->newBuffer(bytes, options);
  device->release();
  return reinterpret_cast<uintptr_t>(b);
}

uintptr_t hook_new_foreign_buffer(uint64_t bytes) {
  static id other = new_emulated_device("Apple M1 (emulated, second GPU)", 0x200000002ull);  // lives forever
  auto* device = reinterpret_cast<MTL::Device*>(other);
  return reinterpret_cast<uintptr_t>(device->newBuffer(bytes, MTL::ResourceStorageModeShared));
}

namespace {

// PyTorch's MPSStream (aten/src/ATen/mps/MPSStream.mm, MPSHooks.mm, torch/csrc/api/src/mps.cpp) as
// far as our code meets it; RULES.md "PyTorch's MPS stream" lists what is modelled and the sources.
constexpr const char* kOpSource = R"(#include <metal_stdlib>
using namespace metal;
kernel void fake_torch_axpb(device float* x [[buffer(0)]], constant uint& n [[buffer(1)]],
                            constant float2& ab [[buffer(2)]], uint i [[thread_position_in_grid]]) {
  if (i < n) x[i] = x[i] * ab.x + ab.y;
}
)";

thread_local bool t_on_queue = false;  // this thread runs a block on the fake serial queue

struct FakeTorch {
  std::mutex queue;  // the serial dispatch queue (one block at a time)
  std::mutex mu;     // the state below
  int minor = 8;     // torch 2.<minor>: from 9 on get_command_buffer ends the coalesced encoder
  MTL::CommandQueue* command_queue = nullptr;  // +1, lives forever
  MTL::ComputePipelineState* axpb = nullptr;   // +1, built on first use
  MTL::CommandBuffer* current = nullptr;       // +1: the command buffer being recorded
  MTL::ComputeCommandEncoder* encoder = nullptr;  // +1: the coalesced encoder left open by ops
  std::vector<MTL::CommandBuffer*> committed;  // +1 each, not yet waited for
  std::vector<std::string> events;

  MTL::CommandBuffer* current_locked() {
    if (!current) {
      NS::AutoreleasePool* pool = NS::AutoreleasePool::alloc()->init();
      current = command_queue->commandBuffer()->retain();
      pool->release();
    }
    return current;
  }
  // MPSStream::commandEncoder(): one compute encoder kept open across native ops.
  MTL::ComputeCommandEncoder* encoder_locked() {
    if (!encoder) {
      NS::AutoreleasePool* pool = NS::AutoreleasePool::alloc()->init();
      MTL::ComputeCommandEncoder* e = current_locked()->computeCommandEncoder();
      encoder = e ? e->retain() : nullptr;
      pool->release();
    }
    return encoder;
  }
  // MPSStream::endKernelCoalescing().
  void end_coalescing_locked() {
    if (!encoder) return;
    encoder->endEncoding();
    encoder->release();
    encoder = nullptr;
  }
  // MPSStream::synchronize(COMMIT): ends the encoder, then commitAndContinue (the committed
  // command buffer is replaced by a fresh one on next use).
  void commit_locked() {
    end_coalescing_locked();
    if (!current) return;
    current->commit();
    committed.push_back(current);
    current = nullptr;
  }
  MTL::ComputePipelineState* axpb_locked() {
    if (axpb) return axpb;
    NS::AutoreleasePool* pool = NS::AutoreleasePool::alloc()->init();
    MTL::Device* device = MTLCreateSystemDefaultDevice();
    MTL::CompileOptions* options = MTL::CompileOptions::alloc()->init();
    NS::Error* error = nullptr;
    MTL::Library* library = device->newLibrary(NS::String::string(kOpSource, NS::UTF8StringEncoding), options, &error);
    options->release();
    if (!library) {
      device->release();
      pool->release();
      throw std::runtime_error("fake torch: the op kernel did not compile");
    }
    MTL::Function* fn = library->newFunction(NS::String::string("fake_torch_axpb", NS::UTF8StringEncoding));
    MTL::ComputePipelineDescriptor* desc = MTL::ComputePipelineDescriptor::alloc()->init();
    desc->setComputeFunction(fn);
    axpb = device->newComputePipelineState(desc, MTL::PipelineOptionNone, nullptr, &error);
    desc->release();
    fn->release();
    library->release();
    device->release();
    pool->release();
    if (!axpb) throw std::runtime_error("fake torch: the op pipeline was not built");
    return axpb;
  }
};

FakeTorch& fake_torch() {
  static FakeTorch* f = [] {
    auto* t = new FakeTorch();  // lives forever, like PyTorch's stream
    MTL::Device* device = MTLCreateSystemDefaultDevice();
    t->command_queue = device->newCommandQueue();
    device->release();
    at::mps::MPSStreamImpl::_stream = t;  // MPSStreamImpl::getInstance()
    return t;
  }();
  return *f;
}

// PyTorch requires these on its dispatch queue (PR #164093: get_command_buffer "should be
// called with dispatch_queue held"; MPSStream's encoder state is only touched on the queue).
void require_queue(const char* call) {
  if (!t_on_queue) note_violation(std::string(call) + " called off PyTorch's serial dispatch queue");
}

void* fake_get_command_buffer() {
  require_queue("torch::mps::get_command_buffer()");
  FakeTorch& t = fake_torch();
  std::lock_guard<std::mutex> lock(t.mu);
  t.events.push_back("get_command_buffer");
  if (t.minor >= 9) t.end_coalescing_locked();  // MPSHooks::getCommandBuffer from torch 2.9.0 on
  return t.current_locked();
}

void* fake_get_dispatch_queue() { return &fake_torch().queue; }

void* fake_default_stream() { return &fake_torch(); }

void fake_end_kernel_coalescing(void* stream) {
  require_queue("at::mps::MPSStream::endKernelCoalescing()");
  FakeTorch& t = fake_torch();
  if (stream != &t) violation("endKernelCoalescing called on something that is not PyTorch's MPSStream");
  std::lock_guard<std::mutex> lock(t.mu);
  t.events.push_back("endKernelCoalescing");
  t.end_coalescing_locked();
}

// torch::mps::commit() -> MPSHooks::commitStream() -> synchronize(SyncType::COMMIT).
void fake_commit() {
  FakeTorch& t = fake_torch();
  std::lock_guard<std::mutex> lock(t.mu);
  t.events.push_back("commit");
  t.commit_locked();
}

// torch::mps::synchronize() -> synchronize(SyncType::COMMIT_AND_WAIT); torch.mps.synchronize()
// calls it with the GIL held (a caller from Python keeps holding it here).
void fake_synchronize() {
  FakeTorch& t = fake_torch();
  std::vector<MTL::CommandBuffer*> wait;
  {
    std::lock_guard<std::mutex> lock(t.mu);
    t.events.push_back("synchronize");
    t.commit_locked();
    wait.swap(t.committed);
  }
  for (MTL::CommandBuffer* cb : wait) {
    cb->waitUntilCompleted();
    cb->release();
  }
}

// dispatch_sync_f onto a serial queue. From a block already on that queue libdispatch
// deadlocks; here that is a violation.
void fake_dispatch_sync_f(void* queue, void* context, void (*work)(void*)) {
  FakeTorch& t = fake_torch();
  {
    std::lock_guard<std::mutex> lock(t.mu);
    t.events.push_back(queue == &t.queue ? "queue" : "queue (unknown)");
  }
  if (t_on_queue) violation("dispatch_sync onto PyTorch's serial queue from a block already on it (a deadlock)");
  std::lock_guard<std::mutex> serial(*static_cast<std::mutex*>(queue));
  t_on_queue = true;
  struct Leave {
    ~Leave() { t_on_queue = false; }
  } leave;
  work(context);
}

}  // namespace

TorchMpsApi hook_fake_torch_api() {
  fake_torch();
  TorchMpsApi api;
  api.get_command_buffer = &fake_get_command_buffer;
  api.get_dispatch_queue = &fake_get_dispatch_queue;
  api.commit = &fake_commit;
  api.synchronize = &fake_synchronize;
  api.dispatch_sync_f = &fake_dispatch_sync_f;
  api.get_default_stream = &fake_default_stream;
  api.end_kernel_coalescing = &fake_end_kernel_coalescing;
  return api;
}

void hook_fake_torch_set_version(int minor) {
  FakeTorch& t = fake_torch();
  std::lock_guard<std::mutex> lock(t.mu);
  t.minor = minor;
}

std::vector<std::string> hook_fake_torch_events(bool clear) {
  FakeTorch& t = fake_torch();
  std::lock_guard<std::mutex> lock(t.mu);
  std::vector<std::string> out = t.events;
  if (clear) t.events.clear();
  return out;
}

void hook_fake_torch_op(const std::string& label, uintptr_t buffer, uint64_t offset, uint32_t count, float mul,
                        float add) {
  FakeTorch& t = fake_torch();
  std::lock_guard<std::mutex> serial(t.queue);  // a native op encodes on PyTorch's queue
  std::lock_guard<std::mutex> lock(t.mu);
  t.events.push_back("op " + label);
  NS::AutoreleasePool* pool = NS::AutoreleasePool::alloc()->init();
  try {
    MTL::ComputeCommandEncoder* enc = t.encoder_locked();  // left open: kernel coalescing
    if (enc && buffer && count) {
      enc->setComputePipelineState(t.axpb_locked());
      enc->setBuffer(reinterpret_cast<MTL::Buffer*>(buffer), offset, 0);
      enc->setBytes(&count, sizeof(count), 1);
      const float ab[2] = {mul, add};
      enc->setBytes(ab, sizeof(ab), 2);
      enc->dispatchThreadgroups(MTL::Size((count + 63) / 64, 1, 1), MTL::Size(64, 1, 1));
    }
  } catch (...) {
    pool->release();
    throw;
  }
  pool->release();
}

void hook_fake_torch_synchronize() { fake_synchronize(); }

void hook_release(uintptr_t object) { from_id(reinterpret_cast<void*>(object))->release(); }

uintptr_t hook_buffer_memory(uintptr_t buffer) { return reinterpret_cast<uintptr_t>(emu_buffer_memory(reinterpret_cast<void*>(buffer))); }

}  // namespace tmps::emu

namespace tmps::emu {
namespace {

// One misuse of the Metal API per name, done through metal-cpp exactly as our code would.
void misuse(const std::string& name) {
  MTL::Device* device = MTLCreateSystemDefaultDevice();
  NS::AutoreleasePool* pool = NS::AutoreleasePool::alloc()->init();
  MTL::CommandQueue* queue = device->newCommandQueue();
  MTL::Buffer* buffer = device->newBuffer(256, MTL::ResourceStorageModeShared);
  auto cleanup = [&] {
    buffer->release();
    queue->release();
    pool->release();
    device->release();
  };
  try {
    if (name == "encode_after_commit") {
      MTL::CommandBuffer* cb = queue->commandBuffer();
      cb->commit();
      cb->computeCommandEncoder();
    } else if (name == "two_open_encoders") {
      MTL::CommandBuffer* cb = queue->commandBuffer();
      cb->computeCommandEncoder();
      cb->computeCommandEncoder();
    } else if (name == "commit_with_open_encoder") {
      MTL::CommandBuffer* cb = queue->commandBuffer();
      cb->computeCommandEncoder();
      cb->commit();
    } else if (name == "commit_twice") {
      MTL::CommandBuffer* cb = queue->commandBuffer();
      cb->commit();
      cb->commit();
    } else if (name == "handler_after_commit") {
      MTL::CommandBuffer* cb = queue->commandBuffer();
      cb->commit();
      cb->addCompletedHandler([](MTL::CommandBuffer*) {});
    } else if (name == "offset_equal_to_length") {
      MTL::CommandBuffer* cb = queue->commandBuffer();
      MTL::ComputeCommandEncoder* enc = cb->computeCommandEncoder();
      enc->setBuffer(buffer, 256, 0);
    } else if (name == "misaligned_offset") {
      NS::Error* error = nullptr;
      const char* msl = "kernel void k(device float* y [[buffer(0)]]) { y[0] = 1.0f; }";
      MTL::Library* lib = device->newLibrary(NS::String::string(msl, NS::UTF8StringEncoding), nullptr, &error);
      MTL::Function* fn = lib->newFunction(NS::String::string("k", NS::UTF8StringEncoding));
      MTL::ComputePipelineDescriptor* desc = MTL::ComputePipelineDescriptor::alloc()->init();
      desc->setComputeFunction(fn);
      MTL::ComputePipelineState* state =
          device->newComputePipelineState(desc, MTL::PipelineOptionNone, nullptr, &error);
      desc->release();
      fn->release();
      lib->release();
      MTL::CommandBuffer* cb = queue->commandBuffer();
      MTL::ComputeCommandEncoder* enc = cb->computeCommandEncoder();
      enc->setComputePipelineState(state);
      state->release();
      enc->setBuffer(buffer, 2, 0);  // a float* two bytes into the buffer
      enc->dispatchThreadgroups(MTL::Size(1, 1, 1), MTL::Size(1, 1, 1));
    } else if (name == "unaligned_no_copy") {
      alignas(64) static char memory[64];
      device->newBuffer(memory, 64, MTL::ResourceStorageModeShared, nullptr);
    } else if (name == "threadgroup_memory_not_16") {
      MTL::CommandBuffer* cb = queue->commandBuffer();
      MTL::ComputeCommandEncoder* enc = cb->computeCommandEncoder();
      enc->setThreadgroupMemoryLength(24, 0);
    } else if (name == "threadgroup_memory_over_32k") {
      MTL::CommandBuffer* cb = queue->commandBuffer();
      MTL::ComputeCommandEncoder* enc = cb->computeCommandEncoder();
      enc->setThreadgroupMemoryLength(32768 + 16, 0);
    } else if (name == "over_release") {
      MTL::Buffer* b = device->newBuffer(16, MTL::ResourceStorageModeShared);
      b->release();
      b->release();
    } else if (name == "message_to_released") {
      MTL::Buffer* b = device->newBuffer(16, MTL::ResourceStorageModeShared);
      b->release();
      b->length();
    } else if (name == "private_contents") {
      MTL::Buffer* b = device->newBuffer(16, MTL::ResourceStorageModePrivate);
      void* p = b->contents();
      b->release();
      if (p) violation("contents() of a private buffer was not NULL");
      cleanup();
      return;
    } else {
      cleanup();
      throw std::invalid_argument("unknown misuse '" + name + "'");
    }
  } catch (...) {
    cleanup();
    throw;
  }
  cleanup();
}

}  // namespace

std::string hook_misuse(const std::string& name) {
  try {
    misuse(name);
  } catch (const ValidationError& e) {
    return e.what();
  }
  return "";
}

}  // namespace tmps::emu
