"""TTGIR -> MSL: the compiler front of the Metal backend. The driver (plan, lower, assemble) is
driver.py; the kernel ABI, abi.py. This module only re-exports."""

from __future__ import annotations

from .abi import ArgInfo, CompiledMSL, descriptor_leaves, flatten_signature, is_descriptor
from .driver import compile_ttgir
from .errors import CompilationError

__all__ = ["compile_ttgir", "CompilationError", "CompiledMSL", "ArgInfo", "flatten_signature", "is_descriptor",
           "descriptor_leaves"]
