"""What a training job can get wrong with a plan, refused or guarded before it trains:
an active GPU with no micro-batch still steps, a world of another size, a start past the
end, an iteration without loss tokens, the process groups every process must create, and
the keys a slice attends to."""
import warnings

import pytest

torch = pytest.importorskip("torch")
from torch.utils.data import DataLoader  # noqa: E402

from conftest import write_lines  # noqa: E402
from vlplan import GpuView, Plan  # noqa: E402
from vlplan.stream import PlanError  # noqa: E402
from vlplan.torch_adapters import (PackedDataset, PlanBatchSampler,  # noqa: E402
                                   collate_packed, packed_seq_params_kwargs)

HEADER = {"type": "header", "schema": "vlplan.plan/1", "strategy": "hand", "epochs": 1,
          "config": {"cluster": {"gpus": 2}}, "caps": ["uneven_mbs"]}
# rank 1 is in the iteration with "mbs": [] (Skrull writes such ranks)
IT0 = {"type": "iter", "it": 0, "epoch": 0, "tokens": 5, "loss_tokens": 5, "ranks": [
    {"dp": 0, "mbs": [{"seg": [[0, 0, 3]]}, {"seg": [[1, 0, 2]]}]},
    {"dp": 1, "mbs": []}]}
IT1 = {"type": "iter", "it": 1, "epoch": 0, "tokens": 4, "loss_tokens": 0, "ranks": [
    {"dp": 0, "mbs": [{"seg": [[2, 0, 2]]}]},
    {"dp": 1, "mbs": [{"seg": [[3, 0, 2]]}]}]}


@pytest.fixture
def plan(tmp_path):
    return Plan(write_lines(tmp_path / "p.jsonl", [HEADER, IT0, IT1]))


def batches(plan, rank):
    sampler = PlanBatchSampler(GpuView(plan, rank, 2))
    loader = DataLoader(PackedDataset([[7] * 4] * 4), batch_sampler=sampler,
                        collate_fn=collate_packed)
    return list(loader)


def test_rank_without_micro_batches_still_steps(plan):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        b0, b1 = batches(plan, 0), batches(plan, 1)
    # one "last" per iteration on every GPU: the all-reduces meet
    assert [b["last"] for b in b0] == [False, True, True]
    assert [b["last"] for b in b1] == [True, True]
    assert b1[0]["tokens"].numel() == 0 and not b1[0]["active"]


def test_world_of_another_size_is_an_error(plan):
    with pytest.raises(PlanError, match=r"the plan is for 2 GPUs \(cluster.gpus\), the world has 4"):
        GpuView(plan, 0, 4)
    with pytest.raises(PlanError, match=r"the plan is for 2 GPUs \(cluster.gpus\), the world has 1"):
        GpuView(plan, 0, 1)
    idle = list(GpuView(plan, 3, 4, allow_larger_world=True))
    assert [v.active for v in idle] == [False, False]


def test_start_past_the_end_is_an_error(plan):
    assert len(GpuView(plan, 0, 2, start_iter=1)) == 1
    with pytest.raises(PlanError, match="start_iter 2 is past the end: the plan has 2 iterations"):
        GpuView(plan, 0, 2, start_iter=2)


def test_no_loss_tokens_is_guarded(plan):
    views = list(GpuView(plan, 0, 2))
    assert views[1].loss_tokens == 0
    assert views[1].loss_scale == 0.0         # a summed loss of 0 stays 0, not NaN
    assert views[0].loss_scale == 1 / 5


def test_process_groups_in_one_order(tmp_path):
    head = dict(HEADER, config={"cluster": {"gpus": 8}})
    it = {"type": "iter", "it": 0, "epoch": 0, "ranks": [
        {"dp": 0, "tp": 2, "sp": 2, "mbs": [{"seg": [[0, 0, 4]]}]},
        {"dp": 1, "tp": 2, "sp": 2, "mbs": [{"seg": [[1, 0, 4]]}]}]}
    plan = Plan(write_lines(tmp_path / "g.jsonl", [head, it]))
    groups = GpuView(plan, 0, 8).process_groups()
    assert groups == sorted(groups)
    assert (0, 1) in groups and (0, 2) in groups          # tp pair, cp pair: Megatron order
    assert len(groups) == len(set(groups)) == 8          # 4 tp pairs, 4 cp pairs
    assert GpuView(plan, 5, 8).process_groups() == groups  # every process, the same list


def test_slice_attends_to_its_earlier_keys(tmp_path):
    head = dict(HEADER, config={"cluster": {"gpus": 1}})
    its = [{"type": "iter", "it": 0, "epoch": 0, "ranks": [
        {"dp": 0, "mbs": [{"seg": [[0, 0, 4096]]}, {"seg": [[0, 4096, 4096], [1, 0, 10]]}]}]}]
    plan = Plan(write_lines(tmp_path / "s.jsonl", [head] + its))
    mb = list(GpuView(plan, 0, 1))[0].micro_batches[1]
    kw = packed_seq_params_kwargs(mb)
    assert kw["cu_seqlens_q"].tolist() == [0, 4096, 4106]
    assert kw["cu_seqlens_kv"].tolist() == [0, 8192, 8202]   # 4096 earlier keys included
    assert kw["max_seqlen_q"] == 4096 and kw["max_seqlen_kv"] == 8192


def _cycle_plan(tmp_path, order_of_rank2):
    """Three ranks, three packs each shared by two of them: X = {0,1}, Y = {1,2},
    Z = {0,2}.  Rank 0 runs X then Z, rank 1 Y then X; rank 2 runs Z then Y (a cycle:
    every member waits for another) or Y then Z (an order every rank can follow)."""
    head = dict(HEADER, config={"cluster": {"gpus": 3}})
    x = {"seg": [[0, 0, 4]], "shared": [0, 1]}
    y = {"seg": [[1, 0, 4]], "shared": [1, 2]}
    z = {"seg": [[2, 0, 4]], "shared": [0, 2]}
    rank2 = [z, y] if order_of_rank2 == "cycle" else [y, z]
    it = {"type": "iter", "it": 0, "epoch": 0, "ranks": [
        {"dp": 0, "mbs": [x, z]}, {"dp": 1, "mbs": [y, x]}, {"dp": 2, "mbs": rank2}]}
    return write_lines(tmp_path / f"{order_of_rank2}.jsonl", [head, it])


def test_shared_packs_that_deadlock_are_refused(tmp_path):
    with pytest.raises(PlanError, match="the shared packs deadlock"):
        list(Plan(_cycle_plan(tmp_path, "cycle")).iterations())
    # rank 0: X, Z; rank 1: Y, X; rank 2: Y, Z -- Y, then X, then Z
    assert len(list(Plan(_cycle_plan(tmp_path, "ok")).iterations())) == 1
