"""Metal limits (threadgroup memory, 31 buffer bindings -> packed scalars), device assert and
print (the debug record buffer), and precise sqrt/div, at the compiler level (TTGIR -> MSL ->
simulator with the strict Metal check)."""

from __future__ import annotations

import io

import numpy as np
import pytest
import triton
import triton.language as tl
import triton_mps
from triton_mps.backend import debug_records
from triton_mps.compiler import CompilationError, abi, compile_ttgir
from ttgir_harness import _backend, _run_ttgir, _run_ttir, compile_kernel, make_ttgir, poison
from wide_kernels import wide_kernel, wide_reference


def _sim():
    return triton_mps.get_device("sim")


# ---- threadgroup memory ----------------------------------------------------------------------

@triton.jit
def transpose(x_ptr, y_ptr, B: tl.constexpr):
    r = tl.arange(0, B)
    x = tl.load(x_ptr + r[:, None] * B + r[None, :])
    tl.store(y_ptr + r[:, None] * B + r[None, :], tl.trans(x))


@pytest.mark.parametrize("block,rounds", [(32, 1), (128, 2), (256, 8)])
def test_shared_reports_threadgroup_bytes(block, rounds):
    sig = {"x_ptr": "*fp32", "y_ptr": "*fp32", "B": "constexpr"}
    mod, ctx = make_ttgir(transpose, sig, {"B": block}, 4)
    cm = compile_ttgir(mod, num_warps=4, signature=sig, constants={"B": block}, kernel_name="transpose", context=ctx)
    # The tile goes through threadgroup memory: whole when it fits, else in rounds within 32 KiB.
    assert cm.shared == min(block * block * 4, 32768)
    assert f"uint4 tmps_smem_words[{cm.shared // 16}]" in cm.msl
    assert (f"in {rounds} rounds of" in cm.msl) == (rounds > 1)


# ---- more than 31 arguments: packed scalars ----------------------------------------------------

_SCALAR_TYPES = [("i8", np.int8), ("i16", np.int16), ("fp16", np.float16), ("i32", np.int32),
                 ("fp32", np.float32), ("i64", np.int64)]


def _wide_signature(n_ptr, n_scalar, types):
    sig = {f"p{j}": "*fp32" for j in range(n_ptr)}
    sig.update({f"s{k}": types[k % len(types)][0] for k in range(n_scalar)})
    sig.update({"n": "i32", "BLOCK": "constexpr"})
    return sig


def _scalar_values(n_scalar, types, rng):
    values = []
    for k in range(n_scalar):
        name, dt = types[k % len(types)]
        if name.startswith("fp"):
            values.append(float(rng.integers(-16, 16)) / 2)  # halves: exact in fp16
        else:
            values.append(int(rng.integers(2, 100 if name == "i8" else 999)))
    return values


@pytest.mark.parametrize("num_warps", [1, 4])
def test_forty_arguments_pack_scalars(rng, num_warps):
    n_ptr, n_scalar = 8, 31  # + n = 40 arguments
    fn = wide_kernel(n_ptr, n_scalar)
    sig = _wide_signature(n_ptr, n_scalar, _SCALAR_TYPES)
    block = 64
    c = compile_kernel(fn, sig, {"BLOCK": block}, num_warps=num_warps)
    cm = c.cm
    assert cm.pack_scalars_at == n_ptr
    assert "struct tmps_args_t" in cm.msl and f"[[buffer({n_ptr})]]" in cm.msl
    assert [a.binding for a in cm.args if a.kind == "pointer"] == list(range(n_ptr))
    assert all(a.binding == -1 for a in cm.args if a.kind == "scalar")
    assert cm.to_metadata()["pack_scalars_at"] == n_ptr

    n = 150
    xs = [rng.integers(-8, 8, size=n).astype(np.float32) for _ in range(n_ptr - 1)]
    out = poison(n, np.float32)
    values = _scalar_values(n_scalar, _SCALAR_TYPES, rng)
    # Scalars as bytes of their exact type: the launcher packs them at natural alignment.
    packed = [np.array(v, dtype=_SCALAR_TYPES[k % len(_SCALAR_TYPES)][1]).tobytes() for k, v in enumerate(values)]
    c.kernel(*xs, out, *packed, np.int32(n).tobytes(), grid=triton.cdiv(n, block), threads=32 * num_warps,
             pack_scalars_at=cm.pack_scalars_at)
    c.kernel.device.synchronize()
    np.testing.assert_array_equal(out, wide_reference(xs, values).astype(np.float32))


def test_thirty_one_arguments_are_not_packed():
    fn = wide_kernel(4, 26)  # + n = 31 bindings: fits
    sig = _wide_signature(4, 26, [("i32", np.int32)])
    mod, ctx = make_ttgir(fn, sig, {"BLOCK": 32}, 1)
    cm = compile_ttgir(mod, num_warps=1, signature=sig, constants={"BLOCK": 32}, kernel_name=fn.__name__, context=ctx)
    assert cm.pack_scalars_at == -1 and "tmps_args_t" not in cm.msl
    assert sorted(a.binding for a in cm.args) == list(range(31))


def test_too_many_pointers_is_an_error_naming_the_kernel():
    fn = wide_kernel(32, 0)  # 32 pointers + n: 32 pointer bindings + the packed struct
    sig = _wide_signature(32, 0, [])
    mod, ctx = make_ttgir(fn, sig, {"BLOCK": 32}, 1)
    with pytest.raises(CompilationError) as e:
        compile_ttgir(mod, num_warps=1, signature=sig, constants={"BLOCK": 32}, kernel_name=fn.__name__, context=ctx)
    msg = str(e.value)
    assert "wide_32_0" in msg and "31" in msg and "argument buffers" in msg


# ---- device assert / print -------------------------------------------------------------------

def compile_debug(fn, signature, constexprs, num_warps=4):
    """Like ttgir_harness.compile_kernel, with debug=True (asserts are kept) as `kernel[grid]`
    compiles with `debug=True`."""
    from triton._C.libtriton import ir
    from triton.compiler.compiler import ASTSource

    backend = _backend()
    opts = backend.parse_options({"num_warps": num_warps, "debug": True})
    src = ASTSource(fn, signature, {(fn.arg_names.index(k),): v for k, v in constexprs.items()})
    ctx = ir.context()
    ir.load_dialects(ctx)
    mod = src.make_ir(backend.target, opts, backend.get_codegen_implementation(opts), {}, ctx)
    _run_ttir(mod, ctx, num_warps)
    _run_ttgir(mod, ctx, num_warps)
    cm = compile_ttgir(mod, num_warps=num_warps, signature=signature, constants=constexprs,
                       kernel_name=fn.__name__, context=ctx)
    return cm, triton_mps.compile_msl(cm.msl, cm.name, _sim())


def run_debug(cm, kernel, *args, grid, num_warps=4):
    """Launch with a fresh record buffer; returns (stdout text, the DeviceAssertionError or None)."""
    words = np.zeros(abi.buffer_words(), dtype=np.uint32)
    words[:] = 0xDEADBEEF  # poisoned: only records the kernel wrote may be read
    abi.init_header(words)  # the counters and capacities (the launcher sizes it: capacity_for)
    kernel(*args, words, grid=grid, threads=32 * num_warps)
    kernel.device.synchronize()
    out = io.StringIO()
    try:
        debug_records.report(words, cm.debug, cm.name, out=out)
        err = None
    except debug_records.DeviceAssertionError as e:
        err = e
    return out.getvalue(), err


@triton.jit
def checked_scale(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=1.0)
    tl.device_assert(x > 0, "x must be positive")
    assert n < 100000, "n too large"
    tl.store(y_ptr + offs, x * 2, mask=mask)


SCALE_SIG = {"x_ptr": "*fp32", "y_ptr": "*fp32", "n": "i32", "BLOCK": "constexpr"}


@pytest.mark.parametrize("num_warps", [1, 2, 4, 8])
def test_assert_passes_and_fails(rng, num_warps):
    cm, k = compile_debug(checked_scale, SCALE_SIG, {"BLOCK": 128}, num_warps)
    assert cm.debug["binding"] == 3 and {s["kind"] for s in cm.debug["sites"]} == {"assert"}
    messages = [s["message"] for s in cm.debug["sites"]]
    # debug=True also adds Triton's integer-overflow checks (sanitize_overflow) as asserts.
    assert "x must be positive" in messages and "n too large" in messages
    n = 300
    x = rng.random(n, dtype=np.float32) + 0.5
    y = poison(n, np.float32)
    text, err = run_debug(cm, k, x, y, n, grid=3, num_warps=num_warps)
    assert err is None and text == ""
    np.testing.assert_array_equal(y, x * 2)

    x[[5, 211, 212]] = -1.0
    text, err = run_debug(cm, k, x, y, n, grid=3, num_warps=num_warps)
    assert isinstance(err, AssertionError)
    msg = str(err)
    assert "checked_scale" in msg and "x must be positive" in msg
    assert f"test_limits_debug.py:{err.line}" in msg and err.line > 0
    assert "program (0, 0, 0), element (5)" in msg and "3 failing elements" in msg
    assert err.failures == 3


def test_scalar_assert_statement(rng):
    cm, k = compile_debug(checked_scale, SCALE_SIG, {"BLOCK": 64}, 2)
    n = 200000
    x = np.ones(64, dtype=np.float32)
    y = poison(64, np.float32)
    _, err = run_debug(cm, k, x, y, n, grid=1, num_warps=2)  # the kernel reads only 64 elements
    assert err is not None and "n too large" in str(err) and err.failures == 1  # one record per program


@triton.jit
def printer(x_ptr, i_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    i = tl.load(i_ptr + offs)
    tl.device_print("x", x)
    tl.device_print("pair", i, n)
    tl.device_print("hex", i, hex=True)
    tl.static_print("compile time only", BLOCK)


def test_device_print_records(rng):
    block = 8
    cm, k = compile_debug(printer, {"x_ptr": "*fp32", "i_ptr": "*i32", "n": "i32", "BLOCK": "constexpr"},
                          {"BLOCK": block}, 2)
    x = np.array([0.5, -1.25, 3.0, 1e-3, 7.0, -0.0, 2.5, 100.0], dtype=np.float32)
    i = np.array([-3, 0, 1, 2, 255, -1, 7, 42], dtype=np.int32)
    text, err = run_debug(cm, k, x, i, 77, grid=(2, 1, 1), num_warps=2)
    assert err is None
    lines = text.splitlines()
    expected = []
    for pid in range(2):
        # Triton's format: floats as %f, "prefix: (operand n) value" with several operands
        expected += [f"pid ({pid}, 0, 0) idx ({j}) x: {float(v):f}" for j, v in enumerate(x)]
        expected += [f"pid ({pid}, 0, 0) idx ({j}) pair: (operand 0) {v}" for j, v in enumerate(i)]
        expected += [f"pid ({pid}, 0, 0) idx () pair: (operand 1) 77"] * 64  # a scalar: once per thread
        expected += [f"pid ({pid}, 0, 0) idx ({j}) hex: 0x{int(v) & 0xffffffff:08x}" for j, v in enumerate(i)]
    assert lines == expected  # once per element: duplicated lanes (8 elements, 64 threads) stay silent


@triton.jit
def printer64(x_ptr, BLOCK: tl.constexpr):
    tl.device_print("d", tl.load(x_ptr + tl.arange(0, BLOCK)))


def test_device_print_float64():
    """Software float64 values print as doubles (their bits travel unchanged)."""
    cm, k = compile_debug(printer64, {"x_ptr": "*fp64", "BLOCK": "constexpr"}, {"BLOCK": 4}, 1)
    x = np.array([0.1, -2.0 ** -1074, 1e300, np.inf])
    text, err = run_debug(cm, k, x.view(np.uint64), grid=(1, 1, 1), num_warps=1)  # the kernel's ulong*
    assert err is None
    assert text.splitlines() == [f"pid (0, 0, 0) idx ({j}) d: {v:f}" for j, v in enumerate(x)]


def test_kernel_without_debug_ops_has_no_debug_buffer():
    c = compile_kernel(transpose, {"x_ptr": "*fp32", "y_ptr": "*fp32", "B": "constexpr"}, {"B": 16}, 1)
    assert c.cm.debug is None and "tmps_dbg" not in c.msl


@triton.jit(noinline=True)
def _noisy(x):
    tl.device_print("inside", x)
    tl.device_assert(x > 0, "x must be positive in the callee")
    return x * 2


@triton.jit
def calls_noisy(x_ptr):
    tl.store(x_ptr, _noisy(_noisy(tl.load(x_ptr))))


def test_print_and_assert_in_noinline_function():
    """The callee gets the debug buffer: its print and assert report from every call."""
    cm, k = compile_debug(calls_noisy, {"x_ptr": "*fp32"}, {}, 1)
    assert sum(s["kind"] == "print" for s in cm.debug["sites"]) == 1  # one callee, emitted once
    x = np.array([1.5], dtype=np.float32)
    text, err = run_debug(cm, k, x, grid=(2, 1, 1), num_warps=1)
    assert err is None
    lines = sorted(text.splitlines())
    # Programs race on x[0]; each calls twice, so each prints its input and that doubled, a
    # scalar: once per thread (32).
    assert len(lines) == 128 and all(ln.startswith("pid (") and " inside: " in ln for ln in lines)
    assert sorted(ln.split("(")[1].split(")")[0] for ln in lines) == ["0, 0, 0"] * 64 + ["1, 0, 0"] * 64
    x = np.array([-1.0], dtype=np.float32)
    _, err = run_debug(cm, k, x, grid=(1, 1, 1), num_warps=1)
    assert err is not None and "x must be positive in the callee" in str(err) and err.failures == 2


# ---- precise sqrt / div ----------------------------------------------------------------------

@triton.jit
def precise(a_ptr, b_ptr, s_ptr, d_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    a = tl.load(a_ptr + offs, mask=mask, other=1.0)
    b = tl.load(b_ptr + offs, mask=mask, other=1.0)
    tl.store(s_ptr + offs, tl.sqrt_rn(a), mask=mask)
    tl.store(d_ptr + offs, tl.div_rn(a, b), mask=mask)


def _wide_range_floats(rng, n):
    """Random float32 bit patterns: every exponent (denormals included), plus special values."""
    bits = rng.integers(0, 2**32, size=n, dtype=np.uint64).astype(np.uint32)
    x = bits.view(np.float32).copy()
    x[np.isnan(x)] = 1.5
    x[:8] = [0.0, -0.0, np.inf, -np.inf, 1e-45, 3.4e38, 1.0, 2.0]
    return x


@pytest.mark.parametrize("num_warps", [1, 4])
def test_sqrt_rn_div_rn_are_ieee_exact(rng, num_warps):
    sig = {"a_ptr": "*fp32", "b_ptr": "*fp32", "s_ptr": "*fp32", "d_ptr": "*fp32", "n": "i32", "BLOCK": "constexpr"}
    c = compile_kernel(precise, sig, {"BLOCK": 256}, num_warps=num_warps)
    assert "precise::sqrt" in c.msl and "precise::divide" in c.msl
    n = 5000
    a = np.abs(_wide_range_floats(rng, n))
    b = _wide_range_floats(rng, n)
    s, d = poison(n, np.float32), poison(n, np.float32)
    c(a, b, s, d, n, grid=triton.cdiv(n, 256))
    with np.errstate(all="ignore"):
        want_s = np.sqrt(a)
        want_d = np.divide(a, b)  # numpy float32 ops are correctly rounded
    np.testing.assert_array_equal(s.view(np.uint32), want_s.view(np.uint32))
    same = (d.view(np.uint32) == want_d.view(np.uint32)) | (np.isnan(d) & np.isnan(want_d))
    assert same.all(), f"{(~same).sum()} quotients differ, e.g. {a[~same][:3]} / {b[~same][:3]}"
