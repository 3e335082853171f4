"""Demo on the default device (Metal on a Mac, the CPU simulator elsewhere), each result checked
against a float64 reference and timed:

1. Triton kernels from kernels/ through the `mps` backend: a grouped fp16 matmul and a fused
   softmax, launched as `kernel[grid](...)` on torch tensors (skipped with a note where
   triton is not installed: on macOS it is built from source).
2. A hand-written Metal kernel through the native core: a reduction with barriers and
   simd_sum over a million threads.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
os.environ.setdefault("TRITON_BACKEND", "mps")  # off macOS the backend runs only when asked
os.environ.setdefault("TRITON_DEFAULT_FP_FUSION", "1")

import triton_mps  # noqa: E402


def check(name: str, err: float, tol: float, seconds: float) -> bool:
    ok = err <= tol
    print(f"  {name:<44} max error {err:.2e} (tolerance {tol:.0e}) {'OK' if ok else 'FAIL'}   {seconds * 1e3:8.1f} ms")
    return ok


def triton_part() -> bool:
    try:
        import torch
    except ImportError:
        print("Triton kernels: skipped: torch is not installed (pip install '.[demo]')")
        return True
    try:
        import triton  # noqa: F401
    except ImportError:
        print("Triton kernels: skipped: triton is not installed (no macOS wheels: build triton 3.9.0 from source)")
        return True
    sys.path.insert(0, str(ROOT))
    from kernels.matmul import matmul, matmul_reference
    from kernels.softmax import softmax, softmax_reference

    dev = "mps" if torch.backends.mps.is_available() else "cpu"  # CPU tensors on the simulator
    print(f"Triton kernels (torch device '{dev}'):")
    ok = True
    a = torch.randn(200, 96, device=dev, dtype=torch.float16)
    b = torch.randn(96, 136, device=dev, dtype=torch.float16)
    ref = matmul_reference(a.cpu(), b.cpu())
    for label in ("first call: compiles", "cached"):
        t0 = time.perf_counter()
        c = matmul(a, b)  # the first call compiles: TTIR -> TTGIR -> MSL -> pipeline
        ok &= check(f"matmul fp16 200x96 @ 96x136 ({label})", (c.cpu().double() - ref).abs().max().item(), 5e-2,
                    time.perf_counter() - t0)
    x = torch.randn(37, 1000, device=dev) * 4
    t0 = time.perf_counter()
    y = softmax(x)
    ok &= check("fused softmax 37x1000 fp32", (y.cpu().double() - softmax_reference(x.cpu())).abs().max().item(),
                1e-6, time.perf_counter() - t0)
    return ok


def metal_part(dev) -> bool:
    print("Metal kernel through the native core:")
    source = (Path(__file__).parent / "block_sum.metal").read_text()
    n, threads = 1_000_003, 256
    groups = -(-n // threads)
    t0 = time.perf_counter()
    kernel = triton_mps.compile_msl(source, "block_sum", dev)
    compile_s = time.perf_counter() - t0
    x = triton_mps.empty(n, np.float32, dev)
    x[:] = np.random.default_rng().standard_normal(n, dtype=np.float32)
    partial = triton_mps.empty(groups, np.float32, dev)
    partial.fill(np.nan)
    t0 = time.perf_counter()
    timing = kernel(x, partial, n, grid=groups, threads=threads, timed=True)
    dev.synchronize()
    wall = time.perf_counter() - t0
    ref = x.astype(np.float64).sum()
    err = abs(partial.astype(np.float64).sum() - ref) / max(1.0, abs(ref))
    ok = check(f"block_sum over {n} floats (relative)", err if np.isfinite(partial).all() else np.inf, 1e-4, wall)
    print(f"  compile {compile_s * 1e3:.1f} ms; {groups * threads} threads took "
          f"{timing.elapsed_ns / 1e6:.2f} ms on the device")
    return ok


def main() -> None:
    dev = triton_mps.default_device()
    print(f"device: {dev.name} ({'simulator' if dev.is_simulator else 'Metal'})")
    ok = triton_part()
    ok &= metal_part(dev)
    print("all results correct" if ok else "SOME RESULTS ARE WRONG")
    if not ok:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
