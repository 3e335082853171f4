// PyTorch's MPS stream as a ForeignStream (csrc/foreign_stream.h): our dispatches are encoded
// into the command buffer PyTorch is recording, on PyTorch's serial dispatch queue:
//
//   dispatch_sync(get_dispatch_queue(), ^{
//     stream->endKernelCoalescing();          // PyTorch's ops leave their compute encoder open
//     cb = get_command_buffer();              // PyTorch requires its queue held for this
//     enc = [cb computeCommandEncoder]; ...; [enc endEncoding];
//   });
//
// Since torch 2.1 native ops (torch.sin, indexing, ...) encode into one compute encoder that
// MPSStream keeps open across ops; get_command_buffer() ends it only from torch 2.9 on (PyTorch
// PR #164093: 2.9.0's MPSHooks::getCommandBuffer calls endKernelCoalescing, 2.8.0's does not). A
// second encoder on that command buffer is Metal's assertion "A command encoder is already
// encoding to this command buffer" (an abort). So the encoder is always ended first,
// on the queue: with MPSStream::endKernelCoalescing() when libtorch exports it (every torch we
// accept does), else with torch::mps::commit() (which ends it too, then commits). No torch
// version has to be detected: ending an encoder that is not open does nothing.
//
// Nothing waits: the dispatch runs when PyTorch commits that command buffer (its own schedule,
// our commit() every few launches, torch.mps.synchronize(), or a host read). A completion
// handler on the command buffer keeps our buffers and tensors alive until then and fills the
// dispatch's timing: the command buffer's GPU start/end (LaunchRouter commits a timed dispatch
// alone, so that is the dispatch plus the command buffer's start-up: an upper bound). It runs
// on a Metal thread and never runs Python: tensors it lets go are dropped on a Python thread
// (release_owner, csrc/python/py_context.h), since torch.mps.synchronize() waits for it with
// the GIL held.
//
// The API comes as function pointers (TorchMpsApi): resolved from the loaded libtorch at run
// time, or a fake for the emulated Metal device's tests (csrc/metal_emu/emu_hooks.cpp).
#include <condition_variable>
#include <exception>
#include <mutex>

#include "foreign_stream.h"
#include "metal/metal_device.h"

namespace tmps {
namespace metal {
namespace {

// What completion handlers report back; shared with every handler in flight.
struct Completions {
  std::mutex mu;
  std::condition_variable cv;
  size_t outstanding = 0;  // handlers registered and not yet run
  std::string error;       // first failed command buffer holding one of our dispatches
};

// Everything a dispatch needs until it completed.
struct Held {
  std::shared_ptr<Pipeline> pipeline;
  std::vector<std::shared_ptr<RawBuffer>> buffers;
  std::vector<Ref<MTL::Buffer>> scratch;
  std::shared_ptr<DispatchTiming> timing;
};

class TorchMpsStream final : public ForeignStream {
 public:
  TorchMpsStream(std::shared_ptr<Device> device, MetalDevice* metal, TorchMpsApi api)
      : device_(std::move(device)), metal_(metal), api_(api), done_(std::make_shared<Completions>()) {}

  ~TorchMpsStream() override {
    // Handlers hold `done_` themselves; nothing here outlives them.
  }

  const std::string& name() const override { return name_; }

  void encode(const Dispatch& d, std::shared_ptr<DispatchTiming> timing) override {
    validate_dispatch(metal_->mtl(), metal_->info(), d);
    AutoreleasePool pool;
    auto held = std::make_shared<Held>();
    held->pipeline = d.pipeline;
    for (const Binding& b : d.bindings)
      if (b.kind == Binding::Kind::Buffer) held->buffers.push_back(b.buffer);
    held->timing = std::move(timing);

    Work work{this, &d, held, nullptr};
    api_.dispatch_sync_f(api_.get_dispatch_queue(), &work, &Work::run);
    if (work.error) std::rethrow_exception(work.error);
  }

  void commit() override {
    // PyTorch's example commits from inside its queue.
    api_.dispatch_sync_f(api_.get_dispatch_queue(), &api_, [](void* p) { static_cast<TorchMpsApi*>(p)->commit(); });
  }

  void synchronize() override {
    api_.synchronize();
    // waitUntilCompleted may return before completion handlers ran: wait for ours, so that the
    // tensors they release are released when this returns.
    std::unique_lock<std::mutex> lock(done_->mu);
    done_->cv.wait(lock, [&] { return done_->outstanding == 0; });
    if (!done_->error.empty()) {
      std::string error = std::move(done_->error);
      done_->error.clear();
      throw DispatchError(error);
    }
  }

 private:
  struct Work {
    TorchMpsStream* self;
    const Dispatch* d;
    std::shared_ptr<Held> held;
    std::exception_ptr error;

    // On PyTorch's queue: no C++ exception may cross libdispatch.
    static void run(void* p) {
      auto* w = static_cast<Work*>(p);
      try {
        w->self->encode_on_queue(*w);
      } catch (...) {
        w->error = std::current_exception();
      }
    }
  };

  // On PyTorch's queue: its open encoder (if any) must end before ours starts.
  void end_torch_encoder() {
    if (api_.get_default_stream && api_.end_kernel_coalescing) {
      if (void* stream = api_.get_default_stream()) api_.end_kernel_coalescing(stream);
    } else {
      api_.commit();
    }
  }

  void encode_on_queue(Work& w) {
    AutoreleasePool pool;
    end_torch_encoder();
    auto* buffer = static_cast<MTL::CommandBuffer*>(api_.get_command_buffer());
    if (!buffer) throw DispatchError("kernel '" + w.d->pipeline->name() + "': PyTorch's MPS stream gave no command buffer");
    MTL::ComputeCommandEncoder* enc = buffer->computeCommandEncoder();
    if (!enc) throw DispatchError("kernel '" + w.d->pipeline->name() + "': no compute encoder on PyTorch's command buffer");
    enc->setLabel(NS::String::string(w.d->pipeline->name().c_str(), NS::UTF8StringEncoding));
    try {
      encode_dispatch(metal_->mtl(), enc, *w.d, w.held->scratch);
    } catch (...) {
      enc->endEncoding();  // an encoder left open would break PyTorch's next op
      throw;
    }
    enc->endEncoding();
    {
      std::lock_guard<std::mutex> lock(done_->mu);
      ++done_->outstanding;
    }
    std::shared_ptr<Completions> done = done_;
    std::shared_ptr<Held> held = w.held;
    const bool validation = metal_->shader_validation();
    buffer->addCompletedHandler([done, held, validation](MTL::CommandBuffer* cb) {
      AutoreleasePool pool;
      const bool failed = cb->status() == MTL::CommandBufferStatusError;
      // Shader validation logs of PyTorch's command buffer (ours and PyTorch's own kernels).
      const std::string report = validation ? validation_report(cb, {held->pipeline}) : std::string();
      if (held->timing) {
        if (failed) held->timing->error = "PyTorch's MPS command buffer failed";
        held->timing->start_ns = cb->GPUStartTime() * 1e9;  // the whole command buffer (an upper bound)
        held->timing->end_ns = cb->GPUEndTime() * 1e9;
        held->timing->ready = true;
      }
      std::string error = failed ? "Metal command buffer of PyTorch's MPS stream failed: " +
                                       std::string(cb->error() && cb->error()->localizedDescription()
                                                       ? cb->error()->localizedDescription()->utf8String()
                                                       : "(no error object)")
                                 : std::string();
      if (!report.empty()) error = error.empty() ? report : report + "; " + error;
      // Buffers and tensors go before synchronize() may return (the handler itself may be
      // destroyed only with the command buffer).
      held->buffers.clear();
      held->scratch.clear();
      held->pipeline.reset();
      held->timing.reset();
      {
        std::lock_guard<std::mutex> lock(done->mu);
        if (!error.empty() && done->error.empty()) done->error = error;
        --done->outstanding;
      }
      done->cv.notify_all();
    });
  }

  std::shared_ptr<Device> device_;  // keeps metal_ alive
  MetalDevice* metal_;
  TorchMpsApi api_;
  std::string name_ = "torch-mps";
  std::shared_ptr<Completions> done_;
};

}  // namespace
}  // namespace metal

std::shared_ptr<ForeignStream> make_torch_mps_stream(const std::shared_ptr<Device>& device, const TorchMpsApi& api) {
  auto* metal = dynamic_cast<metal::MetalDevice*>(device.get());
  if (!metal || !api.complete()) return nullptr;
  return std::make_shared<metal::TorchMpsStream>(device, metal, api);
}

}  // namespace tmps
