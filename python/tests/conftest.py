"""Fixtures: the vlplan binary (VLPLAN_BIN, else build/vlplan), plans made by it, and
small hand-written plans."""
import json
import os
import subprocess
import sys

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
# VLPLAN_TEST_INSTALLED: test the vlplan that is installed, not the source tree
if not os.environ.get("VLPLAN_TEST_INSTALLED"):
    sys.path.insert(0, os.path.join(ROOT, "python"))
else:
    import vlplan as _installed
    assert not os.path.abspath(_installed.__file__).startswith(os.path.join(ROOT, "python")), \
        f"VLPLAN_TEST_INSTALLED, but vlplan comes from the source tree: {_installed.__file__}"
MANIFEST = os.path.join(ROOT, "testdata", "golden", "manifest.jsonl")


def vlplan_bin():
    exe = os.environ.get("VLPLAN_BIN") or os.path.join(ROOT, "build", "vlplan")
    if not os.access(exe, os.X_OK):
        pytest.fail(f"no vlplan binary at {exe}: run make, or set VLPLAN_BIN")
    return exe


def run_vlplan(*args):
    r = subprocess.run([vlplan_bin(), *args], capture_output=True, text=True)
    if r.returncode != 0:
        pytest.fail(f"vlplan {' '.join(args)} failed ({r.returncode}): {r.stderr}")
    return r.stdout


def strategies():
    out = run_vlplan("strategies", "--format", "csv").splitlines()
    return [line.split(",")[0] for line in out[1:] if line]


# Strategies that refuse pipeline stages because the system they reproduce does
# (Megatron's hybrid CP): they run a setting with its stages given to data parallelism.
NO_PIPELINE = {"mcore_cp"}


def settings_for(strategy, sets):
    """sets as strategy can run them."""
    if strategy in NO_PIPELINE:
        return [s for s in sets if not s.startswith("training.pp=")]
    return list(sets)


def make_plan(path, strategy, *sets, manifest=MANIFEST, seed=7):
    args = ["plan", "-q", "-s", strategy, "--seed", str(seed), "-o", str(path),
            "--set", "training.max_seq_len=32768", "--set", "training.global_tokens=262144",
            "--set", "training.oversize=truncate"]
    for s in sets:
        args += ["--set", s]
    run_vlplan(*args, manifest)
    return str(path)


def manifest_lengths(path=MANIFEST):
    out = {}
    with open(path) as f:
        for line in f:
            rec = json.loads(line)
            out[rec["id"]] = rec["len"]
    return out


@pytest.fixture(scope="session")
def pack_plan(tmp_path_factory):
    return make_plan(tmp_path_factory.mktemp("plans") / "pack.jsonl", "pack",
                     "cluster.gpus=8")


def write_lines(path, records, footer=True):
    """Write records as a plan, with a footer whose checksum covers them."""
    import hashlib
    body = b"".join(json.dumps(r, separators=(",", ":")).encode() + b"\n" for r in records)
    if footer:
        n = sum(1 for r in records if r.get("type") == "iter")
        foot = {"type": "footer", "iterations": n, "sha256": hashlib.sha256(body).hexdigest()}
        body += json.dumps(foot).encode() + b"\n"
    with open(path, "wb") as f:
        f.write(body)
    return str(path)
