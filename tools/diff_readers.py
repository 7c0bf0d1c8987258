#!/usr/bin/env python3
"""tools/diff_readers.py -- a differential fuzzer of the two plan readers (issue 28 item 3):
the C reader (`vlplan metrics PLAN`, which reads a plan without a manifest, as the Python
reader does) and the Python reader (python/vlplan as a trainer uses it: every iteration
of Plan(path), then the GpuView of every GPU -- at most 64, spread over a larger world --
with its check() of the rank's schedule against the execution contract, as the torch
adapters call it, and each pack's shard).

Each case is a valid plan of a strategy (testdata/golden/<strategy>.jsonl: all of the
registry's, and three base plans of testdata/verify) changed by one mutation -- a byte flipped, a record cut short, lines swapped,
duplicated or deleted, a field deleted or given another value -- and, for the mutations
of one record's JSON, the footer's checksum made true again half the time, so that the
structure, not the SHA-256, is what gets tested.

Agreement, precisely.  The Python reader reads without a manifest; so does the C reader
(lib/plan/planio, run by `vlplan metrics PLAN`), but the C reader leaves to `vlplan verify`
much that the Python reader checks itself (the footer's checksum and counts, a pack's
claims, schedules, shared packs), and verify also checks what needs the manifest and
the config (coverage, drops, memory, the strategy's rules).  So the scopes nest -- the
C reader's inside the Python reader's inside verify's -- and the readers agree when
  1. a file the C reader refuses (`vlplan metrics` exits 65, EX_DATAERR: the reader, or
     the simulator metrics runs, found the file not a plan it can run), the Python
     reader refuses too (PlanError); and
  2. a file the Python reader refuses, `vlplan verify PLAN testdata/golden/manifest.jsonl`
     (the manifest of every base plan) refuses too (exit 1, a violation; 65; or 78, the
     header's config refused).
A file only verify refuses is no finding (a wrong sample, a drop, memory: the manifest's
and config's scope), and neither is one `vlplan metrics` refuses for its header's config
(exit 78: the Python reader reads only the config keys it needs).  Also findings: the
Python reader raising anything but PlanError, or taking longer than --case-seconds; and
`vlplan` exiting with any other status (a crash, an internal error).

Deterministic: the seed fixes the sequence of cases; --cases bounds the run (make test
runs 60 through python/tests/test_diff_readers.py, a few seconds), --seconds runs as many
of the same sequence as fit (make fuzz: FUZZ_TIME).  Prints each finding's case number
and mutation, then a summary with one line per kind of finding; --keep DIR writes the
inputs of findings there.  Exit 1 when there is a finding.

    python3 tools/diff_readers.py [--seed N] [--cases N | --seconds S] [--vlplan PATH]
"""
import argparse
import hashlib
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.join(ROOT, "python"))

from vlplan import GpuView, Plan  # noqa: E402
from vlplan.stream import PlanError  # noqa: E402

GOLDEN = os.path.join(ROOT, "testdata", "golden")
MANIFEST = os.path.join(GOLDEN, "manifest.jsonl")
EX_DATAERR, EX_CONFIG = 65, 78
VIEWS = 64            # GPUs whose views the Python side reads, spread over the world
SCALARS = [None, True, False, 0, 1, -1, 2, 3, 7, 1 << 31, -(1 << 31), 1 << 62, 0.5, "",
           "x", [], {}, [0], [[0, 0, 1]]]
MUTATIONS = ["byte", "truncate", "swap_lines", "dup_line", "drop_line", "del_field",
             "set_field", "bump_int"]


# Base plans of the verify corpus over the golden manifest, for what the goldens lack:
# CP coordinates (Skrull with CP 2), pieces (training.oversize=split), an idle pipeline.
MORE = ("base_skrull_cp2", "base_pack_split", "base_hydraulis_idle")


def bases():
    """(name, lines) of every golden plan, in name order, then of MORE."""
    paths = [os.path.join(GOLDEN, n) for n in sorted(os.listdir(GOLDEN))
             if n.endswith(".jsonl") and n != "manifest.jsonl"]
    paths += [os.path.join(ROOT, "testdata", "verify", n + ".jsonl") for n in MORE]
    out = []
    for path in paths:
        with open(path, "rb") as f:
            out.append((os.path.basename(path)[:-6], f.read().split(b"\n")[:-1]))
    return out


def _paths(obj, path=()):
    """Every (container, key) of a JSON value, depth first."""
    if isinstance(obj, dict):
        for k in obj:
            yield obj, k
            yield from _paths(obj[k])
    elif isinstance(obj, list):
        for i in range(len(obj)):
            yield obj, i
            yield from _paths(obj[i])


def _refooter(lines):
    """The footer's checksum and iteration count true again for lines (bytes)."""
    body = lines[:-1]
    try:
        foot = json.loads(lines[-1])
    except ValueError:
        return lines
    if not isinstance(foot, dict) or foot.get("type") != "footer":
        return lines
    foot["sha256"] = hashlib.sha256(b"".join(x + b"\n" for x in body)).hexdigest()
    return body + [json.dumps(foot, separators=(",", ":")).encode()]


def mutate(lines, rng):
    """One mutation of lines (bytes, no newlines): (kind, new lines, description)."""
    kind = rng.choice(MUTATIONS)
    lines = list(lines)
    if kind == "byte":
        text = b"\n".join(lines)
        i = rng.randrange(len(text))
        b = bytearray(text)
        b[i] ^= 1 << rng.randrange(8)
        return kind, bytes(b).split(b"\n"), f"byte {i} flipped"
    if kind == "truncate":
        text = b"\n".join(lines) + b"\n"
        i = rng.randrange(len(text))
        return kind, text[:i].split(b"\n"), f"cut at byte {i}"
    if kind in ("swap_lines", "dup_line", "drop_line"):
        i, j = rng.randrange(len(lines)), rng.randrange(len(lines))
        if kind == "swap_lines":
            lines[i], lines[j] = lines[j], lines[i]
        elif kind == "dup_line":
            lines.insert(j, lines[i])
        else:
            del lines[i]
        return kind, lines, f"line {i + 1}, {j + 1}"
    i = rng.randrange(len(lines))
    rec = json.loads(lines[i])
    spots = list(_paths(rec))
    if not spots:
        return kind, lines, "nothing to change"
    box, key = rng.choice(spots)
    if kind == "del_field":
        del box[key]
        what = f"line {i + 1}: {key!r} deleted"
    elif kind == "set_field":
        box[key] = rng.choice(SCALARS)
        what = f"line {i + 1}: {key!r} = {box[key]!r}"
    else:
        ints = [(b, k) for b, k in spots if type(b[k]) is int]
        if not ints:
            return kind, lines, "no integer"
        box, key = rng.choice(ints)
        box[key] += rng.choice([-2, -1, 1, 2])
        what = f"line {i + 1}: {key!r} now {box[key]}"
    lines[i] = json.dumps(rec, separators=(",", ":")).encode()
    if rng.random() < 0.5:
        lines = _refooter(lines)
        what += ", checksum recomputed"
    return kind, lines, what


class _Timeout(Exception):
    pass


def _alarm(signum, frame):
    raise _Timeout()


def read_python(path, seconds):
    """'accept', 'reject', or a finding ('python: TypeError: ...')."""
    signal.signal(signal.SIGALRM, _alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        plan = Plan(path)
        for _ in plan.iterations():
            pass
        world = plan.world_size if isinstance(plan.world_size, int) else 8
        for gpu in range(0, world, max(1, world // VIEWS)):
            for view in GpuView(plan, gpu, world):
                view.check()   # as the torch adapters do before running an iteration
                for mb in view.micro_batches:
                    mb.shard()
        return "accept"
    except PlanError:
        return "reject"
    except _Timeout:
        return f"python: over {seconds} s"
    except Exception as e:  # noqa: BLE001 -- any other exception is the finding
        return f"python: {type(e).__name__}: {str(e)[:120]}"
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)


def _vlplan(args, seconds):
    try:
        return subprocess.run(args, capture_output=True, text=True, timeout=seconds)
    except subprocess.TimeoutExpired:
        return None


def read_c(vlplan, path, seconds):
    """The C reader: 'accept', 'reject', 'config', or a finding ('vlplan: exit 70: ...')."""
    r = _vlplan([vlplan, "metrics", "--format", "csv", "-j", "1", path], seconds)
    if r is None:
        return f"vlplan: metrics over {seconds} s"
    codes = {0: "accept", EX_DATAERR: "reject", EX_CONFIG: "config"}
    if r.returncode in codes:
        return codes[r.returncode]
    return f"vlplan: metrics exit {r.returncode}: {r.stderr.strip()[-160:]}"


def verify_c(vlplan, path, seconds):
    """vlplan verify with the manifest: 'accept', 'reject', or a finding."""
    r = _vlplan([vlplan, "verify", "-q", path, MANIFEST], seconds)
    if r is None:
        return f"vlplan: verify over {seconds} s"
    if r.returncode == 0:
        return "accept"
    if r.returncode in (1, EX_DATAERR, EX_CONFIG):
        return "reject"
    return f"vlplan: verify exit {r.returncode}: {r.stderr.strip()[-160:]}"


def judge(c, py, vf):
    """The finding of one case (None: the readers agree), after the module's rules."""
    for x in (py, c, vf):
        if x.startswith(("python:", "vlplan:")):
            return x
    if c == "reject" and py == "accept":
        return "disagree: the C reader refuses, the Python reader accepts"
    if py == "reject" and vf == "accept":
        return "disagree: the Python reader refuses, vlplan verify accepts"
    return None


def run(seed, cases, seconds, vlplan, keep, case_seconds, out=sys.stdout):
    """The fuzzing loop; returns (executions, findings by kind, outcomes by kind)."""
    rng = random.Random(seed)
    plans = bases()
    findings, outcomes = {}, {}
    start, n = time.monotonic(), 0
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "case.jsonl")
        while (cases is None or n < cases) and \
                (seconds is None or time.monotonic() - start < seconds):
            strategy, lines = plans[n % len(plans)]
            kind, new, what = mutate(lines, rng)
            with open(path, "wb") as f:
                f.write(b"".join(x + b"\n" for x in new if x is not None))
            c, py = read_c(vlplan, path, case_seconds), read_python(path, case_seconds)
            vf = verify_c(vlplan, path, case_seconds) if py == "reject" else "-"
            outcomes[(kind, c, py, vf)] = outcomes.get((kind, c, py, vf), 0) + 1
            bad = judge(c, py, vf)
            if bad:
                key = ": ".join(x.strip() for x in bad.split(":")[:2])
                findings.setdefault(key, []).append(n)
                print(f"finding: case {n} ({strategy}, {kind}: {what}): {bad}", file=out)
                if keep:
                    os.makedirs(keep, exist_ok=True)
                    with open(path, "rb") as f, \
                            open(os.path.join(keep, f"case{n}_{strategy}.jsonl"), "wb") as g:
                        g.write(f.read())
            n += 1
    return n, findings, outcomes


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seed", type=int, default=28)
    ap.add_argument("--cases", type=int, default=None)
    ap.add_argument("--seconds", type=float, default=None)
    ap.add_argument("--case-seconds", type=float, default=10.0)
    ap.add_argument("--vlplan", default=os.path.join(ROOT, "build", "vlplan"))
    ap.add_argument("--keep", default=None, help="write the inputs of findings here")
    ap.add_argument("--table", action="store_true", help="every outcome, counted")
    a = ap.parse_args(argv)
    if a.cases is None and a.seconds is None:
        a.cases = 200
    n, findings, outcomes = run(a.seed, a.cases, a.seconds, a.vlplan, a.keep, a.case_seconds)
    py_ok = sum(v for (k, c, p, f), v in outcomes.items() if p == "accept")
    py_no = sum(v for (k, c, p, f), v in outcomes.items() if p == "reject")
    c_no = sum(v for (k, c, p, f), v in outcomes.items() if c == "reject")
    print(f"diff_readers: seed {a.seed}: {n} cases: the Python reader accepts {py_ok}, "
          f"refuses {py_no}; the C reader refuses {c_no}; findings "
          f"{sum(len(v) for v in findings.values())}")
    for key, ids in sorted(findings.items()):
        print(f"  {key}: {len(ids)} (cases {', '.join(map(str, ids[:8]))}"
              f"{', ...' if len(ids) > 8 else ''})")
    if a.table:
        for (k, c, p, f), v in sorted(outcomes.items()):
            print(f"  {k:10s} C reader {c[:30]:30s} Python {p[:30]:30s} verify {f[:20]:20s} "
                  f"{v}")
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main())
