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
