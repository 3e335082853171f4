"""The driver's user API (triton_mps/backend/driver.py, kernel_config.py): MPSDriver registration, kernel config,
memory_pool statistics, device_info, synchronize, and the pool's environment knobs."""

from __future__ import annotations

import os
import subprocess
import sys
import warnings

import numpy as np
import pytest
import torch
import triton
import triton.language as tl
import triton_mps
from triton.runtime.errors import OutOfResources
from triton_mps.backend import kernel_config
from triton_mps.backend.driver import MPSDriver


@triton.jit
def scale_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * 3.0, mask=mask)


@triton.jit
def dot_kernel(a_ptr, b_ptr, c_ptr, N: tl.constexpr):
    r = tl.arange(0, N)
    a = tl.load(a_ptr + r[:, None] * N + r[None, :])
    b = tl.load(b_ptr + r[:, None] * N + r[None, :])
    tl.store(c_ptr + r[:, None] * N + r[None, :], tl.dot(a, b, input_precision="ieee"))


@pytest.fixture
def config(mps_driver):
    mps_driver.reset_kernel_config()
    yield mps_driver
    mps_driver.reset_kernel_config()


def test_registered_on_triton_and_triton_mps(mps_driver):
    assert triton.runtime.driver.MPSDriver is MPSDriver
    assert triton_mps.MPSDriver is MPSDriver
    assert isinstance(mps_driver, MPSDriver)


def test_kernel_config_defaults_reach_compiled_metadata(config):
    other = triton.runtime.driver.MPSDriver()  # every instance shares the device's state
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        kernel_config._notified_num_stages[0] = False
        cfg = other.set_kernel_config(num_warps=8, num_stages=2, max_threads=512, shared_memory=16384)
    assert any("num_stages=2 has no effect" in str(w.message) for w in caught)
    assert cfg == {"num_warps": 8, "num_stages": 2, "max_threads": 512, "shared_memory": 16384}
    assert config.get_kernel_config() == cfg
    n = 1000
    x = torch.randn(n)
    out = torch.full_like(x, float("nan"))
    k = scale_kernel[(triton.cdiv(n, 256),)](x, out, n, BLOCK=256)
    torch.testing.assert_close(out, x * 3.0)
    assert (k.metadata.num_warps, k.metadata.num_stages) == (8, 2)
    assert (k.metadata.max_threads, k.metadata.shared_memory) == (512, 16384)
    k_explicit = scale_kernel[(triton.cdiv(n, 256),)](x, out, n, BLOCK=256, num_warps=2)  # the launch wins
    assert k_explicit.metadata.num_warps == 2
    with pytest.raises(OutOfResources, match="max_threads=512"):
        scale_kernel[(1,)](x, out, n, BLOCK=256, num_warps=32)  # 1024 threads over the cap
    config.reset_kernel_config()
    k_default = scale_kernel[(triton.cdiv(n, 256),)](x, out, n, BLOCK=256)
    assert k_default.metadata.num_warps == 4, "defaults changed: Triton's in-memory cache must not reuse the kernel"
    assert config.get_kernel_config()["max_threads"] == 1024


@pytest.mark.parametrize("values, limit", [
    ({"max_threads": 4096}, "limit of 1024 threads per threadgroup"),
    ({"shared_memory": 65536}, "limit of 32768 bytes of threadgroup memory"),
    ({"num_warps": 64}, "needs 2048 threads per threadgroup; the limit is 1024"),
    ({"num_warps": 3}, "power of 2"),
    ({"shared_memory": 1000}, "multiples of 16"),
    ({"max_threads": 100}, "multiple of the SIMD-group width"),
    ({"num_stages": 0}, "positive integer"),
])
def test_kernel_config_is_validated_against_the_device(config, values, limit):
    config.set_kernel_config(num_warps=2)
    with pytest.raises(ValueError, match=limit):
        config.set_kernel_config(**values)
    assert config.get_kernel_config()["num_warps"] == 2, "a rejected config leaves the previous one"
    with pytest.raises(ValueError, match="limit is 256"):  # checked together: num_warps against max_threads
        config.set_kernel_config(max_threads=256, num_warps=16)
    with pytest.raises(TypeError):
        config.set_kernel_config(num_threads=4)


def test_shared_memory_budget(config):
    a = torch.randn(32, 32)
    c = torch.full_like(a, float("nan"))
    unconstrained = dot_kernel[(1,)](a, a, c, N=32)
    assert unconstrained.metadata.shared == 8192  # the dot stages all of K at once
    config.set_kernel_config(shared_memory=4096)  # the dot planner stages K in smaller chunks
    c.fill_(float("nan"))
    planned = dot_kernel[(1,)](a, a, c, N=32)
    assert planned.metadata.shared == 4096
    torch.testing.assert_close(c, a @ a)
    config.set_kernel_config(shared_memory=1024)  # less than one staging of the operands: rounds
    c.fill_(float("nan"))
    small = dot_kernel[(1,)](a, a, c, N=32)
    assert 0 < small.metadata.shared <= 1024
    torch.testing.assert_close(c, a @ a)


def test_memory_pool_counts_pooled_and_wrapped_buffers(mps_driver):
    info = mps_driver.memory_pool()
    for key in ("current_allocated", "max_allocated", "cached", "num_allocs", "num_frees", "cache_hits",
                "cache_misses"):
        assert isinstance(info[key], int), key
    mps_driver.empty_cache()
    mps_driver.reset_peak_stats()
    base = mps_driver.memory_pool()
    dev = triton_mps.get_device(mps_driver.get_current_device())

    # Tensors bound to a launch: wrapped (their storage counted while the launch holds them).
    n = 4096
    x = torch.randn(n)
    out = torch.full_like(x, float("nan"))
    scale_kernel[(triton.cdiv(n, 1024),)](x, out, n, BLOCK=1024)
    torch.testing.assert_close(out, x * 3.0)
    after = mps_driver.memory_pool()
    assert after["num_allocs"] - base["num_allocs"] == 2
    assert after["num_frees"] - base["num_frees"] == 2, "a completed launch releases its wrappers"
    assert after["current_allocated"] == base["current_allocated"]
    assert after["max_allocated"] >= base["current_allocated"] + 2 * n * 4

    # Pooled buffers: allocated, cached on release, reused (a hit), emptied.
    arr = triton_mps.empty(10_000, np.float32, device=dev)
    held = mps_driver.memory_pool()
    cls = triton_mps._core.pool_size_class(40_000)
    assert held["current_allocated"] == after["current_allocated"] + cls
    assert held["cache_misses"] == after["cache_misses"] + 1
    del arr
    released = mps_driver.memory_pool()
    assert released["current_allocated"] == after["current_allocated"]
    assert released["cached"] >= cls
    arr = triton_mps.empty(10_000, np.float32, device=dev)
    assert mps_driver.memory_pool()["cache_hits"] == released["cache_hits"] + 1
    del arr
    mps_driver.empty_cache()
    final = mps_driver.memory_pool()
    assert final["cached"] == 0
    assert final["num_allocs"] - final["num_frees"] == base["num_allocs"] - base["num_frees"]
    mps_driver.reset_peak_stats()
    assert mps_driver.memory_pool()["max_allocated"] == final["current_allocated"]


def test_device_info_and_synchronize(mps_driver):
    info = mps_driver.device_info()
    assert info["backend"] in ("simulator", "metal", "metal-emulated")
    assert info["max_threads_per_threadgroup"] == 1024 and info["max_threadgroup_memory"] == 32768
    assert info["gpu_family"].startswith("apple") and info["unified_memory"] is True
    mps_driver.synchronize()


def test_pool_environment_knobs():
    env = {**os.environ, "MPS_MAX_POOL_SIZE": "1M", "MPS_MAX_BUFFER_AGE": "5"}
    code = "import triton_mps; print(triton_mps.default_device().pool_config())"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True).stdout
    assert "'max_cached_bytes': 1048576" in out and "'max_buffer_age_ms': 5" in out
    env["MPS_MAX_POOL_SIZE"] = "lots"
    bad = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert bad.returncode != 0 and "MPS_MAX_POOL_SIZE='lots'" in bad.stderr
