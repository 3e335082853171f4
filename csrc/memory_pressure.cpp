#include "memory_pressure.h"

#ifdef __APPLE__
#include <dispatch/dispatch.h>
#endif

namespace tmps {

#ifdef __APPLE__
struct MemoryPressureWatch::Impl {
  std::function<void(Level)> callback;
  dispatch_queue_t queue = nullptr;  // serial: the destructor can wait for a running handler
  dispatch_source_t source = nullptr;

  static void fire(void* ctx) {
    auto* self = static_cast<Impl*>(ctx);
    unsigned long level = dispatch_source_get_data(self->source);
    self->callback((level & DISPATCH_MEMORYPRESSURE_CRITICAL) ? Level::Critical : Level::Warn);
  }
};

MemoryPressureWatch::MemoryPressureWatch(std::function<void(Level)> on_pressure) : impl_(std::make_unique<Impl>()) {
  impl_->callback = std::move(on_pressure);
  impl_->queue = dispatch_queue_create("triton_mps.memory_pressure", DISPATCH_QUEUE_SERIAL);
  impl_->source = dispatch_source_create(DISPATCH_SOURCE_TYPE_MEMORYPRESSURE, 0,
                                         DISPATCH_MEMORYPRESSURE_WARN | DISPATCH_MEMORYPRESSURE_CRITICAL,
                                         impl_->queue);
  if (!impl_->source) return;
  dispatch_set_context(impl_->source, impl_.get());
  dispatch_source_set_event_handler_f(impl_->source, &Impl::fire);
  dispatch_activate(impl_->source);
}

MemoryPressureWatch::~MemoryPressureWatch() {
  if (!impl_) return;
  if (impl_->source) {
    // Cancel, then drain the serial queue: no handler runs once this returns.
    dispatch_source_cancel(impl_->source);
    dispatch_sync_f(impl_->queue, nullptr, [](void*) {});
    dispatch_release(impl_->source);
  }
  if (impl_->queue) dispatch_release(impl_->queue);
}

bool MemoryPressureWatch::active() const { return impl_ && impl_->source; }
#else
struct MemoryPressureWatch::Impl {};
MemoryPressureWatch::MemoryPressureWatch(std::function<void(Level)>) {}
MemoryPressureWatch::~MemoryPressureWatch() = default;
bool MemoryPressureWatch::active() const { return false; }
#endif

}  // namespace tmps
