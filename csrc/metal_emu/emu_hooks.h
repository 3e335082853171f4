// Test hooks of the emulated Metal runtime, for the Python bindings and the gtests (built only
// when TMPS_HAVE_METAL_EMU is defined: Linux builds with zig's clang).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "foreign_stream.h"

namespace tmps::emu {

std::map<std::string, long> hook_stats();          // counters and object accounting
std::map<std::string, long> hook_live_objects();   // live emulated objects per class
std::vector<std::string> hook_violations();
void hook_clear_violations();
void hook_set_unhinted_thread_limit(uint32_t limit);
void hook_set_hinted_thread_limit(uint32_t limit);
void hook_fail_timestamps(bool fail);
int hook_gpu_family(const std::string& chip);
void hook_hold_queues(bool hold);
// An MTLBuffer of the emulated device as a torch `mps` storage would hold it (+1 reference).
uintptr_t hook_new_buffer(uint64_t bytes, bool private_storage);
void hook_release(uintptr_t object);
uintptr_t hook_buffer_memory(uintptr_t buffer);
// An MTLBuffer of another emulated GPU (+1 reference), to test device checks.
uintptr_t hook_new_foreign_buffer(uint64_t bytes);
// Commits one named misuse of the Metal API through metal-cpp; returns the validation message
// ("" if the emulation did not catch it). Names: see emu_hooks.cpp.
std::string hook_misuse(const std::string& name);
// One check of Metal's threading (csrc/metal_emu/threading_checks.cpp); "" when it holds, else
// what went wrong. Names: handler_blocks_only_handlers, wait_after_handlers, max_command_buffer_count.
std::string hook_threading_check(const std::string& name);

// A stand-in for PyTorch's MPS stream and torch/mps.h API on the emulated device (RULES.md,
// "PyTorch's MPS stream"): its own command queue, the command buffer being recorded, the compute
// encoder native ops leave open (kernel coalescing), a serial "queue", and a record of the calls
// ("queue", "get_command_buffer", "endKernelCoalescing", "commit", "synchronize", "op <label>").
TorchMpsApi hook_fake_torch_api();
// Behave as torch 2.<minor>: from 9 on get_command_buffer ends the open encoder (default 8).
void hook_fake_torch_set_version(int minor);
std::vector<std::string> hook_fake_torch_events(bool clear);
// A native PyTorch op, on its queue, into the coalesced encoder (left open): with a buffer,
// x[i] = x[i] * mul + add for `count` floats at byte `offset` (the data really changes, in GPU
// order); without one it only opens the encoder.
void hook_fake_torch_op(const std::string& label, uintptr_t buffer = 0, uint64_t offset = 0, uint32_t count = 0,
                        float mul = 1, float add = 0);
// torch.mps.synchronize(): commit and wait, with whatever the caller holds (the GIL from Python).
void hook_fake_torch_synchronize();

}  // namespace tmps::emu
