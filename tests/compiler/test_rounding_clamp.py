"""Round-toward-zero float conversions (tt.fp_to_fp rtz) and tl.clamp (tt.clampf)."""

from __future__ import annotations

import numpy as np
import pytest
import triton
import triton.language as tl
from ttgir_harness import bf16_to_f32, compile_kernel, poison


@triton.jit
def rtz_kernel(x, y16, yb16, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    v = tl.load(x + offs, mask=m)
    tl.store(y16 + offs, v.to(tl.float16, fp_downcast_rounding="rtz"), mask=m)
    tl.store(yb16 + offs, v.to(tl.bfloat16, fp_downcast_rounding="rtz"), mask=m)


def _inputs(rng, n):
    specials = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 65504.0, 65519.0, 65520.0, 1e6, -1e6,
                         6e-8, -6e-8, 2.9e-8, 1e-40, 1.0 + 2**-11, -(1.0 + 2**-11), 3.4e38], np.float32)
    nan_low_payload = np.array([0x7F800001, 0xFF800123], np.uint32).view(np.float32)  # NaN only in low bits
    body = (rng.standard_normal(n) * rng.choice([1e-6, 1e-3, 1.0, 1e3, 1e5], n)).astype(np.float32)
    return np.concatenate([specials, nan_low_payload, body])


def _rtz_f16_reference(x: np.ndarray) -> np.ndarray:
    h = x.astype(np.float16)  # nearest even
    over = np.abs(h.astype(np.float64)) > np.abs(x.astype(np.float64))
    h[over] = np.nextafter(h[over], np.float16(0))
    return h


def _rtz_bf16_reference_bits(x: np.ndarray) -> np.ndarray:
    bits = (x.view(np.uint32) >> 16).astype(np.uint16)  # truncation is round-toward-zero
    return bits


@pytest.mark.parametrize("num_warps", [1, 4])
def test_round_toward_zero(num_warps):
    rng = np.random.default_rng()
    x = _inputs(rng, 700)
    n = x.size
    k = compile_kernel(rtz_kernel, {"x": "*fp32", "y16": "*fp16", "yb16": "*bf16", "n": "i32", "BLOCK": "constexpr"},
                       {"BLOCK": 128}, num_warps)
    y16 = poison(n, np.float16)
    yb = np.full(n, 0xA5A5, np.uint16)
    k(x, y16, yb, n, grid=triton.cdiv(n, 128))
    ref16 = _rtz_f16_reference(x)
    nan = np.isnan(x)
    assert np.isnan(y16[nan]).all() and np.isnan(bf16_to_f32(yb)[nan]).all()
    np.testing.assert_array_equal(y16[~nan].view(np.uint16), ref16[~nan].view(np.uint16))
    np.testing.assert_array_equal(yb[~nan], _rtz_bf16_reference_bits(x)[~nan])


@triton.jit
def clamp_kernel(x, lo, hi, y, n, PROPAGATE: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    v = tl.load(x + offs, mask=m)
    a = tl.load(lo + offs, mask=m)
    b = tl.load(hi + offs, mask=m)
    if PROPAGATE:
        r = tl.clamp(v, a, b, propagate_nan=tl.PropagateNan.ALL)
    else:
        r = tl.clamp(v, a, b)
    tl.store(y + offs, r, mask=m)


@pytest.mark.parametrize("propagate", [False, True])
@pytest.mark.parametrize("num_warps", [1, 2])
def test_clamp(propagate, num_warps):
    rng = np.random.default_rng()
    n = 1000
    x = (rng.standard_normal(n) * 3).astype(np.float32)
    x[::17] = np.nan
    lo = rng.uniform(-2, 0, n).astype(np.float32)
    hi = rng.uniform(0, 2, n).astype(np.float32)
    k = compile_kernel(clamp_kernel, {"x": "*fp32", "lo": "*fp32", "hi": "*fp32", "y": "*fp32", "n": "i32",
                                      "PROPAGATE": "constexpr", "BLOCK": "constexpr"},
                       {"PROPAGATE": propagate, "BLOCK": 256}, num_warps)
    y = poison(n, np.float32)
    k(x, lo, hi, y, n, grid=triton.cdiv(n, 256))
    nan = np.isnan(x)
    np.testing.assert_array_equal(y[~nan], np.minimum(np.maximum(x[~nan], lo[~nan]), hi[~nan]))
    if propagate:
        assert np.isnan(y[nan]).all()
    else:  # NaN is ignored: the bounds decide (fmax/fmin semantics)
        np.testing.assert_array_equal(y[nan], np.minimum(lo[nan], hi[nan]).clip(lo[nan], hi[nan]))
