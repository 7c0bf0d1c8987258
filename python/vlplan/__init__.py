"""vlplan: read a vlplan training plan (schema vlplan.plan/1) and give every GPU its part.

    import vlplan
    for it in vlplan.GpuView("plan.jsonl"):          # RANK, WORLD_SIZE from the launcher
        for mb in it.micro_batches:                   # mb.indices, mb.cu_seqlens, ...
            (loss_sum(model, mb) * it.loss_scale).backward()
        optimizer.step()                              # every GPU, taking part or not

Slices, schedules, backward packs and context parallelism: vlplan.contract (the
execution contract).  Pure Python; torch is needed only by vlplan.torch_adapters.
"""
from typing import Callable, Optional

from . import contract
from .plan import Plan
from .records import SCHEMA, Segment
from .stream import PlanError
from .view import GpuView, IterationView, MicroBatch, manifest_index, rank_gpus

__all__ = ["Plan", "PlanError", "GpuView", "IterationView", "MicroBatch", "Segment",
           "SCHEMA", "contract", "manifest_index", "rank_gpus", "open_view"]
__version__ = "0.1.0"


def open_view(path, rank: Optional[int] = None, world_size: Optional[int] = None,
              start_iter: int = 0, id_to_index: Optional[Callable] = None,
              allow_larger_world: bool = False) -> GpuView:
    """GpuView(path, ...): this GPU's iterations of the plan at path."""
    return GpuView(path, rank, world_size, start_iter, id_to_index, allow_larger_world)
