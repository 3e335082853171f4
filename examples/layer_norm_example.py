"""Layer norm forward: one program per row; mean and variance in fp32, then scale and shift.

    python examples/layer_norm_example.py [--small]
"""

from __future__ import annotations

import sys

import _common  # noqa: F401  (selects the mps backend)
import torch
import triton
import triton.language as tl


@triton.jit
def layer_norm_kernel(x_ptr, y_ptr, w_ptr, b_ptr, n_cols, stride, eps, BLOCK_N: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_N)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * stride + cols, mask=mask, other=0.0).to(tl.float32)
    mean = tl.sum(x, axis=0) / n_cols
    centered = tl.where(mask, x - mean, 0.0)
    rstd = 1.0 / tl.sqrt(tl.sum(centered * centered, axis=0) / n_cols + eps)
    w = tl.load(w_ptr + cols, mask=mask)
    b = tl.load(b_ptr + cols, mask=mask)
    tl.store(y_ptr + row * stride + cols, (centered * rstd * w + b).to(y_ptr.dtype.element_ty), mask=mask)


def layer_norm(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor, eps: float = 1e-5) -> torch.Tensor:
    rows, cols = x.shape
    y = torch.full_like(x, float("nan"))
    layer_norm_kernel[(rows,)](x, y, w, b, cols, x.stride(0), eps, BLOCK_N=triton.next_power_of_2(cols))
    return y


def main(argv: list[str] | None = None) -> int:
    size = _common.parse_size(argv, __doc__.splitlines()[0])
    rows, cols = (5, 96) if size == "small" else (1151, 1000)
    dev = _common.torch_device()
    print(f"layer norm of a {rows}x{cols} matrix (torch device '{dev}'):")
    x = torch.randn(rows, cols, device=dev) * 3 + 1
    w, b = torch.rand(cols, device=dev) + 0.5, torch.randn(cols, device=dev)
    y = layer_norm(x, w, b)
    ref = torch.nn.functional.layer_norm(x.double(), (cols,), w.double(), b.double(), eps=1e-5)
    ok = _common.report("fp32 vs torch layer_norm in float64", (y.double() - ref).abs().max().item(), 1e-5)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
