"""Simulator speed on reference kernels: build time and simulated threads per second (a table).

For each kernel (defined here, so every version of triton-mps runs the same source):
  build s      the first `kernel[grid](...)` call in a fresh process with empty caches: Triton's
               front end, our MSL stages, the simulator's C++ build at -O2, one run
  run ms       median of the warm calls that follow
The simulator's workers run with TRITON_MPS_SIM_OPT=2 (every kernel built at -O2 at once): with
the default tiering a kernel is built at -O0 first (about 40% of the -O2 build time) and rebuilt
at -O2 once its runs have paid for it, and whether that happened before timing started depended
on the kernel's build and run times (attention measured 7.8 to 11.4 ms warm in one day, from
runs on either build); pinned, "warm" is always the -O2 build (same bits at every level).
  Mthreads/s   simulated GPU threads (programs x 32 x num_warps) per second of a warm call

`--compare PYTHON` runs the same measurement with another interpreter (e.g. a venv holding an
older triton-mps) side by side: rounds alternate between the interpreters, each round in new
processes with empty caches, and the table gives each one's median and the ratios
(other / this), so load on a shared machine hits both alike.

Baselines, in the same interleaved rounds (`--baselines`, default both):
  interpreter  the same kernels under Triton's own CPU interpreter (TRITON_INTERPRET=1);
               "interp./sim" is how many times faster the simulator runs them
  torch        torch's CPU operators doing the same work (add, softmax, layer_norm, matmul /
               _int_mm, scaled_dot_product_attention, cumsum): native vectorized code, the
               physical reference; "sim/torch" is how many times slower the simulator is

Run: python benchmarks/bench_sim.py [--rounds 3] [--compare /path/to/old/venv/bin/python]
     [--baselines interpreter,torch|none] [--only matmul,attention]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

WARM_CALLS = 5  # timed warm calls per kernel (after the warm-up below)
WARMUP_MIN_S = 0.3  # warm-up calls before timing


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
    def matmul(a, b, c, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, ACC: tl.constexpr):
        pm, pn = tl.program_id(0), tl.program_id(1)
        rm = pm * BM + tl.arange(0, BM)
        rn = pn * BN + tl.arange(0, BN)
        rk = tl.arange(0, BK)
        acc = tl.zeros((BM, BN), dtype=ACC)
        for k in range(0, K, BK):
            av = tl.load(a + rm[:, None] * K + (k + rk)[None, :], mask=(rm[:, None] < M) & ((k + rk)[None, :] < K))
            bv = tl.load(b + (k + rk)[:, None] * N + rn[None, :], mask=((k + rk)[:, None] < K) & (rn[None, :] < N))
            acc += tl.dot(av, bv, input_precision="ieee" if ACC == tl.float32 else None)
        tl.store(c + rm[:, None] * N + rn[None, :], acc, mask=(rm[:, None] < M) & (rn[None, :] < N))

    @triton.jit
    def attention(q, k, v, o, T, scale, D: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr):
        # one program per (query block, head): online softmax over key blocks (flash attention)
        pm, h = tl.program_id(0), tl.program_id(1)
        base = h * T * D
        rm = pm * BM + tl.arange(0, BM)
        rd = tl.arange(0, D)
        qb = tl.load(q + base + rm[:, None] * D + rd[None, :], mask=rm[:, None] < T, other=0.0)
        m_i = tl.full((BM,), -float("inf"), tl.float32)
        l_i = tl.zeros((BM,), tl.float32)
        acc = tl.zeros((BM, D), tl.float32)
        for start in range(0, T, BN):
            rn = start + tl.arange(0, BN)
            kb = tl.load(k + base + rn[:, None] * D + rd[None, :], mask=rn[:, None] < T, other=0.0)
            s = tl.dot(qb, tl.trans(kb)) * scale
            s = tl.where(rn[None, :] < T, s, -float("inf"))
            m_new = tl.maximum(m_i, tl.max(s, axis=1))
            p = tl.exp(s - m_new[:, None])
            alpha = tl.exp(m_i - m_new)
            vb = tl.load(v + base + rn[:, None] * D + rd[None, :], mask=rn[:, None] < T, other=0.0)
            acc = acc * alpha[:, None] + tl.dot(p.to(vb.dtype), vb)
            l_i = l_i * alpha + tl.sum(p, axis=1)
            m_i = m_new
        tl.store(o + base + rm[:, None] * D + rd[None, :], acc / l_i[:, None], mask=rm[:, None] < T)

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
    yield ("vector add", f"n={n} fp32", lambda: add[(n // 1024, )](x, y, o, n, BLOCK=1024), n // 1024 * 128,
           lambda: torch.add(x, y, out=o), o)
    r = 1024
    xs, os_ = rand(r, r), torch.empty(r, r)
    yield ("softmax", f"{r}x{r} fp32", lambda: softmax[(r, )](xs, os_, r, r, BLOCK=1024), r * 128,
           lambda: torch.softmax(xs, 1), os_)
    w, bb = rand(r), rand(r)
    yield ("layer norm", f"{r}x{r} fp32", lambda: layer_norm[(r, )](xs, w, bb, os_, r, r, 1e-5, BLOCK=1024),
           r * 128, lambda: torch.nn.functional.layer_norm(xs, (r,), w, bb, 1e-5), os_)
    m = 256
    for dtype, acc, out_dtype, label in ((torch.float16, tl.float32, torch.float32, "fp16"),
                                         (torch.float32, tl.float32, torch.float32, "fp32"),
                                         (torch.int8, tl.int32, torch.int32, "int8")):
        if dtype == torch.int8:
            a, b = (torch.randint(-128, 128, (m, m), generator=g, dtype=torch.int8) for _ in range(2))
        else:
            a, b = rand(m, m, dtype=dtype), rand(m, m, dtype=dtype)
        c = torch.empty(m, m, dtype=out_dtype)
        name = "matmul" if label == "fp16" else f"matmul {label}"
        yield (name, f"{m}^3 {label}, 32x32x32 tiles",
               lambda a=a, b=b, c=c, acc=acc: matmul[(m // 32, m // 32)](a, b, c, m, m, m, BM=32, BN=32, BK=32,
                                                                           ACC=acc),
               (m // 32) ** 2 * 128, lambda a=a, b=b: _torch_matmul(a, b), c)
    heads, t, d = 4, 256, 64
    q, k, v = (rand(heads, t, d, dtype=torch.float16) for _ in range(3))
    ao = torch.empty(heads, t, d)
    yield ("attention", f"{heads} heads x {t} x {d} fp16",
           lambda: attention[(t // 32, heads)](q, k, v, ao, t, d ** -0.5, D=d, BM=32, BN=32), t // 32 * heads * 128,
           lambda: torch.nn.functional.scaled_dot_product_attention(q, k, v), ao)
    xc, oc = rand(4096, 1000), torch.empty(4096, 1000)
    yield ("cumsum", "4096x1000 fp32", lambda: cumsum_rows[(4096, )](xc, oc, 1000, BLOCK=1024), 4096 * 128,
           lambda: torch.cumsum(xc, 1), oc)


def _torch_matmul(a, b):
    import torch

    if a.dtype == torch.int8:
        return torch._int_mm(a, b)  # int8 x int8 -> int32, torch's native CPU kernel
    return a @ b


MODES = ("sim", "interpreter", "torch")


def worker(mode: str) -> None:
    """One measurement in this process (caches emptied by the parent): JSON on stdout.
    sim: our backend; interpreter: the same kernels under TRITON_INTERPRET=1 (set by the parent);
    torch: torch's own CPU operators for the same work (the reference for native code)."""
    out = {}
    for name, shape, kernel_call, threads, torch_call, result in _kernels():
        call = torch_call if mode == "torch" else kernel_call
        t0 = time.perf_counter()
        call()
        build = time.perf_counter() - t0
        t0 = time.perf_counter()
        while time.perf_counter() - t0 < (WARMUP_MIN_S if mode == "sim" else 0):
            call()
        times = []
        for _ in range(WARM_CALLS):
            t1 = time.perf_counter()
            call()
            times.append(time.perf_counter() - t1)
        run = statistics.median(times)
        out[name] = {"shape": shape, "build": build, "run": run, "threads": threads,
                     "sha256": hashlib.sha256(result.numpy().tobytes()).hexdigest()}
    json.dump(out, sys.stdout)


def measure(python: str, mode: str = "sim") -> dict:
    with tempfile.TemporaryDirectory(prefix="tmps-bench-sim-") as tmp:
        env = dict(os.environ, TRITON_BACKEND="mps", TRITON_CACHE_DIR=f"{tmp}/triton",
                   TRITON_MPS_CACHE_DIR=f"{tmp}/mps", XDG_CACHE_HOME=f"{tmp}/xdg")
        if mode == "interpreter":
            env["TRITON_INTERPRET"] = "1"
        if mode == "sim":
            env["TRITON_MPS_SIM_OPT"] = "2"  # warm calls always on the -O2 build (module docstring)
        res = subprocess.run([python, os.path.abspath(__file__), "--worker", mode], env=env, capture_output=True,
                             text=True)
        if res.returncode != 0:
            raise SystemExit(f"{python}: worker failed:\n{res.stderr[-3000:]}")
        return json.loads(res.stdout)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--compare", metavar="PYTHON", help="another interpreter (an older triton-mps) to run side by side")
    ap.add_argument("--baselines", default="interpreter,torch",
                    help="side by side in the same rounds: 'interpreter' (Triton's TRITON_INTERPRET=1), 'torch' "
                         "(torch's CPU operators); comma-separated, or 'none'")
    ap.add_argument("--only", help="comma-separated kernel names (default: all)")
    ap.add_argument("--worker", choices=MODES, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        worker(args.worker)
        return
    baselines = [] if args.baselines == "none" else [b for b in args.baselines.split(",") if b]
    unknown = set(baselines) - set(MODES[1:])
    if unknown:
        ap.error(f"unknown baselines {sorted(unknown)}")
    this = sys.executable
    runs_of = [(this, "sim")] + ([(args.compare, "sim")] if args.compare else []) + [(this, b) for b in baselines]
    runs: dict[tuple[str, str], list[dict]] = {r: [] for r in runs_of}
    for i in range(args.rounds):  # interleaved, the order rotating each round: load hits all alike
        for r in runs_of[i % len(runs_of):] + runs_of[:i % len(runs_of)]:
            runs[r].append(measure(*r))

    def med(r, k, field):
        return statistics.median(x[k][field] for x in runs[r])

    names = list(runs[(this, "sim")][0])
    if args.only:
        names = [n for n in names if n in args.only.split(",")]
    print(f"{args.rounds} rounds (fresh processes, empty caches, interleaved), medians; this: {this}"
          + (f"; other: {args.compare}" if args.compare else ""))
    head = f"{'kernel':<14}{'shape':<30}{'build s':>9}{'run ms':>10}{'Mthreads/s':>12}"
    if args.compare:
        head += f"{'other build s':>15}{'other run ms':>14}{'build ratio':>13}{'run ratio':>11}"
    if "interpreter" in baselines:
        head += f"{'interp. ms':>12}{'interp./sim':>13}"
    if "torch" in baselines:
        head += f"{'torch ms':>10}{'sim/torch':>11}"
    print(head)
    for k in names:
        v = runs[(this, "sim")][0][k]
        b, r = med((this, "sim"), k, "build"), med((this, "sim"), k, "run")
        line = f"{k:<14}{v['shape']:<30}{b:>9.2f}{r * 1e3:>10.2f}{v['threads'] / r / 1e6:>12.1f}"
        if args.compare:
            b2, r2 = med((args.compare, "sim"), k, "build"), med((args.compare, "sim"), k, "run")
            line += f"{b2:>15.2f}{r2 * 1e3:>14.2f}{b2 / b:>12.2f}x{r2 / r:>10.2f}x"
        if "interpreter" in baselines:
            ri = med((this, "interpreter"), k, "run")
            line += f"{ri * 1e3:>12.1f}{ri / r:>12.1f}x"
        if "torch" in baselines:
            rt = med((this, "torch"), k, "run")
            line += f"{rt * 1e3:>10.2f}{r / rt:>10.1f}x"
        print(line)
    # The kernels' outputs (fixed-seed inputs, the same in every version): bit-identical results
    # show as one hash in every round of both interpreters.
    if args.compare:
        differ = []
        for k in names:
            ours = {x[k]["sha256"] for x in runs[(this, "sim")]}
            theirs = {x[k]["sha256"] for x in runs[(args.compare, "sim")]}
            same = len(ours) == 1 and ours == theirs
            print(f"sha256 {k:<14} this {sorted(ours)[0][:16]}  other {sorted(theirs)[0][:16]}  "
                  + ("bit-identical" if same else "DIFFERENT"))
            if not same:
                differ.append(k)
        if differ:
            raise SystemExit(f"outputs differ between the two versions (or between rounds): {differ}")


if __name__ == "__main__":
    main()
