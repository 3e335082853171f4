"""Cached `kernel[grid](...)` launch overhead of the mps backend vs a no-op launcher.

Rows (median of many calls, microseconds per call, torch CPU tensors, simulator):
  no-op launcher     Triton's cached path with the launcher replaced by a Python no-op:
                     the floor that Triton itself costs (binding, specialization, cache lookup).
  mps, empty grid    our launcher, grid (0,): every argument converted and validated in C++,
                     the dispatch validated, nothing executed.
  mps, 1 program     our launcher with one threadgroup actually executed on the simulator and
                     waited for (Triton semantics: results are readable when the call returns).
  launcher only      the native launcher called directly with Triton's arguments (no Triton).
The launcher's own overhead is (mps, empty grid) - (no-op launcher); the target (issue 10) is
(mps, empty grid) / (no-op launcher) <= 1.15.

The rows are measured interleaved: each round times every row for `calls` calls (median per
row), so load on a shared machine hits all rows alike; the table shows the median over rounds
and the ratio is the median of the per-round ratios.

Run: TRITON_BACKEND=mps python benchmarks/bench_launch.py [calls per round] [rounds]
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("TRITON_BACKEND", "mps")
os.environ.setdefault("TRITON_DEFAULT_FP_FUSION", "1")
if "TRITON_CACHE_DIR" not in os.environ:
    _CACHE = tempfile.TemporaryDirectory(prefix="tmps-bench-launch-")  # removed at exit
    os.environ["TRITON_CACHE_DIR"] = _CACHE.name

import torch  # noqa: E402
import triton  # noqa: E402
import triton.language as tl  # noqa: E402

REPO = Path(__file__).resolve().parent.parent


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offs < n_elements
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)


def median_us(fn, calls: int, warmup: int = 200) -> float:
    for _ in range(min(warmup, calls)):
        fn()
    samples = []
    for _ in range(calls):
        t = time.perf_counter_ns()
        fn()
        samples.append(time.perf_counter_ns() - t)
    return statistics.median(samples) / 1e3


def compile_kernel(x, y, out, n):
    """The compiled kernel (checked against torch before anything is timed)."""
    k = add_kernel[(1,)](x, y, out, n, BLOCK_SIZE=256)
    torch.testing.assert_close(out, x + y)
    return k, "triton_mps.compiler.compile_ttgir"


def main(calls: int = 1000, rounds: int = 15) -> dict[str, float]:
    from triton.runtime.driver import driver

    n = 256
    x, y, out = torch.rand(n), torch.rand(n), torch.empty(n)
    kernel, source = compile_kernel(x, y, out, n)

    launcher = kernel.run
    args = (0, 1, 1, 0, kernel.function, kernel.packed_metadata, None, None, None, x, y, out, n, 256)

    def noop():
        kernel._run = lambda *a: None  # Triton's CompiledKernel.run returns _run
        try:
            return median_us(lambda: add_kernel[(1,)](x, y, out, n, BLOCK_SIZE=256), calls)
        finally:
            kernel._run = launcher

    cases = {
        "mps, 1 program": lambda: median_us(lambda: add_kernel[(1,)](x, y, out, n, BLOCK_SIZE=256), calls),
        "mps, empty grid": lambda: median_us(lambda: add_kernel[(0,)](x, y, out, n, BLOCK_SIZE=256), calls),
        "launcher only, empty grid": lambda: median_us(lambda: launcher(*args), calls),
        "no-op launcher": noop,
    }
    samples: dict[str, list[float]] = {name: [] for name in cases}
    ratios = []
    for _ in range(rounds):
        for name, measure in cases.items():
            samples[name].append(measure())
        ratios.append(samples["mps, empty grid"][-1] / samples["no-op launcher"][-1])
    rows = {name: statistics.median(v) for name, v in samples.items()}

    dev = driver.active.utils.get_device_properties(driver.active.get_current_device())["name"]
    print(f"device: {dev}; kernel: vector add, 4 arguments + 1 constexpr, torch CPU tensors")
    print(f"MSL from: {source}")
    print(f"{rounds} interleaved rounds of {calls} calls per row; median over rounds")
    print(f"{'case':<28}{'us/call':>10}")
    for name, us in rows.items():
        print(f"{name:<28}{us:>10.2f}")
    noop_us = rows["no-op launcher"]
    ratio = statistics.median(ratios)
    print(f"{'launcher overhead (empty grid - no-op)':<40}{rows['mps, empty grid'] - noop_us:>7.2f} us")
    print(f"{'launch + run + wait (1 program - no-op)':<40}{rows['mps, 1 program'] - noop_us:>7.2f} us")
    print(f"{'ratio empty grid / no-op (median of rounds)':<44}{ratio:>6.2f}x  (target <= 1.15x)")
    return {**rows, "ratio": ratio}


if __name__ == "__main__":
    main(*(int(a) for a in sys.argv[1:3]))
