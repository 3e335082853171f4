"""compiler/linear_layouts.py computes the same linear layouts as Triton's own conversion.

We compute layouts from the encoding text so that the compiler never calls libtriton's
Gluon-layout bindings (their C++ static makes every process print leak reports at exit; see
tests/triton/runtime/test_clean_exit.py). The register numbering must match Triton's bit for bit, so
this compares both on a seeded random corpus of blocked, slice (nested too), FMA dot-operand
and linear encodings, with shapes smaller than, equal to and larger than each layout's tile
(linear ones: equal or smaller, as after a reduction to a size-1 dimension; upstream test_flip
found that case wrong).
Triton's side runs in a subprocess: calling it would make this pytest process leak-report.
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
import textwrap

from triton_mps.compiler.linear_layouts import layout_of


def _split(total: int, rank: int, rng: random.Random) -> list[int]:
    parts = [1] * rank
    for _ in range(total.bit_length() - 1):
        parts[rng.randrange(rank)] *= 2
    return parts


def _blocked(rank: int, rng: random.Random) -> str:
    spt = [rng.choice([1, 1, 2, 4, 8]) for _ in range(rank)]
    tpw = _split(32, rank, rng)
    wpc = _split(rng.choice([1, 2, 4, 8]), rank, rng)
    order = list(range(rank))
    rng.shuffle(order)
    return (f"#ttg.blocked<{{sizePerThread = {spt}, threadsPerWarp = {tpw}, warpsPerCTA = {wpc}, "
            f"order = {order}}}>")


def _shape(rank: int, rng: random.Random) -> list[int]:
    return [1 << rng.randrange(0, 8 if rank == 1 else 6) for _ in range(rank)]


def _corpus(n: int, seed: int = 1234) -> list[tuple[str, list[int]]]:
    rng = random.Random(seed)
    out = []
    for i in range(n):
        kind = i % 5
        if kind in (0, 1):
            rank = rng.randint(1, 3)
            out.append((_blocked(rank, rng), _shape(rank, rng)))
        elif kind == 2:  # slice of blocked, sometimes a slice of a slice
            rank = rng.randint(2, 3)
            enc, dims = _blocked(rank, rng), rank
            for _ in range(rng.randint(1, rank - 1)):
                dim = rng.randrange(dims)
                enc, dims = f"#ttg.slice<{{dim = {dim}, parent = {enc}}}>", dims - 1
            out.append((enc, _shape(dims, rng)))
        elif kind == 3:  # FMA dot operand
            rank = rng.randint(2, 3)
            out.append((f"#ttg.dot_op<{{opIdx = {rng.randint(0, 1)}, parent = {_blocked(rank, rng)}}}>",
                        _shape(rank, rng)))
        else:  # linear: the shape's bases shuffled over 5 lane, 3 warp and the register bits
            rank = rng.randint(1, 2)
            shape = _shape(rank, rng)
            shape[0] = max(shape[0], 2)
            coords = [[1 << b if d == dd else 0 for dd in range(rank)] for d in range(rank)
                      for b in range(shape[d].bit_length() - 1)]
            coords += [[0] * rank] * rng.randint(0, 8)  # broadcast bits
            rng.shuffle(coords)
            lane, warp, reg = (coords[:5] + [[0] * rank] * 5)[:5], (coords[5:8] + [[0] * rank] * 3)[:3], coords[8:]
            fmt = lambda v: "[" + ", ".join("[" + ", ".join(map(str, c)) + "]" for c in v) + "]"  # noqa: E731
            if rng.random() < 0.5:  # a smaller tensor (a size-1 dim after a reduction): bases past it
                shape = [1 if rng.random() < 0.3 else max(1, s >> rng.randint(0, 2)) for s in shape]
            out.append((f"#ttg.linear<{{register = {fmt(reg)}, lane = {fmt(lane)}, warp = {fmt(warp)}, "
                        f"block = []}}>", shape))
    return out


TRITON_SIDE = textwrap.dedent(r'''
    import json, sys, tempfile
    from triton._C.libtriton import ir, gluon_ir
    corpus = json.load(sys.stdin)
    args = ", ".join(f"%a{i}: tensor<{'x'.join(map(str, shape))}xf32, {enc}>"
                     for i, (enc, shape) in enumerate(corpus))
    text = ('module attributes {"ttg.num-ctas" = 1 : i32, "ttg.num-warps" = 8 : i32, '
            '"ttg.threads-per-warp" = 32 : i32} {\n'
            f"  tt.func public @k({args}) {{\n    tt.return\n  }}\n}}\n")
    with tempfile.NamedTemporaryFile("w", suffix=".mlir", delete=False) as f:
        f.write(text)
    ctx = ir.context(); ir.load_dialects(ctx)
    mod = ir.parse_mlir_module(f.name, ctx)
    ops = []
    mod.walk(lambda o: ops.append(o))
    block = next(o for o in ops if o.get_name() == "tt.return").get_block()
    b = gluon_ir.GluonOpBuilder(ctx)
    out = []
    for i, (enc, shape) in enumerate(corpus):
        ll = b.to_linear_layout(b.get_gluon_layout_from_tensor(block.get_argument(i))._to_ir(b), shape)
        out.append([ll.reg_bases, ll.lane_bases, ll.warp_bases])
    print(json.dumps(out))
''')


def test_layouts_match_tritons_own_conversion():
    corpus = _corpus(400)
    r = subprocess.run([sys.executable, "-c", TRITON_SIDE], input=json.dumps(corpus), capture_output=True,
                       text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    theirs = json.loads(r.stdout)
    assert len(theirs) == len(corpus)
    kinds: dict[str, int] = {}
    for (enc, shape), (reg, lane, warp) in zip(corpus, theirs, strict=True):
        ours = layout_of(enc, tuple(shape))
        assert ours is not None, enc
        got = ([list(b) for b in ours.reg_bases], [list(b) for b in ours.lane_bases],
               [list(b) for b in ours.warp_bases])
        assert got == (reg, lane, warp), f"{enc} {shape}"
        kind = enc.split("<", 1)[0]
        kinds[kind] = kinds.get(kind, 0) + 1
    assert kinds.keys() == {"#ttg.blocked", "#ttg.slice", "#ttg.dot_op", "#ttg.linear"}, kinds


def test_encodings_not_computed_here_are_left_to_triton():
    shared = "#ttg.swizzled_shared<{vec = 1, perPhase = 1, maxPhase = 1, order = [0]}>"
    assert layout_of(shared, (16,)) is None
    mma = "#ttg.nvidia_mma<{versionMajor = 2, versionMinor = 0, warpsPerCTA = [4, 1], instrShape = [16, 8]}>"
    assert layout_of(mma, (16, 16)) is None


def test_linear_layout_on_a_larger_shape_is_left_to_triton():
    """Registers repeating a linear layout over a larger tensor follow Triton's rep order: not
    computed here."""
    enc = "#ttg.linear<{register = [[1]], lane = [[2], [4], [8], [16], [32]], warp = [], block = []}>"
    assert layout_of(enc, (64, )) is not None
    assert layout_of(enc, (128, )) is None
