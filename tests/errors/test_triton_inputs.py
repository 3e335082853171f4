"""Bad input to Triton kernels through `kernel[grid](...)` on the simulator (torch CPU tensors).

One kernel serves most rows (compiled once per specialisation); each test is one row of
docs/errors.md (tests/bad_input.py). Errors raised by Triton's own front end, before any
backend code runs, are marked "(Triton)" in their title: their wording is Triton's.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
import triton
import triton.language as tl
from bad_input import bad_input
from triton.language.extra import libdevice


@triton.jit
def shifted_copy(x, y, n, SHIFT, BLOCK: tl.constexpr):
    """y[i + SHIFT] = x[i] for i < n: a SHIFT past the end (or before the start) of y is the
    classic mask bug the memcheck must stop."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(y + offs + SHIFT, tl.load(x + offs, mask=m), mask=m)


@triton.jit
def shifted_load(x, y, n, SHIFT, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(y + offs, tl.load(x + offs + SHIFT, mask=m), mask=m)


def _inputs(n: int = 100):
    x = torch.randn(n)
    y = torch.full((n,), float("nan"))
    return x, y


def _copy_ok(n: int = 100) -> None:
    """The same kernel still runs correctly after the error."""
    x, y = _inputs(n)
    shifted_copy[(triton.cdiv(n, 64),)](x, y, n, 0, BLOCK=64)
    torch.testing.assert_close(y, x, rtol=0, atol=0)


# ---- out-of-bounds accesses (memcheck) ---------------------------------------------------------

@bad_input("out-of-bounds store by 1 element", given="a mask bug: y[i + 1] = x[i] for every i < n",
           raises="triton_mps.DispatchError", says="out-of-bounds store of 4 bytes past the end of buffer(1)")
def test_oob_store_by_one(mps_driver, bad):
    x, y = _inputs()
    with bad.expect() as info:
        shifted_copy[(2,)](x, y, 100, 1, BLOCK=64)
    assert "kernel 'shifted_copy'" in str(info.value) and "element 100" in str(info.value)
    assert "TRITON_MPS_MEMCHECK" in str(info.value)  # says what the check is and how it is controlled
    _copy_ok()


@bad_input("out-of-bounds load by 1 element", given="x[i + 1] read for every i < n",
           raises="triton_mps.DispatchError", says="out-of-bounds load of 4 bytes past the end of buffer(0)")
def test_oob_load_by_one(mps_driver, bad):
    x, y = _inputs()
    with bad.expect() as info:
        shifted_load[(2,)](x, y, 100, 1, BLOCK=64)
    assert "shifted_load" in str(info.value) and "thread" in str(info.value)
    _copy_ok()


@bad_input("out-of-bounds store before the start", given="y[i - 1] = x[i] (offset -1)",
           raises="triton_mps.DispatchError", says="out-of-bounds store of 4 bytes")
def test_oob_store_before_start(mps_driver, bad):
    x, y = _inputs()
    with bad.expect() as info:
        shifted_copy[(2,)](x, y, 100, -1, BLOCK=64)
    assert "byte offset -4" in str(info.value) or "before" in str(info.value), str(info.value)
    _copy_ok()


@bad_input("out-of-bounds store by 1e9 elements", given="y[i + 10**9] = x[i]",
           raises="triton_mps.DispatchError",
           says="out-of-bounds store of 4 bytes past the end of buffer(1) 'arg1' (the buffer its pointer derives from)")
def test_oob_store_far(mps_driver, bad):
    x, y = _inputs()
    with bad.expect() as info:
        shifted_copy[(2,)](x, y, 100, 10**9, BLOCK=64)
    assert "stopped before it happened" in str(info.value) and "(element 1000000" in str(info.value)
    assert "far outside it" in str(info.value), str(info.value)
    _copy_ok()


@bad_input("out-of-bounds load by 1e9 elements", given="x[i + 10**9] read",
           raises="triton_mps.DispatchError",
           says="out-of-bounds load of 4 bytes past the end of buffer(0) 'arg0' (the buffer its pointer derives from)")
def test_oob_load_far(mps_driver, bad):
    x, y = _inputs()
    with bad.expect():
        shifted_load[(2,)](x, y, 100, 10**9, BLOCK=64)
    _copy_ok()


@bad_input("zero-size tensor read", given="torch.empty(0) passed with n=1", raises="triton_mps.DispatchError",
           says="out-of-bounds load of 4 bytes past the end of buffer(0)")
def test_zero_size_tensor_read(mps_driver, bad):
    y = torch.full((1,), float("nan"))
    shifted_copy[(1,)](torch.empty(0), torch.empty(0), 0, 0, BLOCK=64)  # n=0: nothing accessed, fine
    with bad.expect() as info:
        shifted_copy[(1,)](torch.empty(0), y, 1, 0, BLOCK=64)
    assert "0 bytes" in str(info.value) or "0 elements" in str(info.value), str(info.value)
    _copy_ok()


# ---- what the tensors are -------------------------------------------------------------------------

@triton.jit
def f64_saturatef(x, y, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    m = offs < n
    tl.store(y + offs, libdevice.saturatef(tl.load(x + offs, mask=m)), mask=m)


@bad_input("float64 math without an emulation", given="libdevice.saturatef on torch.float64 tensors",
           raises="triton.compiler.errors.CompilationError",
           says="libdevice.saturatef on the mps backend takes (fp32); (fp16); (bf16); got (fp64)")
def test_float64_math_not_emulated(mps_driver, bad):
    # float64 itself is emulated (soft-float, compiler/mslib/fp64.py, with CUDA libdevice's float64 math
    # functions); a function with no float64 version (saturatef, as in CUDA) is refused at
    # compile time, naming it (never computed in float32).
    x, y = _inputs()
    with bad.expect() as info:
        f64_saturatef[(1,)](x.double(), y.double(), 100, BLOCK=128)
    assert "def f64_saturatef" in str(info.value), str(info.value)  # Triton shows the kernel's line
    yd = torch.full((100,), float("nan"), dtype=torch.float64)
    shifted_copy[(2,)](x.double(), yd, 100, 0, BLOCK=64)  # float64 data itself works
    assert torch.equal(yd, x.double())
    _copy_ok()


@bad_input("tensor on an unsupported device", given="a torch 'meta' tensor",
           raises="triton_mps.InvalidArgument", says="is a tensor on device 'meta'; the simulator takes CPU tensors")
def test_meta_tensor(mps_driver, bad):
    _, y = _inputs()
    with bad.expect() as info:
        shifted_copy[(2,)](torch.empty(100, device="meta"), y, 100, 0, BLOCK=64)
    assert "kernel 'shifted_copy': argument 'x'" in str(info.value)
    _copy_ok()


class _PointsElsewhere(torch.Tensor):
    def data_ptr(self) -> int:  # noqa: D102
        return 64  # outside its storage (torch itself gives that only to tensors without elements)


@bad_input("tensor with elements outside its storage",
           given="a torch.Tensor subclass of 100 elements whose data_ptr() lies outside its storage",
           raises="triton_mps.InvalidArgument", says="is outside the tensor's storage [")
def test_tensor_outside_its_storage(mps_driver, bad):
    x, y = _inputs()
    with bad.expect() as info:
        shifted_copy[(2,)](x.as_subclass(_PointsElsewhere), y, 100, 0, BLOCK=64)
    assert "kernel 'shifted_copy': argument 'x': data_ptr() 0x40" in str(info.value), str(info.value)
    assert "and the tensor has 100 elements" in str(info.value), str(info.value)
    _copy_ok()


@bad_input("read-only array as an output (Triton)", given="a read-only np.ndarray the kernel stores through",
           raises="triton_mps.InvalidArgument", says="is a read-only ndarray, but the kernel stores through it")
def test_read_only_array_as_output(mps_driver, bad):
    # numpy arrays are bound in place (zero copy); one the kernel writes must be writable.
    x, _ = _inputs()
    frozen = np.frombuffer(bytes(400), np.float32)
    with bad.expect():
        shifted_copy[(2,)](x, frozen, 100, 0, BLOCK=64)
    out = np.full(100, np.nan, np.float32)
    shifted_copy[(2,)](x.numpy(), out, 100, 0, BLOCK=64)
    np.testing.assert_array_equal(out, x.numpy())


@bad_input("list as a pointer (Triton)", given="a Python list where the kernel takes a pointer",
           raises="TypeError", says="failed to specialize argument of type: list")
def test_list_as_pointer(mps_driver, bad):
    _, y = _inputs()
    with bad.expect():
        shifted_copy[(2,)]([1.0] * 100, y, 100, 0, BLOCK=64)
    _copy_ok()


@bad_input("None as a pointer (Triton)", given="None where the kernel loads through a pointer",
           raises="triton.compiler.errors.CompilationError", says="'NoneType' object has no attribute 'dtype'")
def test_none_as_pointer(mps_driver, bad):
    _, y = _inputs()
    with bad.expect() as info:
        shifted_copy[(2,)](None, y, 100, 0, BLOCK=64)
    assert "tl.load(x + offs" in str(info.value)  # Triton points at the line
    _copy_ok()


@bad_input("missing argument (Triton)", given="kernel[grid] called without SHIFT",
           raises="TypeError", says="missing 1 required positional argument: 'SHIFT'")
def test_missing_argument(mps_driver, bad):
    x, y = _inputs()
    with bad.expect():
        shifted_copy[(2,)](x, y, 100, BLOCK=64)
    _copy_ok()


@bad_input("extra argument (Triton)", given="one positional argument too many",
           raises="TypeError", says="got multiple values for argument 'BLOCK'")
def test_extra_argument(mps_driver, bad):
    x, y = _inputs()
    with bad.expect():
        shifted_copy[(2,)](x, y, 100, 0, 7, BLOCK=64)
    _copy_ok()


@bad_input("untyped buffer", given="a triton_mps.Buffer (bytes without a dtype) for a pointer argument",
           raises="triton_mps.InvalidArgument",
           says="kernel 'shifted_copy': argument 'y' is a triton_mps.Buffer, which has no element type")
def test_untyped_buffer(mps_driver, bad):
    import triton_mps

    x, _ = _inputs()
    buf = triton_mps.get_device("sim").buffer(400)
    with bad.expect():
        shifted_copy[(2,)](x, buf, 100, 0, BLOCK=64)
    del buf
    _copy_ok()


# ---- launch configuration ------------------------------------------------------------------------

@bad_input("non-power-of-two block (Triton)", given="tl.arange(0, 100)",
           raises="triton.compiler.errors.CompilationError", says="arange's range must be a power of 2")
def test_non_power_of_two_block(mps_driver, bad):
    x, y = _inputs()
    with bad.expect():
        shifted_copy[(1,)](x, y, 100, 0, BLOCK=100)
    _copy_ok()


@pytest.mark.parametrize("num_warps", [0, 3])
@bad_input("num_warps 0 or not a power of two", given="num_warps=0, num_warps=3",
           raises="triton_mps.backend.compiler.NumWarpsNotPowerOfTwo",
           says="num_warps must be a power of 2 from 1 to 32")
def test_num_warps_not_power_of_two(mps_driver, bad, num_warps):
    x, y = _inputs()
    with bad.expect():
        shifted_copy[(2,)](x, y, 100, 0, BLOCK=64, num_warps=num_warps)
    _copy_ok()


@bad_input("num_warps over the threadgroup limit", given="num_warps=64 (2048 threads)",
           raises="triton.runtime.errors.OutOfResources", says="Metal allows at most 32 warps per threadgroup")
def test_num_warps_64(mps_driver, bad):
    x, y = _inputs()
    with bad.expect():
        shifted_copy[(2,)](x, y, 100, 0, BLOCK=64, num_warps=64)
    _copy_ok()


@triton.jit
def histogram(x_ptr, h_ptr, n, BINS: tl.constexpr, B: tl.constexpr):
    # tl.histogram keeps its BINS counters in threadgroup memory (4 bytes each) while it counts;
    # unlike conversions, reductions and dot staging, they cannot be done in rounds.
    offs = tl.arange(0, B)
    h = tl.histogram(tl.load(x_ptr + offs, mask=offs < n, other=0), BINS, mask=offs < n)
    tl.store(h_ptr + tl.arange(0, BINS), h)


@bad_input("threadgroup memory over 32 KiB (Triton)", given="tl.histogram with 16384 bins (64 KiB of counters)",
           raises="triton.runtime.errors.OutOfResources", says="bytes of threadgroup memory at once")
def test_threadgroup_memory_over_limit(mps_driver, bad):
    x = torch.randint(0, 4096, (64,), dtype=torch.int32)
    h = torch.full((16384,), -1, dtype=torch.int32)
    with bad.expect() as info:
        histogram[(1,)](x, h, 50, BINS=16384, B=64)
    assert info.value.required == 65536 and info.value.limit == 32768 and "histogram" in info.value.name
    assert "tt.histogram" in str(info.value)  # names the op (and the kernel and line)
    h = torch.full((4096,), -1, dtype=torch.int32)
    histogram[(1,)](x, h, 50, BINS=4096, B=64)  # 16 KiB of counters fit
    assert torch.equal(h, torch.bincount(x[:50], minlength=4096).to(torch.int32))


@bad_input("huge block", given="BLOCK=2**20 (Triton's largest) with num_warps=4: 8192 elements per thread",
           raises="triton_mps.compiler.errors.CompilationError",
           says="puts 8192 elements in each of the 128 threads (num_warps=4); the mps backend allows at most 1024")
def test_huge_block(mps_driver, bad):
    # Rejected before any MSL is written (the unrolled MSL would take minutes to compile;
    # the limit and its measurements: compiler/driver.py MAX_ELEMENTS_PER_THREAD).
    x, y = _inputs()
    with bad.expect() as info:
        shifted_copy[(1,)](x, y, 100, 0, BLOCK=2**20)
    msg = str(info.value)
    assert "kernel 'shifted_copy'" in msg and "use a smaller block (at most 131072 elements" in msg
    assert "test_triton_inputs.py:" in msg  # the Python line of the tensor
    _copy_ok()
