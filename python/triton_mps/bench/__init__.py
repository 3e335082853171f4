"""Roofline model of the kernels in `kernels/`: `python -m triton_mps.bench` (run from a checkout).

On the simulator each workload runs once with the per-dispatch counters on
(`triton_mps.set_counters`); the counted device traffic and simdgroup_matrix FLOPs are turned
into a modeled time on each Apple chip of `triton_mps.chips.CHIPS` and compared with the roofline floor:
each input read once, each output written once, the FLOPs the problem requires. Targets
(issue 10): device bytes <= 1.05x the floor for vector add, softmax and layer norm; matmul with
>= 95% of its required FLOPs in simdgroup_matrix and traffic <= 1.25x the lower bound for its
tiles (A read once per column of tiles, B once per row of tiles, C written once).

    python -m triton_mps.bench                 # realistic sizes; prints markdown tables
    python -m triton_mps.bench --quick         # small sizes, a smoke test (CI)
    python -m triton_mps.bench --markdown docs/performance.md --plots docs/perf   # regenerate the docs
    python -m triton_mps.bench --device metal  # a Mac: real GPU times vs torch eager (and MLX)
"""

from __future__ import annotations

from ..chips import CHIPS, Chip, chip
from .model import Result, run_workloads

__all__ = ["CHIPS", "Chip", "Result", "chip", "run_workloads"]
