"""One GPU's part of a plan: for every iteration, whether it takes part, its micro-batches
with cu_seqlens, the loss normaliser, its groups and coordinates.

Placement (man page, "gpus"): the GPU at index k = t + tp·(c + sp·p) of a rank has
tensor coordinate t, sequence/context-parallel coordinate c and pipeline stage p.  A rank
without "gpus" is placed in Megatron's order (t + tp·(c + sp·(d + D·p)) for the rank at
position d of D) when every rank of the iteration has the same tp, sp and pp, else in
consecutive blocks in rank order -- the rule of lib/plan/plan.c, so every process of a job
computes the same map.
"""
import os
from array import array
from typing import Callable, Dict, Iterator, List, Optional, Sequence, Tuple

from . import contract
from .plan import Plan
from .stream import PlanError

# (dataset index, offset, length, cp) of a segment
SegmentTuple = Tuple[object, int, int, int]


def rank_gpus(iteration) -> List[List[int]]:
    """The global GPUs of every rank of an iteration, in coordinate order."""
    ranks = iteration.ranks
    shape = {(r.tp, r.sp, r.pp) for r in ranks}
    uniform = len(shape) == 1
    out, base, nr = [], 0, len(ranks)
    for d, r in enumerate(ranks):
        n = r.size()
        if r.gpus is not None:
            out.append(list(r.gpus))
        elif uniform:
            inner = r.tp * r.sp
            out.append([k % inner + inner * (d + nr * (k // inner)) for k in range(n)])
        else:
            out.append(list(range(base, base + n)))
        base += n
    return out


def _cu_seqlens(lengths: Sequence[int]) -> array:
    cu = array("i", [0])
    acc = 0
    for n in lengths:
        acc += n
        if acc > (1 << 31) - 1:   # FlashAttention's cu_seqlens are int32
            raise PlanError(f"a micro-batch's keys run past 2^31 - 1 tokens ({acc})")
        cu.append(acc)
    return cu


class MicroBatch:
    """One micro-batch on one GPU.

    ids, offsets, lengths, cps: per segment (cp -1 = sharded over the CP group, else the
    CP index that alone computes it); cu_seqlens (= cu_seqlens_q): array('i') (int32) of
    the segment lengths, starting at 0; cu_seqlens_kv: of offset + length, the keys of
    each segment including its sample's earlier tokens (vlplan.contract), of length alone
    in a plan of independent pieces (split: plan_pieces); max_seqlen,
    max_seqlen_kv: the longest of each; indices: dataset indices from the id hook;
    cp_group / cp_index: the GPUs running it together with context parallelism (for a
    shared pack, the merged group of all its members) and this GPU's place in it;
    sp_kind: how sharded segments are split ("ring" or "ulysses").  For the whole pack,
    not this GPU's part of it: shard() says which tokens this GPU computes."""
    __slots__ = ("index", "ids", "offsets", "lengths", "cps", "cu_seqlens", "max_seqlen",
                 "cu_seqlens_kv", "max_seqlen_kv", "tokens", "cap", "indices", "shared",
                 "cp_group", "cp_index", "sp_kind", "split", "pack")

    def __init__(self, index: int, pack, id_to_index: Callable, cp_group: List[int],
                 cp_index: int, sp_kind: str = "ulysses", split: bool = False):
        segs = pack.segs
        self.index = index
        self.ids = [s.id for s in segs]
        self.offsets = [s.offset for s in segs]
        self.lengths = [s.length for s in segs]
        self.cps = [s.cp for s in segs]
        self.cu_seqlens = _cu_seqlens(self.lengths)
        self.max_seqlen = max(self.lengths, default=0)
        # a piece (split) attends to itself only; a slice also to its sample's earlier tokens
        kv = [n + (0 if split else o) for o, n in zip(self.offsets, self.lengths)]
        self.cu_seqlens_kv = _cu_seqlens(kv)
        self.max_seqlen_kv = max(kv, default=0)
        self.tokens, self.cap, self.shared = pack.tokens, pack.cap, pack.shared
        self.indices = [id_to_index(i) for i in self.ids]
        self.cp_group, self.cp_index = cp_group, cp_index
        self.sp_kind = sp_kind
        self.split = split
        self.pack = pack

    @property
    def cu_seqlens_q(self) -> array:
        return self.cu_seqlens

    @property
    def barrier(self) -> bool:
        """A shared pack without segments: a barrier over the GPUs of cp_group."""
        return self.shared is not None and not self.ids

    def shard(self, cp_index: Optional[int] = None) -> "contract.Shard":
        """The tokens this GPU (or CP member cp_index) computes: vlplan.contract.shard."""
        c = self.cp_index if cp_index is None else cp_index
        return contract.shard(self.offsets, self.lengths, self.cps, len(self.cp_group), c,
                              self.sp_kind, self.split)

    @property
    def sliced(self) -> bool:
        """Whether a segment continues a sample (offset > 0): the trainer must keep the
        keys and values of that sample's earlier tokens."""
        return not self.split and any(o > 0 for o in self.offsets)

    def segments(self) -> List[SegmentTuple]:
        """(dataset index, offset, length, cp) of every segment."""
        return list(zip(self.indices, self.offsets, self.lengths, self.cps))

    def local_segments(self, cp_index: Optional[int] = None) -> List[SegmentTuple]:
        """The segments this GPU computes: sharded ones and those placed on its CP index."""
        c = self.cp_index if cp_index is None else cp_index
        return [s for s in self.segments() if s[3] in (-1, c)]


class IterationView:
    """One iteration as one GPU sees it.

    Every GPU gets one IterationView per iteration, taking part or not, so every process
    runs the same number of optimizer steps.  ``active`` False: the GPU is in no rank of
    this iteration -- it runs no micro-batch but must still join the iteration's gradient
    synchronisation (with zero gradients) and optimizer step.  A rank may also hold no
    micro-batch (``steps`` 0): the same holds for its GPUs."""

    def __init__(self, it, gpu: int, sp_kind: str = "ulysses", split: bool = False):
        self.it, self.epoch = it.it, it.epoch
        self.tokens, self.loss_tokens, self.samples = it.tokens, it.loss_tokens, it.samples
        self.candidate = it.candidate
        self.gpu = gpu
        self.sp_kind = sp_kind
        self.split = split   # the plan's segments are independent pieces (plan_pieces)
        self.active = False
        self.micro_batches: List[MicroBatch] = []
        self.bwd: List[MicroBatch] = []
        self.dp = self.rank_index = self.group = self.k = None
        self.schedule: Optional[List[Tuple[str, int]]] = None
        self.tp = self.pp = self.sp = 1
        self.ckpt_layers = 0
        self.tp_rank = self.pp_rank = self.cp_index = 0
        self.rank_gpus: List[int] = []
        self.cp_group, self.tp_group, self.pp_group = [gpu], [gpu], [gpu]

    @property
    def steps(self) -> int:
        """Forward micro-batches this GPU runs (its collective steps within the rank)."""
        return len(self.micro_batches)

    @property
    def loss_scale(self) -> float:
        """1 / loss_tokens, the factor of the summed per-token loss; 0.0 when no token of
        the iteration carries loss (every loss term is then 0: the gradient is zero, not
        the NaN a division by 0 would spread to every GPU)."""
        return 1.0 / self.loss_tokens if self.loss_tokens else 0.0

    def ops(self) -> List["contract.Op"]:
        """This GPU's operations in order (vlplan.contract): the rank's "schedule", else
        F i, B i for each micro-batch (all forwards, then the backward packs, when the
        rank has "bwd" packs and no schedule)."""
        return contract.schedule(len(self.micro_batches), len(self.bwd), self.schedule)

    def backward_packs(self) -> List[MicroBatch]:
        """The packs that ["B", j] names: "bwd" when the rank has them, else its
        micro-batches."""
        return self.bwd if self.bwd else self.micro_batches

    def check(self) -> None:
        """Refuse (PlanError) an order the contract cannot execute (contract.check_rank):
        a slice whose earlier tokens were not forwarded before it by the same GPUs, a
        backward before that of its sample's later tokens, a backward of activations not
        there."""
        if not self.active:
            return
        contract.check_rank([m.pack for m in self.micro_batches],
                            [m.pack for m in self.bwd], self.ops(),
                            lambda pack: pack.shared,
                            f"iteration {self.it}, dp {self.dp}", self.split)

    def __repr__(self) -> str:
        if not self.active:
            return f"<iteration {self.it}: GPU {self.gpu} not taking part>"
        return (f"<iteration {self.it}: GPU {self.gpu} dp {self.dp} tp {self.tp_rank}/{self.tp}"
                f" cp {self.cp_index}/{self.sp} pp {self.pp_rank}/{self.pp}, "
                f"{self.steps} micro-batches, loss_tokens {self.loss_tokens}>")


def _env_int(name: str) -> int:
    v = os.environ.get(name)
    if v is None:
        raise PlanError(f"{name} is not set: pass rank= and world_size= or run under a "
                        "launcher that sets RANK and WORLD_SIZE (torchrun)")
    try:
        return int(v)
    except ValueError:
        raise PlanError(f"{name}={v!r} is not an integer") from None


def _default_index(i):
    return i


def plan_pieces(plan: Plan) -> bool:
    """Whether the plan's segments are independent pieces (vlplan.contract): pack under
    training.oversize=split, the only strategy that splits -- as `vlplan verify` reads the
    same plan (the registry's slicing of pack under that config)."""
    cfg = plan.header.get("config") or {}
    return plan.header.get("strategy") == "pack" and \
        (cfg.get("training") or {}).get("oversize") == "split"


def plan_sp_kind(plan: Plan) -> str:
    """How the plan's sharded segments are split: its config's training.sp_kind, else
    "ulysses" (the configuration's default)."""
    cfg = plan.header.get("config") or {}
    kind = (cfg.get("training") or {}).get("sp_kind", "ulysses")
    if kind not in contract.SP_KINDS:
        raise PlanError(f"{plan.name}: training.sp_kind {kind!r}, expected one of "
                        f"{', '.join(contract.SP_KINDS)}")
    return kind


class GpuView:
    """Every iteration of a plan as GPU ``rank`` of ``world_size`` sees it.

    plan: a Plan, a path (validated whole before the first iteration) or a binary stream.
    rank, world_size: global rank and world size; default RANK and WORLD_SIZE.  A world
    size other than the GPUs the plan was made for (its header's cluster.gpus) is an
    error naming both; allow_larger_world=True accepts a larger world, whose extra GPUs
    are idle in every iteration.  start_iter: first iteration yielded (resume); at or past
    the end of the plan it is an error.  id_to_index: maps a manifest id to a dataset
    index (default: the id itself; vlplan.manifest_index(MANIFEST).__getitem__ maps ids to
    manifest positions)."""

    def __init__(self, plan, rank: Optional[int] = None, world_size: Optional[int] = None,
                 start_iter: int = 0, id_to_index: Optional[Callable] = None,
                 allow_larger_world: bool = False):
        self.plan = plan if isinstance(plan, Plan) else Plan(plan)
        self.rank = _env_int("RANK") if rank is None else int(rank)
        self.world_size = _env_int("WORLD_SIZE") if world_size is None else int(world_size)
        if not 0 <= self.rank < self.world_size:
            raise PlanError(f"rank {self.rank} outside 0..{self.world_size - 1}")
        want = self.plan.world_size
        if isinstance(want, int) and want != self.world_size and \
                not (allow_larger_world and self.world_size > want):
            raise PlanError(f"{self.plan.name}: the plan is for {want} GPUs (cluster.gpus), "
                            f"the world has {self.world_size}" +
                            ("" if self.world_size < want else
                             " (allow_larger_world=True leaves the extra GPUs idle)"))
        if start_iter < 0:
            raise PlanError(f"start_iter {start_iter} is negative")
        n = self._known_len()
        if start_iter and n is not None and start_iter >= n:
            raise PlanError(f"{self.plan.name}: start_iter {start_iter} is past the end: the "
                            f"plan has {n} iterations (0..{n - 1})")
        self.start_iter = start_iter
        self.id_to_index = id_to_index or _default_index
        self.sp_kind = plan_sp_kind(self.plan)
        self.split = plan_pieces(self.plan)

    def _known_len(self) -> Optional[int]:
        try:
            return len(self.plan)
        except TypeError:
            return None

    def __len__(self) -> int:
        return max(0, len(self.plan) - self.start_iter)

    def __iter__(self) -> Iterator[IterationView]:
        n = 0
        for it in self.plan.iterations(self.start_iter):
            n += 1
            yield self.view(it)
        if self.start_iter and not n:
            raise PlanError(f"{self.plan.name}: start_iter {self.start_iter} is past the end "
                            "of the plan")

    def process_groups(self) -> List[Tuple[int, ...]]:
        """Every group of two or more GPUs that some iteration runs collectives in -- the
        tensor, context (sequence) and pipeline groups of every rank and the merged CP
        group of every shared pack -- each as its sorted GPUs, sorted by size, then GPUs:
        every process creates them all, in this order (torch.distributed.new_group must
        be called by every process for every group, in one order).  torch numbers a
        group's members by global rank; a member's CP index is its place in cp_group,
        which the plan's "gpus" may order otherwise.  Reads the whole plan."""
        groups = set()
        for it in self.plan.iterations():
            placed = rank_gpus(it)
            by_dp = {q.dp: (q, g) for q, g in zip(it.ranks, placed)}
            for r, gpus in zip(it.ranks, placed):
                tp, sp, pp = r.tp, r.sp, r.pp
                for k in range(len(gpus)):
                    t, c, p = k % tp, (k // tp) % sp, k // (tp * sp)
                    groups.add(tuple(sorted(gpus[x + tp * (c + sp * p)] for x in range(tp))))
                    groups.add(tuple(sorted(gpus[t + tp * (x + sp * p)] for x in range(sp))))
                    groups.add(tuple(sorted(gpus[t + tp * (c + sp * x)] for x in range(pp))))
                for pack in list(r.mbs) + list(r.bwd):
                    if pack.shared is None:
                        continue
                    for t in range(tp):
                        for p in range(pp):
                            groups.add(tuple(sorted(
                                self._merged(it, by_dp, pack, t, p, tp, sp, pp))))
        return sorted((g for g in groups if len(g) > 1), key=lambda g: (len(g), g))

    def _placement(self, it):
        """(rank, its GPUs, this GPU's coordinate index) or (None, None, None)."""
        placed = rank_gpus(it)
        seen: Dict[int, int] = {}
        mine = (None, None, None)
        for r, gpus in zip(it.ranks, placed):
            for k, g in enumerate(gpus):
                if g >= self.world_size:
                    raise PlanError(f"{self.plan.name}:{it.line}: iteration {it.it}, rank "
                                    f"{r.index} runs on GPU {g}, but the world has "
                                    f"{self.world_size} GPUs")
                if g in seen:
                    raise PlanError(f"{self.plan.name}:{it.line}: iteration {it.it}: GPU {g} "
                                    f"is in ranks {seen[g]} and {r.index}")
                seen[g] = r.index
                if g == self.rank:
                    mine = (r, gpus, k)
        return mine + (placed,)

    def view(self, it) -> IterationView:
        """The IterationView of one Iteration for this GPU."""
        v = IterationView(it, self.rank, self.sp_kind, self.split)
        r, gpus, k, placed = self._placement(it)
        if r is None:
            return v
        tp, sp = r.tp, r.sp
        t, c, p = k % tp, (k // tp) % sp, k // (tp * sp)
        v.active = True
        v.dp, v.rank_index, v.group, v.k, v.schedule = r.dp, r.index, r.group, r.k, r.schedule
        v.tp, v.pp, v.sp, v.ckpt_layers = tp, r.pp, sp, r.ckpt_layers
        v.tp_rank, v.cp_index, v.pp_rank = t, c, p
        v.rank_gpus = gpus
        v.tp_group = [gpus[x + tp * (c + sp * p)] for x in range(tp)]
        v.cp_group = [gpus[t + tp * (x + sp * p)] for x in range(sp)]
        v.pp_group = [gpus[t + tp * (c + sp * x)] for x in range(r.pp)]
        by_dp = {q.dp: (q, g) for q, g in zip(it.ranks, placed)}
        v.micro_batches = [self._mb(m, pk, v, by_dp, t, c, p, it) for m, pk in enumerate(r.mbs)]
        v.bwd = [self._mb(m, pk, v, by_dp, t, c, p, it) for m, pk in enumerate(r.bwd)]
        return v

    def _merged(self, it, by_dp, pack, t, p, tp, sp, pp) -> List[int]:
        """The merged CP group of a shared pack for tensor coordinate t and stage p: the
        members in list order, each contributing its sp coordinates."""
        group = []
        for d in pack.shared:
            q, g = by_dp[d]
            if (q.tp, q.sp, q.pp) != (tp, sp, pp):
                raise PlanError(f"{self.plan.name}: iteration {it.it}: the pack shared by "
                                f"{list(pack.shared)} joins ranks of different tp/sp/pp")
            group += [g[t + q.tp * (x + q.sp * p)] for x in range(q.sp)]
        return group

    def _mb(self, m, pack, v, by_dp, t, c, p, it) -> MicroBatch:
        if pack.shared is None:
            return MicroBatch(m, pack, self.id_to_index, v.cp_group, v.cp_index, self.sp_kind,
                              self.split)
        # a shared pack runs with CP over its members: member i is CP rank i of the
        # merged group, each member contributing its own sp coordinates
        group = self._merged(it, by_dp, pack, t, p, v.tp, v.sp, v.pp)
        index = pack.shared.index(v.dp) * v.sp + c
        return MicroBatch(m, pack, self.id_to_index, group, index, self.sp_kind, self.split)


def manifest_index(path) -> Dict[object, int]:
    """{id: position} of a manifest (JSON Lines, plain or zstd): the dataset index of each
    sample when the dataset is in manifest order."""
    import json
    from .stream import byte_lines
    out = {}
    for n, raw in enumerate(byte_lines(path)):
        if not raw.strip():
            continue
        try:
            sid = json.loads(raw)["id"]
        except (ValueError, KeyError, TypeError):
            raise PlanError(f"{path}:{n + 1}: not a manifest record with an \"id\"") from None
        out[sid] = len(out)
    return out
