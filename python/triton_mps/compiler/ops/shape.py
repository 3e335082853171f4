"""Shape ops: broadcast, expand_dims, reshape, trans, join, split, cat (layout-driven)."""

from __future__ import annotations

from ..ir import Op
from ..lowering import LoweringContext, lowers
from ..scratch import remap, row_major, through_scratch
from ..types import TensorType


@lowers("tt.broadcast")
def broadcast(ctx: LoweringContext, op: Op):
    src, dst = op.operands[0], op.results[0]
    if not isinstance(src.type, TensorType):
        ctx.bind(dst, ctx.expr(src))
        return
    sshape = src.type.shape
    keep = [s != 1 for s in sshape]
    project = lambda c: tuple(x if k else 0 for x, k in zip(c, keep, strict=True))  # noqa: E731
    remap(ctx, src, dst, project,
          lambda c: row_major(sshape, [x if k else "0u" for x, k in zip(c, keep, strict=True)]), ctx.hint(dst, "bc"))


@lowers("tt.expand_dims")
def expand_dims(ctx: LoweringContext, op: Op):
    src, dst = op.operands[0], op.results[0]
    axis = op.int_attr("axis")
    sshape = src.type.shape
    project = lambda c: tuple(x for i, x in enumerate(c) if i != axis)  # noqa: E731
    remap(ctx, src, dst, project,
          lambda c: row_major(sshape, [x for i, x in enumerate(c) if i != axis]), ctx.hint(dst, "ed"))


def _linear_to_coord(shape, lin: int) -> tuple:
    out = []
    for s in reversed(shape):
        out.append(lin % s)
        lin //= s
    return tuple(reversed(out))


def _coord_to_linear(shape, c) -> int:
    lin = 0
    for s, x in zip(shape, c, strict=True):
        lin = lin * s + x
    return lin


@lowers("tt.reshape")
def reshape(ctx: LoweringContext, op: Op):
    src, dst = op.operands[0], op.results[0]
    sshape, dshape = src.type.shape, dst.type.shape
    pow2 = all(s & (s - 1) == 0 for s in list(sshape) + list(dshape))
    # Row-major reshape of power-of-two shapes is a relabelling of index bits: XOR-linear.
    project = (lambda c: _linear_to_coord(sshape, _coord_to_linear(dshape, c))) if pow2 else None
    remap(ctx, src, dst, project, lambda c: row_major(dshape, c), ctx.hint(dst, "rs"))


@lowers("tt.trans")
def trans(ctx: LoweringContext, op: Op):
    src, dst = op.operands[0], op.results[0]
    order = op.attrs.get("order")
    if order is None:
        ctx.error(op, "cannot read the permutation of tt.trans")
    sshape = src.type.shape

    def project(c):
        s = [0] * len(c)
        for i, o in enumerate(order):
            s[o] = c[i]
        return tuple(s)

    def src_index(c):
        s = [""] * len(c)
        for i, o in enumerate(order):
            s[o] = c[i]
        return row_major(sshape, s)

    remap(ctx, src, dst, project, src_index, ctx.hint(dst, "tr"))


def _gather_many(ctx: LoweringContext, op: Op, sources, dst, index_fn, hint):
    """dst reg r = element index_fn(dst coord exprs) of the sources laid out one after another
    in threadgroup memory (source k at offset k * numel(source))."""
    n = sources[0].type.numel
    through_scratch(ctx, [(s, k * n) for k, s in enumerate(sources)], n * len(sources), dst,
                    lambda r, c: index_fn(c), hint)


def _threads_match(full, part) -> bool:
    """full's lane/warp bases, without their last dim (which must be 0), equal part's."""
    last = full.rank - 1
    if len(full.lane_bases) != len(part.lane_bases) or len(full.warp_bases) != len(part.warp_bases):
        return False
    for fb, pb in zip(full.lane_bases + full.warp_bases, part.lane_bases + part.warp_bases, strict=True):
        if fb[last] != 0 or tuple(fb[:-1]) != tuple(pb):
            return False
    return True


@lowers("tt.join")
def join(ctx: LoweringContext, op: Op):
    a, b = op.operands
    dst = op.results[0]
    dlay, alay = ctx.layout(dst), ctx.layout(a)
    last = dlay.rank - 1
    if _threads_match(dlay, alay) and ctx.layout(b).same_as(alay):
        exprs = []
        for r in range(dlay.num_regs):
            rc = dlay.reg_coord(r)
            sr = alay.find_register(tuple(rc[:-1]))
            if sr is None:
                break
            exprs.append(ctx.expr(a if rc[last] == 0 else b, sr))
        else:
            ctx.bind(dst, exprs)
            return
    n = a.type.numel
    sshape = a.type.shape
    _gather_many(ctx, op, [a, b], dst,
                 lambda c: f"({c[last]}) * {n}u + " + row_major(sshape, c[:-1]), ctx.hint(dst, "join"))


@lowers("tt.split")
def split(ctx: LoweringContext, op: Op):
    (src,) = op.operands
    slay = ctx.layout(src)
    sshape = src.type.shape
    for k, dst in enumerate(op.results):
        dlay = ctx.layout(dst)
        if _threads_match(slay, dlay):
            exprs = [slay.find_register(tuple(dlay.reg_coord(r)) + (k,)) for r in range(dlay.num_regs)]
            if None not in exprs:
                ctx.bind(dst, [ctx.expr(src, sr) for sr in exprs])
                continue
        remap(ctx, src, dst, None, lambda c, k=k: row_major(sshape, list(c) + [f"{k}u"]), ctx.hint(dst, "split"))


@lowers("tt.cat")
def cat(ctx: LoweringContext, op: Op):
    a, b = op.operands
    dst = op.results[0]
    dshape = dst.type.shape
    # Concatenation along dim 0 in row-major order: a's elements then b's.
    _gather_many(ctx, op, [a, b], dst, lambda c: row_major(dshape, c), ctx.hint(dst, "cat"))


@lowers("tt.unsplat")
def unsplat(ctx: LoweringContext, op: Op):
    """The one element of a single-element tensor as a scalar: every thread holds it (a
    one-element layout maps every lane and warp to element 0)."""
    src = op.operands[0]
    if ctx.layout(src).num_regs < 1 or src.type.numel != 1:
        ctx.error(op, f"tt.unsplat of a tensor of {src.type.numel} elements (expected 1)")
    ctx.define(op.results[0], ctx.expr(src, 0), hint=ctx.hint(op.results[0], "elt"))
