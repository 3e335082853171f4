"""Record every MSL kernel the test suite emits, to check that a refactor changes no kernel.

As a pytest plugin (the tools folder on the path, a fresh Triton cache so every kernel is lowered):

    TMPS_RECORD_MSL=/tmp/before PYTHONPATH=tools .venv/bin/python -m pytest -p record_msl -n 2 tests

writes, per pytest worker, `<dir>/<worker>.jsonl` (one line per `compile_ttgir`: the test, the
kernel name, the SHA-256 of the MSL) and each distinct text once under `<dir>/texts/`. Then

    python tools/record_msl.py compare /tmp/before /tmp/after

compares the two runs test by test (a test is keyed by its file's name and its test id, so tests
that moved to another folder still match) and prints every test whose kernels differ, with the
texts to diff. Kernels compiled in child processes (examples, Inductor workers) are not seen.
Texts are compared as written and then with every Python file name in them (`/any/path/x.py`)
made one: a kernel's source-line comments name the file it came from, which moves and is renamed
with the tests, differs between checkouts and is random for kernels written to temporary files.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import sys
import tempfile
from collections import Counter, defaultdict
from pathlib import Path

_OUT = os.environ.get("TMPS_RECORD_MSL")
_CACHE: tempfile.TemporaryDirectory | None = None  # the fresh Triton cache of a recording run


def current_test() -> str:
    # "tests/compiler/test_reduce.py::test_sum[float32] (call)" -> "test_reduce.py::test_sum[float32]"
    current = os.environ.get("PYTEST_CURRENT_TEST", "?").rsplit(" ", 1)[0]
    return current.rsplit("/", 1)[-1]


def _recording(compile_ttgir):
    out = Path(_OUT)
    texts = out / "texts"
    texts.mkdir(parents=True, exist_ok=True)
    log = out / f"{os.environ.get('PYTEST_XDIST_WORKER', 'main')}.jsonl"

    def compile_and_record(*args, **kwargs):
        compiled = compile_ttgir(*args, **kwargs)
        sha = hashlib.sha256(compiled.msl.encode()).hexdigest()
        text = texts / f"{sha}.metal"
        if not text.exists():
            text.write_text(compiled.msl)
        with log.open("a") as f:
            f.write(json.dumps({"test": current_test(), "kernel": compiled.name, "sha": sha}) + "\n")
        return compiled

    return compile_and_record


def pytest_configure(config):
    if not _OUT:
        return
    # A fresh Triton cache: a cached kernel is never lowered, so it would not be recorded.
    global _CACHE
    _CACHE = tempfile.TemporaryDirectory(prefix="tmps-record-cache-")  # removed at exit
    os.environ["TRITON_CACHE_DIR"] = _CACHE.name
    import triton_mps.compiler as compiler

    compiler.compile_ttgir = _recording(compiler.compile_ttgir)


def _load(run: Path) -> dict[str, Counter]:
    by_test: dict[str, Counter] = defaultdict(Counter)
    for log in run.glob("*.jsonl"):
        for line in log.read_text().splitlines():
            rec = json.loads(line)
            by_test[rec["test"]][(rec["kernel"], rec["sha"])] += 1
    return by_test


_PATH = re.compile(r"(?:/[\w.+-]+)*/?[\w.-]+\.py\b")


def _normalized(run: Path, kernels: Counter) -> Counter:
    out: Counter = Counter()
    for (kernel, sha), n in kernels.items():
        text = (run / "texts" / f"{sha}.metal").read_text()
        text = _PATH.sub("*.py", text)
        out[(kernel, hashlib.sha256(text.encode()).hexdigest())] += n
    return out


def compare(before: Path, after: Path) -> int:
    a, b = _load(before), _load(after)
    common = sorted(set(a) & set(b))
    raw = [t for t in common if a[t] != b[t]]
    # A kernel lowered in one run only (Triton's in-process cache had it from an earlier test of
    # the same worker in the other) is no change of text: only kernels that differ count.
    normal = {t: (set(_normalized(before, a[t])), set(_normalized(after, b[t]))) for t in raw}
    differ = [t for t, (x, y) in normal.items() if not (x <= y or y <= x)]
    print(f"tests in both whose kernels differ as written: {len(raw)}; with paths normalized: "
          f"{sum(x != y for x, y in normal.values())}, of which lowered in one run only: "
          f"{sum(x != y and (x <= y or y <= x) for x, y in normal.values())}; differing texts: {len(differ)}")
    all_a = sum(a.values(), Counter())
    all_b = sum(b.values(), Counter())
    print(f"tests that compiled kernels: {len(a)} before, {len(b)} after, {len(common)} in both")
    print(f"compilations: {sum(all_a.values())} before, {sum(all_b.values())} after; "
          f"distinct kernels: {len(all_a)} before, {len(all_b)} after")
    for t in differ:
        gone, new = a[t] - b[t], b[t] - a[t]
        print(f"  {t}")
        for kernel, sha in gone:
            print(f"    - {kernel} {before / 'texts' / (sha + '.metal')}")
        for kernel, sha in new:
            print(f"    + {kernel} {after / 'texts' / (sha + '.metal')}")
    only = sorted(set(a) ^ set(b))
    if only:
        print(f"tests in one run only: {len(only)} (renamed or not run), e.g. {only[:5]}")
    distinct_gone = set(_normalized(before, all_a)) - set(_normalized(after, all_b))
    print(f"distinct kernels of the first run missing from the second (paths normalized): {len(distinct_gone)}")
    return 1 if differ or distinct_gone else 0


if __name__ == "__main__":
    if len(sys.argv) != 4 or sys.argv[1] != "compare":
        sys.exit(__doc__)
    sys.exit(compare(Path(sys.argv[2]), Path(sys.argv[3])))
