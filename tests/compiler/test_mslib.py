"""The MSL helper library's registry (compiler/mslib/registry.py): what an entry defines is read
from its text, and every entry is complete with its dependencies."""

from __future__ import annotations

import re

import pytest
from triton_mps.compiler import mslib  # noqa: F401  (registers every family)
from triton_mps.compiler.mslib import registry


def _deps_closure(name: str, acc: list[str]) -> list[str]:
    for d in registry.LIB[name].deps:
        if d not in acc:
            _deps_closure(d, acc)
            acc.append(d)
    return acc


def test_every_entry_calls_only_what_it_or_its_dependencies_define():
    """Emitting an entry with `use` emits everything its text calls (no hidden order dependence)."""
    assert len(registry.LIB) > 60
    for name, entry in registry.LIB.items():
        assert entry.defines, f"{name} defines no tmps_* function or table"
        available = set(entry.defines)
        for d in _deps_closure(name, []):
            available |= registry.LIB[d].defines
        called = set(re.findall(r"\b(tmps_\w+)\s*[(\[]", entry.text))
        library_names = set(registry._DEFINER)
        assert (called & library_names) <= available, (name, sorted((called & library_names) - available))


def test_definer_reads_definitions_from_the_text():
    assert registry.definer("tmps_f64_add") == "tmps_f64_add"
    assert registry.definer("tmps_f64_round_int") == "tmps_f64_rint"  # not its entry's name
    assert registry.definer("tmps_f64_sinh") == "tmps_f64_expk"
    assert registry.definer("tmps_f64_2opi") == "tmps_f64_sincos"  # a constant table
    assert registry.definer("tmps_erfc") == "tmps_erfc"  # fp32 helpers too
    with pytest.raises(KeyError):
        registry.definer("tmps_no_such_function")


class _Emitter:
    def __init__(self) -> None:
        self.helpers: dict[str, str] = {}

    def helper(self, key: str, text: str) -> None:
        self.helpers.setdefault(key, text)


class _Ctx:
    def __init__(self) -> None:
        self.e = _Emitter()


def test_use_emits_dependencies_first_once():
    ctx = _Ctx()
    assert registry.call(ctx, "tmps_f64_sub", "a", "b") == "tmps_f64_sub(a, b)"
    assert list(ctx.e.helpers) == ["tmps_f64_base", "tmps_f64_add", "tmps_f64_sub"]
    registry.use_called(ctx, "tmps_erfc({0}) + tmps_f64_add({0}, {1}) + fabs({0})")
    assert list(ctx.e.helpers) == ["tmps_f64_base", "tmps_f64_add", "tmps_f64_sub", "tmps_erf", "tmps_erfc"]


def test_a_name_is_defined_once():
    with pytest.raises(ValueError, match="defined by both"):
        registry.entry("tmps_test_duplicate", (), "static inline ulong tmps_f64_add(ulong a) { return a; }\n")
    assert "tmps_test_duplicate" not in registry.LIB
