// The simulator's C++ toolchain: finds a clang able to build MSL-as-C++ (bfloat needs clang
// >= 17) and compiles translated kernels into shared objects, plus the strict Metal check.
#pragma once

#include <string>
#include <vector>

#include "../device.h"

namespace tmps::sim {

struct Toolchain {
  std::vector<std::string> cxx;  // command prefix, e.g. {"/.../ziglang/zig", "c++"} or {"clang++-18"}
  std::string description;       // "zig 0.17.1 (clang 22.1.8)"
  std::string version;           // part of cache keys
  // Direct mode (zig on ELF hosts): compile with `cc` (zig's bundled clang driver, which also
  // takes precompiled headers) and link with `ld` (zig's ld.lld), skipping zig's own build
  // driver and its cache. Empty: one `cxx` call compiles and links.
  std::vector<std::string> cc;
  std::vector<std::string> ld;
};

// Search order: $TRITON_MPS_SIM_CXX (a command line, split on spaces), $TRITON_MPS_ZIG (path
// to zig), `zig` on PATH, clang++ (>= 17) on PATH. Cached after the first call.
// Throws Unavailable explaining what to install (`pip install ziglang`).
const Toolchain& find_toolchain();

// Directory holding our metal_stdlib shim: $TRITON_MPS_SIM_INCLUDE, else set_shim_dir(),
// else the compile-time default (source tree). Throws Unavailable if missing.
std::string shim_dir();
void set_shim_dir(const std::string& dir);

// Hash of every file of the metal_stdlib shim: editing the shim invalidates cached objects.
std::string shim_hash();

// Compile translated C++ into a shared object at `out_path`, written atomically (temp file
// in the same directory, then rename). Throws CompileError with the compiler's diagnostics.
void compile_shared_object(const std::string& cpp, const std::string& out_path, const CompileOptions& options);

// The CPU kernels are built for: a fixed baseline chosen from what the host can run (never the
// host's native features, which may change numerics), or $TRITON_MPS_SIM_CPU. `name` is in the
// compiler's spelling ("x86_64_v3", "generic"); `flags` select it on the command line.
struct SimTarget {
  std::string name;
  std::vector<std::string> flags;
};
const SimTarget& sim_target();

// The build's command-line flags (no file names), which name the target CPU: part of the
// on-disk cache key, so a change of flags or target never reuses objects built otherwise.
std::string build_fingerprint(const CompileOptions& options);

// Run a command (argv[0] searched on PATH, no shell) and return its stdout and stderr;
// `status` gets the exit code (-1 if it did not run or exit normally).
std::string run_capture(const std::vector<std::string>& argv, int& status);

// Strict check: compile the same C++ with device/constant/threadgroup as real address spaces
// (-DTMPS_SIM_STRICT, syntax only). Throws CompileError ("Metal would reject ...").
void strict_check(const std::string& cpp, const CompileOptions& options);

}  // namespace tmps::sim
