// MSL scanner: reads kernel signatures out of MSL source. Shared by both backends: the Metal
// backend uses the parsed signatures to validate launch arguments; the simulator also takes the
// scan's record of what plain C++ does not accept (scan_msl) and rewrites the source into C++
// in sim/msl_to_cpp.{h,cpp}.
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

// What one scan finds beyond the signatures, for the simulator's rewrite (sim/msl_to_cpp): found
// in the same pass because it needs the same parse (kernel parameter lists and bodies).

// A replacement of source bytes [begin, end) by `text`; edits keep the line count.
struct Edit {
  size_t begin;
  size_t end;
  std::string text;
};

struct ParamExtra {  // what the entry wrapper needs beyond ParamInfo
  std::string field;      // position: tmps_sim_thread field ("" = grid_origin zeros)
  bool is_void = false;   // `device void*`: no sizeof
};

struct KernelExtra {
  std::string cpp_name;            // qualified C++ name to call ("::ns::k")
  std::string max_threads_expr;    // expression text of max_total_threads_per_threadgroup
  std::vector<ParamExtra> params;
};

struct MslScan {
  std::vector<KernelDecl> kernels;
  std::vector<KernelExtra> extras;  // one per kernel, same order
  // Attributes blanked, kernel-scope `threadgroup` arrays made runtime-shared, half literals cast.
  std::vector<Edit> edits;
};

// parse_kernels plus the record above. Throws CompileError like parse_kernels.
MslScan scan_msl(const std::string& msl, const std::string& filename = "kernel.metal");

// Rules of Metal a C++ compiler would let through: no static local variables, no recursion
// (direct or mutual, among the functions the source defines; calls are matched by name).
// Throws CompileError ("<file>:<line>: ...") on the first violation.
void check_metal_rules(const std::string& msl, const std::string& filename = "kernel.metal");

}  // namespace tmps
