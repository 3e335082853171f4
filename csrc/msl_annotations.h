// The MSL annotations: facts our TTGIR -> MSL compiler writes into the MSL text for readers that
// get only the text (Triton's load_binary, the scanner, the simulator). The list is
// python/triton_mps/compiler/abi.py's ANNOTATIONS (format, writers, readers, meaning), mirrored
// here name for name and text for text; tests/compiler/test_msl_annotations.py checks that the
// two agree. Change both together.
#pragma once

#include <string_view>

namespace tmps::msl_annotations {

struct Annotation {
  std::string_view name;  // abi.Annotation.name
  std::string_view text;  // the literal text that marks it in the MSL
};

// `// triton-mps: threads_per_threadgroup=<N>`, the last line (read in Python: backend/device.py).
inline constexpr std::string_view kThreadsPerThreadgroup = "// triton-mps: threads_per_threadgroup=";
// `// tmps-sim: effect_threads=<N>` alone on the line before `kernel` (msl_scanner.cpp).
inline constexpr std::string_view kEffectThreads = "// tmps-sim: effect_threads=";
// `#define TMPS_COHERENT coherent(device)`: pointer types spelled through it (msl_scanner.cpp).
inline constexpr std::string_view kCoherent = "TMPS_COHERENT";
// Device-scope fences (read in Python: the MSL version, backend/device.py).
inline constexpr std::string_view kDeviceFence = "TMPS_DEVICE_FENCE()";
// `TMPS_FLOPS(n);` scalar FLOPs (sim/sim_device.cpp's counting build defines the macro).
inline constexpr std::string_view kFlops = "TMPS_FLOPS(";
// `// @ <file>.py:<line>`: the Triton source line of the code below (sim/memcheck.cpp).
inline constexpr std::string_view kOrigin = "// @ ";
// `// @buffer argN` ... `// @buffer -`: the parameter accesses go through (sim/memcheck.cpp).
inline constexpr std::string_view kBuffer = "// @buffer ";

inline constexpr Annotation kAnnotations[] = {
    {"threads_per_threadgroup", kThreadsPerThreadgroup},
    {"effect_threads", kEffectThreads},
    {"coherent", kCoherent},
    {"device_fence", kDeviceFence},
    {"flops", kFlops},
    {"origin", kOrigin},
    {"buffer", kBuffer},
};

}  // namespace tmps::msl_annotations
