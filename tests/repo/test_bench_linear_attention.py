"""benchmarks/bench_linear_attention.py: its correctness check (`--check`, no timing) passes at a tiny
size (two chunks, so the state carried across chunks counts) in fp32 and bf16, and fails loudly on
a wrong kernel."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
BENCH = REPO / "benchmarks" / "bench_linear_attention.py"
TINY = ["--check", "--B", "1", "--T", "128", "--H", "1"]


def _run(script: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(script), *TINY, *args], capture_output=True, text=True, timeout=600,
                          env=dict(os.environ, TRITON_BACKEND="mps"))


def test_check_passes_in_fp32_and_bf16() -> None:
    r = _run(BENCH)
    assert r.returncode == 0, r.stdout + r.stderr
    lines = r.stdout.splitlines()
    assert [ln.split()[:2] for ln in lines] == [["OK", "fp32"], ["OK", "bf16"]], r.stdout
    assert all("sha256 " in ln for ln in lines)


def test_check_fails_loudly_on_a_wrong_kernel(tmp_path: Path) -> None:
    src = BENCH.read_text()
    causal = "b_s = tl.where(rt[:, None] >= rt[None, :], b_s, 0.0)"
    assert src.count(causal) == 1
    bad = tmp_path / BENCH.name
    bad.write_text(src.replace(causal, causal.replace(">=", ">")))  # the diagonal dropped from fwd_o's mask
    r = _run(bad, "--dtypes", "fp32")
    assert r.returncode != 0
    assert "WRONG RESULTS: linear attention fp32" in r.stderr and "o: rms err" in r.stderr, r.stderr
