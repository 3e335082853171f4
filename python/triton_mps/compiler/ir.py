"""Read a TTGIR module (Triton's bindings) once into plain Python objects.

The bindings only offer a post-order `walk`, per-op operands/results/regions, the block of an
op and the region of a block. We rebuild the tree from those ids. Op attributes are read into
`Op.attrs` here, once: through the bindings (`get_int_attr`, `get_bool_attr`, `get_str_attr`,
`get_flat_symbol_ref_attr`, `get_constant_value`: `_BOUND_ATTRS`) where they can give the value,
else from the op's line in the printed module (`str_nodebug()`, pre-order, paired with the
ops): `_text_attrs`, the one place that parses op text, for what no binding exposes (float
constants, dense arrays, branch successors, argument attributes, which optional operands an op
has). Lowering never touches the bindings again and reads attributes from `Op.attrs`.
"""

from __future__ import annotations

import re
import struct
from dataclasses import dataclass, field

from .layout import Layout, from_linear_layout
from .linear_layouts import layout_of
from .types import TensorType, elem_of, parse_type


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
    text: str  # the op's first printed line (error messages; `_text_attrs` reads it)
    file: str = ""
    line: int = 0
    col: int = 0
    # Attributes, typed, read when the module is read (`_BOUND_ATTRS`, `_text_attrs`): enums by
    # the name Triton prints (sem "acq_rel", atomic_rmw_op "fadd", ...). Absent: not set.
    attrs: dict = field(default_factory=dict)

    def attr(self, name: str) -> str | None:
        """Raw text of attribute `name = ...` in the op's line (up to ',' or '}' at depth 0).
        Only for attributes no binding exposes (`_text_attrs`); ops/float64.py still reads
        propagateNan / rounding this way (they are in `attrs` too)."""
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
        v = self.attrs.get(name)
        return v if isinstance(v, int) and not isinstance(v, bool) else None

    def array_attr(self, name: str) -> list[int] | None:
        t = self.attr(name)
        if t is None:
            return None
        m = re.search(r"\[([^\]]*)\]", t) or re.search(r"array<\w+:\s*([^>]*)>", t)
        if not m:
            return None
        return [int(x.split(":")[0]) for x in m.group(1).split(",") if x.strip()]


# Triton's enum attributes are I32EnumAttrs (integer storage): get_int_attr reads them; these
# give the names Triton prints (checked against the printed IR in tests/compiler/test_ir_attrs.py).
MEM_SEMANTIC = {1: "relaxed", 2: "acquire", 3: "release", 4: "acq_rel"}
RMW_OP = {1: "and", 2: "or", 3: "xor", 4: "add", 5: "fadd", 6: "max", 7: "min", 8: "umax", 9: "umin", 10: "exch"}
PROPAGATE_NAN = {0: "none", 0xFFFF: "all"}
ROUNDING_MODE = {0: "rtz", 1: "rtne"}
SCALE_DOT_ELEM = {0: "e4m3", 1: "e5m2", 2: "e2m3", 3: "e3m2", 4: "e2m1", 5: "bf16", 6: "fp16"}
# arith's CmpIPredicate / CmpFPredicate: the predicate attribute is the index in these lists
CMPI_PREDICATES = ["eq", "ne", "slt", "sle", "sgt", "sge", "ult", "ule", "ugt", "uge"]
CMPF_PREDICATES = ["false", "oeq", "ogt", "oge", "olt", "ole", "one", "ord",
                   "ueq", "ugt", "uge", "ult", "ule", "une", "uno", "true"]


def predicate(op: Op, names: list[str]) -> int:
    """The index of an arith.cmpi / arith.cmpf predicate in `names` (CMPI_/CMPF_PREDICATES)."""
    p = op.int_attr("predicate")
    if p is None or not 0 <= p < len(names):
        raise ValueError(f"cannot read predicate of {op.text!r}")
    return p


def involves_f64(op: Op) -> bool:
    """An operand or result has f64 elements (software float64: ops/float64.py lowers the op)."""
    return any(getattr(elem_of(v.type), "name", None) == "f64" for v in list(op.operands) + list(op.results))

# op name -> (attribute, reader): "int", "bool", "str", "sym" (a flat symbol reference) or an
# enum table (int -> printed name; an unknown value is kept as its number, as a string).
_BOUND_ATTRS: dict[str, tuple[tuple[str, object], ...]] = {
    "tt.func": (("sym_name", "str"), ("sym_visibility", "str"), ("noinline", "bool")),
    "tt.call": (("callee", "sym"),),
    "tt.get_program_id": (("axis", "int"),),
    "tt.get_num_programs": (("axis", "int"),),
    "tt.make_range": (("start", "int"), ("end", "int")),
    "tt.reduce": (("axis", "int"),),
    "tt.scan": (("axis", "int"), ("reverse", "bool")),
    "tt.gather": (("axis", "int"),),
    "tt.expand_dims": (("axis", "int"),),
    "arith.cmpi": (("predicate", "int"),),
    "arith.cmpf": (("predicate", "int"),),
    "tt.atomic_rmw": (("atomic_rmw_op", RMW_OP), ("sem", MEM_SEMANTIC)),
    "tt.atomic_cas": (("sem", MEM_SEMANTIC),),
    "tt.atomic_poll": (("sem", MEM_SEMANTIC),),
    "tt.clampf": (("propagateNan", PROPAGATE_NAN),),
    "tt.fp_to_fp": (("rounding", ROUNDING_MODE),),
    "tt.extern_elementwise": (("symbol", "str"),),
    "tt.print": (("prefix", "str"), ("hex", "bool")),
    "tt.assert": (("message", "str"),),
    "tt.map_elementwise": (("pack", "int"),),
    "tt.dot_scaled": (("a_elem_type", SCALE_DOT_ELEM), ("b_elem_type", SCALE_DOT_ELEM),
                      ("lhs_k_pack", "bool"), ("rhs_k_pack", "bool")),
}
_GETTERS = {"int": "get_int_attr", "bool": "get_bool_attr", "str": "get_str_attr", "sym": "get_flat_symbol_ref_attr"}


def _bound_attrs(o, name: str) -> dict:
    """The attributes of `_BOUND_ATTRS[name]` the bound op `o` has (the getters return None for
    a missing attribute or one of another kind)."""
    out = {}
    for attr, how in _BOUND_ATTRS.get(name, ()):
        if isinstance(how, dict):
            v = o.get_int_attr(attr)
            if v is not None:
                out[attr] = how.get(v, str(v))
        else:
            v = getattr(o, _GETTERS[how])(attr)
            if v is not None:
                out[attr] = v
    if name == "arith.constant":
        v = o.get_constant_value()  # integer constants (scalar or splat); None for floats
        if isinstance(v, int) and not isinstance(v, bool):
            out["int_value"] = v
    return out


def _text_attrs(op: Op) -> None:
    """Attributes no binding exposes, parsed from the op's printed line into `op.attrs`:
    the value of a float constant (the bindings' get_constant_value reads integers only);
    dense i32 arrays (tt.trans order, tt.print isSigned); the successor blocks of cf branches
    (no get_successor binding); `tt.divisibility` of function arguments (argument attributes);
    which of tt.dot_scaled's optional scale operands are present (operand segment sizes)."""
    name, text = op.name, op.text
    if name == "arith.constant":
        ty = op.results[0].type if op.results else None
        body = text.split("arith.constant", 1)[1].rsplit(" : ", 1)[0].strip()
        if body.startswith("dense<"):
            body = body[len("dense<"):-1].strip()
            if body.startswith("["):
                op.attrs["nonuniform"] = True
                return
        elem = ty.elem if isinstance(ty, TensorType) else ty
        if "int_value" in op.attrs:
            v = op.attrs.pop("int_value")
            op.attrs["value"] = v & 1 if getattr(elem, "name", "") == "i1" else v  # i1 true reads as -1
        else:
            try:
                op.attrs["value"] = _scalar_text(body.split(" : ")[0], elem)
            except (ValueError, KeyError):
                pass  # no "value": the lowering reports the op
    elif name in ("tt.trans", "tt.print"):
        key = "order" if name == "tt.trans" else "isSigned"
        got = op.array_attr(key)
        if got is not None:
            op.attrs[key] = got
    elif name in ("cf.br", "cf.cond_br"):
        op.attrs["successors"] = [
            (int(m.group(1)), len([x for x in (m.group(3) or "").split(",") if x.strip().startswith("%")]))
            for m in re.finditer(r"\^bb(\d+)(\(([^)]*)\))?", text)]
    elif name == "tt.func":
        op.attrs["arg_divisibility"] = _arg_divisibility(text)
        op.attrs["result_types"] = _func_results(text)
    elif name == "tt.dot_scaled":
        head = text.split("tt.dot_scaled", 1)[1].split(":", 1)[0]
        op.attrs["lhs_scale"] = re.match(r"\s*%[\w#]+\s+scale\s+%", head) is not None
        op.attrs["rhs_scale"] = re.search(r",\s*%[\w#]+\s+scale\s+%", head) is not None


def _scalar_text(txt: str, t) -> object:
    """A printed scalar constant: true/false, an integer, a float, or a float's bits in hex
    (`0x7FC00000`: NaN, infinities, and values the printer cannot round-trip in decimal)."""
    txt = txt.strip()
    if txt in ("true", "false"):
        return 1 if txt == "true" else 0
    if getattr(t, "is_float", False):
        if re.match(r"^0x[0-9A-Fa-f]+$", txt):
            bits = int(txt, 16)
            if t.name == "f32":
                return struct.unpack("<f", struct.pack("<I", bits))[0]
            if t.name == "f16":
                return struct.unpack("<e", struct.pack("<H", bits))[0]
            if t.name == "bf16":
                return struct.unpack("<f", struct.pack("<I", bits << 16))[0]
            if t.is_fp8:
                from .mslib import fp8

                return fp8.decode(fp8.FORMATS[t.name], bits)
            if t.name == "f64":
                return struct.unpack("<d", struct.pack("<Q", bits))[0]
        return float(txt)
    return int(txt, 0)


def _arg_divisibility(text: str) -> list[int | None]:
    """`tt.divisibility = N` of each argument of a printed tt.func (None where absent)."""
    start = text.find("(")
    if start < 0:
        return []
    depth, cur, parts = 0, [], []
    for ch in text[start + 1:]:  # the argument list, split at top-level commas
        if ch in "(<[{":
            depth += 1
        elif ch in ")>]}":
            if depth == 0:
                parts.append("".join(cur))
                break
            depth -= 1
        if ch == "," and depth == 0:
            parts.append("".join(cur))
            cur = []
            continue
        cur.append(ch)
    out: list[int | None] = []
    for p in parts:
        m = re.search(r"tt\.divisibility\s*=\s*(\d+)", p)
        out.append(int(m.group(1)) if m else None)
    return out


@dataclass(eq=False)
class Function:
    name: str
    args: list[Value]
    body: Block
    op: Op
    public: bool
    noinline: bool
    result_types: list = field(default_factory=list)

    @property
    def blocks(self) -> list[Block]:
        """Every block of the body: the entry and, with cf branches (an early return), the
        blocks they branch to."""
        return self.body.region.blocks if self.body.region is not None else [self.body]


@dataclass
class Module:
    functions: dict[str, Function]
    text: str

    def any_op(self, pred) -> bool:
        """Whether an op of any function, nested regions included, satisfies `pred(op)`."""

        def visit(block: Block) -> bool:
            return any(pred(op) or any(visit(b) for r in op.regions for b in r.blocks) for op in block.ops)

        return any(visit(b) for f in self.functions.values() for b in f.blocks)


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
        op.attrs.update(_bound_attrs(o, name))
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
        _text_attrs(op)
    _attach_locations(pre, str(mod))

    funcs: dict[str, Function] = {}
    for b in module_op.regions[0].blocks:
        for op in b.ops:
            if op.name != "tt.func":
                continue
            name = op.attrs["sym_name"]
            body = op.regions[0].blocks[0] if op.regions and op.regions[0].blocks else Block()
            # file/line of the function come from its return op (func has no result loc)
            ret = body.ops[-1] if body.ops else None
            if ret is not None:
                op.file, op.line = ret.file, ret.line
            funcs[name] = Function(name, list(body.args), body, op, op.attrs.get("sym_visibility") == "public",
                                   bool(op.attrs.get("noinline")), op.attrs["result_types"])
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
