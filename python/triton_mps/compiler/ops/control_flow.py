"""Structured control flow: scf.for / scf.if / scf.while, tt.return, noinline tt.call.

Loop-carried values and if/while results become mutable MSL variables declared before the
statement; region terminators assign them (as parallel assignments)."""

from __future__ import annotations

from ..ir import Op
from ..lowering import LoweringContext, function_body, lowers
from ..types import TensorType


@lowers("tt.return")
def ret(ctx: LoweringContext, op: Op):
    if ctx.return_handler is None:
        ctx.error(op, "return outside a function")
    ctx.return_handler(ctx, op)


def _types(ctx, values):
    out = []
    for v in values:
        out += [ctx.msl_type(v)] * ctx.num_regs(v)
    return out


def _flat(lists):
    return [x for lst in lists for x in lst]


@lowers("scf.for")
def scf_for(ctx: LoweringContext, op: Op):
    lb, ub, step = op.operands[:3]
    inits = op.operands[3:]
    body = op.regions[0].blocks[0]
    iv_t = ctx.msl_type(lb)
    carried = [ctx.declare(res, init=ctx.exprs(init)) for res, init in zip(op.results, inits)]
    iv = ctx.e.fresh(body.args[0].hint or "i")
    e = ctx.e
    with e.block(f"for ({iv_t} {iv} = {ctx.expr(lb)}; {iv} < {ctx.expr(ub)}; {iv} += {ctx.expr(step)})"):
        yields = ctx.lower_block(body, [iv] + carried)
        ctx.assign(_flat(carried), _flat(yields), _types(ctx, op.results))
    # results are the carried variables (names already bound by declare)


@lowers("scf.if")
def scf_if(ctx: LoweringContext, op: Op):
    cond = op.operands[0]
    if isinstance(cond.type, TensorType):
        ctx.error(op, "scf.if on a tensor condition")
    outs = [ctx.declare(res) for res in op.results]
    e = ctx.e
    types = _types(ctx, op.results)
    then_r = op.regions[0]
    else_r = op.regions[1] if len(op.regions) > 1 and op.regions[1].blocks else None
    with e.block(f"if ({ctx.expr(cond)})"):
        y = ctx.lower_block(then_r.blocks[0], [])
        ctx.assign(_flat(outs), _flat(y), types)
    if else_r is not None:
        with e.block("else"):
            y = ctx.lower_block(else_r.blocks[0], [])
            ctx.assign(_flat(outs), _flat(y), types)
    for res, names in zip(op.results, outs):
        ctx.bind(res, names)


@lowers("scf.while")
def scf_while(ctx: LoweringContext, op: Op):
    before, after = op.regions[0].blocks[0], op.regions[1].blocks[0]
    e = ctx.e
    # Variables for the "before" arguments (initialised by the operands).
    carried = []
    for arg, init in zip(before.args, op.operands):
        carried.append(ctx.declare(arg, init=ctx.exprs(init), hint=arg.hint or "w"))
    outs = [ctx.declare(res) for res in op.results]
    with e.block("while (true)"):
        cond_and_args = ctx.lower_block(before, carried)
        cond, fwd = cond_and_args[0], cond_and_args[1:]
        ctx.assign(_flat(outs), _flat(fwd), _types(ctx, op.results))
        e.line(f"if (!({cond[0]})) break;")
        y = ctx.lower_block(after, outs)
        ctx.assign(_flat(carried), _flat(y), _types(ctx, before.args))
    for res, names in zip(op.results, outs):
        ctx.bind(res, names)


@lowers("tt.call")
def call(ctx: LoweringContext, op: Op):
    import re

    m = re.search(r"tt\.call\s+@([A-Za-z0-9_.$]+)", op.text)
    if not m:
        ctx.error(op, "cannot read the callee of tt.call")
    callee_name = m.group(1)
    callee = ctx.state.module.functions.get(callee_name)
    if callee is None:
        ctx.error(op, f"callee {callee_name} not found in the module")
    fname = _emit_callee(ctx, callee)
    args = _flat(ctx.exprs(a) for a in op.operands)
    args += ["tmps_tid", "tmps_pid", "tmps_npid", "tmps_smem"]
    call_expr = f"{fname}({', '.join(args)})"
    if not op.results:
        ctx.e.line(call_expr + ";")
        return
    tmp = ctx.e.fresh("call")
    ctx.e.line(f"{fname}_ret {tmp} = {call_expr};")
    for i, res in enumerate(op.results):
        n = ctx.num_regs(res)
        ctx.bind(res, [f"{tmp}.r{i}_{r}" for r in range(n)])


def _emit_callee(ctx: LoweringContext, func) -> str:
    """Emit a noinline function once as an MSL function taking every register as a parameter."""
    state = ctx.state
    fname = "tmps_fn_" + "".join(ch if ch.isalnum() else "_" for ch in func.name)
    if fname in state.functions_emitted or fname in state.function_sigs:
        return fname
    state.function_sigs[fname] = {}
    from ..lowering import LoweringContext as _LC  # noqa: F401

    params, arg_exprs = [], []
    for i, a in enumerate(func.args):
        t = ctx.msl_type(a)
        n = a.layout.num_regs if isinstance(a.type, TensorType) and a.layout else 1
        names = [f"p{i}_{r}" for r in range(n)]
        params += [f"{t} {nm}" for nm in names]
        arg_exprs.append(names)
    params += ["uint tmps_tid", "uint3 tmps_pid", "uint3 tmps_npid", "threadgroup uchar* tmps_smem"]
    fields = []
    for i, rt in enumerate(func.result_types):
        if isinstance(rt, TensorType):
            ctx.error(None, f"noinline function {func.name} returns a tensor: not supported yet")
        fields.append(f"  {rt.msl()} r{i}_0;")

    def on_return(c: LoweringContext, rop: Op):
        vals = _flat(c.exprs(v) for v in rop.operands)
        if vals:
            c.e.line(f"return {fname}_ret{{{', '.join(vals)}}};")
        else:
            c.e.line("return;")

    prologue, body = function_body(state, func, arg_exprs, on_return=on_return)
    ret_t = f"{fname}_ret" if func.result_types else "void"
    text = ""
    if func.result_types:
        text += f"struct {fname}_ret {{\n" + "\n".join(fields) + "\n};\n"
    text += f"{ret_t} {fname}(" + ", ".join(params) + ") {\n"
    text += "  uint tmps_lane = tmps_tid & 31u;\n  uint tmps_warp = tmps_tid >> 5u;\n"
    text += "".join("  " + p + "\n" for p in prologue)
    text += "\n".join(body) + "\n}\n"
    state.functions_emitted[fname] = text
    return fname


# Unstructured branches (early `return` inside `if` at function level): the CFG is acyclic,
# so each branch target is lowered inline under an `if` (targets shared by several
# predecessors are emitted once per predecessor).
_MAX_CFG_DEPTH = 64


def _successors(ctx: LoweringContext, op: Op):
    import re

    region = ctx.block_stack[-1].region if ctx.block_stack else None
    if region is None:
        ctx.error(op, "branch outside a region")
    targets = []
    for m in re.finditer(r"\^bb(\d+)(\(([^)]*)\))?", op.text):
        idx = int(m.group(1))
        nargs = len([x for x in (m.group(3) or "").split(",") if x.strip() and x.strip().startswith("%")])
        if idx >= len(region.blocks):
            ctx.error(op, f"branch to unknown block ^bb{idx}")
        targets.append((region.blocks[idx], nargs))
    return targets


def _branch_to(ctx: LoweringContext, op: Op, block, args):
    if len(ctx.block_stack) > _MAX_CFG_DEPTH:
        ctx.error(op, "control flow graph too deep (loops through cf branches are not supported)")
    ctx.lower_block(block, args)


@lowers("cf.br")
def cf_br(ctx: LoweringContext, op: Op):
    ((block, n),) = _successors(ctx, op)
    _branch_to(ctx, op, block, [ctx.exprs(v) for v in op.operands])


@lowers("cf.cond_br")
def cf_cond_br(ctx: LoweringContext, op: Op):
    (tb, tn), (fb, fn) = _successors(ctx, op)
    cond = op.operands[0]
    targs = [ctx.exprs(v) for v in op.operands[1:1 + tn]]
    fargs = [ctx.exprs(v) for v in op.operands[1 + tn:1 + tn + fn]]
    with ctx.e.block(f"if ({ctx.expr(cond)})"):
        _branch_to(ctx, op, tb, targs)
    with ctx.e.block("else"):
        _branch_to(ctx, op, fb, fargs)
