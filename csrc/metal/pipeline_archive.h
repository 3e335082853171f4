// The Metal backend's on-disk pipeline cache (MTL::BinaryArchive), used by MetalDevice's
// build_pipeline. Compiled where metal_device.cpp is: Apple platforms, the emulated Metal
// runtime on Linux (csrc/metal_emu/) and tools/macos_check.py.
#pragma once

#include <Foundation/Foundation.hpp>
#include <Metal/Metal.hpp>

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <vector>

#include "metal/metal_device.h"  // Ref

namespace tmps {
namespace metal {

// The on-disk pipeline cache across processes: MTL::BinaryArchives per device at
// <cache_dir()>/metal/<registry id>[.<n>].metallib-archive. Policy (implemented in pipeline_archive.cpp):
//
// * A miss compiles once, into an archive, and the pipeline is then loaded from there (building
//   it and then adding it compiled every kernel twice).
// * Metal does not document MTLBinaryArchive as thread-safe (MTLDevice is): no archive object is
//   ever used by two threads at once. A build checks one archive out exclusively to compile into
//   it, so builds compile in parallel each into its own archive (a "slot"); there are at most
//   kMaxSlots, made on demand. Lookups pass the archives no build has checked out.
// * mu_ guards only the slot list; no Metal call (compile, add, load, serialize) runs under it.
// * Each slot's file is rewritten (temp file + rename, so readers never see half a file;
//   concurrent writers: the last rename wins and the loser's additions are rebuilt next time)
//   every kPersistEvery additions or kPersistInterval, by the build that checked it out, and when
//   the device goes away. Past the size cap (all slots' files) every file is dropped and the
//   slots start empty. Without a usable cache directory or archive, pipelines are built without one.
// * The same kernel built by two threads at once may be compiled twice, into two slots (Metal
//   accepts a function added twice; PipelineCache already builds each key once).
class PipelineArchive {
 public:
  PipelineArchive(Ref<MTL::Device> device, uint64_t registry_id);
  ~PipelineArchive();  // writes additions not yet on disk
  // Writes additions not yet on disk; runs for every live archive at process exit too (devices
  // live until then, so short scripts would otherwise never write theirs).
  void flush();
  // Build the pipeline state for `function`; throws CompileError with Metal's message.
  // `max_threads` (0: not set) goes to setMaxTotalThreadsPerThreadgroup.
  Ref<MTL::ComputePipelineState> build(MTL::Function* function, const std::string& label, uint32_t max_threads);

  static constexpr size_t kMaxSlots = 8;  // archives compiled into at once

 private:
  struct Slot {
    // Held exclusively to add to, serialize or replace `archive`, shared to look pipelines up in it.
    std::shared_mutex use;
    std::string path;
    Ref<MTL::BinaryArchive> archive;  // null: could not be made
    unsigned unsaved = 0;             // additions since the last write (under `use`)
    std::chrono::steady_clock::time_point last_persist = std::chrono::steady_clock::now();
  };

  // Load the slot files (a corrupt one is deleted): once, at the first build, under mu_ (the one
  // Metal call made under it; every build needs the archives before its lookup anyway).
  void open_locked();
  std::string slot_path(size_t index) const;
  Ref<MTL::BinaryArchive> new_archive(const std::string& path);  // from the file, or empty; may be null
  // A slot checked out for compiling into (its `use` held by the returned lock): a free one, a new
  // one while fewer than kMaxSlots exist, else waits for one (round robin). Null: no disk cache.
  Slot* check_out(std::unique_lock<std::shared_mutex>& use);
  // The pipeline from the slots no build has checked out; null on a miss.
  Ref<MTL::ComputePipelineState> lookup(MTL::ComputePipelineDescriptor* desc, const std::vector<Slot*>& slots);
  // Serialize the slot's archive to a temp file and rename it over its path (`use` held).
  void persist_slot(Slot& slot);
  // Archives only grow (Metal cannot remove a pipeline from one): past the size cap every slot
  // file is dropped and `slot` (held) starts empty; the others rewrite theirs at their next write.
  void evict_if_over_cap(Slot& slot);

  static constexpr unsigned kPersistEvery = 16;  // misses between two writes of a slot's archive
  static constexpr std::chrono::seconds kPersistInterval{5};

  std::mutex mu_;  // the fields below (never held across a Metal call)
  Ref<MTL::Device> device_;
  uint64_t registry_id_;
  std::string dir_;  // empty: no on-disk cache this process
  bool opened_ = false;
  std::vector<std::unique_ptr<Slot>> slots_;  // never shrinks: Slot addresses stay valid
  size_t next_wait_ = 0;                      // round robin when every slot is checked out
};

}  // namespace metal
}  // namespace tmps
