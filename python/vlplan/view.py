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
import warnings
from array import array

from .plan import Plan
from .stream import PlanError


def rank_gpus(iteration):
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


def _cu_seqlens(lengths):
    cu = array("i", [0])
    acc = 0
    for n in lengths:
        acc += n
        cu.append(acc)
    return cu


class MicroBatch:
    """One micro-batch on one GPU.

    ids, offsets, lengths, cps: per segment (cp -1 = sharded over the CP group, else the
    CP index that alone computes it); cu_seqlens: array('i') (int32), starting at 0;
    max_seqlen: the longest segment; indices: dataset indices from the id hook;
    cp_group / cp_index: the GPUs running it together with context parallelism (for a
    shared pack, the merged group of all its members) and this GPU's place in it."""
    __slots__ = ("index", "ids", "offsets", "lengths", "cps", "cu_seqlens", "max_seqlen",
                 "tokens", "cap", "indices", "shared", "cp_group", "cp_index")

    def __init__(self, index, pack, id_to_index, cp_group, cp_index):
        segs = pack.segs
        self.index = index
        self.ids = [s.id for s in segs]
        self.offsets = [s.offset for s in segs]
        self.lengths = [s.length for s in segs]
        self.cps = [s.cp for s in segs]
        self.cu_seqlens = _cu_seqlens(self.lengths)
        self.max_seqlen = max(self.lengths, default=0)
        self.tokens, self.cap, self.shared = pack.tokens, pack.cap, pack.shared
        self.indices = [id_to_index(i) for i in self.ids]
        self.cp_group, self.cp_index = cp_group, cp_index

    @property
    def sliced(self):
        """Whether a segment continues a sample (offset > 0): the trainer must keep the
        keys and values of that sample's earlier tokens."""
        return any(o > 0 for o in self.offsets)

    def segments(self):
        """(dataset index, offset, length, cp) of every segment."""
        return list(zip(self.indices, self.offsets, self.lengths, self.cps))

    def local_segments(self, cp_index=None):
        """The segments this GPU computes: sharded ones and those placed on its CP index."""
        c = self.cp_index if cp_index is None else cp_index
        return [s for s in self.segments() if s[3] in (-1, c)]


class IterationView:
    """One iteration as one GPU sees it.

    Every GPU gets one IterationView per iteration, taking part or not, so every process
    runs the same number of optimizer steps.  ``active`` False: the GPU is in no rank of
    this iteration -- it runs no micro-batch but must still join the iteration's gradient
    synchronisation (with zero gradients) and optimizer step."""

    def __init__(self, it, gpu):
        self.it, self.epoch = it.it, it.epoch
        self.tokens, self.loss_tokens, self.samples = it.tokens, it.loss_tokens, it.samples
        self.candidate = it.candidate
        self.gpu = gpu
        self.active = False
        self.micro_batches, self.bwd = [], []
        self.dp = self.rank_index = self.group = self.k = self.schedule = None
        self.tp = self.pp = self.sp = 1
        self.ckpt_layers = 0
        self.tp_rank = self.pp_rank = self.cp_index = 0
        self.rank_gpus, self.cp_group, self.tp_group, self.pp_group = [], [gpu], [gpu], [gpu]

    @property
    def steps(self):
        """Forward micro-batches this GPU runs (its collective steps within the rank)."""
        return len(self.micro_batches)

    def __repr__(self):
        if not self.active:
            return f"<iteration {self.it}: GPU {self.gpu} not taking part>"
        return (f"<iteration {self.it}: GPU {self.gpu} dp {self.dp} tp {self.tp_rank}/{self.tp}"
                f" cp {self.cp_index}/{self.sp} pp {self.pp_rank}/{self.pp}, "
                f"{self.steps} micro-batches, loss_tokens {self.loss_tokens}>")


def _env_int(name):
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


class GpuView:
    """Every iteration of a plan as GPU ``rank`` of ``world_size`` sees it.

    plan: a Plan, a path (validated whole before the first iteration) or a binary stream.
    rank, world_size: global rank and world size; default RANK and WORLD_SIZE.
    start_iter: first iteration yielded (resume).  id_to_index: maps a manifest id to a
    dataset index (default: the id itself; vlplan.manifest_index(MANIFEST).__getitem__
    maps ids to manifest positions)."""

    def __init__(self, plan, rank=None, world_size=None, start_iter=0, id_to_index=None,
                 allow_larger_world=False):
        self.plan = plan if isinstance(plan, Plan) else Plan(plan)
        self.rank = _env_int("RANK") if rank is None else int(rank)
        self.world_size = _env_int("WORLD_SIZE") if world_size is None else int(world_size)
        if not 0 <= self.rank < self.world_size:
            raise PlanError(f"rank {self.rank} outside 0..{self.world_size - 1}")
        planned = self.plan.world_size
        # a world of another size would leave GPUs idle all epoch, or ask for GPUs that
        # do not exist: say so before the first step (a larger world only on request)
        if planned is not None and self.world_size != planned and \
                not (allow_larger_world and self.world_size > planned):
            raise PlanError(f"{self.plan.name}: the plan is for {planned} GPUs, the world has "
                            f"{self.world_size} (WORLD_SIZE); plan for this world, or pass "
                            "allow_larger_world=True to leave the extra GPUs idle")
        if start_iter < 0:
            raise PlanError(f"start_iter {start_iter} is negative")
        total = self._known_length()
        if total is not None and start_iter >= total > 0:
            raise PlanError(f"{self.plan.name}: start_iter {start_iter} is past the plan's "
                            f"last iteration ({total - 1})")
        self.start_iter = start_iter
        self.id_to_index = id_to_index or _default_index
        self._warned_loss = False

    def _known_length(self):
        try:
            return len(self.plan)
        except TypeError:   # a stream whose header does not say
            return None

    def __len__(self):
        return max(0, len(self.plan) - self.start_iter)

    def __iter__(self):
        for it in self.plan.iterations(self.start_iter):
            yield self.view(it)

    def _placement(self, it):
        """(rank, its GPUs, this GPU's coordinate index) or (None, None, None)."""
        placed = rank_gpus(it)
        seen = {}
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

    def view(self, it):
        """The IterationView of one Iteration for this GPU."""
        v = IterationView(it, self.rank)
        if v.loss_tokens == 0 and v.tokens > 0:
            # every token of the iteration was truncated away from its loss: the summed
            # loss is 0, so dividing by 1 keeps it 0 instead of NaN on every GPU
            if not self._warned_loss:
                warnings.warn(f"{self.plan.name}: iteration {v.it} has no loss tokens (all "
                              "cut by truncation?); its normaliser is taken as 1", stacklevel=2)
                self._warned_loss = True
            v.loss_tokens = 1
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
        v.micro_batches = [self._mb(m, pk, v, by_dp, t, c, p) for m, pk in enumerate(r.mbs)]
        v.bwd = [self._mb(m, pk, v, by_dp, t, c, p) for m, pk in enumerate(r.bwd)]
        return v

    def process_groups(self):
        """Every process group of the plan, in the one order every process must create
        them (torch.distributed.new_group is collective): ("tp" | "cp" | "pp", GPUs)
        tuples, each once, sorted.  Reads the plan once more."""
        groups = set()
        for it in self.plan.iterations():
            for r, gpus in zip(it.ranks, rank_gpus(it)):
                tp, sp, pp = r.tp, r.sp, r.pp
                for k in range(len(gpus)):
                    t, c, p = k % tp, (k // tp) % sp, k // (tp * sp)
                    if tp > 1:
                        groups.add(("tp", tuple(gpus[x + tp * (c + sp * p)] for x in range(tp))))
                    if sp > 1:
                        groups.add(("cp", tuple(gpus[t + tp * (x + sp * p)] for x in range(sp))))
                    if pp > 1:
                        groups.add(("pp", tuple(gpus[t + tp * (c + sp * x)] for x in range(pp))))
        return sorted(groups)

    def _mb(self, m, pack, v, by_dp, t, c, p):
        if pack.shared is None:
            return MicroBatch(m, pack, self.id_to_index, v.cp_group, v.cp_index)
        # a shared pack runs with CP over its members: member i is CP rank i of the
        # merged group, each member contributing its own sp coordinates
        group = []
        for d in pack.shared:
            q, g = by_dp[d]
            if (q.tp, q.sp, q.pp) != (v.tp, v.sp, v.pp):
                raise PlanError(f"{self.plan.name}: iteration {v.it}: the pack shared by "
                                f"{list(pack.shared)} joins ranks of different tp/sp/pp")
            group += [g[t + q.tp * (x + q.sp * p)] for x in range(q.sp)]
        index = pack.shared.index(v.dp) * v.sp + c
        return MicroBatch(m, pack, self.id_to_index, group, index)


def manifest_index(path):
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
