// The simulator's on-disk cache of kernel libraries: `<cache>/sim/<key>.so`, each with a
// `<key>.so.meta` sidecar (its size and SHA-256, and how long the build took) written after the
// library, so a truncated or corrupted entry is caught before dlopen sees it. The key and the library are made by
// SimDevice::build_pipeline (sim_device.cpp); this file owns the sidecars.
#pragma once

#include <string>

namespace tmps::sim {

enum class EntryState { Missing, Valid, Invalid };

// Whether `so` exists and matches its sidecar (size and SHA-256). A library without its
// sidecar is Missing, not Invalid: another process may be between writing the two. `why` gets
// the reason when Invalid; `build_ns` (if given) the recorded build time, 0 when the sidecar
// has none (written by an older version).
EntryState verify_entry(const std::string& so, std::string& why, double* build_ns = nullptr);

// Write `bytes` to `path` (created or truncated). Throws HostError carrying errno (ENOSPC on a
// full disk) with the path and the OS's reason.
void write_whole_file(const std::string& path, const std::string& bytes);

// Write the sidecar of `so` (built in `build_ns`) atomically (temp file + rename) so readers
// never see half of it. Throws HostError (with errno) if it cannot be written.
void write_meta(const std::string& so, double build_ns);

// Files built once and shared by every kernel build (the support object, the shim's
// precompiled header) carry the same sidecar: whether `path` exists and matches it. Damage of
// any kind (truncated, emptied, overwritten) or a missing sidecar is false: the caller
// rebuilds. A file verified before is not hashed again while its size, time and inode stay.
bool artifact_intact(const std::string& path);

// Move the freshly built `built` to `path` (atomically, replacing any damaged copy), then write
// its sidecar. Throws HostError (with errno) if either step fails.
void publish_artifact(const std::string& built, const std::string& path);

}  // namespace tmps::sim
