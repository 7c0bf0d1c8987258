"""tools/profile_step.py at toy size on the CPU, and its file through vlplan calibrate.
Nothing here judges the times (speed belongs to bench/): only that the harness runs,
writes what calibrate reads, and that calibrate fits it."""
import csv
import os
import subprocess
import sys

import pytest

from conftest import ROOT, run_vlplan

if not os.environ.get("VLPLAN_REQUIRE_TORCH"):   # make test requires it: no silent skip
    pytest.importorskip("torch")


def test_profile_then_calibrate(tmp_path):
    fit, held, model = tmp_path / "fit.csv", tmp_path / "held.csv", tmp_path / "model.yaml"
    r = subprocess.run([sys.executable, os.path.join(ROOT, "tools", "profile_step.py"),
                        "--device", "cpu", "--threads", "1", "--layers", "2", "--hidden", "32",
                        "--heads", "4", "--kv-heads", "2", "--ffn", "64", "--tokens", "64,128",
                        "--min-len", "16", "--warmup", "0", "--repeat", "1",
                        "--ckpt-layers", "1", "-o", str(fit), "--holdout", str(held),
                        "--model-yaml", str(model), "--head", "--vocab", "100"],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    rows = list(csv.DictReader(line for line in open(fit) if not line.startswith("#")))
    heads = [row for row in rows if row["head"] == "1"]   # one LM head row per budget
    assert sorted(int(row["tokens"]) for row in heads) == [64, 128]
    rows = [row for row in rows if row["head"] == "0"]
    heldrows = [line for line in open(held) if line[0].isdigit()]
    assert len(rows) >= 4 and len(heldrows) >= 3
    for row in rows:
        n = int(row["tokens"])
        assert n in (64, 128) and n <= int(row["sum_len2"]) <= n * n
        assert float(row["seconds"]) > 0 and row["layers"] == "2" and row["ckpt_layers"] == "1"
    assert len({row["sum_len2"] for row in rows if row["tokens"] == "128"}) > 1  # shapes vary
    out = run_vlplan("calibrate", "-c", str(model), "--eval", str(held), "-o",
                     str(tmp_path / "calib.yaml"), str(fit))
    assert "after calibration:" in out and "held out, after calibration:" in out
    assert "the LM head and loss (2 rows with head = 1): cost.head_scale" in out
    assert "head_scale: " in open(tmp_path / "calib.yaml").read()
    run_vlplan("config", "-c", str(model), "-c", str(tmp_path / "calib.yaml"))


TINY = ["--device", "cpu", "--threads", "1", "--layers", "2", "--hidden", "32", "--heads", "4",
        "--kv-heads", "2", "--ffn", "64", "--min-len", "16", "--warmup", "0", "--repeat", "1"]


def _rows(path):
    return list(csv.DictReader(line for line in open(path) if not line.startswith("#")))


def test_cp_rows_time_one_gpus_share(tmp_path):
    """--cp 2: rows of the whole micro-batch's tokens and sum_len2, the scheme (sp 2, ring,
    communication analytic), and the GEMM tokens of the share timed: seq / cp."""
    fit = tmp_path / "cp.csv"
    r = subprocess.run([sys.executable, os.path.join(ROOT, "tools", "profile_step.py"), *TINY,
                        "--tokens", "64,128", "--cp", "2", "--head", "--vocab", "100",
                        "-o", str(fit)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert "communication: analytic" in open(fit).read()
    rows = _rows(fit)
    layers = [row for row in rows if row["head"] == "0"]
    assert len(layers) >= 6
    for row in rows:
        assert (row["sp"], row["sp_kind"], row["comm"]) == ("2", "ring", "analytic")
        assert int(row["local_tokens"]) * 2 == int(row["tokens"])
        assert int(row["tokens"]) in (64, 128) and float(row["seconds"]) > 0
    for row in layers:
        assert int(row["tokens"]) <= int(row["sum_len2"]) <= int(row["tokens"]) ** 2
    # calibrate reads them as a scheme of their own, measured against the correction
    model = tmp_path / "model.yaml"
    one = tmp_path / "one.csv"
    r = subprocess.run([sys.executable, os.path.join(ROOT, "tools", "profile_step.py"), *TINY,
                        "--tokens", "64,128", "-o", str(one), "--model-yaml", str(model)],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    both = tmp_path / "both.csv"
    both.write_text(open(one).read() + "".join(
        line for line in open(fit) if line[0].isdigit()))
    out = run_vlplan("calibrate", "-c", str(model), "--set", "training.sp_kind=ring",
                     "-o", str(tmp_path / "calib.yaml"), str(both))
    assert "tp1 pp1 sp2 ring compute, measured (its own fit)" in out
    assert "tp1 pp1 sp2 ring compute, corrected (analytic compute x " in out


def _load_profile_step():
    sys.path.insert(0, os.path.join(ROOT, "tools"))
    try:
        import profile_step
    finally:
        sys.path.pop(0)
    return profile_step


@pytest.mark.parametrize("kind", ["ring", "ulysses"])
def test_shard_share_gemm_tokens_and_attention_work(kind, monkeypatch):
    """What one GPU computes under sp 2: its GEMMs see seq / 2 tokens of each sequence, and
    its attention the share of the causal work the cost model charges it (lib/model/cost.c:
    pairs / sp, the ring's load-balanced halves giving every GPU the same)."""
    ps = _load_profile_step()
    args = ps.parse_args(TINY + ["--tokens", "64", "--sp", "2", "--sp-kind", kind, "-o", "x"])
    runner = ps.Runner(args)
    lengths = [32, 16, 16]
    gemm_tokens, pairs = [], []
    runner.layers[0].qkv.register_forward_hook(lambda m, i, o: gemm_tokens.append(i[0].shape[0]))
    runner.layers[0].down.register_forward_hook(lambda m, i, o: gemm_tokens.append(i[0].shape[0]))
    real = ps.causal_attention

    def counting(q, k, v):
        b, h, tq, _ = q.shape
        tk = k.shape[-2]
        pairs.append(b * h * (tq * tk - tq * (tq - 1) // 2))   # bottom-right causal
        return real(q, k, v)

    if kind == "ring":   # GPU 0 of 2 holds chunks 0 and 3 of 4
        g = ps.RingGroups([32], 2, 2, 8, "cpu", ps.torch.float32)
        assert g.pos.tolist() == list(range(8)) + list(range(24, 32))
    monkeypatch.setattr(ps, "causal_attention", counting)
    runner.step(lengths)
    assert gemm_tokens == [sum(lengths) // 2] * 2
    full = sum(n * (n + 1) // 2 for n in lengths) * args.heads
    assert sum(pairs) == args.layers * full // 2
