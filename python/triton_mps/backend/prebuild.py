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
- A launch that needs a kernel whose build is under way on a build thread does not sit idle: it
  runs queued builds on its own thread until that build is done (`help_while_building`).
  Inductor compiles a kernel's autotuning configs and then launches them one after another, so
  the next queued build is most often the next one the launch needs; with one build thread per
  core but one, this puts the launching thread's core to work too. A kernel still queued is
  built by the launch itself (the native pipeline cache builds each key once).
- fork(): the parent waits for the builds under way first (a child must not inherit a build that
  no thread of its own will finish); the child starts with no queue and no threads.
- Warnings a build raises (an unusable cache, ...) are left for the next build on a caller's
  thread, `load_binary`'s, to show.
"""

from __future__ import annotations

import atexit
import os
import threading
from collections import deque
from collections.abc import Callable

Build = Callable[[], object]
Key = tuple[str, int]  # (kernel name, hash of its MSL)


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
        self.builds: deque[tuple[Key, Build]] = deque()
        self.running: dict[Key, int] = {}  # builds under way, by key (a count: keys may repeat)
        self.threads = 0  # build threads alive
        self.idle = 0  # of them, waiting for work
        self.busy = 0  # builds under way
        self.stopping = False

    def start(self, key: Key, build: Build, limit: int) -> None:
        with self.cond:
            if self.stopping:
                return
            self.builds.append((key, build))
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
                entry = self._take_locked()
            self._run(entry)

    def _take_locked(self) -> tuple[Key, Build]:
        key, build = self.builds.popleft()
        self.busy += 1
        self.running[key] = self.running.get(key, 0) + 1
        return key, build

    def _run(self, entry: tuple[Key, Build]) -> None:
        key, build = entry
        try:
            build()
        except BaseException:  # noqa: BLE001  (load_binary builds again and raises it)
            pass
        finally:
            with self.cond:
                self.busy -= 1
                self.running[key] -= 1
                if not self.running[key]:
                    del self.running[key]
                self.cond.notify_all()

    def help_while_building(self, key: Key) -> int:
        """While a build of `key` is under way on another thread, run queued builds on this one.
        Returns how many it ran."""
        ran = 0
        while True:
            with self.cond:
                if key not in self.running or not self.builds or self.stopping:
                    return ran
                entry = self._take_locked()
            self._run(entry)
            ran += 1

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


def key_of(source: str, name: str) -> Key:
    return (name, hash(source))


def start(key: Key, build: Build) -> bool:
    """Queue `build` (a pipeline build; its result and errors are dropped) under `key`. False when
    prebuilds are off (TRITON_MPS_PREBUILD=0) or the interpreter is exiting."""
    limit = workers()
    if limit == 0:
        return False
    _queue.start(key, build, limit)
    return True


def help_while_building(source: str, name: str) -> int:
    """Called before a launch waits for kernel (`source`, `name`): if a build thread is building
    it, run queued builds on the calling thread until it is done (see the module docstring).
    Returns the number of builds run here."""
    return _queue.help_while_building(key_of(source, name))


def wait_idle() -> None:
    """Until every queued build has run (tests and benchmarks)."""
    _queue.wait_idle()


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
