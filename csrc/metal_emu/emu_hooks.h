// Test hooks of the emulated Metal runtime, for the Python bindings and the gtests (built only
// when TMPS_HAVE_METAL_EMU is defined: Linux builds with zig's clang).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/foreign_stream.h"

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

// A stand-in for PyTorch's torch/mps.h API on the emulated device: its own command queue, a
// current command buffer, a "serial queue" (a mutex), and a record of the calls ("queue",
// "get_command_buffer", "commit", "synchronize", "op <label>").
TorchMpsApi hook_fake_torch_api();
std::vector<std::string> hook_fake_torch_events(bool clear);
// PyTorch's own work: an (empty) compute pass on the current command buffer, as PyTorch encodes
// one; Metal's one-encoder-at-a-time rule catches an encoder of ours left open.
void hook_fake_torch_op(const std::string& label);  // the memory behind it, also for private storage

}  // namespace tmps::emu
