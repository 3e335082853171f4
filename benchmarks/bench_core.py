"""Native-core numbers, measured side by side in one run (prints a table).

- simulator: 1M-thread reduction with barriers and simd_sum, 128 threads per threadgroup
- kernel compile: cold (empty disk cache), disk-cached (new in-memory cache), in-memory cached
- buffer pool: allocate+free with the pool's cache vs fresh device allocations (cache disabled)

Usage: python benchmarks/bench_core.py [--device sim|metal]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid

import numpy as np

REDUCE = r"""
#include <metal_stdlib>
using namespace metal;
// UNIQUE
kernel void reduce(device const float* x [[buffer(0)]], device float* out [[buffer(1)]],
                   threadgroup float* s [[threadgroup(0)]],
                   uint gid [[thread_position_in_grid]], uint lid [[thread_index_in_threadgroup]],
                   uint tpg [[threads_per_threadgroup]], uint tg [[threadgroup_position_in_grid]],
                   uint lane [[thread_index_in_simdgroup]], uint sg [[simdgroup_index_in_threadgroup]]) {
  float v = simd_sum(x[gid]);
  if (lane == 0) s[sg] = v;
  threadgroup_barrier(mem_flags::mem_threadgroup);
  for (uint w = tpg / 64; w > 0; w >>= 1) {
    if (lid < w) s[lid] += s[lid + w];
    threadgroup_barrier(mem_flags::mem_threadgroup);
  }
  if (lid == 0) out[tg] = s[0];
}
"""


AXPY = r"""
#include <metal_stdlib>
using namespace metal;
kernel void axpy(device const float* x [[buffer(0)]], device float* y [[buffer(1)]],
                 constant float& a [[buffer(2)]], uint i [[thread_position_in_grid]]) {
  y[i] = a * x[i] + y[i];
}
"""


def timeit(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default="sim")
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    cache = tempfile.TemporaryDirectory(prefix="tmps-bench-")  # removed when main returns
    os.environ["TRITON_MPS_CACHE_DIR"] = cache.name
    import triton_mps

    dev = triton_mps.get_device(args.device)
    rows: list[tuple[str, str]] = []

    # Compile: cold, then disk-cached (fresh in-memory cache), then in-memory.
    src = REDUCE.replace("UNIQUE", uuid.uuid4().hex)
    t0 = time.perf_counter()
    k = triton_mps.compile_msl(src, "reduce", dev)
    cold = time.perf_counter() - t0
    dev.clear_pipeline_cache()
    t0 = time.perf_counter()
    triton_mps.compile_msl(src, "reduce", dev)
    disk = time.perf_counter() - t0
    mem = timeit(lambda: triton_mps.compile_msl(src, "reduce", dev), 50)
    # A new process: nothing loaded, the compiled object comes from the disk cache.
    probe = (
        "import sys, time, triton_mps as t; src = sys.stdin.read(); d = t.get_device(sys.argv[1]);"
        "t0 = time.perf_counter(); t.compile_msl(src, 'reduce', d); print(time.perf_counter() - t0)"
    )
    other = float(subprocess.run([sys.executable, "-c", probe, args.device], input=src, text=True,
                                 capture_output=True, check=True).stdout)
    rows += [("compile, cold (strict check + build)", f"{cold * 1e3:.1f} ms"),
             ("compile, disk cache hit (new process)", f"{other * 1e3:.2f} ms"),
             ("compile, loaded-library hit (same process)", f"{disk * 1e3:.2f} ms"),
             ("compile, in-memory hit", f"{mem * 1e6:.1f} us"),
             ("ratio cold / disk hit (new process)", f"{cold / other:.0f}x")]

    # 1M threads, 128 per threadgroup, barriers + simd_sum.
    n, tpg = 1 << 20, 128
    x = triton_mps.empty(n, np.float32, dev)
    x[:] = np.random.default_rng().standard_normal(n)
    out = triton_mps.empty(n // tpg, np.float32, dev)

    def run():
        k(x, out, grid=n // tpg, threads=tpg, threadgroup_memory=[(0, 4 * (tpg // 32))])
        dev.synchronize()

    run()
    ref = x.astype(np.float64).reshape(-1, tpg).sum(1)
    assert np.allclose(out, ref, rtol=1e-4, atol=1e-4), "reduction result is wrong"
    t = timeit(run, args.repeat)
    rows.append((f"reduction, {n} threads, {tpg}/threadgroup", f"{t * 1e3:.1f} ms ({t / n * 1e9:.0f} ns/thread)"))

    # Memcheck (on by default) against a build without it: the same kernels, side by side.
    k_off = triton_mps.compile_msl(src, "reduce", dev, memcheck=False)

    def run_off():
        k_off(x, out, grid=n // tpg, threads=tpg, threadgroup_memory=[(0, 4 * (tpg // 32))])
        dev.synchronize()

    t_off = timeit(run_off, args.repeat)
    axpy = {m: triton_mps.compile_msl(AXPY, "axpy", dev, memcheck=m) for m in (True, False)}
    y = triton_mps.empty(n, np.float32, dev)

    def run_axpy(m):
        axpy[m](x, y, 2.0, grid=n // 256, threads=256)
        dev.synchronize()

    t_axpy = {m: timeit(lambda m=m: run_axpy(m), args.repeat) for m in (True, False)}
    rows.append(("memcheck on / off: reduction", f"{t * 1e3:.1f} / {t_off * 1e3:.1f} ms = {t / t_off:.2f}x"))
    rows.append(("memcheck on / off: axpy, 1M elements",
                 f"{t_axpy[True] * 1e3:.1f} / {t_axpy[False] * 1e3:.1f} ms = {t_axpy[True] / t_axpy[False]:.2f}x"))

    # Pool: cached reuse vs fresh allocation, same sizes, same run.
    cfg = dev.pool_config()
    for size in (4 << 10, 1 << 20, 64 << 20):
        reps = 2000 if size < (1 << 20) else 200

        def churn(size=size, reps=reps):
            for _ in range(reps):
                b = dev.buffer(size)
                del b

        dev.set_pool_config(cfg["max_cached_bytes"], cfg["max_buffer_age_ms"])
        churn()
        pooled = timeit(churn, 3) / reps
        dev.set_pool_config(0, cfg["max_buffer_age_ms"])  # no caching: every request allocates
        fresh = timeit(churn, 3) / reps
        rows.append((f"alloc+free {size >> 10} KiB: pool / fresh",
                     f"{pooled * 1e6:.2f} us / {fresh * 1e6:.2f} us = {fresh / pooled:.1f}x faster"))
    dev.set_pool_config(cfg["max_cached_bytes"], cfg["max_buffer_age_ms"])

    width = max(len(r[0]) for r in rows)
    print(f"device: {dev.name}")
    for name, value in rows:
        print(f"{name:<{width}}  {value}")


if __name__ == "__main__":
    main()
