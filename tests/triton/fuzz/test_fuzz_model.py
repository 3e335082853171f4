"""The fuzzer's reference model checked on its own (no kernels): type promotion against Triton's
own rules, exact rounding against numpy/torch conversions and exact integer arithmetic."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import torch
import triton.language as tl
from fuzz_numerics import STORABLE, TYPES, _int_to_float, computation_type, round_float
from triton.language.semantic import TritonSemantic


@pytest.mark.parametrize("div_or_mod", [False, True])
def test_promotion_matches_triton(div_or_mod):
    sem = TritonSemantic(builder=None)  # computation_type_impl does not build anything
    scalars = [TYPES["int32"], TYPES["float32"]]  # what Python ints and floats become
    pairs = [(a, False, b, False) for a, b in itertools.product(STORABLE, STORABLE)]
    pairs += [(a, False, s, True) for a in STORABLE for s in scalars]
    checked = 0
    for a, a_s, b, b_s in pairs:
        try:
            want = sem.computation_type_impl(getattr(tl, a.name), a_s, getattr(tl, b.name), b_s, div_or_mod)
        except TypeError:
            continue  # mixed signedness with / or %: the generator never builds it
        assert getattr(tl, computation_type(a, a_s, b, b_s, div_or_mod).name) == want, (a, a_s, b, b_s)
        checked += 1
    assert checked > 80


def test_round_float_matches_hardware_conversions():
    rng = np.random.default_rng(7)
    x = rng.standard_normal(50_000) * np.exp2(rng.integers(-150, 130, 50_000))
    with np.errstate(over="ignore"):
        assert np.array_equal(round_float(x, TYPES["float32"]), x.astype(np.float32).astype(np.float64))
        f32 = x.astype(np.float32)
        bf16 = torch.from_numpy(f32).to(torch.bfloat16).float().double().numpy()
        assert np.array_equal(round_float(f32.astype(np.float64), TYPES["bfloat16"]), bf16)
        h = f32.astype(np.float16).astype(np.float64)  # float32 -> float16 rounds once
        assert np.array_equal(round_float(f32.astype(np.float64), TYPES["float16"]), h)


def test_int_to_float_rounds_once():
    def exact(v: int, p: int) -> float:
        m, shift = abs(v), abs(v).bit_length() - p
        if shift > 0:
            q, r = divmod(m, 1 << shift)
            q += r > (1 << (shift - 1)) or (r == 1 << (shift - 1) and q & 1)
            m = q << shift
        return float(m) if v >= 0 else -float(m)

    v = np.array([2**62 + 2**54 + 1, -(2**40 + 2**32 + 1), 2**24 + 2**16 + 1, 2**63 - 1, -(2**63), 5], np.int64)
    for name, p in [("float32", 24), ("bfloat16", 8)]:
        assert _int_to_float(v, TYPES[name]).tolist() == [exact(int(x), p) for x in v]
