"""Kernel arguments Triton allows beyond plain pointers and scalars (tuples, nested tuples with
constexprs, `tl.const` pointers) and tl.dot's input precisions bf16x3 / bf16x6 (Triton's own
f32_dot_tc pass: fp32 operands split into bf16 parts, products of the parts summed in fp32)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import triton
import triton.language as tl


def device(mps_driver):
    return mps_driver.get_active_torch_device()


# ---- tuples ----------------------------------------------------------------------------------------

@triton.jit
def tuple_sum(xs, out, n, scale: tl.constexpr, pair, nested, BLOCK: tl.constexpr):
    o = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = o < n
    acc = tl.zeros([BLOCK], tl.float32)
    for i in tl.static_range(len(xs)):
        acc += tl.load(xs[i] + o, mask=m, other=0.0)
    w, (bias_ptr, shift) = nested
    acc = acc * pair[0] + pair[1] + tl.load(bias_ptr + o, mask=m, other=0.0) * w + shift
    tl.store(out + o, acc * scale, mask=m)


def test_tuple_arguments(mps_driver, rng):
    dev = device(mps_driver)
    n = 300
    xs = tuple(torch.from_numpy(rng.standard_normal(n).astype(np.float32)).to(dev) for _ in range(3))
    bias = torch.from_numpy(rng.standard_normal(n).astype(np.float32)).to(dev)
    out = torch.full((n,), float("nan"), device=dev)
    # (2.5, 7): an fp32 and an i32 leaf; nested: (3.0, (pointer, 1)) where 1 is specialised to a
    # constexpr leaf that the kernel does not take as an argument
    tuple_sum[(triton.cdiv(n, 128),)](xs, out, n, 0.5, (2.5, 7), (3.0, (bias, 1)), BLOCK=128)
    x64 = [x.cpu().double() for x in xs]
    want = ((x64[0] + x64[1] + x64[2]) * 2.5 + 7 + bias.cpu().double() * 3.0 + 1) * 0.5
    torch.testing.assert_close(out.cpu().double(), want, rtol=1e-6, atol=1e-5)


# ---- tl.const pointers -----------------------------------------------------------------------------

@triton.jit
def copy_from_const(src: tl.const, dst, n, BLOCK: tl.constexpr):
    o = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(dst + o, tl.load(src + o, mask=o < n) * 2, mask=o < n)


def test_const_pointer_argument(mps_driver, rng):
    dev = device(mps_driver)
    n = 200
    x = torch.from_numpy(rng.standard_normal(n).astype(np.float32)).to(dev)
    y = torch.full_like(x, float("nan"))
    copy_from_const[(2,)](x, y, n, BLOCK=128)
    torch.testing.assert_close(y, x * 2, rtol=0, atol=0)


# ---- bf16x3 / bf16x6 -------------------------------------------------------------------------------

@triton.jit
def dot_precision(a_ptr, b_ptr, c_ptr, N: tl.constexpr, PRECISION: tl.constexpr):
    r = tl.arange(0, N)
    a = tl.load(a_ptr + r[:, None] * N + r[None, :])
    b = tl.load(b_ptr + r[:, None] * N + r[None, :])
    tl.store(c_ptr + r[:, None] * N + r[None, :], tl.dot(a, b, input_precision=PRECISION))


def _bf16(x: np.ndarray) -> np.ndarray:
    """Round fp32 to bf16 (nearest even), as fp32 values."""
    u = x.astype(np.float32).view(np.uint32).astype(np.uint64)
    return (((u + 0x7FFF + ((u >> 16) & 1)) >> 16) << 16).astype(np.uint32).view(np.float32)


def _parts(x: np.ndarray, n: int) -> list[np.ndarray]:
    """Triton's split of fp32 into n bf16 parts: hi = bf16(x), mid = bf16(x - hi), ..."""
    out = []
    for i in range(n):
        p = _bf16(x)
        out.append(p.astype(np.float64))
        if i != n - 1:
            x = (x - p).astype(np.float32)
    return out


def test_bf16x3_is_tritons_three_product_split(mps_driver, rng):
    dev = device(mps_driver)
    N = 32
    a = rng.standard_normal((N, N)).astype(np.float32)
    b = rng.standard_normal((N, N)).astype(np.float32)
    exact = a.astype(np.float64) @ b.astype(np.float64)
    (ah, am), (bh, bm) = _parts(a, 2), _parts(b, 2)
    split3 = ah @ bh + ah @ bm + am @ bh  # the three products bf16x3 keeps
    c = torch.full((N, N), float("nan"), device=dev)
    dot_precision[(1,)](torch.from_numpy(a).to(dev), torch.from_numpy(b).to(dev), c, N=N, PRECISION="bf16x3")
    got = c.cpu().numpy().astype(np.float64)
    err_split = np.abs(got - split3).max()
    err_exact = np.abs(split3 - exact).max()
    assert err_split < 1e-4  # fp32 accumulation of the three products
    assert err_exact > 4 * err_split  # ... and the dropped terms are visible: not the ieee path
    np.testing.assert_allclose(got, exact, rtol=1e-3, atol=2e-3)


def test_bf16x6_and_non_finite(mps_driver, rng):
    dev = device(mps_driver)
    N = 32
    a = rng.standard_normal((N, N)).astype(np.float32)
    b = rng.standard_normal((N, N)).astype(np.float32)
    a[3, 5] = np.inf  # row 3 of the result: +-inf (the split's NaN parts are masked out)
    exact = a.astype(np.float64) @ b.astype(np.float64)
    c = torch.full((N, N), float("nan"), device=dev)
    dot_precision[(1,)](torch.from_numpy(a).to(dev), torch.from_numpy(b).to(dev), c, N=N, PRECISION="bf16x6")
    got = c.cpu().numpy().astype(np.float64)
    np.testing.assert_array_equal(got[3], exact[3])  # inf with the sign of b[5, j]
    finite = np.ones(N, bool)
    finite[3] = False
    np.testing.assert_allclose(got[finite], exact[finite], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("precision", ["tf32", "tf32x3", "ieee"])
def test_tf32_precisions_are_exact_fp32(mps_driver, rng, precision):
    # Documented numerics: no tf32 rounding on Metal; all three are fp32 products.
    dev = device(mps_driver)
    N = 16
    a = rng.standard_normal((N, N)).astype(np.float32)
    b = rng.standard_normal((N, N)).astype(np.float32)
    c = torch.full((N, N), float("nan"), device=dev)
    dot_precision[(1,)](torch.from_numpy(a).to(dev), torch.from_numpy(b).to(dev), c, N=N, PRECISION=precision)
    np.testing.assert_allclose(c.cpu().numpy(), a.astype(np.float64) @ b.astype(np.float64), rtol=1e-5, atol=1e-5)
