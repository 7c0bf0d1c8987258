#!/usr/bin/env python3
"""Thin wrapper over the vlplan Python package (python/vlplan), kept for old scripts.

    tools/vlplan_reader.py PLAN RANK WORLD_SIZE

validates PLAN (footer, checksum, structure) and prints what GPU RANK of WORLD_SIZE runs
in each iteration.  Library use: `import vlplan` (pip install ./python, or put python/ on
sys.path) and see vlplan.GpuView and vlplan.torch_adapters.PlanBatchSampler.
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))

import vlplan  # noqa: E402
from vlplan import GpuView, Plan, PlanError  # noqa: E402,F401


def main(argv):
    if len(argv) != 4:
        print("usage: vlplan_reader.py PLAN RANK WORLD_SIZE", file=sys.stderr)
        return 64
    try:
        view = GpuView(argv[1], int(argv[2]), int(argv[3]))
        idle = 0
        for it in view:
            idle += not it.active
            print(it)
        print(f"GPU {view.rank} of {view.world_size}: {len(view)} iterations, "
              f"{idle} without this GPU")
    except PlanError as e:
        print(f"vlplan_reader: {e}", file=sys.stderr)
        return 65
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
