"""The contract between the TTGIR -> MSL compiler and the launcher.

Every Triton program becomes one MSL `kernel` run as one threadgroup of `num_warps * 32`
threads; the Triton grid is the grid of threadgroups. Kernel parameters, in order:

- one per non-constexpr Triton argument, in signature order, bound at [[buffer(i)]] where i
  counts those arguments: pointers as `device T* argN` (`TMPS_COHERENT device T* argN` when the
  kernel has device-scope fences: coherence.py), scalars as `constant T& argN`;
  when they (plus the debug buffer below) need more than 31 bindings, every scalar moves into
  one packed struct `constant tmps_args_t& tmps_args [[buffer(P)]]` where P = the number of
  pointers: pointers keep [[buffer(0..P-1)]] in order, the struct is `pack_scalars_at` = P
  (layout rule in csrc/launcher.h: natural alignment, in order). More than 31 bindings even
  then (pointers + struct + debug buffer) is a CompilationError: Metal binds 31 buffers per
  kernel (argument buffers would lift that; not implemented);
- when the kernel has device asserts or prints: `device uint* tmps_dbg [[buffer(D)]]`, the
  last binding (`debug["binding"]`): a host-visible record area the launcher allocates and
  decodes after the dispatch (format below; the decoder is backend/debug_records.py). It is
  not a Triton argument;
- when the kernel has 64-bit atomics: `device atomic_uint* tmps_locks [[buffer(L)]]`, after
  the debug buffer (`locks["binding"]`): a zeroed table of `locks["words"]` spin locks, one
  per device, that the launcher binds to every launch (locks are free again when a kernel
  ends, so it stays zeroed). It is not a Triton argument;
- `uint3 tmps_pid [[threadgroup_position_in_grid]]`,
  `uint3 tmps_npid [[threadgroups_per_grid]]`,
  `uint tmps_tid [[thread_index_in_threadgroup]]`.

Facts the driver reads from the MSL text itself (Triton's load_binary gets only the binary):
the threadgroup size (`threads_marker`, the last line) and whether the kernel orders memory
between threadgroups (`uses_device_fence`: it then asks for MSL 3.2, `msl_version_for`). Those
and the facts the native core reads (the simulator's hints, counters and source lines) are the
MSL annotations: one list, ANNOTATIONS, mirrored in csrc/msl_annotations.h.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any

from .. import metal_limits
from .errors import CompilationError

# Buffers Metal binds per kernel: arguments, the packed scalars' struct and the hidden buffers.
MAX_BINDINGS = metal_limits.MAX_BUFFER_BINDINGS


@dataclass(frozen=True)
class ArgInfo:
    name: str  # Triton argument name
    kind: str  # "pointer" or "scalar"
    msl_type: str  # pointee type for pointers ("float", "half", ...), value type for scalars
    binding: int  # [[buffer(binding)]]; -1 for scalars packed into the argument struct
    # position among the leaves of the signature compile_ttgir was given (constexprs included);
    # the backend gives the kernel's runtime arguments only (backend/launcher.py maps them)
    signature_index: int


@dataclass
class CompiledMSL:
    msl: str
    name: str  # entry point
    num_warps: int
    shared: int  # bytes of threadgroup memory the kernel declares
    args: list[ArgInfo] = field(default_factory=list)
    pack_scalars_at: int = -1
    # Device assert/print sites, or None: {"binding", "capacity", "sites": [...]} (debug_metadata)
    debug: dict | None = None
    # 64-bit atomics' lock table, or None: {"binding", "words"} (lock_metadata)
    locks: dict | None = None
    # Names of the pointer arguments the kernel may store through (compiler/effects.py).
    written: list[str] = field(default_factory=list)

    def to_metadata(self) -> dict:
        """JSON-friendly form stored in Triton's kernel metadata."""
        return {"args": [asdict(a) for a in self.args], "pack_scalars_at": self.pack_scalars_at,
                "debug": self.debug, "locks": self.locks, "written": list(self.written)}


# ---- the signature: tuple and tensor-descriptor arguments as their leaves --------------------

def flatten_signature(signature: dict) -> list[tuple[str, object]]:
    """(name, type) of every leaf of Triton's signature, depth first: a tuple argument `xs` of
    types (t0, (t1, t2)) gives `xs[0]`, `xs[1][0]`, `xs[1][1]`."""
    out: list[tuple[str, object]] = []

    def walk(name: str, ty) -> None:
        if isinstance(ty, tuple):
            for j, t in enumerate(ty):
                walk(f"{name}[{j}]", t)
        elif is_descriptor(ty):
            out.extend(descriptor_leaves(name, ty))
        else:
            out.append((name, ty))

    for n, t in signature.items():
        walk(str(n), t)
    return out


def is_descriptor(ty) -> bool:
    return isinstance(ty, str) and ty.startswith("tensordesc")


def descriptor_leaves(name: str, ty: str) -> list[tuple[str, str]]:
    """A host TensorDescriptor argument as the kernel takes it once Triton's
    rewrite_tensor_descriptor_to_pointer pass has run: base pointer, shape and strides (i64),
    padding and tf32-rounding flags, then shape (i32) and strides again, in the order of
    Triton's `decompose_descriptor`, which the launcher uses to pass the values."""
    from triton.backends.driver import expand_signature

    types = expand_signature([ty], None, "tensordesc")
    nd = (len(types) - 3) // 4
    labels = (["base"] + [f"shape{i}" for i in range(nd)] + [f"stride{i}" for i in range(nd)]
              + ["padding_nan", "round_f32_to_tf32"] + [f"shape{i}#2" for i in range(nd)]
              + [f"stride{i}#2" for i in range(nd)])
    if len(labels) != len(types):
        raise CompilationError(f"argument '{name}': unexpected tensor descriptor layout {types}")
    return [(f"{name}.{label}", t) for label, t in zip(labels, types, strict=True)]


# ---- facts in the MSL text -------------------------------------------------------------------
# What travels inside the emitted MSL for a reader that gets only the text (Triton's load_binary,
# the native core's scanner and simulator). ANNOTATIONS lists every one; csrc/msl_annotations.h
# mirrors the list for the C++ side (tests/compiler/test_msl_annotations.py checks that the two
# agree and that each writer and reader still spells the text).

THREADS_MARKER = "// triton-mps: threads_per_threadgroup="
EFFECT_THREADS = "// tmps-sim: effect_threads="
COHERENT = "TMPS_COHERENT"
# The device-scope fence macro (mslib/macros.py defines it, ops/memory.py calls it; empty below MSL 3.2).
DEVICE_FENCE = "TMPS_DEVICE_FENCE()"
FLOPS = "TMPS_FLOPS("
ORIGIN = "// @ "
BUFFER = "// @buffer "


@dataclass(frozen=True)
class Annotation:
    name: str  # the name csrc/msl_annotations.h gives it too
    text: str  # the literal text that marks it in the MSL
    format: str  # how it is written
    writers: tuple[str, ...]  # files (from the repository root) that write it
    readers: tuple[str, ...]  # files that read it back
    meaning: str


ANNOTATIONS: tuple[Annotation, ...] = (
    Annotation("threads_per_threadgroup", THREADS_MARKER, THREADS_MARKER + "<N>, the last line",
               ("python/triton_mps/backend/compiler.py",), ("python/triton_mps/backend/device.py",),
               "the threadgroup size Metal's pipeline descriptor gets (threads_marker, threads_from_msl)"),
    Annotation("effect_threads", EFFECT_THREADS, EFFECT_THREADS + "<N>, alone on the line before `kernel`",
               ("python/triton_mps/compiler/driver.py",), ("csrc/msl_scanner.cpp",),
               "threads at index >= N only duplicate lower ones: the simulator may skip them"),
    Annotation("coherent", COHERENT, "`#define TMPS_COHERENT coherent(device)` (MSL 3.2+, else empty); "
               "every pointer type `TMPS_COHERENT device T*`",
               ("python/triton_mps/compiler/coherence.py", "python/triton_mps/compiler/mslib/macros.py"),
               ("csrc/msl_scanner.cpp",),
               "the kernel orders memory between threadgroups: coherent pointers (the scanner takes the "
               "macro for a qualifier)"),
    Annotation("device_fence", DEVICE_FENCE, "`TMPS_DEVICE_FENCE();` statements and the macro's #define",
               ("python/triton_mps/compiler/ops/memory.py", "python/triton_mps/compiler/mslib/macros.py"),
               ("python/triton_mps/backend/device.py",),
               "device-scope fences: compiled with MSL 3.2 where the OS has it (uses_device_fence, msl_version_for)"),
    Annotation("flops", FLOPS, "`TMPS_FLOPS(n);` after float ops; the prelude defines it empty",
               ("python/triton_mps/compiler/lowering.py", "python/triton_mps/compiler/driver.py"),
               ("csrc/sim/sim_device.cpp",),
               "scalar FLOPs per thread: the simulator's counting build defines the macro"),
    Annotation("origin", ORIGIN, ORIGIN + "<file>.py:<line>, before the code from that Triton line",
               ("python/triton_mps/compiler/emitter.py",), ("csrc/sim/memcheck.cpp",),
               "the Triton source line of the MSL below (memcheck and Metal validation reports)"),
    Annotation("buffer", BUFFER, BUFFER + "argN before a load's or store's accesses, `// @buffer -` after",
               ("python/triton_mps/compiler/ops/memory.py",), ("csrc/sim/memcheck.cpp",),
               "the kernel parameter the accesses go through (provenance.py; memcheck's report)"),
)


def effect_threads_hint(n: int) -> str:
    """The line telling the simulator that threads past `n` only duplicate lower ones."""
    return f"{EFFECT_THREADS}{n}"


def threads_marker(threads: int) -> str:
    """The MSL comment line telling load_binary the kernel's threadgroup size."""
    return f"{THREADS_MARKER}{threads}\n"


def threads_from_msl(msl: str) -> int:
    """The threadgroup size recorded by threads_marker, 0 if absent (hand-written MSL)."""
    at = msl.rfind(THREADS_MARKER)
    if at < 0:
        return 0
    digits = msl[at + len(THREADS_MARKER):].split("\n", 1)[0].strip()
    return int(digits) if digits.isdigit() else 0


def uses_device_fence(msl: str) -> bool:
    """Whether the kernel orders memory between threadgroups (coherence.py, docs/msl-versions.md)."""
    return DEVICE_FENCE in msl


def version_tuple(v: str) -> tuple[int, ...]:
    return tuple(int(p) for p in v.split(".") if p.isdigit())


def msl_version_for(msl: str, available: str) -> str:
    """The MSL version to compile `msl` with: 3.2 when it uses device-scope fences
    (acquire/release atomics, 64-bit atomics, acquire atomic_poll) and the OS has 3.2, else 3.1
    (macOS 14: the fences compile to nothing; docs/msl-versions.md)."""
    if uses_device_fence(msl) and version_tuple(available) >= (3, 2):
        return "3.2"
    return "3.1"


# ---- the debug record buffer (device assert and print: ops/debug.py writes, the launcher reads) --
# 32-bit words: two regions of fixed records, each with its own counter, so prints can never
# push an assert out (the count of failing elements is exact however much is printed). Word 0
# counts print records reserved (atomically; records past the capacity are counted but
# dropped), word 1 is the print capacity (set per launch: capacity_for); word 2 counts assert
# records (= failing elements), word 3 is the assert capacity (ASSERT_CAPACITY; only the first
# failures are kept, the count stays exact); words 4..7 are reserved. Then the print records,
# then (from record word1) the assert records, 8 words each:
#     site, pid.x, pid.y, pid.z, operand, element index (row-major; NO_INDEX for scalars),
#     value bits low, value bits high
# Sites (what each tt.assert / tt.print is: message, file, line, operand types and shapes) live
# in the kernel's metadata (`debug["sites"]`), not in the buffer. Values: floats as fp32 bits
# (f16/bf16 widen exactly), integers sign-extended to 64 bits (printed per the op's isSigned),
# pointers as addresses.

CAPACITY = 8192  # print records per launch at least; more when the sites' elements need more
ASSERT_CAPACITY = 1024  # failed-assert records kept per launch (the first names the failure)
MAX_CAPACITY = 1 << 21  # 64 MiB of records
HEADER_WORDS = 8
RECORD_WORDS = 8
NO_INDEX = 0xFFFFFFFF
PRINTS, ASSERTS = 0, 2  # header word of each region's counter (its capacity follows it)


def buffer_words(capacity: int = CAPACITY) -> int:
    """Words of a record buffer with `capacity` print records (and the assert region)."""
    return HEADER_WORDS + (capacity + ASSERT_CAPACITY) * RECORD_WORDS


def init_header(words: Any, capacity: int = CAPACITY) -> None:
    """Zero the counters and set both capacities (the launcher, before each launch; `words`: a
    uint32 numpy view of the buffer)."""
    words[:HEADER_WORDS] = 0
    words[1] = capacity
    words[3] = ASSERT_CAPACITY


def capacity_for(debug: dict, programs: int, threads: int) -> int:
    """Print records one launch can produce when each print runs once per program: every
    element of each tensor operand, every thread for a scalar (prints in loops may need more;
    records past the capacity are counted and reported as dropped). Asserts have their own
    region (ASSERT_CAPACITY)."""
    per_program = 0
    for site in debug["sites"]:
        if site["kind"] != "print":
            continue
        for shape in [op["shape"] for op in site.get("operands", [])] or [[]]:
            per_program += math.prod(int(d) for d in shape) if shape else threads
    return int(min(max(CAPACITY, per_program * programs), MAX_CAPACITY))


def debug_metadata(binding: int, sites: list[dict]) -> dict:
    """`CompiledMSL.debug`: the record buffer's binding, its print capacity and the sites (in site
    id order: what each tt.assert / tt.print is, ops/debug.py)."""
    return {"binding": binding, "capacity": CAPACITY, "sites": list(sites)}


# ---- the lock table of 64-bit atomics (ops/memory.py takes the locks, the launcher binds it) ----
# LOCK_WORDS 32-bit spin locks, one table per device, zero between kernels (ops/memory.py says
# how an address picks its lock).
LOCK_WORDS = 1024


def lock_metadata(binding: int) -> dict:
    """`CompiledMSL.locks`: the lock table's binding and its size in words."""
    return {"binding": binding, "words": LOCK_WORDS}
