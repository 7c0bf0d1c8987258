#!/usr/bin/env python3
"""tools/craft_plans.py -- rebuild testdata/verify/, the corpus of wrong plans that
`vlplan verify` must reject (issue 28 items 1 and 2; tests/check/test_verify_corpus.c runs it).

Each case is a valid plan of a strategy (testdata/golden/<strategy>.jsonl, or a base plan
made here) changed by one semantic mutation and made consistent again the way a
hand-edited plan would be: pack token counts, cu_seqlens, iteration totals, footer
claims and the sha256 recomputed, so that what must catch it is the invariant it
breaks, not a stale sum.  testdata/verify/cases.tsv lists, per case: the plan file,
the manifest, extra verify arguments ("-" for none) and a text verify's output must
contain.

Run from the repository root after an intended change to the goldens:
    python3 tools/craft_plans.py [VLPLAN]      (VLPLAN: default build/vlplan)
"""
import copy
import hashlib
import json
import os
import subprocess
import sys

OUT = "testdata/verify"
GOLDEN = "testdata/golden"
MANIFEST = GOLDEN + "/manifest.jsonl"
LOSS_MANIFEST = OUT + "/manifest_loss.jsonl"


def read_plan(path):
    with open(path, encoding="utf-8") as f:
        recs = [json.loads(line) for line in f]
    return {"header": recs[0], "iters": recs[1:-1], "footer": recs[-1]}


def manifest_of(path):
    lens, loss = [], []
    with open(path, encoding="utf-8") as f:
        for line in f:
            r = json.loads(line)
            lens.append(r["len"])
            loss.append(r.get("loss_tokens", r["len"]))
    return lens, loss


def dumps(rec):
    return json.dumps(rec, separators=(",", ":"), ensure_ascii=False)


def seg_loss(seg, lens, loss):
    """Loss tokens of a segment: a sample's loss tokens are its last ones
    (lib/plan/plan.h, vl_plan_seg_loss)."""
    s, off, n = seg[0], seg[1], seg[2]
    lo = lens[s] - loss[s]
    return max(0, off + n - max(off, lo))


def primary(rank, mb):
    sh = mb.get("shared")
    return not sh or sh[0] == rank["dp"]


def fix(plan, man):
    """Make every redundant claim agree with the segments again."""
    lens, loss = man
    samples = tokens = 0
    for it in plan["iters"]:
        t = l = s = 0
        for rk in it["ranks"]:
            for key in ("mbs", "bwd"):
                for mb in rk.get(key, []):
                    mb["tokens"] = sum(g[2] for g in mb["seg"])
                    cu = [0]
                    for g in mb["seg"]:
                        cu.append(cu[-1] + g[2])
                    mb["cu_seqlens"] = cu
                    if key == "bwd" or not primary(rk, mb):
                        continue
                    for g in mb["seg"]:
                        t += g[2]
                        l += seg_loss(g, lens, loss)
                        s += g[1] == 0
        it["tokens"] = t
        if "loss_tokens" in it:
            it["loss_tokens"] = l
        it["samples"] = s
        samples += s
        tokens += t
    if "iterations" in plan["header"]:
        plan["header"]["iterations"] = len(plan["iters"])
    ft = plan["footer"]
    ft["iterations"] = len(plan["iters"])
    ft["samples"] = samples
    ft["tokens"] = tokens


def write(plan, name):
    lines = [dumps(plan["header"]) + "\n"] + [dumps(it) + "\n" for it in plan["iters"]]
    sha = hashlib.sha256("".join(lines).encode("utf-8")).hexdigest()
    footer = dict(plan["footer"])
    footer.pop("sha256", None)
    footer["sha256"] = sha
    path = os.path.join(OUT, name)
    with open(path, "w", encoding="utf-8") as f:
        f.writelines(lines)
        f.write(dumps(footer) + "\n")
    return path


def sliced_samples(it, rank_index):
    """Samples cut into two or more forward packs on a rank: {sample: [mb indices]}."""
    found = {}
    for j, mb in enumerate(it["ranks"][rank_index]["mbs"]):
        for g in mb["seg"]:
            found.setdefault(g[0], []).append(j)
    return {s: js for s, js in found.items() if len(js) > 1}


def whole_mb(it, rank_index, lens):
    """A forward pack of the rank holding one whole sample, else its last pack that
    holds tokens."""
    mbs = it["ranks"][rank_index]["mbs"]
    for j, mb in enumerate(mbs):
        g = mb["seg"]
        if len(g) == 1 and g[0][1] == 0 and g[0][2] == lens[g[0][0]]:
            return j
    return max(j for j, mb in enumerate(mbs) if mb["seg"])


def swap(a, b):
    a["seg"], b["seg"] = b["seg"], a["seg"]
    a["cap"], b["cap"] = max(a["cap"], b["cap"]), max(a["cap"], b["cap"])


# ---- the mutations: each returns (plan, extra args, expected text) ----

def chunk_to_other_rank(man):
    """ChunkFlow: a sample's last chunk moved to another rank of its iteration."""
    p = read_plan(GOLDEN + "/chunkflow.jsonl")
    it = p["iters"][0]
    s, js = sorted(sliced_samples(it, 0).items())[0]
    j = whole_mb(it, 1, man[0])
    swap(it["ranks"][0]["mbs"][js[-1]], it["ranks"][1]["mbs"][j])
    return p, [], "runs on another rank of the same iteration"


def chunk_to_next_iter(man):
    """ChunkFlow: a sample's first chunks in one iteration, its last in the next."""
    p = read_plan(GOLDEN + "/chunkflow.jsonl")
    a, b = p["iters"][0], p["iters"][1]
    s, js = sorted(sliced_samples(a, 0).items())[0]
    j = whole_mb(b, 0, man[0])
    swap(a["ranks"][0]["mbs"][js[-1]], b["ranks"][0]["mbs"][j])
    return p, [], "runs in a later iteration, but the strategy keeps a sample's slices"


def chunk_to_earlier_iter(man):
    """ChunkFlow: a sample's last chunk run an iteration before its first ones."""
    p = read_plan(GOLDEN + "/chunkflow.jsonl")
    a, b = p["iters"][0], p["iters"][1]
    s, js = sorted(sliced_samples(b, 0).items())[0]
    j = whole_mb(a, 0, man[0])
    swap(b["ranks"][0]["mbs"][js[-1]], a["ranks"][0]["mbs"][j])
    return p, [], "goes forward in an earlier iteration than the tokens before it"


def slimpack_slice_other_rank(man):
    """SlimPack: a forward slice of a sample moved to another rank of its iteration."""
    p = read_plan(GOLDEN + "/slimpack.jsonl")
    it = p["iters"][0]
    for r in range(len(it["ranks"])):
        own = {s: js for s, js in sliced_samples(it, r).items()
               if not it["ranks"][r]["mbs"][js[0]].get("shared")}
        if own:
            break
    s, js = sorted(own.items())[0]
    o = (r + 2) % len(it["ranks"])
    j = next(k for k, mb in enumerate(it["ranks"][o]["mbs"]) if not mb.get("shared"))
    swap(it["ranks"][r]["mbs"][js[-1]], it["ranks"][o]["mbs"][j])
    return p, [], "runs on another rank of the same iteration"


def pack_sample_sliced(man):
    """pack: a whole sample cut in two segments of its pack (pack never slices)."""
    p = read_plan(GOLDEN + "/pack.jsonl")
    mb = p["iters"][0]["ranks"][0]["mbs"][0]
    s, off, n = mb["seg"][0][:3]
    mb["seg"][0:1] = [[s, 0, n // 2], [s, n // 2, n - n // 2]]
    return p, [], "is a slice, but the strategy never slices a sample"


def verl_cap_over(man):
    """verl: a micro-batch over training.max_seq_len, its capacity raised to match."""
    p = read_plan(GOLDEN + "/verl.jsonl")
    limit = p["header"]["config"]["training"]["max_seq_len"]
    for it in p["iters"]:
        for rk in it["ranks"]:
            mbs = [mb for mb in rk["mbs"] if mb["seg"]]
            for a in mbs:
                for b in mbs:
                    if a is b:
                        continue
                    for g in b["seg"]:
                        if sum(x[2] for x in a["seg"]) + g[2] > limit:
                            b["seg"].remove(g)
                            a["seg"].append(g)
                            a["cap"] = sum(x[2] for x in a["seg"])
                            return p, [], "token slots strategy verl writes"
    raise SystemExit("verl_cap_over: no move found")


def hydraulis_replica_optimizer(man):
    """Hydraulis: the header without "optimizer_shard":"world"."""
    p = read_plan(GOLDEN + "/hydraulis.jsonl")
    del p["header"]["optimizer_shard"]
    return p, [], "lacks world_optimizer, which strategy hydraulis always declares"


def slimpack_as_pack(man):
    """A SlimPack plan relabelled as pack: elements pack never writes."""
    p = read_plan(GOLDEN + "/slimpack.jsonl")
    p["header"]["strategy"] = "pack"
    return p, [], "uses backward packs, which strategy pack never writes"


def unknown_name_drop(man):
    """A pack plan under a name vlplan does not know, a short sample dropped."""
    p = read_plan(GOLDEN + "/pack.jsonl")
    p["header"]["strategy"] = "mystery"
    p["header"]["config"]["training"]["oversize"] = "drop"
    mb = p["iters"][0]["ranks"][0]["mbs"][0]
    g = mb["seg"].pop(0)
    p["footer"]["dropped"].append([g[0], 0, g[2], "oversize"])
    return p, [], "the sample is not longer than the strategy places"


def unknown_name_truncate(man):
    """A pack plan under a name vlplan does not know, a short sample's tail cut."""
    p = read_plan(GOLDEN + "/pack.jsonl")
    p["header"]["strategy"] = "mystery"
    g = p["iters"][0]["ranks"][1]["mbs"][0]["seg"][0]
    cut = g[2] // 2
    g[2] -= cut
    p["footer"]["dropped"].append([g[0], g[2], cut, "truncated"])
    return p, [], "the sample is not longer than the strategy places"


def loss_tokens_removed(man_loss):
    """An iteration without "loss_tokens", over a manifest that has loss tokens."""
    p = read_plan(OUT + "/base_pack_loss.jsonl")
    del p["iters"][0]["loss_tokens"]
    return p, [], "\"loss_tokens\" is missing"


def header_mem_800(man):
    """The header's own config claims 800 GiB devices; verify --set the real 80."""
    p = read_plan(GOLDEN + "/pack.jsonl")
    p["header"]["config"]["cluster"]["mem_gib"] = 800.0
    return p, ["--set", "cluster.mem_gib=80"], "the plan header's config disagrees"


def skrull_cp_on_sp1(man):
    """Skrull: a CP coordinate on a rank with sp 1 (no CP group to name one of)."""
    p = read_plan(GOLDEN + "/skrull.jsonl")
    p["iters"][0]["ranks"][0]["mbs"][0]["seg"][0].append(0)
    return p, [], "on a rank without a CP group"


def skrull_two_cps(man):
    """Skrull with CP 2: a sequence local to one coordinate cut into two slices on two."""
    p = read_plan(OUT + "/base_skrull_cp2.jsonl")
    for it in p["iters"]:
        for rk in it["ranks"]:
            for mb in rk["mbs"]:
                for k, g in enumerate(mb["seg"]):
                    if len(g) == 4 and g[2] > 1:
                        h = g[2] // 2
                        mb["seg"][k:k + 1] = [[g[0], 0, h, g[3]], [g[0], h, g[2] - h, 1 - g[3]]]
                        return p, [], "is a slice, but the strategy never slices a sample"
    raise SystemExit("skrull_two_cps: no local segment")


def mcore_cp_three(man):
    """mcore_cp: a pack shared by 4 ranks cut to 3 (not a CP group size it forms)."""
    p = read_plan(GOLDEN + "/mcore_cp.jsonl")
    it = p["iters"][0]
    by_dp = {rk["dp"]: rk for rk in it["ranks"]}
    for rk in it["ranks"]:
        for mb in rk["mbs"]:
            sh = mb.get("shared")
            if sh and len(sh) == 4 and sh[0] == rk["dp"] and mb["seg"]:
                last = by_dp[sh[3]]
                last["mbs"] = [c for c in last["mbs"] if c.get("shared") != sh or c["seg"] != mb["seg"]]
                for r in sh[:3]:
                    for c in by_dp[r]["mbs"]:
                        if c.get("shared") == sh and c["seg"] == mb["seg"]:
                            c["shared"] = sh[:3]
                return p, [], "shared by 3 ranks, but strategy mcore_cp forms CP groups"
    raise SystemExit("mcore_cp_three: no pack of 4")


def shared_without_self(man):
    """mcore_cp: a member's copy of a shared pack lists other ranks, not itself."""
    p = read_plan(GOLDEN + "/mcore_cp.jsonl")
    it = p["iters"][0]
    n = len(it["ranks"])
    for rk in it["ranks"]:
        for mb in rk["mbs"]:
            sh = mb.get("shared")
            if sh and len(sh) == 2 and sh[1] == rk["dp"]:
                mb["shared"] = [sh[0], (sh[1] + 2) % n]
                return p, [], "do not include this rank's dp"
    raise SystemExit("shared_without_self: no pack of 2")


def shared_primary_missing(man):
    """mcore_cp: the primary's copy of a shared pack deleted, the other members' copies
    kept (tools/diff_readers.py found it: verify compared the copies from the primary
    only, so a member's extra copy passed)."""
    p = read_plan(GOLDEN + "/mcore_cp.jsonl")
    it = p["iters"][0]
    for rk in it["ranks"]:
        for j, mb in enumerate(rk["mbs"]):
            sh = mb.get("shared")
            if sh and sh[0] == rk["dp"]:
                del rk["mbs"][j]
                return p, [], "whose primary copy, on dp 0, is missing"
    raise SystemExit("shared_primary_missing: no shared pack")


def pieces_same_rank(man):
    """pack, training.oversize=split: two pieces of a sample on one rank of an
    iteration (they would read as one sequence's slices)."""
    p = read_plan(OUT + "/base_pack_split.jsonl")
    it = p["iters"][0]
    where = {}
    for r, rk in enumerate(it["ranks"]):
        for j, mb in enumerate(rk["mbs"]):
            for g in mb["seg"]:
                if g[1] > 0 or g[2] < man[0][g[0]]:
                    where.setdefault(g[0], []).append((r, j))
    for s, places in sorted(where.items()):
        if len({r for r, _ in places}) > 1:
            (r0, _), (r1, j1) = places[0], next(x for x in places if x[0] != places[0][0])
            j = next(k for k, mb in enumerate(it["ranks"][r0]["mbs"])
                     if all(g[0] != s for g in mb["seg"]))
            swap(it["ranks"][r1]["mbs"][j1], it["ranks"][r0]["mbs"][j])
            return p, [], "shares a rank of an iteration with another piece"
    raise SystemExit("pieces_same_rank: no sample in pieces on two ranks")


def pieces_short_cut(man):
    """pack, training.oversize=split: a sample shorter than a piece cut in two."""
    p = read_plan(OUT + "/base_pack_split.jsonl")
    mb, k, g = next((mb, k, g) for rk in p["iters"][0]["ranks"] for mb in rk["mbs"]
                    for k, g in enumerate(mb["seg"])
                    if g[1] == 0 and g[2] == man[0][g[0]] and g[2] > 1)
    h = g[2] // 2
    mb["seg"][k:k + 1] = [[g[0], 0, h], [g[0], h, g[2] - h]]
    return p, [], "cuts a sample no longer than a piece"


def skrull_gpu_idle(man):
    """Skrull: a rank's packs moved to another and the rank removed, so its GPU sits out
    the optimizer step (every GPU joins every step; uneven micro-batch counts are
    Skrull's to use, so only the idle GPU is wrong)."""
    p = read_plan(GOLDEN + "/skrull.jsonl")
    it = p["iters"][0]
    gone = it["ranks"].pop()
    for k, mb in enumerate(gone["mbs"]):   # one more on each, so that memory still fits
        it["ranks"][k % len(it["ranks"])]["mbs"].append(mb)
    return p, [], "joins no rank, so it sits out the optimizer step"


def mcore_cp_ulysses_kv4(man):
    """mcore_cp under Ulysses with its header's model at 4 KV heads: a sample shared by 8
    ranks is a CP group of 8, which 4 KV heads do not split over."""
    p = read_plan(GOLDEN + "/mcore_cp.jsonl")
    p["header"]["config"]["model"]["kv_heads"] = 4
    return p, [], "a Ulysses CP group of 8 GPUs, which must divide both the 4 KV heads"


def hydraulis_idle(name):
    """Hydraulis golden with its second pipeline left idle in iteration 0 (its packs on
    the first), under strategy `name`."""
    p = read_plan(GOLDEN + "/hydraulis.jsonl")
    it = p["iters"][0]
    gone = it["ranks"].pop()
    it["ranks"][0]["mbs"].extend(gone["mbs"])
    p["header"]["strategy"] = name
    return p


def renamed_hydraulis_idle(man):
    """A Hydraulis plan with an idle pipeline relabelled with an unknown name: only
    Hydraulis's registry entry lets a pipeline sit out a step, never an unknown name."""
    return hydraulis_idle("hydra"), [], "joins no rank, so it sits out the optimizer step"


CASES = [
    ("chunk_to_other_rank", chunk_to_other_rank, MANIFEST),
    ("chunk_to_next_iter", chunk_to_next_iter, MANIFEST),
    ("chunk_to_earlier_iter", chunk_to_earlier_iter, MANIFEST),
    ("slimpack_slice_other_rank", slimpack_slice_other_rank, MANIFEST),
    ("pack_sample_sliced", pack_sample_sliced, MANIFEST),
    ("verl_cap_over", verl_cap_over, MANIFEST),
    ("hydraulis_replica_optimizer", hydraulis_replica_optimizer, MANIFEST),
    ("slimpack_as_pack", slimpack_as_pack, MANIFEST),
    ("unknown_name_drop", unknown_name_drop, MANIFEST),
    ("unknown_name_truncate", unknown_name_truncate, MANIFEST),
    ("loss_tokens_removed", loss_tokens_removed, LOSS_MANIFEST),
    ("header_mem_800", header_mem_800, MANIFEST),
    ("skrull_cp_on_sp1", skrull_cp_on_sp1, MANIFEST),
    ("skrull_two_cps", skrull_two_cps, MANIFEST),
    ("mcore_cp_three", mcore_cp_three, MANIFEST),
    ("shared_without_self", shared_without_self, MANIFEST),
    ("shared_primary_missing", shared_primary_missing, MANIFEST),
    ("pieces_same_rank", pieces_same_rank, MANIFEST),
    ("pieces_short_cut", pieces_short_cut, MANIFEST),
    ("skrull_gpu_idle", skrull_gpu_idle, MANIFEST),
    ("renamed_hydraulis_idle", renamed_hydraulis_idle, MANIFEST),
    ("mcore_cp_ulysses_kv4", mcore_cp_ulysses_kv4, MANIFEST),
]


def make_bases(vlplan):
    """The manifest with loss tokens (the golden one, a third of each sample carrying the
    loss) and the base plans that are not goldens."""
    with open(MANIFEST, encoding="utf-8") as f, \
            open(LOSS_MANIFEST, "w", encoding="utf-8") as g:
        for line in f:
            r = json.loads(line)
            r["loss_tokens"] = r["len"] // 3
            g.write(dumps(r) + "\n")
    subprocess.run([vlplan, "plan", "-q", "-s", "pack", "--seed", "7",
                    "--set", "cluster.gpus=8", "--set", "training.max_seq_len=32768",
                    "--set", "training.global_tokens=262144",
                    "-o", OUT + "/base_pack_loss.jsonl", LOSS_MANIFEST], check=True)
    golden = ["--seed", "7", "--set", "cluster.gpus=8", "--set", "training.global_tokens=262144"]
    subprocess.run([vlplan, "plan", "-q", "-s", "skrull", *golden,
                    "--set", "training.sp=2", "--set", "training.dp=4",
                    "--set", "training.max_seq_len=32768", "--set", "training.oversize=truncate",
                    "-o", OUT + "/base_skrull_cp2.jsonl", MANIFEST], check=True)
    subprocess.run([vlplan, "plan", "-q", "-s", "pack", *golden,
                    "--set", "training.max_seq_len=8192", "--set", "training.oversize=split",
                    "-o", OUT + "/base_pack_split.jsonl", MANIFEST], check=True)


def main():
    vlplan = sys.argv[1] if len(sys.argv) > 1 else "build/vlplan"
    os.makedirs(OUT, exist_ok=True)
    make_bases(vlplan)
    idle = hydraulis_idle("hydraulis")   # a base: Hydraulis may idle a pipeline
    fix(idle, manifest_of(MANIFEST))
    write(idle, "base_hydraulis_idle.jsonl")
    rows = []
    for name, fn, manifest in CASES:
        man = manifest_of(manifest)
        plan, args, expect = fn(man)
        fix(plan, man)
        path = write(plan, name + ".jsonl")
        rows.append("\t".join([path, manifest, " ".join(args) or "-", expect]))
    with open(OUT + "/cases.tsv", "w", encoding="utf-8") as f:
        f.write("# plan\tmanifest\tverify arguments\toutput contains "
                "(tools/craft_plans.py writes this file)\n")
        f.write("\n".join(rows) + "\n")


if __name__ == "__main__":
    main()
