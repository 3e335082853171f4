"""tools/conformance (issue 7): the upstream-test runner on a small fake upstream folder, so its
report, root-cause grouping, skip list and ratchet are tested without Triton's files; and the
CI shard of upstream test_core.py against the ratchet when ../shared/upstream-triton exists."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
RUNNER = REPO / "tools" / "conformance" / "run.py"
UPSTREAM = Path(os.environ.get("TMPS_UPSTREAM_TRITON", REPO.parent / "shared" / "upstream-triton"))
# The CI shard: every SHARD_EVERY-th collected id of test_core.py (a subset of the every-7th
# sample the ratchet was measured on), about 170 tests.
SHARD_EVERY = 49

FAKE_CONFTEST = '''
import pytest

def pytest_addoption(parser):
    parser.addoption("--device", action="store", default="cuda")
'''

FAKE_TESTS = '''
import pytest
import triton_mps.compiler.names as names

def test_ok():
    assert names.legal_kernel_name("kernel") == "k_kernel"

@pytest.mark.parametrize("x", [1, 2])
def test_ours_raises(x):
    names.sanitize(None)  # TypeError inside triton_mps

def test_wrong_value():
    assert 1 + 1 == 3

def test_needs_cuda():
    raise RuntimeError("no CUDA here")
'''


def _run(tmp_path, *args):
    return subprocess.run([sys.executable, str(RUNNER), "test_fake.py", "--upstream", str(tmp_path / "up"),
                           "--out", str(tmp_path / "out"), "--skips", str(tmp_path / "skips.txt"),
                           "--ratchet-dir", str(tmp_path / "ratchet"), "-n", "0", *args],
                          capture_output=True, text=True, timeout=300)


@pytest.fixture
def fake_upstream(tmp_path):
    lang = tmp_path / "up" / "python" / "test" / "unit" / "language"
    lang.mkdir(parents=True)
    (tmp_path / "up" / "python" / "conftest.py").write_text(textwrap.dedent(FAKE_CONFTEST))
    (lang / "test_fake.py").write_text(textwrap.dedent(FAKE_TESTS))
    (tmp_path / "skips.txt").write_text("# comment\npython/test/unit/language/test_fake.py::test_needs_cuda | "
                                        "needs CUDA itself\n")
    return tmp_path


def test_runner_report_summary_ratchet(fake_upstream):
    tmp = fake_upstream
    r = _run(tmp, "--update-ratchet", "--check-ratchet")
    assert r.returncode == 0, r.stdout + r.stderr
    recs = {json.loads(ln)["id"].split("::")[1]: json.loads(ln) for ln in (tmp / "out" / "results.jsonl").open()}
    assert recs["test_ok"]["outcome"] == "passed"
    assert recs["test_needs_cuda"]["outcome"] == "skipped" and "needs CUDA itself" in recs["test_needs_cuda"]["message"]
    for x in ("1", "2"):
        rec = recs[f"test_ours_raises[{x}]"]
        assert rec["outcome"] == "failed" and rec["where"] == "triton_mps"
        assert rec["frame"] == "triton_mps/compiler/names.py:sanitize" and rec["cause"].startswith("TypeError")
    assert recs["test_wrong_value"]["where"] == "test"
    summary = (tmp / "out" / "summary.md").read_text()
    assert "1 passed, 3 failed, 0 errors, 1 skipped" in summary
    assert "| 2 | triton_mps | `triton_mps/compiler/names.py:sanitize` |" in summary  # grouped by cause
    ratchet = (tmp / "ratchet" / "test_fake.txt").read_text()
    assert "test_fake.py::test_ok\n" in ratchet and "test_wrong_value" not in ratchet

    # A test in the ratchet that fails now is a regression: exit 1 with --check-ratchet.
    with (tmp / "ratchet" / "test_fake.txt").open("a") as f:
        f.write("python/test/unit/language/test_fake.py::test_wrong_value\n")
    r = _run(tmp, "--check-ratchet")
    assert r.returncode == 1 and "RATCHET REGRESSIONS" in r.stderr and "test_wrong_value" in r.stderr
    assert "Ratchet regressions (1)" in (tmp / "out" / "summary.md").read_text()


@pytest.mark.parametrize("mode", ["one session", "--per-file"])
def test_files_that_collect_nothing_are_reported_and_the_others_run(fake_upstream, mode):
    """Several files: one without tests and one that fails to import are named with the reason,
    the rest still run (by default all in one pytest session, as `pytest <files>` would, with a
    report per file and a table of the files), and the import error makes the exit status 1."""
    lang = fake_upstream / "up" / "python" / "test" / "unit" / "language"
    (lang / "test_empty.py").write_text("X = 1\n")
    (lang / "test_broken.py").write_text("raise AssertionError('Torch not compiled with CUDA enabled')\n")
    (lang / "test_other.py").write_text("def test_one():\n    pass\n\ndef test_two():\n    assert False\n")
    out = fake_upstream / "out"
    r = subprocess.run([sys.executable, str(RUNNER), "test_empty.py", "test_broken.py", "test_fake.py", "test_other.py",
                        "--upstream", str(fake_upstream / "up"), "--out", str(out),
                        "--skips", str(fake_upstream / "skips.txt"), "--ratchet-dir", str(fake_upstream / "ratchet"),
                        "-n", "0", *([mode] if mode.startswith("--") else [])],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "test_empty.py: not run, no tests" in r.stdout
    assert "test_broken.py: not run, collection error: AssertionError: Torch not compiled with CUDA enabled" in r.stdout
    assert "test_fake.py: 1 passed, 3 failed, 1 skipped" in r.stdout
    assert "test_other.py: 1 passed, 1 failed, 0 skipped" in r.stdout
    fake = [json.loads(ln)["id"] for ln in (out / "test_fake" / "results.jsonl").open()]
    other = [json.loads(ln)["id"] for ln in (out / "test_other" / "results.jsonl").open()]
    assert len(fake) == 5 and all("test_fake.py::" in i for i in fake)
    assert sorted(other) == [f"python/test/unit/language/test_other.py::test_{n}" for n in ("one", "two")]
    if mode == "one session":
        assert r.stdout.count("one session") == 1 and (out / "ids.txt").read_text().count("\n") == 7
        table = (out / "summary.md").read_text()
        assert "| test_fake.py | 1 | 3 | 1 |" in table and "| test_other.py | 1 | 1 | 0 |" in table
        assert "| test_broken.py | not run: collection error: AssertionError" in table
        assert "1 skipped**; its tests took" in (out / "test_fake" / "summary.md").read_text()


ENV_CHECK = """
import gc, json, os

def test_env():
    keys = ("MALLOC_MMAP_MAX_", "MALLOC_TRIM_THRESHOLD_", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS",
            "THP_MEM_ALLOC_ENABLE", "PYTEST_XDIST_WORKER")
    seen = {k: os.environ.get(k) for k in keys}
    seen["frozen"] = gc.get_freeze_count()
    with open(os.environ["TMPS_ENV_OUT"], "a") as f:
        f.write(json.dumps(seen) + "\\n")
"""


def test_workers_get_the_runners_memory_and_thread_settings(fake_upstream, tmp_path):
    """The settings the whole upstream set's time depends on reach each xdist worker: freed memory
    kept in the process, torch's and OpenBLAS's threads shared out between the workers, and what
    collection built frozen out of the garbage collector's full passes."""
    lang = fake_upstream / "up" / "python" / "test" / "unit" / "language"
    (lang / "test_env.py").write_text(ENV_CHECK)
    seen_file = tmp_path / "seen.jsonl"
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS")}
    env["TMPS_ENV_OUT"] = str(seen_file)
    r = subprocess.run([sys.executable, str(RUNNER), "test_env.py", "--upstream", str(fake_upstream / "up"),
                        "--out", str(fake_upstream / "out"), "--skips", str(fake_upstream / "skips.txt"),
                        "--ratchet-dir", str(fake_upstream / "ratchet"), "-n", "2"],
                       capture_output=True, text=True, timeout=300, env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    seen = [json.loads(ln) for ln in seen_file.read_text().splitlines()]
    assert len(seen) == 1 and seen[0]["PYTEST_XDIST_WORKER"] in ("gw0", "gw1"), seen
    threads = str(max(1, (os.cpu_count() or 1) // 2))
    assert seen[0]["MALLOC_MMAP_MAX_"] == "0" and int(seen[0]["MALLOC_TRIM_THRESHOLD_"]) >= 1 << 30
    assert seen[0]["OMP_NUM_THREADS"] == threads and seen[0]["OPENBLAS_NUM_THREADS"] == threads
    assert seen[0]["THP_MEM_ALLOC_ENABLE"] == "1" and seen[0]["frozen"] > 1000


def test_skip_entries_need_a_reason(fake_upstream):
    (fake_upstream / "skips.txt").write_text("python/test/unit/language/test_fake.py::test_ok\n")
    r = _run(fake_upstream)
    assert r.returncode != 0 or "without a reason" in (fake_upstream / "out" / "pytest.log").read_text()
    sys.path.insert(0, str(RUNNER.parent))
    try:
        from skiplist import load_skips
    finally:
        sys.path.pop(0)
    with pytest.raises(ValueError, match="without a reason"):
        load_skips(fake_upstream / "skips.txt")
    assert load_skips(RUNNER.parent / "skips.txt").entries is not None  # the real list parses


def test_skip_patterns_take_brackets_literally(tmp_path):
    sys.path.insert(0, str(RUNNER.parent))
    try:
        from skiplist import load_skips
    finally:
        sys.path.pop(0)
    (tmp_path / "skips.txt").write_text("f.py::test_x[cuda] | needs CUDA\nf.py::test_y[*-True] | frontend\n")
    skips = load_skips(tmp_path / "skips.txt")
    assert skips.reason_for("f.py::test_x[cuda]") == "needs CUDA"
    assert skips.reason_for("f.py::test_xc") is None  # not a character class
    assert skips.reason_for("f.py::test_y[1-max-None-True]") == "frontend"
    assert skips.reason_for("f.py::test_y[1-max-None-False]") is None


@pytest.mark.timeout(1500)
def test_upstream_core_shard_against_ratchet(tmp_path):
    """Every SHARD_EVERY-th test of upstream test_core.py on the simulator: a test the ratchet
    lists (it passed before) must pass."""
    if not (UPSTREAM / "python" / "test" / "unit" / "language" / "test_core.py").is_file():
        pytest.skip(f"upstream Triton tests not found at {UPSTREAM} (set TMPS_UPSTREAM_TRITON or place "
                    "../shared/upstream-triton beside the checkout): the conformance shard does not run")
    r = subprocess.run([sys.executable, str(RUNNER), "test_core.py", "--every", str(SHARD_EVERY), "--check-ratchet",
                        "--out", str(tmp_path / "shard"), "-n", os.environ.get("TMPS_CONFORMANCE_WORKERS", "2")],
                       capture_output=True, text=True, timeout=1450)
    summary = (tmp_path / "shard" / "summary.md")
    text = summary.read_text() if summary.exists() else ""
    print(r.stdout, r.stderr, text, sep="\n")
    assert r.returncode == 0, r.stderr[-4000:] + "\n" + text[:4000]
