"""Pipelines built ahead of their first launch, on background threads.

Triton compiles a kernel (make_ttir ... make_metal) well before it loads it (`load_binary`, at
the kernel's first launch), and Inductor compiles every kernel of a graph before it runs any.
Building the pipeline (on the simulator: the strict check, clang and the link; on a Mac: Metal's
compiler) is most of our compile time. Started when the MSL exists, it runs on another core while
Triton's frontend and Inductor go on; `load_binary` then finds it built, or waits for it: the
native pipeline cache builds a key once and gives every caller of a build under way its result,
or its error. A failed prebuild is dropped here: `load_binary` builds again and raises, at the
launch, as without prebuilds.

Policy:
- TRITON_MPS_PREBUILD: the number of build threads; 0 turns prebuilds off. Default: one less than
  the CPU count, at least 1 (the thread compiling Triton keeps a core).
- Builds are taken first in, first out. Builds not yet started when the interpreter exits are
  dropped; one under way finishes (a compiler process is not stopped halfway).
- fork(): the parent waits for the builds under way first (a child must not inherit a build that
  no thread of its own will finish); the child starts with no queue and no threads.
- Warnings a build raises (an unusable cache, ...) are left for the next build on a caller's
  thread, `load_binary`'s, to show.
"""

from __future__ import annotations

import atexit
import os
import sys
import threading
from collections import deque
from collections.abc import Callable

Build = Callable[[], object]


def workers() -> int:
    """Build threads, from TRITON_MPS_PREBUILD (see the module docstring)."""
    raw = os.environ.get("TRITON_MPS_PREBUILD", "").strip()
    if not raw:
        return max(1, (os.cpu_count() or 1) - 1)
    if not raw.isdigit():
        from .._core import InvalidArgument

        raise InvalidArgument(f"TRITON_MPS_PREBUILD={raw!r}: expected a number of build threads >= 0 (0: off)")
    return int(raw)


class _Queue:
    def __init__(self) -> None:
        self.cond = threading.Condition()
        self.builds: deque[Build] = deque()
        self.threads = 0  # build threads alive
        self.idle = 0  # of them, waiting for work
        self.busy = 0  # builds under way
        self.stopping = False

    def start(self, build: Build, limit: int) -> None:
        with self.cond:
            if self.stopping:
                return
            self.builds.append(build)
            if self.idle == 0 and self.threads < limit:
                self.threads += 1
                threading.Thread(target=self._work, name="triton-mps-prebuild", daemon=True).start()
            else:
                self.cond.notify()

    def _work(self) -> None:
        while True:
            with self.cond:
                self.idle += 1
                while not self.builds and not self.stopping:
                    self.cond.wait()
                self.idle -= 1
                if self.stopping:
                    self.threads -= 1
                    return
                build = self.builds.popleft()
                self.busy += 1
            try:
                build()
            except BaseException:  # noqa: BLE001  (load_binary builds again and raises it)
                pass
            finally:
                with self.cond:
                    self.busy -= 1
                    self.cond.notify_all()

    def wait_idle(self) -> None:
        """Until no build is queued or under way."""
        with self.cond:
            while self.builds or self.busy:
                self.cond.wait()

    def stop(self) -> None:
        """Drop the queued builds, wait for the ones under way, end the threads."""
        with self.cond:
            self.stopping = True
            self.builds.clear()
            self.cond.notify_all()
            while self.busy:
                self.cond.wait()


_queue = _Queue()


def start(build: Build) -> bool:
    """Queue `build` (a pipeline build; its result and errors are dropped). False when prebuilds
    are off (TRITON_MPS_PREBUILD=0) or the interpreter is exiting."""
    limit = workers()
    if limit == 0:
        return False
    _queue.start(build, limit)
    return True


def wait_idle() -> None:
    """Until every queued build has run (tests and benchmarks)."""
    _queue.wait_idle()


def start_kernel(source: str, name: str) -> None:
    """Start building a just-compiled kernel's pipeline on the current device, in the background.
    In Inductor's compile workers the simulator builds it at once, into its on-disk cache, where
    the process that launches it finds it: the workers build in parallel, and a worker's
    background thread could still be building when the kernel's first launch needs it."""
    from .device import _device, build_pipeline

    try:
        dev = _device(None)
    except Exception:  # noqa: BLE001  (no device: load_binary reports it at the launch)
        return
    if _in_inductor_compile_worker():
        if dev.info["is_simulator"] and workers() > 0:
            try:
                build_pipeline(dev, source, name, issue_warnings=False)
            except Exception:  # noqa: BLE001  (load_binary builds again and raises it at the launch)
                pass
        return
    start(lambda: build_pipeline(dev, source, name, issue_warnings=False))


def _in_inductor_compile_worker() -> bool:
    utils = sys.modules.get("torch._inductor.compile_worker.utils")
    return utils is not None and not utils.in_toplevel_process()


def _before_fork() -> None:
    # Held across fork(): no thread can start a build between this wait and the fork.
    _queue.cond.acquire()
    while _queue.busy:
        _queue.cond.wait()


def _in_parent() -> None:
    _queue.cond.release()


def _in_child() -> None:
    global _queue
    _queue = _Queue()


atexit.register(lambda: _queue.stop())
os.register_at_fork(before=_before_fork, after_in_parent=_in_parent, after_in_child=_in_child)
