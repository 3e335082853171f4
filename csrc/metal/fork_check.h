// Metal is not fork-safe: a forked child has none of the parent's threads (Metal's, or the
// emulated runtime's queue thread), so its first command buffer would never complete. Like
// CUDA ("Cannot re-initialize CUDA in forked subprocess"), the Metal device refuses to work in
// a child forked after the process first used Metal, with a clear error instead of a hang.
//
// "Used Metal" is either of:
// * this library made a Metal device (note_metal_process), or
// * PyTorch made its MPS stream: libtorch_cpu's at::mps::MPSStreamImpl::_stream (an exported
//   static data member, in the macOS wheels of torch 2.4 to 2.13) is set by getDefaultMPSStream(),
//   which PyTorch's MPS allocator calls when it is made, so any `mps` tensor or op sets it. It is
//   read, in the parent, by a pthread_atfork handler registered when this library loads, so a
//   child forked after PyTorch (or anyone through it) used MPS refuses Metal too. Only a parent that
//   merely asked torch.backends.mps.is_available() (a device, no stream) is not seen.
#pragma once

#include <string>

namespace tmps {

// Called when a Metal device is made: the first call records this process as Metal's.
void note_metal_process();
// Throws Unavailable, naming `what`, in a process forked from one that used Metal.
void require_metal_process(const char* what);
// The message require_metal_process would throw ("" when Metal may be used here).
std::string metal_fork_refusal(const char* what);

}  // namespace tmps
