#!/usr/bin/env python3
"""Run PyTorch's own Inductor tests (`CpuTritonTests`: Inductor's `cpu_backend="triton"`) on the
mps backend (simulator off macOS).

    python tools/conformance/run_inductor.py                          # all of CpuTritonTests
    python tools/conformance/run_inductor.py --lift-triton-cpu-skips  # also the tests skipped for triton-cpu
    python tools/conformance/run_inductor.py --every 20 --lift-triton-cpu-skips --check-ratchet  # CI

Upstream files are read from --upstream (default ../shared/upstream-pytorch beside the checkout;
its README says where they come from), never copied. Output, skip list and ratchet as for
tools/conformance/run.py (ratchet: tools/conformance/ratchet/test_triton_cpu_backend.txt).
Each record also has `launches` (Triton launches of the test through our launcher; a pass with
none is counted as "passed (aten fallback)"), `triton_cpu_xfail` (PyTorch expects triton-cpu to
fail it; we run it as a plain test) and `triton_cpu_skip` (skipped for triton-cpu, lifted).
"""

from __future__ import annotations

import argparse
import os
import shlex
import shutil
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from run import REPO, Suite, add_common_options, collect, ratchet_path, run_suite, shard, split_argv  # noqa: E402

DEFAULT_UPSTREAM = REPO.parent / "shared" / "upstream-pytorch"
TEST_DIR = "test/inductor"
TEST_FILE = "test_triton_cpu_backend.py"
TEST_CLASS = "CpuTritonTests"


def outcome_of(r: dict) -> str:
    """A record's outcome, with passes split by whether our kernels ran."""
    if r["outcome"] == "passed":
        return "passed (our kernels)" if r.get("launches", 0) > 0 else "passed (aten fallback)"
    return r["outcome"]


def inductor_summary(records: list[dict]) -> str:
    """The counts by launch, and the comparison with triton-cpu's expected failures and skips."""
    c = Counter(outcome_of(r) for r in records)
    lines = ["", "## Inductor counts", "",
             "| outcome | tests |", "|---|---:|"]
    lines += [f"| {k} | {c[k]} |" for k in ("passed (our kernels)", "passed (aten fallback)", "failed", "error",
                                          "skipped", "xfailed") if c.get(k)]
    for field, title in (("triton_cpu_xfail", "PyTorch's `_expected_failure_triton_cpu` (run as plain tests)"),
                         ("triton_cpu_skip", "Tests PyTorch skips only for triton-cpu (lifted)")):
        rs = sorted((r for r in records if r.get(field)), key=lambda r: r["id"])
        if not rs:
            continue
        n = Counter(outcome_of(r) for r in rs)
        lines += ["", f"## {title}: {len(rs)}", "",
                  ", ".join(f"{v} {k}" for k, v in sorted(n.items())), "",
                  "| test | here | cause |", "|---|---|---|"]
        lines += [f"| `{r['id'].rsplit('::', 1)[-1]}` | {outcome_of(r)} | {r.get('cause', '').replace('|', '/')} |"
                  for r in rs]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--upstream", type=Path,
                    default=Path(os.environ.get("TMPS_UPSTREAM_PYTORCH", DEFAULT_UPSTREAM)))
    ap.add_argument("--lift-triton-cpu-skips", action="store_true",
                    help="also run the tests PyTorch skips only for triton-cpu")
    add_common_options(ap)
    ap.set_defaults(timeout=600)
    argv, extra = split_argv(argv)
    args = ap.parse_args(argv)

    folder = (args.upstream / TEST_DIR).resolve()
    if not (folder / TEST_FILE).is_file():
        print(f"upstream PyTorch tests not found at {args.upstream} (expected {TEST_DIR}/{TEST_FILE})",
              file=sys.stderr)
        return 2
    name = "inductor" + ("-lifted" if args.lift_triton_cpu_skips else "") + (
        f"-every{args.every}" if args.every > 1 else "")
    out = (args.out or REPO / "build" / "conformance" / name).resolve()
    out.mkdir(parents=True, exist_ok=True)
    ids = shard(collect(folder, TEST_FILE, args.python, ("-k", TEST_CLASS)), args.every, args.offset)
    plugins = ["-k", TEST_CLASS, "-p", "tmps_conformance_plugin", "-p", "tmps_inductor_plugin"]
    if args.lift_triton_cpu_skips:
        plugins.append("--tmps-lift-triton-cpu-skips")
    # Fresh caches: a pass must come from this run's compilation, not an earlier run's artifacts.
    caches = out / "cache"
    shutil.rmtree(caches, ignore_errors=True)
    env = {"TORCHINDUCTOR_CACHE_DIR": str(caches / "inductor"), "TRITON_CACHE_DIR": str(caches / "triton")}
    suite = Suite(folder, TEST_FILE, plugins, ratchet_path(TEST_FILE, args.ratchet_dir), env)
    shown = "python tools/conformance/run_inductor.py " + " ".join(shlex.quote(a) for a in argv)
    return run_suite(suite, ids, out, args, extra, shown, inductor_summary)


if __name__ == "__main__":
    sys.exit(main())
