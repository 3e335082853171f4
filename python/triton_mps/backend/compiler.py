"""The `mps` compiler backend: Triton's TTIR/TTGIR passes, then our TTGIR -> MSL compiler.

Pipeline (one table, `PIPELINE` below; printed by `describe_pipeline()`):

    ttir   Triton's target-independent passes
    ttgir  convert to TritonGPU with target "mps:<arch>", then the TritonGPU passes that work
           without a CUDA target. Not run: accelerate_matmul (fails off CUDA; our compiler
           assigns its own dot layout), the software pipeliner (emits async copies that Metal
           has no equivalent for) and all NVIDIA/AMD-specific passes. f32_dot_tc runs with
           emu-tf32 off: it only rewrites bf16x3/bf16x6 dots into bf16 dots.
    msl    triton_mps.compiler.compile_ttgir: TTGIR -> MSL text (`.asm["msl"]`).
    metal  the "binary" (`binary_ext = "metal"`): the MSL as UTF-8 bytes. Metal compiles
           source at run time, so the driver's load_binary builds the pipeline on the device
           through the native pipeline cache (simulator objects / Metal binary archives).
The stages are pure (IR or text in, text or bytes out) and touch no device. The pipeline's build
starts ahead of the first launch from Triton's compilation listener, at the end of
triton.compile (device.prebuild_after_compile, installed in driver.py; backend/prebuild.py).

Decisions:
- Math: kernels are built in Metal's "safe" math mode always (Triton is not fast-math), and the
  MSL says so itself (`#pragma METAL fp math_mode(safe)` and `fp contract(off)` on MSL 3.2+), so
  Metal never contracts a*b+c on its own. `enable_fp_fusion` (default on, as in Triton) makes
  the compiler emit an explicit `fma()` for a float multiply whose only use is an add/subtract
  in the same block; off, products and sums round separately. The simulator builds with
  -ffp-contract=off and runs the same fma() calls, so both devices round alike.
- Dot: `min_dot_size` is (1, 1, 1) for every dtype: the compiler uses 8x8 simdgroup matrices
  where shapes allow and a general fallback otherwise, so Triton's front end need not reject
  small dots. fp8 operands are widened to float in the operand staging (fp8 storage is
  emulated, compiler/mslib/fp8.py); "tf32" and "tf32x3" are accepted and computed in full fp32 (ieee);
  "bf16x3" / "bf16x6" are Triton's definition (f32_dot_tc: bf16 parts, bf16 dots summed in fp32).
- Tensor descriptors (tl.make_tensor_descriptor, desc.load/store) become plain masked
  loads/stores in TTIR (`rewrite_tensor_descriptor_to_pointer`). Block pointers were removed
  from the language in Triton 3.9 (tl.make_block_ptr raises in the front end) and with them
  `add_rewrite_tensor_pointer`; the table keeps it as an optional entry for releases that have it.
- Limits: metadata["shared"] over the device's max_shared_mem raises OutOfResources when the
  kernel is loaded (Triton's CompiledKernel checks it; the driver's load_binary too), and
  num_warps * 32 > 1024 raises TooManyThreads (OutOfResources and ValueError) when options are
  parsed, so autotuning prunes such configs.
- Cache key: Triton's key does not cover plugin code, so `hash()` includes our version and a
  digest of the compiler and backend sources (and whether debug dumps are on, so that turning
  TRITON_MPS_DEBUG on recompiles and dumps).

TRITON_MPS_DEBUG=1 (or TRITON_METAL_DEBUG=1): every compiled kernel's TTIR, TTGIR and MSL are
written to <triton cache dir>/mps_debug/<kernel>-<hash>/ and the path is logged (logger
"triton_mps", and stderr). Compiled kernels also expose `.asm["ttir"]`, `.asm["ttgir"]` and
`.asm["msl"]` (Triton fills `asm` from the stage outputs; `asm["msl"]` is bytes because it is the
binary stage).
"""

from __future__ import annotations

import functools
import hashlib
import logging
import os
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass, fields
from pathlib import Path
from types import ModuleType
from typing import Any

from triton import knobs
from triton._C.libtriton import ir, passes
from triton.backends.compiler import BaseBackend, GPUTarget, Language
from triton.runtime.errors import OutOfResources

from .. import metal_limits

log = logging.getLogger("triton_mps")

DEBUG_ENV = ("TRITON_MPS_DEBUG", "TRITON_METAL_DEBUG")
THREADS_PER_SIMDGROUP = metal_limits.SIMD_WIDTH  # Metal's SIMD width on Apple GPUs: Triton's "warp"


def debug_enabled() -> bool:
    from .._env import flag

    return any([flag(v, False) for v in DEBUG_ENV])  # each checked: a bad value is an error


MAX_THREADS_PER_THREADGROUP = metal_limits.MAX_THREADS_PER_THREADGROUP  # every Apple GPU family


class TooManyThreads(OutOfResources, ValueError):
    """num_warps * 32 over Metal's threadgroup limit: OutOfResources, so that autotuning prunes
    the config (it is raised while options are parsed, inside the autotuner's benchmark), and a
    ValueError like the other invalid options."""

    def __init__(self, num_warps: int):
        super().__init__(num_warps * THREADS_PER_SIMDGROUP, MAX_THREADS_PER_THREADGROUP,
                         f"threads (num_warps={num_warps}; Metal allows at most "
                         f"{MAX_THREADS_PER_THREADGROUP // THREADS_PER_SIMDGROUP} warps per threadgroup)")

    def __reduce__(self):
        return (type(self), (self.required // THREADS_PER_SIMDGROUP,))


class NumWarpsNotPowerOfTwo(ValueError, AssertionError):
    """num_warps that is not a power of 2: a ValueError like our other invalid options, and an
    AssertionError because that is what Triton's own backends raise (`assert ..., "num_warps
    must be a power of 2"`) and what Triton's tests expect (test_num_warps_pow2)."""


@dataclass(frozen=True)
class MPSOptions:
    num_warps: int = 4  # simdgroups per threadgroup: num_warps * 32 threads
    num_stages: int = 1  # accepted, no effect: no software pipelining on Metal (kernel_config.py)
    # Kernel-config caps (MPSDriver.set_kernel_config; None: the device's limits): threads per
    # threadgroup and bytes of threadgroup memory a kernel may use, else OutOfResources.
    max_threads: int | None = None
    shared_memory: int | None = None
    num_ctas: int = 1
    warp_size: int = THREADS_PER_SIMDGROUP
    arch: str | None = None  # "apple9"
    backend_name: str = "mps"
    debug: bool = False
    sanitize_overflow: bool = True
    enable_fp_fusion: bool = True
    # All of Triton's fp8 formats, emulated: 8-bit storage and exact software conversions
    # (compiler/mslib/fp8.py; fp8e4b15 through convert_custom_types, language/fp8e4b15.py).
    supported_fp8_dtypes: tuple[str, ...] = ("fp8e5", "fp8e5b16", "fp8e4nv", "fp8e4b8", "fp8e4b15")
    deprecated_fp8_dot_operand_dtypes: tuple[str, ...] = ()
    default_dot_input_precision: str = "ieee"
    # tf32/tf32x3: exact fp32 products (no tf32 rounding); bf16x3/bf16x6: Triton's own f32_dot_tc
    # pass splits each operand into 2/3 bf16 parts and sums 3/6 bf16 dots, as on NVIDIA.
    allowed_dot_input_precisions: tuple[str, ...] = ("ieee", "tf32", "tf32x3", "bf16x3", "bf16x6")
    max_num_imprecise_acc_default: int = 0
    extern_libs: Any = None
    ir_override: str | None = None  # handled by Triton's compile(): a user-written .ttir/.ttgir/.msl
    instrumentation_mode: str = ""
    fpsan_homomorphic_casts: bool = False
    # Knobs that kernels and tutorials pass to other backends: accepted, ignored, no error.
    # (Triton rejects launch keywords that are not option fields, so they must exist here.)
    maxnreg: int | None = None
    ptx_version: int | None = None
    ptx_options: str | None = None
    sched4reg: bool = False
    enable_reflect_ftz: bool = True
    launch_cooperative_grid: bool = False
    launch_pdl: bool = False
    clc: bool = False
    min_shared_mem: int | None = None
    waves_per_eu: int = 0
    matrix_instr_nonkdim: int = 0
    kpack: int = 1
    allow_flush_denorm: bool = False
    schedule_hint: str = ""
    instruction_sched_variant: str = "none"
    llvm_fn_attrs: Any = ""
    wgp_cu_mode: str = "wgp"
    grf_mode: str | None = None

    def __post_init__(self):
        libs = self.extern_libs
        if isinstance(libs, dict):
            object.__setattr__(self, "extern_libs", tuple(sorted(libs.items())))
        if not isinstance(self.num_warps, int) or self.num_warps <= 0 or self.num_warps & (self.num_warps - 1):
            most = MAX_THREADS_PER_THREADGROUP // THREADS_PER_SIMDGROUP
            raise NumWarpsNotPowerOfTwo(f"num_warps must be a power of 2 from 1 to {most} (a threadgroup runs at most "
                                        f"{most} SIMD-groups of 32 threads), got {self.num_warps!r}")
        if self.num_warps * THREADS_PER_SIMDGROUP > MAX_THREADS_PER_THREADGROUP:
            raise TooManyThreads(self.num_warps)
        if self.max_threads is not None and self.num_warps * THREADS_PER_SIMDGROUP > self.max_threads:
            raise OutOfResources(self.num_warps * THREADS_PER_SIMDGROUP, self.max_threads,
                                 f"threads (num_warps={self.num_warps}; the kernel config caps threadgroups at "
                                 f"max_threads={self.max_threads})")
        if self.num_ctas != 1:
            raise ValueError(f"num_ctas={self.num_ctas}: the mps backend has no thread-block clusters; use num_ctas=1")

    def hash(self) -> str:
        key = "_".join(f"{f.name}-{getattr(self, f.name)}" for f in sorted(fields(self), key=lambda f: f.name))
        return hashlib.sha256(key.encode("utf-8")).hexdigest()


# ---- the pipeline ----------------------------------------------------------------------------

def _optional(group: ModuleType, name: str) -> Callable | None:
    """A pass that only some Triton releases have (None when absent)."""
    return getattr(group, name, None)


# (name, add(pm, options, target_name)); None entries are passes this Triton does not have.
TTIR_PASSES: list[tuple[str, Callable | None]] = [
    ("inliner", lambda pm, o, t: passes.common.add_inliner(pm)),
    ("rewrite_tensor_pointer", _optional(passes.ttir, "add_rewrite_tensor_pointer") and
     (lambda pm, o, t: passes.ttir.add_rewrite_tensor_pointer(pm))),
    ("rewrite_tensor_descriptor_to_pointer", _optional(passes.ttir, "add_rewrite_tensor_descriptor_to_pointer") and
     (lambda pm, o, t: passes.ttir.add_rewrite_tensor_descriptor_to_pointer(pm))),
    ("canonicalize", lambda pm, o, t: passes.common.add_canonicalizer(pm)),
    ("combine", lambda pm, o, t: passes.ttir.add_combine(pm)),
    ("reorder_broadcast", lambda pm, o, t: passes.ttir.add_reorder_broadcast(pm)),
    ("cse", lambda pm, o, t: passes.common.add_cse(pm)),
    ("symbol_dce", lambda pm, o, t: passes.common.add_symbol_dce(pm)),
    ("loop_unroll", lambda pm, o, t: passes.ttir.add_loop_unroll(pm)),
]

TTGIR_PASSES: list[tuple[str, Callable | None]] = [
    ("convert_to_ttgpuir", lambda pm, o, t: passes.ttir.add_convert_to_ttgpuir(
        pm, t, o.num_warps, THREADS_PER_SIMDGROUP, o.num_ctas)),
    ("coalesce", lambda pm, o, t: passes.ttgpuir.add_coalesce(pm)),
    # bf16x3/bf16x6 dots -> bf16 dots (emu-tf32 off: tf32x3 is computed in full fp32 instead)
    ("f32_dot_tc", lambda pm, o, t: passes.ttgpuir.add_f32_dot_tc(pm, False)),
    ("remove_layout_conversions", lambda pm, o, t: passes.ttgpuir.add_remove_layout_conversions(pm)),
    ("optimize_thread_locality", lambda pm, o, t: passes.ttgpuir.add_optimize_thread_locality(pm)),
    ("remove_layout_conversions", lambda pm, o, t: passes.ttgpuir.add_remove_layout_conversions(pm)),
    # loops the kernel marks `tl.range(..., flatten=True)` become one loop, as on NVIDIA and AMD
    ("fuse_nested_loops", _optional(passes.ttgpuir, "add_fuse_nested_loops") and
     (lambda pm, o, t: passes.ttgpuir.add_fuse_nested_loops(pm))),
    ("canonicalize", lambda pm, o, t: passes.common.add_canonicalizer(pm)),
    ("triton_licm", lambda pm, o, t: passes.ttir.add_triton_licm(pm)),
    ("canonicalize", lambda pm, o, t: passes.common.add_canonicalizer(pm)),
    ("loop_aware_cse", lambda pm, o, t: passes.ttir.add_loop_aware_cse(pm)),
    ("reduce_data_duplication", lambda pm, o, t: passes.ttgpuir.add_reduce_data_duplication(pm)),
    ("reorder_instructions", lambda pm, o, t: passes.ttgpuir.add_reorder_instructions(pm)),
    ("cse", lambda pm, o, t: passes.common.add_cse(pm)),
    ("symbol_dce", lambda pm, o, t: passes.common.add_symbol_dce(pm)),
    ("canonicalize", lambda pm, o, t: passes.common.add_canonicalizer(pm)),
]

# Stage name -> what runs in it. add_stages() installs exactly these, in this order.
PIPELINE: dict[str, Any] = {
    "ttir": TTIR_PASSES,
    "ttgir": TTGIR_PASSES,
    "msl": "triton_mps.compiler.compile_ttgir",
    "metal": "MSL bytes, built into a pipeline by the driver's load_binary",
}


def describe_pipeline() -> str:
    lines = []
    for stage, what in PIPELINE.items():
        if isinstance(what, list):
            names = [n for n, add in what if add is not None]
            lines.append(f"{stage}: " + ", ".join(names))
        else:
            lines.append(f"{stage}: {what}")
    return "\n".join(lines)


def _run_passes(mod, table, options, target_name: str, label: str):
    pm = ir.pass_manager(mod.context)
    pm.enable_debug()  # honours MLIR_ENABLE_DUMP like the other backends
    for _, add in table:
        if add is not None:
            add(pm, options, target_name)
    pm.run(mod, label)
    return mod


# ---- source digest for the cache key ---------------------------------------------------------

PACKAGE_DIR = Path(__file__).resolve().parent.parent  # python/triton_mps
# Globs under PACKAGE_DIR whose contents decide what we emit.
HASHED_SOURCES = ("compiler/**/*.py", "backend/*.py", "language/*.py")


@functools.cache
def sources_digest(root: Path, patterns: tuple[str, ...] = HASHED_SOURCES) -> str:
    """sha256 over the relative paths and contents of the files matching `patterns` under `root`."""
    h = hashlib.sha256()
    for pattern in patterns:
        for path in sorted(root.glob(pattern)):
            if path.is_file() and "__pycache__" not in path.parts:
                h.update(path.relative_to(root).as_posix().encode())
                h.update(b"\0")
                h.update(path.read_bytes())
                h.update(b"\0")
    return h.hexdigest()


# ---- the kernel's Triton signature ---------------------------------------------------------

def _triton_type(ir_type: str) -> str:
    from ..compiler.types import triton_name  # the dtype table

    ptr = ir_type.startswith("*")
    base = ir_type[1:] if ptr else ir_type
    return ("*" if ptr else "") + triton_name(base)


def _runtime_signature(mod) -> dict:
    """{name: Triton type} of the kernel's runtime arguments, in order, from the module itself.

    Stages get only the module, which no longer has constexpr parameters, and Triton gives the
    compilation's source (its signature with constexprs, unsigned types) to the launcher only
    (`make_launcher(src, metadata)`). So the compiler describes the kernel's own arguments, and
    the launcher maps them onto Triton's signature (launcher._arg_specs). Names come from the
    arguments' locations, `argN` when absent or repeated (tuple leaves). An argument's location
    is its parameter's name around the def's file:line, wrapped in the name of every variable it
    is assigned to (`loc("q"("c_ptr"(file:line)))`): the innermost name is the parameter's."""
    name = mod.get_entry_func_name()
    fn = mod.get_function(name)
    types = mod.get_function_signature(fn)
    names = [([""] + re.findall(r'"([^"]*)"\(', str(fn.args(i).get_loc())))[-1] for i in range(fn.get_num_args())]
    if len(names) != len(types):
        names = [""] * len(types)
    taken: set[str] = set()
    out = {}
    for i, (n, t) in enumerate(zip(names, types, strict=True)):
        if not n.isidentifier() or n in taken or names.count(n) > 1:
            n = f"arg{i}"
        taken.add(n)
        out[n] = _triton_type(t)
    return out


# ---- debug dumps ---------------------------------------------------------------------------

def debug_dir(name: str, hash_: str) -> Path:
    return Path(knobs.cache.dir) / "mps_debug" / f"{name}-{hash_[:16]}"


def _write_debug(name: str, hash_: str, texts: dict[str, str]) -> Path:
    folder = debug_dir(name, hash_)
    folder.mkdir(parents=True, exist_ok=True)
    for ext, text in texts.items():
        (folder / f"{name}.{ext}").write_text(text)
    message = f"triton-mps: wrote {', '.join(sorted(texts))} of kernel '{name}' to {folder}"
    log.info(message)
    print(message, file=sys.stderr)
    return folder


# ---- the backend -----------------------------------------------------------------------------

def min_dot_size(target: GPUTarget):
    def check(lhs_type, rhs_type) -> tuple[int, int, int]:  # (m, n, k)
        return (1, 1, 1)  # any shape: simdgroup 8x8 where it fits, a general fallback otherwise

    return check


class MPSBackend(BaseBackend):
    binary_ext = "metal"

    @staticmethod
    def supports_target(target: GPUTarget):
        return target.backend == "mps"

    def __init__(self, target: GPUTarget) -> None:
        super().__init__(target)
        self.binary_ext = "metal"

    @property
    def arch_name(self) -> str:
        arch = self.target.arch
        return arch if isinstance(arch, str) and arch.startswith("apple") else f"apple{arch}"

    def hash(self) -> str:
        from .._version import __version__

        # Environment switches that change the generated MSL are part of the key too.
        dot_path = os.environ.get("TRITON_MPS_DOT", "auto")
        return (f"triton-mps-{__version__}-{sources_digest(PACKAGE_DIR)}-debug{int(debug_enabled())}"
                f"-dot{dot_path}-{self.target.arch}")

    def parse_options(self, opts: dict) -> MPSOptions:
        from .kernel_config import kernel_config_overrides, notice_num_stages

        names = MPSOptions.__dataclass_fields__.keys()
        args = {"arch": self.arch_name}
        args.update(kernel_config_overrides())  # MPSDriver.set_kernel_config defaults; launch kwargs win
        args.update({k: v for k, v in opts.items() if k in names and v is not None})
        args["enable_fp_fusion"] = knobs.language.fp_fusion_enabled(args.get("enable_fp_fusion"))
        # What the target supports is ours to say, not the caller's.
        for fixed in ("supported_fp8_dtypes", "allowed_dot_input_precisions", "default_dot_input_precision",
                      "max_num_imprecise_acc_default", "backend_name", "warp_size"):
            args.pop(fixed, None)
        if args.get("num_stages", 1) > 1:
            notice_num_stages(args["num_stages"], warn=False)
        return MPSOptions(**args)

    def pack_metadata(self, metadata):
        return (metadata.num_warps, metadata.num_ctas, metadata.shared)

    def get_codegen_implementation(self, options):
        from ..language.fp8e4b15 import convert_custom_types

        return {"min_dot_size": min_dot_size(self.target), "convert_custom_types": convert_custom_types}

    def get_module_map(self) -> dict[str, ModuleType]:
        # libdevice calls -> our symbols (triton_mps/language/libdevice.py), also for kernels
        # that import the CUDA or HIP libdevice module directly.
        from ..language import libdevice

        return {name: libdevice for name in ("triton.language.extra.libdevice", "triton.language.extra.cuda.libdevice",
                                             "triton.language.extra.hip.libdevice")}

    def load_dialects(self, ctx):
        pass  # Triton's own dialects are all we read

    def target_name(self, options) -> str:
        return f"mps:{options.arch}"

    def add_stages(self, stages, options, language):
        if language != Language.TRITON:
            raise NotImplementedError("the mps backend compiles Triton kernels; Gluon is not supported")
        texts: dict[str, str] = {}  # stage outputs of this compilation, for the debug dump
        target_name = self.target_name(options)

        def make_ttir(mod, metadata):
            _run_passes(mod, PIPELINE["ttir"], options, target_name, "make_ttir")
            if debug_enabled():  # printing a module costs ms: only for the debug dump
                texts["ttir"] = str(mod)
            return mod

        def make_ttgir(mod, metadata):
            _run_passes(mod, PIPELINE["ttgir"], options, target_name, "make_ttgir")
            if debug_enabled():  # printing a module costs ms: only for the debug dump
                texts["ttgir"] = str(mod)
            return mod

        def make_msl(mod, metadata):
            from .. import compiler as msl_compiler  # the lead's TTGIR -> MSL compiler
            from ..compiler.abi import threads_marker

            signature = _runtime_signature(mod)  # the launcher maps it onto Triton's (launcher.py)
            kernel_name = mod.get_entry_func_name()
            compiled = msl_compiler.compile_ttgir(
                mod, num_warps=options.num_warps, signature=signature, constants={}, kernel_name=kernel_name,
                scratch_limit=options.shared_memory,
                enable_fp_fusion=options.enable_fp_fusion,
            )
            if compiled.num_warps != options.num_warps:
                raise RuntimeError(
                    f"kernel '{kernel_name}': the MSL compiler produced num_warps={compiled.num_warps}, "
                    f"asked for {options.num_warps}"
                )
            metadata["name"] = compiled.name
            metadata["shared"] = compiled.shared
            if options.shared_memory is not None and compiled.shared > options.shared_memory:
                raise OutOfResources(compiled.shared, options.shared_memory,
                                     f"shared memory (threadgroup memory of kernel '{kernel_name}'; the kernel "
                                     f"config budget is shared_memory={options.shared_memory})")
            metadata["tmps_args"] = compiled.to_metadata()
            # The threadgroup size travels with the MSL (Triton's load_binary gets only the binary):
            # the driver gives it to Metal's pipeline descriptor. Last line: MSL line numbers stay.
            texts["msl"] = compiled.msl.rstrip("\n") + "\n" + threads_marker(options.num_warps * THREADS_PER_SIMDGROUP)
            if debug_enabled():
                metadata["tmps_debug_dir"] = str(_write_debug(compiled.name, metadata["hash"], texts))
            return texts["msl"]

        def make_metal(src_msl, metadata):
            # Text in, bytes out: no stage touches a device. The pipeline's build starts once
            # triton.compile has returned the kernel (Triton's compilation listener, driver.py).
            return src_msl.encode("utf-8")

        stages["ttir"] = make_ttir
        stages["ttgir"] = make_ttgir
        stages["msl"] = make_msl
        stages["metal"] = make_metal
        if knobs.runtime.add_stages_inspection_hook is not None:
            knobs.runtime.add_stages_inspection_hook(self, stages, options, language, None)
