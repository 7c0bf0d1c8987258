#!/usr/bin/env python3
"""Megatron-Core's hybrid-CP groups for global batches, to compare with vlplan's mcore_cp
(testdata/mcore_cp/megatron_groups.txt was made with it).

    tools/mcore_cp_groups.py PATH/hybrid_cp_schedule.py < inputs > groups

(the file is megatron/core/pipeline_parallel/hybrid_cp_schedule.py of NVIDIA/Megatron-LM).

Input lines: per_rank gpus len0 len1 ...; output lines: the groups separated by ' | ',
each a list of GPU sets gpu0:size:id,id,... (ids = positions in the input).  torch and
the Megatron modules hybrid_cp_schedule.py imports are stubbed; only BalancedCPScheduler
runs.  Sets are read back as runs of neighbouring GPUs with the same sample list (a
sample is on one set only, so neighbouring sets never have equal lists)."""
import sys
import types


def load_scheduler(path):
    torch = types.ModuleType("torch")
    torch.distributed = types.ModuleType("torch.distributed")
    torch.distributed.ProcessGroup = object
    sys.modules["torch"] = torch
    sys.modules["torch.distributed"] = torch.distributed
    core = types.ModuleType("megatron.core")
    core.parallel_state = None
    rerun = types.ModuleType("megatron.core.rerun_state_machine")
    rerun.RerunDataIterator = object
    sys.modules["megatron"] = types.ModuleType("megatron")
    sys.modules["megatron.core"] = core
    sys.modules["megatron.core.rerun_state_machine"] = rerun
    mod = types.ModuleType("hybrid_cp_schedule")
    with open(path) as f:
        exec(compile(f.read(), path, "exec"), mod.__dict__)
    return mod.BalancedCPScheduler


class Group:
    def __init__(self, n):
        self.n = n

    def size(self):
        return self.n


def main():
    sched = load_scheduler(sys.argv[1])
    for line in sys.stdin:
        v = [int(x) for x in line.split()]
        if not v:
            continue
        per, gpus, lens = v[0], v[1], v[2:]
        _, ids = sched(per, Group(gpus)).get_groups_and_subsamples(list(enumerate(lens)), None)
        out = []
        for g in ids:
            sets, r = [], 0
            while r < gpus:
                k = r
                while k + 1 < gpus and g[k + 1] == g[r]:
                    k += 1
                sets.append("%d:%d:%s" % (r, k - r + 1, ",".join(map(str, g[r]))))
                r = k + 1
            out.append(" ".join(sets))
        print(" | ".join(out))


if __name__ == "__main__":
    main()
