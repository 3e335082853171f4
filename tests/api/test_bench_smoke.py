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


def test_mlx_column_of_the_metal_comparison():
    """`--device metal` compares with MLX for the same work: that part runs wherever MLX does (its
    CPU build here), at small sizes."""
    import pytest

    pytest.importorskip("mlx.core")
    from triton_mps.bench.__main__ import mlx_times

    times = mlx_times(n=1 << 12, rows=64, m=64, reps=3)
    assert times is not None and len(times) == 3 and all(t > 0 for t in times)
