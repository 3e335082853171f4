"""tools/conformance/run_inductor.py (issue 19): PyTorch's Inductor tests as a conformance suite.
The runner on a small fake upstream (launch counting, triton-cpu expected failures run as plain
tests, lifting the triton-cpu-only skips, ratchet), and the CI shard of the real
`CpuTritonTests` against its ratchet when ../shared/upstream-pytorch exists."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
RUNNER = REPO / "tools" / "conformance" / "run_inductor.py"
UPSTREAM = Path(os.environ.get("TMPS_UPSTREAM_PYTORCH", REPO.parent / "shared" / "upstream-pytorch"))
# The CI shard: every SHARD_EVERY-th collected id of CpuTritonTests (about 2 minutes on 2 cores).
SHARD_EVERY = 20

# The names the plugin relies on, as test_torchinductor.py defines them.
FAKE_TEMPLATE = '''
import functools
import unittest


def is_triton_cpu_backend(device):
    return device == "cpu"


def skip_if_triton_cpu(fn):
    @functools.wraps(fn)
    def wrapper(self, *args, **kwargs):
        if is_triton_cpu_backend(self.device):
            raise unittest.SkipTest("Triton CPU not supported")
        return fn(self, *args, **kwargs)

    return wrapper
'''

FAKE_TESTS = '''
import copy
import functools
import unittest

import torch
import triton
import triton.language as tl

import test_torchinductor as template


@triton.jit
def _double(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * 2, mask=offs < n)


def test_pointwise(self):  # its own triton-cpu skip, as test_torchinductor's test_pointwise
    if template.is_triton_cpu_backend(self.device):
        raise unittest.SkipTest("Triton CPU does not support erfc")


def _copied(value):
    """As test_torchinductor.copy_tests makes each test of CpuTritonTests."""
    @functools.wraps(value)
    def new_test(self, value=value):
        return value(self)

    new_test.__dict__ = copy.deepcopy(value.__dict__)
    return new_test


def _expected_failure(fn):
    fn._expected_failure_triton_cpu = True
    return unittest.expectedFailure(fn)


class WrappingTestCase(unittest.TestCase):
    """Wraps its test method per instance, as torch's TestCase does (copying its attributes)."""

    def __init__(self, methodName="runTest"):
        super().__init__(methodName)
        method = getattr(self, methodName, None)
        if method is not None:
            setattr(self, methodName, functools.wraps(method)(lambda *args, **kwargs: method(*args, **kwargs)))


class CpuTritonTests(WrappingTestCase):
    device = "cpu"

    def test_kernel_cpu(self):
        x = torch.ones(8)
        _double[(1,)](x, 8, BLOCK=8)
        assert x.tolist() == [2.0] * 8

    def test_aten_only_cpu(self):
        assert torch.ones(3).sum().item() == 3

    @_expected_failure
    def test_triton_cpu_fails_cpu(self):
        pass

    test_aoti_cpu = _copied(template.skip_if_triton_cpu(lambda self: None))

    test_pointwise_erfc_cpu = test_pointwise

    def test_wrong_cpu(self):
        self.assertEqual(1, 2)


class OtherTests(unittest.TestCase):
    def test_not_collected(self):
        raise AssertionError("outside CpuTritonTests")
'''


def _run(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(RUNNER), "--upstream", str(tmp_path / "up"), "--out",
                           str(tmp_path / "out"), "--skips", str(tmp_path / "skips.txt"), "--ratchet-dir",
                           str(tmp_path / "ratchet"), "-n", "0", *args],
                          capture_output=True, text=True, timeout=600)


def _records(tmp_path: Path) -> dict[str, dict]:
    lines = (tmp_path / "out" / "results.jsonl").read_text().splitlines()
    return {json.loads(ln)["id"].rsplit("::", 1)[1]: json.loads(ln) for ln in lines}


@pytest.fixture
def fake_upstream(tmp_path: Path) -> Path:
    folder = tmp_path / "up" / "test" / "inductor"
    folder.mkdir(parents=True)
    (folder / "test_torchinductor.py").write_text(textwrap.dedent(FAKE_TEMPLATE))
    (folder / "test_triton_cpu_backend.py").write_text(textwrap.dedent(FAKE_TESTS))
    (tmp_path / "skips.txt").write_text("# none\n")
    return tmp_path


def test_inductor_runner_counts_launches_and_lifts_skips(fake_upstream: Path) -> None:
    tmp = fake_upstream
    r = _run(tmp, "--update-ratchet")
    assert r.returncode == 0, r.stdout + r.stderr
    recs = _records(tmp)
    assert "test_not_collected" not in recs  # only CpuTritonTests
    assert recs["test_kernel_cpu"]["outcome"] == "passed" and recs["test_kernel_cpu"]["launches"] == 1
    assert recs["test_aten_only_cpu"]["outcome"] == "passed" and recs["test_aten_only_cpu"]["launches"] == 0
    # PyTorch's expected failure of triton-cpu runs as a plain test: it passes here.
    fails = recs["test_triton_cpu_fails_cpu"]
    assert fails["outcome"] == "passed" and fails["triton_cpu_xfail"] is True
    assert recs["test_aoti_cpu"]["outcome"] == "skipped"
    assert recs["test_pointwise_erfc_cpu"]["outcome"] == "skipped"
    assert recs["test_wrong_cpu"]["outcome"] == "failed" and recs["test_wrong_cpu"]["where"] == "test"
    summary = (tmp / "out" / "summary.md").read_text()
    assert "| passed (our kernels) | 1 |" in summary and "| passed (aten fallback) | 2 |" in summary
    assert "`test_triton_cpu_fails_cpu` | passed (aten fallback)" in summary

    # Lifted: the triton-cpu-only skips run. A ratchet id that no longer passes is a regression.
    ratchet = tmp / "ratchet" / "test_triton_cpu_backend.txt"
    assert "test_kernel_cpu" in ratchet.read_text() and "test_wrong_cpu" not in ratchet.read_text()
    ratchet.write_text(ratchet.read_text() + "test_triton_cpu_backend.py::CpuTritonTests::test_wrong_cpu\n")
    r = _run(tmp, "--lift-triton-cpu-skips", "--check-ratchet")
    assert r.returncode == 1 and "RATCHET REGRESSIONS" in r.stderr and "test_wrong_cpu" in r.stderr
    recs = _records(tmp)
    for name in ("test_aoti_cpu", "test_pointwise_erfc_cpu"):
        assert recs[name]["outcome"] == "passed" and recs[name]["triton_cpu_skip"] is True, recs[name]
    assert "triton_cpu_skip" not in recs["test_kernel_cpu"]
    assert "Tests PyTorch skips only for triton-cpu (lifted): 2" in (tmp / "out" / "summary.md").read_text()


@pytest.mark.timeout(900)
def test_upstream_inductor_shard_against_ratchet(tmp_path: Path) -> None:
    """Every SHARD_EVERY-th test of CpuTritonTests (triton-cpu-only skips lifted) on the
    simulator: a test the ratchet lists (it passed before) must pass."""
    if not (UPSTREAM / "test" / "inductor" / "test_triton_cpu_backend.py").is_file():
        pytest.skip(f"upstream PyTorch tests not found at {UPSTREAM} (set TMPS_UPSTREAM_PYTORCH or place "
                    "../shared/upstream-pytorch beside the checkout): the Inductor shard does not run")
    r = subprocess.run([sys.executable, str(RUNNER), "--every", str(SHARD_EVERY), "--lift-triton-cpu-skips",
                        "--check-ratchet", "--out", str(tmp_path / "shard"),
                        "-n", os.environ.get("TMPS_CONFORMANCE_WORKERS", "2")],
                       capture_output=True, text=True, timeout=850)
    summary = tmp_path / "shard" / "summary.md"
    text = summary.read_text() if summary.exists() else ""
    print(r.stdout, r.stderr, text, sep="\n")
    assert r.returncode == 0, r.stderr[-4000:] + "\n" + text[:4000]
