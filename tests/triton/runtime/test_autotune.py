"""triton.autotune end to end on the mps backend: our benchmarker times the configs, and
configs over the threadgroup limits (the device's or the kernel config's) are pruned."""

from __future__ import annotations

import math

import torch
import triton
import triton.language as tl
from triton_mps.backend import driver as mps_backend_driver

CONFIGS = [
    triton.Config({"BLOCK": 128}, num_warps=1),
    triton.Config({"BLOCK": 256}, num_warps=2),
    triton.Config({"BLOCK": 256}, num_warps=4),   # over max_threads=64 below: pruned
    triton.Config({"BLOCK": 1024}, num_warps=64),  # 2048 threads, over Metal's 1024: pruned
]


@triton.autotune(configs=CONFIGS, key=["n"])
@triton.jit
def tuned_add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)


def test_autotune_prunes_configs_over_the_limits(mps_driver):
    mps_driver.set_kernel_config(max_threads=64)
    try:
        n = 3000
        x, y = torch.randn(n), torch.randn(n)
        out = torch.full_like(x, float("nan"))
        tuned_add_kernel[lambda meta: (triton.cdiv(n, meta["BLOCK"]),)](x, y, out, n)
        torch.testing.assert_close(out, x + y)
    finally:
        mps_driver.reset_kernel_config()
    assert tuned_add_kernel.do_bench is mps_backend_driver.do_bench, "timed by the driver's benchmarker"
    timings = {(c.kwargs["BLOCK"], c.num_warps): t[0] for c, t in tuned_add_kernel.configs_timings.items()}
    assert math.isinf(timings[(256, 4)]) and math.isinf(timings[(1024, 64)]), timings
    assert all(math.isfinite(timings[k]) and timings[k] > 0 for k in ((128, 1), (256, 2))), timings
    best = tuned_add_kernel.best_config
    assert (best.kwargs["BLOCK"], best.num_warps) in ((128, 1), (256, 2))


@triton.jit
def _scale_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * 2, mask=offs < n)


class _SlowClock:
    """time.perf_counter for the benchmarker, 0.2 s further at every reading: each run seems to
    take longer than the whole default budget (warmup 25 ms + rep 100 ms)."""

    def __init__(self) -> None:
        self.now = 0.0

    def perf_counter(self) -> float:
        self.now += 0.2
        return self.now


def _bench_calls(monkeypatch, clock) -> tuple[int, float]:
    from triton_mps.backend import benchmarking

    if clock is not None:
        monkeypatch.setattr(benchmarking, "time", clock)
    x = torch.randn(1000)
    out = torch.full_like(x, float("nan"))
    calls = 0

    def fn():
        nonlocal calls
        calls += 1
        _scale_kernel[(4,)](x, out, x.numel(), BLOCK=256)

    ms = mps_backend_driver.do_bench(fn)
    torch.testing.assert_close(out, x * 2)
    return calls, ms


def test_a_run_longer_than_the_budget_is_not_estimated_five_times(monkeypatch):
    # Triton's do_bench: 1 first call, 5 estimate runs, then warmup and rep runs (at least 1
    # each). When a run alone takes the budget, one estimate run is enough: 4 calls, not 8.
    calls, ms = _bench_calls(monkeypatch, _SlowClock())
    assert calls == 4, calls
    assert ms > 0  # timed by the device's dispatch timings, not by this clock


def test_a_fast_run_is_still_estimated_five_times(monkeypatch):
    calls, _ = _bench_calls(monkeypatch, None)
    assert calls >= 1 + 5 + 1 + 1, calls
