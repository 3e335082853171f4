"""`triton_mps.profile()`: one record per `kernel[grid](...)`, device times, the summary table."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch
import triton
import triton.language as tl
import triton_mps
from triton_mps import _core
from triton_mps.profiler import _record


@triton.jit
def prof_add(x, y, out, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out + offs, tl.load(x + offs, mask=mask) + tl.load(y + offs, mask=mask), mask=mask)


N = 1000


@pytest.fixture
def data(mps_driver, rng):
    dev = mps_driver.get_active_torch_device()
    x = torch.from_numpy(rng.standard_normal(N).astype("float32")).to(dev)
    y = torch.from_numpy(rng.standard_normal(N).astype("float32")).to(dev)
    return x, y, torch.full((N,), float("nan"), device=dev)


def test_records_each_launch(data):
    x, y, out = data
    prof_add[(4,)](x, y, out, N, BLOCK=256)  # compiled outside the profile: not recorded
    with triton_mps.profile() as prof:
        prof_add[(4,)](x, y, out, N, BLOCK=256)
        prof_add[(2, 1, 1)](x, y, out, 512, BLOCK=256)
        prof_add[(0,)](x, y, out, N, BLOCK=256)
    torch.testing.assert_close(out, x + y)
    assert [(r.kernel, r.grid, r.stream) for r in prof] == [
        ("prof_add", (4, 1, 1), "own"), ("prof_add", (2, 1, 1), "own"), ("prof_add", (0, 1, 1), "none")]
    ran, _, empty = prof.records
    assert ran.threads > 0 and ran.wall_us > 0
    assert ran.device_us is not None and 0 < ran.device_us <= ran.wall_us * 1.5
    assert empty.device_us is None
    table = prof.table()
    assert "prof_add" in table and "total" in table
    assert table.splitlines()[2].split()[:2] == ["prof_add", "3"]


def test_off_outside_the_block_and_nesting(data):
    x, y, out = data
    with triton_mps.profile() as outer:
        prof_add[(4,)](x, y, out, N, BLOCK=256)
        with triton_mps.profile() as inner:
            prof_add[(1,)](x, y, out, N, BLOCK=256)
        prof_add[(2,)](x, y, out, N, BLOCK=256)
    assert [r.grid[0] for r in inner] == [1]
    assert [r.grid[0] for r in outer] == [4, 1, 2]
    assert not _core.triton_profiling()
    prof_add[(4,)](x, y, out, N, BLOCK=256)
    with triton_mps.profile() as later:
        pass
    assert len(later) == 0


def test_foreign_stream_launches_are_timed_after_synchronize(data, mps_driver):
    x, y, out = data
    dev = triton_mps.devices()[mps_driver.get_current_device()]
    if not dev.is_simulator:
        pytest.skip("the recording foreign stream is tested on the simulator")
    stream = _core.attach_recording_stream(dev, True)
    try:
        with triton_mps.profile() as prof:
            prof_add[(4,)](x, y, out, N, BLOCK=256)
            # Timed on PyTorch's stream: committed alone, so its command buffer's time is its own.
            assert stream.events() == ["commit", "encode prof_add", "commit"]
        # Leaving the block waited for the device: the dispatch ran and has its time.
        torch.testing.assert_close(out, x + y)
    finally:
        _core.detach_foreign_stream(dev)
    (rec,) = prof.records
    assert rec.stream == "foreign" and rec.device_us is not None and rec.device_us > 0


def test_counters_the_launch_result_exposes_are_summed():
    def timing(elapsed_ns, counters):
        return SimpleNamespace(error="", ready=True, elapsed_ns=elapsed_ns, counters=counters)

    prof = triton_mps.Profile()
    prof.records = [
        _record(("k", "dev", (1, 1, 1), 64, 5000.0, "own", timing(2000.0, {"device_bytes_read": 4096, "flops": 10}))),
        _record(("k", "dev", (1, 1, 1), 64, 7000.0, "own", timing(4000.0, {"device_bytes_read": 1024, "flops": 6}))),
        _record(("j", "dev", (2, 1, 1), 32, 1000.0, "own", None)),
    ]
    assert prof.records[0].counters == {"device_bytes_read": 4096, "flops": 10}
    lines = prof.table().splitlines()
    assert lines[0].split()[-2:] == ["device_bytes_read", "flops"]
    k_row = next(line for line in lines if line.startswith("k "))
    assert k_row.split()[-2:] == ["5,120", "16"]
    assert k_row.split()[1] == "2" and "0.006" in k_row  # device total 6 us = 0.006 ms
