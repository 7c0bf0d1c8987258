/* plans/slimpack/slimpack_mem.c -- the memory a batch's plan must stay within, and the
 * DP-Merge degree a sample needs to fit at all (docs/slimpack.md §2.3, §2.8).
 *
 * The budget (a documented choice; the paper only says candidates must fit device
 * memory, and claims SlimPack's peak is lower than sample packing's): with
 * slimpack.mem_budget=baseline the memory that best-fit packing to the context takes
 * for this batch under 1F1B -- min(pp, ⌈batch tokens / (dp · context)⌉) micro-batches of
 * training.max_seq_len tokens in flight on the first stage, checkpointed as
 * training.recompute checkpoints them (auto: the fewest layers with which pp of them
 * fit the device, as the `pack` baseline does) -- so that the fastest plan kept is one
 * whose peak is at or below the baseline's; slimpack.mem_cap_gib replaces it when set;
 * the device's usable memory bounds both. */
#include "slimpack_impl.h"

int vl__sp_baseline_ckpt(const sp_setting *s)
{
    if (s->ckpt_mode == VL_RECOMPUTE_FULL)
        return s->stage_layers;
    if (s->ckpt_mode != VL_RECOMPUTE_AUTO)
        return 0;
    return vl_cost_fewest_ckpt(s->cost, s->ctx, &s->par, s->dp, (uint32_t)s->par.pp);
}

double vl__sp_batch_room(const sp_setting *s, uint64_t tokens)
{
    double device, cap = s->o->mem_cap_gib * 1073741824.0, room;

    if (s->cost == NULL)
        return 0; /* the simulator's capacity */
    device = vl_cost_mem_capacity(s->cost);
    room = cap > 0 ? cap : device;
    if (cap <= 0 && s->o->mem_budget == SP_MEM_BASELINE && s->ctx > 0) {
        vl_par q = s->par;
        uint64_t per_rank = (uint64_t)s->ctx * (uint64_t)s->dp;
        uint64_t mbs = (tokens + per_rank - 1) / per_rank;
        q.ckpt_layers = vl__sp_baseline_ckpt(s);
        if (mbs > (uint64_t)q.pp)
            mbs = (uint64_t)q.pp;
        if (q.ckpt_layers >= 0)
            room =
                vl_cost_rank_peak_bytes(s->cost, s->ctx, &q, s->dp, (uint32_t)(mbs ? mbs : 1));
    }
    return room < device ? room : device;
}

int vl__sp_mem_ranks(const sp_setting *s, uint32_t n, double room)
{
    vl_par q = s->par;
    int k = 1;

    if (s->cost == NULL || room <= 0)
        return 1;
    /* the most checkpointing the rank may use (the search checkpoints every layer under
     * full, raises a rank up to every layer under auto, and none under none or selective);
     * the sample alone, every slice of it in flight at once (its backward starts only
     * after its last slice's forward) */
    q.ckpt_layers = s->ckpt_mode == VL_RECOMPUTE_FULL || s->ckpt_mode == VL_RECOMPUTE_AUTO
                        ? s->stage_layers
                        : 0;
    while (k < (1 << 20) &&
           vl_cost_rank_peak_bytes(s->cost, (n + (uint32_t)k - 1) / (uint32_t)k, &q, s->dp,
                                   1) > room)
        k *= 2;
    return k;
}
