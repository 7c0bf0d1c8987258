#!/usr/bin/env python3
"""Replay the micro-batches of a plan on one device and compare against the simulator.

    python3 tools/replay_plan.py PLAN [--iters 0,1] [--ranks 0,1] [--layers N] [--json]

For each chosen iteration and rank, the rank's operations (vlplan.contract: its
"schedule", else F i then B i) run on a Llama-shaped decoder stack with random weights:
RMSNorm, grouped-query attention, SwiGLU MLP, and the LM head with the loss.  The shape is
the plan header's config (model.hidden, heads, kv_heads, head_dim, ffn, vocab, layers);
`--layers N` runs N layers and scales their time to the configured count (the LM head is
timed once).  Attention is causal per segment: a slice [offset, offset + length) of a
sample attends to the keys and values of the sample's earlier tokens, kept from the
forward of the micro-batch that computed them (flash-attn's varlen kernel when it is
importable on CUDA, else scaled_dot_product_attention per segment with the causal
diagonal moved by the offset).  The gradients of those kept keys and values are handed
back to the earlier micro-batch's backward, as the contract says.  A rank's ckpt_layers
run under activation checkpointing (recomputed in the backward); an "R" op recomputes its
micro-batch's forward, whose F ran without keeping activations.

Measured: forward + backward of each rank (CUDA events on a GPU, perf_counter on CPU).
Simulated: `vlplan simulate --ranks` (compute of each rank: its F, R and B less exposed
communication).  Printed per (iteration, rank): both and the relative error; then MAPE
and the worst error.  `--json` prints the summary as JSON instead.

Limits: ranks with tp, sp or pp above 1 and shared packs are skipped (one device cannot
stand for their collectives); a rank with backward packs ("bwd", SlimPack) runs its
forwards, then one backward of their summed losses.  `--tiny` replaces the shape by a
small one for CPU tests (the simulated figures are then for the plan's shape, not it).
"""
import argparse
import csv
import json
import math
import os
import subprocess
import sys
import tempfile
import time

import torch
import torch.nn.functional as F
import torch.utils.checkpoint

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "python"))
import vlplan  # noqa: E402
from vlplan import contract  # noqa: E402

TINY = {"hidden": 64, "heads": 4, "kv_heads": 2, "head_dim": 16, "ffn": 128, "vocab": 256}

try:  # pragma: no cover - needs a GPU build of flash-attn
    from flash_attn import flash_attn_varlen_func
except Exception:  # noqa: BLE001
    flash_attn_varlen_func = None


def attend(q, k, v, q_lens, offsets, use_flash=False):
    """Causal attention of packed segments.  q: (sum q_lens, H, d); k, v: (sum of
    offset + length, Hkv, d), each segment's keys being its sample's tokens
    [0, offset + length).  Query i of a segment sees keys 0..offset + i."""
    kv_lens = [o + n for o, n in zip(offsets, q_lens)]
    if use_flash and flash_attn_varlen_func is not None and q.is_cuda:
        cq = torch.tensor([0] + _cum(q_lens), dtype=torch.int32, device=q.device)
        ck = torch.tensor([0] + _cum(kv_lens), dtype=torch.int32, device=q.device)
        return flash_attn_varlen_func(q, k, v, cq, ck, max(q_lens), max(kv_lens), causal=True)
    rep = q.shape[1] // k.shape[1]
    out, qa, ka = [], 0, 0
    for n, o in zip(q_lens, offsets):
        qs = q[qa:qa + n].transpose(0, 1)                        # H, n, d
        ks = k[ka:ka + o + n].repeat_interleave(rep, 1).transpose(0, 1)
        vs = v[ka:ka + o + n].repeat_interleave(rep, 1).transpose(0, 1)
        mask = (torch.arange(o + n, device=q.device)[None, :]
                <= (torch.arange(n, device=q.device)[:, None] + o))
        out.append(_sdpa(qs, ks, vs, mask).transpose(0, 1))
        qa, ka = qa + n, ka + o + n
    return torch.cat(out, 0)


def _sdpa(q, k, v, mask):
    """scaled_dot_product_attention where this torch has it, else matmul + softmax."""
    if hasattr(F, "scaled_dot_product_attention"):
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    s = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(q.shape[-1])
    return torch.matmul(torch.softmax(s.masked_fill(~mask, float("-inf")), -1), v)


def _cum(xs):
    out, acc = [], 0
    for x in xs:
        acc += x
        out.append(acc)
    return out


def rms(x, w):
    return x * torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + 1e-5).to(x.dtype) * w


class Stack:
    """Random weights of `layers` decoder layers and the LM head."""

    def __init__(self, shape, layers, device, dtype):
        h, hd = shape["hidden"], shape["head_dim"]
        self.shape, self.h, self.hd = shape, h, hd
        self.H, self.Hkv = shape["heads"], shape["kv_heads"]

        def p(*size):
            return (torch.randn(*size, device=device, dtype=dtype) * 0.02).requires_grad_()
        self.layers = []
        for _ in range(layers):
            self.layers.append({
                "n1": torch.ones(h, device=device, dtype=dtype, requires_grad=True),
                "qkv": p((self.H + 2 * self.Hkv) * hd, h), "o": p(h, self.H * hd),
                "n2": torch.ones(h, device=device, dtype=dtype, requires_grad=True),
                "up": p(2 * shape["ffn"], h), "down": p(h, shape["ffn"])})
        self.head = p(shape["vocab"], h)

    def qkv(self, L, x):
        t = F.linear(rms(x, L["n1"]), L["qkv"]).view(x.shape[0], -1, self.hd)
        return t.split([self.H, self.Hkv, self.Hkv], 1)

    def layer(self, L, x, kv_store, li, segs, use_flash):
        """One layer; kv_store[(li, sample)] holds the sample's earlier keys/values."""
        q, k, v = self.qkv(L, x)
        ks, vs, at = [], [], 0
        fresh = []
        for sid, off, n in segs:
            kk, vv = k[at:at + n], v[at:at + n]
            prev = kv_store.get((li, sid)) if off else None
            if off and prev is not None:
                ks.append(torch.cat([prev[0], kk], 0))
                vs.append(torch.cat([prev[1], vv], 0))
            elif off:   # earlier tokens not kept (not forwarded here): zeros stand in
                z = torch.zeros(off, *kk.shape[1:], device=kk.device, dtype=kk.dtype)
                ks.append(torch.cat([z, kk], 0))
                vs.append(torch.cat([z, vv], 0))
            else:
                ks.append(kk)
                vs.append(vv)
            fresh.append((sid, ks[-1], vs[-1]))
            at += n
        a = attend(q, torch.cat(ks, 0), torch.cat(vs, 0), [s[2] for s in segs],
                   [s[1] for s in segs], use_flash)
        x = x + F.linear(a.reshape(x.shape[0], -1), L["o"])
        g, u = F.linear(rms(x, L["n2"]), L["up"]).chunk(2, -1)
        return x + F.linear(F.silu(g) * u, L["down"]), fresh


class Runner:
    def __init__(self, stack, device, use_flash):
        self.s, self.device, self.use_flash = stack, device, use_flash

    def forward(self, segs, ckpt, kv_store, grad=True):
        """Forward of one micro-batch; returns (loss, [(kept kv leaf, its producer)])."""
        T = sum(n for _, _, n in segs)
        x = torch.randn(T, self.s.h, device=self.device, dtype=self.s.head.dtype)
        links = []
        with torch.set_grad_enabled(grad):
            for li, L in enumerate(self.s.layers):
                if li < ckpt and grad:
                    def fn(xx, L=L, li=li):
                        return self.s.layer(L, xx, kv_store, li, segs, self.use_flash)[0]
                    # keys/values kept for later slices: the layer input's projection,
                    # outside the checkpoint (no gradient: an approximation)
                    with torch.no_grad():
                        _, k, v = self.s.qkv(L, x)
                    fresh = self._split_kv(segs, k, v, kv_store, li)
                    x = torch.utils.checkpoint.checkpoint(fn, x, use_reentrant=False)
                else:
                    x, fresh = self.s.layer(L, x, kv_store, li, segs, self.use_flash)
                for sid, kk, vv in fresh:
                    if grad:
                        lk, lv = kk.detach().requires_grad_(), vv.detach().requires_grad_()
                        links.append((lk, kk))
                        links.append((lv, vv))
                        kv_store[(li, sid)] = (lk, lv)
                    else:
                        kv_store[(li, sid)] = (kk, vv)
            logits = F.linear(rms(x, 1.0), self.s.head).float()
            loss = F.cross_entropy(logits, torch.randint(0, logits.shape[1], (T,),
                                                         device=self.device))
        return loss, links

    @staticmethod
    def _split_kv(segs, k, v, kv_store, li):
        out, at = [], 0
        for sid, off, n in segs:
            prev = kv_store.get((li, sid)) if off else None
            kk, vv = k[at:at + n], v[at:at + n]
            if prev is not None:
                kk, vv = torch.cat([prev[0], kk], 0), torch.cat([prev[1], vv], 0)
            out.append((sid, kk, vv))
            at += n
        return out

    @staticmethod
    def backward(loss, links):
        """The loss's backward plus the gradients later slices left on its kept K/V."""
        outs, grads = [loss], [None]
        for leaf, prod in links:
            if leaf.grad is not None:
                outs.append(prod)
                grads.append(leaf.grad)
        torch.autograd.backward(outs, grads)


def run_rank(runner, rank, device):
    """Run one rank's ops; returns seconds of compute."""
    mbs = [[(s.id, s.offset, s.length) for s in m.segs] for m in rank.mbs]
    ops = contract.schedule(len(rank.mbs), len(rank.bwd), rank.schedule)
    has_r = {op.index for op in ops if op.kind == "R"}
    ckpt = min(rank.ckpt_layers or 0, len(runner.s.layers))
    kv_store, state = {}, {}
    if device.type == "cuda":
        torch.cuda.synchronize()
        t0, t1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        t0.record()
    start = time.perf_counter()
    pending = []
    for op in ops:
        if op.kind == "F":
            if not mbs[op.index]:
                continue
            state[op.index] = runner.forward(mbs[op.index], ckpt, kv_store, grad=op.index not in has_r)
        elif op.kind == "R":
            if mbs[op.index]:
                state[op.index] = runner.forward(mbs[op.index], 0, kv_store, grad=True)
        elif rank.bwd:
            pending.append(op.index)
            if len(pending) == len(rank.bwd):   # one backward of every forward's loss
                for m in sorted(state, reverse=True):
                    Runner.backward(*state.pop(m))
        elif op.index in state:
            Runner.backward(*state.pop(op.index))
    if device.type == "cuda":
        t1.record()
        torch.cuda.synchronize()
        return t0.elapsed_time(t1) / 1e3
    return time.perf_counter() - start


def parse_list(text):
    return None if text in (None, "all") else [int(x) for x in text.split(",") if x != ""]


def simulated(vlplan_bin, plan, sets):
    """{(iter, rank): compute ms} from `vlplan simulate --ranks` (stage 0 only: pp > 1
    ranks are not replayed)."""
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "ranks.csv")
        cmd = [vlplan_bin, "simulate", "--ranks", out, "-j", "1"]
        for s in sets:
            cmd += ["--set", s]
        subprocess.run(cmd + [plan], check=True, stdout=subprocess.DEVNULL)
        with open(out) as f:
            return {(int(r["iter"]), int(r["rank"])): float(r["compute_ms"])
                    for r in csv.DictReader(f) if r["stage"] == "0"}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("plan")
    ap.add_argument("--iters", default="0,1", help="iterations, comma-separated, or all")
    ap.add_argument("--ranks", default="all", help="rank indices, comma-separated, or all")
    ap.add_argument("--layers", type=int, help="layers to run (time scaled to the config's)")
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--dtype", help="bfloat16 (CUDA default) or float32 (CPU default)")
    ap.add_argument("--tiny", action="store_true", help="a tiny shape (CPU tests)")
    ap.add_argument("--warmup", type=int, help="untimed runs of the first rank first "
                    "(default 1 on CUDA, 0 on CPU)")
    ap.add_argument("--no-flash", action="store_true", help="never use flash-attn")
    ap.add_argument("--vlplan", default=os.path.join(HERE, "..", "build", "vlplan"))
    ap.add_argument("--set", action="append", default=[], help="passed to vlplan simulate")
    ap.add_argument("--no-sim", action="store_true", help="measure only")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--threads", type=int, help="CPU threads (torch.set_num_threads)")
    ap.add_argument("--json", action="store_true", help="print a JSON summary")
    a = ap.parse_args(argv)

    device = torch.device(a.device)
    dtype = getattr(torch, a.dtype or ("bfloat16" if device.type == "cuda" else "float32"))
    torch.manual_seed(a.seed)
    if a.threads:
        torch.set_num_threads(a.threads)
    plan = vlplan.Plan(a.plan)
    model = dict((plan.header.get("config") or {}).get("model") or {})
    shape = {k: int(model.get(k, TINY[k])) for k in TINY}
    if a.tiny:
        shape = dict(TINY)
    cfg_layers = int(model.get("layers", 1)) if not a.tiny else (a.layers or 2)
    run_layers = a.layers or cfg_layers
    scale = cfg_layers / run_layers
    stack = Stack(shape, run_layers, device, dtype)
    runner = Runner(stack, device, not a.no_flash)
    head = Stack(shape, 0, device, dtype)   # the LM head alone, for the scaling
    head.head = stack.head
    head_runner = Runner(head, device, False)

    iters, ranks = parse_list(a.iters), parse_list(a.ranks)
    sim = {} if a.no_sim else simulated(a.vlplan, a.plan, a.set)
    rows, skipped, warm = [], [], a.warmup if a.warmup is not None else int(device.type == "cuda")
    for it in plan.iterations():
        if iters is not None and it.it not in iters:
            continue
        for pos, r in enumerate(it.ranks):
            if ranks is not None and pos not in ranks:
                continue
            if r.tp * r.sp * r.pp > 1 or any(m.shared is not None for m in r.mbs):
                skipped.append({"iter": it.it, "rank": pos, "why": "tp/sp/pp > 1 or shared"})
                continue
            for _ in range(warm):
                run_rank(runner, r, device)
            warm = 0
            t = run_rank(runner, r, device)
            if scale != 1.0:   # layers scale, the LM head does not
                th = run_rank(head_runner, r, device)
                t = th + (t - th) * scale
            row = {"iter": it.it, "rank": pos, "tokens": sum(m.tokens for m in r.mbs),
                   "measured_ms": 1e3 * t}
            s = sim.get((it.it, pos))
            if s is not None:
                row["simulated_ms"] = s
                row["error"] = (s - row["measured_ms"]) / row["measured_ms"]
            rows.append(row)
    errs = [abs(r["error"]) for r in rows if "error" in r]
    summary = {"plan": a.plan, "strategy": plan.header.get("strategy"),
               "device": str(device), "dtype": str(dtype).replace("torch.", ""),
               "shape": shape, "layers": cfg_layers, "run_layers": run_layers,
               "flash": bool(flash_attn_varlen_func and device.type == "cuda" and
                             not a.no_flash),
               "rows": rows, "skipped": skipped,
               "mape": sum(errs) / len(errs) if errs else None,
               "worst": max(errs) if errs else None,
               "measured_total_ms": sum(r["measured_ms"] for r in rows),
               "simulated_total_ms": sum(r.get("simulated_ms", 0.0) for r in rows)}
    if a.json:
        json.dump(summary, sys.stdout, indent=1)
        print()
        return 0
    print(f"{'iter':>5} {'rank':>5} {'tokens':>8} {'measured_ms':>12} {'simulated_ms':>13} "
          f"{'error':>8}")
    for r in rows:
        s = r.get("simulated_ms")
        st = "-" if s is None else "%.3f" % s
        et = "-" if s is None else "%+.1f%%" % (100 * r["error"])
        print(f"{r['iter']:>5} {r['rank']:>5} {r['tokens']:>8} {r['measured_ms']:>12.3f} "
              f"{st:>13} {et:>8}")
    for s in skipped:
        print(f"skipped iteration {s['iter']} rank {s['rank']}: {s['why']}")
    if errs:
        print(f"MAPE {100 * summary['mape']:.1f}%, worst {100 * summary['worst']:.1f}% "
              f"({summary['device']}, {summary['dtype']})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
