// MSL scanner: reads kernel signatures out of MSL source and, for the simulator, rewrites
// the source into C++ that our metal_stdlib shim compiles. Shared by both backends: the Metal
// backend uses the parsed signatures to validate launch arguments.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "device.h"

namespace tmps {

struct KernelDecl {
  std::string name;
  std::vector<ParamInfo> params;        // type_size is 0 here (known only after compiling)
  uint32_t line = 0;                    // MSL line of `kernel`
  uint32_t max_total_threads = 0;       // [[max_total_threads_per_threadgroup(N)]], 0 if absent
  bool needs_fibers = false;            // calls barriers or SIMD-group functions (conservative)
  // From a `// tmps-sim: effect_threads=N` line right above the kernel: threads of a threadgroup
  // at index >= N store, print and signal nothing (they only duplicate lower threads' work), so
  // a simulator may skip them when threads cannot communicate. 0: no such line.
  uint32_t effect_threads = 0;
};

// Every `kernel` function in the source. Throws CompileError ("<file>:<line>: ...") on a
// signature we cannot bind: unknown attribute, binding index over Metal's limit (31 buffers),
// duplicate binding, a parameter with no attribute that is not a plain constant.
std::vector<KernelDecl> parse_kernels(const std::string& msl, const std::string& filename = "kernel.metal");

struct TranslatedSource {
  std::string cpp;                  // C++ for the simulator compiler
  std::vector<KernelDecl> kernels;
};

// Rewrite MSL for the simulator:
//  - prepend `#include <metal_stdlib>` and `#line 1 "<filename>"` so diagnostics name MSL lines;
//  - strip attributes inside kernel parameter lists and on kernels (recorded in KernelDecl);
//  - turn kernel-scope `threadgroup T name[dims];` into shared storage from the runtime
//    (`auto& name = ::tmps_sim::threadgroup_static<T[dims]>(ID, __LINE__);`);
//  - append, per kernel, an extern "C" entry `tmps_sim_entry_<name>(const tmps_sim_args*,
//    const tmps_sim_thread*)` that binds buffers/threadgroup memory/positions and calls it,
//    and the exported table (`tmps_sim_kernels`, `tmps_sim_num_kernels`,
//    `tmps_sim_abi_version`, `tmps_sim_rt`) with sizeof() of every parameter type.
// Throws CompileError like parse_kernels.
TranslatedSource translate_for_simulator(const std::string& msl, const std::string& filename = "kernel.metal");

// Rules of Metal a C++ compiler would let through: no static local variables, no recursion
// (direct or mutual, among the functions the source defines; calls are matched by name).
// Throws CompileError ("<file>:<line>: ...") on the first violation.
void check_metal_rules(const std::string& msl, const std::string& filename = "kernel.metal");

}  // namespace tmps
