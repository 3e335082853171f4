"""`python -m triton_mps.bench --quick` (what CI runs): the counters feed the model end to end."""

from __future__ import annotations

import os

os.environ.setdefault("TRITON_BACKEND", "mps")


def test_bench_quick_vector_add(tmp_path, capsys):
    from triton_mps.bench.__main__ import main

    out = tmp_path / "perf.md"
    assert main(["--quick", "--only", "vector_add", "--markdown", str(out)]) == 0
    text = out.read_text()
    assert "| vector add | n=16384 fp32 |" in text
    # Every element of x and y read once and of out written once: exactly the floor.
    row = next(line for line in text.splitlines() if line.startswith("| vector add |"))
    assert "| 1.000 |" in row
