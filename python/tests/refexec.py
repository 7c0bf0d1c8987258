"""A reference executor of the execution contract (vlplan.contract), run as one process of
a gloo world per GPU of a plan: a tiny Llama-shaped decoder (RMSNorm, RoPE, grouped-query
causal attention, SwiGLU; float64 on the CPU) trained on every iteration exactly as the
contract says, and compared with unpacked training, sample by sample, on the same model.

  - Each GPU runs its rank's operations in order (IterationView.ops): F, R, B.
  - Keys and values: the forward of a segment stores, per layer, the keys and values of
    its tokens as leaf tensors of its sample; a later slice attends to them (queries
    [offset, offset + length) against keys [0, offset + length)); their gradients
    accumulate there and enter the backward of the tokens that made them, which the
    contract puts after every later token's backward.  They are freed with the backward
    of the sample's first tokens; the iteration must end with none left.
  - A micro-batch with an R keeps nothing but its keys and values after F; R recomputes
    the forward (whose keys and values must equal the stored ones) and keeps it.
  - A backward pack is the backward of the losses of its tokens (wherever they sit in
    the forward packs) plus their accumulated key/value gradients, layer by layer.
  - Context parallelism (sp > 1 and shared packs): each member computes its Shard; the
    keys and values of sharded segments are exchanged by an all-gather per layer (what
    the ring or the all-to-all moves), and their gradients summed over the group by an
    all-reduce at the backward of their tokens; CP-local segments stay on their member.
    Each token's loss is counted by the member holding it; padding carries none.
  - A barrier pack is a barrier over its group.  tp and pp do not change the tokens:
    the GPU at tensor coordinate 0 and stage 0 of each CP coordinate computes the whole
    model, the others idle (tensor and pipeline parallelism are inside the layers).
After each iteration the gradients of all GPUs are summed (all-reduce) and compared with
the sum of per-sample gradients of the same samples, run whole (unpacked, one process
per share of the samples), each normalised by the iteration's loss_tokens.

Usage (one process per GPU; RANK, WORLD_SIZE and VLPLAN_STORE, a FileStore path, set):
    python3 refexec.py OUT.json MANIFEST PLAN[:MODE] ...
MODE: "exact" (default), "unchecked" (without the contract's checks of the order, so a
bad plan reaches the gradient check) or "no_prefix" (a slice ignores its earlier keys:
what a trainer that takes cu_seqlens_kv = cu_seqlens_q does; must not match).
"""
import json
import math
import os
import sys
import time
import zlib
from datetime import timedelta
from typing import Dict, List, Optional

import torch
import torch.distributed as dist

HERE = os.path.dirname(os.path.abspath(__file__))
if not os.environ.get("VLPLAN_TEST_INSTALLED"):
    sys.path.insert(0, os.path.join(HERE, ".."))

import vlplan  # noqa: E402
from vlplan.stream import PlanError  # noqa: E402
from vlplan.torch_adapters import (IGNORE_INDEX, PackedDataset, collate_packed,  # noqa: E402
                                   iteration_batches)

torch.set_default_dtype(torch.float64)
VOCAB, DIM, HEADS, KV_HEADS, HEAD_DIM, FFN, LAYERS = 61, 16, 4, 2, 4, 24, 2
IGNORE = -1


# ---------------------------------------------------------------- the model

def make_params(seed: int = 1234) -> Dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)

    def w(*shape, scale=0.3):
        return (torch.randn(*shape, generator=g) * scale).requires_grad_()

    p = {"emb": w(VOCAB, DIM, scale=1.0), "nf": (1 + w(DIM, scale=0.1)).detach().requires_grad_(),
         "lm": w(DIM, VOCAB)}
    for l in range(LAYERS):
        p[f"n1.{l}"] = (1 + w(DIM, scale=0.1)).detach().requires_grad_()
        p[f"wq.{l}"] = w(DIM, HEADS * HEAD_DIM)
        p[f"wk.{l}"] = w(DIM, KV_HEADS * HEAD_DIM)
        p[f"wv.{l}"] = w(DIM, KV_HEADS * HEAD_DIM)
        p[f"wo.{l}"] = w(HEADS * HEAD_DIM, DIM)
        p[f"n2.{l}"] = (1 + w(DIM, scale=0.1)).detach().requires_grad_()
        p[f"w1.{l}"] = w(DIM, FFN)
        p[f"w3.{l}"] = w(DIM, FFN)
        p[f"w2.{l}"] = w(FFN, DIM)
    return p


def rms(x, w):
    return x * torch.rsqrt((x * x).mean(-1, keepdim=True) + 1e-6) * w


def rope(x, pos):
    """x: [n, heads, HEAD_DIM], pos: [n] (positions in the sample)."""
    half = HEAD_DIM // 2
    inv = 1.0 / (10000 ** (torch.arange(half, dtype=torch.float64) / half))
    ang = pos.to(torch.float64)[:, None] * inv[None, :]
    cos, sin = ang.cos()[:, None, :], ang.sin()[:, None, :]
    a, b = x[..., :half], x[..., half:]
    return torch.cat([a * cos - b * sin, a * sin + b * cos], -1)


def proj(p, l, x, pos):
    """Layer l's q, k, v of hidden states x at positions pos."""
    a = rms(x, p[f"n1.{l}"])
    q = rope((a @ p[f"wq.{l}"]).view(-1, HEADS, HEAD_DIM), pos)
    k = rope((a @ p[f"wk.{l}"]).view(-1, KV_HEADS, HEAD_DIM), pos)
    v = (a @ p[f"wv.{l}"]).view(-1, KV_HEADS, HEAD_DIM)
    return q, k, v


def attend(q, qpos, k, v):
    """Causal attention of queries at positions qpos to keys/values at positions 0..n-1."""
    rep = HEADS // KV_HEADS
    k = k.repeat_interleave(rep, 1)
    v = v.repeat_interleave(rep, 1)
    s = torch.einsum("qhd,khd->hqk", q, k) / math.sqrt(HEAD_DIM)
    kpos = torch.arange(k.shape[0])
    s = s.masked_fill(kpos[None, None, :] > qpos[None, :, None], float("-inf"))
    return torch.einsum("hqk,khd->qhd", torch.softmax(s, -1), v).reshape(q.shape[0], -1)


def rest(p, l, x, o):
    """The layer after attention: output projection, residual, SwiGLU MLP."""
    h = x + o @ p[f"wo.{l}"]
    a = rms(h, p[f"n2.{l}"])
    return h + (torch.nn.functional.silu(a @ p[f"w1.{l}"]) * (a @ p[f"w3.{l}"])) @ p[f"w2.{l}"]


def token_losses(p, x, labels):
    logits = rms(x, p["nf"]) @ p["lm"]
    ok = labels != IGNORE
    out = torch.nn.functional.cross_entropy(logits, labels.clamp(min=0), reduction="none")
    return out * ok


def sample_tokens(sid, length: int) -> torch.Tensor:
    g = torch.Generator().manual_seed(zlib.crc32(repr(sid).encode()))
    return torch.randint(VOCAB, (length,), generator=g)


def labels_of(toks: torch.Tensor, start: int, stop: int) -> torch.Tensor:
    """Labels of tokens [start, stop): the next token, IGNORE after the sample's last."""
    lab = torch.full((stop - start,), IGNORE, dtype=torch.long)
    nxt = toks[start + 1:stop + 1]
    lab[:nxt.numel()] = nxt
    return lab


def reference_loss(p, toks: torch.Tensor, n: int) -> torch.Tensor:
    """The summed token loss of a sample's first n tokens, run whole (unpacked)."""
    pos = torch.arange(n)
    x = p["emb"][toks[:n]]
    for l in range(LAYERS):
        q, k, v = proj(p, l, x, pos)
        x = rest(p, l, x, attend(q, pos, k, v))
    return token_losses(p, x, labels_of(toks, 0, n)).sum()


# ---------------------------------------------------------------- the packed executor

class Run:
    """Keys and values of tokens [start, stop) of one sample, per layer, as leaves."""

    def __init__(self, start, stop, place):
        self.start, self.stop, self.place = start, stop, place
        self.k: List[Optional[torch.Tensor]] = [None] * LAYERS
        self.v: List[Optional[torch.Tensor]] = [None] * LAYERS
        self.done = 0       # tokens whose backward ran


class Fwd:
    """One forward pack's state on this GPU: slots, and per layer what the backward needs."""

    def __init__(self, mb, sh):
        self.mb, self.sh = mb, sh
        self.slot_seg, self.slot_pos = [], []
        for pc in sh.pieces:
            self.slot_seg += [pc.seg] * (pc.stop - pc.start) + [-1] * pc.pad
            self.slot_pos += list(range(pc.start, pc.stop)) + [0] * pc.pad
        self.pos = torch.tensor(self.slot_pos, dtype=torch.long)
        self.real = torch.tensor([s >= 0 for s in self.slot_seg], dtype=torch.bool)
        self.layers = []
        self.head = None
        self.done = torch.zeros(len(self.slot_seg), dtype=torch.bool)
        self.tokens = None


class Executor:
    def __init__(self, p, view: vlplan.GpuView, manifest: Dict, groups, mode: str):
        self.p, self.view, self.manifest, self.groups, self.mode = p, view, manifest, groups, mode
        self.toks: Dict[object, torch.Tensor] = {}

    def tokens_of(self, sid):
        if sid not in self.toks:
            self.toks[sid] = sample_tokens(sid, self.manifest[sid])
        return self.toks[sid]

    def group(self, gpus):
        return self.groups[tuple(sorted(gpus))]

    # ---- forward
    def forward(self, it, mb, kind):
        sh = mb.shard()
        f = Fwd(mb, sh)
        place = tuple(mb.cp_group)
        tok = []
        for pc in sh.pieces:
            sid = mb.ids[pc.seg]
            t = self.tokens_of(sid)
            tok.append(t[pc.start:pc.stop])
            tok.append(torch.zeros(pc.pad, dtype=torch.long))
        f.tokens = torch.cat(tok) if tok else torch.empty(0, dtype=torch.long)
        grad = kind == "R" or not self.will_recompute
        with torch.set_grad_enabled(grad):
            x_leaf = self.p["emb"].detach()[f.tokens].requires_grad_()
            x = x_leaf
            runs = self.runs_for(mb, sh, place, kind)
            for l in range(LAYERS):
                x_in = x.detach().requires_grad_() if l else x_leaf
                q, k, v = proj(self.p, l, x_in, f.pos)
                self.exchange(mb, sh, f, l, k, v, runs, kind)
                q_leaf = q.detach().requires_grad_()
                o = torch.zeros(q.shape[0], HEADS * HEAD_DIM)
                used = []
                for j in sorted(set(s for s in f.slot_seg if s >= 0)):
                    rows = torch.tensor([i for i, s in enumerate(f.slot_seg) if s == j])
                    keys, vals, base = self.keys_for(mb.ids[j], mb.offsets[j],
                                                     mb.offsets[j] + mb.lengths[j], l, place,
                                                     mb.cps[j], used)
                    out = attend(q_leaf[rows], f.pos[rows] - base, keys, vals)
                    o = o.index_put((rows,), out)
                x_out = rest(self.p, l, x_in, o)
                f.layers.append((x_in, q, k, v, q_leaf, x_out, used))
                x = x_out
            x_last = x.detach().requires_grad_()
            labels = torch.full((len(f.slot_seg),), IGNORE, dtype=torch.long)
            for i, (j, ps) in enumerate(zip(f.slot_seg, f.slot_pos)):
                if j >= 0:
                    t = self.tokens_of(mb.ids[j])
                    labels[i] = t[ps + 1] if ps + 1 < t.numel() else IGNORE
            f.head = (x_last, token_losses(self.p, x_last, labels))
            self.check_batch(f, labels)
        if not grad:
            f.layers, f.head = None, None      # only the keys and values stay
        return f

    def runs_for(self, mb, sh, place, kind):
        """The Run of every segment this GPU takes part in (created by F, found by R),
        checking that the sample's earlier tokens are stored in the same placement."""
        out = {}
        parts = set(sh.local) | set(sh.sharded)
        for j in sorted(parts):
            sid, a, b = mb.ids[j], mb.offsets[j], mb.offsets[j] + mb.lengths[j]
            key = (place, mb.cps[j])
            lst = self.store.setdefault(sid, [])
            if kind == "R":
                found = [r for r in lst if (r.start, r.stop) == (a, b)]
                if not found:
                    raise PlanError(f"recompute of {sid!r} [{a}, {b}): its keys are gone")
                out[j] = found[0]
                continue
            at = 0
            for r in sorted(lst, key=lambda r: r.start):
                if r.start == at and r.place == key:
                    at = r.stop
            if at < a and self.mode != "no_prefix":
                raise PlanError(f"{sid!r} [{a}, {b}): keys of tokens [{at}, {a}) are not "
                                    "stored on this GPU")
            r = Run(a, b, key)
            lst.append(r)
            out[j] = r
        return out

    def exchange(self, mb, sh, f, l, k, v, runs, kind):
        """Fill layer l's keys and values of every Run: own rows, and the other members'
        rows of sharded segments by an all-gather over the CP group."""
        full_k, full_v = {}, {}
        for j, r in runs.items():
            full_k[j] = torch.zeros(r.stop - r.start, KV_HEADS, HEAD_DIM)
            full_v[j] = torch.zeros(r.stop - r.start, KV_HEADS, HEAD_DIM)
        at = 0
        mine = []
        for pc in sh.pieces:
            n = pc.stop - pc.start
            base = mb.offsets[pc.seg]
            full_k[pc.seg][pc.start - base:pc.stop - base] = k[at:at + n].detach()
            full_v[pc.seg][pc.start - base:pc.stop - base] = v[at:at + n].detach()
            if pc.seg in sh.sharded:
                mine.append(torch.stack([k[at:at + n], v[at:at + n]], 1).detach())
            at += n + pc.pad
        if sh.sharded:
            size = sh.size
            shards = [mb.shard(m) for m in range(size)]
            counts = [sum(pc.stop - pc.start for pc in s.pieces if pc.seg in s.sharded)
                      for s in shards]
            buf = torch.zeros(max(counts), 2, KV_HEADS, HEAD_DIM)
            if mine:
                cat = torch.cat(mine)
                buf[:cat.shape[0]] = cat
            got = [torch.zeros_like(buf) for _ in range(size)]
            dist.all_gather(got, buf, group=self.group(mb.cp_group))
            # torch numbers a group's members by global rank, not by CP index
            order = sorted(mb.cp_group)
            got = [got[order.index(g)] for g in mb.cp_group]
            for m, s in enumerate(shards):
                at = 0
                for pc in s.pieces:
                    if pc.seg not in s.sharded:
                        continue
                    n, base = pc.stop - pc.start, mb.offsets[pc.seg]
                    full_k[pc.seg][pc.start - base:pc.stop - base] = got[m][at:at + n, 0]
                    full_v[pc.seg][pc.start - base:pc.stop - base] = got[m][at:at + n, 1]
                    at += n
        for j, r in runs.items():
            if kind == "R":
                if not (torch.allclose(r.k[l], full_k[j], atol=1e-12) and
                        torch.allclose(r.v[l], full_v[j], atol=1e-12)):
                    raise AssertionError("a recompute gave other keys and values")
            else:
                r.k[l] = full_k[j].requires_grad_()
                r.v[l] = full_v[j].requires_grad_()

    def keys_for(self, sid, start, stop, l, place, cp, used):
        """Layer l's keys and values of tokens [0, stop) of sid (stored leaves), and the
        position of the first (0; in no_prefix mode the slice's own start)."""
        ks, vs, at = [], [], 0
        runs = sorted(self.store[sid], key=lambda r: r.start)
        if self.mode == "no_prefix":
            runs = [r for r in runs if (r.start, r.stop) == (start, stop)]
            at = start
        for r in runs:
            if r.start == at and r.stop <= stop and r.place == (place, cp):
                ks.append(r.k[l])
                vs.append(r.v[l])
                if all(u is not r for u in used):
                    used.append(r)
                at = r.stop
        if at != stop:
            raise PlanError(f"{sid!r}: keys up to token {stop} wanted, stored up to {at}")
        return torch.cat(ks), torch.cat(vs), (start if self.mode == "no_prefix" else 0)

    # ---- backward
    def backward(self, it, bpack, fwds):
        """Backward of the tokens of backward pack bpack over the alive forward packs."""
        want = [(sid, o, o + n) for sid, o, n in zip(bpack.ids, bpack.offsets, bpack.lengths)]
        touched = []
        for f in fwds.values():
            if f.layers is None:
                continue
            m = torch.zeros(len(f.slot_seg), dtype=torch.bool)
            for i, (j, ps) in enumerate(zip(f.slot_seg, f.slot_pos)):
                if j < 0:
                    continue
                sid = f.mb.ids[j]
                for w_sid, a, b in want:
                    if w_sid == sid and a <= ps < b:
                        m[i] = True
            if m.any():
                if (m & f.done).any():
                    raise AssertionError("a token's backward ran twice")
                touched.append((f, m))
        scale = it.loss_scale
        grads = {}
        for f, m in touched:
            x_last, losses = f.head
            (losses * m).sum().mul(scale).backward(inputs=[x_last, self.p["nf"], self.p["lm"]],
                                                   retain_graph=True)
            grads[id(f)] = x_last.grad * m[:, None]
            x_last.grad = None
        for l in reversed(range(LAYERS)):
            for f, m in touched:
                x_in, q, k, v, q_leaf, x_out, used = f.layers[l]
                leaves = [t for r in used for t in (r.k[l], r.v[l])]
                torch.autograd.backward(x_out, grads[id(f)], retain_graph=True,
                                        inputs=[x_in, q_leaf] + leaves + self.rest_params(l))
            self.reduce_kv(want, l)
            for f, m in touched:
                x_in, q, k, v, q_leaf, x_out, used = f.layers[l]
                gk, gv = self.own_kv_grads(f, m, l)
                gq = q_leaf.grad * m[:, None, None]
                q_leaf.grad = None
                torch.autograd.backward([q, k, v], [gq, gk, gv], retain_graph=True,
                                        inputs=[x_in] + self.proj_params(l))
                grads[id(f)] = x_in.grad * m[:, None]
                x_in.grad = None
        for f, m in touched:
            g = grads[id(f)]
            self.p["emb"].grad = self.p["emb"].grad if self.p["emb"].grad is not None \
                else torch.zeros_like(self.p["emb"])
            self.p["emb"].grad.index_add_(0, f.tokens[m], g[m])
            f.done |= m
        self.close(want)

    def rest_params(self, l):
        return [self.p[f"{n}.{l}"] for n in ("wo", "n2", "w1", "w3", "w2")]

    def proj_params(self, l):
        return [self.p[f"{n}.{l}"] for n in ("n1", "wq", "wk", "wv")]

    def reduce_kv(self, want, l):
        """Sum the key/value gradients of the sharded tokens being backwarded over the CP
        group (every member's queries attended to them)."""
        parts = []
        for sid, a, b in want:
            for r in sorted(self.store.get(sid, []), key=lambda r: r.start):
                if r.place[1] != -1 or r.stop <= a or r.start >= b:
                    continue
                lo, hi = max(a, r.start) - r.start, min(b, r.stop) - r.start
                parts.append((r, lo, hi))
        if not parts:
            return
        groups = {r.place[0] for r, _, _ in parts}
        if len(groups) != 1:
            raise PlanError(f"a backward pack over tokens of CP groups {sorted(groups)}")
        group = groups.pop()
        if len(group) < 2:
            return
        flat = []
        for r, lo, hi in parts:
            for t in (r.k[l], r.v[l]):
                g = t.grad if t.grad is not None else torch.zeros_like(t)
                flat.append(g[lo:hi].reshape(-1))
        buf = torch.cat(flat)
        dist.all_reduce(buf, group=self.group(group))
        at = 0
        for r, lo, hi in parts:
            for t in (r.k[l], r.v[l]):
                if t.grad is None:
                    t.grad = torch.zeros_like(t)
                n = (hi - lo) * KV_HEADS * HEAD_DIM
                t.grad[lo:hi] = buf[at:at + n].view(hi - lo, KV_HEADS, HEAD_DIM)
                at += n

    def own_kv_grads(self, f, m, l):
        """Gradients of layer l's own keys and values of the slots in m, from the Runs."""
        gk = torch.zeros(len(f.slot_seg), KV_HEADS, HEAD_DIM)
        gv = torch.zeros_like(gk)
        mb = f.mb
        place = tuple(mb.cp_group)
        for i, (j, ps) in enumerate(zip(f.slot_seg, f.slot_pos)):
            if j < 0 or not m[i]:
                continue
            sid = mb.ids[j]
            for r in self.store[sid]:
                if r.place == (place, mb.cps[j]) and r.start <= ps < r.stop:
                    if r.k[l].grad is not None:
                        gk[i] = r.k[l].grad[ps - r.start]
                        gv[i] = r.v[l].grad[ps - r.start]
                    break
            else:
                raise AssertionError(f"no stored keys for {sid!r} token {ps}")
        return gk, gv

    def close(self, want):
        """Count the backwarded tokens of each Run; free a sample's keys and values once
        all of them ran their backward."""
        for sid, a, b in want:
            lst = self.store.get(sid, [])
            for r in lst:
                r.done += max(0, min(b, r.stop) - max(a, r.start))
            if lst and all(r.done >= r.stop - r.start for r in lst):
                del self.store[sid]

    # ---- one iteration
    def loader_batches(self, it, ops):
        """What the DataLoader path (PlanBatchSampler, PackedDataset, collate_packed) gives
        this GPU for the iteration, checked against the operations: the same forwards in
        the same order, each followed by the same backward packs (each forward's tokens
        are checked in forward())."""
        if self.mode != "exact":
            return []
        ds = PackedDataset(self, labels=True)
        got = [collate_packed([ds[k] for k in keys]) for keys in iteration_batches(it)]
        if not it.active or not it.micro_batches:
            assert len(got) == 1 and got[0]["op"] == "idle" and got[0]["last"]
            return []
        want, backs = [], []
        for op in ops:
            if op.kind == "B":
                backs[-1].append(op.index)
            else:
                want.append((op.kind, op.index))
                backs.append([])
        assert [(b["op"], b["step"]) for b in got] == want, "the loader's forwards differ"
        assert [[j for j, _ in b["backward"]] for b in got] == backs, "backward packs differ"
        assert [b["last"] for b in got] == [False] * (len(got) - 1) + [True]
        return got

    def __getitem__(self, sid):
        """The dataset the loader path reads: a sample's tokens by id."""
        return self.tokens_of(sid)

    def check_batch(self, f, labels):
        """The loader's batch for this forward holds this GPU's tokens, positions, labels
        and cu_seqlens as the executor computed them."""
        b = self.batch
        if b is None:
            return
        real = f.real
        assert torch.equal(b["tokens"], f.tokens), "the loader's tokens differ"
        assert torch.equal(b["loss_mask"].bool(), real)
        assert torch.equal(b["position_ids"][real], f.pos[real])
        want = labels.clone()
        want[want == IGNORE] = IGNORE_INDEX
        assert torch.equal(b["labels"], want), "the loader's labels differ"
        assert b["cu_seqlens_kv"].tolist() == f.sh.cu_seqlens_kv
        assert b["sharded_cu_seqlens_q_padded"].tolist() == f.sh.sharded_cu_seqlens_q_padded

    def run(self, it):
        """Execute this GPU's part of iteration it."""
        self.store: Dict[object, List[Run]] = {}
        ops = it.ops() if it.active else []
        batches = self.loader_batches(it, ops)
        if not it.active or it.tp_rank or it.pp_rank:
            return 0
        self.will_recompute = False
        recompute = {op.index for op in ops if op.kind == "R"}
        fwds = {}
        backs = it.backward_packs()
        for op in ops:
            mb = it.micro_batches[op.index] if op.kind != "B" else backs[op.index]
            self.batch = batches.pop(0) if op.kind != "B" and batches else None
            if mb.barrier:
                if op.kind == "F":
                    dist.barrier(group=self.group(mb.cp_group))
                continue
            if op.kind in "FR":
                self.will_recompute = op.kind == "F" and op.index in recompute
                fwds[op.index] = self.forward(it, mb, op.kind)
            else:
                self.backward(it, mb, fwds)
        for i, f in fwds.items():
            if not bool((f.done | ~f.real).all()):
                raise AssertionError(f"iteration {it.it}: tokens of micro-batch {i} never "
                                     "ran their backward")
        if self.store:
            raise AssertionError(f"iteration {it.it}: keys and values left: "
                                 f"{sorted(map(str, self.store))}")
        return len(ops)


# ---------------------------------------------------------------- driver

def check_all_ranks(plan, it_record, world):
    """The contract checks of every rank of an iteration, on every process alike, so a
    plan refused is refused everywhere before any collective."""
    for g in range(world):
        v = vlplan.GpuView(plan, g, world).view(it_record)
        v.check()


def flat_grad(p):
    return torch.cat([(t.grad if t.grad is not None else torch.zeros_like(t)).reshape(-1)
                      for t in p.values()])


def zero(p):
    for t in p.values():
        t.grad = None


def run_plan(path, mode, manifest, rank, world, groups):
    plan = vlplan.Plan(path)
    view = vlplan.GpuView(plan, rank, world)
    dropped = {}
    for sid, off, n, _ in (plan.footer or {}).get("dropped", []):
        dropped[sid] = min(dropped.get(sid, manifest[sid]), off)
    p = make_params()
    ex = Executor(p, view, manifest, groups, mode)
    worst = 0.0
    iters = 0
    problems = []
    errs = []
    for rec in plan.iterations():
        if mode != "unchecked":
            check_all_ranks(plan, rec, world)
        it = view.view(rec)
        zero(p)
        ex.run(it)
        packed = flat_grad(p)
        dist.all_reduce(packed)
        # the reference: every sample of the iteration whole, shared out over the world
        sids = sorted({s.id for r in rec.ranks for pk in r.mbs for s in pk.segs}, key=repr)
        lengths = {s: dropped.get(s, manifest[s]) for s in sids}
        if sum(lengths.values()) != rec.tokens:
            problems.append(f"iteration {rec.it}: its samples hold {sum(lengths.values())} "
                            f"tokens, the plan says {rec.tokens}")
        zero(p)
        for n, s in enumerate(sids):
            if n % world == rank:
                (reference_loss(p, ex.tokens_of(s), lengths[s]) * it.loss_scale).backward()
        ref = flat_grad(p)
        dist.all_reduce(ref)
        err = float((packed - ref).norm() / ref.norm().clamp(min=1e-300))
        worst = max(worst, err)
        errs.append(err)
        iters += 1
    return {"iterations": iters, "rel_err": worst, "problems": problems,
            "per_iteration": errs}


def main():
    out, manifest_path, plans = sys.argv[1], sys.argv[2], sys.argv[3:]
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    dist.init_process_group("gloo", init_method="file://" + os.environ["VLPLAN_STORE"],
                            rank=rank, world_size=world, timeout=timedelta(seconds=120))
    manifest = {}
    with open(manifest_path) as f:
        for line in f:
            rec = json.loads(line)
            manifest[rec["id"]] = rec["len"]
    results = {}
    for spec in plans:
        path, _, mode = spec.partition(":")
        mode = mode or "exact"
        t0 = time.time()
        # every process creates every group, in the order process_groups gives
        groups = {}
        for g in vlplan.GpuView(path, rank, world).process_groups():
            groups[g] = dist.new_group(list(g))
        try:
            res = run_plan(path, mode, manifest, rank, world, groups)
        except PlanError as e:
            res = {"refused": str(e)}
        res["seconds"] = round(time.time() - t0, 2)
        results[spec] = res
        dist.barrier()
    if rank == 0:
        with open(out, "w") as f:
            json.dump(results, f, indent=1)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
