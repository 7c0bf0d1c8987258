"""The reader validates before it yields: truncation, corruption and structural errors."""
import io
import shutil
import subprocess

import pytest

import vlplan
from vlplan import Plan, PlanError


def read_all(src, **kw):
    return list(Plan(src, **kw).iterations())


def test_reads_a_plan_whole(pack_plan):
    p = Plan(pack_plan)
    its = list(p.iterations())
    assert len(its) == len(p) == p.header["iterations"] > 0
    assert [i.it for i in its] == list(range(len(p)))
    assert p.footer["iterations"] == len(p)
    assert sum(i.tokens for i in its) == p.footer["tokens"]
    assert all(0 < i.loss_tokens <= i.tokens for i in its)


def test_start_iter_resumes(pack_plan):
    p = Plan(pack_plan)
    assert [i.it for i in p.iterations(1)] == list(range(1, len(p)))


def test_truncated_file_fails_before_any_iteration(pack_plan, tmp_path):
    lines = open(pack_plan, "rb").read().splitlines(keepends=True)
    cut = tmp_path / "cut.jsonl"
    cut.write_bytes(b"".join(lines[:-2]))      # footer and last iteration gone
    with pytest.raises(PlanError, match="truncated"):
        Plan(str(cut))
    half = tmp_path / "half.jsonl"
    half.write_bytes(b"".join(lines)[: len(b"".join(lines)) // 2])  # cut mid-line
    with pytest.raises(PlanError, match=r"half.jsonl:\d+"):
        Plan(str(half))


def test_corrupted_file_fails_before_any_iteration(pack_plan, tmp_path):
    data = bytearray(open(pack_plan, "rb").read())
    i = data.index(b'"seg":[[') + 8
    data[i] = ord("1") if data[i] != ord("1") else ord("2")   # another sample id
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(bytes(data))
    with pytest.raises(PlanError, match="SHA-256 mismatch"):
        Plan(str(bad))


def test_pipe_stops_at_the_first_structural_problem(pack_plan):
    lines = open(pack_plan, "rb").read().splitlines(keepends=True)
    broken = lines[2].replace(b'"seg"', b'"sag"', 1)
    stream = io.BufferedReader(io.BytesIO(b"".join(lines[:2] + [broken] + lines[3:])))
    seen = []
    with pytest.raises(PlanError, match=r':3: iteration 1, rank 0, micro-batch 0: missing "seg"'):
        for it in Plan(stream).iterations():
            seen.append(it.it)
    assert seen == [0]


def test_pipe_checks_the_checksum_at_the_footer(pack_plan):
    data = open(pack_plan, "rb").read().replace(b'"epoch":0', b'"epoch":0 ', 1)
    with pytest.raises(PlanError, match="SHA-256"):
        read_all(io.BufferedReader(io.BytesIO(data)))


def test_pipe_reports_truncation_at_its_end(pack_plan):
    lines = open(pack_plan, "rb").read().splitlines(keepends=True)
    with pytest.raises(PlanError, match="no footer"):
        read_all(io.BufferedReader(io.BytesIO(b"".join(lines[:-1]))))


@pytest.mark.skipif(shutil.which("zstd") is None, reason="zstd not installed")
def test_zstd_plan(pack_plan, tmp_path):
    z = tmp_path / "plan.jsonl.zst"
    subprocess.run(["zstd", "-q", "-o", str(z), pack_plan], check=True)
    plain = [(i.it, i.tokens) for i in read_all(pack_plan)]
    assert [(i.it, i.tokens) for i in read_all(str(z))] == plain
    with open(z, "rb") as f:                   # a compressed pipe
        assert [(i.it, i.tokens) for i in read_all(f)] == plain
    data = bytearray(z.read_bytes())
    del data[len(data) // 2:]
    z.write_bytes(bytes(data))
    with pytest.raises(PlanError):
        Plan(str(z))


def test_zstandard_module_when_present(pack_plan, tmp_path):
    zstandard = pytest.importorskip("zstandard")
    z = tmp_path / "plan.jsonl.zst"
    z.write_bytes(zstandard.ZstdCompressor().compress(open(pack_plan, "rb").read()))
    assert len(read_all(str(z))) == len(Plan(pack_plan))


@pytest.mark.parametrize("mutate,msg", [
    (lambda r: r["ranks"][0]["mbs"][0].update(tokens=1), '"tokens" is 1'),
    (lambda r: r["ranks"][0]["mbs"][0].update(cu_seqlens=[0, 1]), '"cu_seqlens"'),
    (lambda r: r["ranks"][0]["mbs"][0]["seg"][0].__setitem__(1, -4), "offset and length"),
    (lambda r: r["ranks"][0].update(gpus=[0, 1]), '"gpus" must list'),
    (lambda r: r["ranks"][0].update(tp="2"), '"tp" is \'2\''),
    (lambda r: r.update(it=5), '"it" is 5, expected 0'),
    (lambda r: r["ranks"].append(dict(r["ranks"][0])), "same dp"),
    (lambda r: r["ranks"][0]["mbs"][0]["seg"][0].append(3), "cp 3 outside"),
    (lambda r: r["ranks"][0].update(schedule=[["F", 0], ["B", 9]]), "B 9 names no pack"),
])
def test_structural_errors_name_file_line_and_element(tmp_path, mutate, msg):
    from conftest import write_lines
    it = {"type": "iter", "ranks": [{"dp": 0, "mbs": [{"seg": [["a", 0, 5], ["b", 0, 3]],
                                                       "cu_seqlens": [0, 5, 8]}]}]}
    mutate(it)
    path = write_lines(tmp_path / "p.jsonl", [{"type": "header", "schema": vlplan.SCHEMA}, it])
    with pytest.raises(PlanError, match=r"p\.jsonl:2: .*" + msg.replace("[", r"\[")):
        Plan(path)


def test_uneven_counts_need_the_cap(tmp_path):
    from conftest import write_lines
    it = {"type": "iter", "ranks": [{"mbs": [{"seg": [["a", 0, 5]]}, {"seg": [["b", 0, 3]]}]},
                                    {"mbs": [{"seg": [["c", 0, 8]]}]}]}
    hdr = {"type": "header", "schema": vlplan.SCHEMA}
    with pytest.raises(PlanError, match="uneven_mbs"):
        Plan(write_lines(tmp_path / "a.jsonl", [hdr, it]))
    hdr["caps"] = ["uneven_mbs"]
    assert len(Plan(write_lines(tmp_path / "b.jsonl", [hdr, it]))) == 1


def test_foreign_plan_without_footer(tmp_path):
    from conftest import write_lines
    recs = [{"type": "header", "schema": vlplan.SCHEMA},
            {"type": "iter", "ranks": [{"mbs": [{"seg": [["a", 0, 5]]}]}]}]
    assert len(Plan(write_lines(tmp_path / "f.jsonl", recs, footer=False))) == 1
    recs[0]["vlplan"] = "0.1.0"     # written by vlplan: the footer is required
    with pytest.raises(PlanError, match="no footer"):
        Plan(write_lines(tmp_path / "g.jsonl", recs, footer=False))


def test_bad_schema_and_missing_file(tmp_path):
    from conftest import write_lines
    with pytest.raises(PlanError, match="schema"):
        Plan(write_lines(tmp_path / "s.jsonl", [{"type": "header", "schema": "x/2"}]))
    with pytest.raises(PlanError, match="cannot open"):
        Plan(str(tmp_path / "none.jsonl"))


def test_old_reader_is_a_wrapper(pack_plan):
    import os
    import sys
    from conftest import ROOT
    r = subprocess.run([sys.executable, os.path.join(ROOT, "tools", "vlplan_reader.py"),
                        pack_plan, "3", "8"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert "GPU 3 of 8" in r.stdout
