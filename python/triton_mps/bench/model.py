"""Workloads, their roofline floors, and the counters measured on the simulator."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

os.environ.setdefault("TRITON_DEFAULT_FP_FUSION", "1")


@dataclass
class Result:
    name: str
    shape: str
    floor_bytes: int          # each input read once, each output written once
    required_flops: int       # what the problem needs (2MNK for a matmul, ~elementwise otherwise)
    fp16: bool
    device_bytes: int = 0     # counted: every load and store of the tensors' buffers
    distinct_bytes: int = 0   # counted: distinct bytes read + distinct bytes written
    matrix_flops: int = 0     # counted: simdgroup_matrix FLOPs
    scalar_flops: int = 0     # counted: scalar float add/sub/mul/div (1), fma (2), per element
    threadgroup_bytes: int = 0
    barriers: int = 0
    simd_collectives: int = 0
    tile_bound_bytes: int | None = None  # matmul: the lower bound for its tiles
    target: str = ""
    met: bool | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def traffic_ratio(self) -> float:
        return self.device_bytes / self.floor_bytes if self.floor_bytes else float("nan")

    @property
    def matrix_share(self) -> float:
        return self.matrix_flops / self.required_flops if self.required_flops else float("nan")

    @property
    def counted_flops(self) -> int:
        return self.matrix_flops + self.scalar_flops


def _import_kernels():
    """`kernels/` lives beside `python/` in a checkout (it is not part of the wheel)."""
    try:
        import kernels  # noqa: F401
    except ImportError:
        for base in (Path.cwd(), Path(__file__).resolve().parents[3]):
            if (base / "kernels" / "__init__.py").exists():
                sys.path.insert(0, str(base))
                break
    import kernels

    return kernels


def _pointer_bindings(compiled) -> set[int]:
    args = compiled.metadata.tmps_args["args"]
    return {a["binding"] for a in args if a["kind"] == "pointer"}


def _measure(res: Result, launch: Callable[[], object]) -> Result:
    import triton_mps

    launch()  # compile outside the counted run
    triton_mps.set_counters(True)
    try:
        compiled = launch()
        stats = triton_mps.last_dispatch_stats()
    finally:
        triton_mps.set_counters(False)
    if stats is None or not stats["memory_counted"]:
        raise RuntimeError(f"{res.name}: no counters (is the simulator's memcheck on? TRITON_MPS_MEMCHECK=0 "
                           "builds kernels without the instrumentation the counters use)")
    ptrs = _pointer_bindings(compiled)
    # Scalar arguments are bound as tiny constant buffers (Metal's setBytes): not device traffic.
    bufs = [b for b in stats["buffers"] if b["index"] in ptrs]
    res.device_bytes = sum(b["read"] + b["written"] for b in bufs)
    res.distinct_bytes = sum(b["distinct_read"] + b["distinct_written"] for b in bufs)
    res.matrix_flops = stats["simdgroup_matrix_flops"]
    res.scalar_flops = stats["scalar_flops"]
    res.threadgroup_bytes = stats["threadgroup_bytes"]
    res.barriers = stats["barriers"]
    res.simd_collectives = stats["simd_collectives"]
    return res


def _vector_add(k, torch, n: int) -> Result:
    from kernels.vector_add import add_kernel

    x, y = torch.rand(n), torch.rand(n)
    out = torch.empty(n)
    res = Result("vector add", f"n={n} fp32", floor_bytes=12 * n, required_flops=n, fp16=False)
    _measure(res, lambda: add_kernel[((n + 1023) // 1024,)](x, y, out, n, BLOCK=1024, num_warps=4))
    torch.testing.assert_close(out, x + y)
    res.target, res.met = "device bytes <= 1.05x floor", res.traffic_ratio <= 1.05
    return res


def _softmax(k, torch, rows: int, cols: int) -> Result:
    import triton

    from kernels.softmax import softmax_reference, softmax_rows_kernel

    x = torch.randn(rows, cols)
    out = torch.empty_like(x)
    res = Result("softmax", f"{rows}x{cols} fp32", floor_bytes=8 * rows * cols, required_flops=5 * rows * cols,
                 fp16=False)
    bn = triton.next_power_of_2(cols)
    _measure(res, lambda: softmax_rows_kernel[(rows,)](x, out, rows, cols, x.stride(0), out.stride(0), ROWS=1,
                                                       BLOCK_N=bn, num_warps=4))
    torch.testing.assert_close(out.double(), softmax_reference(x), rtol=1e-5, atol=1e-6)
    res.target, res.met = "device bytes <= 1.05x floor", res.traffic_ratio <= 1.05
    return res


def _layer_norm(k, torch, rows: int, cols: int) -> Result:

    from kernels.layer_norm import _ln_forward, forward_launch, layer_norm_reference

    x = torch.randn(rows, cols)
    w, b = torch.randn(cols), torch.randn(cols)
    y = torch.empty_like(x)
    mean, rstd = torch.empty(rows), torch.empty(rows)
    # x read, y written, w and b read once, mean and rstd written
    floor = 4 * (2 * rows * cols + 2 * cols + 2 * rows)
    res = Result("layer norm fwd", f"{rows}x{cols} fp32", floor_bytes=floor, required_flops=8 * rows * cols, fp16=False)
    grid, meta = forward_launch(rows, cols)
    _measure(res, lambda: _ln_forward[grid](x, y, w, b, mean, rstd, x.stride(0), y.stride(0), rows, cols, 1e-5,
                                            num_warps=4, **meta))
    ref = layer_norm_reference(x, w, b)
    ref = ref[0] if isinstance(ref, tuple) else ref
    torch.testing.assert_close(y.double(), ref.double(), rtol=1e-4, atol=1e-4)
    # w and b are read once per program of ROWS rows (forward_launch keeps >= 128 programs): the
    # floor counts them once (a cache would).
    res.target, res.met = "device bytes <= 1.05x floor", res.traffic_ratio <= 1.05
    return res


def _matmul(k, torch, m: int, n: int, kk: int) -> Result:
    from kernels.matmul import CONFIGS, matmul_kernel, matmul_reference

    a = torch.randn(m, kk).to(torch.float16)
    b = torch.randn(kk, n).to(torch.float16)
    c = torch.empty(m, n, dtype=torch.float16)
    bm, bn, bk, group_m, num_warps = CONFIGS[torch.float16]
    floor = 2 * (m * kk + kk * n + m * n)
    tiles = 2 * (m * kk * -(-n // bn) + kk * n * -(-m // bm) + m * n)
    res = Result("matmul", f"{m}x{n}x{kk} fp16 (tiles {bm}x{bn}x{bk})", floor_bytes=floor,
                 required_flops=2 * m * n * kk, fp16=True, tile_bound_bytes=tiles)
    grid = (-(-m // bm) * -(-n // bn),)
    _measure(res, lambda: matmul_kernel[grid](a, b, c, m, n, kk, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                                              c.stride(0), c.stride(1), BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk,
                                              GROUP_M=group_m, INT_ACC=False, num_warps=num_warps))
    torch.testing.assert_close(c.double(), matmul_reference(a, b).double(), rtol=2e-2, atol=2e-2)
    ratio = res.device_bytes / tiles
    res.target = "matrix FLOPs >= 95%, traffic <= 1.25x tile bound"
    res.met = res.matrix_share >= 0.95 and ratio <= 1.25
    res.notes.append(f"traffic / tile bound = {ratio:.2f}")
    return res


SIZES = {
    "quick": {"vector_add": (1 << 14,), "softmax": (64, 256), "layer_norm": (64, 256), "matmul": (64, 64, 64)},
    "full": {"vector_add": (1 << 21,), "softmax": (1024, 1024), "layer_norm": (1024, 1024),
             "matmul": (256, 256, 256)},
}


def run_workloads(quick: bool = False, only: list[str] | None = None) -> list[Result]:
    """Run every workload on the simulator with the counters on."""
    os.environ.setdefault("TRITON_BACKEND", "mps")
    import torch
    import triton  # noqa: F401  (backend discovery before the kernels import)

    k = _import_kernels()
    torch.manual_seed(0)
    sizes = SIZES["quick" if quick else "full"]
    table = {"vector_add": _vector_add, "softmax": _softmax, "layer_norm": _layer_norm, "matmul": _matmul}
    out = []
    for name, fn in table.items():
        if only and name not in only:
            continue
        out.append(fn(k, torch, *sizes[name]))
    return out
