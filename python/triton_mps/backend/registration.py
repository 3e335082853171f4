"""What the backend puts on Triton: `triton.runtime.driver.MPSDriver`, the driver class on
Triton's DriverConfig, also while Triton is still importing `triton.runtime.driver` (backend
discovery runs inside that import); and a compilation listener (`listen_to_compiles`)."""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import sys
from collections.abc import Callable
from typing import Any


class _AfterImport(importlib.abc.MetaPathFinder):
    """Runs `callback(module)` once `name` has been imported (then removes itself)."""

    def __init__(self, name: str, callback: Callable[[Any], None]):
        self.name = name
        self.callback = callback

    def find_spec(self, fullname, path, target=None):
        if fullname != self.name:
            return None
        if self in sys.meta_path:
            sys.meta_path.remove(self)
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is None or spec.loader is None:
            return spec
        inner, callback = spec.loader, self.callback

        class Loader(importlib.abc.Loader):
            def __getattr__(self, attr):  # get_source etc. (tracebacks)
                return getattr(inner, attr)

            def create_module(self, spec):
                return inner.create_module(spec)

            def exec_module(self, module):
                inner.exec_module(module)
                callback(module)

        spec.loader = Loader()
        return spec


def register_on_triton(driver_cls: type) -> None:
    """Make `triton.runtime.driver.MPSDriver` the driver class. `triton.runtime.driver` is
    Triton's DriverConfig instance; the class goes on DriverConfig. Triton discovers backends
    while its `triton.runtime.driver` module is still being imported, so then this waits for
    that import to finish."""

    def attach(module) -> None:
        config_cls = getattr(module, "DriverConfig", None)
        if config_cls is not None:
            config_cls.MPSDriver = driver_cls

    module = sys.modules.get("triton.runtime.driver")
    if module is not None and hasattr(module, "DriverConfig"):
        attach(module)
    elif not any(isinstance(f, _AfterImport) for f in sys.meta_path):
        sys.meta_path.insert(0, _AfterImport("triton.runtime.driver", attach))


def listen_to_compiles(listener: Callable[..., None]) -> None:
    """Make `listener` Triton's compilation listener (`triton.knobs.compilation.listener`, one
    slot, called with keywords at the end of every triton.compile), after the one already set,
    if any, which is called too (ours first). Idempotent. A listener set later replaces ours."""
    from triton import knobs

    current = knobs.compilation.listener
    if current is listener or getattr(current, "tmps_listener", None) is listener:
        return
    if current is None:
        knobs.compilation.listener = listener
        return

    def both(**kwargs: Any) -> None:
        try:
            listener(**kwargs)
        finally:
            current(**kwargs)

    both.tmps_listener = listener  # type: ignore[attr-defined]
    knobs.compilation.listener = both
