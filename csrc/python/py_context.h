// Types shared by the Python binding files (bindings.cpp, triton_launch.cpp, test_bindings.cpp): the per-device
// context and buffers that keep a Python owner alive.
#pragma once

#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>  // nb::cast<std::string> in every binding file

#include <memory>
#include <mutex>
#include <vector>

#include "device.h"
#include "foreign_stream.h"
#include "launcher.h"
#include "memory_pressure.h"
#include "pipeline_cache.h"
#include "pool.h"
#include "scalar_types.h"

namespace tmps {

namespace nb = nanobind;

// Everything one device needs in the process: allocator, pipelines, and its stream.
struct DeviceContext {
  std::shared_ptr<Device> device;
  std::shared_ptr<BufferPool> pool;
  std::unique_ptr<PipelineCache> cache;
  std::unique_ptr<Launcher> stream;
  // Routes launches between `stream` and a foreign stream (PyTorch's MPS stream on Metal).
  std::unique_ptr<LaunchRouter> router;
  bool foreign_looked_up = false;       // tried to attach PyTorch's MPS stream (Metal)
  bool foreign_takes_host_tensors = false;  // tests: CPU tensors go to the foreign stream, like `mps` ones
  // The OS asks for memory back: halve the cache on a warning, empty it when critical.
  std::unique_ptr<MemoryPressureWatch> pressure;

  explicit DeviceContext(std::shared_ptr<Device> d)
      : device(std::move(d)),
        pool(std::make_shared<BufferPool>(device, PoolConfig::from_env())),
        cache(std::make_unique<PipelineCache>(device)),
        stream(std::make_unique<Launcher>(device)),
        router(std::make_unique<LaunchRouter>(*stream)) {
    std::weak_ptr<BufferPool> weak = pool;
    pressure = std::make_unique<MemoryPressureWatch>([weak](MemoryPressureWatch::Level level) {
      if (auto p = weak.lock()) {
        if (level == MemoryPressureWatch::Level::Critical)
          p->empty_cache();
        else
          p->release_cached(p->stats().cached_bytes / 2);
      }
    });
  }
};

// Attaches PyTorch's MPS stream to `ctx`'s router once (Metal; a no-op elsewhere and when
// this torch has no torch/mps.h API). Defined in triton_launch.cpp.
void attach_torch_stream(DeviceContext& ctx);

// A view of a device buffer: the allocation plus a byte range.
struct BufferRef {
  std::shared_ptr<RawBuffer> raw;
  uint64_t offset = 0;
  uint64_t nbytes = 0;
  // CPU address of the first byte. Throws for GPU-only (private storage) buffers, e.g. most
  // torch `mps` tensors: Metal gives them no CPU address (contents() is NULL).
  uintptr_t address() const {
    void* p = raw->contents();
    if (!p) throw InvalidArgument("this buffer has private (GPU-only) storage: it has no CPU address or bytes view");
    return reinterpret_cast<uintptr_t>(p) + offset;
  }
};

// Drops a reference to a Python object from any thread. Only a thread that holds the GIL drops
// it at once; any other (a Metal completion handler, a waiting launch) queues it for a Python
// thread (a pending call, the next launch or synchronize) and never waits for the GIL:
// torch.mps.synchronize() waits for the command buffer while holding the GIL, and Metal's
// waitUntilCompleted does not return before the command buffer's completed handlers returned.
void release_owner(nb::object owner);
// Drops what release_owner queued; the GIL is held.
void drain_released_owners();
// Declared before a gil_scoped_release: drains once the GIL is back (also when the call throws).
struct DrainReleasedOwners {
  ~DrainReleasedOwners() { drain_released_owners(); }
};

// Memory owned by a Python object (numpy array, torch CPU tensor, or the MTLBuffer of a torch
// `mps` tensor): the wrapper keeps the owner alive for as long as any dispatch or view still
// refers to the memory. For `mps` tensors retaining the MTLBuffer is not enough: PyTorch's
// caching allocator hands a freed tensor's buffer to the next tensor while our kernel runs.
// `tracked` (BufferPool::track_wrapped) counts the wrapper in the device's memory statistics
// for as long as it lives.
class OwnedHostBuffer : public RawBuffer {
 public:
  OwnedHostBuffer(std::unique_ptr<RawBuffer> inner, nb::object owner, std::shared_ptr<void> tracked = {})
      : inner_(std::move(inner)), owner_(std::move(owner)), tracked_(std::move(tracked)) {}
  ~OwnedHostBuffer() override { release_owner(std::move(owner_)); }  // may run on a Metal thread
  void* contents() override { return inner_->contents(); }
  size_t length() const override { return inner_->length(); }
  void* native_handle() override { return inner_->native_handle(); }
  uint64_t native_offset() const override { return inner_->native_offset(); }

 private:
  std::unique_ptr<RawBuffer> inner_;
  nb::object owner_;
  std::shared_ptr<void> tracked_;
};

struct PipelineRef {
  std::shared_ptr<Pipeline> p;
};

struct TimingRef {
  std::shared_ptr<DispatchTiming> t;
};

// A Python number as a scalar for packing: a float for float types, an integer (any object
// with __index__, range-checked later by ScalarType::store) otherwise. `where` names the
// parameter and kernel; errors read "<where> expects a number/an integer, got ...".
ScalarValue python_scalar(nb::handle v, bool want_float, const std::string& where);

// Registers the Triton launch path (triton_launch.cpp) on the module.
void bind_triton_launcher(nb::module_& m);

// Registers the test and diagnostic hooks (test_bindings.cpp) on the module.
void bind_test_hooks(nb::module_& m);

// One context per device, created on first use, in enumerate_devices() order.
std::vector<std::shared_ptr<DeviceContext>>& contexts();

// PyErr_SetString for a message that may carry a tool's raw output (linker or compiler bytes,
// any encoding): invalid UTF-8 becomes U+FFFD instead of a UnicodeDecodeError.
void set_error_text(PyObject* type, const char* what);

}  // namespace tmps
