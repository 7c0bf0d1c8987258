"""The reader fails only with PlanError, in bounded time and memory, on any input: plans
crafted to break it (each a defect once found, kept as a regression), and mutated plans of
every strategy with their checksum recomputed, so that the structure, not the SHA-256, is
what gets tested."""
import hashlib
import json
import random
import tracemalloc

import pytest

from conftest import run_vlplan, strategies
from vlplan import GpuView, Plan
from vlplan.stream import PlanError

HEAD = {"type": "header", "schema": "vlplan.plan/1", "strategy": "hand", "epochs": 1,
        "config": {"cluster": {"gpus": 8}}}


def one_rank(**rank):
    return {"dp": 0, "mbs": [{"seg": [[0, 0, 4]]}], **rank}


def write(path, lines, footer=True):
    """Records as a plan file, with a footer whose checksum is true."""
    text = "".join(json.dumps(r, separators=(",", ":")) + "\n" for r in lines)
    if footer:
        foot = {"type": "footer", "iterations": sum(r.get("type") == "iter" for r in lines),
                "sha256": hashlib.sha256(text.encode()).hexdigest()}
        text += json.dumps(foot, separators=(",", ":")) + "\n"
    path.write_text(text)
    return str(path)


def read_all(path, world=8, ranks=8):
    """What a trainer does with a plan: read it whole, then the views of GPUs."""
    plan = Plan(path)
    for _ in plan.iterations():
        pass
    w = plan.world_size if isinstance(plan.world_size, int) else world
    for rank in range(0, w, max(1, w // ranks)):
        for view in GpuView(path, rank=rank, world_size=w):
            for mb in view.micro_batches:
                mb.shard()


CRAFTED = {
    # a rank of 2^20 x 2^20 x 32 GPUs on an 8-GPU cluster: sized before it was checked
    "rank larger than the cluster": [HEAD, {"type": "iter", "it": 0, "ranks": [
        one_rank(tp=1 << 20, sp=1 << 20, pp=32)]}],
    "backward pack shared with a dp not in the iteration": [HEAD, {
        "type": "iter", "it": 0, "ranks": [
            {"dp": 0, "mbs": [{"seg": [[0, 0, 4]]}], "bwd": [{"seg": [[0, 0, 4]],
                                                              "shared": [0, 5]}]},
            {"dp": 1, "mbs": [{"seg": [[1, 0, 4]]}]}]}],
    "header config not an object": [dict(HEAD, config=[1, 2]),
                                    {"type": "iter", "it": 0, "ranks": [one_rank()]}],
    "cluster not an object": [dict(HEAD, config={"cluster": 7}),
                              {"type": "iter", "it": 0, "ranks": [one_rank()]}],
    "sp_kind unknown": [dict(HEAD, config={"cluster": {"gpus": 8},
                                           "training": {"sp_kind": "tree"}}),
                        {"type": "iter", "it": 0, "ranks": [one_rank()]}],
    "iterations not a count": [dict(HEAD, iterations="many"),
                               {"type": "iter", "it": 0, "ranks": [one_rank()]}],
    "cap below the tokens": [HEAD, {"type": "iter", "it": 0, "ranks": [
        {"dp": 0, "mbs": [{"seg": [[0, 0, 4]], "cap": 2}]}]}],
    "epoch past the header's epochs": [HEAD, {"type": "iter", "it": 0, "epoch": 5,
                                              "ranks": [one_rank()]}],
    "epochs out of order": [dict(HEAD, epochs=2),
                            {"type": "iter", "it": 0, "epoch": 1, "ranks": [one_rank()]},
                            {"type": "iter", "it": 1, "epoch": 0, "ranks": [one_rank()]}],
    "GPU index past the cluster": [HEAD, {"type": "iter", "it": 0, "ranks": [
        one_rank(gpus=[9])]}],
}


@pytest.mark.parametrize("name", sorted(CRAFTED))
def test_crafted_plan_is_a_plan_error(tmp_path, name):
    path = write(tmp_path / "p.jsonl", CRAFTED[name])
    with pytest.raises(PlanError):
        read_all(path)


def test_deep_nesting_is_a_plan_error(tmp_path):
    path = tmp_path / "deep.jsonl"
    path.write_text(json.dumps(HEAD) + "\n" + '{"type":"iter","it":0,"ranks":' +
                    "[" * 3000 + "]" * 3000 + "}\n")
    with pytest.raises(PlanError, match="nested too deeply"):
        read_all(str(path))


SCALARS = [None, "x", -1, 0, 1, 2, 3, 1 << 22, 1 << 40, 1.5, [], {}, True, [[1, 2, 3]],
           [[1, 0, 5, 1]], {"a": 1}, [0, 1], [1, 0], 10 ** 30, ["F", 0],
           [["B", 0], ["F", 0]]]


def _mutate(obj, rng):
    """One random change somewhere inside a decoded record."""
    if isinstance(obj, dict) and obj:
        k = rng.choice(sorted(obj))
        r = rng.random()
        if r < 0.2:
            del obj[k]
        elif r < 0.5:
            obj[k] = rng.choice(SCALARS)
        else:
            _mutate(obj[k], rng)
    elif isinstance(obj, list) and obj:
        i = rng.randrange(len(obj))
        r = rng.random()
        if r < 0.2:
            del obj[i]
        elif r < 0.4:
            obj.insert(i, rng.choice(SCALARS))
        else:
            _mutate(obj[i], rng)


@pytest.fixture(scope="module")
def plans(tmp_path_factory):
    d = tmp_path_factory.mktemp("hostile")
    man = d / "m.txt"
    run_vlplan("gen", "--dist", "lmsys", "-n", "200", "--seed", "3", "-o", str(man))
    out = {}
    for s in strategies():
        path = d / f"{s}.jsonl"
        run_vlplan("plan", "-q", "-s", s, "--set", "cluster.gpus=8", "--set",
                   "training.max_seq_len=8192", "--set", "training.oversize=drop", "--set",
                   "training.global_batch=32", "-o", str(path), str(man))
        out[s] = path.read_text().splitlines()
    return out


def test_mutated_plans_fail_only_with_plan_error(tmp_path, plans):
    """200 mutations over the plans of every strategy (seeded): PlanError or a plan that
    reads; never another exception, never more than 64 MB of Python memory (traced in
    every fifth trial: tracing is slow).  `make fuzz` runs the C side for minutes."""
    rng = random.Random(2026)
    names = sorted(plans)
    for trial in range(200):
        lines = list(plans[names[trial % len(names)]])
        body = lines[:-1]
        for _ in range(rng.randint(1, 3)):
            i = 0 if rng.random() < 0.25 else rng.randrange(len(body))
            rec = json.loads(body[i])
            _mutate(rec, rng)
            body[i] = json.dumps(rec, separators=(",", ":"))
        path = write(tmp_path / "m.jsonl", [json.loads(x) for x in body])
        traced = trial % 5 == 0
        if traced:
            tracemalloc.start()
        try:
            read_all(path, ranks=2)
        except PlanError:
            pass
        finally:
            peak = tracemalloc.get_traced_memory()[1] if traced else 0
            if traced:
                tracemalloc.stop()
        assert peak < 64 << 20, f"trial {trial}: {peak >> 20} MB"
