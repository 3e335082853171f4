"""Simulator speed on reference kernels: build time and simulated threads per second (a table).

For each kernel (defined here, so every version of triton-mps runs the same source):
  build s      the first `kernel[grid](...)` call in a fresh process with empty caches: Triton's
               front end, our MSL stages, the simulator's C++ build, one run
  run ms       median of the warm calls that follow (after enough calls for the -O2 rebuild of
               a kernel first built at -O0: TRITON_MPS_SIM_OPT)
  Mthreads/s   simulated GPU threads (programs x 32 x num_warps) per second of a warm call

`--compare PYTHON` runs the same measurement with another interpreter (e.g. a venv holding an
older triton-mps) side by side: rounds alternate between the interpreters, each round in new
processes with empty caches, and the table gives each one's median and the ratios
(other / this), so load on a shared machine hits both alike.

Run: python benchmarks/bench_sim.py [--rounds 3] [--compare /path/to/old/venv/bin/python]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

WARM_CALLS = 5  # timed warm calls per kernel (after the warm-up below)
# warm-up before timing: the simulator rebuilds a -O0 kernel at -O2 once its dispatches took 2.5x
# its -O0 build (at least 50 ms), so warm up for 3x the first call (which includes that build)
WARMUP_MIN_S = 0.3


def _kernels():
    import torch
    import triton
    import triton.language as tl

    @triton.jit
    def add(x, y, o, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        m = offs < n
        tl.store(o + offs, tl.load(x + offs, mask=m) + tl.load(y + offs, mask=m), mask=m)

    @triton.jit
    def softmax(x, o, stride, n, BLOCK: tl.constexpr):
        row = tl.program_id(0)
        cols = tl.arange(0, BLOCK)
        v = tl.load(x + row * stride + cols, mask=cols < n, other=-float("inf"))
        e = tl.exp(v - tl.max(v, axis=0))
        tl.store(o + row * stride + cols, e / tl.sum(e, axis=0), mask=cols < n)

    @triton.jit
    def layer_norm(x, w, b, o, stride, n, eps, BLOCK: tl.constexpr):
        row = tl.program_id(0)
        cols = tl.arange(0, BLOCK)
        m = cols < n
        v = tl.load(x + row * stride + cols, mask=m, other=0.0)
        mean = tl.sum(v, axis=0) / n
        d = tl.where(m, v - mean, 0.0)
        rstd = 1 / tl.sqrt(tl.sum(d * d, axis=0) / n + eps)
        y = d * rstd * tl.load(w + cols, mask=m) + tl.load(b + cols, mask=m)
        tl.store(o + row * stride + cols, y, mask=m)

    @triton.jit
    def matmul(a, b, c, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
        pm, pn = tl.program_id(0), tl.program_id(1)
        rm = pm * BM + tl.arange(0, BM)
        rn = pn * BN + tl.arange(0, BN)
        rk = tl.arange(0, BK)
        acc = tl.zeros((BM, BN), dtype=tl.float32)
        for k in range(0, K, BK):
            av = tl.load(a + rm[:, None] * K + (k + rk)[None, :], mask=(rm[:, None] < M) & ((k + rk)[None, :] < K))
            bv = tl.load(b + (k + rk)[:, None] * N + rn[None, :], mask=((k + rk)[:, None] < K) & (rn[None, :] < N))
            acc += tl.dot(av, bv)
        tl.store(c + rm[:, None] * N + rn[None, :], acc, mask=(rm[:, None] < M) & (rn[None, :] < N))

    @triton.jit
    def cumsum_rows(x, o, n, BLOCK: tl.constexpr):
        row = tl.program_id(0)
        cols = tl.arange(0, BLOCK)
        v = tl.load(x + row * n + cols, mask=cols < n, other=0.0)
        tl.store(o + row * n + cols, tl.cumsum(v, axis=0), mask=cols < n)

    g = torch.Generator().manual_seed(0)

    def rand(*shape, dtype=torch.float32):
        return torch.randn(*shape, generator=g).to(dtype)

    n = 1 << 20
    x, y, o = rand(n), rand(n), torch.empty(n)
    yield "vector add", f"n={n} fp32", lambda: add[(n // 1024, )](x, y, o, n, BLOCK=1024), n // 1024 * 128
    r = 1024
    xs, os_ = rand(r, r), torch.empty(r, r)
    yield "softmax", f"{r}x{r} fp32", lambda: softmax[(r, )](xs, os_, r, r, BLOCK=1024), r * 128
    w, bb = rand(r), rand(r)
    yield ("layer norm", f"{r}x{r} fp32", lambda: layer_norm[(r, )](xs, w, bb, os_, r, r, 1e-5, BLOCK=1024),
           r * 128)
    m = 256
    a, b, c = rand(m, m, dtype=torch.float16), rand(m, m, dtype=torch.float16), torch.empty(m, m)
    yield ("matmul", f"{m}^3 fp16, 32x32x32 tiles",
           lambda: matmul[(m // 32, m // 32)](a, b, c, m, m, m, BM=32, BN=32, BK=32), (m // 32) ** 2 * 128)
    xc, oc = rand(4096, 1000), torch.empty(4096, 1000)
    yield "cumsum", "4096x1000 fp32", lambda: cumsum_rows[(4096, )](xc, oc, 1000, BLOCK=1024), 4096 * 128


def worker() -> None:
    """One measurement in this process (caches emptied by the parent): JSON on stdout."""
    out = {}
    for name, shape, call, threads in _kernels():
        t0 = time.perf_counter()
        call()
        build = time.perf_counter() - t0
        t0 = time.perf_counter()
        while time.perf_counter() - t0 < max(WARMUP_MIN_S, 3 * build):
            call()
        times = []
        for _ in range(WARM_CALLS):
            t1 = time.perf_counter()
            call()
            times.append(time.perf_counter() - t1)
        run = statistics.median(times)
        out[name] = {"shape": shape, "build": build, "run": run, "threads": threads}
    json.dump(out, sys.stdout)


def measure(python: str) -> dict:
    with tempfile.TemporaryDirectory(prefix="tmps-bench-sim-") as tmp:
        env = dict(os.environ, TRITON_BACKEND="mps", TRITON_CACHE_DIR=f"{tmp}/triton",
                   TRITON_MPS_CACHE_DIR=f"{tmp}/mps", XDG_CACHE_HOME=f"{tmp}/xdg")
        res = subprocess.run([python, os.path.abspath(__file__), "--worker"], env=env, capture_output=True, text=True)
        if res.returncode != 0:
            raise SystemExit(f"{python}: worker failed:\n{res.stderr[-3000:]}")
        return json.loads(res.stdout)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--compare", metavar="PYTHON", help="another interpreter (an older triton-mps) to run side by side")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        worker()
        return
    pythons = [sys.executable] + ([args.compare] if args.compare else [])
    runs: dict[str, list[dict]] = {p: [] for p in pythons}
    for i in range(args.rounds):
        for p in (pythons if i % 2 == 0 else pythons[::-1]):
            runs[p].append(measure(p))

    def med(p, k, field):
        return statistics.median(r[k][field] for r in runs[p])

    this = pythons[0]
    head = f"{'kernel':<12}{'shape':<28}{'build s':>9}{'run ms':>10}{'Mthreads/s':>12}"
    if args.compare:
        head += f"{'other build s':>15}{'other run ms':>14}{'build ratio':>13}{'run ratio':>11}"
    print(f"{args.rounds} rounds, medians; this: {this}" + (f"; other: {args.compare}" if args.compare else ""))
    print(head)
    tb = to = ob = oo = 0.0
    for k, v in runs[this][0].items():
        b, r = med(this, k, "build"), med(this, k, "run")
        tb, to = tb + b, to + r
        line = f"{k:<12}{v['shape']:<28}{b:>9.2f}{r * 1e3:>10.2f}{v['threads'] / r / 1e6:>12.1f}"
        if args.compare:
            b2, r2 = med(args.compare, k, "build"), med(args.compare, k, "run")
            ob, oo = ob + b2, oo + r2
            line += f"{b2:>15.2f}{r2 * 1e3:>14.2f}{b2 / b:>12.2f}x{r2 / r:>10.2f}x"
        print(line)
    if args.compare:
        print(f"{'total':<40}{tb:>9.2f}{to * 1e3:>10.2f}{'':>12}{ob:>15.2f}{oo * 1e3:>14.2f}{ob / tb:>12.2f}x"
              f"{oo / to:>10.2f}x")


if __name__ == "__main__":
    main()
