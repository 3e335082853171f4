"""Philox random numbers (tl.rand, tl.randn, tl.randint, tl.randint4x, tl.rand4x, tl.randn4x): our
simulator output against Triton's own interpreter (TRITON_INTERPRET=1, run in a subprocess on the
same inputs: bit-exact for the integer streams, float tolerance for rand/randn), and distribution
sanity checks."""

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import triton
import triton.language as tl

HERE = Path(__file__).resolve().parent
BLOCK = 128
N = 1000  # not a multiple of BLOCK
KINDS = ["randint", "randint4x", "rand", "randn", "rand4x", "randn4x"]


@triton.jit
def random_kernel(off_ptr, o0, o1, o2, o3, seed, n, KIND: tl.constexpr, N_ROUNDS: tl.constexpr, BLOCK: tl.constexpr):
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = i < n
    offs = tl.load(off_ptr + i, mask=m)
    if KIND == "randint":
        tl.store(o0 + i, tl.randint(seed, offs, N_ROUNDS), mask=m)
    elif KIND == "rand":
        tl.store(o0 + i, tl.rand(seed, offs, N_ROUNDS), mask=m)
    elif KIND == "randn":
        tl.store(o0 + i, tl.randn(seed, offs, N_ROUNDS), mask=m)
    else:
        if KIND == "randint4x":
            a, b, c, d = tl.randint4x(seed, offs, N_ROUNDS)
        elif KIND == "rand4x":
            a, b, c, d = tl.rand4x(seed, offs, N_ROUNDS)
        else:
            a, b, c, d = tl.randn4x(seed, offs, N_ROUNDS)
        tl.store(o0 + i, a, mask=m)
        tl.store(o1 + i, b, mask=m)
        tl.store(o2 + i, c, mask=m)
        tl.store(o3 + i, d, mask=m)


# (kind, seed type, seed, offset type, n_rounds)
CASES = [(kind, st, seed, ot, rounds)
         for kind in KINDS
         for st, seed in (("i32", 123), ("i64", 0x0123_4567_89AB_CDEF))
         for ot in ("i32", "i64")
         for rounds in (10,)] + [("randint4x", "i32", 7, "i32", 7), ("rand", "i64", 2**40 + 5, "i32", 6)]


def _offsets(ot: str) -> np.ndarray:
    rng = np.random.default_rng(1234)
    if ot == "i32":
        off = rng.integers(0, 2**31 - 1, N).astype(np.int32)
        off[:BLOCK] = np.arange(BLOCK)  # the usual dropout pattern: consecutive offsets
    else:
        off = rng.integers(0, 2**62, N).astype(np.int64)  # high half of the counter used
        off[:BLOCK] = np.arange(BLOCK) + (5 << 32)
    return off


def _out_dtype(kind):
    return np.int32 if kind.startswith("randint") else np.float32


def _interpreter_main(path: str) -> None:
    """Subprocess entry (TRITON_INTERPRET=1): Triton's reference values for every case."""
    import torch

    results = {}
    for idx, (kind, _st, seed, ot, rounds) in enumerate(CASES):
        off = torch.from_numpy(_offsets(ot))
        outs = [torch.zeros(N, dtype=torch.int32 if kind.startswith("randint") else torch.float32) for _ in range(4)]
        random_kernel[(triton.cdiv(N, BLOCK), )](off, *outs, seed, N, KIND=kind, N_ROUNDS=rounds, BLOCK=BLOCK)
        results[f"c{idx}"] = np.stack([o.numpy() for o in outs])
    np.savez(path, **results)


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    path = tmp_path_factory.mktemp("interp") / "ref.npz"
    env = dict(os.environ, TRITON_INTERPRET="1")
    env.pop("TRITON_BACKEND", None)
    env["PYTHONPATH"] = os.pathsep.join([str(HERE), env.get("PYTHONPATH", "")])
    code = f"import test_random; test_random._interpreter_main({json.dumps(str(path))})"
    proc = subprocess.run([sys.executable, "-c", code], env=env, cwd=HERE, capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return np.load(path)


def _run_sim(kind, st, seed, ot, rounds, num_warps):
    from ttgir_harness import compile_kernel, poison

    out_t = "*i32" if kind.startswith("randint") else "*fp32"
    sig = {"off_ptr": f"*{ot}", "o0": out_t, "o1": out_t, "o2": out_t, "o3": out_t, "seed": st, "n": "i32",
           "KIND": "constexpr", "N_ROUNDS": "constexpr", "BLOCK": "constexpr"}
    k = compile_kernel(random_kernel, sig, {"KIND": kind, "N_ROUNDS": rounds, "BLOCK": BLOCK}, num_warps)
    outs = [poison(N, _out_dtype(kind)) for _ in range(4)]
    k(_offsets(ot), *outs, seed, N, grid=triton.cdiv(N, BLOCK))
    return np.stack(outs)


@pytest.mark.parametrize("case", range(len(CASES)), ids=["-".join(map(str, c)) for c in CASES])
def test_matches_triton_interpreter(case, reference):
    kind, st, seed, ot, rounds = CASES[case]
    got = _run_sim(kind, st, seed, ot, rounds, num_warps=[1, 2, 4, 8][case % 4])
    ref = reference[f"c{case}"]
    used = 4 if kind.endswith("4x") else 1
    if kind.startswith("randint"):
        np.testing.assert_array_equal(got[:used], ref[:used])
    else:
        # same integers, then float math (log/cos/sin in randn): a few ulp
        tol = 1e-6 if kind.startswith("rand") and "randn" not in kind else 2e-5
        np.testing.assert_allclose(got[:used], ref[:used], rtol=tol, atol=tol)
        assert np.isfinite(got[:used]).all()


def test_distributions():
    seed = 20240601
    ints = _run_sim("randint4x", "i32", seed, "i32", 10, 4)
    # 4 x 1000 32-bit words: each bit is set about half the time
    bits = np.unpackbits(ints.view(np.uint8)).reshape(-1, 32).mean(axis=0)
    assert np.all(np.abs(bits - 0.5) < 0.05), bits
    assert len(np.unique(ints)) > 0.99 * ints.size

    u = _run_sim("rand4x", "i32", seed, "i32", 10, 4).ravel()
    assert u.min() >= 0.0 and u.max() < 1.0
    assert abs(u.mean() - 0.5) < 0.02 and abs(u.var() - 1 / 12) < 0.01
    hist = np.histogram(u, bins=10, range=(0, 1))[0]
    chi2 = ((hist - u.size / 10) ** 2 / (u.size / 10)).sum()
    assert chi2 < 30, chi2  # 9 degrees of freedom: p < 1e-3 beyond ~27.9

    z = _run_sim("randn4x", "i64", seed, "i64", 10, 2).ravel()
    assert abs(z.mean()) < 0.06 and abs(z.std() - 1) < 0.05
    assert abs((np.abs(z) < 1).mean() - math.erf(1 / math.sqrt(2))) < 0.03

    other = _run_sim("randint4x", "i32", seed + 1, "i32", 10, 4)
    assert (other != ints).mean() > 0.99  # another seed, another stream
