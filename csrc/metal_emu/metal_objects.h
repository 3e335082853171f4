// Emulated Metal objects: MTLDevice and what hangs off it, implementing exactly the selectors
// csrc/metal/ uses, with Metal's documented API-validation rules enforced (RULES.md lists each
// rule with the Apple page it follows). Kernels run on the CPU simulator (csrc/sim/).
#pragma once

#include <cstdint>
#include <string>

#include "metal_emu/objc_runtime.h"

namespace tmps::emu {

// The emulated GPU. `name` decides the family ("Apple M1" -> apple7 ... "Apple M5" -> apple10).
id new_emulated_device(const std::string& name, uint64_t registry_id);  // +1

// Test hooks (exposed to Python as triton_mps._core.emu_*; see bindings).
struct EmuCounters {
  long command_buffers_committed = 0;
  long dispatches = 0;
  long counter_sample_buffers = 0;
  long archive_serializations = 0;
  long archive_compiles = 0;
  long no_copy_buffers = 0;  // newBufferWithBytesNoCopy calls  // addComputePipelineFunctions: a compile into the archive
  long pipelines_built = 0;
  long pipelines_from_archive = 0;
  long command_buffers_with_error_options = 0;  // MTLCommandBufferErrorOptionEncoderExecutionStatus costs GPU time
  // Libraries compiled from source, by the math mode their MTLCompileOptions asked for (nil
  // options: Metal's default, fast). Triton kernels must be built in safe mode.
  long libraries_safe_math = 0;
  long libraries_relaxed_math = 0;
  long libraries_fast_math = 0;
};
EmuCounters emu_counters();
// Pipelines built without setMaxTotalThreadsPerThreadgroup: get at most this many threads (the
// register-pressure limit a real compiler may impose; 1024 = none).
void set_unhinted_thread_limit(uint32_t limit);
// Caps pipelines built with the hint too (default 1024 = none): a kernel whose registers do not
// fit the threadgroup size it asked for.
void set_hinted_thread_limit(uint32_t limit);
// While on, counter samples are written as MTLCounterErrorValue (a GPU that failed to sample).
void fail_timestamps(bool fail);
// The newest MTLGPUFamilyApple<n> the emulated device of this chip name supports.
int emulated_gpu_family(const std::string& chip);
// While held, committed command buffers wait (to test what happens before completion).
void hold_queues(bool hold);
void* emu_buffer_memory(const void* buffer);  // an emulated MTLBuffer's memory (any storage mode)

void register_metal();

}  // namespace tmps::emu
