"""compiler/ir.py reads op attributes through Triton's bindings (enums as integers): its enum
tables must give the names the printer writes. Compiles to TTGIR only (no simulator run)."""

from __future__ import annotations

import re

import triton
import triton.language as tl
from triton_mps.compiler.ir import read_module
from ttgir_harness import make_ttgir


@triton.jit
def _attrs_kernel(x_ptr, i_ptr, y_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(2)
    offs = pid * BLOCK + tl.arange(3, BLOCK + 3)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    k = tl.load(i_ptr + offs, mask=m)
    tl.atomic_add(y_ptr + offs, x, mask=m, sem="release")
    tl.atomic_max(y_ptr + offs, x, mask=m, sem="relaxed")  # fp32 max: signed max and unsigned min
    tl.atomic_xchg(y_ptr + offs, x, mask=m, sem="acquire")
    tl.atomic_add(i_ptr + offs, k, mask=m)
    tl.atomic_min(i_ptr + offs, k, mask=m)
    tl.atomic_and(i_ptr + offs, k, mask=m)
    tl.atomic_or(i_ptr + offs, k, mask=m)
    tl.atomic_xor(i_ptr + offs, k, mask=m)
    tl.atomic_cas(i_ptr + n, 0, 1, sem="acq_rel")
    z = tl.clamp(x, 0.0, 1.0, propagate_nan=tl.PropagateNan.ALL)
    s = tl.cumsum(z, axis=0, reverse=True)
    tl.store(y_ptr + offs, tl.where((k >= 2) & (x != 1.5), s, tl.sum(s, axis=0)), mask=m)
    tl.device_print("p", x, hex=True)
    tl.store(y_ptr + offs, z.to(tl.float16, fp_downcast_rounding="rtz").to(tl.float32), mask=m)


def test_bound_attributes_match_the_printed_ir():
    mod, ctx = make_ttgir(_attrs_kernel, {"x_ptr": "*fp32", "i_ptr": "*i32", "y_ptr": "*fp32", "n": "i32",
                                          "BLOCK": "constexpr"}, {"BLOCK": 64})
    module = read_module(mod, ctx, 4)
    seen: dict[str, set] = {}

    def check(op) -> bool:
        words = re.split(r"[\s,]+", op.text.split(op.name, 1)[1].strip())
        if op.name == "tt.atomic_rmw":
            assert (op.attrs["atomic_rmw_op"], op.attrs["sem"]) == (words[0], words[1]), op.text
            seen.setdefault("rmw", set()).add(words[0])
            seen.setdefault("sem", set()).add(words[1])
        elif op.name == "tt.atomic_cas":
            assert op.attrs["sem"] == words[0], op.text
            seen.setdefault("sem", set()).add(words[0])
        elif op.name == "tt.get_program_id":
            assert "xyz"[op.attrs["axis"]] == words[0] == "z"
        elif op.name == "tt.make_range":
            assert (op.attrs["start"], op.attrs["end"]) == (3, 67)
        elif op.name == "tt.clampf":
            assert op.attrs["propagateNan"] == "all" and "propagateNan = all" in op.text
        elif op.name == "tt.fp_to_fp" and "rounding" in op.text:
            assert op.attrs["rounding"] == "rtz" and "rounding = rtz" in op.text
        elif op.name == "tt.scan":
            assert op.attrs["reverse"] is True and op.attrs["axis"] == 0
        elif op.name == "tt.print":
            assert op.attrs["prefix"].strip() == "p:" and op.attrs["hex"] is True and op.attrs["isSigned"] == [0]
        elif op.name in ("arith.cmpi", "arith.cmpf"):
            names = (["eq", "ne", "slt", "sle", "sgt", "sge", "ult", "ule", "ugt", "uge"] if op.name == "arith.cmpi"
                     else ["false", "oeq", "ogt", "oge", "olt", "ole", "one", "ord", "ueq", "ugt", "uge", "ult",
                           "ule", "une", "uno", "true"])
            assert names[op.attrs["predicate"]] == words[0], op.text
            seen.setdefault(op.name, set()).add(words[0])
        elif op.name == "arith.constant" and "value" in op.attrs:
            seen.setdefault("const", set()).add(op.attrs["value"])
        return False

    module.any_op(check)
    assert seen["rmw"] >= {"fadd", "max", "umin", "exch", "add", "min", "and", "or", "xor"}
    assert seen["sem"] >= {"release", "relaxed", "acquire", "acq_rel"}
    assert {"slt", "sge"} <= seen["arith.cmpi"] and "une" in seen["arith.cmpf"]
    assert {0.0, 1.0, 1.5} <= seen["const"]
    (func,) = module.functions.values()
    assert func.public and not func.noinline
