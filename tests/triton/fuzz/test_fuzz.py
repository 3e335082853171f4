"""Differential fuzzing: random `@triton.jit` kernels on this backend against a numpy model of
Triton's semantics (fuzz_kernels.py, fuzz_numerics.py).

The default run is a fixed, derandomized sample that fits CI (every distinct kernel costs a
compile of about a second; each one runs on several random inputs). The long run is
`tools/fuzz.py` (see README, "Differential fuzzing").
"""

from __future__ import annotations

import hashlib
import json
import os
import time

import numpy as np
import pytest
from fuzz_kernels import FAMILIES, build_kernel, draw_case, run_case
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

LONG_KERNELS = int(os.environ.get("TMPS_FUZZ_KERNELS", "0"))  # per shard; 0: the quick CI run
INPUTS = int(os.environ.get("TMPS_FUZZ_INPUTS", "0")) or (12 if LONG_KERNELS else 4)
SHARDS = int(os.environ.get("TMPS_FUZZ_SHARDS", "1"))
SEED = int(os.environ.get("TMPS_FUZZ_SEED", "0"))
STATS = os.environ.get("TMPS_FUZZ_STATS")  # a JSON-lines file: one line per kernel run (tools/fuzz.py)

settings.register_profile(
    "fuzz-quick", max_examples=6, derandomize=True, deadline=None, database=None,
    suppress_health_check=list(HealthCheck), print_blob=True)
settings.register_profile(
    "fuzz-long", max_examples=max(LONG_KERNELS, 1), derandomize=False, deadline=None, database=None,
    suppress_health_check=list(HealthCheck), print_blob=True)


@st.composite
def kernels(draw, family):
    if LONG_KERNELS:
        return build_kernel(draw, family)
    return build_kernel(draw, family, max_ops=8, max_elems=1024)  # the CI sample: smaller, faster compiles


def kernel_key(spec) -> str:
    """What makes a distinct compiled kernel: the source, the argument types, the warps."""
    what = f"{spec.source}{[(s.ty.name, s.shape) for s in spec.slots]}{spec.num_warps}"
    return hashlib.sha1(what.encode()).hexdigest()[:12]


_seen: set[str] = set()


def check(spec, seed: int) -> None:
    key = kernel_key(spec)
    if LONG_KERNELS:  # hypothesis often redraws the simplest kernels: spend the budget on new ones
        assume(key not in _seen)
        _seen.add(key)
    rng = np.random.default_rng(seed)
    start, done, problem = time.perf_counter(), 0, None
    try:
        for i in range(INPUTS):
            case = draw_case(spec, rng)
            problem = run_case(spec, case)
            if problem is not None:
                problem = f"input case {i} (seed {seed}):\n{problem}"
                break
            done += 1
    except Exception as e:  # a compile or launch error is a finding too
        problem = f"{type(e).__name__}: {e}"
        raise
    finally:
        if STATS:
            with open(STATS, "a") as f:
                f.write(json.dumps({"family": spec.family, "kernel": key,
                                    "cases": done, "ok": problem is None, "problem": problem,
                                    "source": None if problem is None else spec.source,
                                    "seconds": round(time.perf_counter() - start, 3)}) + "\n")
    assert problem is None, f"{problem}\n--- kernel ---\n{spec.source}"


def _test(family):
    @settings(settings.get_profile("fuzz-long" if LONG_KERNELS else "fuzz-quick"))
    @given(spec=kernels(family), seed=st.integers(0, 2**32 - 1))
    def run(mps_driver, shard, spec, seed):
        check(spec, seed)

    return run


@pytest.mark.parametrize("shard", range(SHARDS))
@pytest.mark.parametrize("family", FAMILIES)
def test_fuzz(mps_driver, family, shard):
    test = _test(family)
    if LONG_KERNELS:  # a different random stream per shard (and per TMPS_FUZZ_SEED)
        from hypothesis import seed as hseed

        test = hseed(SEED * 1000 + shard * len(FAMILIES) + FAMILIES.index(family))(test)
    test(mps_driver, shard)
