"""Per-dispatch traffic and FLOP counters of the simulator.

    triton_mps.set_counters(True)          # or TRITON_MPS_SIM_COUNTERS=1 before the first dispatch
    kernel[grid](...)                      # any launch on the simulator (kernel[grid] or compile_msl)
    stats = triton_mps.last_dispatch_stats()

`stats` describes the last simulated dispatch that ran with counting on (None if none did):
device-memory bytes read and written (every instrumented load and store, and the distinct bytes
of the bound buffers, exactly, from a bitmap per buffer), threadgroup-memory bytes, threadgroup
barriers (once per threadgroup that passed one), SIMD-group functions and `simdgroup_barrier`s
(once per SIMD-group), and `simdgroup_matrix` 8x8x8 multiplies with their FLOPs (1024 each).

The same totals (without the per-buffer detail) come with each launch result: the `counters`
dict of the `Timing` a timed launch returns (`kernel(..., timed=True)` in the direct API) and
of every record of `triton_mps.profile()` (summed per kernel in its table).

Device traffic is seen through memcheck's instrumentation, so it is counted only for kernels
built with memcheck (the default; `memory_counted` says whether it was). `scalar_flops` counts
the scalar floating-point work as the compiler marks it in the MSL (`TMPS_FLOPS(n)` after each
float add, sub, mul or div: 1 per element; fma: 2; a dot's FMA path: 2 per multiply-add; other
ops, such as min/max, comparisons, conversions and math functions, count 0). Every thread's
work counts, also threads whose stores are masked or that hold copies, as on a GPU. The
markers compile to nothing on Metal and in the simulator's normal builds; with counting on, a
kernel runs from a second build where they are live (built on its first counted dispatch).
Counting routes every access through the runtime: a dispatch runs several times slower, so
counting is off by default.
"""

from __future__ import annotations

from . import _core


def set_counters(on: bool) -> None:
    """Turn the simulator's per-dispatch counters on or off (process-wide)."""
    _core.sim_set_counters(bool(on))


def counters_enabled() -> bool:
    return bool(_core.sim_counters_enabled())


def last_dispatch_stats(sync: bool = True) -> dict | None:
    """Counters of the last simulated dispatch that ran with counting on, or None.

    Launches are batched: with `sync` (default) the simulator device is synchronized first, so
    the dispatch just launched has run."""
    if sync:
        for dev in _sim_devices():
            dev.synchronize()
    stats = _core.sim_last_dispatch_counters()
    if stats is None:
        return None
    stats = dict(stats)
    stats["device_bytes"] = stats["device_bytes_read"] + stats["device_bytes_written"]
    stats["device_distinct_bytes"] = stats["device_distinct_bytes_read"] + stats["device_distinct_bytes_written"]
    stats["threadgroup_bytes"] = stats["threadgroup_bytes_read"] + stats["threadgroup_bytes_written"]
    return stats


def _sim_devices() -> list:
    from .runtime import devices

    return [d for d in devices() if d.is_simulator]
