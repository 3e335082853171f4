"""Helpers shared by the test modules (a plain module: conftest files of several folders
would shadow each other under one name)."""

from __future__ import annotations

import numpy as np


def poisoned(shape, dtype) -> np.ndarray:
    """An output array filled with a value no correct kernel writes (NaN or 0xA5 bytes)."""
    out = np.empty(shape, dtype=dtype)
    if np.issubdtype(out.dtype, np.floating):
        out.fill(np.nan)
    else:
        out.view(np.uint8).fill(0xA5)
    return out
