"""Kernels with many arguments, generated as source files (Triton's JIT reads source with
inspect, so the generated code must live in a real module). A plain helper module in tests/
(on sys.path through tests/conftest.py)."""

from __future__ import annotations

import importlib.util
import tempfile
from pathlib import Path

_TMP = tempfile.TemporaryDirectory(prefix="tmps-wide-kernels-")  # removed at exit
_DIR = Path(_TMP.name)


def wide_kernel(n_ptr: int, n_scalar: int):
    """`wide_<P>_<S>(p0..p{P-1}, s0..s{S-1}, n, BLOCK)`: out = p{P-1};
    out[i] = sum(p_j[i] for j < P-1) + sum((s_k % 100) * (k + 1)) for i < n."""
    name = f"wide_{n_ptr}_{n_scalar}"
    ptrs = [f"p{j}" for j in range(n_ptr)]
    scalars = [f"s{k}" for k in range(n_scalar)]
    lines = [
        "import triton",
        "import triton.language as tl",
        "",
        "",
        "@triton.jit",
        f"def {name}({', '.join(ptrs + scalars + ['n', 'BLOCK: tl.constexpr'])}):",
        "    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)",
        "    mask = offs < n",
        "    acc = tl.zeros([BLOCK], dtype=tl.float32)",
    ]
    lines += [f"    acc += tl.load({p} + offs, mask=mask, other=0.0)" for p in ptrs[:-1]]
    lines += [f"    acc += ({s} % 100).to(tl.float32) * {k + 1}" for k, s in enumerate(scalars)]
    lines.append(f"    tl.store({ptrs[-1]} + offs, acc, mask=mask)")
    path = _DIR / f"{name}.py"
    path.write_text("\n".join(lines) + "\n")
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return getattr(mod, name)


def wide_reference(inputs, scalars):
    """float64 reference of wide_kernel (all terms exact in float32 for the tests' values)."""
    import math

    import numpy as np

    out = np.zeros(len(inputs[0]) if inputs else 0, dtype=np.float64)
    for x in inputs:
        out += np.asarray(x, dtype=np.float64)
    for k, s in enumerate(scalars):
        v = math.fmod(float(s), 100.0) if isinstance(s, float) else int(s) % 100
        out += float(v) * (k + 1)
    return out
