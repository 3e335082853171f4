"""The debug record buffer, read back after a dispatch: device prints to stdout, failed device
asserts as DeviceAssertionError (tl.device_assert, tl.device_print; compiler/ops/debug.py
lowers them). The buffer's format is the kernel ABI: compiler/abi.py."""

from __future__ import annotations

import sys

import numpy as np

from ..compiler.abi import ASSERTS, HEADER_WORDS, NO_INDEX, PRINTS, RECORD_WORDS


class DeviceAssertionError(AssertionError):
    """A device-side assertion (tl.device_assert / `assert` with debug=True) failed."""

    def __init__(self, message: str, *, kernel: str, file: str, line: int, failures: int):
        self.kernel = kernel
        self.file = file
        self.line = line
        self.failures = failures
        super().__init__(message)


def _hex_float(x: float) -> str:
    """C's %a: Python's float.hex() without the mantissa's trailing zeros ("0x1.8p+1")."""
    if x != x or x in (float("inf"), float("-inf")):
        return str(x)
    mant, exp = float(x).hex().split("p")
    mant = mant.rstrip("0").rstrip(".")
    return f"{mant}p{exp}"


def _value_text(operand: dict, lo: int, hi: int, hex_: bool) -> str:
    """One value as Triton's device_print formats it: %f for floats (%a with hex=True), %d or
    %u for integers (%0Nx with hex=True), %p-like 0x... for pointers."""
    bits64 = lo | (hi << 32)
    k = operand["kind"]
    if k == "float":
        if operand.get("bits") == 64:
            v = float(np.array([bits64], dtype=np.uint64).view(np.float64)[0])
        else:
            v = float(np.array([lo], dtype=np.uint32).view(np.float32)[0])
        return _hex_float(v) if hex_ else f"{v:f}"
    if k == "ptr":
        return f"0x{bits64:x}"
    if k == "bool":
        return str(lo & 1)
    nbits = operand["bits"]
    u = bits64 & ((1 << nbits) - 1)
    if hex_:
        return f"0x{u:0{max(nbits // 4, 1)}x}"
    if operand.get("signed", True) and u >> (nbits - 1):
        u -= 1 << nbits
    return str(u)


def _index_text(idx: tuple[int, ...], shape: list[int]) -> str:
    """Each index right-aligned to the width of its dimension's largest index, as Triton does
    ("idx (  7)" in a 128-element tensor)."""
    return ", ".join(f"{i:{len(str(max(d - 1, 0)))}}" for i, d in zip(idx, shape, strict=True))


def _unravel(index: int, shape: list[int]) -> tuple[int, ...]:
    if index == NO_INDEX or not shape:
        return ()
    return tuple(int(i) for i in np.unravel_index(index, shape))


def _records(words: np.ndarray, first: int, kept: int) -> list[tuple]:
    recs = words[HEADER_WORDS + first * RECORD_WORDS:HEADER_WORDS + (first + kept) * RECORD_WORDS]
    return [(int(r[0]), (int(r[1]), int(r[2]), int(r[3])), int(r[4]), int(r[5]), int(r[6]), int(r[7]))
            for r in recs.reshape(kept, RECORD_WORDS)]


def decode(words: np.ndarray) -> tuple[list[tuple], int, list[tuple], int]:
    """The records of a debug buffer: (prints, prints dropped, asserts kept, failing elements).
    Each list is sorted by (program, site, operand, element). A record: (site, pid, operand,
    index, lo, hi)."""
    words = np.asarray(words).view(np.uint32)
    order = lambda t: (t[1][2], t[1][1], t[1][0], t[0], t[2], t[3])  # noqa: E731
    capacity = int(words[PRINTS + 1])
    printed = int(words[PRINTS])
    failures = int(words[ASSERTS])
    kept = min(printed, capacity)
    prints = sorted(_records(words, 0, kept), key=order)
    asserts = sorted(_records(words, capacity, min(failures, int(words[ASSERTS + 1]))), key=order)
    return prints, printed - kept, asserts, failures


def report(words: np.ndarray, debug: dict, kernel: str, out=None) -> None:
    """Print the kernel's device prints; raise DeviceAssertionError if an assert failed."""
    out = out or sys.stdout
    sites = debug["sites"]
    prints, dropped, asserts, failures = decode(words)
    for record in prints + asserts:
        if record[0] >= len(sites):
            raise RuntimeError(f"kernel '{kernel}': corrupt debug buffer (site {record[0]} of {len(sites)})")
    for site_id, pid, operand, index, lo, hi in prints:
        site = sites[site_id]
        pid_text = f"pid ({pid[0]}, {pid[1]}, {pid[2]})"
        prefix = site["prefix"].strip()
        if operand == NO_INDEX:
            print(f"{pid_text} {prefix}".rstrip(), file=out)
            continue
        od = site["operands"][operand]
        idx = _unravel(index, od["shape"])
        # Triton's line: "pid (x, y, z) idx (i, j)" + the prefix as the front end normalised it
        # (" x: ", or ": " when empty) + "(operand n) " with several operands + the value.
        which = f"(operand {operand}) " if len(site["operands"]) > 1 else ""
        idx_text = _index_text(idx, od["shape"]) if idx else ""
        print(f"{pid_text} idx ({idx_text}){site['prefix']}{which}{_value_text(od, lo, hi, site['hex'])}", file=out)
    if dropped:
        print(f"triton-mps: kernel '{kernel}': {dropped} device print records dropped "
              f"(more than {int(np.asarray(words).view(np.uint32)[PRINTS + 1])} in one launch)", file=sys.stderr)
    if failures and not asserts:  # a buffer without an assert region (capacity 0)
        raise DeviceAssertionError(f"kernel '{kernel}': device assertion failed ({failures} failing elements)",
                                   kernel=kernel, file="", line=0, failures=failures)
    if failures:
        site_id, pid, _, index, _, _ = asserts[0]
        site = sites[site_id]
        idx = _unravel(index, site["shape"])
        where = f"{site['file']}:{site['line']}" if site["file"] else f"line {site['line']}"
        msg = site["message"] or "assertion failed"
        elem = f", element ({', '.join(map(str, idx))})" if idx else ""
        n = failures
        raise DeviceAssertionError(
            f"kernel '{kernel}', {where}: device assertion failed: {msg} "
            f"(program ({pid[0]}, {pid[1]}, {pid[2]}){elem}; {n} failing element{'s' if n != 1 else ''})",
            kernel=kernel, file=site["file"], line=site["line"], failures=n)
