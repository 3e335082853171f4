"""kernels/conv2d.py through kernel[grid] on torch tensors: NCHW and NHWC, stride and padding."""

from __future__ import annotations

import pytest
import torch
from layer_kernels_testing import assert_close64, device, poisoned_tensor, randn, torch_gen

from kernels.conv2d import conv2d, conv2d_reference


def _case(rng, dev, dtype, layout, batch, c_in, h, w, c_out, kh, kw, bias=True):
    g = torch_gen(rng)
    x = randn(g, batch, c_in, h, w, dtype=dtype, dev=dev)
    if layout == "nhwc":
        x = x.permute(0, 2, 3, 1).contiguous()
    weight = randn(g, c_out, c_in, kh, kw, dtype=dtype, dev=dev, scale=0.3)
    b = randn(g, c_out, dtype=dtype, dev=dev) if bias else None
    return x, weight, b


def _out_shape(layout, batch, c_out, oh, ow):
    return (batch, c_out, oh, ow) if layout == "nchw" else (batch, oh, ow, c_out)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
@pytest.mark.parametrize("layout", ["nchw", "nhwc"])
@pytest.mark.parametrize("num_warps", [1, 2, 4, 8])
def test_conv2d(mps_driver, rng, dtype, layout, num_warps):
    dev = device(mps_driver)
    # M = 2*5*11 = 110 rows, C_out 7, K = 5*3*3 = 45: none a multiple of the 32x16x16 blocks.
    batch, c_in, h, w, c_out = 2, 5, 9, 11, 7
    x, weight, b = _case(rng, dev, dtype, layout, batch, c_in, h, w, c_out, 3, 3)
    stride, padding = (2, 1), 1
    out = poisoned_tensor(_out_shape(layout, batch, c_out, 5, 11), dtype, dev)
    conv2d(x, weight, b, stride=stride, padding=padding, layout=layout, num_warps=num_warps, out=out)
    ref = conv2d_reference(x, weight, b, stride=stride, padding=padding, layout=layout)
    assert_close64(out, ref, dtype, scale=2.0)


@pytest.mark.parametrize("layout", ["nchw", "nhwc"])
@pytest.mark.parametrize("stride,padding,kernel", [(1, 0, (1, 1)), (1, 2, (5, 3)), (3, (0, 2), (2, 4))])
def test_conv2d_shapes(mps_driver, rng, layout, stride, padding, kernel):
    dev = device(mps_driver)
    batch, c_in, h, w, c_out = 1, 6, 10, 13, 20
    x, weight, _ = _case(rng, dev, torch.float32, layout, batch, c_in, h, w, c_out, *kernel, bias=False)
    y = conv2d(x, weight, None, stride=stride, padding=padding, layout=layout, block_m=16, block_n=32,
               block_k=16, num_warps=2)
    ref = conv2d_reference(x, weight, None, stride=stride, padding=padding, layout=layout)
    assert y.shape == ref.shape
    assert_close64(y, ref, torch.float32)


def test_conv2d_rejects_unknown_layout(mps_driver):
    with pytest.raises(ValueError, match="layout"):
        conv2d(torch.zeros(1, 1, 3, 3), torch.zeros(1, 1, 1, 1), layout="chwn")
