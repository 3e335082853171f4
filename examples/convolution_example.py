"""2-D convolution (NCHW, stride, zero padding, bias): a program per (image, output channel)
and block of output pixels, summing over input channels and the filter window.

    python examples/convolution_example.py [--small]
"""

from __future__ import annotations

import sys

import _common  # noqa: F401  (selects the mps backend)
import torch
import triton
import triton.language as tl


@triton.jit
def conv2d_kernel(x_ptr, w_ptr, bias_ptr, y_ptr, C_in, H, W, C_out, OH, OW, stride, pad,
                  KH: tl.constexpr, KW: tl.constexpr, BLOCK: tl.constexpr):
    image_channel = tl.program_id(0)  # n * C_out + oc
    n = image_channel // C_out
    oc = image_channel % C_out
    offs = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    inside = offs < OH * OW
    oh = offs // OW
    ow = offs % OW
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for ic in range(0, C_in):
        for kh in tl.static_range(KH):
            for kw in tl.static_range(KW):
                ih = oh * stride - pad + kh
                iw = ow * stride - pad + kw
                ok = inside & (ih >= 0) & (ih < H) & (iw >= 0) & (iw < W)
                x = tl.load(x_ptr + ((n * C_in + ic) * H + ih) * W + iw, mask=ok, other=0.0)
                acc += x * tl.load(w_ptr + ((oc * C_in + ic) * KH + kh) * KW + kw)
    acc += tl.load(bias_ptr + oc)
    tl.store(y_ptr + image_channel * OH * OW + offs, acc, mask=inside)


def conv2d(x: torch.Tensor, w: torch.Tensor, bias: torch.Tensor, stride: int = 1, pad: int = 0) -> torch.Tensor:
    N, C_in, H, W = x.shape
    C_out, _, KH, KW = w.shape
    OH, OW = (H + 2 * pad - KH) // stride + 1, (W + 2 * pad - KW) // stride + 1
    y = torch.full((N, C_out, OH, OW), float("nan"), device=x.device)
    block = 64
    grid = (N * C_out, triton.cdiv(OH * OW, block))
    conv2d_kernel[grid](x.contiguous(), w.contiguous(), bias, y, C_in, H, W, C_out, OH, OW, stride, pad,
                        KH=KH, KW=KW, BLOCK=block)
    return y


def main(argv: list[str] | None = None) -> int:
    size = _common.parse_size(argv, __doc__.splitlines()[0])
    n, c_in, hw, c_out = (2, 3, 11, 4) if size == "small" else (8, 16, 64, 32)
    dev = _common.torch_device()
    print(f"conv2d of {n}x{c_in}x{hw}x{hw} with {c_out} 3x3 filters (torch device '{dev}'):")
    x = torch.randn(n, c_in, hw, hw, device=dev)
    w, bias = torch.randn(c_out, c_in, 3, 3, device=dev), torch.randn(c_out, device=dev)
    ok = True
    for stride, pad in ((1, 1), (2, 0)):
        y = conv2d(x, w, bias, stride, pad)
        ref = torch.nn.functional.conv2d(x.double(), w.double(), bias.double(), stride=stride, padding=pad)
        ok &= _common.report(f"stride {stride}, padding {pad} vs torch conv2d in float64",
                             (y.double() - ref).abs().max().item(), 1e-4)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
