"""docs/errors.md is generated from the @bad_input tests and must be up to date."""

from __future__ import annotations

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _generator():
    spec = importlib.util.spec_from_file_location("gen_errors_doc", ROOT / "tools" / "gen_errors_doc.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_errors_doc_is_up_to_date():
    gen = _generator()
    want = gen.render()
    have = (ROOT / "docs" / "errors.md").read_text()
    assert have == want, "docs/errors.md is out of date: run python tools/gen_errors_doc.py"


def test_at_least_thirty_classes():
    assert len(_generator().rows()) >= 30
