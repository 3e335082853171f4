// Metal is not fork-safe: a forked child has none of the parent's threads (Metal's, or the
// emulated runtime's queue thread), so its first command buffer would never complete. Like
// CUDA ("Cannot re-initialize CUDA in forked subprocess"), the Metal device refuses to work in
// a child forked after the process first used Metal, with a clear error instead of a hang.
#pragma once

namespace tmps {

// Called when a Metal device is made: the first call records this process as Metal's.
void note_metal_process();
// Throws Unavailable, naming `what`, in a process forked from the one that used Metal.
void require_metal_process(const char* what);

}  // namespace tmps
