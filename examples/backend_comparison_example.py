"""The same work through triton-mps, torch eager, MLX and numpy (those installed): a table of
median times and max errors against a float64 reference, and a PNG chart (matplotlib).

    python examples/backend_comparison_example.py [--small] [--chart PATH]

On the simulator (off macOS) triton-mps times are those of a CPU emulating a GPU thread by
thread: they measure the simulator, not Apple GPU performance.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import _common  # noqa: F401  (selects the mps backend)
import numpy as np
import torch
import triton
import triton.language as tl
import triton_mps


@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    rm = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        a = tl.load(a_ptr + rm[:, None] * K + (k0 + rk)[None, :], mask=(rm[:, None] < M) & ((k0 + rk)[None, :] < K),
                    other=0.0)
        b = tl.load(b_ptr + (k0 + rk)[:, None] * N + rn[None, :], mask=((k0 + rk)[:, None] < K) & (rn[None, :] < N),
                    other=0.0)
        acc = tl.dot(a, b, acc, input_precision="ieee")
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


@triton.jit
def softmax_kernel(x_ptr, y_ptr, n_cols, BLOCK_N: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_N)
    x = tl.load(x_ptr + row * n_cols + cols, mask=cols < n_cols, other=-float("inf"))
    e = tl.exp(x - tl.max(x, axis=0))
    tl.store(y_ptr + row * n_cols + cols, e / tl.sum(e, axis=0), mask=cols < n_cols)


def triton_matmul(a, b):
    M, K = a.shape
    N = b.shape[1]
    c = torch.empty((M, N), device=a.device)
    matmul_kernel[(triton.cdiv(M, 32), triton.cdiv(N, 32))](a, b, c, M, N, K, BLOCK_M=32, BLOCK_N=32, BLOCK_K=32)
    return c


def triton_softmax(x):
    y = torch.empty_like(x)
    softmax_kernel[(x.shape[0],)](x, y, x.shape[1], BLOCK_N=triton.next_power_of_2(x.shape[1]))
    return y


def np_softmax(x):
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def median_ms(fn: Callable[[], object], sync: Callable[[], None], reps: int) -> float:
    fn()
    sync()  # warm-up (compiles) outside the timing
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        sync()
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


def backends(dev: str) -> dict[str, tuple[Callable, Callable, Callable, Callable]]:
    """name -> (to_native(np array), matmul, softmax, sync); results come back with np.asarray."""
    def torch_sync():
        if dev == "mps":
            torch.mps.synchronize()

    def to_torch(a):
        return torch.from_numpy(a).to(dev)

    out = {
        "triton-mps": (to_torch, triton_matmul, triton_softmax, triton_mps.synchronize),
        f"torch eager ({dev})": (to_torch, torch.matmul, lambda x: torch.softmax(x, dim=1), torch_sync),
    }
    try:
        import mlx.core as mx
    except ImportError:
        pass
    else:
        def evaluated(x):  # MLX is lazy: time the computation, not the graph building
            mx.eval(x)
            return x

        out[f"MLX ({mx.default_device()})"] = (mx.array, lambda a, b: evaluated(mx.matmul(a, b)),
                                               lambda x: evaluated(mx.softmax(x, axis=1)), lambda: None)
    out["numpy"] = (lambda a: a, np.matmul, np_softmax, lambda: None)
    return out


def host(x) -> np.ndarray:
    if isinstance(x, torch.Tensor):
        return x.cpu().numpy()
    return np.asarray(x)


def write_chart(rows: list[dict], path: Path) -> str:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return "chart skipped: matplotlib is not installed (pip install 'triton-mps[examples]')"
    work = sorted({r["work"] for r in rows})
    names = list(dict.fromkeys(r["backend"] for r in rows))
    fig, axes = plt.subplots(1, len(work), figsize=(5 * len(work), 3.5))
    for ax, w in zip(np.atleast_1d(axes), work, strict=True):
        sub = [r for r in rows if r["work"] == w]
        colors = [f"C{names.index(r['backend'])}" for r in sub]
        ax.bar([r["backend"] for r in sub], [r["ms"] for r in sub], color=colors)
        ax.set_title(w)
        ax.set_ylabel("median time (ms)")
        ax.set_yscale("log")
        ax.tick_params(axis="x", labelrotation=20)
    fig.suptitle(f"same work, different backends (triton-mps on {triton_mps.default_device().name})", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return f"chart written to {path}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--small", action="store_true", help="tiny sizes (CI runs the examples this way)")
    parser.add_argument("--chart", type=Path, default=Path(__file__).with_name("backend_comparison.png"))
    args = parser.parse_args(argv)
    n, rows, cols, reps = (48, 16, 100, 3) if args.small else (256, 512, 1000, 10)
    dev = _common.torch_device()
    rng = np.random.default_rng()
    a, b = rng.standard_normal((n, n), dtype=np.float32), rng.standard_normal((n, n), dtype=np.float32)
    x = rng.standard_normal((rows, cols), dtype=np.float32) * 4
    refs = {f"matmul {n}x{n}": a.astype(np.float64) @ b.astype(np.float64),
            f"softmax {rows}x{cols}": np_softmax(x.astype(np.float64))}
    print(f"triton-mps device: {triton_mps.default_device().name}; torch device '{dev}'")
    results = []
    ok = True
    for name, (to_native, mm, sm, sync) in backends(dev).items():
        na, nb, nx = to_native(a), to_native(b), to_native(x)
        work_items = ((f"matmul {n}x{n}", lambda mm=mm, na=na, nb=nb: mm(na, nb)),
                      (f"softmax {rows}x{cols}", lambda sm=sm, nx=nx: sm(nx)))
        for work, fn in work_items:
            ms = median_ms(fn, sync, reps)
            err = float(np.abs(host(fn()).astype(np.float64) - refs[work]).max())
            tol = 1e-3 * (n if work.startswith("matmul") else 1)
            ok &= err <= tol
            results.append({"backend": name, "work": work, "ms": ms, "err": err})
    print(f"{'backend':<22} {'work':<18} {'median ms':>10} {'max error':>10}")
    for r in results:
        print(f"{r['backend']:<22} {r['work']:<18} {r['ms']:>10.3f} {r['err']:>10.2e}")
    print("checked every result against float64 numpy:", "OK" if ok else "FAIL")
    if triton_mps.default_device().is_simulator:
        print("note: triton-mps ran on the simulator (CPU), with its memory checks on (TRITON_MPS_MEMCHECK=0 "
              "turns them off): its times are not Apple GPU times")
    print(write_chart(results, args.chart))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
