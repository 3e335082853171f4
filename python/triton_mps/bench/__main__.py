"""`python -m triton_mps.bench`: see the package docstring."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..chips import CHIPS, chip
from .model import Result, run_workloads

DEFAULT_CHIPS = ["M1", "M2 Max", "M4", "M4 Max", "M5"]


def _mb(b: float) -> str:
    return f"{b / 1e6:.3f}"


def counters_table(results: list[Result]) -> str:
    lines = ["| kernel | shape | floor MB | device MB | device / floor | distinct MB | simdgroup_matrix FLOPs "
             "/ required | scalar MFLOP | counted FLOPs / required | threadgroup MB | barriers | SIMD collectives "
             "| target | met |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---|"]
    for r in results:
        share = f"{100 * r.matrix_share:.1f}%" if r.name == "matmul" else "-"
        target = r.target + ("; " + "; ".join(r.notes) if r.notes else "")
        counted = f"{r.counted_flops / r.required_flops:.2f}" if r.required_flops else "-"
        lines.append(f"| {r.name} | {r.shape} | {_mb(r.floor_bytes)} | {_mb(r.device_bytes)} | {r.traffic_ratio:.3f} "
                     f"| {_mb(r.distinct_bytes)} | {share} | {r.scalar_flops / 1e6:.3f} | {counted} "
                     f"| {_mb(r.threadgroup_bytes)} | {r.barriers} "
                     f"| {r.simd_collectives} | {target} | {'yes' if r.met else 'NO'} |")
    return "\n".join(lines)


def model_table(results: list[Result], chips: list[str]) -> str:
    head = "| kernel | " + " | ".join(f"{c} modeled µs (floor µs)" for c in chips) + " |"
    lines = [head, "|---|" + "---:|" * len(chips)]
    for r in results:
        cells = []
        for name in chips:
            c = chip(name)
            modeled = c.time_s(r.device_bytes, r.counted_flops or r.required_flops, r.fp16) * 1e6
            floor = c.time_s(r.floor_bytes, r.required_flops, r.fp16) * 1e6
            cells.append(f"{modeled:.1f} ({floor:.1f})")
        lines.append(f"| {r.name} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def chips_table() -> str:
    lines = ["| chip | bandwidth GB/s | FP32 TFLOPS | FP16 TFLOPS | threadgroup KiB |", "|---|---:|---:|---:|---:|"]
    for c in CHIPS:
        lines.append(f"| {c.name} | {c.bandwidth_gbs:g} | {c.fp32_tflops:g} | {c.fp16_tflops:g} "
                     f"| {c.threadgroup_kib} |")
    return "\n".join(lines)


def plots(results: list[Result], folder: Path, chip_name: str = "M4") -> list[Path]:
    """Roofline PNG for one chip and the traffic ratios (needs matplotlib; skipped without)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed: no plots (pip install matplotlib)", file=sys.stderr)
        return []
    folder.mkdir(parents=True, exist_ok=True)
    c = chip(chip_name)
    fig, ax = plt.subplots(figsize=(6, 4))
    ai = [10 ** (x / 10) for x in range(-20, 31)]
    for fp16 in (False, True):
        peak = (c.fp16_tflops if fp16 else c.fp32_tflops) * 1e12
        roof = [min(peak, a * c.bandwidth_gbs * 1e9) / 1e12 for a in ai]
        ax.plot(ai, roof, label=f"roof ({'fp16' if fp16 else 'fp32'})")
    for r in results:
        intensity = r.required_flops / max(r.device_bytes, 1)
        perf = r.required_flops / c.time_s(r.device_bytes, r.required_flops, r.fp16) / 1e12
        ax.scatter([intensity], [perf])
        ax.annotate(r.name, (intensity, perf))
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("FLOPs per device byte (counted traffic)")
    ax.set_ylabel("modeled TFLOPS")
    ax.set_title(f"Roofline model, {c.name}")
    ax.legend()
    roof = folder / "roofline.png"
    fig.tight_layout()
    fig.savefig(roof, dpi=120)
    plt.close(fig)
    fig, ax = plt.subplots(figsize=(6, 3))
    ax.bar([r.name for r in results], [r.traffic_ratio for r in results])
    ax.axhline(1.05, linestyle="--", color="gray")
    ax.set_ylabel("device bytes / floor")
    fig.tight_layout()
    ratio = folder / "traffic.png"
    fig.savefig(ratio, dpi=120)
    plt.close(fig)
    return [roof, ratio]


def mlx_times(n: int = 1 << 24, rows: int = 4096, m: int = 2048, reps: int = 20) -> list[float] | None:
    """MLX's time (ms, median of `reps` after a warm-up) for the work metal_times compares: vector
    add of n fp32, softmax of rows x rows fp32, an m^3 fp16 matmul, on MLX's default device (the
    GPU on a Mac). None without MLX."""
    try:
        import mlx.core as mx
    except ImportError:
        return None
    import statistics
    import time

    x, y = mx.random.uniform(shape=(n, )), mx.random.uniform(shape=(n, ))
    s = mx.random.normal(shape=(rows, rows))
    a = mx.random.normal(shape=(m, m)).astype(mx.float16)
    b = mx.random.normal(shape=(m, m)).astype(mx.float16)
    mx.eval(x, y, s, a, b)
    out = []
    for work in (lambda: x + y, lambda: mx.softmax(s, axis=-1), lambda: a @ b):
        mx.eval(work())  # warm-up (kernel build)
        times = []
        for _ in range(reps):
            t0 = time.perf_counter()
            mx.eval(work())  # evaluation waits for the device
            times.append((time.perf_counter() - t0) * 1e3)
        out.append(statistics.median(times))
    return out


def metal_times() -> str:
    """A Mac: GPU times of our kernels vs torch eager and MLX (if installed) for the same work."""
    import torch
    import triton

    from .model import _import_kernels

    if not torch.backends.mps.is_available():
        raise SystemExit("--device metal needs a Mac with torch's mps backend")
    _import_kernels()
    from kernels.matmul import matmul
    from kernels.softmax import softmax
    from kernels.vector_add import add

    dev = "mps"
    x, y = torch.rand(1 << 24, device=dev), torch.rand(1 << 24, device=dev)
    s = torch.randn(4096, 4096, device=dev)
    a, b = torch.randn(2048, 2048, device=dev, dtype=torch.float16), torch.randn(2048, 2048, device=dev,
                                                                                  dtype=torch.float16)
    rows = [("vector add 16M fp32", lambda: add(x, y), lambda: x + y),
            ("softmax 4096x4096 fp32", lambda: softmax(s), lambda: torch.softmax(s, -1)),
            ("matmul 2048^3 fp16", lambda: matmul(a, b), lambda: a @ b)]
    mlx = mlx_times()
    lines = ["| work | triton-mps ms | torch eager ms | MLX ms |", "|---|---:|---:|---:|"]
    for i, (name, ours, theirs) in enumerate(rows):
        theirs_mlx = f"{mlx[i]:.3f}" if mlx else "- (MLX not installed)"
        lines.append(f"| {name} | {triton.testing.do_bench(ours):.3f} | {triton.testing.do_bench(theirs):.3f} | "
                     f"{theirs_mlx} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m triton_mps.bench", description=__doc__)
    ap.add_argument("--quick", action="store_true", help="small sizes, no targets enforced (a smoke test)")
    ap.add_argument("--device", choices=["sim", "metal"], default="sim")
    ap.add_argument("--only", nargs="*", help="vector_add softmax layer_norm matmul")
    ap.add_argument("--chips", nargs="*", default=DEFAULT_CHIPS)
    ap.add_argument("--markdown", type=Path, help="write the report (e.g. docs/performance.md)")
    ap.add_argument("--plots", type=Path, help="folder for PNG plots (needs matplotlib)")
    ap.add_argument("--check", action="store_true", help="exit 1 if a target is missed")
    args = ap.parse_args(argv)
    if args.device == "metal":
        print(metal_times())
        return 0
    results = run_workloads(quick=args.quick, only=args.only)
    report = "\n\n".join([
        "## Counted on the simulator\n\n" + counters_table(results),
        "## Modeled time vs the roofline floor\n\nModeled: counted device bytes and counted FLOPs "
        "(simdgroup_matrix + scalar) at the chip's peak bandwidth and FLOP rate (the slower wins); floor: each "
        "input read once, each output written once and the FLOPs the problem requires.\n\n"
        + model_table(results, args.chips),
        "## Chips\n\n" + chips_table(),
    ])
    print(report)
    pngs = plots(results, args.plots) if args.plots else []
    if args.markdown:
        header = ("# Performance model\n\nGenerated by `python -m triton_mps.bench"
                  + (" --quick" if args.quick else "") + f" --markdown {args.markdown}"
                  + (f" --plots {args.plots}" if args.plots else "") + "` (do not edit by hand). "
                  "What the counters are and how they are measured: `python/triton_mps/counters.py`; "
                  "the model and the chip figures: `python/triton_mps/bench/`.\n\n")
        images = "".join(f"\n\n![{p.stem}]({Path(*p.parts[1:]) if p.parts[0] == 'docs' else p})" for p in pngs)
        args.markdown.parent.mkdir(parents=True, exist_ok=True)
        args.markdown.write_text(header + report + images + "\n")
    if args.check and not args.quick and not all(r.met for r in results):
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
