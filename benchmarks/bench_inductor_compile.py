"""torch.compile's time to first result, split by who spends it (a table).

A transformer block (examples/torch_compile_example.py's `Block`), forward + backward, compiled
by Inductor with `cpu_backend="triton"` on the mps backend (the simulator off macOS), in a fresh
process with empty Inductor, Triton and triton-mps caches, one compile thread (so every stage
runs in the measured process). Columns, seconds (median of --rounds fresh processes):

  total             torch.compile(model)(x) and .backward(), to the gradients
  inductor          the rest: Dynamo, AOTAutograd, Inductor's lowering, scheduling, codegen
  triton frontend   Triton's AST -> TTIR, its TTIR and TTGIR passes (make_ir, make_ttir, make_ttgir)
  ours: TTGIR->MSL  our compiler (make_msl)
  ours: build       waiting for the MSL's pipeline (the simulator's C++ build): in load_binary, or
                    at a deferred kernel's first launch (the simulator's, backend/device.py)
  launches          the kernel launches Inductor makes (autotuning benchmarks and the real run),
                    without the builds they waited for

"ours / triton" is (TTGIR->MSL + build) / triton frontend: the compile work we add on top of
Triton's own per kernel (the build column is what the launching thread waits for). One row per
configuration, rounds interleaved, so compare rows as ratios:

  at first launch      TRITON_MPS_PREBUILD=0: each pipeline is built when its kernel is loaded
                       (Triton's _init_handles, just before its first launch)
  prebuild             the default: built in the background from the end of Triton's compile
                       (backend/prebuild.py), while Inductor and Triton's frontend go on; on the
                       simulator a kernel loads at once and its first launch waits for the build,
                       so Inductor's autotuning configs build while earlier ones are benchmarked
  prebuild, N workers  Inductor's parallel compile workers (its default: one per core), which
                       build in the workers; their compile time is not in the split columns

Usage: python benchmarks/bench_inductor_compile.py [--rounds 3] [--size small]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import textwrap
from pathlib import Path

import _bench_child  # benchmarks/ (the script's folder is on sys.path)

REPO = Path(__file__).resolve().parents[1]

CHILD = r"""
import json, os, runpy, sys, time
from collections import defaultdict
os.environ["TRITON_BACKEND"] = "mps"
import torch
import torch._inductor.config as config
import triton_mps, triton_mps.inductor
spent = defaultdict(float)
sys.path.insert(0, os.environ["TMPS_BENCH_DIR"])
import _bench_child
_bench_child.install(spent, frontend="triton frontend", msl="ours: TTGIR->MSL", build="ours: build")
triton_mps.inductor.enable(mps=False)
config.compile_threads = int(os.environ.get("TMPS_BENCH_COMPILE_THREADS", "1"))
Block = runpy.run_path(sys.argv[1])["Block"]
batch, seq, dim, heads = json.loads(sys.argv[2])
torch.manual_seed(0)
model = Block(dim, heads)
x = torch.randn(batch, seq, dim, requires_grad=True)
start = time.perf_counter()
with triton_mps.profile() as prof:
    torch.compile(model)(x).square().mean().backward()
total = time.perf_counter() - start
spent["launches"] = sum(r.wall_us for r in prof) / 1e6
spent["total"] = total
spent["inductor"] = total - sum(v for k, v in spent.items() if k not in ("total",))
spent["kernels"] = len({r.kernel for r in prof})
print("RESULT " + json.dumps(spent))
"""

COLUMNS = ["total", "inductor", "triton frontend", "ours: TTGIR->MSL", "ours: build", "launches"]
SIZES = {"small": (2, 16, 32, 2), "default": (4, 64, 128, 4)}


def one_round(python: str, size: tuple[int, ...], config: dict[str, str]) -> dict:
    with tempfile.TemporaryDirectory(prefix="tmps-bench-inductor-") as tmp:
        env = dict(os.environ)
        env.update(config)
        env.update(TORCHINDUCTOR_CACHE_DIR=f"{tmp}/inductor", TRITON_CACHE_DIR=f"{tmp}/triton",
                   TRITON_MPS_CACHE_DIR=f"{tmp}/tmps", TRITON_BACKEND="mps", TMPS_BENCH_DIR=str(REPO / "benchmarks"))
        example = str(REPO / "examples" / "torch_compile_example.py")
        return _bench_child.run([python, "-c", textwrap.dedent(CHILD), example, json.dumps(size)], env,
                                cwd=str(REPO / "examples"))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--size", choices=sorted(SIZES), default="default")
    parser.add_argument("--python", default=sys.executable)
    args = parser.parse_args(argv)
    workers = os.cpu_count() or 1
    configs = {
        "at first launch": {"TRITON_MPS_PREBUILD": "0"},
        "prebuild": {},
        f"prebuild, {workers} workers": {"TMPS_BENCH_COMPILE_THREADS": str(workers)},
    }
    results: dict[str, list[dict]] = {label: [] for label in configs}
    for _ in range(args.rounds):  # interleaved: load changes hit every configuration alike
        for label, config in configs.items():
            results[label].append(one_round(args.python, SIZES[args.size], config))
    b, t, d, h = SIZES[args.size]
    kernels = int(statistics.median(r["kernels"] for r in results["prebuild"]))
    print(f"torch.compile of a transformer block {b}x{t}x{d} ({h} heads), forward + backward, cold caches, "
          f"{kernels} distinct kernels; median of {args.rounds} fresh processes per row (seconds)")
    print("| configuration | " + " | ".join(COLUMNS) + " | ours / triton | total / at first launch |")
    print("|---|" + "---:|" * (len(COLUMNS) + 2))
    base = None
    for label, rounds in results.items():
        med = {c: statistics.median(r[c] for r in rounds) for c in COLUMNS}
        base = base or med["total"]
        ours = med["ours: TTGIR->MSL"] + med["ours: build"]
        ratio = ours / med["triton frontend"] if med["triton frontend"] else float("nan")
        print(f"| {label} | " + " | ".join(f"{med[c]:.2f}" for c in COLUMNS) +
              f" | {ratio:.2f} | {med['total'] / base:.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
