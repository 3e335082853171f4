"""Metal's limits have one home per language: csrc/metal_limits.h and its mirror
python/triton_mps/metal_limits.py. They must agree, and the devices must not claim more."""

from __future__ import annotations

import triton_mps
from triton_mps import _core, metal_limits


def test_python_mirror_equals_the_native_limits():
    native = _core.metal_limits()
    mirrored = {name.lower(): value for name, value in vars(metal_limits).items() if name.isupper()}
    assert mirrored == native


def test_no_device_claims_more_than_metal():
    for dev in triton_mps.devices():
        info = dev.info
        assert 0 < info["max_threads_per_threadgroup"] <= metal_limits.MAX_THREADS_PER_THREADGROUP
        assert 0 < info["max_threadgroup_memory"] <= metal_limits.MAX_THREADGROUP_MEMORY
        assert info["max_buffer_bindings"] <= metal_limits.MAX_BUFFER_BINDINGS
        assert info["simd_width"] == metal_limits.SIMD_WIDTH
