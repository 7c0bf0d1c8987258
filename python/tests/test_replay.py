"""tools/replay_plan.py on the CPU at a tiny shape: it runs the plans of a few strategies
(chunkflow's among them, whose slices attend to their sample's earlier keys), gives one
row per chosen (iteration, rank) with positive finite times beside the simulator's, and
its attention of a slice equals full-sequence attention.  The times are not judged here
(the GPU comparison is bench/replay_gpu.sh)."""
import importlib.util
import json
import math
import os

import pytest

from conftest import ROOT, run_vlplan

if not os.environ.get("VLPLAN_REQUIRE_TORCH"):   # make test requires it: no silent skip
    pytest.importorskip("torch")
import torch  # noqa: E402

spec = importlib.util.spec_from_file_location(
    "replay_plan", os.path.join(ROOT, "tools", "replay_plan.py"))
replay = importlib.util.module_from_spec(spec)
spec.loader.exec_module(replay)

SETS = ["cluster.gpus=2", "training.max_seq_len=512", "training.oversize=truncate",
        "training.global_batch=6", "chunkflow.chunk_size=128", "chunkflow.k=1"]


@pytest.fixture(scope="module")
def plans(tmp_path_factory):
    d = tmp_path_factory.mktemp("replay")
    manifest = d / "m.jsonl"
    run_vlplan("gen", "--dist", "lmsys", "-n", "12", "--seed", "3", "-o", str(manifest))
    out = {}
    for s in ("pack", "chunkflow"):
        out[s] = str(d / f"{s}.jsonl")
        args = ["plan", "-q", "-s", s, "--allow-oom", "-o", out[s]]
        for kv in SETS:
            args += ["--set", kv]
        run_vlplan(*args, str(manifest))
    return out


def run_tool(capsys, *args):
    assert replay.main(["--tiny", "--threads", "1", "--json", *args]) == 0
    return json.loads(capsys.readouterr().out)


@pytest.mark.parametrize("strategy", ["pack", "chunkflow"])
def test_replay_rows(plans, capsys, strategy):
    got = run_tool(capsys, "--iters", "0,1", "--ranks", "0,1", plans[strategy])
    assert got["strategy"] == strategy and got["device"] == "cpu" and not got["skipped"]
    assert [(r["iter"], r["rank"]) for r in got["rows"]] == [(0, 0), (0, 1), (1, 0), (1, 1)]
    for r in got["rows"]:
        for k in ("measured_ms", "simulated_ms"):
            assert math.isfinite(r[k]) and r[k] > 0, r
        assert r["tokens"] > 0
    assert math.isfinite(got["mape"]) and got["worst"] >= got["mape"] >= 0


def test_chunkflow_plan_slices(plans):
    import vlplan
    sliced = [s for it in vlplan.Plan(plans["chunkflow"]).iterations() for r in it.ranks
              for m in r.mbs for s in m.segs if s.offset > 0]
    assert sliced, "the test plan should slice a sample"


def test_slice_attends_to_earlier_keys():
    torch.manual_seed(0)
    n, o = 40, 24
    q, k, v = torch.randn(n, 4, 8), torch.randn(n, 2, 8), torch.randn(n, 2, 8)
    full = replay.attend(q, k, v, [n], [0])
    part = replay.attend(q[o:], k, v, [n - o], [o])
    assert torch.allclose(part, full[o:], atol=1e-5)
    # packed beside a whole sequence: each segment its own keys
    q2, k2, v2 = torch.randn(10, 4, 8), torch.randn(10, 2, 8), torch.randn(10, 2, 8)
    packed = replay.attend(torch.cat([q2, q[o:]]), torch.cat([k2, k]), torch.cat([v2, v]),
                           [10, n - o], [0, o])
    assert torch.allclose(packed[10:], full[o:], atol=1e-5)
    assert torch.allclose(packed[:10], replay.attend(q2, k2, v2, [10], [0]), atol=1e-5)


def test_layer_keeps_earlier_keys():
    """A sample run in two slices through the tool's layer (the first slice's K/V kept
    as Runner.forward keeps them) gives the second slice the output of the whole."""
    torch.manual_seed(1)
    stack = replay.Stack(replay.TINY, 1, torch.device("cpu"), torch.float32)
    L, n, o = stack.layers[0], 30, 18
    x = torch.randn(n, replay.TINY["hidden"])
    with torch.no_grad():
        whole, _ = stack.layer(L, x, {}, 0, [(7, 0, n)], False)
        store = {}
        first, fresh = stack.layer(L, x[:o], store, 0, [(7, 0, o)], False)
        for sid, kk, vv in fresh:
            store[(0, sid)] = (kk, vv)
        second, _ = stack.layer(L, x[o:], store, 0, [(7, o, n - o)], False)
    assert torch.allclose(first, whole[:o], atol=1e-5)
    assert torch.allclose(second, whole[o:], atol=1e-5)
