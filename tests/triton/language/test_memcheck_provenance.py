"""An out-of-bounds report names the buffer the access was meant for (the kernel parameter its
pointer derives from: compiler/provenance.py), not the bound buffer nearest the stray address.

The stray address is placed just past another argument's buffer, so "the nearest buffer" would
name that one: the old report did. Memcheck is the simulator's; on the emulated Metal device
out-of-bounds accesses are Metal validation's (not enabled here), so these tests need `sim`.
"""

from __future__ import annotations

import pytest
import torch
import triton
import triton.language as tl
import triton_mps

pytestmark = pytest.mark.skipif(
    triton_mps.get_device(None).info["is_emulated"], reason="memcheck is the simulator's")


@triton.jit
def copy_shifted(x_ptr, y_ptr, out_ptr, shift, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + shift + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)


@triton.jit
def walk_in_loop(x_ptr, y_ptr, out_ptr, step, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    p = x_ptr + offs
    acc = tl.zeros((BLOCK,), tl.float32)
    for _ in range(2):  # a loop-carried pointer: the second trip is the stray one
        acc += tl.load(p, mask=offs < n)
        p += step
    tl.store(out_ptr + offs, acc + tl.load(y_ptr + offs), mask=offs < n)


def _beyond(y: torch.Tensor, x: torch.Tensor, others: list[torch.Tensor]) -> int:
    """An element offset from x's pointer that lands one element past y's storage, outside
    every bound buffer (so memcheck stops it, and y is the nearest buffer)."""
    item = x.element_size()

    def span(t: torch.Tensor) -> range:
        s = t.untyped_storage()
        return range(s.data_ptr(), s.data_ptr() + s.nbytes())

    y_end = span(y).stop
    for addr in (y_end + item, span(y).start - 2 * item):
        inside = any(addr in span(t) for t in [x, y, *others])
        if not inside and (addr - x.data_ptr()) % item == 0:
            return (addr - x.data_ptr()) // item
    pytest.skip("the allocator placed the buffers so that no stray address is free beside y")


def test_the_report_names_the_buffer_the_load_was_meant_for():
    n = 16
    x, y = torch.randn(n), torch.randn(n)
    out = torch.full((n,), float("nan"))
    shift = _beyond(y, x, [out])
    with pytest.raises(triton_mps.DispatchError) as e:
        copy_shifted[(1,)](x, y, out, shift, 1, BLOCK=n)
    msg = str(e.value)
    assert "out-of-bounds load of 4 bytes" in msg, msg
    assert "buffer(0) 'arg0' (the buffer its pointer derives from)" in msg, msg
    assert f"(element {shift})" in msg, msg
    # The process and the kernel stay usable.
    copy_shifted[(1,)](x, y, out, 0, n, BLOCK=n)
    torch.testing.assert_close(out, x + y)


def test_a_loop_carried_pointer_keeps_its_buffer():
    n = 8
    x, y = torch.randn(n), torch.randn(n)
    out = torch.full((n,), float("nan"))
    step = _beyond(y, x, [out])
    with pytest.raises(triton_mps.DispatchError) as e:
        walk_in_loop[(1,)](x, y, out, step, 1, BLOCK=n)
    assert "buffer(0) 'arg0' (the buffer its pointer derives from)" in str(e.value), str(e.value)
