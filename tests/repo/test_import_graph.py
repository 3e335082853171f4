"""No import circle among the modules of python/ (tools/check_imports.py), and none comes back."""

from __future__ import annotations

import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tools"))

import check_imports  # noqa: E402


def test_no_import_circle_in_python() -> None:
    edges = check_imports.graph(REPO / "python")
    found = check_imports.circles(edges)
    assert not found, "import circles (tools/check_imports.py):\n" + "\n".join(
        " -> ".join(check_imports.one_cycle(edges, sorted(c))) for c in found)


def test_the_check_finds_a_circle(tmp_path: Path) -> None:
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from . import b\n")
    (pkg / "b.py").write_text("def f():\n    from .a import g  # a function-level import counts\n")
    (pkg / "c.py").write_text("from .a import b\n")
    edges = check_imports.graph(tmp_path)
    assert check_imports.circles(edges) == [["pkg.a", "pkg.b"]]


def test_no_forbidden_import_in_python() -> None:
    # The language layer never imports the compiler; the math-function table imports nothing of ours.
    bad = check_imports.forbidden(check_imports.graph(REPO / "python"))
    assert not bad, "forbidden imports (tools/check_imports.py FORBIDDEN): " + ", ".join(f"{a} -> {b}" for a, b in bad)


def test_the_check_finds_a_forbidden_import(tmp_path: Path) -> None:
    pkg = tmp_path / "triton_mps"
    (pkg / "language").mkdir(parents=True)
    (pkg / "compiler").mkdir()
    for f in ("__init__.py", "language/__init__.py", "compiler/__init__.py", "compiler/ops.py"):
        (pkg / f).write_text("")
    (pkg / "language" / "libdevice.py").write_text("from ..compiler import ops\n")
    found = check_imports.forbidden(check_imports.graph(tmp_path))
    assert ("triton_mps.language.libdevice", "triton_mps.compiler") in found or any(
        a == "triton_mps.language.libdevice" and b.startswith("triton_mps.compiler") for a, b in found), found
