#!/usr/bin/env python3
"""Run Triton's upstream language tests on the mps backend (simulator: `--device cpu`).

    python tools/conformance/run.py                      # all of test_core.py
    python tools/conformance/run.py test_core.py --every 7          # a fixed sample
    python tools/conformance/run.py test_tuple.py test_random.py -n 2
    python tools/conformance/run.py --every 49 --check-ratchet      # what CI runs

Upstream files are read from --upstream (default ../shared/upstream-triton beside the
checkout), never copied. Writes to --out (default build/conformance/<name>/):
  results.jsonl   one JSON object per test: id, outcome, duration, root cause, message
  summary.md      counts, run time, the command, and failures grouped by root cause
Skip list: tools/conformance/skips.txt (`pattern | reason`). Ratchet: tools/conformance/ratchet/
<file>.txt, the ids that passed; a listed test that does not pass is a regression (exit 1).
`--update-ratchet` adds the ids that passed in this run.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
import time
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
DEFAULT_UPSTREAM = REPO.parent / "shared" / "upstream-triton"
LANG_DIR = "python/test/unit/language"
SKIPS = HERE / "skips.txt"
RATCHET_DIR = HERE / "ratchet"


def test_path(name: str) -> str:
    """`test_core.py`, `test_core` or `python/test/unit/language/test_core.py` -> the last form."""
    if "/" in name:
        return name
    return f"{LANG_DIR}/{name if name.endswith('.py') else name + '.py'}"


def env_for_run() -> dict:
    env = dict(os.environ)
    env["TRITON_BACKEND"] = "mps"
    env["PYTHONPATH"] = os.pathsep.join([str(HERE)] + [p for p in [env.get("PYTHONPATH")] if p])
    env.setdefault("PYTHONDONTWRITEBYTECODE", "1")
    return env


class NothingCollected(SystemExit):
    """A file whose collection found no test: none defined, or an error importing it (`error`)."""

    def __init__(self, path: str, output: str, error: bool):
        super().__init__(f"collection of {path} found no tests:\n{output}")
        self.output, self.error = output, error


def collect(upstream: Path, path: str, python: str, args: tuple[str, ...] = ("--device", "cpu")) -> list[str]:
    cmd = [python, "-m", "pytest", path, *args, "--collect-only", "-q", "-p", "no:warnings", "-p", "no:cacheprovider"]
    out = subprocess.run(cmd, cwd=upstream, env=env_for_run(), capture_output=True, text=True)
    ids = [ln.strip() for ln in out.stdout.splitlines() if ln.startswith(path + "::")]
    if not ids:
        raise NothingCollected(path, f"{out.stdout[-3000:]}\n{out.stderr[-3000:]}", out.returncode not in (0, 5))
    return ids


def collection_reason(output: str) -> str:
    """The line of pytest's collection output that says why (the last `E   ` line), else its last line."""
    lines = [ln.strip() for ln in output.splitlines() if ln.strip()]
    errors = [ln[1:].strip() for ln in lines if ln.startswith("E ")]
    return errors[-1] if errors else (lines[-1] if lines else "no output")


def shard(ids: list[str], every: int, offset: int) -> list[str]:
    """Every `every`-th id in collection order, starting at `offset`: deterministic for a given
    upstream revision."""
    return ids[offset::every] if every > 1 else list(ids)


def ratchet_path(path: str, folder: Path = RATCHET_DIR) -> Path:
    return folder / (Path(path).stem + ".txt")


def read_ratchet(path: Path) -> set[str]:
    if not path.exists():
        return set()
    return {ln.strip() for ln in path.read_text().splitlines() if ln.strip() and not ln.startswith("#")}


def write_ratchet(path: Path, ids: set[str], test_file: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    header = (f"# Ids of upstream {test_file} that pass on the mps backend (simulator). A listed test must\n"
              f"# keep passing: tools/conformance/run.py reports it as a regression otherwise.\n")
    path.write_text(header + "".join(i + "\n" for i in sorted(ids)))


def summarize(records: list[dict], selected: int, seconds: float, command: str, regressions: list[str]) -> str:
    counts = Counter(r["outcome"] for r in records)
    missing = selected - len(records)
    lines = [
        "# Upstream conformance run",
        "",
        f"Command: `{command}`",
        "",
        f"Selected {selected} tests: **{counts.get('passed', 0)} passed, {counts.get('failed', 0)} failed, "
        f"{counts.get('error', 0)} errors, {counts.get('skipped', 0)} skipped"
        + (f", {counts['xfailed']} xfailed" if counts.get("xfailed") else "") + "**"
        + (f", {missing} without a report" if missing else "") + f"; wall time {seconds / 60:.1f} min.",
        "",
    ]
    if regressions:
        lines += [f"## Ratchet regressions ({len(regressions)}): passed before, not now", ""]
        lines += [f"- `{i}`" for i in regressions] + [""]
    groups: dict[tuple, list[dict]] = defaultdict(list)
    for r in records:
        if r["outcome"] in ("failed", "error"):
            groups[(r.get("where", "?"), r.get("frame", ""), r.get("cause", "?"))].append(r)
    if groups:
        lines += ["## Failures by root cause", "",
                  "Deepest frame in our code (`triton_mps`), else in torch, Triton or another library, else the "
                  "test itself.", "",
                  "| count | where | frame | cause | example |", "|---:|---|---|---|---|"]
        for (where, frame, cause), rs in sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[0])):
            ex = rs[0]["id"].split("::", 1)[-1]
            cell = cause.replace("|", "\\|").replace("\n", " ")
            lines.append(f"| {len(rs)} | {where} | `{frame}` | {cell} | `{ex}` |")
        lines.append("")
    skipped = Counter(r.get("message", "") for r in records if r["outcome"] == "skipped")
    if skipped:
        lines += ["## Skips by reason", "", "| count | reason |", "|---:|---|"]
        lines += [f"| {n} | {m.replace('|', '/')[:200]} |" for m, n in skipped.most_common()] + [""]
    return "\n".join(lines)


@dataclass
class Suite:
    """One upstream test file: where it is, the pytest arguments and plugins it runs with, its ratchet."""
    upstream: Path
    path: str
    pytest_args: list[str]
    ratchet: Path
    env: dict[str, str] = field(default_factory=dict)  # on top of env_for_run()


def run_suite(suite: Suite, ids: list[str], out: Path, args: argparse.Namespace, extra: list[str], shown: str,
              summary_extra: Callable[[list[dict]], str] | None = None) -> int:
    """Run `ids` of `suite` (options from `args`: workers, timeout, skips, -k, ratchet flags), write
    results.jsonl and summary.md to `out`, check/update the ratchet. Returns 1 on a ratchet regression
    with --check-ratchet, else 0."""
    path = suite.path
    (out / "ids.txt").write_text("".join(i + "\n" for i in ids))
    report = out / "results.jsonl"
    report.unlink(missing_ok=True)
    cmd = [args.python, "-m", "pytest", path, *suite.pytest_args, "-p", "no:cacheprovider", "-p", "no:warnings",
           "-q", "--tb=no", "--no-header", "-rN", f"--timeout={args.timeout}", "--tmps-ids", str(out / "ids.txt"),
           "--tmps-skips", str(args.skips.resolve()), "--tmps-report", str(report)]
    if args.workers not in ("0", ""):
        cmd += ["-n", str(args.workers)]
    if args.k:
        cmd += ["-k", args.k]
    cmd += extra
    t0 = time.time()
    print(f"[conformance] {path}: {len(ids)} tests, {args.workers} workers -> {out}", flush=True)
    with (out / "pytest.log").open("w") as log:
        subprocess.run(cmd, cwd=suite.upstream, env={**env_for_run(), **suite.env}, stdout=log,
                       stderr=subprocess.STDOUT)
    seconds = time.time() - t0
    records = [json.loads(ln) for ln in report.read_text().splitlines()] if report.exists() else []
    outcome = {r["id"]: r["outcome"] for r in records}
    ratchet = read_ratchet(suite.ratchet)
    ran = set(ids) if not args.k else set(outcome)
    regressions = sorted(i for i in ratchet & ran if outcome.get(i) not in ("passed",))
    text = summarize(records, len(ids), seconds, shown, regressions)
    (out / "summary.md").write_text(text + (summary_extra(records) if summary_extra else ""))
    c = Counter(outcome.values())
    print(f"[conformance] {path}: {c.get('passed', 0)} passed, {c.get('failed', 0) + c.get('error', 0)} failed, "
          f"{c.get('skipped', 0)} skipped, {c.get('xfailed', 0)} xfailed, {len(ids) - len(records)} without report, "
          f"{seconds / 60:.1f} min; "
          f"summary: {out / 'summary.md'}", flush=True)
    if args.update_ratchet:
        passed = {i for i, o in outcome.items() if o == "passed"}
        write_ratchet(suite.ratchet, ratchet | passed, path)
        print(f"[conformance] ratchet {suite.ratchet}: {len(ratchet | passed)} ids ({len(passed - ratchet)} new)")
    if regressions:
        print(f"[conformance] {len(regressions)} RATCHET REGRESSIONS (passed before, not now):", file=sys.stderr)
        for i in regressions:
            print(f"  {i}: {outcome.get(i, 'no report')}", file=sys.stderr)
        if args.check_ratchet:
            return 1
    return 0


def add_common_options(ap: argparse.ArgumentParser) -> None:
    """The options every upstream runner takes (sampling, workers, timeout, output, ratchet, skips)."""
    ap.add_argument("--every", type=int, default=1, help="run every N-th collected id (a fixed sample)")
    ap.add_argument("--offset", type=int, default=0, help="first id of the sample")
    ap.add_argument("-k", default=None, help="pytest -k expression (applied after sampling)")
    ap.add_argument("-n", "--workers", default="2", help="pytest-xdist workers (0: no xdist)")
    ap.add_argument("--timeout", type=int, default=300, help="per-test timeout in seconds")
    ap.add_argument("--out", type=Path, default=None, help="output folder (default build/conformance/<name>)")
    ap.add_argument("--check-ratchet", action="store_true", help="exit 1 when a ratchet id does not pass")
    ap.add_argument("--update-ratchet", action="store_true", help="add the ids that passed to the ratchet")
    ap.add_argument("--skips", type=Path, default=SKIPS, help="skip list (default tools/conformance/skips.txt)")
    ap.add_argument("--ratchet-dir", type=Path, default=RATCHET_DIR, help="ratchet folder (<file stem>.txt)")
    ap.add_argument("--python", default=sys.executable)


def split_argv(argv: list[str] | None) -> tuple[list[str], list[str]]:
    """(runner arguments, extra pytest arguments after `--`)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if "--" in argv:
        return argv[:argv.index("--")], argv[argv.index("--") + 1:]
    return argv, []


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("files", nargs="*", default=["test_core.py"], help="test files (default test_core.py)")
    ap.add_argument("--upstream", type=Path, default=Path(os.environ.get("TMPS_UPSTREAM_TRITON", DEFAULT_UPSTREAM)))
    add_common_options(ap)
    argv, extra = split_argv(argv)
    args = ap.parse_args(argv)

    upstream = args.upstream.resolve()
    if not (upstream / LANG_DIR).is_dir():
        print(f"upstream Triton tests not found at {upstream} (expected {LANG_DIR}/ there)", file=sys.stderr)
        return 2
    status = 0
    for name in args.files:
        path = test_path(name)
        stem = Path(path).stem
        out = (args.out or REPO / "build" / "conformance" / (stem if args.every == 1 else f"{stem}-every{args.every}"))
        if len(args.files) > 1 and args.out:
            out = args.out / stem
        out = out.resolve()
        out.mkdir(parents=True, exist_ok=True)
        try:
            ids = shard(collect(upstream, path, args.python), args.every, args.offset)
        except NothingCollected as e:
            if len(args.files) == 1:
                raise
            # Several files: say why this one has nothing to run and go on with the others.
            kind = "collection error" if e.error else "no tests"
            print(f"[conformance] {path}: not run, {kind}: {collection_reason(e.output)}", flush=True)
            status |= int(e.error)
            continue
        shown = "python tools/conformance/run.py " + " ".join(shlex.quote(a) for a in argv)
        suite = Suite(upstream, path, ["--device", "cpu", "-p", "tmps_conformance_plugin"],
                      ratchet_path(path, args.ratchet_dir))
        status |= run_suite(suite, ids, out, args, extra, shown)
    return status


if __name__ == "__main__":
    sys.exit(main())
