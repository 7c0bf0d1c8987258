"""The two plan readers agree (issue 28 item 3): tools/diff_readers.py, the differential
fuzzer of the C reader (`vlplan metrics`) and this one, run briefly with its fixed seed
(`make fuzz` runs it for minutes); and every disagreement it or a reading of
lib/plan/planio_read.c found, kept as a regression: a file the C reader refuses, the
Python reader refuses too, with PlanError."""
import hashlib
import json
import os
import subprocess
import sys

import pytest

from conftest import ROOT, vlplan_bin
from vlplan import Plan
from vlplan.stream import PlanError

sys.path.insert(0, os.path.join(ROOT, "tools"))
import diff_readers  # noqa: E402

HEAD = {"type": "header", "schema": "vlplan.plan/1", "strategy": "hand", "epochs": 1}
IT = {"type": "iter", "it": 0, "epoch": 0, "samples": 1,
      "ranks": [{"dp": 0, "mbs": [{"seg": [[0, 0, 4]]}]}]}


def write(path, lines, footer_extra=None):
    """Records as a plan with a footer whose checksum is true, footer_extra merged in."""
    text = "".join(json.dumps(r, separators=(",", ":")) + "\n" for r in lines)
    foot = {"type": "footer", "iterations": sum(r.get("type") == "iter" for r in lines),
            "sha256": hashlib.sha256(text.encode()).hexdigest()}
    foot.update(footer_extra or {})
    path.write_text(text + json.dumps(foot, separators=(",", ":")) + "\n")
    return str(path)


REFUSED = {
    # found by the fuzzer: the footer's "dropped" and counts, never checked here
    "footer dropped not a list": ([HEAD, IT], {"dropped": 7}),
    "footer dropped offset negative": ([HEAD, IT], {"dropped": [[0, -1, 4, "truncated"]]}),
    "footer dropped reason unknown": ([HEAD, IT], {"dropped": [[0, 0, 4, "truNcated"]]}),
    "footer samples null": ([HEAD, IT], {"samples": None}),
    "footer samples negative": ([HEAD, IT], {"samples": -1}),
    # found reading the C reader: null is present, not absent; names it knows
    "footer sha256 null": ([HEAD, IT], {"sha256": None}),
    "header caps unknown": ([dict(HEAD, caps=["warp"]), IT], None),
    "header caps world_optimizer": ([dict(HEAD, caps=["world_optimizer"]), IT], None),
    "header optimizer_shard unknown": ([dict(HEAD, optimizer_shard="all"), IT], None),
    "header config null": ([dict(HEAD, config=None), IT], None),
    "header params a list": ([dict(HEAD, params=[1]), IT], None),
    "header iterations null": ([dict(HEAD, iterations=None), IT], None),
    "header epochs past 32 bits": ([dict(HEAD, epochs=1 << 32), IT], None),
    "header strategy of 48 bytes": ([dict(HEAD, strategy="s" * 48), IT], None),
    "header manifest samples negative": ([dict(HEAD, manifest={"samples": -1}), IT], None),
    "header vlplan a number": ([dict(HEAD, vlplan=1), IT], None),
    "iteration samples null": ([HEAD, dict(IT, samples=None)], None),
    "segment id with NUL": ([HEAD, dict(IT, ranks=[{"dp": 0, "mbs": [{"seg": [["a\0b", 0, 4]]}]}])],
                            None),
    # found by the fuzzer: the C types of the integer fields (lib/plan/planio_fields.c)
    "rank dp past int32": ([HEAD, dict(IT, ranks=[{"dp": 1 << 31, "mbs": [{"seg": [[0, 0, 4]]}]}])],
                           None),
    "pack cap past uint32": ([HEAD, dict(IT, ranks=[{"dp": 0, "mbs": [{"seg": [[0, 0, 4]],
                                                                       "cap": 1 << 32}]}])], None),
    "segment offset past uint32": ([HEAD, dict(IT, ranks=[{"dp": 0, "mbs": [{"seg": [
        [0, 1 << 32, 4]]}]}])], None),
}

ACCEPTED = {
    "footer dropped well formed": ([HEAD, IT], {"dropped": [[0, 4, 4, "truncated"]]}),
    "header strategy of 47 bytes": ([dict(HEAD, strategy="s" * 47), IT], None),
}


def c_reader(path):
    return subprocess.run([vlplan_bin(), "metrics", path], capture_output=True, text=True)


def python_reads(path):
    for _ in Plan(path).iterations():
        pass


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_both_readers_refuse(tmp_path, name):
    lines, extra = REFUSED[name]
    path = write(tmp_path / "p.jsonl", lines, extra)
    r = c_reader(path)
    assert r.returncode == diff_readers.EX_DATAERR, r.stderr
    with pytest.raises(PlanError):
        python_reads(path)


@pytest.mark.parametrize("name", sorted(ACCEPTED))
def test_both_readers_accept(tmp_path, name):
    lines, extra = ACCEPTED[name]
    path = write(tmp_path / "p.jsonl", lines, extra)
    r = c_reader(path)
    assert r.returncode == 0, r.stderr
    python_reads(path)


def test_every_base_plan_reads_with_its_views():
    """Every plan the fuzzer mutates reads whole in Python, views and contract checks
    included, as vlplan verify accepts it.  A pack plan under training.oversize=split
    once failed here: its pieces were read as slices continuing their samples (found by
    the fuzzer: the Python reader refused what verify accepts)."""
    for name, lines in diff_readers.bases():
        path = os.path.join(ROOT, "testdata", "golden" if not name.startswith("base_")
                            else "verify", name + ".jsonl")
        assert diff_readers.read_python(path, 30.0) == "accept", name


def test_pieces_attend_to_themselves_only(tmp_path):
    """A piece of a split sample is a sequence of its own (contract module doc): its
    keys are its own tokens, not its sample's earlier ones, and no order among the pieces
    is required; the same segments in a plan that is not split are slices."""
    from vlplan import GpuView
    path = os.path.join(ROOT, "testdata", "verify", "base_pack_split.jsonl")
    cut = 0
    for gpu in range(8):
        for view in GpuView(path, gpu, 8):
            view.check()
            for mb in view.micro_batches:
                cut += any(o > 0 for o in mb.offsets)
                assert list(mb.cu_seqlens_kv) == list(mb.cu_seqlens) and not mb.sliced
                assert mb.shard().cu_seqlens_kv == mb.shard().cu_seqlens_q
    assert cut > 0, "the base plan has no piece past a sample's first"
    with open(path) as f:
        lines = [json.loads(x) for x in f]
    lines[0]["config"]["training"]["oversize"] = "truncate"   # now they read as slices
    sliced = write(tmp_path / "s.jsonl", lines[:-1])
    with pytest.raises(PlanError, match="were not forwarded before it"):
        for gpu in range(8):
            for view in GpuView(sliced, gpu, 8):
                view.check()


def test_keys_past_int32_are_a_plan_error(tmp_path):
    """A segment at offset 2^31 reads in C (a uint32; verify refuses it against the
    manifest), and in Python its keys would overflow the int32 cu_seqlens: PlanError, not
    OverflowError (found by the fuzzer)."""
    it = dict(IT, ranks=[{"dp": 0, "mbs": [{"seg": [[0, 1 << 31, 4]]}]}])
    path = write(tmp_path / "p.jsonl", [HEAD, it])
    assert diff_readers.read_python(path, 30.0) == "reject"


def test_the_fuzzer_finds_no_disagreement_in_a_brief_run():
    """60 cases over the golden plans of every strategy, seed 28 (a few seconds)."""
    out = []

    class Sink:
        def write(self, s):
            out.append(s)

    n, findings, _ = diff_readers.run(28, 60, None, vlplan_bin(), None, 10.0, out=Sink())
    assert n == 60
    assert not findings, "".join(out)


def test_the_fuzzer_tells_a_disagreement():
    """The judge is not vacuous: a C refusal the Python reader accepts is a finding, and
    so is a Python refusal verify accepts, or any exception but PlanError."""
    j = diff_readers.judge
    assert j("reject", "accept", "-").startswith("disagree")
    assert j("accept", "reject", "accept").startswith("disagree")
    assert j("accept", "python: KeyError: 'x'", "-").startswith("python")
    assert j("accept", "accept", "-") is None
    assert j("accept", "reject", "reject") is None
    assert j("config", "accept", "-") is None
