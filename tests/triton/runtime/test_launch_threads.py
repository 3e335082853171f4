"""Launches from several Python threads on one device (issue 18 item 5, issue 21 item 1).

Every launch's error must reach the thread that made it, and every correct launch must run:
threads share the device's one Stream, so a launch that waits for "everything committed" could
wait for (and rethrow) another thread's failed dispatch, and the simulator stops a batch at its
first failure, skipping the dispatches after it.
"""

from __future__ import annotations

import threading

import pytest
import torch
import triton
import triton.language as tl
import triton_mps

THREADS = 4
LAUNCHES = 60
FAR = 1 << 22  # elements past the end: outside the tensor's pages (the emulated device faults there too)


@triton.jit
def add_one(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=m) + 1.0, mask=m)


@triton.jit
def store_far(out_ptr, far):
    tl.store(out_ptr + far + tl.arange(0, 64), tl.full((64,), 1.0, tl.float32))


def test_each_error_reaches_its_own_launch(mps_driver):
    if not (mps_driver.config["is_simulator"] or mps_driver.config["is_emulated"]):
        pytest.skip("CPU tensors on a real Metal device: not yet confirmed on hardware")
    dev = mps_driver.get_active_torch_device()
    x = torch.arange(512, dtype=torch.float32, device=dev)
    sink = torch.zeros(64, dtype=torch.float32, device=dev)
    # Compile both before the threads start.
    add_one[(4,)](x, torch.empty_like(x), 512, BLOCK=128)
    with pytest.raises(triton_mps.DispatchError):
        store_far[(1,)](sink, FAR)

    problems: list[str] = []
    start = threading.Barrier(THREADS)

    def faulting(t: int) -> None:
        start.wait()
        for i in range(LAUNCHES):
            try:
                store_far[(1,)](sink, FAR)
            except triton_mps.DispatchError:
                continue
            except Exception as e:  # noqa: BLE001 - any other outcome is a finding
                problems.append(f"thread {t} launch {i}: {type(e).__name__}: {e}")
                continue
            problems.append(f"thread {t} launch {i}: the faulting launch returned normally")

    def correct(t: int) -> None:
        start.wait()
        for i in range(LAUNCHES):
            out = torch.full_like(x, float("nan"))
            try:
                add_one[(4,)](x, out, 512, BLOCK=128)
            except Exception as e:  # noqa: BLE001
                problems.append(f"thread {t} launch {i}: got {type(e).__name__}: {str(e)[:120]}")
                continue
            if not torch.equal(out, x + 1):
                problems.append(f"thread {t} launch {i}: the kernel did not run (output untouched)")

    threads = [threading.Thread(target=faulting if t % 2 == 0 else correct, args=(t,)) for t in range(THREADS)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(timeout=300)
    assert not any(th.is_alive() for th in threads), "a launching thread hung"
    assert problems == [], f"{len(problems)} wrong outcomes, first: {problems[:5]}"
