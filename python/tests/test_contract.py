"""The execution contract piece by piece: CP shards, keys of earlier slices, the order of a
rank's operations, and what the package refuses or guards (idle ranks, world size,
start_iter, process groups, a zero normaliser)."""
import copy
import json
import os
import random

import pytest

from conftest import make_plan, write_lines
from test_view import HEADER, IT0, IT1, IT2
from vlplan import GpuView, Plan, PlanError, contract

if os.environ.get("VLPLAN_REQUIRE_TORCH"):
    import torch
else:
    torch = pytest.importorskip("torch")
from vlplan.torch_adapters import (IGNORE_INDEX, PackedDataset, PlanBatchSampler,  # noqa: E402
                                   collate_packed, iteration_batches,
                                   packed_seq_params_kwargs)


# ---------------------------------------------------------------- shards

def test_ring_layout_is_megatrons_load_balanced_order():
    # 10 tokens over cp 2: padded to 12, chunks of 3; member 0 holds chunks 0 and 3
    s0 = contract.shard([0], [10], [-1], 2, 0, "ring")
    s1 = contract.shard([0], [10], [-1], 2, 1, "ring")
    assert s0.pieces == [(0, 0, 3, 0), (0, 9, 10, 2)]
    assert s1.pieces == [(0, 3, 6, 0), (0, 6, 9, 0)]
    assert s0.sharded_cu_seqlens_q == [0, 10] and s0.sharded_cu_seqlens_q_padded == [0, 12]
    assert s0.positions() == [0, 1, 2, 9, -1, -1] and s0.tokens == s1.tokens == 6


def test_ulysses_layout_is_a_contiguous_split_of_the_sharded_stream():
    s = [contract.shard([0, 0, 5], [3, 4, 2], [-1, 1, -1], 2, c, "ulysses") for c in (0, 1)]
    # sharded stream: seg 0 (3 tokens) + seg 2 (2 tokens) = 5, padded to 6, parts of 3
    assert s[0].local == [] and s[1].local == [1]
    assert s[0].pieces == [(0, 0, 3, 0)]
    assert s[1].pieces == [(1, 0, 4, 0), (2, 5, 7, 1)]
    assert s[1].cu_seqlens_q == [0, 4] and s[1].cu_seqlens_kv == [0, 4]
    assert s[0].sharded_cu_seqlens_kv == [0, 3, 10]     # the slice at 5 sees 7 keys


@pytest.mark.parametrize("kind", contract.SP_KINDS)
def test_every_token_on_exactly_one_member(kind):
    rnd = random.Random(5)
    for _ in range(300):
        size = rnd.choice([1, 2, 3, 4, 8])
        n = rnd.randint(0, 6)
        lengths = [rnd.randint(0, 40) for _ in range(n)]
        offsets = [rnd.choice([0, 0, 17]) for _ in range(n)]
        cps = [rnd.randint(-1, size - 1) for _ in range(n)]
        seen = []
        for c in range(size):
            sh = contract.shard(offsets, lengths, cps, size, c, kind)
            for p in sh.pieces:
                assert size == 1 or cps[p.seg] in (-1, c), "a local segment off its member"
                seen += [(p.seg, t) for t in range(p.start, p.stop)]
            if kind == "ring" and size > 1:
                assert all((p.stop - p.start + p.pad) * 2 * size ==
                           -(-lengths[p.seg] // (2 * size)) * 2 * size
                           for p in sh.pieces if p.seg in sh.sharded)
        want = [(j, t) for j in range(n) for t in range(offsets[j], offsets[j] + lengths[j])]
        assert sorted(seen) == sorted(want)
        # members of one group hold the same number of sharded slots (the exchange)
        slots = {sum(p.stop - p.start + p.pad for p in contract.shard(
            offsets, lengths, cps, size, c, kind).pieces if p.seg in
            contract.shard(offsets, lengths, cps, size, c, kind).sharded)
            for c in range(size)}
        assert len(slots) <= 1 or kind == "ulysses" and max(slots) - min(slots) <= max(
            lengths, default=0)


def test_bad_shard_arguments():
    with pytest.raises(PlanError, match="sp_kind"):
        contract.shard([0], [4], [-1], 2, 0, "mesh")
    with pytest.raises(PlanError, match="coordinate 3"):
        contract.shard([0], [4], [3], 2, 0, "ring")


# ---------------------------------------------------------------- order

def first(it):
    """A copy of a hand iteration as iteration 0 of a plan of its own."""
    return dict(copy.deepcopy(it), it=0)


def test_default_order_and_explicit_schedule():
    assert contract.schedule(2, 0, None) == [("F", 0), ("B", 0), ("F", 1), ("B", 1)]
    assert contract.schedule(2, 1, None) == [("F", 0), ("F", 1), ("B", 0)]
    assert contract.schedule(1, 0, [("F", 0), ("B", 0)]) == [("F", 0), ("B", 0)]


def _sliced_rank(schedule, bwd=None):
    it = {"type": "iter", "it": 0, "ranks": [{"dp": 0, "mbs": [
        {"seg": [["x", 0, 4]]}, {"seg": [["x", 4, 4]]}, {"seg": [["y", 0, 2]]}],
        "schedule": schedule}]}
    if bwd is not None:
        it["ranks"][0]["bwd"] = bwd
    return it


@pytest.mark.parametrize("schedule, words", [
    ([["F", 1], ["F", 0], ["F", 2], ["B", 1], ["B", 0], ["B", 2]], "were not forwarded before"),
    ([["F", 0], ["B", 0], ["F", 1], ["B", 1], ["F", 2], ["B", 2]], "already ran"),
    ([["F", 0], ["F", 1], ["B", 0], ["B", 1], ["F", 2], ["B", 2]], "its later tokens"),
    ([["F", 0], ["F", 1], ["F", 2], ["B", 1], ["B", 0]], "never run"),
    ([["F", 0], ["F", 1], ["F", 2], ["R", 0], ["R", 0], ["B", 1], ["B", 0], ["B", 2]],
     "recomputed twice"),
    ([["F", 0], ["F", 1], ["F", 2], ["B", 1], ["R", 0], ["B", 2], ["R", 2], ["B", 0]],
     "awaiting its recompute"),
])
def test_orders_the_contract_refuses(tmp_path, schedule, words):
    plan = Plan(write_lines(tmp_path / "p.jsonl", [HEADER, _sliced_rank(schedule)]))
    v = next(iter(GpuView(plan, 0, 1)))
    with pytest.raises(PlanError, match=words):
        v.check()
    with pytest.raises(PlanError, match=words):
        iteration_batches(v)      # the DataLoader path refuses it too


def test_chunkflow_order_with_recompute_and_asymmetric_backward_pass(tmp_path):
    good = [["F", 0], ["F", 1], ["F", 2], ["B", 1], ["R", 0], ["B", 0], ["B", 2]]
    plan = Plan(write_lines(tmp_path / "p.jsonl", [HEADER, _sliced_rank(good)]))
    v = next(iter(GpuView(plan, 0, 1)))
    v.check()
    ops = [(b[0].info.op, b[0].step, [j for j, _ in b[0].info.backward])
           for b in iteration_batches(v)]
    assert ops == [("F", 0, []), ("F", 1, []), ("F", 2, [1]), ("R", 0, [0, 2])]
    # a backward pack across two forward packs, last tokens first
    bwd = [{"seg": [["x", 3, 5]]}, {"seg": [["x", 0, 3], ["y", 0, 2]]}]
    sched = [["F", 0], ["F", 1], ["F", 2], ["B", 0], ["B", 1]]
    plan = Plan(write_lines(tmp_path / "q.jsonl", [HEADER, _sliced_rank(sched, bwd)]))
    v = next(iter(GpuView(plan, 0, 1)))
    v.check()
    last = iteration_batches(v)[-1][0].info
    assert last.last and last.backward == [(0, [("x", 3, 8)]), (1, [("x", 0, 3), ("y", 0, 2)])]


# ---------------------------------------------------------------- slices in the adapters

def test_keys_of_earlier_slices_in_cu_seqlens_kv_and_packed_seq_params(tmp_path):
    plan = Plan(write_lines(tmp_path / "p.jsonl", [HEADER, _sliced_rank(
        [["F", 0], ["F", 1], ["F", 2], ["B", 1], ["B", 0], ["B", 2]])]))
    v = next(iter(GpuView(plan, 0, 1)))
    mb = v.micro_batches[1]
    assert list(mb.cu_seqlens_q) == [0, 4] and list(mb.cu_seqlens_kv) == [0, 8]
    assert mb.max_seqlen_kv == 8 and mb.sliced
    kw = packed_seq_params_kwargs(mb)
    assert kw["cu_seqlens_q"].tolist() == [0, 4] and kw["cu_seqlens_kv"].tolist() == [0, 8]
    assert kw["cu_seqlens_q"].dtype == torch.int32 and kw["max_seqlen_kv"] == 8
    # the loader: labels run across the slice boundary, positions continue the sample
    data = {"x": torch.arange(10, 18), "y": torch.arange(20, 22)}
    ds = PackedDataset(data, labels=True)
    b = collate_packed([ds[k] for k in iteration_batches(v)[1]])
    assert b["tokens"].tolist() == [14, 15, 16, 17]
    assert b["position_ids"].tolist() == [4, 5, 6, 7]
    assert b["labels"].tolist() == [15, 16, 17, IGNORE_INDEX]
    b0 = collate_packed([ds[k] for k in iteration_batches(v)[0]])
    assert b0["labels"].tolist() == [11, 12, 13, 14]     # the next slice's first token
    assert b["cu_seqlens_kv"].tolist() == [0, 8]


def test_packed_seq_params_under_context_parallelism(tmp_path):
    plan = Plan(write_lines(tmp_path / "p.jsonl", [HEADER, IT0, IT1, IT2]))
    v = list(GpuView(plan, 0, 8))[2]            # iteration 2: h (7 tokens) sharded on sp 2
    kw = packed_seq_params_kwargs(v.micro_batches[0])
    assert kw["cu_seqlens_q"].tolist() == [0, 7] and kw["cu_seqlens_q_padded"].tolist() == [0, 7]
    mixed = list(GpuView(plan, 5, 8))[0].micro_batches[0]     # a local beside a sharded
    with pytest.raises(PlanError, match="CP-local segments beside sharded"):
        packed_seq_params_kwargs(mixed)
    with pytest.raises(TypeError, match="max_seqlen"):
        packed_seq_params_kwargs([0, 4])
    it = first(IT2)
    it["ranks"][0]["mbs"] = [{"seg": [["h", 0, 3]]}, {"seg": [["h", 3, 4]]}]
    hdr = dict(HEADER, config={"training": {"sp_kind": "ring"}})
    plan = Plan(write_lines(tmp_path / "r.jsonl", [hdr, it]))
    mbs = next(iter(GpuView(plan, 0, 8))).micro_batches
    assert mbs[0].sp_kind == "ring"
    assert packed_seq_params_kwargs(mbs[0])["cu_seqlens_q_padded"].tolist() == [0, 4]
    with pytest.raises(PlanError, match="continues sample 'h' under context parallelism"):
        packed_seq_params_kwargs(mbs[1])


# ---------------------------------------------------------------- no hang, no silence

def test_a_rank_without_micro_batches_gets_an_idle_batch(tmp_path):
    """Skrull writes ranks with "mbs": [] (last iteration of a small batch): their GPUs
    still get one batch saying "step now", or the others wait in the all-reduce."""
    it = first(IT2)
    it["ranks"][1]["mbs"] = []
    it.pop("tokens", None)
    it.pop("loss_tokens", None)
    plan = Plan(write_lines(tmp_path / "p.jsonl", [HEADER, it]))
    for gpu in (2, 5):          # a GPU of the empty rank, and one in no rank
        batches = list(torch.utils.data.DataLoader(
            PackedDataset({}), batch_sampler=PlanBatchSampler(GpuView(plan, gpu, 8)),
            collate_fn=collate_packed))
        assert len(batches) == 1 and batches[0]["last"] and not batches[0]["active"]
        assert batches[0]["op"] == "idle" and batches[0]["tokens"].numel() == 0
    assert len(PlanBatchSampler(GpuView(plan, 2, 8))) == 1


def test_world_size_other_than_the_plans_is_an_error(tmp_path):
    path = make_plan(tmp_path / "p.jsonl", "pack", "cluster.gpus=8")
    for world in (4, 16):
        with pytest.raises(PlanError, match=f"the plan is for 8 GPUs .*the world has {world}"):
            GpuView(path, 0, world)
    v = GpuView(path, 12, 16, allow_larger_world=True)
    assert len(v) > 0 and not any(it.active for it in v)
    with pytest.raises(PlanError, match="the world has 4"):
        GpuView(path, 0, 4, allow_larger_world=True)


def test_start_iter_past_the_end_is_an_error(tmp_path):
    plan = Plan(write_lines(tmp_path / "p.jsonl", [HEADER, IT0, IT1, IT2]))
    assert [v.it for v in GpuView(plan, 0, 8, start_iter=2)] == [2]
    for n in (3, 10):
        with pytest.raises(PlanError, match=f"start_iter {n} is past the end: the plan has 3"):
            GpuView(plan, 0, 8, start_iter=n)


def test_process_groups_cover_every_collective_in_one_order(tmp_path):
    plan = Plan(write_lines(tmp_path / "p.jsonl", [HEADER, IT0, IT1, IT2]))
    groups = GpuView(plan, 0, 8).process_groups()
    assert groups == GpuView(plan, 7, 8).process_groups()     # every process alike
    assert groups == sorted(groups, key=lambda g: (len(g), g))
    assert all(list(g) == sorted(g) and len(g) > 1 for g in groups)
    need = set()
    for gpu in range(8):
        for v in GpuView(plan, gpu, 8):
            for grp in (v.tp_group, v.cp_group, v.pp_group):
                need.add(tuple(sorted(grp)))
            for mb in v.micro_batches + v.bwd:
                need.add(tuple(sorted(mb.cp_group)))
    assert {g for g in need if len(g) > 1} == set(groups)
    assert (0, 1, 2, 5) in groups            # the shared pack's merged CP group


def test_zero_loss_tokens_is_guarded(tmp_path):
    it = first(IT2)
    it["loss_tokens"] = 0
    plan = Plan(write_lines(tmp_path / "p.jsonl", [HEADER, it]))
    v = next(iter(GpuView(plan, 0, 8)))
    assert v.loss_tokens == 0 and v.loss_scale == 0.0
    b = collate_packed([PackedDataset({"h": list(range(7))})[k]
                        for k in iteration_batches(v)[0]])
    assert b["loss_scale"] == 0.0
    assert next(iter(GpuView(Plan(write_lines(tmp_path / "q.jsonl", [HEADER, first(IT2)])),
                             0, 8))).loss_scale == 1 / 8


def test_hand_plan_json_is_unchanged():
    """The fixtures above copy the hand plan; they must not edit it."""
    assert json.loads(json.dumps(IT2))["ranks"][1]["mbs"] == [{"seg": [["i", 0, 1]]}]
