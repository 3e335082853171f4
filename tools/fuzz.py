"""The long differential-fuzzing run: random Triton kernels on the simulator against numpy.

Runs tests/triton/fuzz through pytest (and pytest-xdist) with a kernel budget, then prints what
ran: kernels generated, input cases (one case = one kernel launched on one random input), and
mismatches with their kernels. Example (about 10,000 cases):

    .venv/bin/python tools/fuzz.py --cases 10000 -n 2

Every distinct kernel costs a compile (about a second); each runs on --inputs random inputs of
random sizes, so the case count grows faster than the compile time.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FAMILIES = 4  # ew1d, ew2d, reduce, scan (tests/triton/fuzz/fuzz_kernels.py)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cases", type=int, default=10_000, help="input cases to run in total (default 10000)")
    ap.add_argument("--inputs", type=int, default=12, help="random inputs per generated kernel (default 12)")
    ap.add_argument("-n", "--workers", default="2", help="pytest-xdist workers (default 2; 0: in process)")
    ap.add_argument("--seed", type=int, default=int(time.time()) % 100_000, help="run seed (default: the clock)")
    ap.add_argument("--stats", type=Path, help="JSON-lines file of per-kernel results (default: a temp file)")
    ap.add_argument("pytest_args", nargs="*", help="extra pytest arguments (e.g. -k ew1d)")
    a = ap.parse_args()

    kernels = math.ceil(a.cases / a.inputs)
    workers = max(int(a.workers), 1)
    shards = 2 * workers  # shards per family: xdist balances them
    per_shard = math.ceil(kernels / (FAMILIES * shards))
    stats = a.stats or Path(tempfile.mkstemp(prefix="tmps-fuzz-", suffix=".jsonl")[1])
    stats.write_text("")
    env = dict(os.environ, TMPS_FUZZ_KERNELS=str(per_shard), TMPS_FUZZ_INPUTS=str(a.inputs),
               TMPS_FUZZ_SHARDS=str(shards), TMPS_FUZZ_SEED=str(a.seed), TMPS_FUZZ_STATS=str(stats))
    cmd = [sys.executable, "-m", "pytest", str(ROOT / "tests/triton/fuzz"), "-q", "-p", "no:cacheprovider",
           *(["-n", str(a.workers)] if a.workers != "0" else []), *a.pytest_args]
    print(f"fuzz: seed {a.seed}, {per_shard * FAMILIES * shards} kernels x {a.inputs} inputs, stats in {stats}")
    start = time.perf_counter()
    rc = subprocess.call(cmd, env=env, cwd=ROOT)
    wall = time.perf_counter() - start

    rows = [json.loads(line) for line in stats.read_text().splitlines() if line.strip()]
    bad = [r for r in rows if not r["ok"]]
    print(f"\nfuzz summary (seed {a.seed}): {len(rows)} kernel runs ({len({r['kernel'] for r in rows})} distinct "
          f"kernels), {sum(r['cases'] for r in rows)} input cases passed, {len(bad)} kernel runs with a mismatch "
          f"or error, {wall:.0f} s wall")
    for fam in sorted({r["family"] for r in rows}):
        fr = [r for r in rows if r["family"] == fam]
        print(f"  {fam:7s} {len(fr):5d} kernels {sum(r['cases'] for r in fr):7d} cases "
              f"{sum(not r['ok'] for r in fr):3d} failing")
    for r in bad[:5]:
        print(f"\n--- {r['family']} kernel {r['kernel']}:\n{r['problem']}\n{r['source']}")
    return rc


if __name__ == "__main__":
    sys.exit(main())
