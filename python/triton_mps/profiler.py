"""`triton_mps.profile()`: what each Triton launch cost.

    with triton_mps.profile() as prof:
        add_kernel[grid](x, y, out, n, BLOCK_SIZE=1024)
    print(prof.table())

Every `kernel[grid](...)` through the mps launcher inside the block is recorded by the native
launcher (csrc/python/triton_launch.cpp; when no profile is active that costs one flag test per launch):
kernel name, device, grid, threads per program, the wall time of the launch call on the host,
which stream it went to, and the device time of the dispatch:
- simulator: the execution time of the dispatch;
- Metal, our own queue: GPU timestamps at the start and end of the dispatch's compute pass (or
  its command buffer's GPU start/end where the GPU has no stage-boundary sampling);
- Metal, PyTorch's MPS stream: GPU start/end of the command buffer holding the dispatch; while
  profiling each dispatch there is committed alone (a command buffer of its own), so this is
  the dispatch plus the command buffer's start-up on the GPU: an upper bound.
While profiling, dispatches are timed, which on Metal gives each its own compute pass (own
queue) or command buffer (PyTorch's stream): profiled runs are slower than unprofiled ones.

`counters` holds the per-dispatch counters the launch result exposes: on the simulator with
counting on (`triton_mps.set_counters(True)` or TRITON_MPS_SIM_COUNTERS=1), device and
threadgroup bytes, barriers, SIMD-group functions and simdgroup_matrix FLOPs of that dispatch
(triton_mps/counters.py); `table()` sums the main ones per kernel (bytes, barriers, FLOPs).

Leaving the block waits for the devices that ran profiled launches, so device times are filled.
Profiles nest: an inner block's launches are in the outer one's records too.
"""

from __future__ import annotations

import contextlib
import statistics
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from . import _core


@dataclass
class LaunchRecord:
    kernel: str
    device: str
    grid: tuple[int, int, int]
    threads: int  # per program (threadgroup)
    wall_us: float  # the launch call on the host (includes waiting when the launch waited)
    stream: str  # "own" (our queue), "foreign" (PyTorch's MPS stream), "none" (empty grid: nothing ran)
    device_us: float | None = None  # None: nothing ran, or no time was recorded
    error: str = ""
    counters: dict[str, Any] = field(default_factory=dict)


def _counters_of(timing: Any) -> dict[str, Any]:
    """Counters a launch result exposes (a dict, or an object with a dict-valued `counters`)."""
    for name in ("counters", "stats"):
        value = getattr(timing, name, None)
        if callable(value):
            value = value()
        if isinstance(value, dict):
            return dict(value)
    return {}


def _record(raw: tuple) -> LaunchRecord:
    kernel, device, grid, threads, wall_ns, stream, timing = raw
    rec = LaunchRecord(kernel, device, tuple(grid), int(threads), wall_ns / 1e3, stream)
    if timing is not None:
        if timing.error:
            rec.error = timing.error
        elif timing.ready:
            rec.device_us = timing.elapsed_ns / 1e3
        rec.counters = _counters_of(timing)
    return rec


class Profile:
    """Launches recorded by one `profile()` block."""

    def __init__(self) -> None:
        self.records: list[LaunchRecord] = []

    def __iter__(self) -> Iterator[LaunchRecord]:
        return iter(self.records)

    def __len__(self) -> int:
        return len(self.records)

    def by_kernel(self) -> dict[str, list[LaunchRecord]]:
        out: dict[str, list[LaunchRecord]] = {}
        for r in self.records:
            out.setdefault(r.kernel, []).append(r)
        return out

    def table(self) -> str:
        """One row per kernel, in order of total device time (wall time where none)."""
        groups = self.by_kernel()
        counter_keys = sorted({k for r in self.records for k, v in r.counters.items()
                               if _is_number(v) and k not in _DETAIL_COUNTERS})
        header = ["kernel", "calls", "grid", "wall total ms", "wall mean us", "device total ms", "device mean us"]
        header += counter_keys
        rows = []
        for kernel, recs in groups.items():
            grids = sorted({r.grid for r in recs})
            grid = _grid_text(grids[0]) if len(grids) == 1 else f"{len(grids)} grids"
            wall = [r.wall_us for r in recs]
            dev = [r.device_us for r in recs if r.device_us is not None]
            row = [kernel, str(len(recs)), grid, f"{sum(wall) / 1e3:.3f}", f"{statistics.mean(wall):.1f}",
                   f"{sum(dev) / 1e3:.3f}" if dev else "-", f"{statistics.mean(dev):.1f}" if dev else "-"]
            row += [_number_text(sum(r.counters.get(k, 0) for r in recs if _is_number(r.counters.get(k, 0))))
                    for k in counter_keys]
            key = sum(dev) if dev else sum(wall)
            rows.append((key, row))
        rows.sort(key=lambda kv: -kv[0])
        body = [row for _, row in rows]
        total_wall = sum(r.wall_us for r in self.records)
        dev_all = [r.device_us for r in self.records if r.device_us is not None]
        body.append(["total", str(len(self.records)), "", f"{total_wall / 1e3:.3f}", "",
                     f"{sum(dev_all) / 1e3:.3f}" if dev_all else "-", ""] + [""] * len(counter_keys))
        widths = [max(len(str(c)) for c in col) for col in zip(header, *body, strict=True)]

        def line(cells: list[str]) -> str:
            return "  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(cells, widths,
                                                                                               strict=True)))

        errors = [r for r in self.records if r.error]
        text = [line(header), "  ".join("-" * w for w in widths)] + [line(r) for r in body]
        if errors:
            text.append(f"{len(errors)} launch(es) reported errors, first: {errors[0].kernel}: {errors[0].error}")
        return "\n".join(text)

    def __repr__(self) -> str:
        return f"<triton_mps.Profile: {len(self.records)} launches>"


# Simulator counters kept in each record but left out of table()'s columns (too many to read).
_DETAIL_COUNTERS = frozenset({
    "device_loads", "device_stores", "device_distinct_bytes_read", "device_distinct_bytes_written",
    "simd_collectives", "simdgroup_barriers", "simdgroup_matrix_ops", "simdgroup_matrix_exchanges",
    "memory_counted",
})


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _number_text(v: float) -> str:
    return f"{v:,}" if isinstance(v, int) else f"{v:.4g}"


def _grid_text(grid: tuple[int, int, int]) -> str:
    return f"({grid[0]}, {grid[1]}, {grid[2]})"


_active: list[Profile] = []


def _collect() -> None:
    """Move the native records into every active profile (nesting)."""
    raw = _core.triton_take_profile()
    if not raw:
        return
    names = {r[1] for r in raw}
    for dev in _devices_named(names):
        dev.synchronize()  # device times are filled once the dispatches completed
    records = [_record(r) for r in raw]
    for prof in _active:
        prof.records.extend(records)


def _devices_named(names: set[str]) -> list:
    from . import runtime

    return [d for d in runtime.devices() if d.name in names]


@contextlib.contextmanager
def profile() -> Iterator[Profile]:
    """Record every Triton launch made in the block (see the module documentation)."""
    prof = Profile()
    if not _active:
        _core.triton_take_profile()  # drop records nobody collected
    else:
        _collect()  # the enclosing profiles' launches so far are not this one's
    _active.append(prof)
    _core.triton_profile(True)
    try:
        yield prof
    finally:
        try:
            _collect()
        finally:
            _active.remove(prof)
            _core.triton_profile(bool(_active))
