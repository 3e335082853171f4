"""Kernel-library tests run `kernel[grid](...)` through the plugin, as a user would.

Registration and the `mps_driver` fixture come from tests/triton/conftest.py (loaded here under
its own module name: conftest files of several folders share the name `conftest`). The repo root
goes on sys.path so `import kernels` works from a source checkout.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

_REPO = Path(__file__).resolve().parents[2]
if str(_REPO) not in sys.path:
    sys.path.insert(0, str(_REPO))


def _load_triton_conftest():
    name = "tmps_tests_triton_conftest"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, _REPO / "tests" / "triton" / "conftest.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


_triton_conftest = _load_triton_conftest()
mps_driver = _triton_conftest.mps_driver
fresh_cache = _triton_conftest.fresh_cache
