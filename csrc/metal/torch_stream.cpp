// PyTorch's MPS stream as a ForeignStream (csrc/core/foreign_stream.h): our dispatches are encoded
// into the command buffer PyTorch is recording, on PyTorch's serial dispatch queue, the way
// PyTorch documents custom Metal ops (torch/mps.h):
//
//   cb = get_command_buffer();                      // PyTorch ends its own open encoder here
//   dispatch_sync(get_dispatch_queue(), ^{ enc = [cb computeCommandEncoder]; ...; [enc endEncoding]; });
//
// Nothing waits: the dispatch runs when PyTorch commits that command buffer (its own schedule,
// our commit() every few launches, torch.mps.synchronize(), or a host read). A completion
// handler on the command buffer keeps our buffers and tensors alive until then and fills the
// dispatch's timing: the command buffer's GPU start/end (LaunchRouter commits a timed dispatch
// alone, so that is the dispatch plus the command buffer's start-up: an upper bound).
//
// The API comes as function pointers (TorchMpsApi): resolved from the loaded libtorch at run
// time, or a fake for the emulated Metal device's tests (csrc/metal_emu/emu_hooks.cpp).
#include <condition_variable>
#include <exception>
#include <mutex>

#include "core/foreign_stream.h"
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

    // Outside the queue, as PyTorch's own custom-op example does (it may sync on the queue).
    auto* cb = static_cast<MTL::CommandBuffer*>(api_.get_command_buffer());
    if (!cb) throw DispatchError("kernel '" + d.pipeline->name() + "': PyTorch's MPS stream gave no command buffer");
    Work work{this, &d, cb, held, nullptr};
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
    MTL::CommandBuffer* cb;
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

  void encode_on_queue(Work& w) {
    AutoreleasePool pool;
    MTL::ComputeCommandEncoder* enc = w.cb->computeCommandEncoder();
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
    w.cb->addCompletedHandler([done, held, validation](MTL::CommandBuffer* cb) {
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
