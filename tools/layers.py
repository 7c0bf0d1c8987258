#!/usr/bin/env python3
"""tools/layers.py -- the layer check over lib/'s #include lines (docs/ARCHITECTURE.md).

Each lib/ folder has a layer; a file may include headers of its own folder and of
lower layers only (not a sibling folder of its own layer), so the folders form a DAG.
lib/ never reaches plans/ or cmd/: neither their headers nor the registry's functions
(the verifier gets a strategy's rules from its caller, vl_rules_source).  There are no
exceptions: any upward edge fails the check.  cmd/ sees lib/ through lib/vlplan.h alone
(and the output helpers in CMD_LIB_HEADERS).  Exit 0 when clean.
"""
import os
import re
import sys

LAYERS = {
    "lib/util": 0,
    "lib/config": 1,
    "lib/io": 1,
    "lib/data": 2,
    "lib/pack": 2,
    "lib/plan": 3,
    "lib/model": 4,
    "lib/check": 5,
    "lib/run": 6,
    "lib": 7,           # the face: lib/vlplan.h includes what a program uses
}
REGISTRY_CALLS = re.compile(r"\bvl_strategy_(find|at|count)\s*\(|\bvl_registry_rules\b")
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def headers(root):
    where = {}
    for top in ("lib", "plans", "cmd"):
        for d, _, files in os.walk(os.path.join(root, top)):
            for f in files:
                if f.endswith(".h"):
                    where.setdefault(f, os.path.relpath(d, root))
    return where


def sources(root):
    for d, _, files in os.walk(os.path.join(root, "lib")):
        for f in sorted(files):
            if f.endswith((".c", ".h")):
                yield os.path.relpath(d, root), os.path.join(d, f)


# What cmd/ may include from lib/ besides lib/vlplan.h: output helpers of its own jobs.
CMD_LIB_HEADERS = {"jsonw.h", "strbuf.h", "outfile.h", "zio.h"}


def cmd_includes(root, where):
    """cmd/ sees the library through lib/vlplan.h (and CMD_LIB_HEADERS) only."""
    bad = []
    for d, _, files in os.walk(os.path.join(root, "cmd")):
        for f in sorted(files):
            if not f.endswith((".c", ".h")):
                continue
            path = os.path.join(d, f)
            for m in INCLUDE.finditer(open(path, encoding="utf-8").read()):
                h = os.path.basename(m.group(1))
                to = where.get(h, "")
                if to.startswith("lib/") and h not in CMD_LIB_HEADERS:
                    bad.append(f"{os.path.relpath(path, root)}: includes {m.group(1)} from "
                               f"{to}: cmd/ includes lib/vlplan.h, the library's face")
    return bad


def main(root):
    where = headers(root)
    bad = []
    for folder, path in sources(root):
        text = open(path, encoding="utf-8").read()
        rel = os.path.relpath(path, root)
        if folder not in LAYERS:
            bad.append(f"{rel}: folder {folder} has no layer (add it to tools/layers.py "
                       "and docs/ARCHITECTURE.md)")
            continue
        for m in INCLUDE.finditer(text):
            to = where.get(m.group(1))
            if to is None or to == folder:
                continue
            if to.startswith("plans") or to.startswith("cmd"):
                bad.append(f"{rel}: includes {m.group(1)} from {to}: lib/ never reaches "
                           "plans/ or cmd/")
            elif LAYERS.get(to, 99) >= LAYERS[folder]:
                # a folder of the same layer too: siblings stay apart, so no cycle
                bad.append(f"{rel}: includes {m.group(1)} from {to}, a layer not below "
                           f"{folder}'s")
        if path.endswith(".c") and REGISTRY_CALLS.search(text):
            bad.append(f"{rel}: calls the strategy registry (plans/registry.c); the "
                       "caller passes what lib needs")
    bad += cmd_includes(root, where)
    for line in bad:
        print(line, file=sys.stderr)
    if not bad:
        print(f"layers: lib/ clean ({len(LAYERS)} layered folders, no upward edge)")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "."))
