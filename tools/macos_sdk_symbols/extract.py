#!/usr/bin/env python3
"""Write the exported symbol names of one library of a macOS SDK as a plain list.

Input: the library's text stub from an SDK (`<sdk>/System/Library/Frameworks/X.framework/.../X.tbd`
or `<sdk>/usr/lib/libX.tbd`), TAPI format v4 (YAML, what the macOS 14, 15 and 26 SDKs ship) or
v5 (JSON). Output: one name per line, sorted, after a `#` header that names the SDK version, the
library's install name and where the .tbd came from. tools/macos_check.py turns such a list back
into a one-target .tbd and links against it (tools/macos_sdk_symbols/README.md).

Kept: the `symbols`, `weak-symbols` and `thread-local-symbols` exported for the target
(default arm64-macos). Objective-C class and ivar entries are left out unless --objc is given:
metal-cpp looks classes up by name at run time, so no object of ours imports `_OBJC_CLASS_$_*`.
--prefix keeps only names starting with one of the given prefixes (say so in --note).

    python tools/macos_sdk_symbols/extract.py Metal.tbd --sdk 14.5 \\
        --source "github.com/alexey-lysiuk/macos-sdk@<commit>:MacOSX14.5.sdk/.../Metal.tbd" \\
        -o tools/macos_sdk_symbols/14.5/Metal.txt
"""
from __future__ import annotations

import argparse
import json
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

TARGET = "arm64-macos"
SYMBOL_KEYS = ("symbols", "weak-symbols", "thread-local-symbols")
OBJC_KEYS = ("objc-classes", "objc-eh-types", "objc-ivars")


@dataclass
class Exports:
    install_name: str
    names: set[str] = field(default_factory=set)


def _objc_names(key: str, value: str) -> list[str]:
    if key == "objc-classes":
        return [f"_OBJC_CLASS_$_{value}", f"_OBJC_METACLASS_$_{value}"]
    if key == "objc-eh-types":
        return [f"_OBJC_EHTYPE_$_{value}"]
    return [f"_OBJC_IVAR_$_{value}"]


def _v4_entries(text: str) -> tuple[str, list[tuple[str, dict[str, list[str]]]]]:
    """(install-name, [(section, {key: values})]) of a TAPI v4 document."""
    install_name = ""
    entries: list[tuple[str, dict[str, list[str]]]] = []
    section = ""
    current: dict[str, list[str]] | None = None
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        i += 1
        if not line.strip() or line.lstrip().startswith("#") or line.startswith(("---", "...")):
            continue
        m = re.match(r"^(\s*)(-\s+)?([a-z-]+):\s*(.*)$", line)
        if not m:
            raise ValueError(f"unexpected .tbd line {i}: {line!r}")
        indent, dash, key, rest = m.groups()
        if rest.startswith("["):
            buf = rest
            while "]" not in buf:
                if i >= len(lines):
                    raise ValueError(f"unterminated list for {key!r}")
                buf += " " + lines[i].strip()
                i += 1
            inner = buf[buf.index("[") + 1:buf.rindex("]")]
            values = [v.strip().strip("'\"") for v in inner.split(",") if v.strip()]
        else:
            values = [rest.strip().strip("'\"")] if rest.strip() else []
        if not indent and not dash:  # top-level key: a scalar, a list, or a section header
            if key == "install-name":
                install_name = values[0] if values else ""
            section, current = key, None
            continue
        if dash or current is None:
            current = {}
            entries.append((section, current))
        current[key] = values
    return install_name, entries


def tbd_exports(text: str, target: str = TARGET, objc: bool = False) -> Exports:
    """The names a .tbd (TAPI v4 YAML or v5 JSON) exports for `target`."""
    if text.lstrip().startswith("{"):
        return _v5_exports(json.loads(text), target, objc)
    install_name, entries = _v4_entries(text)
    out = Exports(install_name)
    for section, entry in entries:
        if section != "exports" or target not in entry.get("targets", []):
            continue
        for key in SYMBOL_KEYS:
            out.names.update(entry.get(key, []))
        if objc:
            for key in OBJC_KEYS:
                for value in entry.get(key, []):
                    out.names.update(_objc_names(key, value))
    return out


def _v5_exports(doc: dict, target: str, objc: bool) -> Exports:
    main = doc["main_library"]
    install_name = main["install_names"][0]["name"]
    out = Exports(install_name)
    for block in main.get("exported_symbols", []):
        if "targets" in block and target not in block["targets"]:
            continue
        for kind in ("data", "text"):
            part = block.get(kind, {})
            out.names.update(part.get("global", []))
            out.names.update(part.get("weak", []))
            out.names.update(part.get("thread_local", []))
            if objc:
                for value in part.get("objc_class", []):
                    out.names.update(_objc_names("objc-classes", value))
                for value in part.get("objc_eh_type", []):
                    out.names.update(_objc_names("objc-eh-types", value))
                for value in part.get("objc_ivar", []):
                    out.names.update(_objc_names("objc-ivars", value))
    return out


def format_list(exports: Exports, sdk: str, library: str, source: str, target: str,
                note: str = "") -> str:
    header = [
        f"# Exported symbol names of {library} for {target} in the macOS {sdk} SDK (names only).",
        f"# source: {source}",
        f"# install-name: {exports.install_name}",
        "# kept: symbols, weak-symbols, thread-local-symbols of that target; Objective-C class/ivar",
        "#   entries left out (metal-cpp looks classes up at run time).",
    ]
    if note:
        header += [f"# note: {line}" for line in note.splitlines()]
    header.append("# regenerate: python tools/macos_sdk_symbols/extract.py <tbd> --sdk "
                  f"{sdk} --source '<repo@commit:path>' -o <this file>")
    return "\n".join(header + sorted(exports.names)) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("tbd", type=Path)
    ap.add_argument("--sdk", required=True, help="SDK version, e.g. 14.5")
    ap.add_argument("--source", required=True, help="where the .tbd came from (repo@commit:path)")
    ap.add_argument("--library", help="library name for the header (default: the file's stem)")
    ap.add_argument("--target", default=TARGET)
    ap.add_argument("--objc", action="store_true", help="also list _OBJC_CLASS_$_ etc. names")
    ap.add_argument("--prefix", nargs="+", help="keep only names with these prefixes")
    ap.add_argument("--note", default="", help="extra header line(s)")
    ap.add_argument("-o", "--output", type=Path)
    args = ap.parse_args(argv)
    exports = tbd_exports(args.tbd.read_text(), args.target, args.objc)
    if not exports.install_name:
        print(f"{args.tbd}: no install-name", file=sys.stderr)
        return 1
    if args.prefix:
        exports.names = {n for n in exports.names if n.startswith(tuple(args.prefix))}
    text = format_list(exports, args.sdk, args.library or args.tbd.stem, args.source, args.target,
                       args.note)
    if args.output:
        args.output.parent.mkdir(parents=True, exist_ok=True)
        args.output.write_text(text)
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
