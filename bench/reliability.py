#!/usr/bin/env python3
"""bench/reliability.py -- the reliability table (issue 28 item 6): what defends the plan
readers and `vlplan verify`, counted from the tree, and a fixed run of the differential
fuzzer of the two readers (tools/diff_readers.py), as a markdown table on stdout.

    python3 bench/reliability.py [--cases N] [--seed S] [--fuzz-seconds S] [--vlplan PATH]

Rows: each libFuzzer corpus (fuzz/corpus/NAME: inputs, bytes) and its kept crash inputs
(fuzz/regressions/NAME); the verify corpus (testdata/verify: crafted wrong plans, one
Criterion test each in tests/check/test_verify_corpus.c, and the base plans that must pass);
the kinds of the mutation test (tests/robust/test_mutation.c, KIND[]); and diff_readers with a
fixed seed and case count (default 300 cases, seed 28: about half a minute), its
executions, what each reader refused and its findings.  Deterministic for a given tree
and build: the counts are of files, the fuzzer's cases come from its seed.  With
--fuzz-seconds S, one more row: diff_readers for S seconds of the same seed (what `make
fuzz` runs; issue 28 asks for ten minutes), whose execution count depends on the machine."""
import argparse
import io
import os
import re
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.join(ROOT, "tools"))

import diff_readers  # noqa: E402


def files(d):
    """(count, bytes) of the plain files directly in d; (0, 0) when it does not exist."""
    if not os.path.isdir(d):
        return 0, 0
    paths = [os.path.join(d, f) for f in sorted(os.listdir(d))]
    paths = [p for p in paths if os.path.isfile(p)]
    return len(paths), sum(os.path.getsize(p) for p in paths)


def verify_corpus():
    """(crafted cases, base plans, bytes) of testdata/verify."""
    d = os.path.join(ROOT, "testdata", "verify")
    with open(os.path.join(d, "cases.tsv"), encoding="utf-8") as f:
        cases = [line for line in f if line.strip() and not line.startswith("#")]
    bases = [x for x in os.listdir(d) if x.startswith("base_") and x.endswith(".jsonl")]
    return len(cases), len(bases), files(d)[1]


def mutation_kinds():
    """The mutation test's kinds, from the KIND[] table of tests/robust/test_mutation.c."""
    with open(os.path.join(ROOT, "tests", "robust", "test_mutation.c"), encoding="utf-8") as f:
        text = f.read()
    m = re.search(r"KIND\[NKINDS\]\s*=\s*\{(.*?)\};", text, re.S)
    return re.findall(r'"([^"]*)"', m.group(1)) if m else []


def fuzz_row(a, cases, seconds):
    """The row of one run of diff_readers: `cases` cases, or as many as fit in `seconds`."""
    log = io.StringIO()
    n, findings, outcomes = diff_readers.run(a.seed, cases, seconds, a.vlplan, None, 10.0,
                                             out=log)
    py_no = sum(v for (k, c, p, f), v in outcomes.items() if p == "reject")
    c_no = sum(v for (k, c, p, f), v in outcomes.items() if c == "reject")
    nf = sum(len(v) for v in findings.values())
    how = f"seed {a.seed}" + (f", {seconds:.0f} s" if seconds else "")
    return (f"differential fuzzer, C and Python readers (tools/diff_readers.py, {how})",
            f"{n:,} executions",
            f"{len(diff_readers.MUTATIONS)} mutation kinds over {len(diff_readers.bases())} "
            f"valid plans (the 10 goldens and {len(diff_readers.MORE)} more); "
            f"the Python reader refused {py_no:,}, the C reader {c_no:,}; {nf} finding"
            f"{'s' if nf != 1 else ''}" +
            (": " + "; ".join(f"{k} ({len(v)})" for k, v in sorted(findings.items()))
             if nf else ""))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cases", type=int, default=300)
    ap.add_argument("--seed", type=int, default=28)
    ap.add_argument("--fuzz-seconds", type=float, default=0,
                    help="also a timed run of the differential fuzzer (0: none)")
    ap.add_argument("--vlplan", default=os.path.join(ROOT, "build", "vlplan"))
    a = ap.parse_args(argv)

    rows = []
    corpus = os.path.join(ROOT, "fuzz", "corpus")
    for name in sorted(os.listdir(corpus)):
        n, b = files(os.path.join(corpus, name))
        r, _ = files(os.path.join(ROOT, "fuzz", "regressions", name))
        rows.append((f"fuzz corpus `{name}`", f"{n} inputs",
                     f"{b:,} bytes; {r} kept crash input{'s' if r != 1 else ''} "
                     f"(fuzz/regressions/{name})"))
    cases, bases, size = verify_corpus()
    rows.append(("verify corpus (testdata/verify)", f"{cases} wrong plans",
                 f"one Criterion test each (tests/check/test_verify_corpus.c); {bases} base plans "
                 f"and the 10 goldens must pass; {size:,} bytes"))
    kinds = mutation_kinds()
    rows.append(("mutation test kinds (tests/robust/test_mutation.c)", f"{len(kinds)} kinds",
                 "; ".join(kinds)))
    rows.append(fuzz_row(a, a.cases, None))
    if a.fuzz_seconds > 0:
        rows.append(fuzz_row(a, None, a.fuzz_seconds))
    print("| defence | size | detail |")
    print("|---|---|---|")
    for what, size, detail in rows:
        print(f"| {what} | {size} | {detail} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
