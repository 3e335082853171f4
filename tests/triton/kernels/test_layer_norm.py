"""kernels/layer_norm.py through kernel[grid] on torch tensors: forward, backward (lock), dtypes."""

from __future__ import annotations

import pytest
import torch
from layer_kernels_testing import assert_close64, device, poisoned_tensor, randn, torch_gen

from kernels.layer_norm import (
    layer_norm_backward,
    layer_norm_backward_reference,
    layer_norm_forward,
    layer_norm_reference,
)

DTYPES = [torch.float32, torch.float16]
WARPS = [1, 2, 4, 8]


def _inputs(rng, rows, cols, dtype, dev):
    g = torch_gen(rng)
    # A large common offset: a one-pass E[x^2] - mean^2 variance would lose the fp32 digits.
    x = randn(g, rows, cols, dtype=dtype, dev=dev) + 3.0
    w = randn(g, cols, dtype=dtype, dev=dev)
    b = randn(g, cols, dtype=dtype, dev=dev)
    dy = randn(g, rows, cols, dtype=dtype, dev=dev)
    return x, w, b, dy


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("num_warps", WARPS)
def test_forward(mps_driver, rng, dtype, num_warps):
    dev = device(mps_driver)
    rows, cols = 13, 300  # cols > BLOCK_N (128) and not a multiple of it: three chunks per pass
    x, w, b, _ = _inputs(rng, rows, cols, dtype, dev)
    y = poisoned_tensor((rows, cols), dtype, dev)
    mean = poisoned_tensor((rows,), torch.float32, dev)
    rstd = poisoned_tensor((rows,), torch.float32, dev)
    layer_norm_forward(x, w, b, 1e-5, block_n=128, num_warps=num_warps, out=y, mean=mean, rstd=rstd)
    y_ref, mean_ref, rstd_ref = layer_norm_reference(x, w, b, 1e-5)
    assert_close64(mean, mean_ref, torch.float32)
    assert_close64(rstd, rstd_ref, torch.float32)
    assert_close64(y, y_ref, dtype, scale=2.0)


@pytest.mark.parametrize("dtype", DTYPES)
def test_forward_one_pass_several_rows_per_program(mps_driver, rng, dtype):
    # 300 rows: 2 rows per program (forward_launch keeps >= 128 programs), the last program
    # has one row past the end; 77 columns in a 128-wide block.
    from kernels.layer_norm import forward_launch

    assert forward_launch(300, 77)[1] == {"BLOCK_N": 128, "ROWS": 2, "ONE_PASS": True}
    dev = device(mps_driver)
    rows, cols = 301, 77
    x, w, b, _ = _inputs(rng, rows, cols, dtype, dev)
    y = poisoned_tensor((rows, cols), dtype, dev)
    mean = poisoned_tensor((rows,), torch.float32, dev)
    rstd = poisoned_tensor((rows,), torch.float32, dev)
    layer_norm_forward(x, w, b, 1e-5, out=y, mean=mean, rstd=rstd)
    y_ref, mean_ref, rstd_ref = layer_norm_reference(x, w, b, 1e-5)
    assert_close64(mean, mean_ref, torch.float32)
    assert_close64(rstd, rstd_ref, torch.float32)
    assert_close64(y, y_ref, dtype, scale=2.0)


def test_forward_leading_dims_and_default_block(mps_driver, rng):
    dev = device(mps_driver)
    g = torch_gen(rng)
    x = randn(g, 2, 3, 77, dtype=torch.float32, dev=dev)
    w, b = randn(g, 77, dtype=torch.float32, dev=dev), randn(g, 77, dtype=torch.float32, dev=dev)
    y, mean, rstd = layer_norm_forward(x, w, b)
    y_ref, mean_ref, _ = layer_norm_reference(x, w, b)
    assert y.shape == x.shape and mean.shape == (6,)
    assert_close64(y, y_ref, torch.float32)
    assert_close64(mean, mean_ref.reshape(-1), torch.float32)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("num_warps", WARPS)
def test_backward(mps_driver, rng, dtype, num_warps):
    dev = device(mps_driver)
    rows, cols = 45, 100
    x, w, b, dy = _inputs(rng, rows, cols, dtype, dev)
    _, mean, rstd = layer_norm_forward(x, w, b, 1e-5, num_warps=num_warps)
    dx = poisoned_tensor((rows, cols), dtype, dev)
    dw = poisoned_tensor((cols,), dtype, dev)
    db = poisoned_tensor((cols,), dtype, dev)
    # 4 groups: rows 0, 4, 8, ... share partial row 0 and its lock.
    layer_norm_backward(dy, x, w, mean, rstd, groups=4, num_warps=num_warps, dx=dx, dw=dw, db=db)
    dx_ref, dw_ref, db_ref = layer_norm_backward_reference(dy, x, w, b, 1e-5)
    assert_close64(dx, dx_ref, dtype, scale=2.0)
    # dw and db sum 45 rows: their magnitude grows like sqrt(rows).
    assert_close64(dw, dw_ref, dtype, scale=4.0)
    assert_close64(db, db_ref, dtype, scale=4.0)


@pytest.mark.parametrize("groups", [1, 3])
def test_backward_lock_under_contention(mps_driver, rng, groups):
    """Many rows per lock, 256 threads per program: a lost update in dw/db would show."""
    dev = device(mps_driver)
    rows, cols = 160, 250
    x, w, b, dy = _inputs(rng, rows, cols, torch.float32, dev)
    _, mean, rstd = layer_norm_forward(x, w, b, 1e-5)
    for _ in range(2):  # fresh partial buffers and locks every call
        dx, dw, db = layer_norm_backward(dy, x, w, mean, rstd, groups=groups, num_warps=8)
        dx_ref, dw_ref, db_ref = layer_norm_backward_reference(dy, x, w, b, 1e-5)
        assert_close64(dx, dx_ref, torch.float32)
        assert_close64(dw, dw_ref, torch.float32, scale=10.0)
        assert_close64(db, db_ref, torch.float32, scale=10.0)


def test_backward_row_too_long_is_refused(mps_driver):
    x = torch.zeros(2, 9000)
    with pytest.raises(ValueError, match="do not fit one block"):
        layer_norm_backward(x, x, torch.ones(9000), torch.zeros(2), torch.ones(2))
