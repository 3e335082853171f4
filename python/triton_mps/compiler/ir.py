"""Read a TTGIR module (Triton's bindings) once into plain Python objects.

The bindings only offer a post-order `walk`, per-op operands/results/regions, the block of an
op and the region of a block. We rebuild the tree from those ids, and pair every op with its
line in the printed module (`str_nodebug()`, pre-order) to read attributes the bindings do not
expose (float constants, predicates, atomic kinds, orders, ...). Lowering never touches the
bindings again.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from .layout import Layout, from_linear_layout
from .linear_layouts import layout_of
from .types import TensorType, parse_type


@dataclass(eq=False)
class Value:
    id: int
    type: object  # ScalarType | PointerType | TensorType | OtherType
    hint: str = ""  # Python variable name from the location, if any
    layout: Layout | None = None  # for distributed tensors
    uses: int = 0
    owner: Op | None = None  # defining op (None for block arguments)
    users: list = field(default_factory=list)  # the ops using it (an op once per use)

    @property
    def is_tensor(self) -> bool:
        return isinstance(self.type, TensorType)


@dataclass(eq=False)
class Block:
    args: list[Value] = field(default_factory=list)
    ops: list[Op] = field(default_factory=list)
    region: Region | None = None  # successors (^bbN) index region.blocks


@dataclass(eq=False)
class Region:
    blocks: list[Block] = field(default_factory=list)


@dataclass(eq=False)
class Op:
    name: str
    operands: list[Value]
    results: list[Value]
    regions: list[Region]
    text: str  # the op's first printed line (attributes are read from it)
    file: str = ""
    line: int = 0
    col: int = 0
    int_attrs: dict = field(default_factory=dict)  # attributes read through the bindings

    def attr(self, name: str) -> str | None:
        """Raw text of attribute `name = ...` in the op's line (up to ',' or '}' at depth 0)."""
        m = re.search(r"(?:[{<,]\s*|\s)" + re.escape(name) + r"\s*=\s*", self.text)
        if not m:
            return None
        i, depth, out = m.end(), 0, []
        while i < len(self.text):
            ch = self.text[i]
            if ch in "[<({":
                depth += 1
            elif ch in "]>)}":
                if depth == 0:
                    break
                depth -= 1
            elif ch == "," and depth == 0:
                break
            out.append(ch)
            i += 1
        return "".join(out).strip()

    def int_attr(self, name: str) -> int | None:
        if name in self.int_attrs:
            return self.int_attrs[name]
        t = self.attr(name)
        if t is None:
            return None
        m = re.match(r"^(-?\d+)", t)
        return int(m.group(1)) if m else None

    def array_attr(self, name: str) -> list[int] | None:
        t = self.attr(name)
        if t is None:
            return None
        m = re.search(r"\[([^\]]*)\]", t) or re.search(r"array<\w+:\s*([^>]*)>", t)
        if not m:
            return None
        return [int(x.split(":")[0]) for x in m.group(1).split(",") if x.strip()]


@dataclass(eq=False)
class Function:
    name: str
    args: list[Value]
    body: Block
    op: Op
    public: bool
    noinline: bool
    result_types: list = field(default_factory=list)


@dataclass
class Module:
    functions: dict[str, Function]
    text: str

    def any_op(self, pred) -> bool:
        """Whether an op of any function, nested regions included, satisfies `pred(op)`."""

        def visit(block: Block) -> bool:
            return any(pred(op) or any(visit(b) for r in op.regions for b in r.blocks) for op in block.ops)

        return any(visit(f.body) for f in self.functions.values())


_LOC_RE = re.compile(r'loc\((?:"([^"]*)"\()?"([^"]+)":(\d+):(\d+)')


def parse_loc(loc: str) -> tuple[str, str, int, int]:
    """loc("x"("/f.py":12:9)) -> ("x", "/f.py", 12, 9); missing parts are empty/0."""
    loc = str(loc) if loc is not None else ""
    m = _LOC_RE.search(loc)
    if not m:
        n = re.match(r'loc\("([^"]*)"', loc or "")
        return (n.group(1) if n else "", "", 0, 0)
    return (m.group(1) or "", m.group(2), int(m.group(3)), int(m.group(4)))


def _op_lines(text: str) -> list[str]:
    """The first line of every op, in pre-order (the printer's order)."""
    out = []
    for raw in text.splitlines():
        s = raw.strip()
        if not s or s[0] in "}^#" or s.startswith("loc"):
            continue
        out.append(s)
    return out


def _triton_layout(v, ty, context) -> Layout | None:
    """Triton's own conversion, for encodings compiler/linear_layouts.py does not compute (its
    first use makes libtriton print leak reports at exit; see that module)."""
    if not _is_distributed(ty.encoding):
        return None  # shared encodings: the ops that need them report
    from triton._C.libtriton import gluon_ir

    builder = gluon_ir.GluonOpBuilder(context)
    try:
        gl = builder.get_gluon_layout_from_tensor(v)
        return from_linear_layout(builder.to_linear_layout(gl._to_ir(builder), list(ty.shape)), ty.shape)
    except Exception:  # unknown encodings: ops that need them will report
        return None


def _is_distributed(encoding: str) -> bool:
    return not re.match(r"#ttg\.(\w*_shared|shared\w*)<", encoding.strip())


def read_module(mod, context, num_warps: int) -> Module:
    """Convert a bindings module into our IR (structure + layouts + attribute text)."""
    raw_ops = []
    mod.walk(lambda o: raw_ops.append(o))
    layout_cache: dict[str, Layout | None] = {}
    values: dict[int, Value] = {}

    def value(v, owner=None) -> Value:
        vid = v.id()
        got = values.get(vid)
        if got is not None:
            if owner is not None:
                got.owner = owner
            return got
        ty = parse_type(str(v.get_type()))
        hint, _, _, _ = parse_loc(v.get_loc())
        lay = None
        if isinstance(ty, TensorType) and ty.encoding:
            if ty.text not in layout_cache:
                layout_cache[ty.text] = layout_of(ty.encoding, ty.shape) or _triton_layout(v, ty, context)
            lay = layout_cache[ty.text]
        got = Value(vid, ty, _clean_hint(hint), lay, 0, owner)
        values[vid] = got
        return got

    # Pair ops with their printed lines: rebuild pre-order from the tree first.
    blocks: dict[int, Block] = {}
    block_region: dict[int, int] = {}
    region_blocks: dict[int, list[int]] = {}
    ops_by_raw: list[Op] = []
    for o in raw_ops:
        name = o.get_name()
        _, file, line, col = parse_loc(o.get_result(0).get_loc()) if o.get_num_results() else ("", "", 0, 0)
        op = Op(name, [], [], [], "", file, line, col)
        for i in range(o.get_num_operands()):
            v = value(o.get_operand(i))
            v.uses += 1
            v.users.append(op)
            op.operands.append(v)
        for i in range(o.get_num_results()):
            op.results.append(value(o.get_result(i), op))
        # Int attributes (axis, predicate, ...) are read lazily from the text (Op.int_attr): the
        # bindings' get_int_attr aborts on a missing attribute.
        for i in range(o.get_num_regions()):
            reg = o.get_region(i)
            r = Region()
            for bid in region_blocks.get(reg.id(), []):
                r.blocks.append(blocks[bid])
            if reg.size() != len(r.blocks):
                raise _structure_error(op, f"region {i} has {reg.size()} blocks, {len(r.blocks)} with ops")
            for blk in r.blocks:
                blk.region = r
            op.regions.append(r)
        if name == "tt.func":
            op.int_attrs["sym_name"] = o.get_str_attr("sym_name")
        if name == "builtin.module":
            ops_by_raw.append(op)
            continue
        b = o.get_block()
        bid = b.id()
        if bid not in blocks:
            nb = Block()
            for i in range(b.get_num_arguments()):
                nb.args.append(value(b.get_argument(i)))
            blocks[bid] = nb
            rid = b.get_parent().id()
            block_region[bid] = rid
            region_blocks.setdefault(rid, []).append(bid)
        blocks[bid].ops.append(op)
        ops_by_raw.append(op)

    module_op = ops_by_raw[-1]
    pre: list[Op] = []
    implicit: set[int] = set()

    def visit(op: Op):
        pre.append(op)
        for r in op.regions:
            for b in r.blocks:
                for child in b.ops:
                    # The printer leaves out implicit terminators: an `scf.yield` with nothing to
                    # yield in scf.for / scf.if. scf.while's `do` region always prints its yield.
                    if child.name == "scf.yield" and not child.operands and op.name != "scf.while":
                        implicit.add(id(child))
                    visit(child)

    visit(module_op)
    pre = [op for op in pre if id(op) not in implicit]
    text = mod.str_nodebug()
    lines = _op_lines(text)
    if len(lines) != len(pre):
        raise CompilationError(f"cannot pair ops with printed IR ({len(pre)} ops, {len(lines)} lines)")
    for op, ln in zip(pre, lines, strict=True):
        short = op.name
        if short not in ln and op.name != "builtin.module":
            raise CompilationError(f"op {op.name} does not match printed line {ln!r}", op=op.name, file=op.file,
                                   line=op.line)
        op.text = ln
    _attach_locations(pre, str(mod))

    funcs: dict[str, Function] = {}
    for b in module_op.regions[0].blocks:
        for op in b.ops:
            if op.name != "tt.func":
                continue
            name = op.int_attrs["sym_name"]
            body = op.regions[0].blocks[0] if op.regions and op.regions[0].blocks else Block()
            # file/line of the function come from its return op (func has no result loc)
            ret = body.ops[-1] if body.ops else None
            if ret is not None:
                op.file, op.line = ret.file, ret.line
            funcs[name] = Function(name, list(body.args), body, op, " public " in f" {op.text} ",
                                   "noinline = true" in op.text, _func_results(op.text))
    return Module(funcs, text)


def _attach_locations(pre: list[Op], debug_text: str) -> None:
    """Give every op (also result-less ones: stores, yields) its Python file:line."""
    aliases = {}
    for raw in debug_text.splitlines():
        m = re.match(r"^(#loc\d*)\s*=\s*(loc\(.*\))\s*$", raw.strip())
        if m:
            aliases[m.group(1)] = m.group(2)

    def resolve(loc: str, depth: int = 0) -> str:
        if depth > 20:
            return loc
        def one(mm):
            return resolve(aliases[mm.group(0)], depth + 1) if mm.group(0) in aliases else mm.group(0)

        return re.sub(r"#loc\d*", one, loc)

    lines = _op_lines(debug_text)
    if len(lines) != len(pre):
        return
    for op, ln in zip(pre, lines, strict=True):
        idx = ln.rfind(" loc(")
        if idx < 0:
            continue
        loc = ln[idx + 1:].rstrip("{( ")
        name, file, line, col = parse_loc(resolve(loc))
        if line:
            op.file, op.line, op.col = file, line, col


def _func_results(text: str) -> list:
    m = re.search(r"\)\s*->\s*(\(.*?\)|[^ {]+)\s*(attributes|\{)", text)
    if not m:
        return []
    r = m.group(1)
    if r.startswith("("):
        from .types import _split_top
        return [parse_type(x) for x in _split_top(r[1:-1]) if x]
    return [parse_type(r)]


def _clean_hint(h: str) -> str:
    h = re.sub(r"[^A-Za-z0-9_]", "_", h)
    return h


def _structure_error(op: Op, msg: str):
    return CompilationError(msg, op=op.name, file=op.file, line=op.line)


from .errors import CompilationError  # noqa: E402
