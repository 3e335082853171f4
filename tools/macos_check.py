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

Per SDK: the check links once per macOS SDK we support (tools/macos_sdk_symbols/<version>/, today
14.5, 15.5 and 26.0), after compiling every TU once and only the metal-cpp implementation TUs (those
that #define a *_PRIVATE_IMPLEMENTATION macro) once per SDK. Those TUs are the ones whose imports
depend on the SDK: metal-cpp (macOS 26) weak-imports its constants (MTLTensorDomain, ...) only when
the SDK's <AvailabilityVersions.h> defines __MAC_26_0, and looks them up with dlsym otherwise. zig
ships the newest SDK's availability macros, so for an older SDK the implementation TU is compiled
with a generated prelude (-include) that removes every macro newer than that SDK
(<version>/availability.txt). --no-sdk-availability compiles them once with zig's macros instead
(what the check did before: it makes the 14.5 and 15.5 links fail on _MTLTensorDomain and
_MTLLogStateErrorDomain, symbols those SDKs' Metal.tbd do not export).

Link inputs, per SDK:
  - Metal, Foundation, CoreFoundation, QuartzCore, libobjc: a .tbd generated from the SDK's real
    symbol list <version>/<library>.txt (taken from public copies of the SDKs' .tbd files, see
    tools/macos_sdk_symbols/README.md). Where no list exists for a library in an SDK, the
    hand-written stub tools/macos_stubs/tbd/<library>.tbd is used and the check says so: those list
    only the names our code uses (the record of what we import; a new import fails the link there
    until it is added).
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

Exit status: 0 when everything compiled and linked for every SDK; 1 with the compiler or linker
messages (a line per SDK says OK or lists the undefined symbols).
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
SDK_LISTS = Path(__file__).resolve().parent / "macos_sdk_symbols"
TARGET = "aarch64-macos"
# Link inputs per SDK: the list file stem (tools/macos_sdk_symbols/<version>/<stem>.txt) and the
# hand-written stub used where no list exists (tools/macos_stubs/tbd/<stem>.tbd).
FRAMEWORKS = ("Metal", "Foundation", "CoreFoundation", "QuartzCore", "libobjc")
# A TU that instantiates metal-cpp's implementation: its imports depend on the SDK's availability
# macros, so it is compiled once per SDK.
PRIVATE_IMPLEMENTATION = re.compile(r"^\s*#\s*define\s+(NS|MTL|CA|MTLFX|MTK)_PRIVATE_IMPLEMENTATION\b", re.M)
AVAILABILITY_PLATFORMS = {"MAC": "MAC", "IPHONE": "IPHONE", "TVOS": "TVOS", "WATCHOS": "WATCHOS",
                          "VISIONOS": "VISIONOS", "XROS": "VISIONOS"}

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


# --- SDKs -----------------------------------------------------------------------------------

@dataclass
class Sdk:
    version: str
    directory: Path
    newest: dict[str, tuple[int, ...]]  # platform (MAC, IPHONE, ...) -> newest version it names


def version_tuple(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in text.split("."))


def available_sdks(wanted: list[str] | None = None) -> list[Sdk]:
    """The SDKs with symbol lists under tools/macos_sdk_symbols/, oldest first."""
    sdks = []
    for directory in SDK_LISTS.iterdir():
        spec = directory / "availability.txt"
        if not spec.exists():
            continue
        newest = {}
        for line in spec.read_text().splitlines():
            if line.strip() and not line.startswith("#"):
                platform, version = line.split()
                newest[platform] = version_tuple(version)
        sdks.append(Sdk(directory.name, directory, newest))
    sdks.sort(key=lambda sdk: version_tuple(sdk.version))
    if wanted:
        unknown = set(wanted) - {sdk.version for sdk in sdks}
        if unknown:
            fail(f"no symbol lists for SDK {', '.join(sorted(unknown))} in {SDK_LISTS} "
                 f"(have {', '.join(sdk.version for sdk in sdks)})")
        sdks = [sdk for sdk in sdks if sdk.version in wanted]
    return sdks


def read_symbol_list(path: Path) -> tuple[str, list[str]]:
    """(install name, names) of a tools/macos_sdk_symbols/<version>/<library>.txt list."""
    install_name, names = "", []
    for line in path.read_text().splitlines():
        if line.startswith("# install-name:"):
            install_name = line.split(":", 1)[1].strip()
        elif line.strip() and not line.startswith("#"):
            names.append(line.strip())
    if not install_name:
        fail(f"{path}: no '# install-name:' header")
    return install_name, names


def sdk_tbds(sdk: Sdk, build: Path) -> tuple[list[Path], list[str]]:
    """The framework .tbds to link for one SDK, and the libraries that fell back to a stub."""
    tbds, stubbed = [], []
    out = build / f"sdk-{sdk.version}"
    out.mkdir(exist_ok=True)
    for library in FRAMEWORKS:
        listed = sdk.directory / f"{library}.txt"
        if listed.exists():
            install_name, names = read_symbol_list(listed)
            tbd = out / f"{library}.tbd"
            write_tbd(tbd, install_name, names, f"Generated by tools/macos_check.py from {listed.name} "
                      f"(macOS {sdk.version} SDK).")
            tbds.append(tbd)
        elif (STUBS / "tbd" / f"{library}.tbd").exists():
            tbds.append(STUBS / "tbd" / f"{library}.tbd")
            stubbed.append(library)
        else:
            fail(f"no symbol list {listed} and no stub tools/macos_stubs/tbd/{library}.tbd")
    return tbds, stubbed


def zig_availability_versions(zig: list[str]) -> Path:
    """zig's AvailabilityVersions.h (the newest SDK's availability macros)."""
    candidates = []
    try:
        import ziglang
        candidates.append(Path(ziglang.__file__).parent / "lib")
    except ImportError:
        pass
    candidates.append(Path(zig[0]).resolve().parent / "lib")
    for lib in candidates:
        header = lib / "libc" / "include" / "any-darwin-any" / "AvailabilityVersions.h"
        if header.exists():
            return header
    fail("cannot find zig's AvailabilityVersions.h (lib/libc/include/any-darwin-any/)")
    raise AssertionError  # unreachable: fail() exits


def availability_prelude(sdk: Sdk, zig_header: Path, cache: Path) -> Path:
    """A header, included before the TU, that leaves the availability macros of `sdk` only."""
    text = zig_header.read_text(errors="replace")
    newer = []
    for m in re.finditer(r"^#define\s+(__([A-Z]+)_(\d+)_(\d+)(?:_(\d+))?)\s", text, re.M):
        platform = AVAILABILITY_PLATFORMS.get(m.group(2))
        if platform and platform in sdk.newest:
            version = tuple(int(g) for g in m.group(3, 4, 5) if g is not None)
            if version > sdk.newest[platform]:
                newer.append(m.group(1))
    for m in re.finditer(r"^#define\s+(MAC_OS_(?:X_)?VERSION_(\d+)_(\d+)(?:_(\d+))?)\s", text, re.M):
        version = tuple(int(g) for g in m.group(2, 3, 4) if g is not None)
        if version > sdk.newest["MAC"]:
            newer.append(m.group(1))
    mac = sdk.newest["MAC"] + (0, 0)
    max_allowed = mac[0] * 10000 + mac[1] * 100 + mac[2]
    lines = [f"/* Generated by tools/macos_check.py: the availability macros of the macOS {sdk.version} SDK,",
             f"   from zig's {zig_header.name} minus the {len(newer)} macros newer than that SDK. */",
             "#include <Availability.h>", "#include <AvailabilityMacros.h>",
             "#undef __MAC_OS_X_VERSION_MAX_ALLOWED", f"#define __MAC_OS_X_VERSION_MAX_ALLOWED {max_allowed}",
             "#undef MAC_OS_X_VERSION_MAX_ALLOWED", f"#define MAC_OS_X_VERSION_MAX_ALLOWED {max_allowed}"]
    lines += [f"#undef {name}" for name in newer]
    text = "\n".join(lines) + "\n"
    # A stable path (named by its content) under the cache dir, not the build dir: the path is on
    # the compile command line, and zig caches a compile by its command line.
    digest = hashlib.sha256(text.encode()).hexdigest()[:16]
    path = cache / "sdk-availability" / f"macos{sdk.version}-{digest}.h"
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(text)
        os.replace(tmp, path)
    return path


def undefined_from_linker(output: str) -> list[str]:
    """Symbol names a linker error message reports as undefined (zig: 'undefined symbol: _x')."""
    names = re.findall(r"undefined symbol:\s*(\S+)", output)
    names += re.findall(r'^\s*"(_[^"]+)", referenced from', output, re.M)  # ld64's format
    return sorted(set(names))


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
    ap.add_argument("--sdk", action="append", metavar="VERSION",
                    help="link for this SDK only (repeatable; default: every SDK in tools/macos_sdk_symbols/)")
    ap.add_argument("--no-sdk-availability", action="store_true",
                    help="compile the metal-cpp implementation TUs once, with zig's (newest) availability "
                         "macros, for every SDK: the check as it was before, which an older SDK cannot link")
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
    sdks = available_sdks(args.sdk)
    prelude: dict[str, Path] = {}
    if not args.no_sdk_availability:
        zig_header = zig_availability_versions(zig)
        prelude = {sdk.version: availability_prelude(sdk, zig_header, cache) for sdk in sdks}

    # Every TU once; a metal-cpp implementation TU once per SDK (its imports depend on the SDK).
    jobs: list[tuple[Unit, Path, list[str]]] = []
    per_sdk: dict[str, list[Path]] = {sdk.version: [] for sdk in sdks}
    shared: list[Path] = []
    for i, unit in enumerate(units):
        if unit.nanobind_lib:
            flags = [*base, *py_flags, "-DNB_BUILD", "-fno-strict-aliasing"]
        elif unit.python:
            flags = [*core, *py_flags]
        else:
            flags = core
        sdk_specific = bool(prelude) and unit.source.suffix != ".S" and bool(
            PRIVATE_IMPLEMENTATION.search(unit.source.read_text(errors="replace")))
        if sdk_specific:
            for sdk in sdks:
                obj = build / f"{i:03d}_{unit.source.stem}.sdk{sdk.version}.o"
                jobs.append((unit, obj, [*flags, "-include", str(prelude[sdk.version])]))
                per_sdk[sdk.version].append(obj)
        else:
            obj = build / f"{i:03d}_{unit.source.stem}.o"
            jobs.append((unit, obj, flags))
            shared.append(obj)

    n_units = len(units)
    print(f"macos_check: compiling {n_units} TUs for {TARGET} ({len(jobs)} compiles; metal-cpp: {metal_cpp})",
          flush=True)
    failures = []
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        futures = [pool.submit(compile_unit, zig, u, o, f, env) for u, o, f in jobs]
        for fut in futures:
            unit, error = fut.result()
            if error:
                failures.append(f"--- compile error in {unit.source}:\n{error}")
    if failures:
        print("\n".join(failures), file=sys.stderr)
        fail(f"{len(failures)} of {len(jobs)} compiles failed")

    # Link once per SDK: that SDK's framework lists + generated C++-runtime/Python stubs.
    frameworks = {sdk.version: sdk_tbds(sdk, build) for sdk in sdks}
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        futures = [pool.submit(link_for_sdk, zig, env, build, sdk, [*shared, *per_sdk[sdk.version]],
                               frameworks[sdk.version], units, with_python, bool(missing)) for sdk in sdks]
        results = [fut.result() for fut in futures]
    failed = [r for r in results if not r.ok]
    for r in results:
        if r.stubbed:
            print(f"macos_check: macOS {r.sdk} SDK: no real symbol list for {', '.join(r.stubbed)}: "
                  f"linked against the hand-written stubs in tools/macos_stubs/tbd/")
        if r.ok:
            print(f"macos_check: macOS {r.sdk} SDK: OK: {r.message}")
        else:
            print(f"--- link error for the macOS {r.sdk} SDK:\n{r.output}", file=sys.stderr)
            print(f"macos_check: macOS {r.sdk} SDK: FAILED: {r.message}", file=sys.stderr)
    if failed:
        fail(f"link error for the macOS {', '.join(r.sdk for r in failed)} SDK(s)")
    print(f"macos_check: OK: {n_units} TUs compiled, _core.dylib linked for the macOS "
          f"{', '.join(sdk.version for sdk in sdks)} SDKs in {time.monotonic() - t0:.1f} s")
    if tmp:
        tmp.cleanup()
    return 0


@dataclass
class LinkResult:
    sdk: str
    ok: bool
    message: str
    output: str = ""
    stubbed: list[str] | None = None


def link_for_sdk(zig: list[str], env: dict, build: Path, sdk: Sdk, objects: list[Path],
                 frameworks: tuple[list[Path], list[str]], units: list[Unit], with_python: bool,
                 sources_missing: bool) -> LinkResult:
    """Link the objects for one SDK: its framework .tbds (from sdk_tbds) + generated stubs."""
    out = build / f"sdk-{sdk.version}"
    out.mkdir(exist_ok=True)
    tbds, stubbed = list(frameworks[0]), frameworks[1]
    undefined, defined = set(), set()
    for o in objects:
        u, d = macho_symbols(o)
        undefined |= u
        defined |= d
    undefined -= defined
    cxx = {s for s in undefined if CXX_RUNTIME.match(s)}
    write_tbd(out / "libc++.tbd", "/usr/lib/libc++.1.dylib", cxx,
              "Generated by tools/macos_check.py: the C++ runtime names the objects import.")
    tbds.append(out / "libc++.tbd")
    if with_python:
        tbds.append(python_symbols_tbd(out / "python.tbd"))
    if sources_missing:
        pending = {s for s in undefined if TMPS_NAMES.match(s)}
        if pending:
            write_tbd(out / "pending.tbd", "@rpath/pending-sources.dylib", pending,
                      "Generated: tmps:: names whose sources do not exist yet.")
            tbds.append(out / "pending.tbd")

    dylib = out / "_core.dylib"
    cmd = [*zig, "c++", "-target", TARGET, "-shared", "-nostdlib++", "-O1",
           *map(str, objects), *map(str, tbds), "-o", str(dylib)]
    r = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if r.returncode != 0:
        text = (r.stdout + r.stderr).strip()
        lines = text.splitlines()
        shown = lines[:80] + ([f"... ({len(lines) - 80} more lines)"] if len(lines) > 80 else [])
        names = undefined_from_linker(text)
        message = (f"{len(names)} undefined symbol(s): {' '.join(names)}" if names
                   else "the linker failed (see its messages above)")
        return LinkResult(sdk.version, False, message, "\n".join(shown), stubbed)
    header = dylib.read_bytes()[:16]
    magic, cputype, _, filetype = struct.unpack("<IiiI", header)
    if magic != 0xFEEDFACF or cputype != 0x0100000C or filetype != 6:  # arm64 MH_DYLIB
        return LinkResult(sdk.version, False, f"{dylib} is not an arm64 Mach-O dylib", "", stubbed)
    if any(u.python and not u.nanobind_lib for u in units):
        exported = macho_symbols(dylib)[1]
        if not any(s.startswith("_PyInit_") for s in exported):
            return LinkResult(sdk.version, False, f"{dylib.name} exports no PyInit_* function: "
                              "Python could not import it", "", stubbed)
    return LinkResult(sdk.version, True, f"{dylib.name} linked ({dylib.stat().st_size // 1024} KiB)",
                      "", stubbed)


if __name__ == "__main__":
    sys.exit(main())
