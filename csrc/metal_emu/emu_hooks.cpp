// Test hooks: see emu_hooks.h.
#include "metal_emu/emu_hooks.h"

#include <Metal/Metal.hpp>

#include "metal_emu/metal_objects.h"
#include "metal_emu/objc_runtime.h"

extern "C" MTL::Device* MTLCreateSystemDefaultDevice();

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
          {"pipelines_built", c.pipelines_built},
          {"pipelines_from_archive", c.pipelines_from_archive},
          {"command_buffers_with_error_options", c.command_buffers_with_error_options},
          {"objects_allocated", o.allocated},
          {"objects_deallocated", o.deallocated},
          {"objects_live", live},
          {"autorelease_without_pool", o.autorelease_without_pool}};
}

std::map<std::string, long> hook_live_objects() { return object_stats().live; }
std::vector<std::string> hook_violations() { return violations(); }
void hook_clear_violations() { clear_violations(); }
void hook_set_unhinted_thread_limit(uint32_t limit) { set_unhinted_thread_limit(limit); }
void hook_hold_queues(bool hold) { hold_queues(hold); }

uintptr_t hook_new_buffer(uint64_t bytes, bool private_storage) {
  MTL::Device* device = MTLCreateSystemDefaultDevice();
  auto options = private_storage ? MTL::ResourceStorageModePrivate : MTL::ResourceStorageModeShared;
  MTL::Buffer* b = device->newBuffer(bytes, options);
  device->release();
  return reinterpret_cast<uintptr_t>(b);
}

void hook_release(uintptr_t object) { from_id(reinterpret_cast<void*>(object))->release(); }

uintptr_t hook_buffer_memory(uintptr_t buffer) { return reinterpret_cast<uintptr_t>(emu_buffer_memory(reinterpret_cast<void*>(buffer))); }

}  // namespace tmps::emu
