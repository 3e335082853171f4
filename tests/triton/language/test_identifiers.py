"""Triton identifiers that are not legal MSL as they stand (issue 7): kernels named `kernel`,
`device`, `half`, `min`, ... and locals named `float4`, `atan2`, ... must compile and run, with
the metadata name following the MSL name so that the launcher finds the function."""

from __future__ import annotations

import importlib.util
import sys
import textwrap

import pytest
import torch
import triton
from triton_mps.compiler.names import is_reserved, legal_kernel_name, local_name, local_prefix

# Kernel names: MSL keywords and address spaces, Metal types / functions / macros, C++
# keywords, names C++ reserves, our own generated names, and a plain one (kept as is).
KERNEL_NAMES = ["kernel", "device", "constant", "thread", "threadgroup", "half", "float4", "min", "as_type",
                "simd_sum", "M_PI_F", "FLT_MAX", "tmps_smem", "tmps_fn_x", "_Upper", "__dunder", "static_cast",
                "namespace", "arg0", "plain_name"]

SOURCE = '''
import triton
import triton.language as tl


@triton.jit
def {name}(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    float4 = tl.load(x_ptr + offs, mask=mask, other=0.0)
    atan2 = float4 * 2.0
    half2 = atan2 + 1.0
    tmps_lane = half2 - float4
    M_PI_F = tl.sum(tmps_lane, axis=0)
    device = tl.where(mask, tmps_lane + M_PI_F * 0.0, 0.0)
    tl.store(out_ptr + offs, device, mask=mask)
'''


def _load(tmp_path, name):
    path = tmp_path / f"kern_{abs(hash(name))}.py"
    path.write_text(textwrap.dedent(SOURCE.format(name=name)))
    spec = importlib.util.spec_from_file_location(path.stem, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[path.stem] = mod
    spec.loader.exec_module(mod)
    return getattr(mod, name)


@pytest.mark.parametrize("name", KERNEL_NAMES)
def test_kernel_and_local_names(mps_driver, tmp_path, name):
    fn = _load(tmp_path, name)
    dev = mps_driver.get_active_torch_device()
    n = 1000  # not a multiple of the block
    x = torch.randn(n, device=dev)
    out = torch.full((n,), float("nan"), device=dev)
    k = fn[(triton.cdiv(n, 256),)](x, out, n, BLOCK=256)
    torch.testing.assert_close(out, x + 1.0)
    msl = k.asm["msl"].decode() if isinstance(k.asm["msl"], bytes) else k.asm["msl"]
    assert f"kernel void {k.metadata.name}(" in msl
    assert k.metadata.name == legal_kernel_name(name)
    if name == "plain_name":
        assert k.metadata.name == name  # legal names are kept


def test_reserved_names():
    for bad in ["kernel", "device", "constant", "thread", "threadgroup", "half", "float4", "uint3", "float2x2",
                "min", "as_type", "atan2", "exp2", "M_PI_F", "FLT_MAX", "INFINITY", "_X", "__y", "tmps_smem",
                "simd_shuffle", "quad_sum", "int32_t", "static_cast", "using", "metal"]:
        assert is_reserved(bad), bad
        assert not is_reserved(legal_kernel_name(bad)), bad
    for ok in ["add_kernel", "x", "offs", "matmul_kernel", "kernel0", "softmax"]:
        assert not is_reserved(ok), ok
        assert legal_kernel_name(ok) == ok
    assert legal_kernel_name("ker\u00e9") == "ker_xe9"


def test_local_names_unique_and_legal():
    """Locals are `<prefix><n>` and registers `<prefix><n>_<r>`: over many hints (including
    reserved words, digits and underscores), no two different (prefix, n, r) give one name."""
    hints = ["x", "x0", "x0_", "x_", "float", "half", "atan", "exp", "int", "p", "arg", "tmps_x", "_y", "0z",
             "M_PI", "v", "v_x", "float2x", "", "a.b"]
    seen = {}
    for h in hints:
        p = local_prefix(h)
        for n in range(12):
            base = local_name(p, n)
            assert not is_reserved(base), (h, n, base)
            for nm in [base] + [f"{base}_{r}" for r in range(12)]:
                assert seen.setdefault(nm, (p, n, nm)) == (p, n, nm) or seen[nm][0] == p, (h, nm, seen[nm])
                seen[nm] = (p, n, nm)
