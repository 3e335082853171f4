"""fp16/bf16 atomics (CAS on the containing 32-bit word): add, max, min, xchg, cas; 64-bit errors.

Triton's frontend builds `tt.atomic_rmw` on fp16/bf16 only for add; max/min/xchg come from other
producers (hand-written TTGIR, other frontends). Those tests build the add kernel and change only
the op's kind in the TTGIR text, then parse it back: the rest of the kernel is unchanged.

Values are compared as 16-bit patterns (arrays are passed as uint16 for both types), so signed
zeros and NaNs are checked exactly. Float max/min use IEEE totalOrder on the bits, which is what
Triton's `tl.atomic_max/min` do for fp32/fp64 (see ops/memory.py).
"""

import os
import tempfile

import numpy as np
import pytest
import triton
import triton.language as tl
import triton_mps
from triton_mps.compiler import compile_ttgir
from ttgir_harness import make_ttgir, poison

BLOCK = 128


def _compile(fn, signature, constexprs, num_warps, kind=None):
    """JIT -> TTGIR; if `kind`, the fp16/bf16 `tt.atomic_rmw fadd` becomes `tt.atomic_rmw <kind>`."""
    from triton._C.libtriton import ir

    mod, ctx = make_ttgir(fn, signature, constexprs, num_warps)
    if kind is not None:
        text = mod.str()
        assert text.count("tt.atomic_rmw fadd,") == 1
        fd, path = tempfile.mkstemp(suffix=".ttgir")
        try:
            with os.fdopen(fd, "w") as f:
                f.write(text.replace("tt.atomic_rmw fadd,", f"tt.atomic_rmw {kind},"))
            mod = ir.parse_mlir_module(path, ctx)
        finally:
            os.unlink(path)
        mod.context = ctx
    cm = compile_ttgir(mod, num_warps=num_warps, signature=signature, constants=constexprs, kernel_name=fn.__name__,
                       context=ctx)
    kernel = triton_mps.compile_msl(cm.msl, cm.name, triton_mps.get_device("sim"))

    def run(*args, grid):
        kernel(*args, grid=grid, threads=32 * num_warps)
        kernel.device.synchronize()

    return run


@triton.jit
def rmw_kernel(slots, val_ptr, keep_ptr, old_ptr, n, NB: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    inb = offs < n
    keep = tl.load(keep_ptr + offs, mask=inb, other=0) != 0
    v = tl.load(val_ptr + offs, mask=inb)
    # Many threads on few adjacent slots: pairs of slots share a 32-bit word.
    old = tl.atomic_add(slots + offs % NB, v, mask=inb & keep)
    tl.store(old_ptr + offs, old, mask=inb)


def _key(bits: np.ndarray) -> np.ndarray:
    """IEEE totalOrder as an unsigned key of 16-bit patterns."""
    b = bits.astype(np.uint32)
    return np.where(b & 0x8000, ~b & 0xFFFF, b | 0x8000)


def _to_bits(x: np.ndarray, dtype: str) -> np.ndarray:
    if dtype == "fp16":
        return x.astype(np.float16).view(np.uint16)
    u = x.astype(np.float32).view(np.uint32)
    assert np.all(u & 0xFFFF == 0)  # exactly representable
    return (u >> 16).astype(np.uint16)


def _to_f64(bits: np.ndarray, dtype: str) -> np.ndarray:
    if dtype == "fp16":
        return bits.view(np.float16).astype(np.float64)
    return (bits.astype(np.uint32) << 16).view(np.float32).astype(np.float64)


_SPECIALS = {
    # +0, -0, +inf, -inf, quiet NaN, negative quiet NaN, smallest subnormals, max finite
    "fp16": [0x0000, 0x8000, 0x7C00, 0xFC00, 0x7E00, 0xFE00, 0x0001, 0x8001, 0x7BFF, 0xFBFF],
    "bf16": [0x0000, 0x8000, 0x7F80, 0xFF80, 0x7FC0, 0xFFC0, 0x0001, 0x8001, 0x7F7F, 0xFF7F],
}


def _random_bits(rng, dtype, size):
    """Random non-signalling 16-bit patterns with every special value present."""
    b = rng.integers(0, 1 << 16, size).astype(np.uint16)
    exp_all_ones, quiet = (0x7C00, 0x0200) if dtype == "fp16" else (0x7F80, 0x0040)
    nan = (b & exp_all_ones) == exp_all_ones
    b[nan] |= quiet  # signalling NaNs may be quieted by a plain copy on some targets: not the point here
    specials = np.array(_SPECIALS[dtype], np.uint16)
    b[rng.choice(size, len(specials), replace=False)] = specials
    return b


def _setup(dtype, nb, n, rng, base_off):
    keep = (rng.random(n) < 0.8).astype(np.int32)
    buf = np.zeros(nb + 2, np.uint16)
    slots = buf[base_off:base_off + nb]  # base_off 1: slot 0 is the high half of a word
    assert slots.ctypes.data % 4 == 2 * base_off
    return keep, buf, slots


@pytest.mark.parametrize("base_off", [0, 1])
@pytest.mark.parametrize("num_warps", [1, 4])
@pytest.mark.parametrize("kind", ["max", "min", "exch"])
@pytest.mark.parametrize("dtype", ["fp16", "bf16"])
def test_rmw_bits(dtype, kind, num_warps, base_off):
    nb, n = 6, 1000
    rng = np.random.default_rng()
    sig = {"slots": f"*{dtype}", "val_ptr": f"*{dtype}", "keep_ptr": "*i32", "old_ptr": f"*{dtype}", "n": "i32",
           "NB": "constexpr", "BLOCK": "constexpr"}
    run = _compile(rmw_kernel, sig, {"NB": nb, "BLOCK": BLOCK}, num_warps, kind)
    vals = _random_bits(rng, dtype, n)
    keep, buf, slots = _setup(dtype, nb, n, rng, base_off)
    init = _random_bits(rng, dtype, nb + len(_SPECIALS[dtype]))[:nb]
    slots[:] = init
    guard = buf.copy()
    old = poison(n, np.uint16)
    run(slots, vals, keep, old, n, grid=triton.cdiv(n, BLOCK))
    outside = np.ones(len(buf), bool)
    outside[base_off:base_off + nb] = False
    np.testing.assert_array_equal(buf[outside], guard[outside])  # neighbours of the slots untouched
    for s in range(nb):
        sel = (np.arange(n) % nb == s) & (keep != 0)
        vs, olds = vals[sel], old[sel]
        if kind == "exch":
            # The old values and the final value are a permutation of the initial and new values.
            assert sorted(olds.tolist() + [int(slots[s])]) == sorted(vs.tolist() + [int(init[s])])
            continue
        keys = _key(np.concatenate([[init[s]], vs]))
        best = keys.argmax() if kind == "max" else keys.argmin()
        want = np.concatenate([[init[s]], vs])[best]
        assert _key(slots[s:s + 1])[0] == keys[best], (s, hex(slots[s]), hex(want))
        # Each old value is the slot at some moment: between init and the final value in the order.
        ok, ko, kf = _key(olds), _key(init[s:s + 1])[0], keys[best]
        assert np.all((ok >= ko) & (ok <= kf)) if kind == "max" else np.all((ok <= ko) & (ok >= kf))


def test_max_min_semantics_documented():
    """totalOrder, spelled out on a few pairs (slot value, operand) -> result."""
    cases = {  # fp16 patterns
        "max": [(0x0000, 0x8000, 0x0000), (0x8000, 0x0000, 0x0000), (0x3C00, 0x7E00, 0x7E00),
                (0x7E00, 0x7C00, 0x7E00), (0xFE00, 0xFC00, 0xFC00), (0xBC00, 0x8000, 0x8000)],
        "min": [(0x0000, 0x8000, 0x8000), (0x8000, 0x0000, 0x8000), (0x3C00, 0x7E00, 0x3C00),
                (0xFC00, 0xFE00, 0xFE00), (0x7E00, 0x7C00, 0x7C00), (0xBC00, 0x8000, 0xBC00)],
    }
    sig = {"slots": "*fp16", "val_ptr": "*fp16", "keep_ptr": "*i32", "old_ptr": "*fp16", "n": "i32",
           "NB": "constexpr", "BLOCK": "constexpr"}
    for kind, rows in cases.items():
        nb = len(rows)
        run = _compile(rmw_kernel, sig, {"NB": nb, "BLOCK": BLOCK}, 1, kind)
        slots = np.array([r[0] for r in rows], np.uint16)
        vals = np.array([r[1] for r in rows], np.uint16)
        old = np.zeros(nb, np.uint16)
        run(slots, vals, np.ones(nb, np.int32), old, nb, grid=1)
        np.testing.assert_array_equal(slots, [r[2] for r in rows], err_msg=kind)
        np.testing.assert_array_equal(old, [r[0] for r in rows], err_msg=kind)


@pytest.mark.parametrize("base_off", [0, 1])
@pytest.mark.parametrize("num_warps", [1, 4])
@pytest.mark.parametrize("dtype", ["fp16", "bf16"])
def test_add_exact_chain(dtype, num_warps, base_off):
    """Positive small integers: every sum is exact, so the old values of one slot, sorted, form the
    chain init, init+v1, init+v1+v2, ... and the final value is the exact total."""
    nb, n = 8, 1000
    rng = np.random.default_rng()
    sig = {"slots": f"*{dtype}", "val_ptr": f"*{dtype}", "keep_ptr": "*i32", "old_ptr": f"*{dtype}", "n": "i32",
           "NB": "constexpr", "BLOCK": "constexpr"}
    run = _compile(rmw_kernel, sig, {"NB": nb, "BLOCK": BLOCK}, num_warps)
    hi = 3 if dtype == "fp16" else 2  # totals <= 125 * hi + 4: exact (fp16 to 2048, bf16 to 256)
    vals = rng.integers(1, hi + 1, n).astype(np.float64)
    init = rng.integers(0, 5, nb).astype(np.float64)
    keep, buf, slots = _setup(dtype, nb, n, rng, base_off)
    slots[:] = _to_bits(init, dtype)
    old = poison(n, np.uint16)
    run(slots, _to_bits(vals, dtype), keep, old, n, grid=triton.cdiv(n, BLOCK))
    got, olds = _to_f64(slots, dtype), _to_f64(old, dtype)
    for s in range(nb):
        sel = (np.arange(n) % nb == s) & (keep != 0)
        assert got[s] == init[s] + vals[sel].sum()
        order = np.argsort(olds[sel], kind="stable")
        chain = olds[sel][order]
        steps = vals[sel][order]
        assert chain[0] == init[s]
        np.testing.assert_array_equal(chain[1:], chain[:-1] + steps[:-1])
        assert chain[-1] + steps[-1] == got[s]


@triton.jit
def cas_kernel(ptr, cmp_ptr, val_ptr, old_ptr, NB: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    c = tl.load(cmp_ptr + offs)
    v = tl.load(val_ptr + offs)
    old = tl.atomic_cas(ptr + offs % NB, c, v)
    tl.store(old_ptr + offs, old)


@pytest.mark.parametrize("num_warps", [1, 4])
@pytest.mark.parametrize("dtype", ["fp16", "bf16"])
def test_cas_bits(dtype, num_warps):
    """No contention (NB = number of threads): cas compares 16-bit patterns, so -0.0 does not
    match +0.0 and a NaN matches the same NaN; the neighbouring half is never disturbed."""
    n = 4 * BLOCK
    rng = np.random.default_rng()
    sig = {"ptr": f"*{dtype}", "cmp_ptr": f"*{dtype}", "val_ptr": f"*{dtype}", "old_ptr": f"*{dtype}",
           "NB": "constexpr", "BLOCK": "constexpr"}
    run = _compile(cas_kernel, sig, {"NB": n, "BLOCK": BLOCK}, num_warps)
    pool = np.array(_SPECIALS[dtype][:6] + [0x3C00 if dtype == "fp16" else 0x3F80], np.uint16)
    cur = pool[rng.integers(0, len(pool), n)]
    cmp = pool[rng.integers(0, len(pool), n)]
    val = rng.integers(0x1000, 0x3000, n).astype(np.uint16)
    before = cur.copy()
    old = poison(n, np.uint16)
    run(cur, cmp, val, old, grid=n // BLOCK)
    np.testing.assert_array_equal(old, before)
    np.testing.assert_array_equal(cur, np.where(before == cmp, val, before))
    assert np.any(before == cmp) and np.any(before != cmp)


@pytest.mark.parametrize("num_warps", [1, 4])
@pytest.mark.parametrize("dtype", ["fp16", "bf16"])
def test_cas_contention(dtype, num_warps):
    """Every thread tries to claim one of few adjacent slots (all start at +0.0) with its own value:
    exactly one claim per slot succeeds, the others see the winner's value."""
    nb, n = 5, 4 * BLOCK
    sig = {"ptr": f"*{dtype}", "cmp_ptr": f"*{dtype}", "val_ptr": f"*{dtype}", "old_ptr": f"*{dtype}",
           "NB": "constexpr", "BLOCK": "constexpr"}
    run = _compile(cas_kernel, sig, {"NB": nb, "BLOCK": BLOCK}, num_warps)
    slots = np.zeros(nb + 1, np.uint16)
    slots[nb] = 0xBEEF  # shares a word with the last slot: must survive
    val = (np.random.default_rng().permutation(n) + 0x1000).astype(np.uint16)  # unique, non-zero
    old = poison(n, np.uint16)
    run(slots, np.zeros(n, np.uint16), val, old, grid=n // BLOCK)
    assert slots[nb] == 0xBEEF
    for s in range(nb):
        sel = np.arange(n) % nb == s
        winners = np.flatnonzero(old[sel] == 0)
        assert len(winners) == 1
        assert slots[s] == val[sel][winners[0]]
        assert np.all(np.delete(old[sel], winners) == slots[s])


@triton.jit
def add64_kernel(ptr, val_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.atomic_add(ptr + offs, tl.load(val_ptr + offs))


@triton.jit
def max64_kernel(ptr, val_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.atomic_max(ptr + offs, tl.load(val_ptr + offs))


@pytest.mark.parametrize("fn,dtype", [(add64_kernel, "i64"), (add64_kernel, "u64"), (max64_kernel, "u64"),
                                      (max64_kernel, "i64")])
def test_64bit_atomics_use_the_lock_table(fn, dtype):
    """64-bit atomics compile to the lock-table helpers (run: tests/triton/language/test_atomics64.py),
    with the table as a hidden binding after the arguments."""
    sig = {"ptr": f"*{dtype}", "val_ptr": f"*{dtype}", "BLOCK": "constexpr"}
    mod, ctx = make_ttgir(fn, sig, {"BLOCK": 64}, 1)
    cm = compile_ttgir(mod, num_warps=1, signature=sig, constants={"BLOCK": 64}, kernel_name=fn.__name__,
                       context=ctx)
    assert cm.locks == {"binding": 2, "words": 1024}
    assert "device atomic_uint* tmps_locks [[buffer(2)]]" in cm.msl


@pytest.mark.parametrize("kind", ["exch", "fadd"])
def test_rmw_stress(kind):
    """Many programs (run on several OS threads by the simulator) on 2 adjacent fp16 slots: a lost
    update would break the permutation of exchanged values / the exact count."""
    nb, n = 2, 64 * 1024
    sig = {"slots": "*fp16", "val_ptr": "*fp16", "keep_ptr": "*i32", "old_ptr": "*fp16", "n": "i32",
           "NB": "constexpr", "BLOCK": "constexpr"}
    run = _compile(rmw_kernel, sig, {"NB": nb, "BLOCK": BLOCK}, 4, None if kind == "fadd" else kind)
    rng = np.random.default_rng()
    if kind == "exch":
        vals = _random_bits(rng, "fp16", n)
    else:  # adding +0.0 or 2**-14 (the smallest normal): any total up to 2048 * 2**-14 is exact
        vals = _to_bits(np.where(rng.random(n) < 1 / 32, 2.0**-14, 0.0), "fp16")
    slots = np.zeros(nb, np.uint16)
    old = poison(n, np.uint16)
    run(slots, vals, np.ones(n, np.int32), old, n, grid=n // BLOCK)
    for s in range(nb):
        vs, olds = vals[s::nb], old[s::nb]
        assert kind == "exch" or np.count_nonzero(vs) < 2048
        if kind == "exch":
            assert sorted(olds.tolist() + [int(slots[s])]) == sorted(vs.tolist() + [0])
        else:
            assert _to_f64(slots[s:s + 1], "fp16")[0] == _to_f64(vs, "fp16").sum()
