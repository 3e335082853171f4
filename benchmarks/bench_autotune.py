"""An autotuned matmul's time to its first checked result, cold caches (a table).

`triton.autotune` over 8 configs (block sizes 16..64, 2..8 warps) of a 512x512x512 matmul, fp32
and fp16 inputs with fp32 accumulation, in a fresh process with empty Triton and triton-mps caches:
the autotuner compiles and benchmarks every config, then the chosen one runs, and the result is
checked against float64 torch (the child exits non-zero on a mismatch). Columns, seconds (median of
--rounds fresh processes, rounds interleaved):

  total      the first matmul call (autotuning included) and the check, per dtype, summed
  compile    Triton's frontend and our TTGIR->MSL, all configs
  build      waiting for pipelines (the simulator's C++ builds)
  launches   the kernel launches (the autotuner's benchmarks and the real run)

Rows: the default configuration and TRITON_MPS_PREBUILD=0; `--interpreter` adds Triton's own
interpreter (TRITON_INTERPRET=1: its total only) for the ratio issue 20 asks about.

Usage: python benchmarks/bench_autotune.py [--rounds 3] [--size 512] [--interpreter]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import textwrap

import _bench_child  # benchmarks/ (the script's folder is on sys.path)

CHILD = r"""
import contextlib, json, os, sys, time
from collections import defaultdict
import torch
import triton
import triton.language as tl

size = int(sys.argv[1])
interpreted = os.environ.get("TRITON_INTERPRET") == "1"
spent = defaultdict(float)

if not interpreted:
    import triton_mps

    sys.path.insert(0, os.environ["TMPS_BENCH_DIR"])
    import _bench_child

    _bench_child.install(spent, frontend="compile", msl="compile", build="build")

CONFIGS = [triton.Config({"BM": bm, "BN": bn, "BK": bk}, num_warps=w)
           for bm, bn, bk, w in ((16, 16, 16, 2), (32, 32, 16, 4), (32, 32, 32, 4), (64, 32, 32, 4),
                                 (32, 64, 32, 4), (64, 64, 16, 4), (64, 64, 32, 8), (32, 32, 64, 2))]

@triton.autotune(configs=CONFIGS, key=["M", "N", "K"])
@triton.jit
def matmul(a, b, c, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        ka, kb = (k + rk)[None, :], (k + rk)[:, None]
        av = tl.load(a + rm[:, None] * K + ka, mask=(rm[:, None] < M) & (ka < K), other=0.0)
        bv = tl.load(b + kb * N + rn[None, :], mask=(kb < K) & (rn[None, :] < N), other=0.0)
        acc = tl.dot(av, bv, acc, input_precision="ieee")
    tl.store(c + rm[:, None] * N + rn[None, :], acc, mask=(rm[:, None] < M) & (rn[None, :] < N))

torch.manual_seed(0)
start = time.perf_counter()
with (contextlib.nullcontext([]) if interpreted else triton_mps.profile()) as prof:
    for dtype in (torch.float32, torch.float16):
        a, b = torch.randn(size, size).to(dtype), torch.randn(size, size).to(dtype)
        c = torch.full((size, size), float("nan"))
        grid = lambda meta: (triton.cdiv(size, meta["BM"]), triton.cdiv(size, meta["BN"]))
        matmul[grid](a, b, c, size, size, size)
        err = (c.double() - a.double() @ b.double()).abs().max().item()
        if not err < 1e-2:
            sys.exit(f"{dtype}: max error {err}")
    spent["total"] = time.perf_counter() - start
if not interpreted:
    spent["launches"] = sum(r.wall_us for r in prof) / 1e6
print("RESULT " + json.dumps(spent))
"""

COLUMNS = ["total", "compile", "build", "launches"]


def one_round(env_extra: dict[str, str], size: int) -> dict:
    with tempfile.TemporaryDirectory(prefix="tmps-bench-autotune-") as tmp:
        env = dict(os.environ, TRITON_CACHE_DIR=f"{tmp}/triton", TRITON_MPS_CACHE_DIR=f"{tmp}/tmps",
                   TRITON_BACKEND="mps", TMPS_BENCH_DIR=os.path.dirname(os.path.abspath(__file__)), **env_extra)
        with open(f"{tmp}/child.py", "w") as f:  # @triton.jit needs a file
            f.write(textwrap.dedent(CHILD))
        return _bench_child.run([sys.executable, f"{tmp}/child.py", str(size)], env)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--size", type=int, default=512)
    parser.add_argument("--interpreter", action="store_true", help="also Triton's interpreter (slow)")
    args = parser.parse_args(argv)
    configs = {"default": {}, "TRITON_MPS_PREBUILD=0": {"TRITON_MPS_PREBUILD": "0"}}
    if args.interpreter:
        configs["Triton's interpreter"] = {"TRITON_INTERPRET": "1"}
    results: dict[str, list[dict]] = {label: [] for label in configs}
    for _ in range(args.rounds):  # interleaved: load changes hit every configuration alike
        for label, env in configs.items():
            results[label].append(one_round(env, args.size))
    print(f"autotuned matmul {args.size}^3 (8 configs; fp32 then fp16 inputs, fp32 accumulation), cold caches, "
          f"checked vs float64; median of {args.rounds} fresh processes per row (seconds)")
    print("| configuration | " + " | ".join(COLUMNS) + " | total / default |")
    print("|---|" + "---:|" * (len(COLUMNS) + 1))
    base = statistics.median(r["total"] for r in results["default"])
    for label, rounds in results.items():
        med = {c: statistics.median(r.get(c, float("nan")) for r in rounds) for c in COLUMNS}
        print(f"| {label} | " + " | ".join(f"{med[c]:.2f}" for c in COLUMNS) + f" | {med['total'] / base:.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
