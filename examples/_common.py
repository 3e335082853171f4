"""What every example shares: backend selection, a small/default size switch, result lines.

Off macOS the `mps` backend runs only when asked (TRITON_BACKEND=mps): the examples ask, so
they run on the simulator with CPU tensors there and on the GPU with `mps` tensors on a Mac.
"""

from __future__ import annotations

import argparse
import os

os.environ.setdefault("TRITON_BACKEND", "mps")
os.environ.setdefault("TRITON_DEFAULT_FP_FUSION", "1")


def parse_size(argv: list[str] | None, description: str) -> str:
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--small", action="store_true", help="tiny sizes (CI runs the examples this way)")
    return "small" if parser.parse_args(argv).small else "default"


def torch_device() -> str:
    import torch

    return "mps" if torch.backends.mps.is_available() else "cpu"


def report(what: str, err: float, tol: float) -> bool:
    ok = bool(err <= tol)
    print(f"  checked {what:<52} max error {err:.2e} <= {tol:.0e}: {'OK' if ok else 'FAIL'}")
    return ok
