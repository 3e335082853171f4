// SIMD-group collapse for the simulator (issue 29): one kernel body rewritten so that one call
// runs the 32 lanes of a SIMD-group together instead of one fiber per lane.
//
// The body is cut at its synchronisation points (threadgroup barriers, SIMD-group functions)
// into regions; each region runs as a loop over the lanes, highest lane first (the order of
// the fiber scheduler's pass), and a value that lives across regions becomes an array of 32.
// Values and control flow that are the same in every lane (uniform: kernel arguments, the
// threadgroup's position, constants and what is computed from them alone) stay scalars and
// run once. A SIMD-group function runs in two passes over the lanes: each lane deposits its
// operand, then each lane computes its result from all deposits with the shim's own code
// (tmps_metal_simd.h, `::tmps_sim::sg_ctx`), so results are those of the fiber path. A
// simdgroup_matrix is one whole 8x8 matrix of the SIMD-group (tmps_metal_matrix.h, sg_matrix):
// simdgroup_load/store run per lane in the lane loops (each lane moves its own elements, as on
// fibers), a multiply runs once between them. `tid >> 5` of the linear thread index is uniform.
// A lane array of a number vector (uint4, half2, ...) that is only used by single components
// (and assigned whole at the start of a statement) is kept one array per component
// (tmps_metal_simd.h, soa): clang's loop vectorizer refuses any loop with vector-typed values,
// and scalar lane loops it vectorizes across the lanes (the host's SIMD units doing the
// SIMD-group's work).
//
// What the rewrite cannot prove safe it refuses, with the reason: the kernel then runs on
// fibers as before (never silently wrong). Also left to fibers: kernels with barriers but no
// SIMD-group function (nothing to gain: measured slower). Refused: a synchronisation point under control
// flow that is not uniform or inside an expression it cannot evaluate twice, a simdgroup_matrix
// declared under such control flow or used other than by load, store and multiply (thread_elements),
// a `return` before the end, `goto`/`switch` around a synchronisation point, preprocessor
// lines in the body, a name declared twice, brace initialisers of lane values, helper
// functions of the source that call SIMD-group functions.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "msl_scanner.h"

namespace tmps {

struct SimdCollapse {
  bool ok = false;
  std::string reason;    // why not (ok == false), for the simulator's counters
  std::string function;  // ok: C++ definition of `tmps_sg_fn_<index>` (see collapse_kernel)
};

// Rewrite kernel `kd` of `src` (the MSL after the simulator's edits: attributes blanked, line
// count kept). The function produced takes the kernel's parameters in order, except that a
// per-thread position parameter of type T becomes `const T*` (32 lanes), then
// `tmps_u32 tmps_active` (lanes present), `const volatile tmps_u32** tmps_lane_at` (pointed at
// the local holding the running lane, for the runtime's messages). `#line` directives name `filename`.
SimdCollapse collapse_kernel(const std::string& src, const KernelDecl& kd, const KernelExtra& kx,
                             const std::vector<KernelExtra>& all_kernels, size_t index, const std::string& filename);

// Process-wide counts of the kernels the simulator built, by collapse outcome ("collapsed",
// "not needed", or the reason it was refused): how much of a test suite runs collapsed.
void count_collapse(const std::string& outcome);
std::vector<std::pair<std::string, uint64_t>> collapse_counts();

// Whether a position parameter (tmps_sim_thread field) differs between the lanes of a SIMD-group.
bool position_varies_in_simdgroup(const std::string& field);

}  // namespace tmps
