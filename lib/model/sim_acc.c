/* lib/model/sim_acc.c -- the simulator over a whole plan: each iteration simulated in
 * turn (sim.c) and its results summed and distributed (vl_sim_acc, vl_sim_plan;
 * definitions in sim.h). */
#include "sim_impl.h"

#include <stdlib.h>
#include <string.h>

enum { COL_TIME, COL_BUBBLE, COL_TBR, COL_MEM, COL_MFU, COL_GAP, NCOL };

struct vl_sim_acc {
    const vl_cost *c;
    const vl_sim_opts *o;
    vl_sim_scratch *w;
    vl_series s;                 /* per-iteration values, NCOL columns */
    vl_sim_summary out;          /* the sums so far */
    double flops, denom, tokens; /* Σ model FLOPs, Σ time·gpus·peak, Σ tokens */
};

vl_status vl_sim_acc_new(vl_sim_acc **out, const vl_cost *c, const vl_sim_opts *o, vl_err *err)
{
    vl_sim_acc *a = calloc(1, sizeof *a);
    vl_status st;

    *out = NULL;
    if (!a)
        return vl_seterr(err, VL_ENOMEM, "simulator: out of memory");
    a->c = c;
    a->o = o;
    a->s.ncol = NCOL;
    if ((st = vl_sim_scratch_new(&a->w, err)) != VL_OK) {
        free(a);
        return st;
    }
    *out = a;
    return VL_OK;
}

void vl_sim_acc_free(vl_sim_acc *a)
{
    if (!a)
        return;
    vl_sim_scratch_free(a->w);
    vl_series_free(&a->s);
    free(a);
}

vl_status vl_sim_acc_iter(vl_sim_acc *a, const vl_plan *p, size_t it, vl_sim_iter_result *res,
                          vl_err *err)
{
    vl_sim_iter_result r;
    vl_sim_summary *out = &a->out;
    uint32_t epoch = p->iters[it].epoch;
    vl_status st = vl_sim_iter(p, it, a->c, a->o, &r, a->w, NULL, err);
    double t = r.iter_time_ms / 1e3;

    if (st != VL_OK)
        return st;
    if (res)
        *res = r;
    double row[NCOL] = {
        [COL_TIME] = r.iter_time_ms, [COL_BUBBLE] = r.bubble, [COL_TBR] = r.tbr,
        [COL_MEM] = r.peak_mem_gib,  [COL_MFU] = r.mfu,       [COL_GAP] = r.rank_gap};
    out->total_time_s += t;
    out->epoch_propagation_s += r.makespan_ms / 1e3; /* summed; per epoch at finish */
    out->epoch_sync_s += r.sync_ms / 1e3;
    out->epoch_optimizer_s += r.optimizer_ms / 1e3;
    a->flops += r.flops;
    a->denom += t * r.gpus * a->c->peak;
    a->tokens += (double)r.tokens;
    if (r.oom && out->oom_iters++ == 0) {
        out->oom = true;
        out->first_oom_iter = (size_t)(p->iter_base + it);
    }
    if (epoch + 1 > out->epochs)
        out->epochs = epoch + 1;
    return vl_series_push(&a->s, row, err);
}

void vl_sim_acc_finish(vl_sim_acc *a, vl_sim_summary *out)
{
    *out = a->out;
    out->iterations = a->s.n;
    vl_series_dist(&a->s, COL_TIME, &out->iter_time_ms);
    vl_series_dist(&a->s, COL_BUBBLE, &out->bubble);
    vl_series_dist(&a->s, COL_TBR, &out->tbr);
    vl_series_dist(&a->s, COL_MEM, &out->peak_mem_gib);
    vl_series_dist(&a->s, COL_MFU, &out->mfu);
    vl_series_dist(&a->s, COL_GAP, &out->rank_gap);
    out->epoch_time_s = out->epochs ? out->total_time_s / out->epochs : 0.0;
    out->epoch_propagation_s = out->epochs ? out->epoch_propagation_s / out->epochs : 0.0;
    out->epoch_sync_s = out->epochs ? out->epoch_sync_s / out->epochs : 0.0;
    out->epoch_optimizer_s = out->epochs ? out->epoch_optimizer_s / out->epochs : 0.0;
    out->tokens_per_s = out->total_time_s > 0.0 ? a->tokens / out->total_time_s : 0.0;
    out->mfu_overall = a->denom > 0.0 ? a->flops / a->denom : 0.0;
}

vl_status vl_sim_plan(const vl_plan *p, const vl_cost *c, const vl_sim_opts *o,
                      vl_sim_summary *out, vl_err *err)
{
    vl_sim_acc *a = NULL;
    vl_status st = vl_sim_acc_new(&a, c, o, err);

    memset(out, 0, sizeof *out);
    for (size_t it = 0; st == VL_OK && it < p->niters; it++)
        st = vl_sim_acc_iter(a, p, it, NULL, err);
    if (st == VL_OK)
        vl_sim_acc_finish(a, out);
    vl_sim_acc_free(a);
    return st;
}
