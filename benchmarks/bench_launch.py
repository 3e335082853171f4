"""Cached `kernel[grid](...)` launch overhead of the mps backend vs a no-op launcher.

Rows (median of many calls, microseconds per call, torch CPU tensors, simulator):
  no-op launcher     Triton's cached path with the launcher replaced by a Python no-op:
                     the floor that Triton itself costs (binding, specialization, cache lookup).
  mps, empty grid    our launcher, grid (0,): every argument converted and validated in C++,
                     the dispatch validated, nothing executed.
  mps, 1 program     our launcher with one threadgroup actually executed on the simulator and
                     waited for (Triton semantics: results are readable when the call returns).
  launcher only      the native launcher called directly with Triton's arguments (no Triton).
The launcher's own overhead is (mps, empty grid) - (no-op launcher).

Run: TRITON_BACKEND=mps python benchmarks/bench_launch.py
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
os.environ.setdefault("TRITON_CACHE_DIR", tempfile.mkdtemp(prefix="tmps-bench-launch-"))

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


def median_us(fn, calls: int) -> float:
    for _ in range(min(200, calls)):
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


def main(calls: int = 5000) -> None:
    from triton.runtime.driver import driver

    n = 256
    x, y, out = torch.rand(n), torch.rand(n), torch.empty(n)
    kernel, source = compile_kernel(x, y, out, n)

    rows = []
    launcher = kernel.run
    rows.append(("mps, 1 program", median_us(lambda: add_kernel[(1,)](x, y, out, n, BLOCK_SIZE=256), calls)))
    rows.append(("mps, empty grid", median_us(lambda: add_kernel[(0,)](x, y, out, n, BLOCK_SIZE=256), calls)))
    args = (0, 1, 1, 0, kernel.function, kernel.packed_metadata, None, None, None, x, y, out, n, 256)
    rows.append(("launcher only, empty grid", median_us(lambda: launcher(*args), calls)))
    kernel._run = lambda *a: None  # Triton's CompiledKernel.run returns _run
    rows.append(("no-op launcher", median_us(lambda: add_kernel[(1,)](x, y, out, n, BLOCK_SIZE=256), calls)))
    kernel._run = launcher

    dev = driver.active.utils.get_device_properties(driver.active.get_current_device())["name"]
    print(f"device: {dev}; kernel: vector add, 4 arguments + 1 constexpr, torch CPU tensors")
    print(f"MSL from: {source}")
    print(f"median of {calls} calls per row")
    print(f"{'case':<28}{'us/call':>10}")
    for name, us in rows:
        print(f"{name:<28}{us:>10.2f}")
    noop = dict(rows)["no-op launcher"]
    print(f"{'launcher overhead (empty grid - no-op)':<40}{dict(rows)['mps, empty grid'] - noop:>7.2f} us")
    print(f"{'launch + run + wait (1 program - no-op)':<40}{dict(rows)['mps, 1 program'] - noop:>7.2f} us")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 5000)
