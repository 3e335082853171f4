"""Ops common in real kernels (issue 7): tl.debug_barrier between a store and a load,
tl.assume, tl.atomic_add on computed pointers (histograms: pointer tensors through layout
conversions), a one-element tensor to a scalar (tt.unsplat)."""

from __future__ import annotations

import pytest
import torch
import triton
import triton.language as tl


@triton.jit
def _reverse_through_memory(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.assume(n > 0)
    tl.assume(BLOCK >= 1)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * 2, mask=mask)
    tl.debug_barrier()  # the stores of other threads must be visible to the loads below
    rev = n - 1 - offs
    tl.store(out_ptr + BLOCK + offs, tl.load(out_ptr + rev, mask=mask), mask=mask)


@pytest.mark.parametrize("num_warps", [1, 4])
@pytest.mark.parametrize("n", [128, 100])
def test_debug_barrier_and_assume(mps_driver, num_warps, n):
    dev = mps_driver.get_active_torch_device()
    block = 128
    x = torch.randn(block, device=dev)
    out = torch.full((2 * block,), float("nan"), device=dev)
    k = _reverse_through_memory[(1,)](x, out, n, BLOCK=block, num_warps=num_warps)
    torch.testing.assert_close(out[:n], x[:n] * 2)
    torch.testing.assert_close(out[block:block + n], (x[:n] * 2).flip(0))
    msl = k.asm["msl"].decode() if isinstance(k.asm["msl"], bytes) else k.asm["msl"]
    assert "mem_flags::mem_device" in msl


@triton.jit
def _histogram(x_ptr, hist_ptr, n, NBINS: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    v = tl.load(x_ptr + offs, mask=mask, other=0)
    tl.atomic_add(hist_ptr + (v % NBINS), 1, mask=mask)


@pytest.mark.parametrize("nbins", [7, 16])
@pytest.mark.parametrize("dtype", [torch.int32, torch.float32])
def test_histogram_atomic_add_on_computed_pointers(mps_driver, nbins, dtype):
    dev = mps_driver.get_active_torch_device()
    n = 3001
    x = torch.randint(0, 1000, (n,), dtype=torch.int32, device=dev)
    hist = torch.zeros(nbins, dtype=dtype, device=dev)
    _histogram[(triton.cdiv(n, 256),)](x, hist, n, NBINS=nbins, BLOCK=256)
    assert torch.equal(hist, torch.bincount(x % nbins, minlength=nbins).to(dtype))


@triton.jit
def _pointer_transpose(x_ptr, out_ptr, M: tl.constexpr, N: tl.constexpr):
    """A 2-D tensor of pointers changes layout (transposed use; the histogram above goes through
    threadgroup memory, this one may map registers)."""
    rows = tl.arange(0, M)[:, None]
    cols = tl.arange(0, N)[None, :]
    ptrs = x_ptr + rows * N + cols
    vals = tl.load(tl.trans(ptrs))
    tl.store(out_ptr + tl.arange(0, N)[:, None] * M + tl.arange(0, M)[None, :], vals)


def test_pointer_tensor_layout_change(mps_driver):
    dev = mps_driver.get_active_torch_device()
    x = torch.randn(32, 16, device=dev)
    out = torch.full((16, 32), float("nan"), device=dev)
    _pointer_transpose[(1,)](x, out, M=32, N=16)
    torch.testing.assert_close(out, x.t())


@triton.jit
def _first_element(x_ptr, out_ptr):
    one = tl.load(x_ptr + tl.arange(0, 1))
    s = tl.reshape(one, ())  # tensor<1xf32> -> f32 (tt.unsplat)
    tl.store(out_ptr + tl.program_id(0), s + 1.0)


def test_one_element_tensor_to_scalar(mps_driver):
    dev = mps_driver.get_active_torch_device()
    x = torch.randn(4, device=dev)
    out = torch.full((3,), float("nan"), device=dev)
    _first_element[(3,)](x, out)
    torch.testing.assert_close(out, (x[0] + 1).expand(3))
