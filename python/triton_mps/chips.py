"""Apple GPUs: one table of published figures, not measurements, for the driver's device
properties (GPU cores, memory bus) and the roofline model (`triton_mps.bench`).

Sources (as of 2025): Apple's newsroom announcements and Mac tech-spec pages give the GPU core
counts and the unified memory bandwidth of each chip (e.g. "M1 Max ... 400GB/s", "M4 Pro ...
273GB/s", "M5 ... 153GB/s"); core counts are the largest configuration of each chip (binned
parts have fewer). FP32 rates are GPU cores x 128 ALUs x 2 FLOPs x clock, as commonly derived
from Apple's core counts and the clocks reported by reviewers (Apple quotes TFLOPS only for
some chips: M1 2.6, M1 Pro 5.2, M1 Max 10.4, M2 3.6, M2 Max 13.6). FP16 vector arithmetic runs
at the FP32 rate on M1-M4 (no double-rate half); M5's GPU "neural accelerators" (MSL 4 tensor
ops) are not used by simdgroup_matrix code and are left out. Threadgroup memory is 32 KiB on
every Apple GPU (Metal feature set tables). Chips without roofline figures here have core
counts only (the driver's estimate), and the roofline model does not offer them.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Chip:
    name: str
    gpu_cores: int  # nominal, largest configuration
    bandwidth_gbs: float | None = None  # unified memory bandwidth, GB/s (1e9 bytes)
    fp32_tflops: float | None = None    # peak FP32 FMA rate (2 FLOPs per FMA)
    fp16_tflops: float | None = None    # peak FP16 rate (= FP32 on M1-M4)
    threadgroup_kib: int = 32

    def time_s(self, device_bytes: float, flops: float, fp16: bool = False) -> float:
        """Roofline time: the slower of moving the bytes and doing the FLOPs at peak."""
        if self.bandwidth_gbs is None or self.fp32_tflops is None or self.fp16_tflops is None:
            raise ValueError(f"no roofline figures for {self.name}")
        rate = (self.fp16_tflops if fp16 else self.fp32_tflops) * 1e12
        return max(device_bytes / (self.bandwidth_gbs * 1e9), flops / rate)


TABLE: list[Chip] = [
    Chip("M1", 8, 68.25, 2.6, 2.6),
    Chip("M1 Pro", 16, 200, 5.2, 5.2),
    Chip("M1 Max", 32, 400, 10.4, 10.4),
    Chip("M1 Ultra", 64),
    Chip("M2", 10, 100, 3.6, 3.6),
    Chip("M2 Pro", 19),
    Chip("M2 Max", 38, 400, 13.6, 13.6),
    Chip("M2 Ultra", 76),
    Chip("M3", 10, 100, 4.1, 4.1),
    Chip("M3 Pro", 18),
    Chip("M3 Max", 40, 400, 14.2, 14.2),
    Chip("M3 Ultra", 80),
    Chip("M4", 10, 120, 4.3, 4.3),
    Chip("M4 Pro", 20, 273, 8.6, 8.6),
    Chip("M4 Max", 40, 546, 17.2, 17.2),
    Chip("M5", 10, 153, 4.4, 4.4),
    Chip("M5 Pro", 20),
    Chip("M5 Max", 40),
]
# The roofline model's chips: those with published bandwidth and FLOP rates.
CHIPS: list[Chip] = [c for c in TABLE if c.bandwidth_gbs is not None]
GPU_CORES: dict[str, int] = {c.name: c.gpu_cores for c in TABLE}
# Memory bus width in bits by tier (LPDDR5/5X), for roofline arithmetic in tutorials.
BUS_WIDTH = {"Ultra": 1024, "Max": 512, "Pro": 256}


def chip(name: str) -> Chip:
    """A roofline chip by its exact name ("M4 Max"; any case)."""
    for c in CHIPS:
        if c.name.lower() == name.lower():
            return c
    raise KeyError(f"unknown chip {name!r}; known: {', '.join(c.name for c in CHIPS)}")


def chip_of(device_name: str) -> Chip | None:
    """The chip a Metal device name contains ("Apple M3 Max" -> M3 Max), longest name first so
    that "M3 Max" is not taken for "M3"; None for other names (the simulator)."""
    return next((c for c in sorted(TABLE, key=lambda c: len(c.name), reverse=True) if c.name in device_name), None)


def bus_width_bits(device_name: str) -> int:
    """The memory bus width of the chip's tier, 128 bits for base chips."""
    return next((w for tier, w in BUS_WIDTH.items() if tier in device_name), 128)
