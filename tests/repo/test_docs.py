"""docs/ stays true to the code: every environment variable the code reads is in
docs/configuration.md, and docs/supported-ops.md matches the compiler's op table."""

from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
ENV_NAME = re.compile(r"\b(TRITON_MPS_[A-Z0-9_]+|TRITON_METAL_[A-Z0-9_]+|MPS_MAX_[A-Z0-9_]+)\b")
SOURCES = ["python", "csrc", "tools", "scripts", "examples", "CMakeLists.txt"]


def code_env_vars() -> set[str]:
    found: set[str] = set()
    for top in SOURCES:
        path = ROOT / top
        files = [path] if path.is_file() else [p for p in path.rglob("*") if p.is_file()]
        for f in files:
            if f.suffix in (".py", ".cpp", ".h", ".sh", ".cmake", ".txt", "") and "__pycache__" not in f.parts:
                found |= set(ENV_NAME.findall(f.read_text(errors="ignore")))
    return found


def test_every_environment_variable_is_documented():
    documented = set(re.findall(r"^\| `([A-Z0-9_]+)` \|", (ROOT / "docs/configuration.md").read_text(), re.M))
    missing = sorted(code_env_vars() - documented)
    assert not missing, f"add these to the table in docs/configuration.md: {missing}"
    assert {"TRITON_BACKEND", "MPS_MAX_POOL_SIZE", "MPS_MAX_BUFFER_AGE", "TRITON_METAL_DEBUG"} <= documented


def test_supported_ops_document_is_current():
    sys.path.insert(0, str(ROOT / "tools" / "supported_ops"))
    try:
        import generate
    finally:
        sys.path.pop(0)
    ops = generate.lowered_ops()
    text = (ROOT / "docs/supported-ops.md").read_text()
    for name in ops:
        assert f"| `{name}` |" in text, f"{name} is lowered but not in docs/supported-ops.md"
    assert text == generate.expected_document(), "run: python tools/supported_ops/generate.py write"
