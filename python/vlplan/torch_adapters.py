"""PyTorch adapters: a batch sampler that drives a DataLoader from a plan, a dataset
wrapper and collate function for packed micro-batches, and Megatron-Core's
PackedSeqParams arguments, all following the execution contract (vlplan.contract).
Imports torch; the rest of vlplan does not.

    view = vlplan.GpuView("plan.jsonl")
    loader = DataLoader(PackedDataset(ds), batch_sampler=PlanBatchSampler(view),
                        collate_fn=collate_packed)
    for b in loader:            # one forward (or recompute) of this GPU's part of a pack
        ...                     # then b["backward"], then step when b["last"]

The sampler yields one batch per forward operation of this GPU ("F" and "R" of the
rank's schedule, in its order; the backward packs to run after each forward come with
it), the GPU's own part of the pack under context parallelism (contract.shard), and one
idle batch for an iteration in which the GPU runs nothing (in no rank, or in a rank
without micro-batches), so every process steps its optimizer once per iteration.  Each
element is a PlanKey: one piece of one sample and the batch it belongs to.
"""
from collections import namedtuple
from typing import Any, Dict, Iterator, List, Optional, Sequence, Tuple

import torch
from torch.utils.data import Dataset, Sampler

from .stream import PlanError
from .view import GpuView, IterationView, MicroBatch

# index: dataset index (-1: no sample, the idle or barrier placeholder); offset, length:
# the tokens of the sample; cp: -1 sharded, else the CP index computing it; it, step,
# steps: iteration, micro-batch number, micro-batches of this GPU in the iteration (0 when
# it runs none); loss_tokens: the normaliser; pad: padding slots after the piece (ring
# and Ulysses layouts); info: the batch's BatchInfo.
PlanKey = namedtuple("PlanKey", "index offset length cp it step steps loss_tokens pad info")
# Placeholder element of a batch without samples (an idle iteration, a barrier).
_IDLE = -1
IGNORE_INDEX = -100


class BatchInfo:
    """What a batch is beyond its tokens (shared by its keys): op "F", "R" (recompute) or
    "idle"; backward: [(j, [(dataset index, start, stop), ...]), ...], the backward packs
    to run after this forward, each with its tokens; last: the iteration's last batch
    (step the optimizer after its backward packs); barrier: a shared pack without
    segments (a barrier over cp_group); the local and sharded cu_seqlens of the shard."""
    __slots__ = ("op", "backward", "last", "barrier", "cp_group", "cp_index", "sp_kind",
                 "local_tokens", "cu_seqlens_q", "cu_seqlens_kv", "max_seqlen_q",
                 "max_seqlen_kv", "sharded_cu_seqlens_q", "sharded_cu_seqlens_kv",
                 "sharded_cu_seqlens_q_padded", "loss_scale")

    def __init__(self, op: str, it: IterationView, mb: Optional[MicroBatch] = None):
        self.op, self.backward, self.last, self.barrier = op, [], False, False
        self.loss_scale = it.loss_scale
        self.cp_group, self.cp_index, self.sp_kind = [it.gpu], 0, it.sp_kind
        self.local_tokens = 0
        self.cu_seqlens_q = self.cu_seqlens_kv = [0]
        self.max_seqlen_q = self.max_seqlen_kv = 0
        self.sharded_cu_seqlens_q = self.sharded_cu_seqlens_kv = [0]
        self.sharded_cu_seqlens_q_padded = [0]
        if mb is None:
            return
        self.barrier = mb.barrier
        self.cp_group, self.cp_index = list(mb.cp_group), mb.cp_index
        sh = mb.shard()
        self.local_tokens = sum(mb.lengths[j] for j in sh.local)
        self.cu_seqlens_q, self.cu_seqlens_kv = sh.cu_seqlens_q, sh.cu_seqlens_kv
        self.max_seqlen_q, self.max_seqlen_kv = sh.max_seqlen_q, sh.max_seqlen_kv
        self.sharded_cu_seqlens_q = sh.sharded_cu_seqlens_q
        self.sharded_cu_seqlens_kv = sh.sharded_cu_seqlens_kv
        self.sharded_cu_seqlens_q_padded = sh.sharded_cu_seqlens_q_padded


def _idle_batch(it: IterationView) -> List[PlanKey]:
    info = BatchInfo("idle", it)
    info.last = True
    return [PlanKey(_IDLE, 0, 0, -1, it.it, 0, 0, it.loss_tokens, 0, info)]


def iteration_batches(it: IterationView) -> List[List[PlanKey]]:
    """The batches of one iteration for this GPU (see the module doc); raises PlanError for
    an order the contract cannot execute (IterationView.check)."""
    if not it.active or not it.micro_batches:
        return [_idle_batch(it)]
    it.check()
    n = it.steps
    backs = it.backward_packs()
    out: List[List[PlanKey]] = []
    infos: List[BatchInfo] = []
    for op in it.ops():
        if op.kind == "B":
            if not infos:
                raise PlanError(f"iteration {it.it}: backward pack {op.index} before any "
                                "forward")
            pack = backs[op.index]
            infos[-1].backward.append(
                (op.index, [(i, o, o + ln) for i, o, ln, _ in pack.segments()]))
            continue
        mb = it.micro_batches[op.index]
        info = BatchInfo(op.kind, it, mb)
        infos.append(info)
        keys = [PlanKey(mb.indices[p.seg], p.start, p.stop - p.start, mb.cps[p.seg], it.it,
                        mb.index, n, it.loss_tokens, p.pad, info)
                for p in mb.shard().pieces]
        out.append(keys or [PlanKey(_IDLE, 0, 0, -1, it.it, mb.index, n, it.loss_tokens, 0,
                                    info)])
    infos[-1].last = True
    return out


class PlanBatchSampler(Sampler):
    """Batches of PlanKey, forward after forward, for one GPU.

    view: a GpuView (or a plan path, with rank/world_size/start_iter/id_to_index passed
    on).  Iterating again starts again at view.start_iter.  len(): batches yielded."""

    def __init__(self, view, **kwargs: Any):
        self.view = view if isinstance(view, GpuView) else GpuView(view, **kwargs)
        self._len: Optional[int] = None

    def __iter__(self) -> Iterator[List[PlanKey]]:
        for it in self.view:
            yield from iteration_batches(it)

    def __len__(self) -> int:
        if self._len is None:
            self._len = sum(1 if not it.micro_batches else
                            sum(1 for op in it.ops() if op.kind != "B") for it in self.view)
        return self._len


class PackedDataset(Dataset):
    """Wraps a dataset of token sequences (anything torch.as_tensor accepts) so that a
    PlanKey fetches the planned tokens of its sample.  labels=True also returns each
    token's label, the sample's next token (IGNORE_INDEX after its last): the label of a
    slice's last token is the first token of the sample's next slice."""

    def __init__(self, base: Sequence, labels: bool = False):
        self.base = base
        self.labels = labels

    def __len__(self) -> int:
        return len(self.base)

    def __getitem__(self, key):
        if not isinstance(key, PlanKey):
            return self.base[key]
        if key.index == _IDLE:
            return key, torch.empty(0, dtype=torch.long), torch.empty(0, dtype=torch.long)
        toks = torch.as_tensor(self.base[key.index])
        a, b = key.offset, key.offset + key.length
        if b > toks.numel():
            raise IndexError(f"sample {key.index} has {toks.numel()} tokens, the plan takes "
                             f"[{a}, {b})")
        labels = torch.empty(0, dtype=torch.long)
        if self.labels:
            labels = torch.full((key.length,), IGNORE_INDEX, dtype=torch.long)
            nxt = toks[a + 1:b + 1]
            labels[:nxt.numel()] = nxt
        return key, toks[a:b], labels


def _i32(values: Sequence[int], device=None) -> torch.Tensor:
    return torch.tensor(list(values), dtype=torch.int32, device=device)


def collate_packed(items: List[Tuple[PlanKey, torch.Tensor, torch.Tensor]]) -> Dict[str, Any]:
    """One forward of this GPU's part of a pack:

    tokens, position_ids (1-D, int64; padding slots: token 0, position 0), labels (when
    PackedDataset(labels=True); IGNORE_INDEX on padding), loss_mask (1 real, 0 padding);
    local_tokens: how many leading tokens belong to segments this GPU computes whole,
    with cu_seqlens_q (= cu_seqlens), cu_seqlens_kv, max_seqlen_q, max_seqlen_kv (int32
    tensors; kv counts the keys of earlier slices); the rest is its share of the sharded
    segments, with sharded_cu_seqlens_q, _kv, _q_padded over the whole CP group;
    cp_group, cp_index, sp_kind; op ("F", "R" or "idle"), backward (the backward packs to
    run after it), barrier, it, step, steps, last (step the optimizer after this batch's
    backward packs), loss_tokens, loss_scale (1/loss_tokens, 0 when 0), active, keys."""
    keys = [k for k, _, _ in items]
    first = keys[0]
    info: BatchInfo = first.info
    real = [(k, t, lab) for k, t, lab in items if k.index != _IDLE]
    with_labels = all(lab.numel() == k.length for k, _, lab in real)
    toks, pos, labs, mask = [], [], [], []
    for k, t, lab in real:
        pad = torch.zeros(k.pad, dtype=torch.long)
        toks += [t, pad.to(t.dtype)]
        pos += [torch.arange(k.offset, k.offset + k.length), pad]
        mask += [torch.ones(k.length, dtype=torch.long), pad]
        if with_labels:
            labs += [lab, torch.full((k.pad,), IGNORE_INDEX, dtype=torch.long)]
    empty = torch.empty(0, dtype=torch.long)
    out = {"tokens": torch.cat(toks) if toks else empty,
           "position_ids": torch.cat(pos) if pos else empty,
           "loss_mask": torch.cat(mask) if mask else empty,
           "local_tokens": info.local_tokens,
           "cu_seqlens": _i32(info.cu_seqlens_q), "cu_seqlens_q": _i32(info.cu_seqlens_q),
           "cu_seqlens_kv": _i32(info.cu_seqlens_kv), "max_seqlen": info.max_seqlen_q,
           "max_seqlen_q": info.max_seqlen_q, "max_seqlen_kv": info.max_seqlen_kv,
           "sharded_cu_seqlens_q": _i32(info.sharded_cu_seqlens_q),
           "sharded_cu_seqlens_kv": _i32(info.sharded_cu_seqlens_kv),
           "sharded_cu_seqlens_q_padded": _i32(info.sharded_cu_seqlens_q_padded),
           "cp_group": info.cp_group, "cp_index": info.cp_index, "sp_kind": info.sp_kind,
           "op": info.op, "backward": info.backward, "barrier": info.barrier,
           "it": first.it, "step": first.step, "steps": first.steps, "last": info.last,
           "loss_tokens": first.loss_tokens, "loss_scale": info.loss_scale,
           "active": info.op != "idle", "keys": [k for k, _, _ in real]}
    if with_labels:     # PackedDataset(labels=True), or no token at all
        out["labels"] = torch.cat(labs) if labs else empty
    return out


def packed_seq_params_kwargs(mb, max_seqlen: Optional[int] = None, device=None
                             ) -> Dict[str, Any]:
    """Keyword arguments of megatron.core.packed_seq_params.PackedSeqParams for one
    micro-batch (qkv_format "thd"):

        PackedSeqParams(**packed_seq_params_kwargs(mb, device="cuda"))

    mb: a MicroBatch (its cu_seqlens_q and cu_seqlens_kv, the keys of earlier slices
    included; under context parallelism the sharded segments' global layout, with
    cu_seqlens_q_padded for the ring's 2*cp padding), or a cu_seqlens sequence/tensor with
    max_seqlen (a pack of whole samples: kv = q).  Refused with PlanError: a pack mixing
    CP-local and sharded segments on a CP group (two attention calls, not one
    PackedSeqParams: use MicroBatch.shard()), and a sharded slice of a sample (THD context
    parallelism takes no keys of earlier slices)."""
    if not isinstance(mb, MicroBatch):
        if max_seqlen is None:
            raise TypeError("packed_seq_params_kwargs(cu_seqlens, max_seqlen): max_seqlen "
                            "is required with a cu_seqlens argument")
        cu = torch.as_tensor(list(mb) if not torch.is_tensor(mb) else mb,
                             dtype=torch.int32, device=device)
        return {"cu_seqlens_q": cu, "cu_seqlens_kv": cu, "max_seqlen_q": int(max_seqlen),
                "max_seqlen_kv": int(max_seqlen), "qkv_format": "thd"}
    sh = mb.shard()
    kw: Dict[str, Any] = {"qkv_format": "thd"}
    if sh.size == 1:
        kw.update(cu_seqlens_q=_i32(sh.cu_seqlens_q, device),
                  cu_seqlens_kv=_i32(sh.cu_seqlens_kv, device),
                  max_seqlen_q=sh.max_seqlen_q, max_seqlen_kv=sh.max_seqlen_kv)
        return kw
    if any(c != -1 for c in mb.cps):
        raise PlanError(f"micro-batch {mb.index}: CP-local segments beside sharded ones on a "
                        f"CP group of {sh.size}: one PackedSeqParams cannot describe them "
                        "(run the local ones apart: MicroBatch.shard())")
    sliced = [] if mb.split else [j for j, o in enumerate(mb.offsets) if o > 0]
    if sliced:
        raise PlanError(f"micro-batch {mb.index}: segment {sliced[0]} continues sample "
                        f"{mb.ids[sliced[0]]!r} under context parallelism: THD attention "
                        "with CP takes no keys of earlier slices")
    q = _i32(sh.sharded_cu_seqlens_q, device)
    qp = _i32(sh.sharded_cu_seqlens_q_padded, device)
    cup = sh.sharded_cu_seqlens_q_padded
    longest = max((b - a for a, b in zip(cup, cup[1:])), default=0)
    kw.update(cu_seqlens_q=q, cu_seqlens_kv=q, cu_seqlens_q_padded=qp, cu_seqlens_kv_padded=qp,
              max_seqlen_q=longest, max_seqlen_kv=longest)
    return kw
