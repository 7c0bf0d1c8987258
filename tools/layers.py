#!/usr/bin/env python3
"""tools/layers.py -- the layer check over lib/'s #include lines (docs/ARCHITECTURE.md).

Each lib/ folder has a layer; a file may include headers of its own folder and of
lower layers only.  lib/ never reaches plans/ (neither its headers nor the registry's
functions).  The edges listed in KNOWN_DEBT are today's exceptions, to be removed by
the lib/plan split; any other upward edge fails the check, and so does a debt that
has disappeared (delete it here, so the list only shrinks).  Exit 0 when clean.
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
}
# (from, to): why it is still there
KNOWN_DEBT = {
    ("lib/check", "lib/run"): "verify reads the strategy interface (vlplan_strategy.h) for "
                              "the strategy's rules",
}
# lib/ files that still call the registry
KNOWN_REGISTRY_DEBT = {
    "lib/check/verify_config.c": "verify looks up the plan's strategy by name",
}
REGISTRY_CALLS = re.compile(r"\bvl_strategy_(find|at|count)\s*\(")
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


def main(root):
    where = headers(root)
    bad, seen = [], set()
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
            elif LAYERS.get(to, 99) > LAYERS[folder]:
                if (folder, to) in KNOWN_DEBT:
                    seen.add((folder, to))
                else:
                    bad.append(f"{rel}: includes {m.group(1)} from {to}, a higher layer")
        if path.endswith(".c") and REGISTRY_CALLS.search(text):
            if rel in KNOWN_REGISTRY_DEBT:
                seen.add(rel)
            else:
                bad.append(f"{rel}: calls the strategy registry (plans/registry.c); the "
                           "caller passes what lib needs")
    for debt in sorted(set(KNOWN_DEBT) - seen):
        bad.append(f"tools/layers.py: known debt {debt[0]} -> {debt[1]} is gone: remove it "
                   "from KNOWN_DEBT")
    for debt in sorted(set(KNOWN_REGISTRY_DEBT) - seen):
        bad.append(f"tools/layers.py: {debt} no longer calls the registry: remove it from "
                   "KNOWN_REGISTRY_DEBT")
    for line in bad:
        print(line, file=sys.stderr)
    if not bad:
        print(f"layers: lib/ clean ({len(KNOWN_DEBT) + len(KNOWN_REGISTRY_DEBT)} known debts, "
              "see tools/layers.py)")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "."))
