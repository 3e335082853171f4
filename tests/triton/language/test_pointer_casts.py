"""tt.int_to_ptr / tt.ptr_to_int (issue 7): a table of addresses loaded as int64 and cast to
pointers (the grouped-GEMM pattern), and pointers cast back to integers. The tensors the table
points into are passed to the kernel too: Metal makes only bound buffers resident, and memcheck
checks every access against the bound buffers."""

from __future__ import annotations

import math

import torch
import triton
import triton.language as tl


@triton.jit
def _gather_rows(addrs, a, b, out, addr_out, N, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < N
    p = tl.load(addrs + pid).to(tl.pointer_type(tl.float32))
    x = tl.load(p + offs, mask=mask, other=0.0)
    tl.store(out + pid * N + offs, x * 2.0 + 1.0, mask=mask)
    tl.store(addr_out + pid * N + offs, (p + offs).to(tl.int64), mask=mask)


def test_pointer_table(mps_driver):
    dev = mps_driver.get_active_torch_device()
    N = 37  # not a multiple of the block
    a = torch.randn(N, device=dev)
    b = torch.randn(N, device=dev)
    order = [1, 0, 1]  # programs read b, a, b
    table = torch.tensor([(a, b)[i].data_ptr() for i in order], dtype=torch.int64, device=dev)
    out = torch.full((len(order), N), math.nan, device=dev)
    addr_out = torch.full((len(order), N), -1, dtype=torch.int64, device=dev)
    _gather_rows[(len(order),)](table, a, b, out, addr_out, N, BLOCK=64)
    for row, i in enumerate(order):
        src = (a, b)[i]
        assert torch.equal(out[row].cpu(), src.cpu() * 2 + 1)  # x * 2 is exact: one rounding either way
        expect = torch.arange(N, dtype=torch.int64) * 4 + src.data_ptr()
        assert torch.equal(addr_out[row].cpu(), expect)
