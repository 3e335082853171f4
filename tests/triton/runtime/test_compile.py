"""`@triton.jit` through the plugin with the stand-in MSL compiler: stages, asm, debug dumps, knobs."""

from __future__ import annotations

import torch
import triton
import triton.language as tl


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offs < n_elements
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)


def fresh(fn):
    fn.device_caches.clear()  # forget kernels compiled by earlier tests (in-memory JIT cache)
    return fn


def test_jit_launch_and_asm(fresh_cache, mps_driver):
    n = 1000
    x, y, out = torch.rand(n), torch.rand(n), torch.full((n,), float("nan"))
    k = fresh(add_kernel)[(triton.cdiv(n, 256),)](x, y, out, n, BLOCK_SIZE=256)
    torch.testing.assert_close(out, x + y)
    assert {"ttir", "ttgir", "msl"} <= set(k.asm)
    assert "tt.func" in k.asm["ttir"] and "ttg.num-warps" in k.asm["ttgir"]
    assert "kernel void add_kernel" in k.asm["msl"]  # text, like other backends' assembly
    assert k.asm["metal"] == k.asm["msl"].encode()  # the binary stage: the same MSL as bytes
    assert k.metadata.name == "add_kernel" and k.metadata.shared == 0
    assert [a["name"] for a in k.metadata.tmps_args["args"]] == ["x_ptr", "y_ptr", "out_ptr", "n_elements"]


def test_foreign_launch_knobs_are_accepted(fresh_cache, mps_driver):
    n = 300
    x, y, out = torch.rand(n), torch.rand(n), torch.full((n,), float("nan"))
    fresh(add_kernel)[(2,)](x, y, out, n, BLOCK_SIZE=256, num_warps=2, num_stages=3, maxnreg=64, waves_per_eu=2,
                            matrix_instr_nonkdim=16, kpack=2, launch_pdl=True, launch_cooperative_grid=False)
    torch.testing.assert_close(out, x + y)


def test_num_ctas_is_rejected(fresh_cache, mps_driver):
    import pytest

    x = torch.rand(4)
    with pytest.raises(ValueError, match="num_ctas"):
        fresh(add_kernel)[(1,)](x, x, x, 4, BLOCK_SIZE=256, num_ctas=2)


def test_debug_dumps(fresh_cache, mps_driver, monkeypatch, tmp_path, capfd):
    monkeypatch.setenv("TRITON_MPS_DEBUG", "1")
    n = 100
    x, y, out = torch.rand(n), torch.rand(n), torch.empty(n)
    k = fresh(add_kernel)[(1,)](x, y, out, n, BLOCK_SIZE=256)
    folder = tmp_path / "cache" / "mps_debug"
    dumps = list(folder.glob("add_kernel-*"))
    assert len(dumps) == 1, list(folder.iterdir()) if folder.exists() else "no debug dir"
    files = {p.name: p.read_text() for p in dumps[0].iterdir()}
    assert set(files) == {"add_kernel.ttir", "add_kernel.ttgir", "add_kernel.msl"}
    assert files["add_kernel.msl"] == k.asm["msl"]
    assert files["add_kernel.ttgir"] == k.asm["ttgir"]
    assert str(dumps[0]) in capfd.readouterr().err  # the path is logged
    assert k.metadata.tmps_debug_dir == str(dumps[0])


def test_no_dumps_without_the_variable(fresh_cache, mps_driver, monkeypatch, tmp_path):
    monkeypatch.delenv("TRITON_MPS_DEBUG", raising=False)
    monkeypatch.delenv("TRITON_METAL_DEBUG", raising=False)
    x = torch.rand(8)
    fresh(add_kernel)[(1,)](x, x, x, 8, BLOCK_SIZE=256)
    assert not (tmp_path / "cache" / "mps_debug").exists()
