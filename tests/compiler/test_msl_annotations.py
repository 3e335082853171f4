"""The MSL annotations (facts the compiler writes into the MSL text for readers that get only the
text) are one list, compiler/abi.py's ANNOTATIONS, mirrored in csrc/msl_annotations.h: the two
must agree, and every writer and reader they name must exist and still spell the annotation."""

from __future__ import annotations

import re
from pathlib import Path

from triton_mps.compiler import abi

ROOT = Path(__file__).resolve().parents[2]
HEADER = ROOT / "csrc" / "msl_annotations.h"


def _header_list() -> list[tuple[str, str, str]]:
    """(name, constant, text) of every entry of the header's kAnnotations, in order."""
    text = HEADER.read_text()
    consts = dict(re.findall(r'inline constexpr std::string_view (k\w+) = "((?:[^"\\]|\\.)*)";', text))
    table = text[text.index("kAnnotations[] = {"):]
    table = table[: table.index("};")]
    entries = re.findall(r'\{"(\w+)", (k\w+)\}', table)
    assert entries, "no entries found in kAnnotations"
    return [(name, const, consts[const]) for name, const in entries]


def test_python_and_cpp_lists_agree():
    python = [(a.name, a.text) for a in abi.ANNOTATIONS]
    cpp = [(name, text) for name, _, text in _header_list()]
    assert python == cpp


def test_names_and_texts_are_distinct():
    assert len({a.name for a in abi.ANNOTATIONS}) == len(abi.ANNOTATIONS)
    assert len({a.text for a in abi.ANNOTATIONS}) == len(abi.ANNOTATIONS)


def test_writers_and_readers_spell_the_annotation():
    consts = {name: const for name, const, _ in _header_list()}
    for a in abi.ANNOTATIONS:
        assert a.writers and a.readers, a.name
        for rel in a.writers + a.readers:
            path = ROOT / rel
            assert path.is_file(), f"{a.name}: {rel} does not exist"
            text = path.read_text()
            if path.suffix == ".py":
                # the literal, or through abi.py (its constants and helpers)
                ok = a.text.strip() in text or "abi" in text
            else:
                ok = a.text.strip() in text or (consts[a.name] in text and "msl_annotations.h" in text)
            assert ok, f"{a.name}: {rel} neither spells {a.text!r} nor uses the shared constant"


def test_effect_threads_hint_is_the_annotation():
    assert abi.effect_threads_hint(7) == "// tmps-sim: effect_threads=7"
    assert abi.threads_marker(128).startswith(abi.THREADS_MARKER)
