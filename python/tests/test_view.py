"""The per-GPU view on a hand-written plan using the whole plan vocabulary: explicit and
default placement, idle GPUs, uneven micro-batch counts, a shared pack, CP-local segments,
backward packs and a schedule."""
import json

import pytest

import vlplan
from conftest import write_lines
from vlplan import GpuView, Plan, PlanError

LENGTHS = {"a": 4, "b": 6, "c": 8, "d": 3, "e": 2, "f": 5, "g": 5, "h": 7, "i": 1}
HEADER = {"type": "header", "schema": vlplan.SCHEMA, "strategy": "hand", "epochs": 1,
          "caps": ["uneven_mbs", "bwd_packs", "seg_cp", "schedule", "shared_packs"]}
IT0 = {"type": "iter", "it": 0, "epoch": 0, "tokens": 23, "loss_tokens": 20, "ranks": [
    {"dp": 0, "sp": 2, "gpus": [5, 2],
     "mbs": [{"seg": [["a", 0, 4, 0], ["b", 0, 6]], "cu_seqlens": [0, 4, 10]},
             {"seg": [["c", 0, 8]], "shared": [0, 1]}]},
    {"dp": 1, "sp": 2, "gpus": [0, 1], "mbs": [{"seg": [["c", 0, 8]], "shared": [0, 1]}]},
    {"dp": 2, "gpus": [6], "ckpt_layers": 3,
     "mbs": [{"seg": [["d", 0, 3]]}, {"seg": [["e", 0, 2]]}],
     "bwd": [{"seg": [["e", 0, 2], ["d", 0, 3]]}],
     "schedule": [["F", 0], ["F", 1], ["B", 0]]}]}
IT1 = {"type": "iter", "it": 1, "loss_tokens": 10, "ranks": [
    {"dp": 0, "tp": 2, "pp": 2, "mbs": [{"seg": [["f", 0, 5]]}]},
    {"dp": 1, "tp": 2, "pp": 2, "mbs": [{"seg": [["g", 0, 5]]}]}]}
IT2 = {"type": "iter", "it": 2, "loss_tokens": 8, "ranks": [
    {"dp": 0, "sp": 2, "mbs": [{"seg": [["h", 0, 7]]}]},
    {"dp": 1, "mbs": [{"seg": [["i", 0, 1]]}]}]}


@pytest.fixture
def hand_plan(tmp_path):
    return Plan(write_lines(tmp_path / "hand.jsonl", [HEADER, IT0, IT1, IT2]))


def views(plan, gpu, world=8, **kw):
    return list(GpuView(plan, gpu, world, **kw))


def test_idle_gpus_are_told_and_still_get_every_iteration(hand_plan):
    for g in (3, 4, 7):
        v = views(hand_plan, g)[0]
        assert not v.active and v.steps == 0 and v.micro_batches == []
        assert "not taking part" in repr(v)
    assert all(len(views(hand_plan, g)) == 3 for g in range(8))
    assert not views(hand_plan, 5)[2].active


def test_explicit_placement_cp_group_and_local_segments(hand_plan):
    v5, v2 = views(hand_plan, 5)[0], views(hand_plan, 2)[0]
    assert (v5.dp, v5.cp_index, v5.cp_group) == (0, 0, [5, 2])
    assert (v2.dp, v2.cp_index, v2.cp_group) == (0, 1, [5, 2])
    mb = v5.micro_batches[0]
    assert mb.ids == ["a", "b"] and mb.cps == [0, -1]
    assert list(mb.cu_seqlens) == [0, 4, 10] and mb.max_seqlen == 6
    assert mb.cu_seqlens.typecode == "i" and mb.cu_seqlens.itemsize == 4
    assert [s[0] for s in mb.local_segments()] == ["a", "b"]     # a (its own) and b
    assert [s[0] for s in v2.micro_batches[0].local_segments()] == ["b"]
    assert v5.loss_tokens == 20 and v5.tokens == 23


def test_shared_pack_runs_in_the_merged_group(hand_plan):
    got = {}
    for g in (5, 2, 0, 1):
        v = views(hand_plan, g)[0]
        shared = [mb for mb in v.micro_batches if mb.shared]
        assert len(shared) == 1
        got[g] = (shared[0].cp_group, shared[0].cp_index)
    assert {g: i for g, (_, i) in got.items()} == {5: 0, 2: 1, 0: 2, 1: 3}
    assert all(grp == [5, 2, 0, 1] for grp, _ in got.values())


def test_backward_packs_schedule_and_ckpt(hand_plan):
    v = views(hand_plan, 6)[0]
    assert v.steps == 2 and len(v.bwd) == 1 and v.bwd[0].ids == ["e", "d"]
    assert v.schedule == [("F", 0), ("F", 1), ("B", 0)] and v.ckpt_layers == 3


def test_default_megatron_order_and_blocks(hand_plan):
    # iteration 1: two ranks of tp 2, pp 2: GPU t + 2 (d + 2 p)
    v4 = views(hand_plan, 4)[1]
    assert (v4.dp, v4.tp_rank, v4.pp_rank) == (0, 0, 1)
    assert v4.tp_group == [4, 5] and v4.pp_group == [0, 4] and v4.rank_gpus == [0, 1, 4, 5]
    assert views(hand_plan, 3)[1].dp == 1
    # iteration 2: different shapes, consecutive blocks in rank order
    assert views(hand_plan, 1)[2].cp_group == [0, 1]
    assert views(hand_plan, 2)[2].dp == 1
    assert [views(hand_plan, g)[2].active for g in range(8)] == [True] * 3 + [False] * 5


def test_rank_and_world_from_the_environment(hand_plan, monkeypatch):
    monkeypatch.setenv("RANK", "6")
    monkeypatch.setenv("WORLD_SIZE", "8")
    v = GpuView(hand_plan)
    assert (v.rank, v.world_size, len(v)) == (6, 8, 3)
    monkeypatch.delenv("RANK")
    with pytest.raises(PlanError, match="RANK is not set"):
        GpuView(hand_plan)


def test_world_too_small_and_bad_rank(hand_plan):
    with pytest.raises(PlanError, match="runs on GPU 5, but the world has 4"):
        views(hand_plan, 0, 4)
    with pytest.raises(PlanError, match="outside"):
        GpuView(hand_plan, 8, 8)


def test_start_iter_and_len(hand_plan):
    v = GpuView(hand_plan, 0, 8, start_iter=2)
    assert len(v) == 1 and [i.it for i in v] == [2]


def test_id_to_index_hook_and_manifest_index(hand_plan, tmp_path):
    man = tmp_path / "m.jsonl"
    man.write_text("".join(json.dumps({"id": k, "len": n}) + "\n" for k, n in LENGTHS.items()))
    index = vlplan.manifest_index(str(man))
    assert index["a"] == 0 and index["i"] == 8
    v = views(hand_plan, 5, id_to_index=index.__getitem__)[0]
    assert v.micro_batches[0].indices == [0, 1]
    assert views(hand_plan, 5)[0].micro_batches[0].indices == ["a", "b"]   # default: ids


def test_duplicate_gpu_is_an_error(tmp_path):
    it = json.loads(json.dumps(IT0))
    it["ranks"][2]["gpus"] = [5]
    plan = Plan(write_lines(tmp_path / "dup.jsonl", [HEADER, it]))
    with pytest.raises(PlanError, match="GPU 5 is in ranks 0 and 2"):
        views(plan, 0)


def test_hand_plan_is_valid_for_vlplan_verify(tmp_path):
    """The fixture says what vlplan itself accepts, not what this reader assumes -- but
    for the GPUs it leaves idle on purpose (iterations 0 and 2, for the views of an idle
    GPU), which vlplan verify reports: every GPU joins every optimizer step unless the
    strategy's registry entry says it idles, and "hand" is no registered strategy."""
    import subprocess
    from conftest import vlplan_bin
    path = write_lines(tmp_path / "hand.jsonl", [HEADER, IT0, IT1, IT2])
    man = tmp_path / "m.jsonl"
    man.write_text("".join(json.dumps({"id": k, "len": n, "loss_tokens": 1 if k == "a" else n})
                           + "\n" for k, n in LENGTHS.items()))
    r = subprocess.run([vlplan_bin(), "verify", "--set", "cluster.gpus=8", path, str(man)],
                       capture_output=True, text=True)
    found = [line.split(": ", 1)[1] for line in r.stdout.splitlines()[1:]]
    assert r.returncode == 1 and found == [
        "I5: iteration 0: the ranks hold 5 of the cluster's 8 GPUs; GPU 3 joins no rank, "
        "so it sits out the optimizer step",
        "I5: iteration 2: the ranks hold 3 of the cluster's 8 GPUs; GPU 3 joins no rank, "
        "so it sits out the optimizer step"], r.stdout
