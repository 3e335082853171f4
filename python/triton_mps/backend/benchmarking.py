"""Benchmarking for the `mps` driver: `do_bench` timed by the device's own dispatch timings."""

from __future__ import annotations

import time

from .device import _core

# ---- do_bench ------------------------------------------------------------------------------

def do_bench(fn, warmup=25, rep=100, grad_to_none=None, quantiles=None, return_mode="mean"):
    """triton.testing.do_bench, timed by the device's timestamps of our dispatches.

    Each sample is the sum of (end - start) of the dispatches `fn` made (GPU timestamps on Metal;
    the simulator's execution time of each dispatch there). If `fn` makes no dispatch through
    the mps launcher (e.g. only torch ops), falls back to triton.testing.do_bench.
    """
    import triton.testing as tt

    core = _core()
    driver = _active_driver()
    di = driver.get_device_interface()

    fn()
    di.synchronize()
    core.triton_timing_capture(True)
    try:
        cache = driver.get_empty_cache_for_benchmark()
        # The estimate takes up to 5 runs, as Triton's, but stops once they have taken the whole
        # budget (warmup + rep): on the simulator one run of a large kernel can exceed it, and
        # an autotuner's 5 extra runs per config then cost more than the measurement itself.
        t0 = time.perf_counter()
        runs = 0
        while runs < 5:
            driver.clear_cache(cache)
            fn()
            runs += 1
            if (time.perf_counter() - t0) * 1e3 >= warmup + rep:
                break
        di.synchronize()
        estimate_ms = (time.perf_counter() - t0) * 1e3 / runs
        if not core.triton_take_timings():
            core.triton_timing_capture(False)
            return tt.do_bench(fn, warmup=warmup, rep=rep, grad_to_none=grad_to_none, quantiles=quantiles,
                               return_mode=return_mode)
        n_warmup = max(1, int(warmup / max(estimate_ms, 1e-3)))
        n_repeat = max(1, int(rep / max(estimate_ms, 1e-3)))
        for _ in range(n_warmup):
            fn()
        di.synchronize()
        core.triton_take_timings()
        samples = []
        for _ in range(n_repeat):
            if grad_to_none is not None:
                for x in grad_to_none:
                    x.grad = None
            driver.clear_cache(cache)
            fn()
            samples.append(core.triton_take_timings())
        di.synchronize()  # fills the timings of the last launches on Metal
    finally:
        core.triton_timing_capture(False)
    times = _sample_times(samples)
    return tt._summarize_statistics(times, quantiles, return_mode)


def _sample_times(samples: list) -> list[float]:
    """Milliseconds of each sample whose dispatches all have GPU times. A dispatch whose
    timestamps failed has no time (not 0 ms, which would make the autotuner pick it): its
    sample is dropped, and if every sample lost one, do_bench raises."""
    times = [sum(t.elapsed_ns for t in s) / 1e6 for s in samples if all(t.ready and not t.error for t in s)]
    if not times:
        errors = {t.error or "no timing recorded" for s in samples for t in s if not t.ready or t.error}
        raise _core().DispatchError("do_bench: no sample has GPU timings for all its dispatches: " +
                                    "; ".join(sorted(errors)))
    return times


def _active_driver():
    from triton.runtime.driver import driver

    return driver.active
