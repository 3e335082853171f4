"""Buffers: pooled allocation, zero-copy numpy and torch CPU tensors, pool statistics."""

from __future__ import annotations

import numpy as np
import pytest
import triton_mps
from tmps_testing import poisoned

COPY = r"""
#include <metal_stdlib>
using namespace metal;
kernel void copy_add(device const float* x [[buffer(0)]], device float* y [[buffer(1)]],
                     constant uint& n [[buffer(2)]], uint i [[thread_position_in_grid]]) {
  if (i < n) y[i] = x[i] + 1.0f;
}
"""



@pytest.fixture(scope="module", params=["sim", "metal-emu"])
def sim(request):
    """These tests run on the simulator and on the emulated Metal device (issue 11)."""
    if request.param == "metal-emu" and not any(d.is_emulated for d in triton_mps.devices()):
        pytest.skip("built without the emulated Metal device")
    return triton_mps.get_device(request.param)

def test_numpy_arrays_are_bound_without_copy(sim, rng):
    k = triton_mps.compile_msl(COPY, "copy_add", sim)
    x = rng.standard_normal(1000).astype(np.float32)
    y = poisoned(1000, np.float32)
    assert triton_mps.as_buffer(y, sim).address == y.ctypes.data
    k(x, y, 1000, grid=8, threads=128)
    sim.synchronize()
    np.testing.assert_allclose(y, x.astype(np.float64) + 1, rtol=1e-6)


def test_strided_views_start_at_first_element(sim, rng):
    k = triton_mps.compile_msl(COPY, "copy_add", sim)
    base = rng.standard_normal(2000).astype(np.float32)
    x = base[10:]  # offset view
    y = poisoned(500, np.float32)
    k(x, y, 500, grid=4, threads=128)
    sim.synchronize()
    np.testing.assert_allclose(y, x[:500].astype(np.float64) + 1, rtol=1e-6)
    with pytest.raises(triton_mps.InvalidArgument, match="negative strides"):
        triton_mps.as_buffer(base[::-1], sim)


def test_pool_backed_arrays(sim, rng):
    k = triton_mps.compile_msl(COPY, "copy_add", sim)
    x = triton_mps.empty(777, np.float32, sim)
    x[:] = rng.standard_normal(777)
    y = triton_mps.empty(777, np.float32, sim)
    y.fill(np.nan)
    buf = triton_mps.as_buffer(y, sim)
    assert buf.address == y.ctypes.data
    k(x, y, 777, grid=7, threads=128)
    sim.synchronize()
    np.testing.assert_allclose(y, x.astype(np.float64) + 1, rtol=1e-6)


def test_torch_cpu_tensors_zero_copy(sim):
    torch = pytest.importorskip("torch")
    k = triton_mps.compile_msl(COPY, "copy_add", sim)
    x = torch.randn(300, dtype=torch.float32)
    y = torch.full((300,), float("nan"))
    assert triton_mps.as_buffer(y, sim).address == y.data_ptr()
    k(x, y, 300, grid=3, threads=128)
    sim.synchronize()
    torch.testing.assert_close(y, x + 1)


def test_pool_reuse_and_stats(sim):
    sim.empty_cache()
    sim.reset_peak()
    s0 = sim.pool_stats()
    a = sim.buffer(100_000)
    s1 = sim.pool_stats()
    assert s1["active_bytes"] >= s0["active_bytes"] + 100_000
    assert s1["misses"] == s0["misses"] + 1
    address = a.address
    del a
    s2 = sim.pool_stats()
    assert s2["cached_bytes"] >= 100_000 and s2["active_bytes"] == s0["active_bytes"]
    b = sim.buffer(99_000)  # same size class: served from the cache
    s3 = sim.pool_stats()
    assert s3["hits"] == s2["hits"] + 1 and b.address == address
    assert s3["peak_active_bytes"] >= 100_000
    del b
    sim.empty_cache()
    assert sim.pool_stats()["cached_bytes"] == 0


def test_buffer_views_and_bounds(sim):
    b = sim.buffer(64)
    v = b.view(16, 32)
    assert v.address == b.address + 16 and v.nbytes == 32
    with pytest.raises(triton_mps.InvalidArgument):
        b.view(48, 32)


def test_device_listing(sim):
    devs = triton_mps.devices()
    assert devs[-1].is_simulator
    info = sim.info
    assert info["max_threads_per_threadgroup"] == 1024
    assert info["max_threadgroup_memory"] == 32768
    assert info["simd_width"] == 32
    assert triton_mps.get_device("sim") is not None


PREV = """
#include <metal_stdlib>
using namespace metal;
kernel void prev(device const float* x [[buffer(0)]], device float* y [[buffer(1)]],
                 uint i [[thread_position_in_grid]]) {
  y[i] = x[int(i) - 1];
}
"""


def test_torch_views_bind_their_whole_storage(sim):
    # One rule for a torch tensor on every path (python/triton_mps/binding.py, as the Triton
    # launcher's native path): its whole storage, the kernel's pointer at data_ptr(); so a
    # kernel may read below its pointer inside the storage, and memcheck allows it.
    torch = pytest.importorskip("torch")
    base = torch.arange(16, dtype=torch.float32)
    view = base[4:12]
    buf = triton_mps.as_buffer(view, sim)
    assert buf.address == view.data_ptr() and buf.nbytes == 12 * 4
    y = torch.full((8,), float("nan"))
    triton_mps.compile_msl(PREV, "prev", sim)(view, y, grid=1, threads=8)
    sim.synchronize()
    torch.testing.assert_close(y, base[3:11])
