"""tests/ keeps the layout tests/README.md describes: test files in subject folders, names unique
across the tree (pytest imports them by basename: no __init__.py anywhere), no date names."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]
# A name that says when, not what: a letter or number suffix, "ext"/"more"/"new", an issue number.
DATE_NAME = re.compile(r"(_[a-z]|_\d+|_ext\d*|_more|_new|_issue\d*)\.py$|issue\d+")


def _test_files() -> list[Path]:
    return sorted(p for p in TESTS.rglob("test_*.py") if "__pycache__" not in p.parts)


def test_every_test_file_is_in_a_subject_folder() -> None:
    assert [p.name for p in _test_files() if p.parent == TESTS] == []


def test_test_file_names_are_unique() -> None:
    twice = [name for name, n in Counter(p.name for p in _test_files()).items() if n > 1]
    assert twice == []


def test_no_package_files() -> None:
    assert [str(p.relative_to(TESTS)) for p in TESTS.rglob("__init__.py")] == []


def test_no_date_names() -> None:
    modules = [p for p in TESTS.rglob("*.py") if "__pycache__" not in p.parts]
    assert [str(p.relative_to(TESTS)) for p in modules if DATE_NAME.search(p.name)] == []


def test_the_date_name_rule_can_fail() -> None:
    for bad in ("test_regressions_kernels_b.py", "test_fp64_math_ext2.py", "kernels_testing_b.py",
                "test_metal_emu_issue18.py", "test_fp64_math_more.py"):
        assert DATE_NAME.search(bad), bad
    for good in ("test_spin_locks.py", "test_fp64_math_core.py", "test_fp8.py", "test_int_to_bfloat.py"):
        assert not DATE_NAME.search(good), good
