"""Structure of the plan records (docs/decisions.md §7, man page PLAN FILE): each record is checked
before anyone sees it, and turned into plain objects.  The rules follow the C reader's:
only the structure is required, every redundant field is checked when present.  Keys,
types, ranges, defaults, list shapes and the rules they obey come from the exported
schema (schema.py, plan_schema.json: `vlplan schema`), not from a copy here."""
from collections import namedtuple

from . import schema as S
from .contract import schedule
from .stream import PlanError

SCHEMA = S.SCHEMA

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


def _int_field(obj, level, key, w, default=None, hi=None):
    """Integer member key of a `level` record in the schema's range (hi, when given, a
    tighter bound from elsewhere in the plan); absent: default when given (for defaults
    that depend on the element: "index", "tokens", a position), else the schema's, None
    where the schema gives none."""
    f = S.field(level, key)
    lo, hi = f["min"], f["max"] if hi is None else min(hi, f["max"])
    if key not in obj:
        if default is not None:
            return default
        d = f.get("default")
        return d if _is_int(d) else None
    v = obj[key]   # present as null: refused below, as the C reader does
    if not _is_int(v) or v < lo or v > hi:
        w.fail(f'"{key}" is {v!r}, expected an integer in {lo}..{hi}')
    return v


def _list_field(obj, level, key, w):
    """List member key of a `level` record (None when absent and not required), at least
    the schema's min_len long."""
    f = S.field(level, key)
    if key not in obj:
        if f["required"]:
            w.fail(f'missing "{key}"')
        return None
    v = obj[key]
    if not isinstance(v, list):
        w.fail(f'"{key}" is not a list')
    if len(v) < f["min_len"]:
        w.fail(f'"{key}" has {len(v)} entries, expected at least {f["min_len"]}'
               if v else f'"{key}" is empty')
    return v


def _item_ok(v, item):
    """v as one element or tuple position the schema describes."""
    t = item["type"]
    if t == "int":
        return _is_int(v) and item["min"] <= v <= item["max"]
    if t == "id":
        return _is_id(v)
    return isinstance(v, str) and v in item["values"]   # "op", "name"


def _tuple_ok(v, spec):
    """v as a tuple of the schema's arity, every position valid."""
    lo, hi = spec["arity"]
    return isinstance(v, list) and lo <= len(v) <= hi and \
        all(_item_ok(x, it) for x, it in zip(v, spec["items"]))


def _is_id(v):
    """A sample id as the C reader takes one: an integer, or a string without NUL."""
    return _is_int(v) or (isinstance(v, str) and "\0" not in v)


def check_footer(footer, w):
    """The footer's members typed as the schema's "meta" says and the C reader checks
    them (lib/plan/planio_read.c, read_footer and read_drop): counts, the checksum, and
    the "dropped" list of [ID, OFFSET, LENGTH, REASON] entries -- so that the two
    readers refuse the same footers."""
    check_meta(footer, "footer", w)
    if "dropped" not in footer:
        return
    dropped, spec = footer["dropped"], S.meta("footer", "dropped")["items"]
    if not isinstance(dropped, list):
        w.fail('"dropped" is not a list')
    reason = spec["items"][3]
    for i, e in enumerate(dropped):
        if isinstance(e, list) and len(e) == 4 and isinstance(e[3], str) and \
                e[3] not in reason["values"]:
            w.fail(f'"dropped" entry {i}: unknown reason {e[3][:40]!r} '
                   f'({" or ".join(reason["values"])})')
        if not _tuple_ok(e, spec):
            w.fail(f'"dropped" entry {i}: expected [id, offset, length, reason], got '
                   f'{str(e)[:80]}')


def _segment(s, w, j, sp):
    spec = S.items("pack", "seg")
    pos = spec["items"]   # id, offset, length, cp
    if not isinstance(s, list) or not spec["arity"][0] <= len(s) <= spec["arity"][1]:
        w.fail(f"segment {j}: expected [id, offset, length] or [id, offset, length, cp]")
    sid = s[0]
    if not _item_ok(sid, pos[0]):
        w.fail(f"segment {j}: id {sid!r} is neither a string without NUL nor an integer")
    off, length = s[1], s[2]
    if not (_item_ok(off, pos[1]) and _item_ok(length, pos[2])):
        w.fail(f"segment {j}: offset and length must be integers in "
               f"{pos[1]['min']}..{pos[1]['max']}, got {off!r}, {length!r}")
    cp = -1
    if len(s) == 4:
        cp = s[3]
        # rule cp_below_sp: a coordinate of the rank's sp group, or -1 (sharded)
        if not _item_ok(cp, pos[3]) or cp >= sp:
            w.fail(f"segment {j}: cp {cp!r} outside -1..{sp - 1} (sp = {sp})")
    return Segment(sid, off, length, cp)


def _pack(obj, w, sp):
    if not isinstance(obj, dict):
        w.fail("not an object")
    raw = _list_field(obj, "pack", "seg", w)
    segs = [_segment(s, w, j, sp) for j, s in enumerate(raw)]
    tokens = sum(s.length for s in segs)
    if "tokens" in obj and obj["tokens"] != tokens:   # claim sum_tokens
        w.fail(f'"tokens" is {obj["tokens"]!r}, its segments hold {tokens}')
    _int_field(obj, "pack", "tokens", w, tokens)
    cu = _list_field(obj, "pack", "cu_seqlens", w)   # rule prefix_sums
    if cu is not None:
        want, acc = [0], 0
        for s in segs:
            acc += s.length
            want.append(acc)
        if cu != want:
            w.fail(f'"cu_seqlens" {cu[:8]}{"..." if len(cu) > 8 else ""} does not match '
                   "the segment lengths")
    cap = _int_field(obj, "pack", "cap", w, tokens)
    if cap < tokens:   # claim cap
        w.fail(f'"cap" {cap} is below the {tokens} tokens the segments hold')
    shared = _shared(obj, w)
    return Pack(segs, tokens, cap, shared)


def _shared(obj, w):
    """A pack's "shared" list as a tuple: the schema's min_len distinct dp values (rule
    distinct_self; the pack's own rank among them is _check_shared's, which sees the
    iteration)."""
    if "shared" not in obj:
        return None
    shared, f = obj["shared"], S.field("pack", "shared")
    if not isinstance(shared, list) or len(shared) < f["min_len"] or \
            not all(_item_ok(d, f["items"]) for d in shared) or len(set(shared)) != len(shared):
        w.fail(f'"shared" {shared!r}: expected two or more distinct dp values')
    return tuple(shared)


def _packs(obj, key, w, sp):
    raw = _list_field(obj, "rank", key, w)
    if raw is None:
        return []
    out = []
    for m, p in enumerate(raw):
        w.parts.append(f"{'micro-batch' if key == 'mbs' else 'backward pack'} {m}")
        out.append(_pack(p, w, sp))
        w.parts.pop()
    return out


def _schedule(obj, w, nmb, nb):
    raw = _list_field(obj, "rank", "schedule", w)
    if raw is None:
        return None
    spec, ops = S.items("rank", "schedule"), []
    kinds = spec["items"][0]["values"]
    for j, op in enumerate(raw):
        if not _tuple_ok(op, spec):
            w.fail(f"schedule operation {j}: expected [{'|'.join(map(repr, kinds))}, "
                   f"index], got {op!r}")
        lim = nb if op[0] == "B" else nmb   # rule names_pack
        if not 0 <= op[1] < lim:
            w.fail(f"schedule operation {j}: {op[0]} {op[1]} names no pack (it has {lim})")
        ops.append((op[0], op[1]))
    return ops


def _rank(obj, w, index):
    if not isinstance(obj, dict):
        w.fail("not an object")
    r = Rank()
    r.index = index
    r.dp = _int_field(obj, "rank", "dp", w, index)
    r.tp = _int_field(obj, "rank", "tp", w)
    r.pp = _int_field(obj, "rank", "pp", w)
    r.sp = _int_field(obj, "rank", "sp", w)
    r.ckpt_layers = _int_field(obj, "rank", "ckpt_layers", w)
    r.group = _int_field(obj, "rank", "group", w)
    r.k = _int_field(obj, "rank", "k", w)
    gpus = _list_field(obj, "rank", "gpus", w)
    if gpus is not None:   # rule rank_size
        gpu = S.items("rank", "gpus")
        if len(gpus) != r.size() or not all(_item_ok(g, gpu) for g in gpus):
            w.fail(f'"gpus" must list tp*sp*pp = {r.size()} GPU indices in '
                   f'{gpu["min"]}..{gpu["max"]}')
    r.gpus = gpus
    r.mbs = _packs(obj, "mbs", w, r.sp)
    r.bwd = _packs(obj, "bwd", w, r.sp)
    # rule bwd_tokens
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
    if not _is_int(it) or it != expect_it:   # claim position
        w.fail(f'"it" is {it!r}, expected {expect_it} (iterations are numbered from 0 in order)')
    ranks_raw = _list_field(rec, "iter", "ranks", w)
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
    epochs = (header or {}).get("epochs")   # claim epoch
    out.epoch = _int_field(rec, "iter", "epoch", w, hi=epochs - 1 if epochs else None)
    out.tokens = _int_field(rec, "iter", "tokens", w, tokens)
    if out.tokens != tokens:   # claim sum_tokens
        w.fail(f'"tokens" is {out.tokens}, its micro-batches hold {tokens}')
    out.loss_tokens = _int_field(rec, "iter", "loss_tokens", w, tokens, tokens)   # claim loss
    out.samples = _int_field(rec, "iter", "samples", w)
    out.candidate = _int_field(rec, "iter", "candidate", w)
    return out


def _typed(rec, key, types, what, w):
    """An optional member of the given type: present (even as null) means typed, as the
    C reader's opt_typed has it."""
    if key in rec and not isinstance(rec[key], types):
        w.fail(f'"{key}" is {str(rec[key])[:40]!r}, expected {what}')
    return rec.get(key)


def _meta_member(rec, m, w):
    """Member m of the schema's "meta" (a header's or footer's), when present."""
    key, t = m["key"], m["type"]
    v = rec[key]
    if t == "count":
        if not (_is_int(v) and m["min"] <= v <= m["max"]):
            w.fail(f'"{key}" is {str(v)[:40]!r}, expected an integer in {m["min"]}..{m["max"]}')
    elif t == "string":
        _typed(rec, key, str, "a string", w)
        if "max" in m and len(v.encode("utf-8", "surrogatepass")) > m["max"]:
            w.fail(f'"{key}": name longer than {m["max"]} bytes')
        if "values" in m and v not in m["values"]:
            want = " or ".join(f'"{x}"' for x in m["values"])
            w.fail(f'"{key}" is {v[:40]!r}, expected {want}')
    elif t == "object":
        _typed(rec, key, dict, "an object", w)
    elif t == "caps":
        _typed(rec, key, list, "a list of capability names", w)
        for c in v:
            if c not in m["values"]:
                w.fail(f'"{key}": unknown capability {str(c)[:40]!r} (expected one of '
                       f'{", ".join(m["values"])})')
    elif t == "list":
        _typed(rec, key, list, "a list", w)


def check_meta(rec, record, w):
    """Every member of rec the schema types for `record` ("header", "header.manifest",
    "footer"), when present."""
    for key, m in S.META[record].items():
        if key in rec:
            _meta_member(rec, m, w)


def header(rec, name, line):
    w = Where(name, line)
    if not isinstance(rec, dict) or rec.get("type") != "header":
        w.fail('the first line is not a header ({"type":"header",...})')
    if rec.get("schema") != SCHEMA:
        w.fail(f'schema {rec.get("schema")!r}, expected "{SCHEMA}"')
    check_meta(rec, "header", w)
    if isinstance(rec.get("manifest"), dict):
        check_meta(rec["manifest"], "header.manifest", w)
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
