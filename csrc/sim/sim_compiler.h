// The simulator's compiler driver: compiles translated kernels into shared objects against our
// metal_stdlib shim, plus the strict Metal check. The compiler itself: toolchain.h.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "device.h"
#include "toolchain.h"

namespace tmps::sim {

// Directory holding our metal_stdlib shim: $TRITON_MPS_SIM_INCLUDE, else set_shim_dir(),
// else the compile-time default (source tree). Throws Unavailable if missing.
std::string shim_dir();
void set_shim_dir(const std::string& dir);

// Hash of every file of the metal_stdlib shim: editing the shim invalidates cached objects.
std::string shim_hash();

// How hard the optimizer works on a kernel. A kernel is first built Quick (-O0: about 40% of
// the build time of -O2 on the upstream tests' kernels), and rebuilt Full (-O2) once it has run
// long enough for the build to pay for itself (SimDevice, `TRITON_MPS_SIM_OPT`). Both compute the
// same bits: no fast math and no contraction at either level.
enum class OptLevel { Quick, Full };

// Compile translated C++ into a shared object at `out_path`, written atomically (temp file
// in the same directory, then rename). Throws CompileError with the compiler's diagnostics.
// `settle`, if given, runs once the compiler is done and before anything is published or a
// compile error thrown: a check running beside the build (the strict check) gives its verdict
// there, so its error comes first and a rejected kernel's object never reaches `out_path`.
// `line_tables`: with line tables (a library's twin, line_tables.h); the same code otherwise.
void compile_shared_object(const std::string& cpp, const std::string& out_path, const CompileOptions& options,
                           OptLevel level = OptLevel::Full, const std::function<void()>& settle = {},
                           bool line_tables = false);

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
std::string build_fingerprint(const CompileOptions& options, OptLevel level = OptLevel::Full);

// Strict check: compile the same C++ with device/constant/threadgroup as real address spaces
// (-DTMPS_SIM_STRICT, syntax only). Throws CompileError ("Metal would reject ...").
void strict_check(const std::string& cpp, const CompileOptions& options);

}  // namespace tmps::sim
