"""A whole world for a plan of every registered strategy: every GPU of the job reads the
plan on its own, and together they must agree -- the same iterations, the same collective
steps in every group they share (no hang), and between them every token of the manifest
once per epoch (or listed as dropped)."""
from collections import defaultdict

import pytest

from conftest import make_plan, manifest_lengths, settings_for, strategies
from vlplan import GpuView, Plan

SETTINGS = {
    "dp8": ["cluster.gpus=8"],
    "tp2pp2x2epochs": ["cluster.gpus=16", "training.tp=2", "training.pp=2", "training.epochs=2"],
    "sp2pp2": ["cluster.gpus=16", "training.sp=2", "training.pp=2"],
}


def step_group(it_view, mb, rank_of):
    """The GPUs that must run this micro-batch together: its rank's GPUs, or for a shared
    pack every member rank's GPUs (rank_of: GPU -> the GPUs of its rank, this iteration;
    the pack's CP group holds one GPU of each member per tp coordinate)."""
    own = frozenset(it_view.rank_gpus)
    if mb.shared is None:
        return own
    return own.union(*(rank_of[g] for g in mb.cp_group))


def ranks_by_gpu(its):
    """GPU -> the GPUs of its rank, over one iteration's views of every GPU."""
    return {g: frozenset(v.rank_gpus) for g, v in enumerate(its) if v.active}


def simulate(plan):
    world = plan.world_size
    assert world, "the plan's header names no cluster.gpus"
    per_gpu = [list(GpuView(plan, g, world)) for g in range(world)]
    return world, per_gpu


def check_lockstep(world, per_gpu):
    n = {len(v) for v in per_gpu}
    assert len(n) == 1, f"GPUs disagree on the number of iterations: {n}"
    for i in range(n.pop()):
        its = [v[i] for v in per_gpu]
        assert len({v.it for v in its}) == 1
        assert len({v.loss_tokens for v in its}) == 1, "GPUs disagree on the normaliser"
        # group -> GPU -> the sequence of packs it runs in that group
        seqs = defaultdict(dict)
        rank_of = ranks_by_gpu(its)
        for g, v in enumerate(its):
            if not v.active:
                continue
            assert g in v.rank_gpus and v.cp_group[v.cp_index] == g
            assert v.tp_group[v.tp_rank] == g and v.pp_group[v.pp_rank] == g
            for mb in v.micro_batches:
                key = step_group(v, mb, rank_of)
                assert g in key
                seqs[key].setdefault(g, []).append(
                    tuple(zip(mb.ids, mb.offsets, mb.lengths, mb.cps)))
        for group, by_gpu in seqs.items():
            assert set(by_gpu) == set(group), \
                f"iteration {i}: GPUs {sorted(set(group) - set(by_gpu))} of a group never join it"
            first = next(iter(by_gpu.values()))
            for g, s in by_gpu.items():
                assert s == first, f"iteration {i}: GPU {g} runs other steps in its group"
        coords = defaultdict(set)
        for g, v in enumerate(its):
            if v.active:
                coords[frozenset(v.rank_gpus)].add((v.tp_rank, v.cp_index, v.pp_rank))
        for gpus, cs in coords.items():
            assert len(cs) == len(gpus), f"iteration {i}: two GPUs of a rank share coordinates"
    return len(per_gpu[0])


def token_union(per_gpu):
    """epoch -> sample id -> intervals, each distinct pack counted once (a pack is the
    same copy on every GPU of its group, at the same step)."""
    out = defaultdict(lambda: defaultdict(list))
    seen = set()
    rank_of = [ranks_by_gpu(its) for its in zip(*per_gpu)]
    for v_list in per_gpu:
        for i, v in enumerate(v_list):
            if not v.active:
                continue
            pos = defaultdict(int)
            for mb in v.micro_batches:
                key = step_group(v, mb, rank_of[i])
                ident = (v.it, key, pos[key])
                pos[key] += 1
                if ident in seen:
                    continue
                seen.add(ident)
                for sid, off, ln in zip(mb.ids, mb.offsets, mb.lengths):
                    out[v.epoch][sid].append((off, off + ln))
    return out


def check_union(plan, per_gpu, lengths):
    epochs = plan.header.get("epochs", 1)
    drops = defaultdict(list)
    for sid, off, ln, _ in plan.footer.get("dropped", []):
        drops[sid].append((off, off + ln))
    union = token_union(per_gpu)
    assert sorted(union) == list(range(epochs))
    for e in range(epochs):
        assert set(union[e]) <= set(lengths), "a planned id is not in the manifest"
        for sid, n in lengths.items():
            iv = sorted(union[e].get(sid, []) + drops.get(sid, []))
            at = 0
            for a, b in iv:
                assert a == at, f"epoch {e}, sample {sid}: tokens [{at}, {a}) missing or " \
                                "twice"
                at = b
            assert at == n, f"epoch {e}, sample {sid}: {at} of {n} tokens planned"


def check_local_cover(per_gpu):
    """Every segment of a pack is computed by some GPU of its CP group."""
    by_pack = defaultdict(set)
    segs = {}
    for v_list in per_gpu:
        for v in v_list:
            for mb in v.micro_batches:
                ident = (v.it, tuple(mb.cp_group), tuple(zip(mb.ids, mb.offsets)))
                segs[ident] = set(range(len(mb.ids)))
                by_pack[ident] |= {j for j, c in enumerate(mb.cps) if c in (-1, mb.cp_index)}
    for ident, have in by_pack.items():
        assert have == segs[ident], f"iteration {ident[0]}: a CP-local segment has no GPU"


@pytest.mark.parametrize("setting", sorted(SETTINGS))
@pytest.mark.parametrize("strategy", strategies())
def test_world_runs_in_lockstep_and_covers_the_manifest(tmp_path, strategy, setting):
    path = make_plan(tmp_path / f"{strategy}.jsonl", strategy,
                     *settings_for(strategy, SETTINGS[setting]))
    plan = Plan(path)
    world, per_gpu = simulate(plan)
    iters = check_lockstep(world, per_gpu)
    assert iters == len(plan) > 0
    check_union(plan, per_gpu, manifest_lengths())
    check_local_cover(per_gpu)


def test_hand_plan_world(tmp_path):
    """The same checks on the hand-written plan with shared packs, CP-local segments and
    idle GPUs (no registered strategy writes them yet)."""
    from conftest import write_lines
    from test_view import HEADER, IT0, IT1, IT2, LENGTHS
    plan = Plan(write_lines(tmp_path / "hand.jsonl", [HEADER, IT0, IT1, IT2]))
    per_gpu = [list(GpuView(plan, g, 8)) for g in range(8)]
    assert check_lockstep(8, per_gpu) == 3
    check_union(plan, per_gpu, LENGTHS)
    check_local_cover(per_gpu)


def test_a_broken_world_is_caught(tmp_path):
    """The lockstep check can fail: a rank whose GPUs see different packs."""
    from conftest import write_lines
    from test_view import HEADER, IT0
    plan = Plan(write_lines(tmp_path / "hand.jsonl", [HEADER, IT0]))
    per_gpu = [list(GpuView(plan, g, 8)) for g in range(8)]
    per_gpu[2][0].micro_batches.pop()
    with pytest.raises(AssertionError):
        check_lockstep(8, per_gpu)


@pytest.mark.parametrize("strategy", strategies())
def test_default_placement_matches_what_vlplan_writes(tmp_path, strategy):
    """A plan without "gpus" (another tool's) is placed by the rule vlplan writes."""
    import json
    path = make_plan(tmp_path / "p.jsonl", strategy,
                     *settings_for(strategy, SETTINGS["tp2pp2x2epochs"]))
    stripped = tmp_path / "stripped.jsonl"
    with open(path) as src, open(stripped, "w") as dst:
        for line in src:
            rec = json.loads(line)
            if rec["type"] == "footer":
                break
            rec.pop("vlplan", None)            # a foreign plan: no footer required
            for r in rec.get("ranks", []):
                r.pop("gpus")
            dst.write(json.dumps(rec) + "\n")
    a, b = Plan(path), Plan(str(stripped))
    for g in range(a.world_size):
        got = [(v.active, v.rank_gpus, v.cp_index) for v in GpuView(b, g, a.world_size)]
        want = [(v.active, v.rank_gpus, v.cp_index) for v in GpuView(a, g, a.world_size)]
        assert got == want, f"GPU {g}"


def test_mcore_cp_shared_samples_and_barriers_run_in_lockstep(tmp_path):
    """mcore_cp with samples over several GPUs (a small max_seqlen_per_rank) and the
    barriers between its groups: every GPU agrees on every shared step."""
    path = make_plan(tmp_path / "mc.jsonl", "mcore_cp", "cluster.gpus=16", "training.sp=4",
                     "training.tp=2", "mcore_cp.max_seqlen_per_rank=2048")
    plan = Plan(path)
    world, per_gpu = simulate(plan)
    check_lockstep(world, per_gpu)
    check_union(plan, per_gpu, manifest_lengths())
    widths = {len(mb.cp_group) for v in per_gpu[0] for mb in v.micro_batches}
    assert max(widths) > 2, "some sample runs with CP over more than one rank"
    empty = [mb for v in per_gpu[0] for mb in v.micro_batches if not mb.ids]
    # a barrier is shared by every rank: one GPU of each per tp coordinate (tp = 2)
    assert empty and all(len(mb.cp_group) * 2 == world for mb in empty), "barriers span all"
