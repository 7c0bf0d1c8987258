"""The torch adapters: a real DataLoader over a plan, PackedSeqParams arguments, and the
package importing without torch."""
import os
import subprocess
import sys

import pytest

from conftest import ROOT, make_plan, manifest_lengths

# make test installs torch (tools/deps.sh) and sets VLPLAN_REQUIRE_TORCH: no silent skip
if os.environ.get("VLPLAN_REQUIRE_TORCH"):
    import torch
else:
    torch = pytest.importorskip("torch")
from torch.utils.data import DataLoader  # noqa: E402

from vlplan import GpuView, Plan  # noqa: E402
from vlplan.torch_adapters import (PackedDataset, PlanBatchSampler, collate_packed,  # noqa
                                   packed_seq_params_kwargs)


class Tokens(torch.utils.data.Dataset):
    """Sample i is the tokens i*100000 + [0, len): every token says where it came from."""

    def __init__(self, lengths):
        self.lengths = lengths

    def __len__(self):
        return len(self.lengths)

    def __getitem__(self, i):
        return torch.arange(self.lengths[i]) + i * 100000


@pytest.mark.parametrize("workers", [0, 2])
def test_dataloader_loop_over_a_plan(tmp_path, workers):
    lengths = manifest_lengths()
    path = make_plan(tmp_path / "hbp.jsonl", "hbp", "cluster.gpus=8")
    plan = Plan(path)
    seen = []
    steps = 0
    # the GPUs at tensor coordinate 0 and stage 0 keep what they load: each CP member its
    # share, so every token once
    leaders = {(g, v.it) for g in range(8) for v in GpuView(plan, g, 8)
               if v.active and v.tp_rank == 0 and v.pp_rank == 0}
    assert any(v.sp > 1 for v in GpuView(plan, 0, 8)), "no context parallelism in the plan"
    for gpu in range(8):
        sampler = PlanBatchSampler(GpuView(plan, gpu, 8))
        loader = DataLoader(PackedDataset(Tokens(lengths)), batch_sampler=sampler,
                            collate_fn=collate_packed, num_workers=workers)
        n = 0
        for b in loader:
            n += 1
            assert b["cu_seqlens"].dtype == torch.int32
            assert int(b["cu_seqlens"][-1]) == b["local_tokens"] <= b["tokens"].numel()
            assert b["position_ids"].shape == b["tokens"].shape == b["loss_mask"].shape
            if b["last"]:
                steps += 1      # the optimizer steps here
            if b["active"] and (gpu, b["it"]) in leaders:
                seen.append(b["tokens"][b["loss_mask"].bool()])
            assert b["loss_tokens"] > 0
        assert n == len(sampler)
    assert steps == 8 * len(plan)
    got = torch.cat(seen).sort().values
    want = torch.cat([Tokens(lengths)[i] for i in sorted(lengths)])
    dropped = sum(d[2] for d in plan.footer["dropped"])
    assert got.numel() == want.numel() - dropped
    assert torch.equal(torch.unique(got), got)          # no token twice


def test_idle_gpu_gets_one_empty_batch_per_iteration(tmp_path):
    from conftest import write_lines
    from test_view import HEADER, IT0, IT1, IT2
    plan = Plan(write_lines(tmp_path / "hand.jsonl", [HEADER, IT0, IT1, IT2]))
    sampler = PlanBatchSampler(GpuView(plan, 7, 8, id_to_index="abcdefghi".index))
    loader = DataLoader(PackedDataset([[1] * 9] * 9), batch_sampler=sampler,
                        collate_fn=collate_packed)
    batches = list(loader)
    assert [b["active"] for b in batches] == [False, True, False]
    assert all(b["last"] for b in batches) and batches[0]["tokens"].numel() == 0


def test_packed_seq_params_kwargs():
    from test_view import HEADER, IT0
    from conftest import write_lines
    import tempfile
    import os
    with tempfile.TemporaryDirectory() as d:
        plan = Plan(write_lines(os.path.join(d, "p.jsonl"), [HEADER, IT0]))
        mb = list(GpuView(plan, 5, 8))[0].micro_batches[0]
    kw = packed_seq_params_kwargs(mb.cu_seqlens, mb.max_seqlen)
    assert kw["qkv_format"] == "thd"
    assert kw["cu_seqlens_q"].dtype == torch.int32 and kw["cu_seqlens_q"].tolist() == [0, 4, 10]
    assert kw["cu_seqlens_kv"] is kw["cu_seqlens_q"]
    assert kw["max_seqlen_q"] == kw["max_seqlen_kv"] == 6


def test_imports_without_torch():
    code = ("import sys; sys.modules['torch'] = None; sys.path.insert(0, 'python'); "
            "import vlplan; print(vlplan.GpuView.__name__)")
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 0 and r.stdout.strip() == "GpuView", r.stderr
