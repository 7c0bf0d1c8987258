"""PyTorch adapters: a batch sampler that drives a DataLoader from a plan, a dataset
wrapper and collate function for packed micro-batches, and Megatron-Core's
PackedSeqParams arguments.  Imports torch; the rest of vlplan does not.

    view = vlplan.GpuView("plan.jsonl")
    loader = DataLoader(PackedDataset(ds), batch_sampler=PlanBatchSampler(view),
                        collate_fn=collate_packed)
    for b in loader:            # one micro-batch; b["last"]: the iteration's last one
        ...

The sampler yields one batch per micro-batch of this GPU, and one empty batch for an
iteration it does not take part in, so every process steps its optimizer once per
iteration.  Each element is a PlanKey: the dataset index, the slice of the sample, and
the micro-batch's place in its iteration.
"""
from collections import namedtuple

import torch
from torch.utils.data import Dataset, Sampler

from .view import GpuView

# index: dataset index; offset, length: the slice of the sample; cp: -1 sharded, else the
# CP index computing it; it, step, steps: iteration, micro-batch number, micro-batches of
# this GPU in the iteration (0 when it takes no part); loss_tokens: the normaliser.
PlanKey = namedtuple("PlanKey", "index offset length cp it step steps loss_tokens")
# Placeholder element of a batch without samples (an idle iteration, an empty pack).
_IDLE = -1


class PlanBatchSampler(Sampler):
    """Batches of PlanKey, micro-batch after micro-batch, for one GPU.

    view: a GpuView (or a plan path, with rank/world_size/start_iter/id_to_index passed
    on).  Iterating again starts again at view.start_iter.  len(): batches yielded."""

    def __init__(self, view, **kwargs):
        self.view = view if isinstance(view, GpuView) else GpuView(view, **kwargs)
        self._len = None

    def __iter__(self):
        for it in self.view:
            if not it.active:
                yield [PlanKey(_IDLE, 0, 0, -1, it.it, 0, 0, it.loss_tokens)]
                continue
            n = it.steps
            if n == 0:   # in a rank, but with nothing to run: it still steps
                yield [PlanKey(_IDLE, 0, 0, -1, it.it, 0, 0, it.loss_tokens)]
                continue
            for mb in it.micro_batches:
                yield [PlanKey(i, o, ln, cp, it.it, mb.index, n, it.loss_tokens)
                       for i, o, ln, cp in mb.segments()] or \
                    [PlanKey(_IDLE, 0, 0, -1, it.it, mb.index, n, it.loss_tokens)]

    def __len__(self):
        if self._len is None:
            self._len = sum(max(1, it.steps) for it in self.view)
        return self._len


class PackedDataset(Dataset):
    """Wraps a dataset of token sequences (anything torch.as_tensor accepts) so that a
    PlanKey fetches the planned slice of its sample."""

    def __init__(self, base):
        self.base = base

    def __len__(self):
        return len(self.base)

    def __getitem__(self, key):
        if not isinstance(key, PlanKey):
            return self.base[key]
        if key.index == _IDLE:
            return key, torch.empty(0, dtype=torch.long)
        toks = torch.as_tensor(self.base[key.index])
        if key.offset + key.length > toks.numel():
            raise IndexError(f"sample {key.index} has {toks.numel()} tokens, the plan takes "
                             f"[{key.offset}, {key.offset + key.length})")
        return key, toks[key.offset:key.offset + key.length]


def collate_packed(items):
    """One packed micro-batch: tokens (1-D), position_ids, cu_seqlens (int32), max_seqlen,
    and the plan's bookkeeping: it, step, steps, last (the iteration's last micro-batch:
    step the optimizer after it), loss_tokens, active, keys."""
    keys = [k for k, _ in items]
    first = keys[0]
    active = first.steps > 0
    keys = [k for k in keys if k.index != _IDLE]
    seqs = [t for k, t in items if k.index != _IDLE]
    lengths = [t.numel() for t in seqs]
    cu = torch.zeros(len(seqs) + 1, dtype=torch.int32)
    if seqs:
        cu[1:] = torch.cumsum(torch.tensor(lengths, dtype=torch.int64), 0).to(torch.int32)
    tokens = torch.cat(seqs) if seqs else torch.empty(0, dtype=torch.long)
    pos = torch.cat([torch.arange(k.offset, k.offset + n) for k, n in zip(keys, lengths)]) \
        if seqs else torch.empty(0, dtype=torch.long)
    return {"tokens": tokens, "position_ids": pos, "cu_seqlens": cu,
            "max_seqlen": max(lengths, default=0), "it": first.it, "step": first.step,
            "steps": first.steps, "last": not active or first.step == first.steps - 1,
            "loss_tokens": first.loss_tokens, "active": active, "keys": keys}


def _int32(values, device):
    return torch.as_tensor(list(values) if not torch.is_tensor(values) else values,
                           dtype=torch.int32, device=device)


def packed_seq_params_kwargs(cu_seqlens, max_seqlen=None, device=None):
    """Keyword arguments of megatron.core.packed_seq_params.PackedSeqParams for one
    micro-batch.  Given a MicroBatch:

        PackedSeqParams(**packed_seq_params_kwargs(mb, device="cuda"))

    the queries are the micro-batch's tokens and the keys every token each segment attends
    to: a slice at offset o of its sample has o earlier keys, which the trainer keeps from
    the sample's earlier slices (man page, "Reading a plan in a training job"), so
    cu_seqlens_kv counts offset + length per segment.  Given cu_seqlens (an array, list or
    tensor) and max_seqlen, the micro-batch is taken to hold whole samples."""
    if hasattr(cu_seqlens, "offsets"):
        mb = cu_seqlens
        ends = [o + n for o, n in zip(mb.offsets, mb.lengths)]
        kv = [0]
        for e in ends:
            kv.append(kv[-1] + e)
        return {"cu_seqlens_q": _int32(mb.cu_seqlens, device), "cu_seqlens_kv": _int32(kv, device),
                "max_seqlen_q": int(mb.max_seqlen), "max_seqlen_kv": max(ends, default=0),
                "qkv_format": "thd"}
    if max_seqlen is None:
        raise TypeError("packed_seq_params_kwargs: give a MicroBatch, or cu_seqlens and "
                        "max_seqlen")
    cu = _int32(cu_seqlens, device)
    return {"cu_seqlens_q": cu, "cu_seqlens_kv": cu, "max_seqlen_q": int(max_seqlen),
            "max_seqlen_kv": int(max_seqlen), "qkv_format": "thd"}
