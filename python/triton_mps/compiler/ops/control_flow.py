"""Structured control flow: scf.for / scf.if / scf.while, tt.return, noinline tt.call.

Loop-carried values and if/while results become mutable MSL variables declared before the
statement; region terminators assign them (as parallel assignments). scf.for values that a
registered LoopCarrier claims (ops/dot.py: accumulators kept in simdgroup matrices over the loop)
are carried its way instead."""

from __future__ import annotations

from ..effects import module_uses_debug, module_uses_locks
from ..ir import Op
from ..lowering import LOOP_CARRIERS, LoweringContext, function_body, lowers
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
    # Values a LoopCarrier claims (ops/dot.py: accumulators that stay in simdgroup matrices over
    # the loop): the carrier's variables are carried; their users update them in place, so no
    # assignment here.
    special: dict[int, tuple] = {}  # position -> (carrier, token)
    for carrier in LOOP_CARRIERS:
        for i, token in carrier.find(ctx, op).items():
            special.setdefault(i, (carrier, token))
    carried = []
    for i, (res, init) in enumerate(zip(op.results, inits, strict=True)):
        if i in special:
            carrier, token = special[i]
            carried.append(carrier.begin(ctx, token, init))
        else:
            carried.append(ctx.declare(res, init=ctx.exprs(init)))
    iv = ctx.e.fresh(body.args[0].hint or "i")
    e = ctx.e
    with e.block(f"for ({iv_t} {iv} = {ctx.expr(lb)}; {iv} < {ctx.expr(ub)}; {iv} += {ctx.expr(step)})"):
        yields = ctx.lower_block(body, [iv] + carried)
        plain = [i for i in range(len(op.results)) if i not in special]
        ctx.assign(_flat(carried[i] for i in plain), _flat(yields[i] for i in plain),
                   _types(ctx, [op.results[i] for i in plain]))
    # plain results are the carried variables (names already bound by declare)
    for i, (carrier, token) in special.items():
        carrier.end(ctx, token, op.results[i])


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
    for res, names in zip(op.results, outs, strict=True):
        ctx.bind(res, names)


@lowers("scf.while")
def scf_while(ctx: LoweringContext, op: Op):
    before, after = op.regions[0].blocks[0], op.regions[1].blocks[0]
    e = ctx.e
    # Variables for the "before" arguments (initialised by the operands).
    carried = []
    for arg, init in zip(before.args, op.operands, strict=True):
        carried.append(ctx.declare(arg, init=ctx.exprs(init), hint=arg.hint or "w"))
    outs = [ctx.declare(res) for res in op.results]
    with e.block("while (true)"):
        cond_and_args = ctx.lower_block(before, carried)
        cond, fwd = cond_and_args[0], cond_and_args[1:]
        ctx.assign(_flat(outs), _flat(fwd), _types(ctx, op.results))
        e.line(f"if (!({cond[0]})) break;")
        y = ctx.lower_block(after, outs)
        ctx.assign(_flat(carried), _flat(y), _types(ctx, before.args))
    for res, names in zip(op.results, outs, strict=True):
        ctx.bind(res, names)


@lowers("tt.call")
def call(ctx: LoweringContext, op: Op):
    """A noinline call: every register of every operand is passed by value, the results come
    back in a struct with one field per register. Scalars and tensors alike."""
    target = op.attrs.get("callee")
    if not target:
        ctx.error(op, "cannot read the callee of tt.call")
    callee = ctx.state.module.functions.get(target)
    if callee is None:
        ctx.error(op, f"callee {target} not found in the module")
    # (the call's result values carry the layouts; the function's printed result types are not needed)
    if len(op.operands) != len(callee.args):
        ctx.error(op, f"call to {callee.name} does not match its signature")
    sig = _emit_callee(ctx, op, callee)
    args = _flat(ctx.exprs(a) for a in op.operands)
    for a, n in zip(op.operands, sig["arg_regs"], strict=True):
        if ctx.num_regs(a) != n:
            ctx.error(op, f"internal: call to {callee.name} passes {ctx.num_regs(a)} registers for {n}")
    args += _CALLEE_IDS + (["tmps_dbg"] if sig["debug"] else []) + (["tmps_locks"] if sig["locks"] else [])
    call_expr = f"{sig['name']}({', '.join(args)})"
    if not op.results:
        ctx.e.line(call_expr + ";")
        return
    tmp = ctx.e.fresh("call")
    ctx.e.line(f"{sig['name']}_ret {tmp} = {call_expr};")
    for i, (res, n) in enumerate(zip(op.results, sig["res_regs"], strict=True)):
        if ctx.num_regs(res) != n:
            ctx.error(op, f"internal: result {i} of {callee.name} has {n} registers, the call expects "
                          f"{ctx.num_regs(res)}")
        ctx.bind(res, [f"{tmp}.r{i}_{r}" for r in range(n)])


# What every callee receives after its arguments: the thread's ids and the shared scratch (a
# callee may reduce / convert layouts through threadgroup memory; Triton calls are uniform, so
# every thread of the threadgroup makes the call and the barriers inside it are safe).
_CALLEE_IDS = ["tmps_tid", "tmps_pid", "tmps_npid", "tmps_smem"]
_CALLEE_ID_PARAMS = ["uint tmps_tid", "uint3 tmps_pid", "uint3 tmps_npid", "threadgroup uchar* tmps_smem"]


def _callee_symbol(state, func) -> str:
    """A unique MSL name per TTGIR function (specializations already have distinct names)."""
    base = "tmps_fn_" + "".join(ch if ch.isalnum() else "_" for ch in func.name)
    name, n = base, 1
    while name in state.function_sigs and state.function_sigs[name]["func"] != func.name:
        name, n = f"{base}_{n}", n + 1
    return name


def _emit_callee(ctx: LoweringContext, op: Op, func) -> dict:
    """Emit a noinline function once (per kernel) as an MSL function; returns its signature
    record: name, registers per argument / result, whether it takes the debug buffer."""
    state = ctx.state
    fname = _callee_symbol(state, func)
    sig = state.function_sigs.get(fname)
    if sig is not None:
        if not sig["done"]:
            ctx.error(op, f"recursive call to {func.name}: Metal has no recursion")
        return sig
    if func.body is None or not func.body.ops:
        ctx.error(op, f"noinline function {func.name} has no body in the module")

    def regs(v, what):
        if not isinstance(v.type, TensorType):
            return 1
        if v.layout is None:
            ctx.error(op, f"{what} of {func.name} has an unsupported tensor encoding: {v.type.encoding or 'none'}")
        return v.layout.num_regs

    arg_regs = [regs(a, f"argument {i}") for i, a in enumerate(func.args)]
    res_regs = [regs(r, f"result {i}") for i, r in enumerate(op.results)]
    debug = module_uses_debug(state.module)
    locks = module_uses_locks(state.module)  # 64-bit atomics in any function: pass the lock table on
    sig = {"func": func.name, "name": fname, "arg_regs": arg_regs, "res_regs": res_regs,
           "debug": debug, "locks": locks, "done": False}
    state.function_sigs[fname] = sig

    params, arg_exprs = [], []
    for i, (a, n) in enumerate(zip(func.args, arg_regs, strict=True)):
        t = ctx.msl_type(a)
        names = [f"p{i}_{r}" for r in range(n)] if isinstance(a.type, TensorType) else [f"p{i}"]
        params += [f"{t} {nm}" for nm in names]
        arg_exprs.append(names)
    params += _CALLEE_ID_PARAMS + (["device uint* tmps_dbg"] if debug else []) + \
        (["device atomic_uint* tmps_locks"] if locks else [])
    res_types = [ctx.msl_type(r) for r in op.results]
    fields = [f"  {t} r{i}_{r};" for i, (t, n) in enumerate(zip(res_types, res_regs, strict=True))
              for r in range(n)]

    def on_return(c: LoweringContext, rop: Op):
        if not op.results:
            c.e.line("return;")
            return
        out = c.e.fresh("ret")
        c.e.line(f"{fname}_ret {out};")
        for i, (v, n) in enumerate(zip(rop.operands, res_regs, strict=True)):
            if c.num_regs(v) != n:
                c.error(rop, f"internal: {func.name} returns {c.num_regs(v)} registers for result {i}, expected {n}")
            for r in range(n):
                c.e.line(f"{out}.r{i}_{r} = {c.expr(v, r)};")
        c.e.line(f"return {out};")

    prologue, body = function_body(state, func, arg_exprs, on_return=on_return)
    text = ""
    if op.results:
        text += f"struct {fname}_ret {{\n" + "\n".join(fields) + "\n};\n"
    text += f"{fname + '_ret' if op.results else 'void'} {fname}(" + ", ".join(params) + ") {\n"
    text += "  uint tmps_lane = tmps_tid & 31u;\n  uint tmps_warp = tmps_tid >> 5u;\n"
    text += "".join("  " + p + "\n" for p in prologue)
    text += "\n".join(body) + "\n}\n"
    # Callees this one calls were stored while its body was lowered: they come first in the file.
    state.functions_emitted[fname] = text
    sig["done"] = True
    return sig


# Unstructured branches (early `return` inside `if` at function level): the CFG is acyclic,
# so each branch target is lowered inline under an `if` (targets shared by several
# predecessors are emitted once per predecessor).
_MAX_CFG_DEPTH = 64


def _successors(ctx: LoweringContext, op: Op):
    region = ctx.block_stack[-1].region if ctx.block_stack else None
    if region is None:
        ctx.error(op, "branch outside a region")
    targets = []
    for idx, nargs in op.attrs.get("successors", []):
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
