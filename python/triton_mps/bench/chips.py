"""Apple GPUs for the roofline model: published figures, not measurements.

Sources (as of 2025): Apple's newsroom announcements and Mac tech-spec pages give the unified
memory bandwidth of each chip (e.g. "M1 Max ... 400GB/s", "M4 Pro ... 273GB/s", "M5 ... 153GB/s");
FP32 rates are GPU cores x 128 ALUs x 2 FLOPs x clock, as commonly derived from Apple's core
counts and the clocks reported by reviewers (Apple quotes TFLOPS only for some chips: M1 2.6,
M1 Pro 5.2, M1 Max 10.4, M2 3.6, M2 Max 13.6). FP16 vector arithmetic runs at the FP32 rate on
M1-M4 (no double-rate half); M5's GPU "neural accelerators" (MSL 4 tensor ops) are not used by
simdgroup_matrix code and are left out. Threadgroup memory is 32 KiB on every Apple GPU
(Metal feature set tables). See also /work/shared/docs/platform-facts.md section 4.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Chip:
    name: str
    bandwidth_gbs: float  # unified memory bandwidth, GB/s (1e9 bytes)
    fp32_tflops: float    # peak FP32 FMA rate (2 FLOPs per FMA)
    fp16_tflops: float    # peak FP16 rate (= FP32 on M1-M4)
    threadgroup_kib: int = 32

    def time_s(self, device_bytes: float, flops: float, fp16: bool = False) -> float:
        """Roofline time: the slower of moving the bytes and doing the FLOPs at peak."""
        rate = (self.fp16_tflops if fp16 else self.fp32_tflops) * 1e12
        return max(device_bytes / (self.bandwidth_gbs * 1e9), flops / rate)


CHIPS: list[Chip] = [
    Chip("M1", 68.25, 2.6, 2.6),
    Chip("M1 Pro", 200, 5.2, 5.2),
    Chip("M1 Max", 400, 10.4, 10.4),
    Chip("M2", 100, 3.6, 3.6),
    Chip("M2 Max", 400, 13.6, 13.6),
    Chip("M3", 100, 4.1, 4.1),
    Chip("M3 Max", 400, 14.2, 14.2),
    Chip("M4", 120, 4.3, 4.3),
    Chip("M4 Pro", 273, 8.6, 8.6),
    Chip("M4 Max", 546, 17.2, 17.2),
    Chip("M5", 153, 4.4, 4.4),
]


def chip(name: str) -> Chip:
    for c in CHIPS:
        if c.name.lower() == name.lower():
            return c
    raise KeyError(f"unknown chip {name!r}; known: {', '.join(c.name for c in CHIPS)}")
