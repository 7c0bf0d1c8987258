#!/usr/bin/env python3
"""Measure forward+backward times of packed micro-batches on a Llama-shaped decoder stack
and write the timings file `vlplan calibrate` reads.

The stack is `--layers` decoder layers (RMSNorm, grouped-query attention with rotary
embeddings, SwiGLU MLP) without embedding or LM head, since cost.schemes times the
layers of a stage.  With `--head`, each token budget also times the LM head (a
`--vocab` x hidden projection, fp32 logits) and the cross-entropy loss alone, a row
with head = 1, from which `vlplan calibrate` writes cost.head_scale.  A packed micro-batch of sequences l_1..l_n runs attention per
sequence (causal, PyTorch's scaled_dot_product_attention where the installed torch has
it, else matmul + softmax), so its cost grows with sum(l_i^2) as in a varlen kernel.

Sharded schemes: `--cp N` (ring context parallelism, = `--sp N --sp-kind ring`) and
`--sp N --sp-kind ulysses` time what ONE GPU of the N computes, with the shard sizes of
the scheme, as lib/model/cost.c divides the work: its GEMMs on seq/N tokens of each
sequence; under Ulysses whole-sequence attention on heads/N, under ring its two
load-balanced causal chunks (GPU 0's: chunk 0 and chunk 2N-1 of 2N) against every
earlier key of the sequence, with the same causal attention call.  Communication (the
all-to-alls, the ring's sends) is NOT timed: the rows say sp N, its kind and comm
analytic, and `vlplan calibrate` compares them with the cost model's compute alone, the
communication staying the cost model's.  tokens and sum_len2 stay those of the whole
micro-batch (what a cost.schemes row is in); local_tokens is the share's.  Only
compositions whose sequences split evenly (ring: into 2N chunks) are run.  A real ring
runs its attention as N block steps merged by their log-sum-exp; here each chunk is one
call over all the keys it sees (the same work, fewer launches), so the per-step launch
and merge costs are not in the rows.

Compositions: for every token budget of --tokens, the budget split into k equal
sequences for k = 1, 2, 4, ... (same tokens, falling sum of squares) and a long+short
mix; they alternate between the fitting file (-o) and the held-out file (--holdout), so
calibrate --eval checks compositions it never saw.

    python3 tools/profile_step.py --device cuda --dtype bfloat16 --layers 2 \\
        --hidden 2048 --heads 16 --kv-heads 8 --ffn 5632 --tokens 4096,8192,16384 \\
        -o fit.csv --holdout held.csv --model-yaml model.yaml
    vlplan calibrate -c cluster.yaml -c model.yaml --eval held.csv -o calib.yaml fit.csv
"""
import argparse
import math
import statistics
import sys
import time
from collections import Counter

import torch
import torch.nn.functional as F
import torch.utils.checkpoint

try:
    from torch.nn.attention.bias import causal_lower_right as LOWER_RIGHT
except ImportError:   # torch < 2.3: an explicit mask
    LOWER_RIGHT = None

COLUMNS = ["tokens", "sum_len2", "tp", "pp", "sp", "sp_kind", "comm", "local_tokens",
           "ckpt_layers", "layers", "mbs", "seconds", "head", "composition", "device", "dtype"]


class RMSNorm(torch.nn.Module):
    def __init__(self, dim, eps=1e-5):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.ones(dim))
        self.eps = eps

    def forward(self, x):
        var = x.float().pow(2).mean(-1, keepdim=True)
        return (x.float() * torch.rsqrt(var + self.eps)).to(x.dtype) * self.weight


def rope(x, pos, base=10000.0):
    """Rotary embedding of x [T, heads, d] at positions pos [T]."""
    d = x.shape[-1]
    inv = 1.0 / (base ** (torch.arange(0, d, 2, device=x.device, dtype=torch.float32) / d))
    ang = pos.float()[:, None] * inv[None, :]
    cos, sin = ang.cos()[:, None, :].to(x.dtype), ang.sin()[:, None, :].to(x.dtype)
    x1, x2 = x[..., : d // 2], x[..., d // 2:]
    return torch.cat([x1 * cos - x2 * sin, x1 * sin + x2 * cos], dim=-1)


def _by_length(cu):
    """{length: [start, ...]} of the sequences of cu_seqlens."""
    out = {}
    for a, b in zip(cu[:-1], cu[1:]):
        out.setdefault(b - a, []).append(a)
    return out


class LengthGroups:
    """The token indices of each length's sequences and the permutation back, built once a
    step on the CPU and copied once, so the layers launch no per-sequence kernels (a
    varlen kernel has none either) and many short sequences are not timed as overhead."""

    def __init__(self, cu, device):
        self.lengths, order = [], []
        for n, starts in sorted(_by_length(cu).items()):
            idx = torch.cat([torch.arange(a, a + n) for a in starts])
            self.lengths.append((n, len(starts), idx.to(device)))
            order.append(idx)
        inverse = torch.empty(cu[-1], dtype=torch.long)
        inverse[torch.cat(order)] = torch.arange(cu[-1])
        self.inverse = inverse.to(device)


def causal_attention(q, k, v):
    """q [batch, heads, tq, d] against k, v [batch, heads, tk, d], tq <= tk: causal
    attention whose queries are the last tq of the tk positions (bottom-right aligned, as
    a varlen kernel's causal mask is), so a slice attends to every earlier key."""
    tq, tk = q.shape[-2], k.shape[-2]
    if hasattr(F, "scaled_dot_product_attention") and tq == tk:
        return F.scaled_dot_product_attention(q, k, v, is_causal=True)
    if LOWER_RIGHT is not None:   # the fused kernels with a bottom-right causal mask
        return F.scaled_dot_product_attention(q, k, v, attn_mask=LOWER_RIGHT(tq, tk))
    mask = torch.ones(tq, tk, dtype=torch.bool, device=q.device).triu(tk - tq + 1)
    if hasattr(F, "scaled_dot_product_attention"):
        return F.scaled_dot_product_attention(q, k, v, attn_mask=~mask)
    s = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(q.shape[-1])
    return torch.matmul(torch.softmax(s.masked_fill(mask, float("-inf")), dim=-1), v)


def attend(q, k, v):
    """q [batch, tq, heads, d], k, v [batch, tk, kv_heads, d]: causal attention (the
    queries the last tq positions), the kv heads repeated for grouped queries; the output
    [batch * tq, heads * d]."""
    rep = q.shape[2] // k.shape[2]
    k, v = (y.repeat_interleave(rep, dim=2).transpose(1, 2) for y in (k, v))
    out = causal_attention(q.transpose(1, 2), k, v).transpose(1, 2)
    return out.reshape(-1, q.shape[2] * q.shape[3])


class DecoderLayer(torch.nn.Module):
    def __init__(self, hidden, heads, kv_heads, ffn):
        super().__init__()
        self.heads, self.kv_heads, self.hd = heads, kv_heads, hidden // heads
        self.norm1, self.norm2 = RMSNorm(hidden), RMSNorm(hidden)
        self.qkv = torch.nn.Linear(hidden, (heads + 2 * kv_heads) * self.hd, bias=False)
        self.o = torch.nn.Linear(heads * self.hd, hidden, bias=False)
        self.gate_up = torch.nn.Linear(hidden, 2 * ffn, bias=False)
        self.down = torch.nn.Linear(ffn, hidden, bias=False)

    def qkv_heads(self, x):
        """q, k, v [tokens, heads, head_dim] of x's tokens."""
        qkv = self.qkv(x).view(x.shape[0], self.heads + 2 * self.kv_heads, self.hd)
        return qkv.split([self.heads, self.kv_heads, self.kv_heads], dim=1)

    def grouped(self, q, k, v, groups):
        """Causal attention of the sequences of groups over q, k, v [tokens, heads, hd]."""
        outs = []
        # sequences of one length run as one batched causal attention: a composition has
        # one or two lengths, so the kernel count does not grow with the sequence count
        # (as with a varlen kernel) and the time stays a*sum(l^2) + b*tokens + c
        for n, count, idx in groups.lengths:
            qs, ks, vs = (y[idx].view(count, n, y.shape[1], self.hd) for y in (q, k, v))
            outs.append(attend(qs, ks, vs))
        return torch.cat(outs)[groups.inverse]

    def attention(self, x, groups, pos):
        q, k, v = self.qkv_heads(x)
        return self.o(self.grouped(rope(q, pos), rope(k, pos), v, groups))

    def forward(self, x, groups, pos):
        x = x + self.attention(self.norm1(x), groups, pos)
        g, u = self.gate_up(self.norm2(x)).chunk(2, dim=-1)
        return x + self.down(F.silu(g) * u)


class UlyssesLayer(DecoderLayer):
    """One GPU's share of a layer under Ulysses sequence parallelism over n GPUs: its GEMMs
    on the T/n tokens it holds, attention on whole sequences with heads/n of the heads.
    The all-to-alls that trade one for the other are communication, not timed: here the
    projected tensor is reshaped in place of them (the same elements, T/n tokens x all
    heads as T tokens x heads/n), so only the local compute is measured."""

    def __init__(self, n, *shape):
        super().__init__(*shape)
        self.n = n

    def attention(self, x, groups, pos):
        t = x.shape[0] * self.n
        q, k, v = (y.reshape(t, y.shape[1] // self.n, self.hd) for y in self.qkv_heads(x))
        out = self.grouped(rope(q, pos), rope(k, pos), v, groups)
        return self.o(out.reshape(x.shape[0], self.heads * self.hd))


class RingGroups:
    """Ring context parallelism over n GPUs with load-balanced causal halves: a sequence of
    length l is cut into 2n chunks of l/(2n) and GPU j holds chunks j and 2n-1-j, so every
    GPU has l/n tokens and the same causal work.  This is GPU 0's share: chunk 0 attends
    to itself, chunk 2n-1 to every earlier key of the sequence.  The keys and values the
    other GPUs hold arrive by the ring's sends (communication, not timed): here they are
    tensors of the right shape, made once per composition outside the timed steps; the
    attention's backward computes the gradient of every key and value it saw, theirs
    included, as a ring's does (and sends back)."""

    def __init__(self, lengths, n, kv_heads, hd, device, dtype):
        self.lengths, pos, start = [], [], 0
        for l, count in sorted(Counter(lengths).items()):
            local = l // n   # two chunks of l/(2n): positions [0, l/2n) and [l - l/2n, l)
            idx = torch.arange(start, start + count * local)
            remote = [torch.randn(count, l - local, kv_heads, hd, device=device,
                                  dtype=dtype) for _ in range(2)]
            self.lengths.append((l, count, idx.to(device), remote))
            pos += [torch.arange(local // 2), torch.arange(l - local // 2, l)] * count
            start += count * local
        # the local tokens are laid out length group by length group, so no permutation
        self.inverse = torch.arange(start, device=device)
        self.pos = torch.cat(pos).to(device)


class RingLayer(DecoderLayer):
    """One GPU's share of a layer under ring context parallelism (RingGroups): its GEMMs on
    its l/n tokens of each sequence, attention of its two query chunks against the keys
    they see, with the causal attention call of the unsharded layer."""

    def attention(self, x, groups, pos):
        q, k, v = self.qkv_heads(x)
        q, k = rope(q, pos), rope(k, pos)
        outs = []
        for l, count, idx, (rk, rv) in groups.lengths:
            c = l - rk.shape[1]   # local tokens of each sequence, two chunks of c/2
            qs, ks, vs = (y[idx].view(count, c, y.shape[1], self.hd) for y in (q, k, v))
            h = c // 2
            first = attend(qs[:, :h], ks[:, :h], vs[:, :h]).view(count, h, -1)
            # the last chunk's keys: the first chunk's, the other GPUs', then its own
            keys, vals = (torch.cat([y[:, :h], r, y[:, h:]], dim=1)
                          for y, r in ((ks, rk), (vs, rv)))
            last = attend(qs[:, h:], keys, vals).view(count, h, -1)
            outs.append(torch.cat([first, last], dim=1).reshape(count * c, -1))
        return self.o(torch.cat(outs)[groups.inverse])


def compositions(budget, min_len):
    """(name, lengths) of one token budget, from one long sequence to many short ones."""
    out, k = [], 1
    while budget // k >= min_len:
        out.append((f"{k}x{budget // k}", [budget // k] * k))
        k *= 2
    if budget // 2 >= min_len and budget // 16 >= 1:
        long = budget // 2
        short = max(1, (budget - long) // 8)
        mix = [long] + [short] * ((budget - long) // short)
        out.append((f"1x{long}+{len(mix) - 1}x{short}", mix))
    return out


def sharded(comps, args):
    """The compositions whose sequences split evenly over sp GPUs (ring: into 2 sp
    chunks), so every GPU's share is alike and the share timed is the plan's."""
    unit = args.sp * (2 if args.sp > 1 and args.sp_kind == "ring" else 1)
    return [(name, ls) for name, ls in comps if all(n % unit == 0 for n in ls)]


class Runner:
    def __init__(self, args):
        self.args = args
        self.device = torch.device(args.device)
        self.dtype = getattr(torch, args.dtype)
        torch.manual_seed(args.seed)
        shape = (args.hidden, args.heads, args.kv_heads, args.ffn)
        make = {"none": lambda: DecoderLayer(*shape),
                "ulysses": lambda: UlyssesLayer(args.sp, *shape),
                "ring": lambda: RingLayer(*shape)}[args.sp_kind if args.sp > 1 else "none"]
        self.layers = torch.nn.ModuleList(make() for _ in range(args.layers)).to(
            self.device, self.dtype)
        self.ring, self.ring_of = None, None
        self.head = torch.nn.Parameter(torch.randn(args.vocab, args.hidden, device=self.device,
                                                   dtype=self.dtype) * args.hidden ** -0.5)

    def head_step(self, tokens):
        """The LM head and the loss of `tokens` tokens: the final norm's output through the
        vocabulary projection, fp32 logits, cross-entropy, forward and backward."""
        a = self.args
        x = torch.randn(tokens, a.hidden, device=self.device, dtype=self.dtype,
                        requires_grad=True)
        target = torch.randint(0, a.vocab, (tokens,), device=self.device)
        logits = F.linear(x, self.head).float()
        F.cross_entropy(logits, target).backward()

    def layout(self, lengths):
        """(groups, positions, tokens) of this GPU's share of a micro-batch: all of it
        without SP; under Ulysses T/sp tokens into whole-sequence attention; under ring
        RingGroups' chunks."""
        a = self.args
        if a.sp > 1 and a.sp_kind == "ring":
            if self.ring_of != lengths:   # the other GPUs' keys: not part of a step
                self.ring = RingGroups(lengths, a.sp, a.kv_heads, a.hidden // a.heads,
                                       self.device, self.dtype)
                self.ring_of = list(lengths)
            return self.ring, self.ring.pos, sum(lengths) // a.sp
        cu = [0]
        for n in lengths:
            cu.append(cu[-1] + n)
        pos = torch.cat([torch.arange(n) for n in lengths]).to(self.device)
        return LengthGroups(cu, self.device), pos, sum(lengths) // a.sp

    def step(self, lengths):
        a = self.args
        groups, pos, t = self.layout(lengths)
        x = torch.randn(t, a.hidden, device=self.device, dtype=self.dtype, requires_grad=True)
        h = x
        for i, layer in enumerate(self.layers):
            if i < a.ckpt_layers:
                h = torch.utils.checkpoint.checkpoint(layer, h, groups, pos, use_reentrant=False)
            else:
                h = layer(h, groups, pos)
        h.float().square().mean().backward()

    def sync(self):
        if self.device.type == "cuda":
            torch.cuda.synchronize()

    def time(self, lengths, step=None):
        if step is None:
            step = self.step
            self.layout(lengths)   # a ring's remote keys are made here, not in a timed step
        for _ in range(self.args.warmup):
            step(lengths)
        times = []
        for _ in range(self.args.repeat):
            for p in list(self.layers.parameters()) + [self.head]:
                p.grad = None
            self.sync()
            t0 = time.perf_counter()
            step(lengths)
            self.sync()
            times.append(time.perf_counter() - t0)
        return statistics.median(times)


def row(args, name, lengths, seconds, head=0):
    """A timing row: tokens and sum_len2 of the whole micro-batch (what a cost.schemes row
    is in), the scheme, and seconds of the one GPU's share; under sp > 1 communication is
    not in them (comm analytic), and local_tokens says how many tokens its GEMMs ran."""
    return {"tokens": sum(lengths), "sum_len2": sum(n * n for n in lengths), "tp": 1, "pp": 1,
            "sp": args.sp, "sp_kind": args.sp_kind if args.sp > 1 else "none",
            "comm": "analytic" if args.sp > 1 else "included",
            "local_tokens": sum(lengths) // args.sp,
            "ckpt_layers": 0 if head else args.ckpt_layers, "layers": args.layers,
            "mbs": 1, "seconds": repr(seconds), "head": head, "composition": name,
            "device": args.device, "dtype": args.dtype}


def write(path, rows, args):
    with open(path, "w") as f:
        f.write(f"# tools/profile_step.py {' '.join(sys.argv[1:])}\n")
        f.write(f"# torch {torch.__version__}, layers {args.layers}, hidden {args.hidden}, "
                f"heads {args.heads}/{args.kv_heads}, ffn {args.ffn}\n")
        if args.sp > 1:
            f.write(f"# one GPU's share of {args.sp_kind} sp {args.sp} (local_tokens per "
                    "micro-batch); communication: analytic, not timed\n")
        f.write(",".join(COLUMNS) + "\n")
        for r in rows:
            f.write(",".join(str(r[c]) for c in COLUMNS) + "\n")


def write_model_yaml(path, args):
    """The measured shape as a vlplan config fragment (model.*), so calibrate's analytic
    'before' numbers describe the same model."""
    with open(path, "w") as f:
        f.write("# the decoder shape tools/profile_step.py measured\nmodel:\n"
                f"  layers: {args.layers}\n  hidden: {args.hidden}\n  ffn: {args.ffn}\n"
                f"  heads: {args.heads}\n  kv_heads: {args.kv_heads}\n"
                f"  head_dim: {args.hidden // args.heads}\n  vocab: {args.vocab}\n")


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--hidden", type=int, default=1024)
    p.add_argument("--heads", type=int, default=8)
    p.add_argument("--kv-heads", type=int, default=4)
    p.add_argument("--ffn", type=int, default=2816)
    p.add_argument("--vocab", type=int, default=32000, help="vocabulary of the LM head")
    p.add_argument("--head", action="store_true",
                   help="also time the LM head and loss per token budget (rows with head = 1)")
    p.add_argument("--tokens", default="2048,4096,8192",
                   help="token budgets of the micro-batches, comma-separated")
    p.add_argument("--min-len", type=int, default=64, help="shortest sequence")
    p.add_argument("--ckpt-layers", type=int, default=0, help="layers recomputed")
    p.add_argument("--sp", type=int, default=1,
                   help="time one GPU's share of sequence parallelism over N GPUs (--sp-kind)"
                        "; communication is not timed (rows say comm analytic)")
    p.add_argument("--sp-kind", choices=("ulysses", "ring"), default="ulysses",
                   help="ulysses: GEMMs on T/N tokens, whole-sequence attention on heads/N; "
                        "ring: as --cp")
    p.add_argument("--cp", type=int, default=1,
                   help="ring context parallelism over N GPUs (= --sp N --sp-kind ring): "
                        "GEMMs on seq/N tokens of each sequence, attention of its two "
                        "load-balanced chunks against the keys they see")
    p.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    p.add_argument("--dtype", default=None, help="float32 or bfloat16 (default: bf16 on cuda)")
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--threads", type=int, default=0, help="CPU threads (0: torch's default)")
    p.add_argument("-o", "--output", required=True, help="timings for the fit")
    p.add_argument("--holdout", help="every other composition goes here instead")
    p.add_argument("--model-yaml", help="write the measured shape as a config fragment")
    a = p.parse_args(argv)
    a.dtype = a.dtype or ("bfloat16" if a.device.startswith("cuda") else "float32")
    if a.hidden % a.heads or a.heads % a.kv_heads or a.ckpt_layers > a.layers:
        p.error("hidden must divide by heads, heads by kv-heads; ckpt-layers <= layers")
    if a.cp > 1 and a.sp > 1:
        p.error("--cp and --sp both shard the sequence: give one (--cp N is --sp N "
                "--sp-kind ring)")
    if a.cp > 1:
        a.sp, a.sp_kind = a.cp, "ring"
    if a.sp < 1 or (a.sp > 1 and a.sp_kind == "ulysses" and a.kv_heads % a.sp):
        p.error("--sp must be >= 1; under ulysses it must divide kv-heads (heads are split)")
    return a


def main(argv):
    args = parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    runner = Runner(args)
    fit, held = [], []
    for budget in (int(x) for x in args.tokens.split(",")):
        for i, (name, lengths) in enumerate(sharded(compositions(budget, args.min_len),
                                                    args)):
            r = row(args, name, lengths, runner.time(lengths))
            (held if args.holdout and i % 2 == 1 else fit).append(r)
            print(f"{name:>22} tokens {r['tokens']:>7} sum_len2 {r['sum_len2']:>12} "
                  f"{float(r['seconds']) * 1e3:9.3f} ms", file=sys.stderr)
        if args.head:   # one row per budget: the head's cost has no sum_len2 term
            r = row(args, "head", [budget], runner.time(budget // args.sp, runner.head_step),
                    head=1)   # a GPU's head under sp runs its T/sp tokens
            fit.append(r)
            print(f"{'LM head + loss':>22} tokens {budget:>7} "
                  f"{float(r['seconds']) * 1e3:9.3f} ms", file=sys.stderr)
    write(args.output, fit, args)
    if args.holdout:
        write(args.holdout, held, args)
    if args.model_yaml:
        write_model_yaml(args.model_yaml, args)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
