#!/usr/bin/env python3
"""Run Triton's upstream language tests on the mps backend (simulator: `--device cpu`).

    python tools/conformance/run.py                      # all of test_core.py
    python tools/conformance/run.py test_core.py --every 7          # a fixed sample
    python tools/conformance/run.py test_tuple.py test_random.py -n 2
    python tools/conformance/run.py --all                           # every file, one pytest session
    python tools/conformance/run.py --every 49 --check-ratchet      # what CI runs

Upstream files are read from --upstream (default ../shared/upstream-triton beside the
checkout), never copied. Several files run in one pytest session, as `pytest <files> -n 2` would
(one collection, one start of the workers, and xdist balances the files' tests across them;
`--per-file` runs a session per file). Writes to --out (default build/conformance/<name>/), per
file (in <out>/<file stem>/ when there are several):
  results.jsonl   one JSON object per test: id, outcome, duration, root cause, message
  summary.md      counts, run time, the command, and failures grouped by root cause
and, for several files, <out>/summary.md: a table of the files and the session's wall time.
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


def env_for_run(workers: str = "0") -> dict:
    """The environment of a pytest run over the upstream tests with `workers` xdist workers."""
    env = dict(os.environ)
    env["TRITON_BACKEND"] = "mps"
    env["PYTHONPATH"] = os.pathsep.join([str(HERE)] + [p for p in [env.get("PYTHONPATH")] if p])
    env.setdefault("PYTHONDONTWRITEBYTECODE", "1")
    # The simulator's device memory is torch's CPU memory, and test_conversions allocates fresh
    # 16-64 MB tensors for each of its 256 steps: faulted in 4 KB at a time they cost ~10% of
    # its run (measured on 2 cores); torch's allocator then asks for huge pages (madvise).
    env.setdefault("THP_MEM_ALLOC_ENABLE", "1")
    # glibc hands every freed block over 32 MB back to the kernel (mmap), and test_conversions'
    # exhaustive tests allocate ~200 MB of fresh tensors in each of their 256 steps: each step's
    # first writes then fault in zeroed pages again (clear_page was ~15% of those tests' profile).
    # Freed memory stays in the process instead (no mmap for large blocks; the heap's top is
    # returned above 1 GB): ~20% faster side by side with a second worker.
    env.setdefault("MALLOC_MMAP_MAX_", "0")
    env.setdefault("MALLOC_TRIM_THRESHOLD_", str(1 << 30))
    for name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        env.setdefault(name, threads_per_worker(workers))
    return env


def threads_per_worker(workers: str) -> str:
    """torch's OpenMP and numpy's OpenBLAS threads for each of `workers` xdist workers: the
    cores shared out (their idle threads spin, taking the core another worker's test needs)."""
    cores = os.cpu_count() or 1
    w = workers.strip()
    n = cores if w in ("auto", "logical") else int(w) if w.isdigit() and int(w) > 0 else 1
    return str(max(1, cores // n))


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


def collect_files(upstream: Path, paths: list[str], python: str) -> tuple[dict[str, list[str]], dict[str, str]]:
    """One collection of several files, as one pytest session sees them: {path: ids} for the files
    with tests, and {path: why} for the others (the collection error pytest names, else `no tests`)."""
    cmd = [python, "-m", "pytest", *paths, "--device", "cpu", "--collect-only", "-q",
           "--continue-on-collection-errors", "-p", "no:warnings", "-p", "no:cacheprovider"]
    out = subprocess.run(cmd, cwd=upstream, env=env_for_run(), capture_output=True, text=True)
    ids: dict[str, list[str]] = {p: [] for p in paths}
    errors: dict[str, list[str]] = {}  # path -> the lines of its `ERROR collecting <path>` section
    section: list[str] | None = None
    for ln in out.stdout.splitlines():
        head = ln.strip().split("::", 1)[0]
        if "::" in ln and head in ids:
            ids[head].append(ln.strip())
        elif " ERROR collecting " in ln:
            section = errors.setdefault(ln.split(" ERROR collecting ", 1)[1].strip(" _"), [])
        elif ln.startswith("="):
            section = None
        elif section is not None:
            section.append(ln)
    if not any(ids.values()) and not errors:
        raise NothingCollected(" ".join(paths), f"{out.stdout[-3000:]}\n{out.stderr[-3000:]}",
                               out.returncode not in (0, 5))
    missing = {p: "collection error: " + collection_reason("\n".join(errors[p])) if p in errors else "no tests"
               for p in paths if not ids[p]}
    return {p: i for p, i in ids.items() if i}, missing


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


def summarize(records: list[dict], selected: int, seconds: float, command: str, regressions: list[str],
              timing: str = "") -> str:
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
        + (f", {missing} without a report" if missing else "") + f"; {timing or f'wall time {seconds / 60:.1f} min'}.",
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


PYTEST_ARGS = ["--device", "cpu", "-p", "tmps_conformance_plugin"]


@dataclass
class Suite:
    """One upstream test file: where it is, the pytest arguments and plugins it runs with, its ratchet."""
    upstream: Path
    path: str
    pytest_args: list[str]
    ratchet: Path
    env: dict[str, str] = field(default_factory=dict)  # on top of env_for_run()


def run_pytest(upstream: Path, paths: list[str], pytest_args: list[str], ids: list[str], out: Path,
               args: argparse.Namespace, extra: list[str], env: dict[str, str]) -> tuple[list[dict], float]:
    """One pytest session over `paths` running just `ids` (options from `args`: workers, timeout,
    skips, -k). Its log goes to <out>/pytest.log; returns the per-test records and the wall time."""
    (out / "ids.txt").write_text("".join(i + "\n" for i in ids))
    report = out / "results.jsonl"
    report.unlink(missing_ok=True)
    cmd = [args.python, "-m", "pytest", *paths, *pytest_args, "-p", "no:cacheprovider", "-p", "no:warnings",
           "-q", "--tb=no", "--no-header", "-rN", f"--timeout={args.timeout}", "--tmps-ids", str(out / "ids.txt"),
           "--tmps-skips", str(args.skips.resolve()), "--tmps-report", str(report)]
    if args.workers not in ("0", ""):
        cmd += ["-n", str(args.workers)]
    if args.k:
        cmd += ["-k", args.k]
    cmd += extra
    t0 = time.time()
    with (out / "pytest.log").open("w") as log:
        subprocess.run(cmd, cwd=upstream, env={**env_for_run(str(args.workers)), **env}, stdout=log,
                       stderr=subprocess.STDOUT)
    seconds = time.time() - t0
    records = [json.loads(ln) for ln in report.read_text().splitlines()] if report.exists() else []
    return records, seconds


def report_suite(suite: Suite, ids: list[str], records: list[dict], seconds: float, out: Path,
                 args: argparse.Namespace, shown: str, summary_extra: Callable[[list[dict]], str] | None = None,
                 timing: str = "") -> int:
    """Write summary.md of one file's `records` to `out`, print its line, check/update the
    ratchet. Returns 1 on a ratchet regression with --check-ratchet, else 0."""
    path = suite.path
    outcome = {r["id"]: r["outcome"] for r in records}
    ratchet = read_ratchet(suite.ratchet)
    ran = set(ids) if not args.k else set(outcome)
    regressions = sorted(i for i in ratchet & ran if outcome.get(i) not in ("passed",))
    text = summarize(records, len(ids), seconds, shown, regressions, timing)
    (out / "summary.md").write_text(text + (summary_extra(records) if summary_extra else ""))
    c = Counter(outcome.values())
    print(f"[conformance] {path}: {c.get('passed', 0)} passed, {c.get('failed', 0) + c.get('error', 0)} failed, "
          f"{c.get('skipped', 0)} skipped, {c.get('xfailed', 0)} xfailed, {len(ids) - len(records)} without report, "
          f"{timing or f'{seconds / 60:.1f} min'}; "
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


def run_suite(suite: Suite, ids: list[str], out: Path, args: argparse.Namespace, extra: list[str], shown: str,
              summary_extra: Callable[[list[dict]], str] | None = None) -> int:
    """Run `ids` of one file in a session of its own; write and check its report (report_suite)."""
    print(f"[conformance] {suite.path}: {len(ids)} tests, {args.workers} workers -> {out}", flush=True)
    records, seconds = run_pytest(suite.upstream, [suite.path], suite.pytest_args, ids, out, args, extra, suite.env)
    return report_suite(suite, ids, records, seconds, out, args, shown, summary_extra)


def run_together(upstream: Path, paths: list[str], ids: dict[str, list[str]], not_run: dict[str, str], out: Path,
                 args: argparse.Namespace, extra: list[str], shown: str) -> int:
    """The files' tests in one pytest session; a report per file in <out>/<stem>/ and a table of
    the files (counts, the time their tests took, why a file did not run) in <out>/summary.md."""
    out.mkdir(parents=True, exist_ok=True)
    every = [i for p in paths for i in ids.get(p, [])]
    print(f"[conformance] {len(ids)} files, {len(every)} tests, one session, {args.workers} workers -> {out}",
          flush=True)
    records, seconds = run_pytest(upstream, [p for p in paths if p in ids], PYTEST_ARGS, every, out, args, extra, {})
    by_file: dict[str, list[dict]] = defaultdict(list)
    for r in records:
        by_file[r["id"].split("::", 1)[0]].append(r)
    status = 0
    rows = ["| file | passed | failed | skipped | tests' time (min) |", "|---|---:|---:|---:|---:|"]
    for p in paths:
        if p not in ids:
            rows.append(f"| {Path(p).name} | not run: {not_run[p].replace('|', '/')} | | | |")
            continue
        sub = out / Path(p).stem
        sub.mkdir(parents=True, exist_ok=True)
        rs = by_file.get(p, [])
        (sub / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rs))
        busy = sum(r.get("duration", 0.0) for r in rs)
        status |= report_suite(Suite(upstream, p, PYTEST_ARGS, ratchet_path(p, args.ratchet_dir)), ids[p], rs, seconds,
                               sub, args, shown, timing=f"its tests took {busy / 60:.1f} min of the session's "
                               f"{seconds / 60:.1f} min")
        c = Counter(r["outcome"] for r in rs)
        failed = c["failed"] + c["error"]
        rows.append(f"| {Path(p).name} | {c['passed']} | {failed} | {c['skipped']} | {busy / 60:.1f} |")
    c = Counter(r["outcome"] for r in records)
    text = ["# Upstream conformance run, one session", "", f"Command: `{shown}`", "",
            f"{len(every)} tests of {len(ids)} files: **{c['passed']} passed, {c['failed'] + c['error']} failed, "
            f"{c['skipped']} skipped**; wall time {seconds / 60:.1f} min with {args.workers} workers.", "", *rows, ""]
    (out / "summary.md").write_text("\n".join(text))
    print(f"[conformance] session: {len(records)} tests reported, wall time {seconds / 60:.1f} min; "
          f"summary: {out / 'summary.md'}", flush=True)
    return status


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
    ap.add_argument("files", nargs="*", default=None, help="test files (default test_core.py)")
    ap.add_argument("--all", action="store_true", help="every test_*.py file of the upstream language tests")
    ap.add_argument("--per-file", action="store_true", help="a pytest session per file (default: one for all)")
    ap.add_argument("--upstream", type=Path, default=Path(os.environ.get("TMPS_UPSTREAM_TRITON", DEFAULT_UPSTREAM)))
    add_common_options(ap)
    argv, extra = split_argv(argv)
    args = ap.parse_args(argv)

    upstream = args.upstream.resolve()
    if not (upstream / LANG_DIR).is_dir():
        print(f"upstream Triton tests not found at {upstream} (expected {LANG_DIR}/ there)", file=sys.stderr)
        return 2
    names = args.files or (sorted(f.name for f in (upstream / LANG_DIR).glob("test_*.py")) if args.all
                           else ["test_core.py"])
    paths = [test_path(n) for n in names]
    shown = "python tools/conformance/run.py " + " ".join(shlex.quote(a) for a in argv)
    if len(paths) == 1:
        out = args.out or REPO / "build" / "conformance" / (Path(paths[0]).stem if args.every == 1
                                                            else f"{Path(paths[0]).stem}-every{args.every}")
        out = out.resolve()
        out.mkdir(parents=True, exist_ok=True)
        ids = shard(collect(upstream, paths[0], args.python), args.every, args.offset)
        return run_suite(Suite(upstream, paths[0], PYTEST_ARGS, ratchet_path(paths[0], args.ratchet_dir)), ids, out,
                         args, extra, shown)

    default_out = REPO / "build" / "conformance" / ("all" if args.every == 1 else f"all-every{args.every}")
    out = (args.out or default_out).resolve()
    found, not_run = collect_files(upstream, paths, args.python)
    found = {p: shard(i, args.every, args.offset) for p, i in found.items()}
    status = 0
    for p, why in not_run.items():
        # Say why this file has nothing to run and go on with the others; an import error fails the run.
        print(f"[conformance] {p}: not run, {why}", flush=True)
        status |= int(why.startswith("collection error"))
    if not args.per_file:
        return status | run_together(upstream, paths, found, not_run, out, args, extra, shown)
    for p, ids in found.items():
        sub = out / Path(p).stem
        sub.mkdir(parents=True, exist_ok=True)
        status |= run_suite(Suite(upstream, p, PYTEST_ARGS, ratchet_path(p, args.ratchet_dir)), ids, sub, args, extra,
                            shown)
    return status


if __name__ == "__main__":
    sys.exit(main())
