"""Compile time of the mps backend vs Triton's CUDA pipeline, same kernels, same run (a table).

Columns (median of --repeat runs, warm process, Triton's cache bypassed):
  mps: TTIR->MSL   triton.compile for GPUTarget("mps", 9, 32): ttir, ttgir and our MSL stages
  mps: +pipeline   the same, plus building the MSL into a runnable pipeline on the simulator
                   (strict Metal check + clang build; each run's source is made unique)
  cuda: ->cubin    triton.compile for GPUTarget("cuda", 90, 32): ttir .. ptx .. cubin (ptxas)
No GPU is needed for either compile. Usage: python benchmarks/bench_compile.py [--repeat 5]
"""

from __future__ import annotations

import argparse
import functools
import os
import statistics
import tempfile
import time
import uuid

os.environ.setdefault("TRITON_BACKEND", "mps")
os.environ.setdefault("TRITON_DEFAULT_FP_FUSION", "1")
_CACHE = tempfile.TemporaryDirectory(prefix="tmps-bench-compile-")  # removed at exit
os.environ["TRITON_CACHE_DIR"] = _CACHE.name
os.environ["TRITON_ALWAYS_COMPILE"] = "1"

import triton  # noqa: E402
import triton.language as tl  # noqa: E402
import triton_mps  # noqa: E402
from triton.backends import Backend, backends  # noqa: E402
from triton.backends.compiler import GPUTarget  # noqa: E402
from triton.compiler.compiler import ASTSource  # noqa: E402

if "mps" not in backends:  # running from a source tree: the entry point is not installed
    from triton_mps.backend.compiler import MPSBackend
    from triton_mps.backend.driver import MPSDriver

    backends["mps"] = Backend(MPSBackend, MPSDriver)


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
def matmul(a, b, c, M, N, K, sam, sbk, scm, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    pm, pn = tl.program_id(0), tl.program_id(1)
    rm = pm * BM + tl.arange(0, BM)
    rn = pn * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        av = tl.load(a + rm[:, None] * sam + (k + rk)[None, :], mask=(rm[:, None] < M) & ((k + rk)[None, :] < K))
        bv = tl.load(b + (k + rk)[:, None] * sbk + rn[None, :], mask=((k + rk)[:, None] < K) & (rn[None, :] < N))
        acc += tl.dot(av, bv)
    tl.store(c + rm[:, None] * scm + rn[None, :], acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


def cases():
    mm_sig = {"a": "*{t}", "b": "*{t}", "c": "*fp32", "M": "i32", "N": "i32", "K": "i32", "sam": "i32",
              "sbk": "i32", "scm": "i32", "BM": "constexpr", "BN": "constexpr", "BK": "constexpr"}
    mm_const = {"BM": 64, "BN": 64, "BK": 32}
    yield "add", add, {"x": "*fp32", "y": "*fp32", "o": "*fp32", "n": "i32", "BLOCK": "constexpr"}, {"BLOCK": 1024}
    yield "softmax", softmax, {"x": "*fp32", "o": "*fp32", "stride": "i32", "n": "i32", "BLOCK": "constexpr"}, \
        {"BLOCK": 1024}
    for t in ("fp32", "fp16"):
        yield f"matmul {t}", matmul, {k: v.format(t=t) for k, v in mm_sig.items()}, mm_const


def compile_for(fn, sig, const, target, num_warps=4):
    src = ASTSource(fn, sig, {(fn.arg_names.index(k),): v for k, v in const.items()})
    return triton.compile(src, target=target, options={"num_warps": num_warps})


def median_time(f, repeat):
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        f()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    mps, cuda = GPUTarget("mps", 9, 32), GPUTarget("cuda", 90, 32)
    sim = triton_mps.get_device("sim")
    rows = []
    for name, fn, sig, const in cases():
        to_msl = functools.partial(compile_for, fn, sig, const, mps)
        to_cubin = functools.partial(compile_for, fn, sig, const, cuda)
        to_msl()  # warm both pipelines once (imports, first-use costs)
        to_cubin()
        t_msl = median_time(to_msl, args.repeat)

        def to_pipeline(to_msl=to_msl):
            k = to_msl()
            msl = k.asm["msl"] + f"\n// {uuid.uuid4().hex}\n"  # defeat the pipeline cache
            sim.compile(msl, k.metadata.name, label=k.metadata.name)

        t_pipe = median_time(to_pipeline, args.repeat)
        t_cuda = median_time(to_cubin, args.repeat)
        rows.append((name, t_msl, t_pipe, t_cuda))

    print(f"{'kernel':<14}{'mps: TTIR->MSL':>16}{'mps: +pipeline':>16}{'cuda: ->cubin':>15}"
          f"{'MSL / cubin':>13}{'+pipeline / cubin':>19}")
    for name, a, b, c in rows:
        print(f"{name:<14}{a * 1e3:>13.1f} ms{b * 1e3:>13.1f} ms{c * 1e3:>12.1f} ms{a / c:>12.2f}x{b / c:>18.2f}x")


if __name__ == "__main__":
    main()
