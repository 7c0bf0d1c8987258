"""Structure of the plan records (docs/decisions.md §7, man page PLAN FILE): each record is checked
before anyone sees it, and turned into plain objects.  The rules follow the C reader's:
only the structure is required, every redundant field is checked when present."""
from collections import namedtuple

from .contract import schedule
from .stream import PlanError

SCHEMA = "vlplan.plan/1"

# One slice [offset, offset + length) of sample `id`; cp = -1 when sharded over the
# rank's sp group, else the sp coordinate that alone computes it (Skrull).
Segment = namedtuple("Segment", "id offset length cp")


class Pack:
    """A micro-batch as the plan states it."""
    __slots__ = ("segs", "tokens", "cap", "shared")

    def __init__(self, segs, tokens, cap, shared):
        self.segs, self.tokens, self.cap, self.shared = segs, tokens, cap, shared


class Rank:
    """A data-parallel replica of one iteration: tp·sp·pp GPUs running its packs."""
    __slots__ = ("index", "dp", "tp", "pp", "sp", "ckpt_layers", "gpus", "group", "k",
                 "mbs", "bwd", "schedule")

    def size(self):
        return self.tp * self.sp * self.pp


class Iteration:
    __slots__ = ("it", "epoch", "tokens", "loss_tokens", "samples", "candidate", "ranks",
                 "line")


def _is_int(v):
    return type(v) is int


class Where:
    """Names the element an error is about: 'FILE:LINE: iteration 3, rank 1: '."""

    def __init__(self, name, line):
        self.name, self.line, self.parts = name, line, []

    def fail(self, msg):
        where = ", ".join(self.parts)
        raise PlanError(f"{self.name}:{self.line}: {where + ': ' if where else ''}{msg}")


# The C types of the integer fields (lib/plan/planio_fields.c): a value outside its type is
# a structural error there, so here too (the ranges within are verify's).
_I32, _U32 = (1 << 31) - 1, (1 << 32) - 1
C_MAX = {"dp": _I32, "tp": _I32, "pp": _I32, "sp": _I32, "ckpt_layers": _I32, "group": _I32,
         "candidate": _I32, "k": _U32, "cap": _U32, "epoch": _U32}


def _int_field(obj, key, w, lo, default, hi=None):
    hi = C_MAX.get(key) if hi is None else hi
    if key not in obj and default is None:
        return None
    v = obj.get(key, default)   # present as null: refused below, as the C reader does
    if not _is_int(v) or v < lo or (hi is not None and v > hi):
        rng = f"an integer >= {lo}" if hi is None else f"an integer in {lo}..{hi}"
        w.fail(f'"{key}" is {v!r}, expected {rng}')
    return v


def _list_field(obj, key, w, required):
    if key not in obj:
        if required:
            w.fail(f'missing "{key}"')
        return None
    v = obj[key]
    if not isinstance(v, list):
        w.fail(f'"{key}" is not a list')
    return v


def _is_id(v):
    """A sample id as the C reader takes one: an integer, or a string without NUL."""
    return _is_int(v) or (isinstance(v, str) and "\0" not in v)


U32 = (1 << 32) - 1

DROP_REASONS = ("oversize", "truncated")


def check_footer(footer, w):
    """The footer's claims typed as the C reader types them, and its "dropped" list, when
    present: [ID, OFFSET, LENGTH, REASON] entries, offsets and lengths 0..2^32-1, the
    reason one the C reader knows (lib/plan/planio_read.c, read_footer and read_drop) --
    so that the two readers refuse the same footers."""
    claims(footer, (("iterations", 0, I64), ("samples", 0, I64), ("tokens", 0, I64)), w)
    _typed(footer, "sha256", str, "a string", w)
    if "dropped" not in footer:
        return
    dropped = footer["dropped"]
    if not isinstance(dropped, list):
        w.fail('"dropped" is not a list')
    for i, e in enumerate(dropped):
        if not (isinstance(e, list) and len(e) == 4 and _is_id(e[0]) and _is_int(e[1]) and
                _is_int(e[2]) and 0 <= e[1] <= U32 and 0 <= e[2] <= U32 and
                isinstance(e[3], str)):
            w.fail(f'"dropped" entry {i}: expected [id, offset, length, reason], got '
                   f'{str(e)[:80]}')
        if e[3] not in DROP_REASONS:
            w.fail(f'"dropped" entry {i}: unknown reason {e[3][:40]!r} (oversize or '
                   'truncated)')


def _segment(s, w, j, sp):
    if not isinstance(s, list) or len(s) not in (3, 4):
        w.fail(f"segment {j}: expected [id, offset, length] or [id, offset, length, cp]")
    sid = s[0]
    if not _is_id(sid):
        w.fail(f"segment {j}: id {sid!r} is neither a string without NUL nor an integer")
    off, length = s[1], s[2]
    if not (_is_int(off) and _is_int(length) and 0 <= off <= U32 and 0 <= length <= U32):
        w.fail(f"segment {j}: offset and length must be integers in 0..{U32}, got {off!r}, "
               f"{length!r}")
    cp = -1
    if len(s) == 4:
        cp = s[3]
        if not _is_int(cp) or cp < -1 or cp >= sp:
            w.fail(f"segment {j}: cp {cp!r} outside -1..{sp - 1} (sp = {sp})")
    return Segment(sid, off, length, cp)


def _pack(obj, w, sp):
    if not isinstance(obj, dict):
        w.fail("not an object")
    raw = _list_field(obj, "seg", w, True)
    segs = [_segment(s, w, j, sp) for j, s in enumerate(raw)]
    tokens = sum(s.length for s in segs)
    if "tokens" in obj and obj["tokens"] != tokens:
        w.fail(f'"tokens" is {obj["tokens"]!r}, its segments hold {tokens}')
    cu = _list_field(obj, "cu_seqlens", w, False)
    if cu is not None:
        want, acc = [0], 0
        for s in segs:
            acc += s.length
            want.append(acc)
        if cu != want:
            w.fail(f'"cu_seqlens" {cu[:8]}{"..." if len(cu) > 8 else ""} does not match '
                   "the segment lengths")
    cap = _int_field(obj, "cap", w, 0, tokens)
    if cap < tokens:
        w.fail(f'"cap" {cap} is below the {tokens} tokens the segments hold')
    shared = _list_field(obj, "shared", w, False)
    if shared is not None:
        if len(shared) < 2 or not all(_is_int(d) and d >= 0 for d in shared) or \
                len(set(shared)) != len(shared):
            w.fail(f'"shared" {shared!r}: expected two or more distinct dp values')
        shared = tuple(shared)
    return Pack(segs, tokens, cap, shared)


def _packs(obj, key, w, sp, required):
    raw = _list_field(obj, key, w, required)
    if raw is None:
        return []
    out = []
    for m, p in enumerate(raw):
        w.parts.append(f"{'micro-batch' if key == 'mbs' else 'backward pack'} {m}")
        out.append(_pack(p, w, sp))
        w.parts.pop()
    return out


def _schedule(obj, w, nmb, nb):
    raw = _list_field(obj, "schedule", w, False)
    if raw is None:
        return None
    ops = []
    for j, op in enumerate(raw):
        if not isinstance(op, list) or len(op) != 2 or op[0] not in ("F", "R", "B") or \
                not _is_int(op[1]):
            w.fail(f"schedule operation {j}: expected [\"F\"|\"R\"|\"B\", index], got {op!r}")
        lim = nb if op[0] == "B" else nmb
        if not 0 <= op[1] < lim:
            w.fail(f"schedule operation {j}: {op[0]} {op[1]} names no pack (it has {lim})")
        ops.append((op[0], op[1]))
    return ops


def _rank(obj, w, index):
    if not isinstance(obj, dict):
        w.fail("not an object")
    r = Rank()
    r.index = index
    r.dp = _int_field(obj, "dp", w, 0, index)
    r.tp = _int_field(obj, "tp", w, 1, 1)
    r.pp = _int_field(obj, "pp", w, 1, 1)
    r.sp = _int_field(obj, "sp", w, 1, 1)
    r.ckpt_layers = _int_field(obj, "ckpt_layers", w, 0, 0)
    r.group = _int_field(obj, "group", w, 0, None)
    r.k = _int_field(obj, "k", w, 1, None)
    gpus = _list_field(obj, "gpus", w, False)
    if gpus is not None:
        if len(gpus) != r.size() or not all(_is_int(g) and g >= 0 for g in gpus):
            w.fail(f'"gpus" must list tp*sp*pp = {r.size()} GPU indices >= 0')
    r.gpus = gpus
    r.mbs = _packs(obj, "mbs", w, r.sp, True)
    r.bwd = _packs(obj, "bwd", w, r.sp, False)
    if r.bwd and sum(p.tokens for p in r.bwd) != sum(p.tokens for p in r.mbs):
        w.fail('"bwd" packs do not hold the tokens of the forward packs')
    r.schedule = _schedule(obj, w, len(r.mbs), len(r.bwd) or len(r.mbs))
    return r


def _check_shared(ranks, w):
    """Every member of a shared pack holds the same copy, in the same order among the
    packs it shares with that list, so the merged CP group steps together."""
    by_dp = {r.dp: r for r in ranks}
    for r in ranks:
        for what, packs in (("micro-batch", r.mbs), ("backward pack", r.bwd)):
            for m, p in enumerate(packs):
                if p.shared is None:
                    continue
                if r.dp not in p.shared:
                    w.fail(f"rank {r.index}, {what} {m}: shared by {list(p.shared)}, "
                           f"which does not include its own dp {r.dp}")
                for d in p.shared:
                    if d not in by_dp:
                        w.fail(f"rank {r.index}, {what} {m}: shared with dp {d}, "
                               "which is not in the iteration")

    def seq(rank, members):
        return [p.segs for p in rank.mbs if p.shared == members]

    for r in ranks:
        for members in {p.shared for p in r.mbs if p.shared is not None}:
            mine = seq(r, members)
            for d in members:
                if seq(by_dp[d], members) != mine:
                    w.fail(f"rank {r.index} and dp {d} hold different copies of the packs "
                           f"shared by {list(members)}")


def _shared_events(r):
    """The shared operations of rank r in the order it runs them, each named as every
    member names it: (side, members, ordinal among the rank's packs of that side shared
    by those members) -- the copies that must start together (lib/model/sim_dag.c)."""
    back = r.bwd or r.mbs
    ordinal = {}
    for side, packs in (("F", r.mbs), ("B", back)):
        seen = {}
        for j, p in enumerate(packs):
            if p.shared is not None:
                ordinal[side, j] = seen[p.shared] = seen.get(p.shared, -1) + 1
    out = []
    for op in schedule(len(r.mbs), len(r.bwd), r.schedule):
        if op.kind == "R":
            continue
        pack = (r.mbs if op.kind == "F" else back)[op.index]
        if pack.shared is not None:
            out.append((op.kind, pack.shared, ordinal[op.kind, op.index]))
    return out


def _check_shared_order(ranks, w):
    """A shared operation starts when it is next on every member, so the ranks' orders of
    their shared operations must agree: a cycle (A runs X before Y, B runs Y before X)
    deadlocks, and verify refuses it too."""
    after, waits = {}, {}
    for r in ranks:
        ev = _shared_events(r)
        for e in ev:
            after.setdefault(e, set())
            waits.setdefault(e, 0)
        for a, b in zip(ev, ev[1:]):
            if b not in after[a]:
                after[a].add(b)
                waits[b] += 1
    ready = [e for e, n in waits.items() if n == 0]
    done = 0
    while ready:
        e = ready.pop()
        done += 1
        for b in after[e]:
            waits[b] -= 1
            if waits[b] == 0:
                ready.append(b)
    if done < len(waits):
        stuck = sorted({e[1] for e, n in waits.items() if n > 0})
        w.fail(f"the shared packs deadlock: ranks run them in orders that wait on each "
               f"other (packs shared by {', '.join(str(list(m)) for m in stuck)})")


def _check_gpus(ranks, header, w):
    """The ranks fit the plan's cluster: their GPUs (tp·sp·pp each) add up to at most
    cluster.gpus, and explicit GPU indices lie below it; without a cluster, a rank's
    size is at most 2^31 -- before anything is sized by these numbers."""
    cfg = (header or {}).get("config") or {}
    world = cfg.get("cluster", {}).get("gpus")
    total = 0
    for r in ranks:
        total += r.size()
        if world is None and r.size() > 1 << 31:
            w.fail(f"rank {r.index}: tp {r.tp} x sp {r.sp} x pp {r.pp} = {r.size()} GPUs")
        if world is not None and r.gpus is not None and any(g >= world for g in r.gpus):
            w.fail(f'rank {r.index}: "gpus" names a GPU past the cluster\'s {world}')
    if world is not None and total > world:
        w.fail(f"the ranks need {total} GPUs (tp x sp x pp each), the plan's cluster has "
               f"{world}")


def iteration(rec, name, line, expect_it, uneven, header=None):
    """The iteration record rec (already known to be {"type": "iter"}) as an Iteration;
    header (the plan's, already checked) bounds its GPUs and epoch."""
    w = Where(name, line)
    it = rec.get("it", expect_it)
    w.parts.append(f"iteration {it}")
    if it != expect_it:
        w.fail(f'"it" is {it!r}, expected {expect_it} (iterations are numbered from 0 in order)')
    ranks_raw = _list_field(rec, "ranks", w, True)
    if not ranks_raw:
        w.fail('"ranks" is empty')
    ranks = []
    for i, r in enumerate(ranks_raw):
        w.parts.append(f"rank {i}")
        ranks.append(_rank(r, w, i))
        w.parts.pop()
    _check_gpus(ranks, header, w)
    dps = [r.dp for r in ranks]
    if len(set(dps)) != len(dps):
        w.fail(f"two ranks have the same dp ({dps})")
    if not uneven and len({len(r.mbs) for r in ranks}) > 1:
        w.fail("ranks run different numbers of micro-batches "
               f"({[len(r.mbs) for r in ranks]}) and the header does not declare uneven_mbs")
    _check_shared(ranks, w)
    _check_shared_order(ranks, w)
    tokens = sum(p.tokens for r in ranks for p in r.mbs
                 if p.shared is None or p.shared[0] == r.dp)
    out = Iteration()
    out.it, out.line, out.ranks = it, line, ranks
    epochs = (header or {}).get("epochs")
    out.epoch = _int_field(rec, "epoch", w, 0, 0, epochs - 1 if epochs else None)
    out.tokens = _int_field(rec, "tokens", w, 0, tokens)
    if out.tokens != tokens:
        w.fail(f'"tokens" is {out.tokens}, its micro-batches hold {tokens}')
    out.loss_tokens = _int_field(rec, "loss_tokens", w, 0, tokens, tokens)
    out.samples = _int_field(rec, "samples", w, 0, None)
    out.candidate = _int_field(rec, "candidate", w, 0, None)
    return out


CAPS = ("uneven_mbs", "bwd_packs", "seg_cp", "schedule", "shared_packs")
I64 = (1 << 63) - 1
STRATEGY_BYTES = 47   # the C reader's name buffer (lib/plan/plan.h) less its NUL


def _typed(rec, key, types, what, w):
    """An optional member of the given type: present (even as null) means typed, as the
    C reader's opt_typed has it."""
    if key in rec and not isinstance(rec[key], types):
        w.fail(f'"{key}" is {str(rec[key])[:40]!r}, expected {what}')
    return rec.get(key)


def claims(rec, keys, w):
    """Counts a record claims, when present: integers 0..2^63-1 (the C reader's
    vl__rd_uint bounds, lib/plan/planio_read.c)."""
    for key, lo, hi in keys:
        if key in rec and not (_is_int(rec[key]) and lo <= rec[key] <= hi):
            w.fail(f'"{key}" is {str(rec[key])[:40]!r}, expected an integer in {lo}..{hi}')


def header(rec, name, line):
    w = Where(name, line)
    if not isinstance(rec, dict) or rec.get("type") != "header":
        w.fail('the first line is not a header ({"type":"header",...})')
    if rec.get("schema") != SCHEMA:
        w.fail(f'schema {rec.get("schema")!r}, expected "{SCHEMA}"')
    caps = _typed(rec, "caps", list, "a list of capability names", w) or []
    for c in caps:
        if c not in CAPS:
            w.fail(f'"caps": unknown capability {str(c)[:40]!r} (expected one of '
                   f'{", ".join(CAPS)})')
    shard = _typed(rec, "optimizer_shard", str, '"replicas" or "world"', w)
    if shard is not None and shard not in ("replicas", "world"):
        w.fail(f'"optimizer_shard" is {shard[:40]!r}, expected "replicas" or "world"')
    claims(rec, (("iterations", 0, I64), ("epochs", 1, U32), ("seed", 0, I64)), w)
    strategy = _typed(rec, "strategy", str, "a string", w)
    if strategy is not None and len(strategy.encode("utf-8", "surrogatepass")) > STRATEGY_BYTES:
        w.fail(f'"strategy": name longer than {STRATEGY_BYTES} bytes')
    _typed(rec, "vlplan", str, "a string", w)
    _typed(rec, "params", dict, "an object", w)
    man = _typed(rec, "manifest", dict, "an object", w)
    if man is not None:
        claims(man, (("samples", 0, I64), ("tokens", 0, I64)), w)
        _typed(man, "sha256", str, "a string", w)
    _typed(rec, "config", dict, "an object", w)
    _header_config(rec.get("config"), w)
    return rec


def _header_config(cfg, w):
    """The parts of the header's configuration the reader uses, checked for their types:
    the sections are objects, cluster.gpus a GPU count, training.sp_kind a name."""
    if cfg is None:
        return
    if not isinstance(cfg, dict):
        w.fail('"config" is not an object')
    for name, section in cfg.items():
        if name in ("model", "cluster", "training", "cost") and not isinstance(section, dict):
            w.fail(f'"config" section "{name}" is not an object')
    gpus = cfg.get("cluster", {}).get("gpus")
    if gpus is not None and not (_is_int(gpus) and 1 <= gpus <= 1 << 31):
        w.fail(f'"config" cluster.gpus is {gpus!r}, expected a GPU count')
    kind = cfg.get("training", {}).get("sp_kind")
    if kind is not None and kind not in ("ring", "ulysses"):
        w.fail(f'"config" training.sp_kind is {kind!r}, expected "ring" or "ulysses"')
