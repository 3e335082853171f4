"""Half-precision graphs with long rows for tests/triton/inductor/test_inductor_half.py (issue 28,
item 2), and the two ways the test drives them, each in a process of its own:

- `compile_on_fake_mps`: forward and backward traced into one graph, compiled by Inductor for
  (fake) `mps` tensors through `triton_mps.inductor.enable()` -- Triton code generation, our
  compiler to MSL -- with Inductor's own runtime dtype/shape/NaN asserts in the kernels.
- `run_compiled`: `torch.compile` forward and backward on CPU tensors (`cpu_backend="triton"`),
  run by triton-mps (the simulator off macOS), against float64 eager; on a Mac also on `mps`
  tensors (the GPU).

Rows of 4096 and more: Inductor keeps a reduction persistent (one block per row) up to 1024
elements for inner reductions and 64 for the others, and loops over longer ones; a looped
reduction carries its accumulator from one iteration to the next, which is where the type of the
accumulator matters.
"""

from __future__ import annotations

import math
import re
import time
from collections.abc import Callable
from typing import Any

import torch
import torch.nn.functional as F

ROW = 4096  # the row length of the row-wise graphs: looped reductions
BATCH = 4
D, HEADS, B, T = 32, 2, 64, 64  # the block: its backward sums weight and bias gradients over 4096 tokens

# Largest error allowed, relative to the largest magnitude of the float64 result, per tensor:
# four units in the last place at 1.0 (fp16: 2^-10 per ulp, bf16: 2^-7). Measured: below 1e-3
# (fp16) and 7e-3 (bf16).
TOLERANCE = {torch.float16: 4 * 2.0**-10, torch.bfloat16: 4 * 2.0**-7}


def layer_norm(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return F.layer_norm(x, x.shape[-1:], w, b, 1e-5)


def rms_norm(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    # As written in half precision: the mean of squares is a reduction of the input's type.
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * w


def softmax(x: torch.Tensor) -> torch.Tensor:
    return torch.softmax(x, -1)


def cross_entropy(x: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    return F.cross_entropy(x, target)


def block(x: torch.Tensor, n1w: torch.Tensor, n1b: torch.Tensor, wqkv: torch.Tensor, bqkv: torch.Tensor,
          wo: torch.Tensor, bo: torch.Tensor, n2w: torch.Tensor, n2b: torch.Tensor, w1: torch.Tensor,
          b1: torch.Tensor, w2: torch.Tensor, b2: torch.Tensor) -> torch.Tensor:
    """A pre-norm transformer block (attention with softmax, GELU MLP, residuals), functional."""
    b, t, d = x.shape
    qkv = F.linear(F.layer_norm(x, (d,), n1w, n1b), wqkv, bqkv).view(b, t, 3, HEADS, d // HEADS)
    q, k, v = (z.transpose(1, 2) for z in qkv.unbind(2))
    att = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(d // HEADS), dim=-1)
    x = x + F.linear((att @ v).transpose(1, 2).reshape(b, t, d), wo, bo)
    return x + F.linear(F.gelu(F.linear(F.layer_norm(x, (d,), n2w, n2b), w1, b1)), w2, b2)


CASES: dict[str, Callable[..., torch.Tensor]] = {
    "layer_norm": layer_norm, "rms_norm": rms_norm, "softmax": softmax, "cross_entropy": cross_entropy,
    "block": block,
}

Gen = Callable[[tuple[int, ...], float, float], torch.Tensor]


def inputs(name: str, gen: Gen) -> tuple[list[torch.Tensor], int]:
    """The inputs of case `name` and how many of them (the first ones) get gradients;
    gen(shape, scale, offset) makes each floating-point input."""
    if name == "layer_norm":
        return [gen((BATCH, ROW), 1.0, 0.5), gen((ROW,), 0.1, 1.0), gen((ROW,), 0.1, 0.0)], 3
    if name == "rms_norm":
        return [gen((BATCH, ROW), 1.0, 0.0), gen((ROW,), 0.1, 1.0)], 2
    if name == "softmax":
        return [gen((BATCH, ROW), 2.0, 0.0)], 1
    if name == "cross_entropy":
        return [gen((BATCH, 2 * ROW), 2.0, 0.0), torch.randint(0, 2 * ROW, (BATCH,))], 1
    if name == "block":
        d, s = D, D**-0.5
        return [gen((B, T, d), 1.0, 0.0),
                gen((d,), 0.1, 1.0), gen((d,), 0.1, 0.0), gen((3 * d, d), s, 0.0), gen((3 * d,), 0.1, 0.0),
                gen((d, d), s, 0.0), gen((d,), 0.1, 0.0),
                gen((d,), 0.1, 1.0), gen((d,), 0.1, 0.0), gen((4 * d, d), s, 0.0), gen((4 * d,), 0.1, 0.0),
                gen((d, 4 * d), (4 * d) ** -0.5, 0.0), gen((d,), 0.1, 0.0)], 13
    raise KeyError(name)


def random_gen(dtype: torch.dtype) -> Gen:
    return lambda shape, scale, offset: (torch.randn(shape, dtype=torch.float64) * scale + offset).to(dtype)


# A loop-carried accumulator initialized in half precision (what the bug produced).
_HALF_ACCUMULATOR = re.compile(
    r"^\s*_?tmp\w* = tl\.(?:full|zeros)\(\[[^\]]*R0_BLOCK\].*tl\.(?:float16|bfloat16)\)", re.M)


def compile_on_fake_mps(name: str, dtype: torch.dtype) -> str:
    """Compile case `name` (forward and input gradients, one graph) for `mps` tensors and return
    Inductor's output code. Autograd cannot trace on `mps` tensors without PyTorch's MPS
    (it asks for the device's guard), so the graph is traced on CPU and moved to `mps`."""
    import torch.utils._pytree as pytree
    from torch._inductor import config
    from torch._inductor.compile_fx import compile_fx_inner
    from torch._inductor.decomposition import select_decomp_table
    from torch._subclasses.fake_tensor import FakeTensor, FakeTensorMode
    from torch.fx.experimental.proxy_tensor import make_fx
    from torch.fx.passes.fake_tensor_prop import FakeTensorProp

    fn = CASES[name]
    real, n_grad = inputs(name, random_gen(dtype))
    out = fn(*[t.float() if t.is_floating_point() else t for t in real])
    real.append(out.to(dtype))  # the gradient flowing in (any values: only the shapes are traced)

    def joint(*args: torch.Tensor) -> tuple[torch.Tensor, ...]:
        with torch.enable_grad():
            leaves = [a.detach().requires_grad_() for a in args[:n_grad]]
            out = fn(*leaves, *args[n_grad:-1])
            return (out, *torch.autograd.grad(out, leaves, args[-1]))

    gm = make_fx(joint, decomposition_table=select_decomp_table(), tracing_mode="fake")(*real)
    mps = torch.device("mps")

    def to_mps(v: Any) -> Any:
        return mps if isinstance(v, torch.device) and v.type == "cpu" else v

    for node in gm.graph.nodes:
        node.args = pytree.tree_map(to_mps, node.args)
        node.kwargs = pytree.tree_map(to_mps, node.kwargs)
    gm.recompile()
    mode = FakeTensorMode()
    fakes = [FakeTensor(mode, torch.empty(t.shape, dtype=t.dtype, device="meta"), mps) for t in real]
    FakeTensorProp(gm, mode).propagate_dont_convert_inputs(*fakes)
    asserts = {"compile_threads": 1, "runtime_triton_nan_asserts": True,
               "test_configs.runtime_triton_dtype_assert": True, "test_configs.runtime_triton_shape_assert": True}
    with mode, config.patch(asserts):
        compiled = compile_fx_inner(gm, fakes)
    with open(compiled.current_callable.__code__.co_filename) as f:
        return f.read()


def check_mps_code(name: str, src: str) -> str:
    """What the output code for `mps` must show; a one-line summary."""
    assert "device(type='cpu')" not in src and "type='mps'" in src, name
    looped = src.count("for r0_offset in ")
    assert looped > 0, f"{name}: no looped reduction"
    bad = _HALF_ACCUMULATOR.findall(src)
    assert not bad, f"{name}: half-precision accumulators {bad}"
    # Inductor's asserts, emitted only when it takes the kernel for Triton; our compiler checks
    # the static ones (every value's dtype and shape) at compile time.
    static, nan = src.count("tl.static_assert("), src.count("NaN or Inf found")
    assert static > 0 and nan > 0, f"{name}: no runtime asserts (static {static}, NaN {nan})"
    return f"{name} looped {looped} static_asserts {static} nan_asserts {nan}"


def run_compiled(name: str, dtype: torch.dtype, device: str = "cpu") -> list[float]:
    """torch.compile case `name` on `device` tensors, forward and backward; the errors of the
    output and of each gradient against float64 eager on CPU, relative to the largest reference
    magnitude."""
    fn = CASES[name]
    ins, n_grad = inputs(name, random_gen(dtype))
    leaves = [t.to(device, copy=True).requires_grad_() for t in ins[:n_grad]]
    out = torch.compile(fn)(*leaves, *(t.to(device) for t in ins[n_grad:]))
    grad_out = random_gen(dtype)(tuple(out.shape), 1.0, 0.0)
    out.backward(grad_out.to(device))
    ref_leaves = [t.double().requires_grad_() for t in ins[:n_grad]]
    ref = fn(*ref_leaves, *ins[n_grad:])
    ref.backward(grad_out.double())
    errors = []
    for got, want in [(out, ref)] + [(a.grad, r.grad) for a, r in zip(leaves, ref_leaves, strict=True)]:
        assert got is not None and want is not None and got.dtype == dtype, (name, got)
        errors.append(((got.detach().cpu().double() - want).abs().max() / want.abs().max()).item())
    return errors


def summary(e: BaseException) -> str:
    """An exception in one line: Triton's complaint if there is one (Inductor wraps it in pages)."""
    text = str(e)
    for key in ("Loop-carried variable", "AssertionError"):
        if key in text:
            return text[text.index(key):].splitlines()[0][:300]
    return f"{type(e).__name__}: {text.splitlines()[0][:300] if text else ''}"


def timed(f: Callable[[], Any]) -> tuple[Any, float]:
    start = time.perf_counter()
    return f(), time.perf_counter() - start
