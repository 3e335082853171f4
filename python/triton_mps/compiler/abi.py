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
  decodes after the dispatch (format in ops/debug.py). It is not a Triton argument;
- when the kernel has 64-bit atomics: `device atomic_uint* tmps_locks [[buffer(L)]]`, after
  the debug buffer (`locks["binding"]`): a zeroed table of `locks["words"]` spin locks, one
  per device, that the launcher binds to every launch (locks are free again when a kernel
  ends, so it stays zeroed). It is not a Triton argument;
- `uint3 tmps_pid [[threadgroup_position_in_grid]]`,
  `uint3 tmps_npid [[threadgroups_per_grid]]`,
  `uint tmps_tid [[thread_index_in_threadgroup]]`.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field


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
    # Device assert/print sites, or None: {"binding", "capacity", "sites": [...]} (ops/debug.py)
    debug: dict | None = None
    # 64-bit atomics' lock table, or None: {"binding", "words"} (ops/memory.py)
    locks: dict | None = None
    # Names of the pointer arguments the kernel may store through (compiler/effects.py).
    written: list[str] = field(default_factory=list)

    def to_metadata(self) -> dict:
        """JSON-friendly form stored in Triton's kernel metadata."""
        return {"args": [asdict(a) for a in self.args], "pack_scalars_at": self.pack_scalars_at,
                "debug": self.debug, "locks": self.locks, "written": list(self.written)}
