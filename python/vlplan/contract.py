"""The execution contract: what a trainer runs for every element of a plan (pure Python).

The man page ("Executing a plan") states the same rules; tests/test_equivalence.py runs
them on a small model in a gloo world and checks the gradient against unpacked training.

Keys and values of slices.  A segment [id, offset, length] with offset > 0 continues its
sample: its queries are tokens [offset, offset + length) and its keys and values are
tokens [0, offset + length) of the sample (causal, aligned at the end: FlashAttention's
varlen convention when seqlen_k > seqlen_q).  So per micro-batch cu_seqlens_q is the
cumulative segment lengths and cu_seqlens_kv the cumulative offset + length.  The keys and
values of a sample's tokens are kept from the forward that computes them until every later
token of the sample has run its backward (their gradients flow back into them), and freed
after the backward of the sample's first tokens.  Earlier tokens must have been forwarded
earlier in the same iteration by the same GPUs in the same placement (CP-local on the
same coordinate, or sharded over the same group); check_iteration refuses a plan that
does otherwise.

Pieces.  A pack plan under training.oversize=split (the only strategy that splits)
cuts a sample over training.max_seq_len into independent pieces [kC, kC + C): a piece
does not attend to the pieces before it, so a segment of such a plan is a sequence of
its own whatever its offset -- its keys and values are its own tokens only, and no
order among the pieces of a sample is required (plan_pieces in vlplan.view says when).

Order.  A rank runs its "schedule" (["F", i] forward of micro-batch i, ["R", i] its
recompute-forward, ["B", j] backward of backward pack j, or of micro-batch j without
"bwd"); without one, F i then B i for each micro-batch in order (a plan with "bwd" and no
schedule: every forward, then every backward pack in order).  A micro-batch with an R
keeps only its keys and values after F; R rebuilds its activations.  A backward pack may
hold tokens of several forward packs (SlimPack's asymmetric partition): its backward is
that of the losses of its tokens plus the key/value gradients already accumulated for
them; it may run only when every later token of each of its samples has run its backward
(LIFO within a sample) and after the forward (or recompute) of the packs holding its
tokens.

Context parallelism (sp > 1, and shared packs, whose members form one CP group in list
order).  A segment with cp = c is computed whole by the group's member c (CP-local,
Skrull); cp = -1 is sharded over the group by the plan's sp_kind (header config
training.sp_kind, "ulysses" when absent):
  ring     each sequence padded to a multiple of 2*cp and cut in 2*cp equal chunks; member
           c holds chunks c and 2*cp - 1 - c (Megatron's load-balanced THD layout);
  ulysses  the sharded segments, concatenated in pack order and padded at the end to a
           multiple of cp, cut in cp equal contiguous parts, member c holding part c.
Every member's queries attend to the keys and values of the whole sequence (the ring or
all-to-all exchange); each token's loss is counted by the one member holding it, padding
carries none.  A local segment's keys never leave its member.  tp and pp do not change
which tokens a rank runs: every tensor-parallel member holds the same tokens, and the loss
is taken on the last stage.  A pack with no segments shared by ranks is a barrier over
its members.
"""
from typing import Dict, List, NamedTuple, Optional, Sequence, Tuple

from .stream import PlanError

SP_KINDS = ("ulysses", "ring")


class Piece(NamedTuple):
    """Tokens [start, stop) of segment `seg` of a pack (positions in the sample), then
    `pad` padding tokens; pieces are listed in this GPU's token order."""
    seg: int
    start: int
    stop: int
    pad: int


class Shard:
    """What one GPU computes of one pack.

    local: indices of the segments it computes whole (CP-local on its coordinate, or every
    segment when it runs the pack alone); sharded: indices of the segments sharded over
    its CP group; pieces: its tokens in order, the local segments first, then its share of
    the sharded ones; cu_seqlens_q / cu_seqlens_kv (and max_seqlen_q / _kv) of the local
    segments; sharded_cu_seqlens_q / _kv / _q_padded: of the sharded segments over the
    whole group (what THD kernels with CP take: each member's tokens are picked from them
    by the layout)."""
    __slots__ = ("size", "index", "sp_kind", "local", "sharded", "pieces", "cu_seqlens_q",
                 "cu_seqlens_kv", "max_seqlen_q", "max_seqlen_kv", "sharded_cu_seqlens_q",
                 "sharded_cu_seqlens_kv", "sharded_cu_seqlens_q_padded")

    def __init__(self, size: int, index: int, sp_kind: str):
        self.size, self.index, self.sp_kind = size, index, sp_kind

    @property
    def tokens(self) -> int:
        """Token slots this GPU holds, padding included."""
        return sum(p.stop - p.start + p.pad for p in self.pieces)

    def positions(self) -> List[int]:
        """Position in its sample of every token slot (-1 for padding)."""
        out: List[int] = []
        for p in self.pieces:
            out.extend(range(p.start, p.stop))
            out.extend([-1] * p.pad)
        return out


def _cumsum(values: Sequence[int]) -> List[int]:
    out, acc = [0], 0
    for v in values:
        acc += v
        out.append(acc)
    return out


def _padded(n: int, mult: int) -> int:
    return -(-n // mult) * mult


def shard(offsets: Sequence[int], lengths: Sequence[int], cps: Sequence[int], size: int,
          index: int, sp_kind: str = "ulysses", split: bool = False) -> Shard:
    """The Shard of CP member `index` of `size` for a pack with these segments (split:
    a plan of independent pieces, each segment a sequence of its own: module doc)."""
    if sp_kind not in SP_KINDS:
        raise PlanError(f"sp_kind {sp_kind!r}: expected one of {', '.join(SP_KINDS)}")
    if not 0 <= index < size:
        raise PlanError(f"CP index {index} outside 0..{size - 1}")
    s = Shard(size, index, sp_kind)
    n = len(lengths)
    for j, c in enumerate(cps):
        if c >= size:
            raise PlanError(f"segment {j} is placed on CP coordinate {c} of a group of {size}")
    if size == 1:
        s.local, s.sharded = list(range(n)), []
    else:
        s.local = [j for j in range(n) if cps[j] == index]
        s.sharded = [j for j in range(n) if cps[j] == -1]
    pieces = [Piece(j, offsets[j], offsets[j] + lengths[j], 0) for j in s.local]
    if s.sharded and sp_kind == "ring":
        for j in s.sharded:
            chunk = _padded(lengths[j], 2 * size) // (2 * size)
            for ci in (index, 2 * size - 1 - index):
                a, b = ci * chunk, (ci + 1) * chunk
                ra, rb = min(a, lengths[j]), min(b, lengths[j])
                if b > a:
                    pieces.append(Piece(j, offsets[j] + ra, offsets[j] + rb,
                                        (b - a) - (rb - ra)))
    elif s.sharded:
        total = sum(lengths[j] for j in s.sharded)
        part = _padded(total, size) // size
        lo, hi = index * part, (index + 1) * part
        at = 0
        for j in s.sharded:
            a, b = max(lo, at), min(hi, at + lengths[j])
            if b > a:
                pieces.append(Piece(j, offsets[j] + a - at, offsets[j] + b - at, 0))
            at += lengths[j]
        pad = hi - max(lo, min(hi, total))
        if pad:
            if pieces and pieces[-1].seg in s.sharded:
                pieces[-1] = pieces[-1]._replace(pad=pad)
            else:
                pieces.append(Piece(s.sharded[-1], offsets[s.sharded[-1]] +
                                    lengths[s.sharded[-1]], offsets[s.sharded[-1]] +
                                    lengths[s.sharded[-1]], pad))
    s.pieces = pieces
    kv = [lengths[j] + (0 if split else offsets[j]) for j in range(n)]
    s.cu_seqlens_q = _cumsum([lengths[j] for j in s.local])
    s.cu_seqlens_kv = _cumsum([kv[j] for j in s.local])
    s.max_seqlen_q = max((lengths[j] for j in s.local), default=0)
    s.max_seqlen_kv = max((kv[j] for j in s.local), default=0)
    s.sharded_cu_seqlens_q = _cumsum([lengths[j] for j in s.sharded])
    s.sharded_cu_seqlens_kv = _cumsum([kv[j] for j in s.sharded])
    mult = 2 * size if sp_kind == "ring" else 1
    s.sharded_cu_seqlens_q_padded = _cumsum([_padded(lengths[j], mult) for j in s.sharded])
    return s


class Op(NamedTuple):
    """One operation of a rank's order: kind "F", "R" or "B", and the index of the
    micro-batch (F, R) or backward pack (B)."""
    kind: str
    index: int


def schedule(n_mbs: int, n_bwd: int, explicit: Optional[Sequence[Tuple[str, int]]]) -> List[Op]:
    """The rank's operations: its "schedule", else the default order (module doc)."""
    if explicit is not None:
        return [Op(k, i) for k, i in explicit]
    if n_bwd:
        return [Op("F", i) for i in range(n_mbs)] + [Op("B", j) for j in range(n_bwd)]
    out: List[Op] = []
    for i in range(n_mbs):
        out += [Op("F", i), Op("B", i)]
    return out


# A run of one sample's tokens: (sample id, start, stop).
Run = Tuple[object, int, int]


def _runs(pack) -> List[Tuple[int, Run]]:
    return [(j, (s.id, s.offset, s.offset + s.length)) for j, s in enumerate(pack.segs)]


def check_rank(mbs, bwd, sched: Sequence[Op], group_of, where: str,
               split: bool = False) -> None:
    """Refuse (PlanError naming `where`) a rank's order that the contract cannot execute.

    mbs, bwd: the rank's packs (records.Pack); sched: its operations; group_of(pack) -> a
    hashable name of the GPUs that run the pack.  Checks: every micro-batch forwarded once,
    recomputed at most once after its forward; every backward pack run once, after the
    forward or recompute of every pack holding its tokens; each segment's earlier tokens
    forwarded before it in the same placement; each backward after the backward of every
    later token of its samples -- the last two not for a plan of independent pieces
    (split: module doc)."""
    backs = bwd if bwd else mbs
    fwd_done: Dict[int, bool] = {}
    recomputed = {op.index for op in sched if op.kind == "R"}
    # sample id -> list of (start, stop, placement) forwarded so far
    fwd_runs: Dict[object, List[Tuple[int, int, object]]] = {}
    # sample id -> list of (start, stop) backwarded so far
    bwd_runs: Dict[object, List[Tuple[int, int]]] = {}
    # which forward pack holds each token run, for the backward check
    holder: Dict[object, List[Tuple[int, int, int]]] = {}
    alive = set()
    done_b = set()
    for pos, op in enumerate(sched):
        w = f"{where}: operation {pos} ({op.kind} {op.index})"
        if op.kind == "F":
            if op.index in fwd_done:
                raise PlanError(f"{w}: micro-batch {op.index} forwarded twice")
            fwd_done[op.index] = True
            pack = mbs[op.index]
            grp = group_of(pack)
            for j, (sid, a, b) in _runs(pack):
                place = (grp, pack.segs[j].cp)
                gone = [(x, y) for x, y in bwd_runs.get(sid, []) if x < a and not split]
                if gone:
                    raise PlanError(f"{w}: segment {j} continues sample {sid!r} at token {a}, "
                                    f"but the backward of its tokens {gone[0]} already ran: "
                                    "the gradient of their keys and values would be lost")
                have = sorted((x, y) for x, y, p in fwd_runs.get(sid, []) if p == place)
                at = 0
                for x, y in have:
                    if x == at:
                        at = y
                if a > 0 and at != a and not split:
                    raise PlanError(f"{w}: segment {j} continues sample {sid!r} at token {a}, "
                                    f"but its tokens [{at}, {a}) were not forwarded before "
                                    "it by the same GPUs in the same placement: their keys "
                                    "and values are not there")
                twice = [(x, y) for x, y, _ in fwd_runs.get(sid, []) if x < b and a < y]
                if twice:
                    raise PlanError(f"{w}: segment {j}: tokens [{max(a, twice[0][0])}, "
                                    f"{min(b, twice[0][1])}) of sample {sid!r} forwarded "
                                    "twice (in two packs, or on two CP coordinates)")
                fwd_runs.setdefault(sid, []).append((a, b, place))
                holder.setdefault(sid, []).append((a, b, op.index))
            if op.index not in recomputed:
                alive.add(op.index)
        elif op.kind == "R":
            if op.index not in fwd_done:
                raise PlanError(f"{w}: recompute of micro-batch {op.index} before its forward")
            if op.index in alive:
                raise PlanError(f"{w}: micro-batch {op.index} recomputed twice")
            alive.add(op.index)
        else:
            if op.index in done_b:
                raise PlanError(f"{w}: backward pack {op.index} run twice")
            done_b.add(op.index)
            for j, (sid, a, b) in _runs(backs[op.index]):
                for x, y, i in holder.get(sid, []):
                    if x < b and a < y and i not in alive:
                        raise PlanError(f"{w}: tokens [{max(a, x)}, {min(b, y)}) of sample "
                                        f"{sid!r} are in micro-batch {i}, whose activations "
                                        "are not there (not forwarded, or awaiting its "
                                        "recompute)")
                covered = sum(min(b, y) - max(a, x) for x, y, _ in holder.get(sid, [])
                              if x < b and a < y)
                if covered != b - a:
                    raise PlanError(f"{w}: tokens [{a}, {b}) of sample {sid!r} were not all "
                                    "forwarded before their backward")
                later = max((y for x, y, _ in fwd_runs.get(sid, [])), default=b)
                done = sorted(bwd_runs.get(sid, []), reverse=True)
                top = later
                for x, y in done:
                    if y == top:
                        top = x
                if top != b and not split:
                    raise PlanError(f"{w}: backward of tokens [{a}, {b}) of sample {sid!r} "
                                    f"before that of its later tokens [{b}, {top}), whose "
                                    "key/value gradients it needs")
                bwd_runs.setdefault(sid, []).append((a, b))
    missing = [i for i in range(len(mbs)) if i not in fwd_done]
    if missing:
        raise PlanError(f"{where}: micro-batches {missing} never forwarded")
    missing = [j for j in range(len(backs)) if j not in done_b]
    if missing:
        raise PlanError(f"{where}: backward packs {missing} never run")
