"""`triton_metal`: the names code written for the earlier Triton Metal backend imports.

    import triton_metal
    import triton_metal.language as tl

    @triton_metal.jit
    def kernel(...): ...

Everything here is Triton's own object (`triton_metal.jit is triton.jit`) running on the
`mps` backend of triton-mps: `jit`, `autotune`, `heuristics`, `Config`, `cdiv`,
`next_power_of_2`, `language` (= `triton.language`), `MPSDriver` and `driver`
(= `triton.runtime.driver`).

Importing it selects the Metal backend: TRITON_BACKEND=metal is set unless TRITON_BACKEND is
already set (as the earlier package did; off macOS that means the triton-mps simulator).
TRITON_METAL_DEBUG=1 is TRITON_MPS_DEBUG=1: each compile logs where its TTIR, TTGIR and MSL
were written (logger "triton_mps" and stderr).
"""

from __future__ import annotations

import os
import sys

os.environ.setdefault("TRITON_BACKEND", "metal")

import triton  # noqa: E402
import triton.language as language  # noqa: E402
import triton_mps  # noqa: E402
from triton import Config, autotune, cdiv, heuristics, jit, next_power_of_2  # noqa: E402
from triton.runtime import driver  # noqa: E402
from triton_mps import MPSDriver  # noqa: E402

# `import triton_metal.language as tl` finds triton.language itself.
sys.modules.setdefault(__name__ + ".language", language)

__version__ = triton_mps.__version__

__all__ = ["Config", "MPSDriver", "autotune", "cdiv", "driver", "heuristics", "jit", "language",
           "next_power_of_2", "triton"]
