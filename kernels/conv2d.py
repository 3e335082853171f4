"""2-D convolution as an implicit GEMM.

View the convolution as a matrix product without building the im2col matrix:
  rows    m = (n, oh, ow)       one per output pixel           (M = N * OH * OW)
  columns co                    one per output channel         (N = C_out)
  depth   k = (ci, r, s)        one per input channel and tap  (K = C_in * KH * KW)
  y[m, co] = sum_k x[n, ci, oh * stride_h - pad_h + r, ow * stride_w - pad_w + s] * w[co, ci, r, s]
A program computes a BLOCK_M x BLOCK_N tile of y; for each BLOCK_K slice of k it gathers the
matching x patch (zero where the tap falls in the padding) and w slice and feeds tl.dot.

All tensors are addressed through their strides, so NCHW and NHWC (channels-last) inputs and
outputs use the same kernel. Only the order of k changes: with K_CHANNELS_INNER the channel is
the fastest-varying part of k (contiguous loads in NHWC), otherwise the kernel tap is.
Accumulation is fp32; fp16 inputs give fp16 outputs.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl


@triton.jit
def _conv2d_implicit_gemm(x_ptr, w_ptr, bias_ptr, y_ptr,
                          batch, c_in, height, width, c_out, out_h, out_w,
                          sx_n, sx_c, sx_h, sx_w, sw_o, sw_c, sw_h, sw_w, sy_n, sy_c, sy_h, sy_w,
                          stride_h, stride_w, pad_h, pad_w,
                          KH: tl.constexpr, KW: tl.constexpr, HAS_BIAS: tl.constexpr, K_CHANNELS_INNER: tl.constexpr,
                          BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    co = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    m_ok = m < batch * out_h * out_w
    co_ok = co < c_out

    # Output pixel of each row, and the top-left input coordinate of its window.
    n = m // (out_h * out_w)
    pix = m % (out_h * out_w)
    ih0 = (pix // out_w) * stride_h - pad_h
    iw0 = (pix % out_w) * stride_w - pad_w
    x_rows = x_ptr + n.to(tl.int64) * sx_n

    acc = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
    depth = c_in * KH * KW
    for k0 in range(0, depth, BLOCK_K):
        k = k0 + tl.arange(0, BLOCK_K)
        if K_CHANNELS_INNER:
            ci = k % c_in
            tap = k // c_in
        else:
            ci = k // (KH * KW)
            tap = k % (KH * KW)
        r = tap // KW
        s = tap % KW
        k_ok = k < depth

        ih = ih0[:, None] + r[None, :]
        iw = iw0[:, None] + s[None, :]
        inside = (ih >= 0) & (ih < height) & (iw >= 0) & (iw < width)
        x_mask = m_ok[:, None] & k_ok[None, :] & inside
        x_off = ci[None, :] * sx_c + ih * sx_h + iw * sx_w
        a = tl.load(x_rows[:, None] + tl.where(x_mask, x_off, 0), mask=x_mask, other=0.0)

        w_off = co[None, :] * sw_o + ci[:, None] * sw_c + r[:, None] * sw_h + s[:, None] * sw_w
        w_mask = k_ok[:, None] & co_ok[None, :]
        b = tl.load(w_ptr + w_off, mask=w_mask, other=0.0)
        acc += tl.dot(a, b)

    if HAS_BIAS:
        acc += tl.load(bias_ptr + co, mask=co_ok, other=0.0).to(tl.float32)[None, :]
    oh = pix // out_w
    ow = pix % out_w
    y_off = n.to(tl.int64)[:, None] * sy_n + co[None, :] * sy_c + (oh * sy_h + ow * sy_w)[:, None]
    tl.store(y_ptr + y_off, acc, mask=m_ok[:, None] & co_ok[None, :])


def _pair(v):
    return (v, v) if isinstance(v, int) else tuple(v)


def conv2d(x, weight, bias=None, stride=1, padding=0, *, layout="nchw", block_m=32, block_n=16, block_k=16,
           num_warps=4, out=None):
    """Convolution of x with weight (C_out, C_in, KH, KW), like torch.nn.functional.conv2d.

    layout="nchw": x is (N, C, H, W) and the result (N, C_out, OH, OW).
    layout="nhwc": x is (N, H, W, C) and the result (N, OH, OW, C_out) (channels-last).
    """
    stride_h, stride_w = _pair(stride)
    pad_h, pad_w = _pair(padding)
    if layout == "nchw":
        batch, c_in, height, width = x.shape
        sx = x.stride()
    elif layout == "nhwc":
        batch, height, width, c_in = x.shape
        sx = (x.stride(0), x.stride(3), x.stride(1), x.stride(2))
    else:
        raise ValueError(f"conv2d: layout must be 'nchw' or 'nhwc', not {layout!r}")
    c_out, wc, kh, kw = weight.shape
    assert wc == c_in, f"weight has {wc} input channels, x has {c_in}"
    out_h = (height + 2 * pad_h - kh) // stride_h + 1
    out_w = (width + 2 * pad_w - kw) // stride_w + 1
    assert out_h > 0 and out_w > 0, "the kernel does not fit the padded input"
    shape = (batch, c_out, out_h, out_w) if layout == "nchw" else (batch, out_h, out_w, c_out)
    y = torch.empty(shape, dtype=x.dtype, device=x.device) if out is None else out
    assert tuple(y.shape) == shape, f"out has shape {tuple(y.shape)}, expected {shape}"
    sy = y.stride() if layout == "nchw" else (y.stride(0), y.stride(3), y.stride(1), y.stride(2))
    grid = (triton.cdiv(batch * out_h * out_w, block_m), triton.cdiv(c_out, block_n))
    _conv2d_implicit_gemm[grid](x, weight, bias if bias is not None else weight, y,
                                batch, c_in, height, width, c_out, out_h, out_w,
                                *sx, *weight.stride(), *sy, stride_h, stride_w, pad_h, pad_w,
                                KH=kh, KW=kw, HAS_BIAS=bias is not None, K_CHANNELS_INNER=layout == "nhwc",
                                BLOCK_M=block_m, BLOCK_N=block_n, BLOCK_K=block_k, num_warps=num_warps)
    return y


def conv2d_reference(x, weight, bias=None, stride=1, padding=0, *, layout="nchw"):
    """torch.nn.functional.conv2d in float64, in the same layout as conv2d()."""
    x64 = x.double() if layout == "nchw" else x.double().permute(0, 3, 1, 2)
    y = torch.nn.functional.conv2d(x64, weight.double(), None if bias is None else bias.double(),
                                   stride=stride, padding=padding)
    return y if layout == "nchw" else y.permute(0, 2, 3, 1)
