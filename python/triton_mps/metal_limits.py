"""Metal's fixed limits, mirrored once from the native core's csrc/metal_limits.h (the test
tests/api/test_metal_limits.py checks that the two agree). A device or a pipeline may be lower
(`Device.info`, a pipeline's thread limit); nothing is ever higher. No imports: the compiler and
the language layer read these without the native core."""

MAX_THREADS_PER_THREADGROUP = 1024
MAX_THREADGROUP_MEMORY = 32768  # bytes, static and dynamic together
THREADGROUP_MEMORY_GRANULE = 16  # setThreadgroupMemoryLength takes multiples of 16
MAX_BUFFER_BINDINGS = 31  # [[buffer(0..30)]]
SIMD_WIDTH = 32  # threads per SIMD-group
MAX_SET_BYTES = 4096  # setBytes: larger constants need a buffer
