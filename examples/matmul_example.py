"""Tiled matmul C = A @ B with `triton.autotune`: configs are benchmarked with the driver's
benchmarker and the fastest is kept per shape; a config the device cannot run (here 64 warps
= 2048 threads, over Metal's 1024 per threadgroup) is pruned, not an error.

    python examples/matmul_example.py [--small]
"""

from __future__ import annotations

import sys

import _common  # noqa: F401  (selects the mps backend)
import torch
import triton
import triton.language as tl

CONFIGS = [
    triton.Config({"BLOCK_M": 32, "BLOCK_N": 32, "BLOCK_K": 16}, num_warps=4),
    triton.Config({"BLOCK_M": 64, "BLOCK_N": 32, "BLOCK_K": 32}, num_warps=4),
    triton.Config({"BLOCK_M": 16, "BLOCK_N": 16, "BLOCK_K": 16}, num_warps=64),  # too many threads: pruned
]


@triton.autotune(configs=CONFIGS, key=["M", "N", "K"])
@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, a_sm, a_sk, b_sk, b_sn, c_sm, c_sn,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    rm = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        a = tl.load(a_ptr + rm[:, None] * a_sm + (k0 + rk)[None, :] * a_sk,
                    mask=(rm[:, None] < M) & ((k0 + rk)[None, :] < K), other=0.0)
        b = tl.load(b_ptr + (k0 + rk)[:, None] * b_sk + rn[None, :] * b_sn,
                    mask=((k0 + rk)[:, None] < K) & (rn[None, :] < N), other=0.0)
        acc = tl.dot(a, b, acc, input_precision="ieee")
    tl.store(c_ptr + rm[:, None] * c_sm + rn[None, :] * c_sn, acc.to(c_ptr.dtype.element_ty),
             mask=(rm[:, None] < M) & (rn[None, :] < N))


def matmul(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    (M, K), N = a.shape, b.shape[1]
    c = torch.full((M, N), float("nan"), dtype=a.dtype, device=a.device)

    def grid(meta):
        return (triton.cdiv(M, meta["BLOCK_M"]), triton.cdiv(N, meta["BLOCK_N"]))

    matmul_kernel[grid](a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1))
    return c


def main(argv: list[str] | None = None) -> int:
    size = _common.parse_size(argv, __doc__.splitlines()[0])
    M, N, K = (70, 45, 50) if size == "small" else (1000, 1000, 1000)
    dev = _common.torch_device()
    print(f"matmul {M}x{K} @ {K}x{N}, float32 (torch device '{dev}'):")
    a, b = torch.randn(M, K, device=dev), torch.randn(K, N, device=dev)
    c = matmul(a, b)
    timings = matmul_kernel.cache  # the chosen config per key
    best = next(iter(timings.values()))
    print(f"  autotune chose {best.kwargs}, num_warps={best.num_warps} (of {len(CONFIGS)} configs; num_warps=64 "
          "pruned: too many threads)")
    ok = _common.report("C vs A @ B in float64", (c.double() - a.double() @ b.double()).abs().max().item(), 1e-3)
    bt = b.t().contiguous().t()  # column-major B: strides are the kernel's business
    ok &= _common.report("with a column-major B", (matmul(a, bt).double() - a.double() @ b.double()).abs().max().item(),
                         1e-3)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
