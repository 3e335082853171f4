"""What a process prints at exit after compiling and running a Triton kernel (issue 8, item 5).

Nothing. libtriton's Gluon-layout bindings (`get_gluon_layout_from_tensor`, `to_linear_layout`)
keep Gluon's layout classes in a C++ static from their first call on; through them libtriton's
own types (and 4 `ir.attribute` default arguments of GluonOpBuilder methods) stay alive to
interpreter exit, and nanobind prints ~26 lines of "leaked instances" at every exit. Our compiler
used those bindings for every tensor's linear layout; it now computes the layouts itself
(compiler/linear_layouts.py, checked against Triton in tests/compiler/test_linear_layouts.py).

The first test documents the cause on plain Triton (our plugin hidden, a Gluon kernel compiled
for CUDA sm_90): with a `to_linear_layout` call the report appears, without it not. The second
runs a kernel on the simulator whose TTGIR has blocked, slice and dot-operand layouts and a
reduction, and requires an empty stdout and stderr.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

GLUON_CUDA = r'''
import os, sys
os.environ["TRITON_BACKENDS_IN_TREE"] = "1"   # plain Triton: the mps plugin is not loaded
import triton
from triton.backends.compiler import GPUTarget
from triton.experimental import gluon
from triton.experimental.gluon import language as ttgl
from triton.experimental.gluon._runtime import GluonASTSource

@gluon.jit
def k(x, CALL: ttgl.constexpr):
    layout: ttgl.constexpr = ttgl.BlockedLayout([1], [32], [4], [0])
    if CALL:
        ll: ttgl.constexpr = ttgl.to_linear_layout(layout, [128])
    offs = ttgl.arange(0, 128, layout=layout)
    ttgl.store(x + offs, offs.to(ttgl.float32))

call = sys.argv[1] == "1"
triton.compile(GluonASTSource(k, {"x": "*fp32", "CALL": "constexpr"}, constexprs={"CALL": call}),
               target=GPUTarget("cuda", 90, 32))
'''

MPS_RUN = r'''
import torch, triton, triton.language as tl

@triton.jit
def row_dot(a, b, out, BLOCK: tl.constexpr):
    r = tl.arange(0, BLOCK)
    x = tl.load(a + r[:, None] * BLOCK + r[None, :])
    y = tl.load(b + r[:, None] * BLOCK + r[None, :])
    tl.store(out + r, tl.sum(tl.dot(x, y), axis=1))

a, b = torch.randn(16, 16), torch.randn(16, 16)
out = torch.full((16,), float("nan"))
row_dot[(1,)](a, b, out, BLOCK=16)
torch.testing.assert_close(out, (a.double() @ b.double()).sum(1).float(), rtol=1e-4, atol=1e-4)
'''

# libtriton's report: 4 ir.attribute instances, then its types and functions.
KNOWN_INSTANCE = re.compile(r' - leaked instance 0x[0-9a-f]+ of type "triton\._C\.libtriton\.ir\.attribute"')


def _run(tmp_path, code: str, *args: str, env_extra: dict | None = None) -> subprocess.CompletedProcess:
    script = tmp_path / "script.py"  # @triton.jit needs its source in a file
    script.write_text(code)
    env = dict(os.environ, TRITON_CACHE_DIR=str(tmp_path / "cache"), TRITON_DEFAULT_FP_FUSION="1", **(env_extra or {}))
    return subprocess.run([sys.executable, str(script), *args], env=env, capture_output=True, text=True,
                          timeout=600)


def _leaked_instances(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith(" - leaked instance")]


@pytest.mark.skipif(sys.platform == "darwin", reason="compiles for CUDA with Triton's bundled ptxas (Linux wheels)")
def test_plain_triton_prints_the_same_report(tmp_path):
    without = _run(tmp_path, GLUON_CUDA, "0")
    assert without.returncode == 0, without.stderr
    assert "nanobind: leaked" not in without.stderr, without.stderr
    with_call = _run(tmp_path, GLUON_CUDA, "1")
    assert with_call.returncode == 0, with_call.stderr
    leaked = _leaked_instances(with_call.stderr)
    assert "nanobind: leaked 4 instances!" in with_call.stderr, with_call.stderr
    assert len(leaked) == 4 and all(KNOWN_INSTANCE.fullmatch(x) for x in leaked), with_call.stderr


def test_exit_prints_nothing(tmp_path):
    r = _run(tmp_path, MPS_RUN, env_extra={"TRITON_BACKEND": "mps"})
    assert r.returncode == 0, r.stderr
    assert r.stdout == ""
    assert r.stderr == ""
