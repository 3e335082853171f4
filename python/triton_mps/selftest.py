"""`python -m triton_mps selftest`: a battery of checks on one device, printed as a report to
paste into a bug report. On a Mac it checks what only hardware can (docs/mac-checklist.md); on
Linux it runs on the simulator and on the emulated Metal device.

Every check compares with a numpy reference; outputs are poisoned first, so a kernel that does
not run fails. A check that needs something absent (torch, MPS) is reported as skipped.
"""

from __future__ import annotations

import argparse
import platform
import sys
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from . import _core, runtime

ADD = """
kernel void add(device const float* x [[buffer(0)]], device const float* y [[buffer(1)]],
                device float* out [[buffer(2)]], constant uint& n [[buffer(3)]],
                uint i [[thread_position_in_grid]]) {
  if (i < n) out[i] = x[i] + y[i];
}
"""

# Every program stores its block's sum, then takes a ticket; the last one adds the partials, read
# through a coherent(device) pointer at MSL 3.2 as Triton kernels do (docs/msl-versions.md).
LAST_BLOCK = """#include <metal_stdlib>
using namespace metal;
#if __METAL_VERSION__ >= 320
#define COHERENT coherent(device)
#else
#define COHERENT
#endif
kernel void last_block(device const float* x [[buffer(0)]], COHERENT device float* partial [[buffer(1)]],
                       device atomic_uint* counter [[buffer(2)]], device float* out [[buffer(3)]],
                       constant uint& blocks [[buffer(4)]],
                       uint tid [[thread_index_in_threadgroup]], uint tg [[threadgroup_position_in_grid]]) {
  threadgroup float sums[256];
  threadgroup bool last;
  sums[tid] = x[tg * 256 + tid];
  threadgroup_barrier(mem_flags::mem_threadgroup);
  for (uint s = 128; s > 0; s >>= 1) {
    if (tid < s) sums[tid] += sums[tid + s];
    threadgroup_barrier(mem_flags::mem_threadgroup);
  }
  if (tid == 0) {
    partial[tg] = sums[0];
#if __METAL_VERSION__ >= 320
    atomic_thread_fence(mem_flags::mem_device, memory_order_seq_cst, thread_scope_device);
#endif
    last = atomic_fetch_add_explicit(counter, 1u, memory_order_relaxed) == blocks - 1;
#if __METAL_VERSION__ >= 320
    atomic_thread_fence(mem_flags::mem_device, memory_order_seq_cst, thread_scope_device);
#endif
  }
  threadgroup_barrier(mem_flags::mem_device);
  if (last && tid == 0) {
    float total = 0.0f;
    for (uint b = 0; b < blocks; ++b) total += partial[b];
    out[0] = total;
  }
}
"""


@dataclass
class Result:
    name: str
    status: str  # "ok", "FAIL", "skip"
    detail: str
    seconds: float


def _poison(n: int, dtype=np.float32, device=None) -> np.ndarray:
    a = runtime.empty(n, dtype, device)
    a[...] = np.nan if np.dtype(dtype).kind == "f" else -1
    return a


def check_numpy_and_pool(dev) -> str:
    k = runtime.compile_msl(ADD, "add", dev)
    rng = np.random.default_rng(0)
    n = 100_003
    x = rng.standard_normal(n).astype(np.float32)[1:]  # unaligned host memory (numpy)
    y = runtime.empty(n - 1, np.float32, dev)           # a pooled device buffer
    y[:] = rng.standard_normal(n - 1)
    out = _poison(n - 1, device=dev)
    k(x, y, out, n - 1, grid=(n + 255) // 256, threads=256)
    dev.synchronize()
    np.testing.assert_array_equal(out, x + y)
    return f"{n - 1} floats"


def check_torch_cpu(dev) -> str:
    try:
        import torch
    except ImportError:
        raise _Skip("torch not installed") from None
    k = runtime.compile_msl(ADD, "add", dev)
    x = torch.randn(5000)[3:]
    y = torch.randn(4997)
    out = torch.full((4997,), float("nan"))
    k(x, y, out, 4997, grid=20, threads=256)
    dev.synchronize()
    torch.testing.assert_close(out, x + y)
    return "4997 floats, storage offset 3"


def check_torch_mps(dev) -> str:
    try:
        import torch
    except ImportError:
        raise _Skip("torch not installed") from None
    if dev.is_simulator or dev.is_emulated or not torch.backends.mps.is_available():
        raise _Skip("needs a Mac with torch's MPS backend")
    k = runtime.compile_msl(ADD, "add", dev)
    x = torch.randn(10_000, device="mps")[5:]
    y = torch.randn(9995, device="mps") * 2  # written by torch just before our kernel
    out = torch.full((9995,), float("nan"), device="mps")
    torch.mps.synchronize()
    k(x, y, out, 9995, grid=40, threads=256)
    dev.synchronize()
    torch.testing.assert_close(out.cpu(), x.cpu() + y.cpu())
    return "mps tensors, storage offset 5"


def check_last_block(dev) -> str:
    k = runtime.compile_msl(LAST_BLOCK, "last_block", dev,
                            language_version="3.2" if dev.info.get("msl_version", "3.1") >= "3.2" else "3.1")
    blocks = 64
    rng = np.random.default_rng(1)
    failures = 0
    for _ in range(20):
        x = rng.standard_normal(blocks * 256).astype(np.float32)
        partial = _poison(blocks, device=dev)
        counter = np.zeros(1, np.uint32)
        out = _poison(1, device=dev)
        k(x, partial, counter, out, blocks, grid=blocks, threads=256)
        dev.synchronize()
        if not np.isclose(out[0], x.sum(), rtol=1e-3, atol=1e-2):
            failures += 1
    if failures:
        raise AssertionError(f"{failures}/20 runs read a stale partial sum (cross-threadgroup ordering)")
    return f"20 runs x {blocks} threadgroups, MSL {dev.info.get('msl_version')}"


def check_dtypes(dev) -> str:
    done = []
    for msl, dt in [("float", np.float32), ("half", np.float16), ("int", np.int32), ("uint", np.uint32),
                    ("short", np.int16), ("uchar", np.uint8)]:
        src = (f"kernel void twice(device const {msl}* x [[buffer(0)]], device {msl}* y [[buffer(1)]],"
               f" uint i [[thread_position_in_grid]]) {{ y[i] = x[i] + x[i]; }}")
        k = runtime.compile_msl(src, "twice", dev)
        x = (np.arange(256) % 100).astype(dt)
        y = _poison(256, dt, dev) if np.dtype(dt).kind == "f" else runtime.empty(256, dt, dev)
        k(x, y, grid=1, threads=256)
        dev.synchronize()
        np.testing.assert_array_equal(y, (x + x).astype(dt))
        done.append(msl)
    return ", ".join(done)


def check_large_threadgroups(dev) -> str:
    src = ("kernel void iota(device uint* y [[buffer(0)]], uint i [[thread_position_in_grid]]) { y[i] = i; }")
    limits = []
    for threads in (512, 1024):  # num_warps 16 and 32
        p = dev.compile(src, "iota", label=f"iota{threads}", max_threads=threads)
        limits.append(p.max_total_threads_per_threadgroup)
        y = runtime.empty(threads * 2, np.uint32, dev)
        y[:] = 0xFFFFFFFF
        runtime.Kernel(p, dev)(y, grid=2, threads=threads)
        dev.synchronize()
        np.testing.assert_array_equal(y, np.arange(threads * 2, dtype=np.uint32))
    return f"maxTotalThreadsPerThreadgroup {limits}"


def check_triton(dev) -> str:
    try:
        import torch
        import triton
        import triton.language as tl
    except ImportError:
        raise _Skip("triton/torch not installed") from None
    from .backend import driver as mps_driver

    @triton.jit
    def dot_kernel(a, b, c, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr):
        rm, rn, rk = tl.arange(0, M), tl.arange(0, N), tl.arange(0, K)
        x = tl.load(a + rm[:, None] * K + rk[None, :])
        y = tl.load(b + rk[:, None] * N + rn[None, :])
        tl.store(c + rm[:, None] * N + rn[None, :], tl.dot(x, y))

    @triton.jit
    def rowsum_kernel(x, out, N: tl.constexpr):
        row = tl.program_id(0)
        tl.store(out + row, tl.sum(tl.load(x + row * N + tl.arange(0, N)), axis=0))

    from triton.runtime import driver as triton_driver

    if not isinstance(getattr(triton_driver, "_active", None), mps_driver.MPSDriver):
        triton_driver.set_active(mps_driver.MPSDriver())
    index = next(i for i, d in enumerate(runtime.devices()) if d.name == dev.name)
    triton_driver.active.set_current_device(index)
    tdev = triton_driver.active.get_active_torch_device()
    a = torch.randn(32, 16, device=tdev)
    b = torch.randn(16, 32, device=tdev)
    c = torch.full((32, 32), float("nan"), device=tdev)
    dot_kernel[(1,)](a, b, c, 32, 32, 16)
    x = torch.randn(64, 128, device=tdev)
    s = torch.full((64,), float("nan"), device=tdev)
    rowsum_kernel[(64,)](x, s, 128, num_warps=16)
    dev.synchronize()
    torch.testing.assert_close(c.cpu(), (a.cpu() @ b.cpu()), rtol=1e-3, atol=1e-3)
    torch.testing.assert_close(s.cpu(), x.cpu().sum(1), rtol=1e-4, atol=1e-3)
    return "tl.dot 32x32x16, tl.sum with num_warps=16"


class _Skip(Exception):
    pass


CHECKS: list[tuple[str, Callable]] = [
    ("numpy arrays and pooled buffers", check_numpy_and_pool),
    ("torch CPU tensors", check_torch_cpu),
    ("torch mps tensors, ordered with torch's queue", check_torch_mps),
    ("cross-threadgroup atomics (last block reduces)", check_last_block),
    ("dtypes", check_dtypes),
    ("large threadgroups (num_warps 16/32)", check_large_threadgroups),
    ("Triton: dot and reduction", check_triton),
]


def run(device: str | None = None) -> list[Result]:
    dev = runtime.get_device(device)
    results = []
    for name, fn in CHECKS:
        t0 = time.perf_counter()
        try:
            detail, status = fn(dev), "ok"
        except _Skip as e:
            detail, status = str(e), "skip"
        except Exception as e:  # noqa: BLE001 - the report lists every failure
            text = f"{type(e).__name__}: {e}\n{traceback.format_exc(limit=3)}".splitlines()
            detail = "\n".join(text[:25] + (["    ..."] if len(text) > 25 else []))
            status = "FAIL"
        results.append(Result(name, status, detail, time.perf_counter() - t0))
    return results


def report(device: str | None = None) -> tuple[str, bool]:
    dev = runtime.get_device(device)
    info = dev.info
    lines = [
        "triton-mps selftest",
        f"device: {info['name']} ({info['gpu_family']}, generation {info['generation']}, "
        f"MSL {info.get('msl_version')}, simulator={info['is_simulator']}, emulated={info.get('is_emulated')})",
        f"host: {platform.platform()}, Python {platform.python_version()}, macOS {platform.mac_ver()[0] or '-'}",
    ]
    results = run(device)
    for r in results:
        lines.append(f"[{r.status:>4}] {r.name} ({r.seconds:.2f} s): {r.detail.strip()}")
    ok = all(r.status != "FAIL" for r in results)
    lines.append("result: " + ("all checks passed" if ok else "FAILURES (paste this report into a bug report)"))
    if hasattr(_core, "emu_violations") and info.get("is_emulated"):
        lines.append(f"emulated Metal API violations: {_core.emu_violations() or 'none'}")
    return "\n".join(lines), ok


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m triton_mps selftest", description=__doc__.splitlines()[0])
    parser.add_argument("--device", default=None,
                        help="index, 'metal', 'sim' or 'metal-emu' (default: the default device)")
    args = parser.parse_args(argv)
    text, ok = report(args.device)
    print(text)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
