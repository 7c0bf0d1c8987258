"""Gradient equivalence: plans of every strategy, executed by the reference executor
(refexec.py) exactly as the execution contract says in an 8-process gloo world, train what
the unpacked samples train -- each iteration's summed gradient equal to that of per-sample
training on the same samples, relative error <= 1e-6 -- and mutated plans do not.

One world runs every plan (the processes start once); each plan is a test of its own that
also checks that the plan holds the feature it is there for (slices with K > 1 and
recompute, asymmetric backward packs, DP-Merge, CP-local and sharded segments, several SP
degrees, barriers, tensor and pipeline ranks, two epochs, truncation)."""
import json
import os
import random
import subprocess
import sys

import pytest

from conftest import run_vlplan, strategies, write_lines

if os.environ.get("VLPLAN_REQUIRE_TORCH"):
    import torch  # noqa: F401
else:
    pytest.importorskip("torch")

HERE = os.path.dirname(os.path.abspath(__file__))
WORLD = 8
TOL = 1e-6
# every plan for 8 GPUs, small lengths (a tiny model in float64 on 2 cores)
BASE = ["cluster.gpus=8", "training.max_seq_len=1024", "training.global_tokens=4096"]
PLANS = {
    "pack": ("pack", []),
    "pack_tp2_pp2": ("pack", ["training.tp=2", "training.pp=2"]),
    "random": ("random", ["training.micro_batch=2"]),
    "sorted": ("sorted", ["training.micro_batch=2"]),
    "verl": ("verl", []),
    "mcore_cp": ("mcore_cp", ["mcore_cp.max_seqlen_per_rank=128", "training.sp_kind=ring"]),
    "hbp": ("hbp", ["hbp.groups=128:1,512:2,1024:4", "hbp.curriculum_iters=0",
                    "training.sp_kind=ring"]),
    "chunkflow": ("chunkflow", ["chunkflow.chunk_size=128", "chunkflow.k=2"]),
    "skrull_ring": ("skrull", ["training.sp=4", "training.sp_kind=ring",
                               "skrull.bucket_size=256", "skrull.placement=paper"]),
    "skrull_ulysses": ("skrull", ["training.sp=4", "skrull.bucket_size=256",
                                  "skrull.placement=paper"]),
    "hydraulis": ("hydraulis", []),
    "slimpack": ("slimpack", ["training.global_tokens=8192", "slimpack.micropacks=3",
                              "slimpack.slice_align=16", "slimpack.min_slice_tokens=16",
                              "slimpack.min_pack_tokens=16"]),
    "chunkflow_2epochs_truncated": ("chunkflow", [
        "training.max_seq_len=256", "training.oversize=truncate", "training.epochs=2",
        "chunkflow.chunk_size=64", "chunkflow.k=3"]),
}
# minimal hand-written plan: HBP's eq. 2 shape in tokens, no config, 6 of 8 GPUs idle
MINIMAL = [{"type": "header", "schema": "vlplan.plan/1"},
           {"type": "iter", "ranks": [
               {"mbs": [{"seg": [["m1", 0, 10], ["m2", 0, 10], ["m3", 0, 10], ["m4", 0, 10]]}]},
               {"mbs": [{"seg": [["m5", 0, 20], ["m6", 0, 20]]}]}]}]
MINIMAL_LENGTHS = {"m1": 10, "m2": 10, "m3": 10, "m4": 10, "m5": 20, "m6": 20}


def manifest(path):
    """64 samples, mostly short, some to 700 tokens, string ids."""
    r = random.Random(3)
    with open(path, "w") as f:
        for i in range(64):
            n = r.choice([r.randint(4, 60)] * 3 + [r.randint(60, 300), r.randint(300, 700)])
            f.write(json.dumps({"id": f"s{i}", "len": n}) + "\n")
    return str(path)


def records(path):
    with open(path) as f:
        return [json.loads(line) for line in f]


def rewrite(src, dst, edit):
    """The plan at src with edit(iteration records) applied, footer recomputed."""
    recs = [r for r in records(src) if r["type"] != "footer"]
    edit([r for r in recs if r["type"] == "iter"])
    return write_lines(dst, recs)


def mutate_slice_before_its_prefix(its):
    """A rank forwards the second slice of a sample before the first (ChunkFlow)."""
    for it in its:
        for r in it["ranks"]:
            sched = r.get("schedule", [])
            mbs = r["mbs"]
            for a in range(len(mbs) - 1):
                if mbs[a + 1]["seg"][0][1] > 0 and mbs[a + 1]["seg"][0][0] == mbs[a]["seg"][-1][0]:
                    i, j = sched.index(["F", a]), sched.index(["F", a + 1])
                    sched[i], sched[j] = sched[j], sched[i]
                    return
    raise AssertionError("no sliced sample to mutate")


def mutate_segment_on_two_coordinates(its):
    """A CP-local segment (Skrull) is placed on a second coordinate as well."""
    for it in its:
        for r in it["ranks"]:
            for p in r["mbs"]:
                for s in p["seg"]:
                    if len(s) == 4:
                        twin = s[:3] + [(s[3] + 1) % r["sp"]]
                        p["seg"].append(twin)
                        for k in ("tokens", "cu_seqlens", "cap"):
                            p.pop(k, None)
                        it["tokens"] += s[2]
                        it["loss_tokens"] += s[2]
                        return
    raise AssertionError("no CP-local segment to mutate")


def mutate_backward_before_later_tokens(its):
    """A rank runs the backward of a sample's first slice before that of its last."""
    for it in its:
        for r in it["ranks"]:
            sched = r.get("schedule", [])
            bs = [k for k, op in enumerate(sched) if op[0] == "B"]
            for x in range(len(bs) - 1):
                a, b = sched[bs[x]][1], sched[bs[x + 1]][1]
                sa, sb = r["mbs"][a]["seg"], r["mbs"][b]["seg"]
                if sa[0][0] == sb[-1][0] and sa[0][1] > sb[-1][1]:
                    sched[bs[x]], sched[bs[x + 1]] = sched[bs[x + 1]], sched[bs[x]]
                    return
    raise AssertionError("no backward pair to mutate")


def run_world(tmp, man, specs, world=WORLD, timeout=900):
    out = os.path.join(tmp, "results.json")
    env = dict(os.environ, WORLD_SIZE=str(world), VLPLAN_STORE=os.path.join(tmp, "store"),
               OMP_NUM_THREADS="1", PYTHONDONTWRITEBYTECODE="1")
    procs = [subprocess.Popen([sys.executable, os.path.join(HERE, "refexec.py"), out, man,
                               *specs], env=dict(env, RANK=str(r)), stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True) for r in range(world)]
    logs = []
    try:
        for p in procs:
            logs.append(p.communicate(timeout=timeout)[0])
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
    if any(p.returncode for p in procs):
        # the process that failed first, not one that lost its peers after
        bad = [i for i, p in enumerate(procs) if p.returncode]
        first = next((i for i in bad if "Connection closed" not in logs[i]), bad[0])
        pytest.fail(f"processes {bad} of the world failed; process {first}:\n"
                    f"{logs[first][-4000:]}")
    with open(out) as f:
        return json.load(f)


@pytest.fixture(scope="session")
def world(tmp_path_factory):
    """Make every plan, run them all in one world; {name: (plan path, result)}."""
    tmp = tmp_path_factory.mktemp("equiv")
    man = manifest(tmp / "manifest.jsonl")
    from test_view import HEADER, IT0, IT1, IT2, LENGTHS
    with open(man, "a") as f:          # the hand-written plans' samples too
        for sid, n in list(LENGTHS.items()) + list(MINIMAL_LENGTHS.items()):
            f.write(json.dumps({"id": sid, "len": n}) + "\n")
    paths = {}
    for name, (strategy, sets) in PLANS.items():
        path = str(tmp / f"{name}.jsonl")
        args = ["plan", "-q", "-s", strategy, "--seed", "7", "-o", path]
        for s in BASE + sets:
            args += ["--set", s]
        # the hand samples are not in these plans: plan from the generated ones only
        run_vlplan(*args, manifest(tmp / "gen.jsonl"))
        paths[name] = path
    paths["hand"] = write_lines(tmp / "hand.jsonl", [HEADER, IT0, IT1, IT2])
    paths["minimal"] = write_lines(tmp / "minimal.jsonl", MINIMAL, footer=False)
    paths["mut_slice_order"] = rewrite(paths["chunkflow"], tmp / "m1.jsonl",
                                       mutate_slice_before_its_prefix)
    paths["mut_two_coordinates"] = rewrite(paths["skrull_ring"], tmp / "m2.jsonl",
                                           mutate_segment_on_two_coordinates)
    paths["mut_lifo"] = rewrite(paths["chunkflow"], tmp / "m3.jsonl",
                                mutate_backward_before_later_tokens)
    extra = {"no_prefix_chunkflow": ("chunkflow", "no_prefix"),
             "no_prefix_slimpack": ("slimpack", "no_prefix"),
             "unchecked_two_coordinates": ("mut_two_coordinates", "unchecked")}
    specs = [paths[n] for n in paths] + [paths[p] + ":" + m for p, m in extra.values()]
    res = run_world(str(tmp), man, specs)
    out = {n: (paths[n], res[paths[n]]) for n in paths}
    for name, (p, m) in extra.items():
        out[name] = (paths[p], res[paths[p] + ":" + m])
    return out


def features(path):
    """What a plan uses, counted over its iterations."""
    f = {"sp": set(), "tp": set(), "pp": set(), "k": set(), "R": 0, "sliced": 0, "asym": 0,
         "shared": 0, "barrier": 0, "local": 0, "sharded": 0, "epochs": set(), "dropped": 0,
         "idle_rank": 0}
    for r in records(path):
        if r["type"] == "footer":
            f["dropped"] = len(r.get("dropped", []))
        if r["type"] != "iter":
            continue
        f["epochs"].add(r.get("epoch", 0))
        for k in r["ranks"]:
            f["sp"].add(k.get("sp", 1))
            f["tp"].add(k.get("tp", 1))
            f["pp"].add(k.get("pp", 1))
            if "k" in k:
                f["k"].add(k["k"])
            f["R"] += sum(1 for op in k.get("schedule", []) if op[0] == "R")
            if "bwd" in k and [p["seg"] for p in k["bwd"]] != [p["seg"] for p in k["mbs"]]:
                f["asym"] += 1
            f["idle_rank"] += not k["mbs"]
            for p in k["mbs"]:
                if "shared" in p:
                    f["shared"] += 1
                    f["barrier"] += not p["seg"]
                for s in p["seg"]:
                    f["sliced"] += s[1] > 0
                    if len(s) == 4 and s[3] >= 0:
                        f["local"] += 1
                    elif k.get("sp", 1) > 1:
                        f["sharded"] += 1
    return f


# what each plan must hold for its test to mean something
EXPECT = {
    "pack_tp2_pp2": lambda f: f["tp"] == {2} and f["pp"] == {2},
    "mcore_cp": lambda f: f["shared"] > f["barrier"] > 0,
    "hbp": lambda f: len(f["sp"]) >= 3,
    "chunkflow": lambda f: f["k"] == {2} and f["R"] > 0 and f["sliced"] > 0,
    "skrull_ring": lambda f: f["local"] > 0 and f["sharded"] > 0,
    "skrull_ulysses": lambda f: f["local"] > 0 and f["sharded"] > 0,
    "slimpack": lambda f: f["asym"] > 0 and f["shared"] > 0 and f["sliced"] > 0,
    "chunkflow_2epochs_truncated": lambda f: f["epochs"] == {0, 1} and f["dropped"] > 0
    and f["k"] == {3} and f["R"] > 0,
    "hand": lambda f: f["local"] > 0 and f["shared"] > 0 and f["asym"] > 0,
}


@pytest.mark.parametrize("name", sorted(PLANS) + ["hand", "minimal"])
def test_gradients_equal_unpacked_training(world, name):
    path, res = world[name]
    assert "refused" not in res, res.get("refused")
    assert res["iterations"] > 0 and not res["problems"], res
    assert res["rel_err"] <= TOL, f"{name}: relative gradient error {res['rel_err']:.3g}"
    if name in EXPECT:
        assert EXPECT[name](features(path)), f"{name} lacks its feature: {features(path)}"


def test_every_strategy_is_covered():
    assert {strategy for strategy, _ in PLANS.values()} == set(strategies())


@pytest.mark.parametrize("name", ["no_prefix_chunkflow", "no_prefix_slimpack",
                                  "unchecked_two_coordinates"])
def test_a_wrong_execution_or_plan_changes_the_gradient(world, name):
    """Slices that ignore their earlier keys (cu_seqlens_kv = cu_seqlens_q), a segment
    computed on two CP coordinates: the gradient check catches them."""
    _, res = world[name]
    assert "refused" not in res, res
    assert res["rel_err"] > 1e-3, f"{name}: the check did not see it ({res['rel_err']:.3g})"


@pytest.mark.parametrize("name, words", [
    ("mut_slice_order", "were not forwarded before it"),
    ("mut_lifo", "before that of its later tokens"),
    ("mut_two_coordinates", "forwarded twice")])
def test_a_plan_the_contract_cannot_run_is_refused(world, name, words):
    """The contract's checks (IterationView.check) refuse these plans on every process
    before any collective: a slice before its earlier keys, a backward before its
    sample's later tokens, a segment computed twice."""
    _, res = world[name]
    assert words in res.get("refused", ""), res
