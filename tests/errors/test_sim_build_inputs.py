"""Bad input to the simulator's kernel builds: damaged shared build inputs in the cache (the
shim's support object every kernel links, its precompiled header) and an unusable TMPDIR. One
test per row of docs/errors.md (tests/bad_input.py)."""

from __future__ import annotations

import os
import warnings
from collections.abc import Callable
from pathlib import Path

import pytest
import triton_mps
from bad_input import bad_input
from test_core_inputs import fresh_source, run


@pytest.fixture
def cache(monkeypatch, tmp_path) -> Path:
    monkeypatch.setenv("TRITON_MPS_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache"


def _damage_then_build(sim, cache: Path, pattern: str, damage: Callable[[Path], None]) -> None:
    """Build a kernel (which makes the shared input), damage the input, then build and run a new
    kernel: it must work, without a warning, and the input must be whole again."""
    run(triton_mps.compile_msl(fresh_source(), "scaled", sim))
    found = sorted((cache / "sim").glob(pattern))
    if not found:
        pytest.skip(f"this toolchain makes no {pattern}")
    sizes = {p: p.stat().st_size for p in found}
    for p in found:
        damage(p)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        run(triton_mps.compile_msl(fresh_source(), "scaled", sim))
    assert {p: p.stat().st_size for p in found} == sizes  # rebuilt in place


def _truncate(p: Path) -> None:
    p.write_bytes(p.read_bytes()[: p.stat().st_size // 2])


def _empty(p: Path) -> None:
    p.write_bytes(b"")


def _garbage(p: Path) -> None:
    p.write_bytes(bytes(range(128, 256)) * (p.stat().st_size // 128 + 1))  # not UTF-8 either


@bad_input("truncated support object", given="the cached support object every kernel links cut to half its size",
           raises="none", says="detected by its .meta sidecar and rebuilt; the next kernel builds and runs")
def test_truncated_support_object(sim, cache, bad):
    _damage_then_build(sim, cache, "support-*.o", _truncate)


@bad_input("empty support object", given="the cached support object emptied",
           raises="none", says="detected by its .meta sidecar and rebuilt; the next kernel builds and runs")
def test_empty_support_object(sim, cache, bad):
    _damage_then_build(sim, cache, "support-*.o", _empty)


@bad_input("garbage support object", given="the cached support object overwritten with non-UTF-8 bytes",
           raises="none", says="detected by its .meta sidecar and rebuilt; the next kernel builds and runs")
def test_garbage_support_object(sim, cache, bad):
    _damage_then_build(sim, cache, "support-*.o", _garbage)


@bad_input("truncated precompiled header", given="the cached precompiled header of the shim cut to half its size",
           raises="none", says="detected by its .meta sidecar and rebuilt; the next kernel builds and runs")
def test_truncated_precompiled_header(sim, cache, bad):
    _damage_then_build(sim, cache, "shim-*.pch", _truncate)


@bad_input("empty precompiled header", given="the cached precompiled header of the shim emptied",
           raises="none", says="detected by its .meta sidecar and rebuilt; the next kernel builds and runs")
def test_empty_precompiled_header(sim, cache, bad):
    _damage_then_build(sim, cache, "shim-*.pch", _empty)


@bad_input("missing TMPDIR", given="TMPDIR naming a folder that does not exist (and is not UTF-8)",
           raises="triton_mps.InvalidArgument", says="is not a writable directory (No such file or directory)")
def test_missing_tmpdir(sim, cache, bad, monkeypatch, tmp_path):
    # A name with a byte that is not UTF-8: the message carries it as U+FFFD, not a UnicodeDecodeError.
    monkeypatch.setenv("TMPDIR", os.fsdecode(os.fsencode(str(tmp_path / "gone")) + b"-\xff"))
    with bad.expect() as info:
        triton_mps.compile_msl(fresh_source(), "scaled", sim)
    assert f"TMPDIR='{tmp_path / 'gone'}-\ufffd'" in str(info.value)
    monkeypatch.delenv("TMPDIR")
    run(triton_mps.compile_msl(fresh_source(), "scaled", sim))
