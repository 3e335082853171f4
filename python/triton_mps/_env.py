"""Every environment variable triton-mps reads, with the values it accepts.

`check_environment()` runs at import: a value outside the allowed ones, or a `TRITON_MPS_*`
name we do not know (a typo: MEMCHEK for MEMCHECK), gives one RuntimeWarning naming the
variable and what it accepts. The code that reads a variable still raises InvalidArgument for
a value it cannot use (the native core for MEMCHECK, TIMEOUT, SIM_THREADS, the pool sizes;
`flag()` here for on/off switches), so a bad value never passes silently.
"""

from __future__ import annotations

import difflib
import os
import re
import warnings
from collections.abc import Callable

MAX_SIM_THREADS = 4096  # csrc/sim/scheduler.cpp default_workers()
_FLAG_ON = ("1", "true", "yes", "on")
_FLAG_OFF = ("0", "false", "no", "off")
FLAG_VALUES = "1/true/yes/on or 0/false/no/off"


def _is_flag(v: str) -> bool:
    return v.strip().lower() in _FLAG_ON + _FLAG_OFF


def _is_count(v: str) -> bool:
    return v.strip().isdigit() and int(v) > 0


def _is_threads(v: str) -> bool:
    return v.strip().isdigit() and 1 <= int(v) <= MAX_SIM_THREADS


def _is_cpu(v: str) -> bool:
    # A CPU in the compiler's syntax, optionally with features: x86_64_v3, generic, apple_m1+fp16.
    return re.fullmatch(r"[A-Za-z][A-Za-z0-9_.]*([+-][A-Za-z0-9_.]+)*", v.strip()) is not None


def _is_seconds(v: str) -> bool:
    try:
        return 0 <= float(v) <= 1e9
    except ValueError:
        return False


def _is_bytes(v: str) -> bool:
    return re.fullmatch(r"\s*\d+\s*[KMGkmg]?i?[Bb]?\s*", v) is not None


def _is_device(v: str) -> bool:
    return v.strip().isdigit() or v.strip().lower() in (
        "", "sim", "simulator", "cpu", "metal", "gpu", "mps", "metal-emu", "emu", "emulated")


def _any(v: str) -> bool:
    return True


# name -> (check, what it accepts)
VARIABLES: dict[str, tuple[Callable[[str], bool], str]] = {
    "TRITON_MPS_DEVICE": (_is_device, "'metal', 'sim', 'metal-emu' or a device index"),
    "TRITON_MPS_MEMCHECK": (lambda v: v in ("", "0", "1"), "0 or 1"),
    "TRITON_MPS_TIMEOUT": (_is_seconds, "a number of seconds >= 0 (0: no limit)"),
    "TRITON_MPS_SIM_COUNTERS": (_is_flag, FLAG_VALUES),
    "TRITON_MPS_RACECHECK": (lambda v: v in ("", "0", "1"), "0 or 1"),
    "TRITON_MPS_SIM_COLLAPSE": (lambda v: v in ("", "0", "1"), "0 or 1"),
    "TRITON_MPS_SIM_INTERLEAVE": (lambda v: v.strip() == "" or v.strip().isdigit(), "a seed (an integer >= 0; 0: off)"),
    "TRITON_MPS_SIM_THREADS": (_is_threads, f"a number of worker threads from 1 to {MAX_SIM_THREADS}"),
    "TRITON_MPS_PREBUILD": (lambda v: v.strip() == "" or v.strip().isdigit(), "a number of build threads (0: off)"),
    "TRITON_MPS_SIM_STACK_KB": (_is_count, "a fiber stack size in KiB >= 1"),
    "TRITON_MPS_SIM_OPT": (lambda v: v.strip() in ("", "auto", "0", "2"), "auto, 0 or 2"),
    "TRITON_MPS_LAUNCH_SYNC": (_is_flag, FLAG_VALUES),
    "TRITON_MPS_DEBUG": (_is_flag, FLAG_VALUES),
    "TRITON_METAL_DEBUG": (_is_flag, FLAG_VALUES),
    "TRITON_MPS_METAL_DEBUG": (_is_flag, FLAG_VALUES),
    "TRITON_MPS_METAL_VALIDATION": (_is_flag, FLAG_VALUES),
    "TRITON_MPS_METAL_ARCHIVE_MB": (lambda v: re.fullmatch(r"\d+(\.\d+)?", v.strip()) is not None,
                                    "a size in MiB >= 0 (the Metal binary archive's cap)"),
    "TRITON_MPS_SIM_POISON": (_is_flag, FLAG_VALUES),
    "TRITON_MPS_DOT": (lambda v: v.strip().lower() in ("", "auto", "fma", "simdgroup"), "auto, fma or simdgroup"),
    "TRITON_MPS_EMU_COMPILE_MS": (lambda v: v.strip().isdigit() and int(v) <= 600_000,
                                  "a number of milliseconds from 0 to 600000 (tests)"),
    "TRITON_MPS_EMU_MACOS": (lambda v: re.fullmatch(r"\d+(\.\d+)?", v.strip()) is not None, "a version like 15.0"),
    "MPS_MAX_POOL_SIZE": (_is_bytes, "a byte count such as 0, 1048576, 512M or 4G"),
    "MPS_MAX_BUFFER_AGE": (lambda v: v.strip().isdigit(), "a number of milliseconds"),
    # Paths, commands and names: any value.
    "TRITON_MPS_CACHE_DIR": (_any, "a directory"),
    "TRITON_MPS_SIM_CXX": (_any, "a compiler command"),
    "TRITON_MPS_ZIG": (_any, "a zig binary"),
    "TRITON_MPS_SIM_INCLUDE": (_any, "a directory"),
    "TRITON_MPS_SIM_CPU": (_is_cpu, "a CPU name in the compiler's syntax (x86_64, x86_64_v2, x86_64_v3, "
                           "x86_64_v4; generic on Arm), optionally with +feature/-feature"),
    "TRITON_MPS_EMU_CHIP": (_any, "a chip name"),
    "TRITON_MPS_CHECK_CACHE": (_any, "a directory (tools/macos_check.py)"),
}
# CMake options with the same prefix (never read from the environment, but harmless there).
_OTHER_NAMES = ("TRITON_MPS_BUILD_TESTS", "TRITON_MPS_BUILD_PYTHON", "TRITON_MPS_METAL_EMU")


def problems(environ: dict[str, str] | None = None) -> list[str]:
    """One sentence per variable with a value we do not accept or a name we do not know."""
    environ = os.environ if environ is None else environ
    out = []
    for name, value in sorted(environ.items()):
        if name in VARIABLES:
            check, accepts = VARIABLES[name]
            if not check(value):
                out.append(f"{name}={value!r} is not valid: expected {accepts}")
        elif name.startswith("TRITON_MPS_") and name not in _OTHER_NAMES:
            close = difflib.get_close_matches(name, list(VARIABLES), n=1)
            hint = f" (did you mean {close[0]}?)" if close else f"; known: {', '.join(sorted(VARIABLES))}"
            out.append(f"{name} is not a triton-mps variable{hint}")
    return out


def check_environment() -> None:
    for p in problems():
        warnings.warn(f"triton-mps: {p}", RuntimeWarning, stacklevel=3)


def flag(name: str, default: bool) -> bool:
    """An on/off variable; raises InvalidArgument (a ValueError) for any other value."""
    value = os.environ.get(name, "").strip().lower()
    if not value:
        return default
    if value in _FLAG_ON:
        return True
    if value in _FLAG_OFF:
        return False
    from . import _core

    raise _core.InvalidArgument(f"{name}={os.environ[name]!r} is not valid: expected {FLAG_VALUES}")
