"""Kernel-library tests run `kernel[grid](...)` through the plugin, as a user would.

Registration and the `mps_driver` fixture come from tests/triton/conftest.py (this folder is
below it). The repo root goes on sys.path so `import kernels` works from a source checkout.
"""

from __future__ import annotations

import sys
from pathlib import Path

_REPO = Path(__file__).resolve().parents[3]
if str(_REPO) not in sys.path:
    sys.path.insert(0, str(_REPO))
