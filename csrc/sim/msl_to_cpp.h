// MSL -> C++ for the simulator: the scanner's edits applied to the source, plus an extern "C"
// entry point per kernel and the table the simulator loads (sim/include/tmps_sim_abi.h).
#pragma once

#include <string>
#include <vector>

#include "msl_scanner.h"

namespace tmps {

struct TranslatedSource {
  std::string cpp;                  // C++ for the simulator compiler
  std::string cpp_plain;            // the same without the collapsed SIMD-group functions (the
                                    // strict check's input, and the fallback if `cpp` fails to compile)
  std::vector<KernelDecl> kernels;
  // Per kernel, the SIMD-group collapse (sim/simd_collapse.h): "collapsed", "not needed" (no
  // barrier or SIMD-group function: the threads run as a loop already) or why it was refused.
  std::vector<std::string> collapse;
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

}  // namespace tmps
