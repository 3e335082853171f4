#!/usr/bin/env python3
"""Compile and link the macOS build of the native core on Linux (no Mac needed).

What it does, for `-target aarch64-macos` with zig's clang (PyPI `ziglang`):
  1. compiles every C++ translation unit a Mac build compiles: csrc/*.cpp (the core), csrc/sim/*.cpp,
     csrc/metal/*.cpp except no_metal.cpp, csrc/sim/fiber_aarch64.S, csrc/python/*.cpp and
     nanobind's own sources (the file list is read from the tree at run time; sources that
     CMakeLists.txt names but that do not exist yet are reported and skipped);
  2. links them into a Mach-O dylib (`-shared`: zig's linker crashes on `-bundle`) against
     text .tbd stubs, so a metal-cpp API misuse fails to compile and a missing or duplicated
     *_PRIVATE_IMPLEMENTATION fails to link.

Headers: metal-cpp from the wheel pinned in third_party/metal-cpp/pin.txt (downloaded once with
pip into the cache dir, checked against its SHA-256), plus the few stand-ins for Apple framework
headers that zig does not ship (tools/macos_stubs/include/).

Link inputs:
  - tools/macos_stubs/tbd/*.tbd: Metal, Foundation, CoreFoundation, QuartzCore, libobjc, written
    by hand with only the symbol names our code uses. A new Metal symbol in our code therefore
    fails the link until it is added there, on purpose: the list is the record of what we use.
  - libSystem: zig's own .tbd.
  - libc++ (generated): on a Mac, libc++ is the system's /usr/lib/libc++.1.dylib. Linking zig's
    libc++ instead would make zig build it from source on a cold cache (~80 s), so the check
    lists the C++ runtime names the objects import (std::, operator new/delete, __cxa_*) in a
    generated libc++ stub. Only names of those shapes go there; nothing else is forgiven.
  - Python (generated): a Mac build links the module with nanobind's list of CPython symbols as
    `-U` flags (nanobind/cmake/darwin-ld-cpython.sym). zig's linker has no `-U`, and
    `-undefined dynamic_lookup` would forgive every undefined symbol and defeat the check, so
    the same list becomes a Python stub .tbd.

pyconfig.h: Python.h takes its configuration from the host's (Linux) pyconfig.h. That works for
macOS because Python.h includes pymacconfig.h under __APPLE__, which redefines every
architecture-dependent value (sizes, endianness, x87) the public headers read; the remaining
Linux-only values are read only by CPython's own .c files. Distributions that replace pyconfig.h
by a multiarch dispatcher (Debian's /usr/include/python3.X) are handled by pointing the compile
at the real, architecture-specific file.

Exit status: 0 when everything compiled and linked; 1 with the compiler or linker messages.
"""
from __future__ import annotations

import argparse
import concurrent.futures
import hashlib
import os
import re
import shutil
import struct
import subprocess
import sys
import sysconfig
import tempfile
import time
import zipfile
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
STUBS = Path(__file__).resolve().parent / "macos_stubs"
TARGET = "aarch64-macos"

# Names the C++ runtime (libc++ / libc++abi) exports, as mangled on Darwin (extra leading "_").
CXX_RUNTIME = re.compile(
    r"^(__Z(T[IVSTC])?N?K?St"        # std:: and std::__1:: functions, vtables, VTTs, typeinfo
    r"|__ZT[IVS]N10__cxxabiv1"        # RTTI classes of libc++abi
    r"|__Z(nw|na|dl|da)[mjPvSt]"      # operator new / delete
    r"|___cxa_|___gxx_personality_v0$|___dynamic_cast$)"
)
# tmps:: names, tolerated undefined only while CMake-listed sources do not exist yet.
TMPS_NAMES = re.compile(r"^__ZN(K)?4tmps|^__ZT[IVS]N4tmps")


# --- tools -------------------------------------------------------------------------------

def zig_command() -> list[str]:
    try:
        import ziglang  # noqa: F401  (the PyPI package ships the zig binary)
    except ImportError:
        zig = shutil.which("zig")
        if not zig:
            fail("zig not found: pip install ziglang")
        return [zig]
    zig = Path(ziglang.__file__).parent / "zig"
    return [str(zig)] if zig.exists() else [sys.executable, "-m", "ziglang"]


def fail(message: str) -> None:
    print(f"macos_check: FAILED: {message}", file=sys.stderr)
    sys.exit(1)


def default_cache_dir() -> Path:
    if os.environ.get("TRITON_MPS_CHECK_CACHE"):
        return Path(os.environ["TRITON_MPS_CHECK_CACHE"])
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "triton_mps" / "macos-check"


# --- metal-cpp from the pinned wheel ----------------------------------------------------------

def read_pin() -> dict[str, str]:
    pin = {}
    for line in (ROOT / "third_party" / "metal-cpp" / "pin.txt").read_text().splitlines():
        if "=" in line and not line.startswith("#"):
            key, value = line.split("=", 1)
            pin[key.strip()] = value.strip()
    return pin


def sha256_of(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def metal_cpp_headers(cache: Path) -> Path:
    """The pinned metal-cpp headers, unpacked under the cache dir (downloaded once)."""
    pin = read_pin()
    dest = cache / f"metal-cpp-{pin['package']}-{pin['version']}"
    if (dest / "Metal" / "Metal.hpp").exists():
        return dest
    wheel = cache / pin["wheel"]
    if not wheel.exists() or sha256_of(wheel) != pin["sha256"]:
        platform = pin["wheel"].rsplit("-", 1)[1].removesuffix(".whl")
        with tempfile.TemporaryDirectory(dir=cache) as tmp:
            cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
                   "--platform", platform, "--dest", tmp, f"{pin['package']}=={pin['version']}"]
            print(f"macos_check: downloading {pin['wheel']} (once; cached in {cache})", flush=True)
            r = subprocess.run(cmd, capture_output=True, text=True)
            got = Path(tmp) / pin["wheel"]
            if r.returncode != 0 or not got.exists():
                fail(f"pip could not download {pin['wheel']}:\n{r.stdout}{r.stderr}")
            os.replace(got, wheel)
    have = sha256_of(wheel)
    if have != pin["sha256"]:
        wheel.unlink()
        fail(f"{pin['wheel']} has SHA-256 {have}; pin.txt expects {pin['sha256']}")
    prefix = "mlx/include/metal_cpp/"
    tmp = Path(tempfile.mkdtemp(dir=cache))
    try:
        with zipfile.ZipFile(wheel) as z:
            for name in z.namelist():
                if name.startswith(prefix) and not name.endswith("/"):
                    out = tmp / name[len(prefix):]
                    out.parent.mkdir(parents=True, exist_ok=True)
                    out.write_bytes(z.read(name))
        shutil.rmtree(dest, ignore_errors=True)
        try:
            os.replace(tmp, dest)  # whole tree at once: a crash never leaves half the headers
        except OSError:
            if not (dest / "Metal" / "Metal.hpp").exists():  # lost a race with another run: fine
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return dest


# --- Python / nanobind ------------------------------------------------------------------------

def python_include_flags(build: Path) -> list[str]:
    include = Path(sysconfig.get_paths()["include"])
    config_h = include / "pyconfig.h"
    flags = ["-isystem", str(include)]
    text = config_h.read_text(errors="replace") if config_h.exists() else ""
    if "multiarch" in text or "#  include <" in text:
        # Debian-style dispatcher keyed on __linux__: give the compile a pyconfig.h that is the
        # real, architecture-specific one (found through the interpreter's own config).
        real = Path(sysconfig.get_config_h_filename())
        if real == config_h:
            multiarch = sysconfig.get_config_var("MULTIARCH") or ""
            real = include.parent / multiarch / include.name / "pyconfig.h"
        if not real.exists():
            fail(f"cannot find the real pyconfig.h behind {config_h}")
        override = build / "pyconfig"
        override.mkdir(exist_ok=True)
        # Python.h includes "pyconfig.h" from its own directory first; a copy of the include
        # directory with the real file in place is the only order-independent override.
        shutil.copytree(include, override / include.name, dirs_exist_ok=True)
        shutil.copy(real, override / include.name / "pyconfig.h")
        flags = ["-isystem", str(override / include.name)]
    return flags


def nanobind_paths() -> tuple[Path, Path]:
    import nanobind
    return Path(nanobind.include_dir()), Path(nanobind.source_dir())


def python_symbols_tbd(path: Path) -> Path:
    _, src = nanobind_paths()
    sym = src.parent / "cmake" / "darwin-ld-cpython.sym"
    names = [line.split()[1] for line in sym.read_text().splitlines() if line.startswith("-U ")]
    write_tbd(path, "@rpath/python-symbols-for-link-check.dylib", names,
              "Generated by tools/macos_check.py from nanobind's darwin-ld-cpython.sym (the -U list "
              "a Mac build passes to ld); resolved by the interpreter at import time.")
    return path


# --- Mach-O symbols ---------------------------------------------------------------------------

def macho_symbols(path: Path) -> tuple[set[str], set[str]]:
    """(undefined, defined) external symbol names of a 64-bit Mach-O object."""
    data = path.read_bytes()
    magic, _, _, _, ncmds, _, _, _ = struct.unpack_from("<IiiIIIII", data, 0)
    if magic != 0xFEEDFACF:
        raise ValueError(f"{path}: not a 64-bit little-endian Mach-O file")
    undefined, defined = set(), set()
    offset = 32
    for _ in range(ncmds):
        cmd, size = struct.unpack_from("<II", data, offset)
        if cmd == 0x2:  # LC_SYMTAB
            symoff, nsyms, stroff, _ = struct.unpack_from("<IIII", data, offset + 8)
            for i in range(nsyms):
                strx, ntype, _, _, value = struct.unpack_from("<IBBHQ", data, symoff + 16 * i)
                if ntype & 0xE0 or not ntype & 0x01:  # debug entry, or not external
                    continue
                end = data.index(b"\0", stroff + strx)
                name = data[stroff + strx:end].decode()
                kind = ntype & 0x0E
                if kind == 0x0 and value == 0:
                    undefined.add(name)
                elif kind in (0x0, 0xE):  # common symbol, or defined in a section
                    defined.add(name)
        offset += size
    return undefined, defined


def write_tbd(path: Path, install_name: str, symbols, comment: str) -> None:
    lines = ["--- !tapi-tbd", f"# {comment}", "tbd-version:     4", "targets:         [ arm64-macos ]",
             f"install-name:    '{install_name}'"]
    symbols = sorted(symbols)
    if symbols:
        lines += ["exports:", "  - targets:         [ arm64-macos ]", "    symbols:         ["]
        lines += [f"      '{s}'," for s in symbols[:-1]] + [f"      '{symbols[-1]}'", "    ]"]
    lines.append("...")
    path.write_text("\n".join(lines) + "\n")


# --- sources ----------------------------------------------------------------------------------

@dataclass
class Unit:
    source: Path
    python: bool = False        # needs Python and nanobind headers
    nanobind_lib: bool = False  # one of nanobind's own sources


def module_sources(root: Path) -> set[str]:
    """File names CMakeLists.txt compiles into the nanobind module (they need Python headers)."""
    m = re.search(r"nanobind_add_module\(\s*_core\s+NB_STATIC([^)]*)\)", (root / "CMakeLists.txt").read_text())
    names = {Path(tok).name for tok in m.group(1).split()} if m else set()
    return names or {"bindings.cpp"}


def tree_units(root: Path) -> tuple[list[Unit], list[str]]:
    """The TUs a Mac build compiles, from the tree; and CMake-listed sources that are missing."""
    csrc = root / "csrc"
    python_tus = module_sources(root)
    units = []
    for pattern in ("*.cpp", "python/*.cpp", "sim/*.cpp", "metal/*.cpp"):
        for path in sorted(csrc.glob(pattern)):
            if path.name == "no_metal.cpp":
                continue
            units.append(Unit(path, python=path.name in python_tus))
    fiber = csrc / "sim" / "fiber_aarch64.S"
    if fiber.exists():
        units.append(Unit(fiber))
    expected = set()
    cmake = root / "CMakeLists.txt"
    if cmake.exists():
        expected = set(re.findall(r"\bcsrc/[\w/.-]+\.(?:cpp|S)\b", cmake.read_text()))
    expected = {e for e in expected if not e.endswith(("no_metal.cpp", "fiber_x86_64.S"))}
    present = {str(u.source.relative_to(root)) for u in units}
    return units, sorted(expected - present)


def nanobind_units() -> list[Unit]:
    _, src = nanobind_paths()
    return [Unit(src / "nb_combined.cpp", python=True, nanobind_lib=True)]


# --- compile and link -------------------------------------------------------------------------

def compile_unit(zig: list[str], unit: Unit, obj: Path, flags: list[str],
                 env: dict) -> tuple[Unit, str | None]:
    lang = ["-x", "assembler-with-cpp"] if unit.source.suffix == ".S" else ["-x", "c++", "-std=c++17"]
    cmd = [*zig, "c++", "-target", TARGET, *lang, *flags, "-c", str(unit.source), "-o", str(obj)]
    r = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if r.returncode != 0:
        return unit, (r.stdout + r.stderr).strip() or f"exit status {r.returncode}"
    if r.stderr.strip():
        print(r.stderr.rstrip(), file=sys.stderr)  # warnings: shown, not fatal (as in CMake builds)
    return unit, None


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--root", type=Path, default=ROOT, help="repository root (default: this checkout)")
    ap.add_argument("--sources", nargs="+", type=Path,
                    help="check exactly these TUs instead of the tree's (no Python/nanobind unless --python)")
    ap.add_argument("--add", nargs="+", type=Path, default=[],
                    help="extra TUs (a file named bindings.cpp gets Python/nanobind flags)")
    ap.add_argument("--python", action="store_true", help="with --sources: also compile nanobind")
    ap.add_argument("--metal-cpp-dir", type=Path, default=os.environ.get("METAL_CPP_DIR") or None)
    ap.add_argument("--cache-dir", type=Path, default=default_cache_dir())
    ap.add_argument("--build-dir", type=Path, help="keep objects here (default: a temporary dir)")
    ap.add_argument("--jobs", type=int, default=2)
    args = ap.parse_args(argv)

    t0 = time.monotonic()
    root = args.root.resolve()
    cache = args.cache_dir.resolve()
    cache.mkdir(parents=True, exist_ok=True)
    zig = zig_command()
    env = dict(os.environ)
    # zig's caches (compiler_rt for the target, compile results) under ours: reruns are fast.
    env.setdefault("ZIG_GLOBAL_CACHE_DIR", str(cache / "zig"))
    env.setdefault("ZIG_LOCAL_CACHE_DIR", str(cache / "zig"))

    missing: list[str] = []
    if args.sources:
        units = [Unit(p.resolve(), python=p.name == "bindings.cpp") for p in args.sources]
    else:
        units, missing = tree_units(root)
    units += [Unit(p.resolve(), python=p.name == "bindings.cpp") for p in args.add]
    for m in missing:
        print(f"macos_check: note: {m} (in CMakeLists.txt) does not exist yet: skipped")
    with_python = any(u.python for u in units) or args.python
    if with_python:
        units += nanobind_units()

    metal_cpp = args.metal_cpp_dir.resolve() if args.metal_cpp_dir else metal_cpp_headers(cache)
    if not (metal_cpp / "Metal" / "Metal.hpp").exists():
        fail(f"no Metal/Metal.hpp under {metal_cpp}")

    tmp = None
    if args.build_dir:
        build = args.build_dir.resolve()
        build.mkdir(parents=True, exist_ok=True)
    else:
        tmp = tempfile.TemporaryDirectory(prefix="macos-check-")
        build = Path(tmp.name)

    # -O1: zig's -O0 adds UBSan runtime imports that no Mac build has. -g0: faster.
    base = ["-O1", "-g0", "-fPIC", "-isystem", str(STUBS / "include"), "-isystem", str(metal_cpp)]
    core = [*base, "-Wall", "-Wextra", "-Wno-unused-parameter", "-I", str(root / "csrc"),
            f'-DTMPS_SOURCE_SHIM_DIR="{root / "csrc" / "sim" / "include"}"']
    py_flags: list[str] = []
    if with_python:
        nb_include, nb_src = nanobind_paths()
        py_flags = [*python_include_flags(build), "-isystem", str(nb_include),
                    "-isystem", str(nb_src.parent / "ext" / "robin_map" / "include"), "-fvisibility=hidden"]
    jobs = []
    for i, unit in enumerate(units):
        if unit.nanobind_lib:
            flags = [*base, *py_flags, "-DNB_BUILD", "-fno-strict-aliasing"]
        elif unit.python:
            flags = [*core, *py_flags]
        else:
            flags = core
        obj = build / f"{i:03d}_{unit.source.stem}.o"
        jobs.append((unit, obj, flags))

    print(f"macos_check: compiling {len(jobs)} TUs for {TARGET} (metal-cpp: {metal_cpp})", flush=True)
    failures = []
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        futures = [pool.submit(compile_unit, zig, u, o, f, env) for u, o, f in jobs]
        for fut in futures:
            unit, error = fut.result()
            if error:
                failures.append(f"--- compile error in {unit.source}:\n{error}")
    if failures:
        print("\n".join(failures), file=sys.stderr)
        fail(f"{len(failures)} of {len(jobs)} TUs did not compile")

    # Link: hand-written framework stubs + generated C++-runtime/Python stubs.
    objects = [o for _, o, _ in jobs]
    undefined, defined = set(), set()
    for o in objects:
        u, d = macho_symbols(o)
        undefined |= u
        defined |= d
    undefined -= defined
    tbds = sorted((STUBS / "tbd").glob("*.tbd"))
    cxx = {s for s in undefined if CXX_RUNTIME.match(s)}
    write_tbd(build / "libc++.tbd", "/usr/lib/libc++.1.dylib", cxx,
              "Generated by tools/macos_check.py: the C++ runtime names the objects import.")
    tbds.append(build / "libc++.tbd")
    if with_python:
        tbds.append(python_symbols_tbd(build / "python.tbd"))
    if missing:
        pending = {s for s in undefined if TMPS_NAMES.match(s)}
        if pending:
            print(f"macos_check: note: {len(pending)} tmps:: symbols may be defined by the missing "
                  f"sources; tolerated until they exist")
            write_tbd(build / "pending.tbd", "@rpath/pending-sources.dylib", pending,
                      "Generated: tmps:: names whose sources do not exist yet.")
            tbds.append(build / "pending.tbd")

    dylib = build / "_core.dylib"
    cmd = [*zig, "c++", "-target", TARGET, "-shared", "-nostdlib++", "-O1",
           *map(str, objects), *map(str, tbds), "-o", str(dylib)]
    r = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if r.returncode != 0:
        lines = (r.stdout + r.stderr).strip().splitlines()
        shown = lines[:80] + ([f"... ({len(lines) - 80} more lines)"] if len(lines) > 80 else [])
        print("\n".join(shown), file=sys.stderr)
        fail("link error")
    header = dylib.read_bytes()[:16]
    magic, cputype, _, filetype = struct.unpack("<IiiI", header)
    if magic != 0xFEEDFACF or cputype != 0x0100000C or filetype != 6:  # arm64 MH_DYLIB
        fail(f"{dylib} is not an arm64 Mach-O dylib")
    if any(u.python and not u.nanobind_lib for u in units):
        exported = macho_symbols(dylib)[1]
        if not any(s.startswith("_PyInit_") for s in exported):
            fail(f"{dylib.name} exports no PyInit_* function: Python could not import it")
    print(f"macos_check: OK: {len(jobs)} TUs compiled, {dylib.name} linked "
          f"({dylib.stat().st_size // 1024} KiB) in {time.monotonic() - t0:.1f} s")
    if tmp:
        tmp.cleanup()
    return 0


if __name__ == "__main__":
    sys.exit(main())
