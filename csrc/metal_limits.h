// Metal's fixed limits, one home for the native core (every Apple GPU family we support; Apple's
// "Metal feature set tables"). A device or a pipeline may be lower (DeviceInfo, a pipeline's
// maxTotalThreadsPerThreadgroup); nothing is ever higher. Python mirrors these once, in
// python/triton_mps/metal_limits.py (tests/api/test_metal_limits.py checks they agree).
#pragma once

#include <cstdint>

namespace tmps::limits {

constexpr uint32_t kMaxThreadsPerThreadgroup = 1024;
constexpr uint32_t kMaxThreadgroupMemory = 32768;   // bytes, static and dynamic together
constexpr uint32_t kThreadgroupMemoryGranule = 16;  // setThreadgroupMemoryLength takes multiples of 16
constexpr uint32_t kMaxBufferBindings = 31;         // [[buffer(0..30)]]
constexpr uint32_t kSimdWidth = 32;                 // threads per SIMD-group
constexpr uint32_t kMaxSetBytes = 4096;             // setBytes: larger constants need a buffer

}  // namespace tmps::limits
