"""torch.compile through triton-mps: Inductor's generated Triton kernels run on our backend.

    python examples/torch_compile_example.py [--small]

A small transformer-style block (layer norm, attention with softmax, GELU MLP, residuals),
compiled with `torch.compile` after `triton_mps.inductor.enable()`, checked against eager in
float64: forward and the gradients of a training step. On a Mac the block runs on `mps`
tensors (Inductor's Triton kernels on the GPU instead of its own Metal shaders); elsewhere on CPU
tensors through Inductor's `cpu_backend="triton"`, on the simulator.
"""

from __future__ import annotations

import sys
import time

import _common  # noqa: F401  (selects the mps backend)
import torch
import triton_mps
import triton_mps.inductor


class Block(torch.nn.Module):
    def __init__(self, dim: int, heads: int):
        super().__init__()
        self.heads = heads
        self.norm1, self.norm2 = torch.nn.LayerNorm(dim), torch.nn.LayerNorm(dim)
        self.qkv, self.proj = torch.nn.Linear(dim, 3 * dim), torch.nn.Linear(dim, dim)
        self.mlp = torch.nn.Sequential(torch.nn.Linear(dim, 4 * dim), torch.nn.GELU(), torch.nn.Linear(4 * dim, dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, d = x.shape
        q, k, v = self.qkv(self.norm1(x)).view(b, t, 3, self.heads, d // self.heads).unbind(2)
        q, k, v = (z.transpose(1, 2) for z in (q, k, v))
        att = torch.softmax(q @ k.transpose(-1, -2) / (d // self.heads) ** 0.5, dim=-1)
        x = x + self.proj((att @ v).transpose(1, 2).reshape(b, t, d))
        return x + self.mlp(self.norm2(x))


def main(argv: list[str] | None = None) -> int:
    size = _common.parse_size(argv, __doc__.splitlines()[0])
    batch, seq, dim, heads = (2, 16, 32, 2) if size == "small" else (8, 128, 256, 8)
    dev = _common.torch_device()
    triton_mps.inductor.enable()
    try:
        torch.manual_seed(0)
        model = Block(dim, heads).to(dev)
        x = torch.randn(batch, seq, dim, device=dev, requires_grad=True)
        compiled = torch.compile(model)
        with triton_mps.profile() as prof:
            start = time.perf_counter()
            out = compiled(x)
            out.square().mean().backward()
            seconds = time.perf_counter() - start
        grads = [p.grad.clone() for p in model.parameters()]

        ref_model = Block(dim, heads).double()
        ref_model.load_state_dict({k: v.detach().cpu().double() for k, v in model.state_dict().items()})
        x64 = x.detach().cpu().double().requires_grad_(True)
        ref = ref_model(x64)
        ref.square().mean().backward()

        print(f"torch.compile of a transformer block {batch}x{seq}x{dim} (torch device '{dev}'): "
              f"{len(prof)} kernel launches through triton-mps (autotuning included), "
              f"first call {seconds:.1f} s (compiles included)")
        ok = _common.report("forward vs eager in float64", (out.double().cpu() - ref).abs().max().item(), 1e-4)
        pairs = zip(grads, ref_model.parameters(), strict=True)
        err = max((g.double().cpu() - r.grad).abs().max().item() for g, r in pairs)
        ok &= _common.report("parameter gradients vs eager in float64", err, 1e-4)
        ok &= _common.report("input gradient vs eager in float64",
                             (x.grad.double().cpu() - x64.grad).abs().max().item(), 1e-4)
        if len(prof) == 0:
            print("  FAIL: no kernel ran through triton-mps")
            ok = False
        return 0 if ok else 1
    finally:
        triton_mps.inductor.disable()


if __name__ == "__main__":
    sys.exit(main())
