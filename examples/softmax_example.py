"""Fused row softmax: one program per row, the row held in registers (max, exp, sum, divide).

    python examples/softmax_example.py [--small]
"""

from __future__ import annotations

import sys

import _common  # noqa: F401  (selects the mps backend)
import torch
import triton
import triton.language as tl


@triton.jit
def softmax_kernel(x_ptr, y_ptr, n_cols, x_stride, y_stride, BLOCK_N: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_N)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * x_stride + cols, mask=mask, other=-float("inf")).to(tl.float32)
    e = tl.exp(x - tl.max(x, axis=0))
    tl.store(y_ptr + row * y_stride + cols, (e / tl.sum(e, axis=0)).to(y_ptr.dtype.element_ty), mask=mask)


def softmax(x: torch.Tensor) -> torch.Tensor:
    rows, cols = x.shape
    y = torch.full_like(x, float("nan"))
    softmax_kernel[(rows,)](x, y, cols, x.stride(0), y.stride(0), BLOCK_N=triton.next_power_of_2(cols),
                            num_warps=4)
    return y


def main(argv: list[str] | None = None) -> int:
    size = _common.parse_size(argv, __doc__.splitlines()[0])
    rows, cols = (7, 100) if size == "small" else (1823, 781)
    dev = _common.torch_device()
    print(f"softmax of a {rows}x{cols} matrix (torch device '{dev}'):")
    ok = True
    for dtype, tol in ((torch.float32, 1e-6), (torch.float16, 2e-3)):
        x = (torch.randn(rows, cols, device=dev) * 4).to(dtype)
        y = softmax(x)
        ref = torch.softmax(x.double(), dim=1)
        ok &= _common.report(f"{dtype} rows vs torch.softmax in float64", (y.double() - ref).abs().max().item(), tol)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
