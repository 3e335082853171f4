"""The macOS compile/link check (tools/macos_check.py) on this Linux machine.

Slow-ish: a cold run downloads the pinned metal-cpp wheel once (~45 MB, cached under
~/.cache/triton_mps/macos-check or $TRITON_MPS_CHECK_CACHE) and compiles the core for
aarch64-macos (~1 min on 2 cores); warm reruns take seconds (zig caches objects there too).

Besides the real tree, small TUs prove the check can fail: a wrong metal-cpp method must not
compile, and a missing or duplicated *_PRIVATE_IMPLEMENTATION must not link.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CHECK = ROOT / "tools" / "macos_check.py"
IMPL = ROOT / "csrc" / "metal" / "metal_impl.cpp"

pytestmark = pytest.mark.timeout(600)

# Uses metal-cpp the way the backend does; links only together with metal_impl.cpp.
USER_TU = """
#include <Foundation/Foundation.hpp>
#include <Metal/Metal.hpp>

extern "C" unsigned long tmps_check_probe() {
  NS::SharedPtr<NS::AutoreleasePool> pool = NS::TransferPtr(NS::AutoreleasePool::alloc()->init());
  NS::SharedPtr<MTL::Device> device = NS::TransferPtr(MTL::CreateSystemDefaultDevice());
  NS::SharedPtr<MTL::Buffer> buffer = NS::TransferPtr(device->newBuffer(64, MTL::ResourceStorageModeShared));
  return buffer->length();
}
"""


def run_check(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(CHECK), *args], capture_output=True, text=True, timeout=600)


def write(tmp_path: Path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def test_tree_compiles_and_links_for_macos():
    r = run_check()
    assert r.returncode == 0, r.stdout + r.stderr
    assert "linked" in r.stdout
    assert "TUs compiled" in r.stdout


def test_metal_tu_with_impl_links(tmp_path):
    # Control for the negative tests below: the same TU links when the implementation is present.
    r = run_check("--sources", str(IMPL), write(tmp_path, "user.cpp", USER_TU))
    assert r.returncode == 0, r.stdout + r.stderr


def test_wrong_metal_cpp_method_fails_to_compile(tmp_path):
    bad = USER_TU.replace("device->newBuffer(64,", "device->newBufferWithLength(64,")
    r = run_check("--sources", str(IMPL), write(tmp_path, "bad.cpp", bad))
    assert r.returncode != 0
    assert "newBufferWithLength" in r.stderr
    assert "compile error" in r.stderr


def test_missing_private_implementation_fails_to_link(tmp_path):
    r = run_check("--sources", write(tmp_path, "user.cpp", USER_TU))
    assert r.returncode != 0
    assert "undefined symbol" in r.stderr
    assert "link error" in r.stderr


def test_duplicate_private_implementation_fails_to_link(tmp_path):
    second = write(tmp_path, "second_impl.cpp", IMPL.read_text())
    r = run_check("--sources", str(IMPL), second)
    assert r.returncode != 0
    assert "duplicate symbol" in r.stderr
    assert "link error" in r.stderr
