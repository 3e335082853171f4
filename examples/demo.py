"""Demo: a two-level reduction kernel (SIMD-group sums + threadgroup memory + barriers) on the
default device — Metal on a Mac, the CPU simulator elsewhere — checked against numpy."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import triton_mps

SOURCE = (Path(__file__).parent / "block_sum.metal").read_text()


def main() -> None:
    dev = triton_mps.default_device()
    print(f"device: {dev.name} ({'simulator' if dev.is_simulator else 'Metal'})")
    n, threads = 1_000_003, 256
    groups = -(-n // threads)

    t0 = time.perf_counter()
    kernel = triton_mps.compile_msl(SOURCE, "block_sum", dev)
    compile_s = time.perf_counter() - t0

    rng = np.random.default_rng()
    x = triton_mps.empty(n, np.float32, dev)
    x[:] = rng.standard_normal(n, dtype=np.float32)
    partial = triton_mps.empty(groups, np.float32, dev)
    partial.fill(np.nan)

    t0 = time.perf_counter()
    timing = kernel(x, partial, n, grid=groups, threads=threads, timed=True)
    dev.synchronize()
    wall_s = time.perf_counter() - t0

    got = partial.astype(np.float64).sum()
    ref = x.astype(np.float64).sum()
    err = abs(got - ref) / max(1.0, abs(ref))
    ok = bool(np.isfinite(partial).all()) and err < 1e-4
    print(f"sum of {n} floats: got {got:.6f}, numpy {ref:.6f}, relative error {err:.2e} -> {'OK' if ok else 'FAIL'}")
    print(f"compile {compile_s * 1e3:.1f} ms; dispatch of {groups * threads} threads: "
          f"{timing.elapsed_ns / 1e6:.2f} ms on the device, {wall_s * 1e3:.2f} ms wall")
    if not ok:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
