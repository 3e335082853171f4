import numpy as np
import pytest
import triton
import triton.language as tl
from ttgir_harness import bf16_to_f32, compile_kernel, f32_to_bf16, poison


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=1.5)
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, x + y, mask=mask)


@triton.jit
def add_other_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    # Loads past `n` with other=2.5 and stores the whole block: checks `other` and masking.
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=2.5)
    tl.store(out_ptr + offs, x * 2.0)


@pytest.mark.parametrize("num_warps", [1, 2, 4, 8])
@pytest.mark.parametrize("dtype", ["fp32", "fp16", "bf16"])
@pytest.mark.parametrize("block", [64, 256, 1024])
def test_add(dtype, num_warps, block):
    rng = np.random.default_rng()
    n = 3 * block + 17
    sig = {"x_ptr": f"*{dtype}", "y_ptr": f"*{dtype}", "out_ptr": f"*{dtype}", "n": "i32", "BLOCK": "constexpr"}
    k = compile_kernel(add_kernel, sig, {"BLOCK": block}, num_warps)
    xf = rng.standard_normal(n).astype(np.float32)
    yf = rng.standard_normal(n).astype(np.float32)
    if dtype == "bf16":
        x, y, out = f32_to_bf16(xf), f32_to_bf16(yf), np.full(n, 0x7FC1, np.uint16)
        ref = bf16_to_f32(x).astype(np.float64) + bf16_to_f32(y)
        k(x, y, out, n, grid=triton.cdiv(n, block))
        got = bf16_to_f32(out)
        np.testing.assert_allclose(got, ref, rtol=1e-2, atol=1e-2)
    else:
        npt = np.float32 if dtype == "fp32" else np.float16
        x, y, out = xf.astype(npt), yf.astype(npt), poison(n, npt)
        k(x, y, out, n, grid=triton.cdiv(n, block))
        ref = x.astype(np.float64) + y.astype(np.float64)
        tol = 1e-6 if dtype == "fp32" else 2e-3
        np.testing.assert_allclose(out.astype(np.float64), ref, rtol=tol, atol=tol)


@pytest.mark.parametrize("num_warps", [1, 4])
def test_other_and_scalar_len(num_warps):
    block = 128
    n = 100
    k = compile_kernel(add_other_kernel, {"x_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32", "BLOCK": "constexpr"},
                       {"BLOCK": block}, num_warps)
    x = np.random.default_rng().standard_normal(n).astype(np.float32)
    out = poison(block, np.float32)
    k(x, out, n, grid=1)
    ref = np.concatenate([x.astype(np.float64) * 2, np.full(block - n, 5.0)])
    np.testing.assert_allclose(out, ref, rtol=1e-7)


def test_compile_time():
    sig = {"x_ptr": "*fp32", "y_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32", "BLOCK": "constexpr"}
    k = compile_kernel(add_kernel, sig, {"BLOCK": 1024}, 4)
    assert k.seconds < 0.2, k.seconds
