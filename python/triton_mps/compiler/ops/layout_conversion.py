"""ttg.convert_layout and Triton's immutable shared-memory buffers (local_alloc/local_load),
lowered as register mappings or exchanges through threadgroup memory (compiler/scratch.py)."""

from __future__ import annotations

from ..ir import Op, Value
from ..lowering import STAGES_FROM_SOURCE, LoweringContext, lowers
from ..scratch import remap, row_major


def staged_by_users(ctx: LoweringContext, v: Value) -> bool:
    """Every user of v reads it only through the source of its conversion (lowering hooks)."""
    return bool(v.users) and len(v.users) == v.uses and all(
        any(hook(ctx, user, v) for hook in STAGES_FROM_SOURCE) for user in v.users)


@lowers("ttg.convert_layout")
def convert_layout(ctx: LoweringContext, op: Op):
    src, dst = op.operands[0], op.results[0]
    if staged_by_users(ctx, dst):
        ctx.e.comment(f"{ctx.hint(dst, 'cvt')}: not converted (its users read {ctx.hint(src, 'the source')})")
        return
    shape = ctx.layout(src).shape
    remap(ctx, src, dst, lambda c: c, lambda c: row_major(shape, c), ctx.hint(dst, "cvt"))


# Triton's reduce_data_duplication pass wraps layout changes (e.g. into dot-operand layouts) in
# an immutable shared-memory buffer: `%m = ttg.local_alloc %t` then `%x = ttg.local_load %m`.
# That pair is exactly a layout conversion of %t, which is how it is lowered (register mapping
# when threads already hold the elements, else threadgroup memory). Any other use of the buffer
# (mutable allocs, local_store, subviews) is not supported yet and raises.
@lowers("ttg.local_alloc")
def local_alloc(ctx: LoweringContext, op: Op):
    if not op.operands:
        ctx.error(op, "a mutable shared-memory allocation (ttg.local_alloc without a value) is not supported")
    ctx.state.memdesc_sources[op.results[0].id] = op.operands[0]
    ctx.bind(op.results[0], ["0"])  # no MSL value of its own: loads read the source tensor


@lowers("ttg.local_load")
def local_load(ctx: LoweringContext, op: Op):
    src = ctx.state.memdesc_sources.get(op.operands[0].id)
    if src is None:
        ctx.error(op, "ttg.local_load from a buffer that is not an immutable ttg.local_alloc of a tensor")
    if len(op.operands) > 1:
        ctx.error(op, "ttg.local_load with a token operand is not supported")
    if staged_by_users(ctx, op.results[0]):
        ctx.e.comment(f"{ctx.hint(op.results[0], 'lld')}: not converted (its users read the stored tensor)")
        return
    shape = ctx.layout(src).shape
    remap(ctx, src, op.results[0], lambda c: c, lambda c: row_major(shape, c), ctx.hint(op.results[0], "lld"))


@lowers("ttg.local_dealloc")
def local_dealloc(ctx: LoweringContext, op: Op):
    pass  # nothing was allocated: local_alloc only names its source tensor
