"""Triton backend plugin `mps`: Apple GPUs through Metal, and the CPU simulator elsewhere.

Registered in the `triton.backends` entry-point group (pyproject.toml); Triton imports
`triton_mps.backend.compiler` (MPSBackend) and `triton_mps.backend.driver` (MPSDriver).

`triton` is imported first on purpose: if a submodule were imported before triton, triton's
backend discovery would run while that submodule is half-initialized and find no backend
class in it ("Found 0 concrete subclasses"). Importing triton here, in the package, makes
every import path go through triton's own initialization first.
"""

import triton  # noqa: F401  (must precede the submodules; see above)

# Inductor's `cpu` target (cpu_backend="triton") when TRITON_BACKEND=mps: registered while
# Triton discovers backends, so that every process importing triton sees it (inductor_cpu.py).
from .inductor_cpu import register_cpu_alias  # noqa: E402

register_cpu_alias()
