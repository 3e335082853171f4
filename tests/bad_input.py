"""The bad-input table: each test of one class of bad input carries `@bad_input(...)`.

The decorator's arguments are plain string literals: tools/gen_errors_doc.py reads them from
the test files (no import) to write docs/errors.md. The decorator also makes the test honest
about them and about the aftermath:
- the `bad` fixture's `bad.expect()` / `bad.warns()` expect exactly the declared exception
  (or warning) class with the declared message excerpt in its message;
- after the test, the process and the simulator's pool still work: a small MSL kernel runs
  and gives the right result, and the pool's active bytes are back where they were.
"""

from __future__ import annotations

import contextlib
import functools
import gc
import re
import sys
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest
import triton_mps

CHECK_SRC = r"""
#include <metal_stdlib>
using namespace metal;
kernel void bad_input_after(device const float* x [[buffer(0)]], device float* y [[buffer(1)]],
                            uint i [[thread_position_in_grid]]) {
  y[i] = 2.0f * x[i] + 1.0f;
}
"""


def _resolve(name: str) -> type:
    """'triton_mps.InvalidArgument', 'TypeError', 'triton.runtime.errors.OutOfResources' -> the class."""
    module, _, attr = name.rpartition(".")
    if not module:
        return getattr(__import__("builtins"), attr)
    __import__(module)
    return getattr(sys.modules[module], attr)


class Case:
    """What one class of bad input must give: `raises` is a class name (dotted), "warning:<name>"
    for a warning, or "none" (it works, e.g. concurrent compiles); `says` an excerpt of the message."""

    def __init__(self, title: str, given: str, raises: str, says: str):
        self.title, self.given, self.raises, self.says = title, given, raises, says

    @contextlib.contextmanager
    def expect(self) -> Iterator[Any]:
        assert not self.raises.startswith("warning:") and self.raises != "none", self.raises
        with pytest.raises(_resolve(self.raises), match=re.escape(self.says)) as info:
            yield info

    @contextlib.contextmanager
    def warns(self) -> Iterator[Any]:
        assert self.raises.startswith("warning:"), self.raises
        with pytest.warns(_resolve(self.raises.removeprefix("warning:")), match=re.escape(self.says)) as record:
            yield record

    def check_message(self, text: str) -> None:
        """For errors seen in another process's output."""
        assert self.says in text, f"expected {self.says!r} in:\n{text}"


def _usable_after(before_active: int) -> None:
    sim = triton_mps.get_device("sim")
    k = triton_mps.compile_msl(CHECK_SRC, "bad_input_after", sim)
    x = np.arange(64, dtype=np.float32)
    y = np.full(64, np.nan, np.float32)
    k(x, y, grid=2, threads=32)
    sim.synchronize()
    np.testing.assert_array_equal(y, 2 * x + 1)
    buf = sim.buffer(4096)  # the pool still hands out buffers...
    buf.bytes_view()[:] = 7
    del buf
    gc.collect()
    # ...and nothing the failed call made is still held.
    assert sim.pool_stats()["active_bytes"] == before_active, sim.pool_stats()


def bad_input(title: str, *, given: str, raises: str, says: str) -> Callable:
    """Marks a test as the table's row for one class of bad input (see the module docstring)."""
    case = Case(title, given, raises, says)

    def deco(fn: Callable) -> Callable:
        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            gc.collect()
            before = triton_mps.get_device("sim").pool_stats()["active_bytes"]
            result = fn(*args, **kwargs)
            _usable_after(before)
            return result

        wrapper.bad_input = case  # type: ignore[attr-defined]
        return wrapper

    return deco


@pytest.fixture
def bad(request) -> Case:
    """The `Case` of the running test (from its @bad_input)."""
    case = getattr(request.function, "bad_input", None)
    assert case is not None, f"{request.function.__name__} has no @bad_input"
    return case
