"""Hash what every kernel launch of the test suite reads and writes, to check that a change of
the simulator or the compiler changes no result, bit for bit.

As a pytest plugin (the tools folder on the path), once with each build to compare:

    TRITON_MPS_SIM_THREADS=1 TMPS_RECORD_OUTPUTS=/tmp/out-before PYTHONPATH=tools \
        python -m pytest -p record_outputs -n 2 tests/compiler tests/triton/language tests/triton/kernels

writes, per pytest worker, `<dir>/<worker>.jsonl`: one line per launch with the test, the kernel
name, the launch's index within the test, the SHA-256 of every array argument's memory before the
launch (its inputs, uninitialized output memory included) and after it (its results). Then

    python tools/record_outputs.py compare /tmp/out-before /tmp/out-after

pairs the launches of the two runs (same test, kernel and index) and, among pairs whose inputs
hashed the same, prints every pair whose results differ.

The inputs must be the same in both runs for a pair to be compared, so the plugin makes them
repeatable: every test starts from seeds derived from its id (numpy's global, `SeedSequence()` and
`default_rng()` without a seed, which the suite's tests use; torch; `random`), and torch's `empty*`
return memory filled with one byte pattern rather than whatever the allocator left. Launches whose
inputs still differ (memory reused from a pool, addresses or times among the inputs) are counted
and left out, never called equal.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from record_msl import current_test  # the test's key, as record_msl.py writes it

_OUT = os.environ.get("TMPS_RECORD_OUTPUTS")
_FILL = 0x5A  # the byte torch.empty* memory is filled with while recording
_SEED = 0  # the running test's seed, for numpy's generators made without one


def _storage_bytes(t):
    """A uint8 tensor over all of t's storage (a view's base too)."""
    import torch

    return torch.empty(0, dtype=torch.uint8).set_(t.untyped_storage())


def _memory(arg: Any, out: list) -> None:
    """The array arguments' memory as numpy byte arrays (tuples and descriptors walked)."""
    import numpy as np

    torch = sys.modules.get("torch")
    if torch is not None and isinstance(arg, torch.Tensor):
        if arg.device.type == "cpu":
            out.append(_storage_bytes(arg).numpy())
        return
    if isinstance(arg, (tuple, list)):
        for a in arg:
            _memory(a, out)
        return
    if isinstance(arg, np.ndarray):
        base = arg
        while isinstance(base.base, np.ndarray):
            base = base.base
        out.append(np.ascontiguousarray(base).reshape(-1).view(np.uint8))
        return
    if all(hasattr(arg, a) for a in ("base", "shape", "strides")):  # a host tensor descriptor
        _memory(arg.base, out)
        return
    if hasattr(arg, "bytes_view"):  # a device buffer
        out.append(np.asarray(arg.bytes_view()))
        return


def _digest(args) -> str:
    h = hashlib.sha256()
    arrays: list = []
    for a in args:
        _memory(a, arrays)
    for arr in arrays:
        h.update(arr.tobytes())
        h.update(b"|")
    return h.hexdigest()


class _Log:
    def __init__(self, path: Path):
        self.path = path
        self.counts: Counter = Counter()

    def launch(self, kernel: str, grid, args, run) -> None:
        """Runs `run()`, the launch of `kernel` on `args`, and logs the hashes around it."""
        before = _digest(args)
        run()
        after = _digest(args)
        test = current_test()
        index = self.counts[(test, kernel)]
        self.counts[(test, kernel)] += 1
        with self.path.open("a") as f:
            f.write(json.dumps({"test": test, "kernel": kernel, "index": index, "grid": list(grid),
                                "inputs": before, "outputs": after}) + "\n")


class _Recorded:
    """Forwards to Triton's launcher; hashes the kernel's array arguments around the call."""

    def __init__(self, launcher, kernel: str, log: _Log):
        self.launcher, self.kernel, self.log = launcher, kernel, log

    def __getattr__(self, name):
        return getattr(self.launcher, name)

    def __call__(self, gx, gy, gz, stream, function, *rest):
        args = rest[4:]  # packed metadata, launch metadata, enter and exit hooks come first
        self.log.launch(self.kernel, (gx, gy, gz), args, lambda: self.launcher(gx, gy, gz, stream, function, *rest))


_LOG: _Log | None = None


def _install() -> None:
    from triton_mps.backend import driver, launcher

    global _LOG
    out = Path(_OUT)
    out.mkdir(parents=True, exist_ok=True)
    _LOG = log = _Log(out / f"{os.environ.get('PYTEST_XDIST_WORKER', 'main')}.jsonl")
    make = launcher.make_launcher

    def make_recorded(src, metadata):
        return _Recorded(make(src, metadata), metadata.name, log)

    launcher.make_launcher = driver.make_launcher = make_recorded
    driver.MPSDriver._tmps_recorded_launcher = staticmethod(make_recorded)


def _seed_everything(test: str) -> None:
    import numpy as np

    global _SEED
    _SEED = int.from_bytes(hashlib.sha256(test.encode()).digest()[:4], "little")
    random.seed(_SEED)
    np.random.seed(_SEED)
    torch = sys.modules.get("torch")
    if torch is not None:
        torch.manual_seed(_SEED)


def _patch_sources() -> None:
    import numpy as np

    real = np.random.SeedSequence

    def seed_sequence(entropy=None, *args, **kwargs):
        return real(_SEED if entropy is None else entropy, *args, **kwargs)

    np.random.SeedSequence = seed_sequence
    real_rng = np.random.default_rng

    def default_rng(seed=None):  # without a seed numpy draws entropy in C, past SeedSequence
        return real_rng(_SEED if seed is None else seed)

    np.random.default_rng = default_rng
    try:
        import torch
    except ImportError:
        return
    for name in ("empty", "empty_like", "empty_strided"):
        real_empty = getattr(torch, name)

        def filled(*args, _real=real_empty, **kwargs):
            t = _real(*args, **kwargs)
            if t.device.type == "cpu" and t.numel():
                _storage_bytes(t).fill_(_FILL)
            return t

        setattr(torch, name, filled)


def pytest_configure(config):
    if not _OUT:
        return
    _patch_sources()
    _install()


@pytest.hookimpl(tryfirst=True)  # before the test's fixtures (the `rng` fixture) are set up
def pytest_runtest_setup(item):
    if not _OUT:
        return
    _seed_everything(item.nodeid.rsplit("/", 1)[-1])
    # Triton asks the active driver for its launcher class when a kernel is first loaded; a driver
    # made before the plugin was installed still holds the plain one.
    module = sys.modules.get("triton.runtime.driver")
    config = getattr(module, "driver", None)
    for drv in (getattr(config, "_default", None), getattr(config, "_active", None)):
        if drv is not None and hasattr(drv, "_tmps_recorded_launcher"):
            drv.launcher_cls = drv._tmps_recorded_launcher
    _record_harness()


def _record_harness() -> None:
    """tests/compiler's harness launches MSL kernels directly, not through Triton's launcher."""
    harness = sys.modules.get("ttgir_harness")
    if harness is None or getattr(harness.Compiled, "_tmps_recorded", False):
        return
    call = harness.Compiled.__call__

    def recorded(self, *args, grid=1):
        _LOG.launch(self.cm.name, grid if isinstance(grid, tuple) else (grid,), args,
                    lambda: call(self, *args, grid=grid))

    harness.Compiled.__call__ = recorded
    harness.Compiled._tmps_recorded = True


def _load(run: Path) -> dict:
    out = {}
    for log in run.glob("*.jsonl"):
        for line in log.read_text().splitlines():
            rec = json.loads(line)
            out[(rec["test"], rec["kernel"], rec["index"])] = rec
    return out


def compare(before: Path, after: Path) -> int:
    a, b = _load(before), _load(after)
    both = sorted(set(a) & set(b))
    same_inputs = [k for k in both if a[k]["inputs"] == b[k]["inputs"]]
    differ = [k for k in same_inputs if a[k]["outputs"] != b[k]["outputs"]]
    tests = {k[0] for k in same_inputs}
    kernels = {k[1] for k in same_inputs}
    print(f"launches: {len(a)} before, {len(b)} after, {len(both)} in both; "
          f"with the same inputs: {len(same_inputs)} ({len(tests)} tests, {len(kernels)} kernel names)")
    print(f"results differ: {len(differ)}")
    for k in differ:
        print(f"  {k[0]} {k[1]} launch {k[2]}")
    return 1 if differ else 0


if __name__ == "__main__":
    if len(sys.argv) != 4 or sys.argv[1] != "compare":
        sys.exit(__doc__)
    sys.exit(compare(Path(sys.argv[2]), Path(sys.argv[3])))
