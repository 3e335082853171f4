"""Benchmarking and autotuning on the emulated Metal device (issue 18 item 5): dispatches whose
GPU timestamps failed are not 0 ms, and a pipeline the Metal compiler limits below the kernel's
threadgroup size is an OutOfResources that the autotuner prunes."""

from __future__ import annotations

import math

import pytest
import torch
import triton
import triton.language as tl
import triton_mps
from triton.runtime.errors import OutOfResources
from triton_mps import _core

pytestmark = pytest.mark.skipif(not hasattr(_core, "emu_stats"), reason="built without the emulated Metal device")


@triton.jit
def bench_add_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + 2.0, mask=mask)


@triton.autotune(configs=[triton.Config({"BLOCK": 64}, num_warps=1), triton.Config({"BLOCK": 128}, num_warps=4)],
                 key=["n"])
@triton.jit
def register_limited_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * 3.0 - 1.0, mask=mask)


@triton.jit
def limited_direct_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) - 5.0, mask=mask)


@pytest.fixture
def on_emu(mps_driver):
    before = mps_driver.get_current_device()
    mps_driver.set_current_device(next(i for i, d in enumerate(triton_mps.devices()) if d.is_emulated))
    _core.emu_clear_violations()
    yield mps_driver
    _core.emu_fail_timestamps(False)
    _core.emu_set_hinted_thread_limit(1024)
    mps_driver.set_current_device(before)
    assert _core.emu_violations() == []


def test_do_bench_refuses_dispatches_without_gpu_timestamps(on_emu):
    n = 1000
    x = torch.randn(n)
    out = torch.empty_like(x)
    bench = on_emu.get_benchmarker()

    def run():
        bench_add_kernel[(triton.cdiv(n, 256),)](x, out, n, BLOCK=256)

    assert bench(run, warmup=1, rep=1) > 0
    torch.testing.assert_close(out, x + 2)
    _core.emu_fail_timestamps(True)  # every counter sample reads MTLCounterErrorValue
    with pytest.raises(triton_mps.DispatchError, match="no GPU timestamp was recorded"):
        bench(run, warmup=1, rep=1)  # used to return 0.0 ms: the autotuner's favourite


def test_register_limited_pipeline_is_out_of_resources(on_emu):
    # The Metal compiler may give a kernel fewer threads per threadgroup than it was built for.
    _core.emu_set_hinted_thread_limit(64)
    n = 500
    x = torch.randn(n)
    out = torch.empty_like(x)
    with pytest.raises(OutOfResources) as info:
        limited_direct_kernel[(triton.cdiv(n, 128),)](x, out, n, BLOCK=128, num_warps=4)
    assert isinstance(info.value, triton_mps.LimitExceeded)  # still our clear error for direct users
    assert "Metal can run at most 64 threads" in str(info.value) and "limited_direct_kernel" in str(info.value)
    assert (info.value.required, info.value.limit) == (128, 64)


def test_autotune_prunes_a_register_limited_config(on_emu):
    _core.emu_set_hinted_thread_limit(64)
    n = 700
    x = torch.randn(n)
    out = torch.full_like(x, float("nan"))
    register_limited_kernel[lambda meta: (triton.cdiv(n, meta["BLOCK"]),)](x, out, n)
    torch.testing.assert_close(out, x * 3 - 1)
    timings = {c.num_warps: t[0] for c, t in register_limited_kernel.configs_timings.items()}
    assert math.isinf(timings[4]) and math.isfinite(timings[1]) and timings[1] > 0, timings
    assert register_limited_kernel.best_config.num_warps == 1
