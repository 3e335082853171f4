"""tt.dot_scaled (tl.dot_scaled): D = (A * 2^scaleA) @ (B * 2^scaleB) + C with microscaled operands.

Operands: e2m1 (two 4-bit values per byte, packed along K unless `*_k_pack = false`, then
along M / N), e4m3 / e5m2 (fp8, our 8-bit storage), bf16 / fp16; an operand may carry an
E8M0 scale tensor ([M, K/SF] for A, [N, K/SF] for B, one byte per SF = K / its last dim
elements along K: 2^(s - 127), 0xff = NaN).

Lowering (generic, any blocked layouts: accelerate-matmul does not run for our target): the
raw operand bytes and the scales go to threadgroup memory, K chunks at a time so that they fit
in 32 KiB; every thread then computes its own D registers, decoding each element exactly to
float (e2m1 and fp8 values and power-of-two scales are exact in float) and accumulating the
exact products in fp32, K in order. Triton's GPU lowerings upcast to bf16/fp16 first; the
products of those upcasts are the same numbers except where bf16/fp16 would underflow (below
2^-133 / 2^-24), so results agree to fp32 accumulation order.
"""

from __future__ import annotations

import math

from ..ir import Op
from ..lowering import LoweringContext, lowers, scratch_limit
from ..mslib import fp8
from ..mslib.registry import use
from ..scratch import scratch_bytes
from ..types import ScalarType, TensorType, elem_of

_FP8_OF = {"e4m3": "f8E4M3FN", "e5m2": "f8E5M2"}


class _Operand:
    """One side (A: idx 0, B: idx 1) of the dot: its value, format, packing and scale."""

    def __init__(self, ctx: LoweringContext, op: Op, value, fmt: str, k_pack: bool, scale, idx: int):
        self.value, self.fmt, self.k_pack, self.scale, self.idx = value, fmt, k_pack, scale, idx
        self.lay = ctx.layout(value)
        self.shape = tuple(value.type.shape)
        self.kd = 1 if idx == 0 else 0  # the K dimension of the stored tensor
        self.od = 1 - self.kd  # M (A) or N (B)
        self.pack = 2 if fmt == "e2m1" else 1
        self.pack_k = self.pack if k_pack else 1  # packing factor along K
        self.pack_o = 1 if k_pack else self.pack  # packing factor along M / N
        t = elem_of(value.type)
        self.msl = ctx.msl_type(value)
        if fmt in ("bf16", "fp16"):
            want = "bfloat" if fmt == "bf16" else "half"
            if self.msl != want:
                ctx.error(op, f"dot_scaled operand of format {fmt} has element type {t}")
        elif isinstance(t, ScalarType) and t.bits != 8:
            ctx.error(op, f"dot_scaled operand of format {fmt} has element type {t} (expected 8-bit)")
        self.ebytes = scratch_bytes(self.msl)

    @property
    def K(self) -> int:
        return self.shape[self.kd] * self.pack_k

    def chunk_bytes(self, kc: int) -> int:
        return self.shape[self.od] * (kc // self.pack_k) * self.ebytes

    def value_expr(self, ctx: LoweringContext, buf: str, kc: int, o: str, kk: str) -> str:
        """Float value of element (o along M/N, kk along the chunk's K) read from the chunk."""
        kcp = kc // self.pack_k
        if self.pack == 2:
            if self.k_pack:
                ko, sel = f"({kk} >> 1)", f"({kk} & 1u)"
                oo = o
            else:
                ko, sel = kk, f"(({o}) & 1u)"
                oo = f"(({o}) >> 1)"
            idx = f"{oo} * {kcp}u + {ko}" if self.idx == 0 else f"{ko} * {self.shape[1]}u + {oo}"
            use(ctx, "tmps_e2m1_to_f32")  # mslib/mx.py
            byte = f"(uint)(uchar){buf}[{idx}]"
            return f"tmps_e2m1_to_f32({sel} != 0u ? ({byte} >> 4) : ({byte} & 15u))"
        idx = f"{o} * {kcp}u + {kk}" if self.idx == 0 else f"{kk} * {self.shape[1]}u + {o}"
        x = f"{buf}[{idx}]"
        if self.fmt in _FP8_OF:
            name, text = fp8.to_f32_helper(fp8.FORMATS[_FP8_OF[self.fmt]])
            ctx.e.helper(name, text)
            return f"{name}((uchar){x})"
        return f"(float){x}"


@lowers("tt.dot_scaled")
def dot_scaled(ctx: LoweringContext, op: Op):
    fa, fb = op.attrs.get("a_elem_type"), op.attrs.get("b_elem_type")
    if fa is None or fb is None:
        ctx.error(op, "cannot read the operand formats of tt.dot_scaled")
    for f in (fa, fb):
        if f not in ("e2m1", "e4m3", "e5m2", "bf16", "fp16"):
            ctx.error(op, f"dot_scaled operand format {f} is not supported by the Metal backend")
    sa, sb = op.attrs["lhs_scale"], op.attrs["rhs_scale"]
    ops_ = list(op.operands)
    if len(ops_) != 3 + sa + sb:
        ctx.error(op, f"tt.dot_scaled with {len(ops_)} operands (scales: lhs {sa}, rhs {sb})")
    # operand order (ODS): a, b, c, then the optional scales (the printed form differs)
    a, b, c = ops_[:3]
    rest = ops_[3:]
    a_scale = rest.pop(0) if sa else None
    b_scale = rest.pop(0) if sb else None
    d = op.results[0]
    if not isinstance(d.type, TensorType) or len(d.type.shape) != 2:
        ctx.error(op, "tt.dot_scaled of rank-3 (batched) tensors is not supported by the Metal backend yet")
    A = _Operand(ctx, op, a, fa, op.attrs.get("lhs_k_pack") is not False, a_scale, 0)
    B = _Operand(ctx, op, b, fb, op.attrs.get("rhs_k_pack") is not False, b_scale, 1)
    M, N = d.type.shape
    K = A.K
    if B.K != K or A.shape[A.od] * A.pack_o != M or B.shape[B.od] * B.pack_o != N:
        ctx.error(op, f"tt.dot_scaled shapes do not agree: {A.shape} ({fa}) x {B.shape} ({fb}) -> {(M, N)}")
    lc, ld = ctx.layout(c), ctx.layout(d)
    if not lc.same_as(ld):
        ctx.error(op, "dot_scaled accumulator and result have different layouts")
    td = elem_of(d.type)
    if not td.is_float:
        ctx.error(op, f"dot_scaled into {td} is not supported")

    # scales: staged whole (one byte each)
    scales = []
    for X, s in ((A, a_scale), (B, b_scale)):
        if s is None:
            scales.append(None)
            continue
        ss = tuple(s.type.shape)
        if len(ss) != 2 or ss[0] != (M if X.idx == 0 else N) or K % ss[1]:
            ctx.error(op, f"dot_scaled scale of shape {ss} does not fit {(M, N, K)}")
        scales.append((s, ss, K // ss[1]))
    scale_bytes = sum(math.prod(x[1]) for x in scales if x is not None)
    scale_bytes = (scale_bytes + 7) // 8 * 8

    # K chunk: the largest divisor of K (even when a side is packed along K) that fits
    step = 2 if (A.pack_k == 2 or B.pack_k == 2) else 1
    kc = K
    while kc >= step and (K % kc or kc % step or
                          scale_bytes + _align(A.chunk_bytes(kc)) + _align(B.chunk_bytes(kc)) > scratch_limit(ctx)):
        kc -= step
    if kc < step:
        ctx.error(op, f"tt.dot_scaled {M}x{N}x{K}: the operands do not fit threadgroup memory even one K "
                      f"column at a time")
    e = ctx.e
    e.comment(f"tt.dot_scaled {M}x{N}x{K} ({fa} x {fb} -> {td}), K chunks of {kc} through threadgroup memory")
    off_a = scale_bytes
    off_b = off_a + _align(A.chunk_bytes(kc))
    ctx.scratch(off_b + _align(B.chunk_bytes(kc)))
    buf_a = f"((threadgroup {A.msl}*)(tmps_smem + {off_a}))"
    buf_b = f"((threadgroup {B.msl}*)(tmps_smem + {off_b}))"
    sbufs, soff = [], 0
    ctx.barrier()
    for entry in scales:
        if entry is None:
            sbufs.append(None)
            continue
        s, ss, sf = entry
        sb_ = f"((threadgroup uchar*)(tmps_smem + {soff}))"
        _stage(ctx, s, sb_, None)
        sbufs.append((sb_, ss, sf))
        soff += math.prod(ss)

    # accumulators: every thread computes all its D registers (duplicates compute the same)
    R = ld.num_regs
    coords = [ctx.coord(ld, r) for r in range(R)]
    accs = []
    for r in range(R):
        name = e.fresh("dacc")
        cv = ctx.expr(c, r)
        e.line(f"float {name} = {cv if elem_of(c.type).name == 'f32' else f'(float){cv}'};")
        accs.append(name)
    for ci in range(K // kc):
        if ci:
            ctx.barrier()
        _stage(ctx, a, buf_a, (A.kd, ci * kc // A.pack_k, kc // A.pack_k))
        _stage(ctx, b, buf_b, (B.kd, ci * kc // B.pack_k, kc // B.pack_k))
        ctx.barrier()
        with e.block(f"for (uint kk = 0u; kk < {kc}u; ++kk)"):
            e.line(f"uint kg = {ci * kc}u + kk;")
            av, bv = {}, {}
            for r in range(R):
                mo, no = coords[r]
                for X, cache, o, sbuf, buf in ((A, av, mo, sbufs[0], buf_a), (B, bv, no, sbufs[1], buf_b)):
                    if o in cache:
                        continue
                    x = X.value_expr(ctx, buf, kc, o, "kk")
                    if sbuf is not None:
                        use(ctx, "tmps_e8m0_to_f32")  # mslib/mx.py
                        sb_, ss, sf = sbuf
                        x = f"({x}) * tmps_e8m0_to_f32({sb_}[({o}) * {ss[1]}u + kg / {sf}u])"
                    nm = e.fresh("av" if X.idx == 0 else "bv")
                    e.line(f"float {nm} = {x};")
                    cache[o] = nm
                e.line(f"{accs[r]} += {av[mo]} * {bv[no]};")
    out = accs if td.name == "f32" else [f"({td.msl()}){x}" for x in accs]
    ctx.define(d, lambda r: out[r], hint=ctx.hint(d, "dsc"))


def _align(n: int) -> int:
    return (n + 15) // 16 * 16


def _stage(ctx: LoweringContext, v, buf: str, chunk) -> None:
    """Owners write v's elements at their row-major index in buf; with chunk = (dim, lo, size)
    only elements whose coordinate along dim is in [lo, lo + size), re-based to the chunk."""
    lay = ctx.layout(v)
    shape = list(v.type.shape)
    owner = ctx.owner_predicate(lay)
    e = ctx.e
    with e.guarded(owner):
        for r in lay.owned_regs():
            cd = ctx.coord(lay, r)
            if chunk is None:
                idx = " + ".join(
                    f"({cd[i]}) * {math.prod(shape[i + 1:])}u" if i < len(shape) - 1 else f"({cd[i]})"
                    for i in range(len(shape)))
                e.line(f"{buf}[{idx}] = (uchar){ctx.expr(v, r)};")
                continue
            dim, lo, size = chunk
            cs = list(shape)
            cs[dim] = size
            rel = list(cd)
            rel[dim] = f"(({cd[dim]}) - {lo}u)"
            idx = " + ".join(f"{rel[i]} * {math.prod(cs[i + 1:])}u" if i < len(cs) - 1 else rel[i]
                             for i in range(len(cs)))
            cond = f"({cd[dim]}) - {lo}u < {size}u"  # unsigned: also false below lo
            e.line(f"if ({cond}) {buf}[{idx}] = {ctx.expr(v, r)};")
