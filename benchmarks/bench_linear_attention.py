"""Chunked causal linear attention, forward and backward, on the simulator (a table).

The kernels (defined here, so every version of triton-mps runs the same source) follow the shape
of the chunked kernels of linear-attention libraries (flash-linear-attention's `chunk`
linear_attn / simple_gla without decay): the sequence is cut into chunks of BT=64 steps;

  fwd_h     one program per (batch, head): walks the chunks in order, stores the state h_i
            = sum over earlier chunks of k^T v (K x V, fp32) and adds the chunk's k_i^T v_i
  fwd_o     one program per (chunk, batch, head): o_i = scale * (q_i h_i + tril(q_i k_i^T) v_i)
  bwd_dh    one program per (batch, head): the state recurrence in reverse, dh_i = sum over
            later chunks of scale * q^T do
  bwd_dqkv  one program per (chunk, batch, head): dq = scale * (do h^T + tril(do v^T) k),
            dk = v dh^T + scale * tril(do v^T)^T q, dv = k dh + scale * tril(q k^T)^T do

with o_t = scale * sum_{s<=t} (q_t . k_s) v_s, scale = K^-0.5, layout [B, T, H, K]. Inputs in
fp32 and bf16 (bf16 dots with fp32 accumulation, the state cast to bf16 for its dots, outputs in
the input dtype).

Correctness (fails loudly, exit status 1): every run's first call uses fresh random inputs (the
seed is printed on failure), its outputs and intermediates poisoned with NaN, and is checked
against a float64 torch reference and its autograd gradients; the fixed-seed inputs of the timed
calls are checked too, and their outputs (o, dq, dk, dv bytes) hashed (sha256): the same seed in
every interpreter, so bit-identical results across versions show as equal hashes.

Phases: fwd (fwd_h + fwd_o), bwd (bwd_dh + bwd_dqkv, from the saved states), fwd+bwd (all four);
warm ms is the median of timed calls after warm-up calls. The workers run with
TRITON_MPS_SIM_OPT=2 (every kernel built at -O2 at once): with `auto` tiering a kernel of few
threadgroups may or may not have reached its -O2 rebuild when timing starts, depending on the
warm-up's length and on build times, which differ between versions; pinned, "warm" is always the
-O2 build (same bits at every level: docs/configuration.md). "cold fwd+bwd" is the first call in a
fresh process with empty caches (Triton's front end, our MSL stages, the simulator's -O2 builds,
one run).

`--compare PYTHON` runs the same measurement with another interpreter (e.g. a venv holding an
older triton-mps) side by side: rounds alternate between the interpreters, each round in new
processes with empty caches, and the table gives each one's median and the ratio (other / this).

Run: python benchmarks/bench_linear_attention.py [--rounds 3] [--compare /path/to/old/venv/bin/python]
     [--B 2] [--T 2048] [--H 8] [--dtypes fp32,bf16] [--check]   (--check: correctness only, no timing)
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

WARM_CALLS = 3  # timed warm calls per phase, after WARMUP_CALLS untimed fwd+bwd calls
WARMUP_CALLS = 1  # after the checked first call on the fixed inputs (the kernels are built at -O2)
SEED = 0  # the timed, hashed inputs: the same in every interpreter
BT = 64  # chunk size
TOL = {  # (rms(err) / rms(ref), max|err| / max|ref|) per output
    "fp32": (1e-5, 1e-4),
    "bf16": (2e-2, 5e-2),
}


def _kernels():
    import triton
    import triton.language as tl

    @triton.jit
    def fwd_h(k, v, h, T, H: tl.constexpr, K: tl.constexpr, V: tl.constexpr, BT: tl.constexpr):
        # h[b, i, hd] = sum over chunks j < i of k_j^T v_j (fp32)
        i_bh = tl.program_id(0)
        i_b, i_h = i_bh // H, i_bh % H
        NT = tl.cdiv(T, BT)
        rt, rk, rv = tl.arange(0, BT), tl.arange(0, K), tl.arange(0, V)
        b_h = tl.zeros((K, V), tl.float32)
        for i_t in range(NT):
            t = i_t * BT + rt
            tm = t < T
            p_h = h + ((i_b * NT + i_t) * H + i_h) * K * V
            tl.store(p_h + rk[:, None] * V + rv[None, :], b_h)
            b_kt = tl.load(k + ((i_b * T + t[None, :]) * H + i_h) * K + rk[:, None], mask=tm[None, :], other=0.0)
            b_v = tl.load(v + ((i_b * T + t[:, None]) * H + i_h) * V + rv[None, :], mask=tm[:, None], other=0.0)
            b_h += tl.dot(b_kt, b_v)

    @triton.jit
    def fwd_o(q, k, v, h, o, T, scale, H: tl.constexpr, K: tl.constexpr, V: tl.constexpr, BT: tl.constexpr):
        i_t, i_bh = tl.program_id(0), tl.program_id(1)
        i_b, i_h = i_bh // H, i_bh % H
        NT = tl.cdiv(T, BT)
        rt, rk, rv = tl.arange(0, BT), tl.arange(0, K), tl.arange(0, V)
        t = i_t * BT + rt
        tm = t < T
        b_q = tl.load(q + ((i_b * T + t[:, None]) * H + i_h) * K + rk[None, :], mask=tm[:, None], other=0.0)
        b_kt = tl.load(k + ((i_b * T + t[None, :]) * H + i_h) * K + rk[:, None], mask=tm[None, :], other=0.0)
        b_v = tl.load(v + ((i_b * T + t[:, None]) * H + i_h) * V + rv[None, :], mask=tm[:, None], other=0.0)
        b_h = tl.load(h + ((i_b * NT + i_t) * H + i_h) * K * V + rk[:, None] * V + rv[None, :])
        b_o = tl.dot(b_q, b_h.to(b_q.dtype))  # inter-chunk: the state of the chunks before
        b_s = tl.dot(b_q, b_kt)  # intra-chunk scores, causal
        b_s = tl.where(rt[:, None] >= rt[None, :], b_s, 0.0)
        b_o = (b_o + tl.dot(b_s.to(b_v.dtype), b_v)) * scale
        tl.store(o + ((i_b * T + t[:, None]) * H + i_h) * V + rv[None, :], b_o.to(o.dtype.element_ty),
                 mask=tm[:, None])

    @triton.jit
    def bwd_dh(q, do, dh, T, scale, H: tl.constexpr, K: tl.constexpr, V: tl.constexpr, BT: tl.constexpr):
        # dh[b, i, hd] = sum over chunks j > i of scale * q_j^T do_j (fp32), chunks in reverse
        i_bh = tl.program_id(0)
        i_b, i_h = i_bh // H, i_bh % H
        NT = tl.cdiv(T, BT)
        rt, rk, rv = tl.arange(0, BT), tl.arange(0, K), tl.arange(0, V)
        b_dh = tl.zeros((K, V), tl.float32)
        for j in range(NT):
            i_t = NT - 1 - j
            t = i_t * BT + rt
            tm = t < T
            p_dh = dh + ((i_b * NT + i_t) * H + i_h) * K * V
            tl.store(p_dh + rk[:, None] * V + rv[None, :], b_dh)
            b_qt = tl.load(q + ((i_b * T + t[None, :]) * H + i_h) * K + rk[:, None], mask=tm[None, :], other=0.0)
            b_qt = (b_qt * scale).to(b_qt.dtype)
            b_do = tl.load(do + ((i_b * T + t[:, None]) * H + i_h) * V + rv[None, :], mask=tm[:, None], other=0.0)
            b_dh += tl.dot(b_qt, b_do)

    @triton.jit
    def bwd_dqkv(q, k, v, h, do, dh, dq, dk, dv, T, scale, H: tl.constexpr, K: tl.constexpr, V: tl.constexpr,
                 BT: tl.constexpr):
        i_t, i_bh = tl.program_id(0), tl.program_id(1)
        i_b, i_h = i_bh // H, i_bh % H
        NT = tl.cdiv(T, BT)
        rt, rk, rv = tl.arange(0, BT), tl.arange(0, K), tl.arange(0, V)
        t = i_t * BT + rt
        tm = t < T
        rows_k = ((i_b * T + t[:, None]) * H + i_h) * K + rk[None, :]
        rows_v = ((i_b * T + t[:, None]) * H + i_h) * V + rv[None, :]
        b_q = tl.load(q + rows_k, mask=tm[:, None], other=0.0)
        b_k = tl.load(k + rows_k, mask=tm[:, None], other=0.0)
        b_v = tl.load(v + rows_v, mask=tm[:, None], other=0.0)
        b_do = tl.load(do + rows_v, mask=tm[:, None], other=0.0)
        state = ((i_b * NT + i_t) * H + i_h) * K * V + rk[:, None] * V + rv[None, :]
        b_h = tl.load(h + state).to(b_q.dtype)
        b_dh = tl.load(dh + state).to(b_q.dtype)
        causal = rt[:, None] >= rt[None, :]
        # dA[t, s] = scale * do_t . v_s (s <= t); A^T[s, t] = scale * k_s . q_t (s <= t)
        b_da = tl.where(causal, tl.dot(b_do, tl.trans(b_v)) * scale, 0.0).to(b_q.dtype)
        b_at = tl.where(tl.trans(causal), tl.dot(b_k, tl.trans(b_q)) * scale, 0.0).to(b_q.dtype)
        b_dq = tl.dot(b_do, tl.trans(b_h)) * scale + tl.dot(b_da, b_k)
        b_dk = tl.dot(b_v, tl.trans(b_dh)) + tl.dot(tl.trans(b_da), b_q)
        b_dv = tl.dot(b_k, b_dh) + tl.dot(b_at, b_do)
        tl.store(dq + rows_k, b_dq.to(dq.dtype.element_ty), mask=tm[:, None])
        tl.store(dk + rows_k, b_dk.to(dk.dtype.element_ty), mask=tm[:, None])
        tl.store(dv + rows_v, b_dv.to(dv.dtype.element_ty), mask=tm[:, None])

    return fwd_h, fwd_o, bwd_dh, bwd_dqkv


class LinearAttention:
    """Preallocated buffers for one problem; fwd(), bwd(), fwd_bwd() launch the kernels."""

    def __init__(self, kernels, q, k, v, do):
        import torch

        self.kernels = kernels
        self.q, self.k, self.v, self.do = q, k, v, do
        self.B, self.T, self.H, self.K = q.shape
        self.V = v.shape[-1]
        self.NT = -(-self.T // BT)
        self.scale = self.K ** -0.5
        state = (self.B, self.NT, self.H, self.K, self.V)
        self.h, self.dh = torch.empty(state), torch.empty(state)
        self.o = torch.empty_like(v)
        self.dq, self.dk, self.dv = torch.empty_like(q), torch.empty_like(k), torch.empty_like(v)

    def poison(self):
        for t in (self.h, self.dh, self.o, self.dq, self.dk, self.dv):
            t.fill_(float("nan"))

    def fwd(self):
        fwd_h, fwd_o, _, _ = self.kernels
        bh, dims = self.B * self.H, dict(H=self.H, K=self.K, V=self.V, BT=BT)
        fwd_h[(bh,)](self.k, self.v, self.h, self.T, **dims)
        fwd_o[(self.NT, bh)](self.q, self.k, self.v, self.h, self.o, self.T, self.scale, **dims)
        _sync()

    def bwd(self):
        _, _, bwd_dh, bwd_dqkv = self.kernels
        bh, dims = self.B * self.H, dict(H=self.H, K=self.K, V=self.V, BT=BT)
        bwd_dh[(bh,)](self.q, self.do, self.dh, self.T, self.scale, **dims)
        bwd_dqkv[(self.NT, bh)](self.q, self.k, self.v, self.h, self.do, self.dh, self.dq, self.dk, self.dv, self.T,
                                self.scale, **dims)
        _sync()

    def fwd_bwd(self):
        self.fwd()
        self.bwd()

    def outputs(self):
        return {"o": self.o, "dq": self.dq, "dk": self.dk, "dv": self.dv}


def _sync():
    import triton_mps

    sync = getattr(triton_mps, "synchronize", None)
    if sync is not None:
        sync()


def _inputs(seed, B, T, H, K, V, dtype):
    import torch

    g = torch.Generator().manual_seed(seed)
    q, k, do = (torch.randn(B, T, H, K if i < 2 else V, generator=g) for i in range(3))
    v = torch.randn(B, T, H, V, generator=g)
    return tuple(x.to(dtype) for x in (q, k, v, do))


def reference(q, k, v, do):
    """o_t = scale * sum_{s<=t} (q_t . k_s) v_s in float64, and its autograd gradients."""
    import torch

    B, T, H, K = q.shape
    out = {name: torch.empty(x.shape, dtype=torch.float64) for name, x in (("o", v), ("dq", q), ("dk", k), ("dv", v))}
    causal = torch.ones(T, T, dtype=torch.bool).tril()
    for b in range(B):  # one head at a time: the T x T scores of all heads at once are large
        for hd in range(H):
            qh, kh, vh = (x[b, :, hd].detach().double().requires_grad_() for x in (q, k, v))
            s = (qh @ kh.T * K ** -0.5).masked_fill(~causal, 0.0)
            o = s @ vh
            o.backward(do[b, :, hd].double())
            for name, x in (("o", o.detach()), ("dq", qh.grad), ("dk", kh.grad), ("dv", vh.grad)):
                out[name][b, :, hd] = x
    return out


def check(la, label, what):
    """Compare la's outputs with the float64 reference; SystemExit naming every bad output."""
    import torch

    ref = reference(la.q, la.k, la.v, la.do)
    rms_tol, max_tol = TOL[label]
    bad, errs = [], {}
    for name, x in la.outputs().items():
        x, r = x.double(), ref[name]
        if not torch.isfinite(x).all():
            bad.append(f"{name}: {int((~torch.isfinite(x)).sum())} of {x.numel()} elements not finite "
                       "(NaN-poisoned outputs not written, or overflow)")
            continue
        d = x - r
        rms = float(d.pow(2).mean().sqrt() / r.pow(2).mean().sqrt())
        mx = float(d.abs().max() / r.abs().max())
        errs[name] = (rms, mx)
        if not (rms <= rms_tol and mx <= max_tol):
            at = tuple(int(i) for i in torch.nonzero(d.abs() == d.abs().max())[0])
            bad.append(f"{name}: rms err {rms:.3g} (tol {rms_tol:g}), max err {mx:.3g} (tol {max_tol:g}) relative; "
                       f"worst at {at}: got {float(x[at]):.6g}, want {float(r[at]):.6g}")
    if bad:
        raise SystemExit(f"WRONG RESULTS: linear attention {label} ({what}):\n  " + "\n  ".join(bad))
    return errs


def output_hash(la):
    import torch

    h = hashlib.sha256()
    for x in la.outputs().values():
        x = x.contiguous()
        h.update((x.view(torch.int16) if x.dtype == torch.bfloat16 else x).numpy().tobytes())
    return h.hexdigest()


DTYPES = ("fp32", "bf16")


def worker(B, T, H, K, V, dtypes, timing):
    import torch

    kernels = _kernels()
    out = {}
    for label in dtypes:
        dtype = {"fp32": torch.float32, "bf16": torch.bfloat16}[label]
        # cold call: fresh random inputs, poisoned outputs, checked
        seed = int.from_bytes(os.urandom(4), "little")
        fresh = LinearAttention(kernels, *_inputs(seed, B, T, H, K, V, dtype))
        fresh.poison()
        t0 = time.perf_counter()
        fresh.fwd_bwd()
        cold = time.perf_counter() - t0
        check(fresh, label, f"fresh inputs, seed {seed}")
        # the fixed-seed inputs: checked and hashed
        la = LinearAttention(kernels, *_inputs(SEED, B, T, H, K, V, dtype))
        la.poison()
        t0 = time.perf_counter()
        la.fwd_bwd()
        first = time.perf_counter() - t0
        errs = check(la, label, f"seed {SEED}")
        digest = output_hash(la)
        res = {"cold": cold, "hash": digest, "errs": errs}
        res["first"] = first
        if timing:
            for _ in range(WARMUP_CALLS):
                la.fwd_bwd()
            for phase, call in (("fwd", la.fwd), ("bwd", la.bwd), ("fwd+bwd", la.fwd_bwd)):
                times = []
                for _ in range(WARM_CALLS):
                    t1 = time.perf_counter()
                    call()
                    times.append(time.perf_counter() - t1)
                res[phase] = statistics.median(times)
            if output_hash(la) != digest:
                raise SystemExit(f"WRONG RESULTS: linear attention {label}: the warm calls' outputs differ from the "
                                 "first call's on the same inputs")
        out[label] = res
    return out


def measure(python, args) -> dict:
    with tempfile.TemporaryDirectory(prefix="tmps-bench-linattn-") as tmp:
        env = dict(os.environ, TRITON_BACKEND="mps", TRITON_CACHE_DIR=f"{tmp}/triton",
                   TRITON_MPS_CACHE_DIR=f"{tmp}/mps", XDG_CACHE_HOME=f"{tmp}/xdg", TRITON_MPS_SIM_OPT="2")
        argv = [python, os.path.abspath(__file__), "--worker", "--B", str(args.B), "--T", str(args.T), "--H",
                str(args.H), "--K", str(args.K), "--V", str(args.V), "--dtypes", args.dtypes]
        if args.check:
            argv.append("--check")
        res = subprocess.run(argv, env=env, capture_output=True, text=True)
        if res.returncode != 0:
            raise SystemExit(f"{python}: worker failed:\n{res.stdout[-3000:]}\n{res.stderr[-3000:]}")
        return json.loads(res.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--compare", metavar="PYTHON", help="another interpreter (an older triton-mps) to run side by side")
    ap.add_argument("--B", type=int, default=2)
    ap.add_argument("--T", type=int, default=2048)
    ap.add_argument("--H", type=int, default=8)
    ap.add_argument("--K", type=int, default=64)
    ap.add_argument("--V", type=int, default=64)
    ap.add_argument("--dtypes", default=",".join(DTYPES), help="comma-separated: fp32, bf16")
    ap.add_argument("--check", action="store_true", help="correctness only (one round, no timing)")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    dtypes = [d for d in args.dtypes.split(",") if d]
    if set(dtypes) - set(DTYPES) or not dtypes:
        ap.error(f"--dtypes: a comma-separated subset of {DTYPES}")
    if args.worker:
        print(json.dumps(worker(args.B, args.T, args.H, args.K, args.V, dtypes, timing=not args.check)))
        return
    shape = f"B={args.B} T={args.T} H={args.H} K={args.K} V={args.V} chunk={BT}"
    this = sys.executable
    if args.check:
        res = measure(this, args)
        for label in dtypes:
            errs = ", ".join(f"{n} {r:.2g}/{m:.2g}" for n, (r, m) in res[label]["errs"].items())
            print(f"OK {label} {shape}: relative errors rms/max {errs}; sha256 {res[label]['hash']}")
        return
    pythons = [this] + ([args.compare] if args.compare else [])
    runs: dict[str, list[dict]] = {p: [] for p in pythons}
    for i in range(args.rounds):  # interleaved, the order rotating each round: load hits both alike
        for p in pythons[i % len(pythons):] + pythons[:i % len(pythons)]:
            runs[p].append(measure(p, args))

    def med(p, label, phase):
        return statistics.median(x[label][phase] for x in runs[p])

    print(f"linear attention {shape}; {args.rounds} rounds (fresh processes, empty caches, interleaved), medians "
          f"of {WARM_CALLS} warm calls; this: {this}" + (f"; other: {args.compare}" if args.compare else ""))
    head = f"{'dtype':<7}{'phase':<14}{'warm ms':>11}"
    if args.compare:
        head += f"{'other ms':>11}{'ratio':>9}"
    print(head)
    for label in dtypes:
        for phase in ("fwd", "bwd", "fwd+bwd", "cold"):
            ms = med(this, label, phase) * 1e3
            line = f"{label:<7}{'cold fwd+bwd' if phase == 'cold' else phase:<14}{ms:>11.1f}"
            if args.compare:
                ms2 = med(args.compare, label, phase) * 1e3
                line += f"{ms2:>11.1f}{ms2 / ms:>8.2f}x"
            print(line)
    print("ratio: other / this; 'cold fwd+bwd' is the first call of a fresh process (builds included)")
    for label in dtypes:
        for p in pythons:
            hashes = sorted({x[label]["hash"] for x in runs[p]})
            print(f"sha256 {label} (o, dq, dk, dv) {'this' if p == this else 'other'}: {' '.join(hashes)}"
                  + ("  (DIFFERS between rounds)" if len(hashes) > 1 else ""))
        if args.compare:
            same = {x[label]["hash"] for p in pythons for x in runs[p]}
            print(f"  {label}: " + ("bit-identical in both" if len(same) == 1 else "OUTPUTS DIFFER between versions"))


if __name__ == "__main__":
    main()
