// Test and diagnostic hooks of the module `triton_mps._core`: a recording foreign stream and the
// foreign-stream state of a device (tests/triton/test_launch_order.py and others), which of
// PyTorch's torch/mps.h symbols resolve (docs/mac-checklist.md), and, on Linux builds with the
// emulated Metal runtime, the emulator's hooks (emu_*; csrc/metal_emu/). Nothing in the
// package's launch path calls them.
#include <nanobind/nanobind.h>
#include <nanobind/stl/map.h>  // emu_stats, emu_live_objects
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#ifdef TMPS_HAVE_METAL_EMU
#include "metal_emu/emu_hooks.h"
#endif
#include "foreign_stream.h"
#include "py_context.h"

namespace nb = nanobind;
using namespace nb::literals;

namespace tmps {

namespace {

// A foreign stream for tests, on any device: the "owner's command buffer" is a batch of that
// device, committed when the owner commits. Records "encode <kernel>", "commit",
// "synchronize" and the owner's own work ("owner <label>", see owner_op) in order.
class RecordingForeignStream : public ForeignStream {
 public:
  explicit RecordingForeignStream(std::shared_ptr<Device> device);
  ~RecordingForeignStream() override;
  const std::string& name() const override { return name_; }
  void encode(const Dispatch& d, std::shared_ptr<DispatchTiming> timing) override;
  void commit() override;
  void synchronize() override;
  // Stand-in for work the owner itself issues (a PyTorch op): only recorded.
  void owner_op(const std::string& label);
  std::vector<std::string> events() const;
  void clear_events();

 private:
  std::shared_ptr<Device> device_;
  std::string name_ = "recording";
  mutable std::mutex mu_;
  std::unique_ptr<Batch> open_;
  std::deque<std::unique_ptr<Batch>> in_flight_;
  std::vector<std::string> events_;
  void commit_locked();
};

// --- RecordingForeignStream: a test double, only here --------------------------------------------------------------------

RecordingForeignStream::RecordingForeignStream(std::shared_ptr<Device> device) : device_(std::move(device)) {
  if (!device_) throw InvalidArgument("RecordingForeignStream needs a device");
}

RecordingForeignStream::~RecordingForeignStream() {
  try {
    synchronize();
  } catch (...) {
  }
}

void RecordingForeignStream::encode(const Dispatch& d, std::shared_ptr<DispatchTiming> timing) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!open_) open_ = device_->new_batch();
  open_->encode(d, std::move(timing));
  events_.push_back("encode " + d.pipeline->name());
}

void RecordingForeignStream::commit_locked() {
  if (open_ && open_->size() > 0) {
    std::unique_ptr<Batch> batch = std::move(open_);
    batch->commit();  // the simulator executes here
    in_flight_.push_back(std::move(batch));
  }
}

void RecordingForeignStream::commit() {
  std::lock_guard<std::mutex> lock(mu_);
  events_.push_back("commit");
  commit_locked();
}

void RecordingForeignStream::synchronize() {
  std::deque<std::unique_ptr<Batch>> batches;
  {
    std::lock_guard<std::mutex> lock(mu_);
    events_.push_back("synchronize");
    commit_locked();
    batches.swap(in_flight_);
  }
  std::exception_ptr first;
  for (auto& b : batches) {
    try {
      b->wait();
    } catch (...) {
      if (!first) first = std::current_exception();
    }
  }
  if (first) std::rethrow_exception(first);
}

void RecordingForeignStream::owner_op(const std::string& label) {
  std::lock_guard<std::mutex> lock(mu_);
  events_.push_back("owner " + label);
}

std::vector<std::string> RecordingForeignStream::events() const {
  std::lock_guard<std::mutex> lock(mu_);
  return events_;
}

void RecordingForeignStream::clear_events() {
  std::lock_guard<std::mutex> lock(mu_);
  events_.clear();
}

}  // namespace

void bind_test_hooks(nb::module_& m) {
  // The foreign stream of a device (csrc/foreign_stream.h), and a recording one for tests.
  nb::class_<RecordingForeignStream>(m, "RecordingForeignStream",
                                     "A stand-in for PyTorch's MPS stream that records what is done to it (tests).")
      .def("events", &RecordingForeignStream::events)
      .def("clear_events", &RecordingForeignStream::clear_events)
      .def("owner_op", &RecordingForeignStream::owner_op, "label"_a,
           "Record work the owner itself issues (a PyTorch op), in order with ours.")
      .def("synchronize", [](RecordingForeignStream& s) {
            nb::gil_scoped_release r;
            s.synchronize();
          });
  m.def("attach_recording_stream", [](std::shared_ptr<DeviceContext> ctx, bool takes_host_tensors) {
        auto stream = std::make_shared<RecordingForeignStream>(ctx->device);
        {
          nb::gil_scoped_release r;
          ctx->router->set_foreign(stream);
        }
        ctx->foreign_looked_up = true;
        ctx->foreign_takes_host_tensors = takes_host_tensors;
        return stream;
      }, "device"_a, "takes_host_tensors"_a = true,
      "Tests: launches that bind torch `mps` tensors (and, with takes_host_tensors, CPU tensors) go to a "
      "recording foreign stream on this device.");
  m.def("detach_foreign_stream", [](std::shared_ptr<DeviceContext> ctx) {
        {
          nb::gil_scoped_release r;
          ctx->router->set_foreign(nullptr);  // waits for what it holds
        }
        ctx->foreign_looked_up = false;
        ctx->foreign_takes_host_tensors = false;
      }, "device"_a);
  m.def("foreign_stream", [](std::shared_ptr<DeviceContext> ctx) -> nb::object {
        auto f = ctx->router->foreign();
        if (!f) return nb::none();
        return nb::cast(f->name());
      }, "device"_a, "The name of the device's foreign stream ('torch-mps', ...) or None.");
  // The router's lock may be held across a wait for the GPU: never wait for it holding the GIL.
  m.def("foreign_pending", [](std::shared_ptr<DeviceContext> ctx) {
        nb::gil_scoped_release r;
        return ctx->router->foreign_pending();
      },
        "device"_a, "Launches on the foreign stream not yet waited for.");
  m.def("torch_mps_api_symbols", [](const std::string& library) {
        std::string error;
        TorchMpsApi api = resolve_torch_mps_api(library, &error);
        nb::dict d;
        d[kTorchGetCommandBuffer] = api.get_command_buffer != nullptr;
        d[kTorchGetDispatchQueue] = api.get_dispatch_queue != nullptr;
        d[kTorchCommit] = api.commit != nullptr;
        d[kTorchSynchronize] = api.synchronize != nullptr;
        d["dispatch_sync_f"] = api.dispatch_sync_f != nullptr;
        // Optional (ATen internals; exported only by macOS builds of torch).
        d[kAtenDefaultMpsStream] = api.get_default_stream != nullptr;
        d[kAtenEndKernelCoalescing] = api.end_kernel_coalescing != nullptr;
        return d;
      }, "library"_a, "Which of PyTorch's torch/mps.h functions (and libdispatch's dispatch_sync_f) resolve "
      "in this process or the loaded `library` (it is never loaded here).");
  m.def("set_foreign_commit_every", [](std::shared_ptr<DeviceContext> ctx, size_t n) {
        nb::gil_scoped_release r;
        ctx->router->set_foreign_commit_every(n);
      }, "device"_a, "n"_a);

#ifdef TMPS_HAVE_METAL_EMU
  // Test hooks of the emulated Metal runtime (Linux builds; see csrc/metal_emu/).
  m.def("emu_stats", &emu::hook_stats);
  m.def("emu_live_objects", &emu::hook_live_objects);
  m.def("emu_violations", &emu::hook_violations);
  m.def("emu_clear_violations", &emu::hook_clear_violations);
  m.def("emu_set_unhinted_thread_limit", &emu::hook_set_unhinted_thread_limit, "limit"_a);
  m.def("emu_set_hinted_thread_limit", &emu::hook_set_hinted_thread_limit, "limit"_a);
  m.def("emu_fail_timestamps", &emu::hook_fail_timestamps, "fail"_a);
  m.def("emu_gpu_family", &emu::hook_gpu_family, "chip"_a);
  m.def("emu_hold_queues", &emu::hook_hold_queues, "hold"_a);
  m.def("emu_new_buffer", &emu::hook_new_buffer, "nbytes"_a, "private"_a = false);
  m.def("emu_release", &emu::hook_release, "handle"_a);
  m.def("emu_buffer_memory", &emu::hook_buffer_memory, "handle"_a);
  m.def("emu_misuse", &emu::hook_misuse, "name"_a);
  m.def("emu_threading_check", [](const std::string& name) {
        nb::gil_scoped_release r;  // the checks wait on emulated Metal threads
        return emu::hook_threading_check(name);
      }, "name"_a);
  m.def("emu_new_foreign_buffer", &emu::hook_new_foreign_buffer, "nbytes"_a);
  // PyTorch's MPS stream on the emulated device: the real torch_stream.cpp over a fake torch/mps.h API.
  // `aten_symbols=False`: a libtorch that does not export MPSStream::endKernelCoalescing.
  m.def("emu_attach_fake_torch", [](std::shared_ptr<DeviceContext> ctx, bool aten_symbols) {
        TorchMpsApi api = emu::hook_fake_torch_api();
        if (!aten_symbols) api.get_default_stream = nullptr, api.end_kernel_coalescing = nullptr;
        auto stream = make_torch_mps_stream(ctx->device, api);
        if (!stream) throw InvalidArgument("device '" + ctx->device->info().name + "' is not a Metal device");
        {
          nb::gil_scoped_release r;
          ctx->router->set_foreign(std::move(stream));
        }
        ctx->foreign_looked_up = true;
      }, "device"_a, "aten_symbols"_a = true);
  m.def("emu_fake_torch_events", &emu::hook_fake_torch_events, "clear"_a = true);
  m.def("emu_fake_torch_op", &emu::hook_fake_torch_op, "label"_a, "buffer"_a = 0, "offset"_a = 0, "count"_a = 0,
        "mul"_a = 1.0f, "add"_a = 0.0f);
  m.def("emu_fake_torch_set_version", &emu::hook_fake_torch_set_version, "minor"_a);
  // torch.mps.synchronize(): waits with the GIL held, as PyTorch's does (no gil_scoped_release).
  m.def("emu_fake_torch_synchronize", &emu::hook_fake_torch_synchronize);
#endif
}

}  // namespace tmps
