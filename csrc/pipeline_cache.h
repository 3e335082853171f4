// Pipeline cache: compiled pipelines keyed by a hash of (MSL source, entry point, compile
// options, device identity). In memory for the process; on disk across processes the
// backend keeps its own artifacts (simulator: compiled objects; Metal: a binary archive)
// under cache_dir(), keyed by the same hash.
#pragma once

#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "device.h"

namespace tmps {

// Hex SHA-256 of (source, entry, options.key(), device.cache_identity()) with length framing.
std::string pipeline_key(const std::string& source, const std::string& entry, const CompileOptions& options,
                         const Device& device);

// Directory for on-disk entries: $TRITON_MPS_CACHE_DIR, else $XDG_CACHE_HOME/triton_mps,
// else ~/.cache/triton_mps. Created on demand.
std::string cache_dir();

// Where the on-disk entries of `sub` (e.g. "sim") live for this process.
//  - write: where new entries go: `cache_dir()/sub`, created, if files can be written there;
//    else (cache directory missing, read-only, a file, on a full disk or over quota) `sub` in a
//    private temporary directory of this process, removed at exit, with a warning (once per
//    reason): a broken cache never stops a build, it only stops caching across processes.
//  - read_only: `cache_dir()/sub` when it can be read but not written (a cache baked into a
//    container image, a shared folder, a full disk): its entries are still served (each is
//    verified by its sidecar before use), misses are built into `write`. Empty otherwise.
struct CacheDirs {
  std::string write;
  std::string read_only;
};
CacheDirs cache_dirs(const std::string& sub);
std::string usable_cache_dir(const std::string& sub);  // cache_dirs(sub).write

// A write under `path` failed with errno `os_error`. When that is the cache's disk refusing
// writes (ENOSPC, EDQUOT, EROFS) and `path` is in the cache directory, this process stops
// writing there (the warning above, naming `what`) and returns true: the caller retries the
// write in usable_cache_dir(), now the temporary directory. False otherwise (the caller raises).
bool give_up_cache_writes(const std::string& path, int os_error, const std::string& what);

// The errno values that mean the disk refuses new data: full, over quota, read-only file system.
const std::vector<int>& disk_refusals();
bool is_disk_refusal(int os_error);  // os_error is one of disk_refusals()

// Warnings the core wants shown to the user (the bindings issue them as Python
// RuntimeWarnings after each call that may add some). Thread-safe.
void add_warning(const std::string& message);
std::vector<std::string> take_warnings();

struct PipelineCacheStats {
  uint64_t hits = 0;
  uint64_t misses = 0;
  uint64_t entries = 0;
};

class PipelineCache {
 public:
  explicit PipelineCache(std::shared_ptr<Device> device);
  // The pipeline for (source, entry, options), building it on a miss.
  // Concurrent requests for the same key build once.
  std::shared_ptr<Pipeline> get(const std::string& source, const std::string& entry, const CompileOptions& options);
  PipelineCacheStats stats() const;
  void clear();  // in-memory entries only

 private:
  std::shared_ptr<Device> device_;
  mutable std::mutex mu_;
  std::unordered_map<std::string, std::shared_ptr<Pipeline>> entries_;
  PipelineCacheStats stats_;
  // Builds under way, one per key: later callers for the same key wait on the same future.
  std::unordered_map<std::string, std::shared_future<std::shared_ptr<Pipeline>>> building_;
};

}  // namespace tmps
