"""Vector add: one Triton kernel on torch tensors, numpy arrays and (if installed) MLX arrays.

    python examples/vector_add_example.py [--small]

Arrays are bound in place (no copies): the kernel writes straight into the caller's memory.
"""

from __future__ import annotations

import sys

import _common  # noqa: F401  (selects the mps backend)
import numpy as np
import torch
import triton
import triton.language as tl


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)


def add(x, y, out, n: int, block: int = 256):
    add_kernel[(triton.cdiv(n, block),)](x, y, out, n, BLOCK=block)
    return out


def main(argv: list[str] | None = None) -> int:
    size = _common.parse_size(argv, __doc__.splitlines()[0])
    n = 1000 if size == "small" else 1_000_003  # not a multiple of the block: the mask matters
    dev = _common.torch_device()
    print(f"vector add of {n} float32 elements (torch device '{dev}'):")
    ok = True

    x, y = torch.rand(n, device=dev), torch.rand(n, device=dev)
    out = torch.full_like(x, float("nan"))
    add(x, y, out, n)
    ok &= _common.report("torch tensors", (out.double() - (x.double() + y.double())).abs().max().item(), 1e-6)

    rng = np.random.default_rng()
    xa, ya = rng.random(n, dtype=np.float32), rng.random(n, dtype=np.float32)
    outa = np.full(n, np.nan, np.float32)
    add(xa, ya, outa, n)  # numpy arrays: zero-copy, the result lands in `outa`
    ok &= _common.report("numpy arrays (written in place)", float(np.abs(outa - (xa + ya)).max()), 1e-6)

    try:
        import mlx.core as mx
    except ImportError:
        print("  MLX arrays: skipped (pip install 'triton-mps[mlx]')")
    else:
        xm, ym = mx.array(xa), mx.array(ya)
        om = mx.zeros((n,), dtype=mx.float32)
        add(xm, ym, om, n)
        ok &= _common.report("MLX arrays", float(np.abs(np.array(om) - (xa + ya)).max()), 1e-6)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
