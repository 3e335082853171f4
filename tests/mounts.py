"""Real mounts for tests of full and read-only disks (tests/errors/test_cache_disk.py,
tests/metal/test_metal_emu.py): a size-limited tmpfs, a read-only bind mount. They need root
(CI runs as root); elsewhere the test skips, saying so."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest


@contextlib.contextmanager
def mounted(args: list[str], target: Path) -> Iterator[Path]:
    """`mount <args> <target>` for the block, unmounted after (lazily: a child may still hold it)."""
    target.mkdir(parents=True, exist_ok=True)
    if os.geteuid() != 0 or not shutil.which("mount"):
        pytest.skip("needs root to mount a small tmpfs or a read-only bind mount (CI runs as root)")
    r = subprocess.run(["mount", *args, str(target)], capture_output=True, text=True)
    if r.returncode != 0:
        pytest.skip(f"this machine allows no mount here: {r.stderr.strip()}")
    try:
        yield target
    finally:
        subprocess.run(["umount", "-l", str(target)], check=False)


@contextlib.contextmanager
def read_only_view(source: Path, target: Path) -> Iterator[Path]:
    """`source` seen read-only at `target` (a bind mount remounted read-only: as root, permission
    bits alone do not stop writes)."""
    with mounted(["--bind", str(source)], target) as view:
        if subprocess.run(["mount", "-o", "remount,bind,ro", str(view)], capture_output=True).returncode != 0:
            pytest.skip("cannot remount the bind mount read-only")
        try:
            (view / ".probe").write_bytes(b"x")
        except OSError:
            yield view
            return
        (view / ".probe").unlink()
        pytest.fail(f"{view} is still writable after a read-only remount")
