/* lib/model/sim.c -- the simulator's driver: one iteration rank by rank (weights, order,
 * longest path from sim_dag.c / sim_sched.c), the memory timeline, the trace, the
 * per-iteration results and their aggregation over a plan (definitions in sim.h). */
#include "sim_impl.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sort.h"

#define GIB 1073741824.0

/* Trace tasks reuse the schedule's operation codes. */
_Static_assert(VL_TASK_F == (int)VL_OP_F && VL_TASK_R == (int)VL_OP_R &&
               VL_TASK_B == (int)VL_OP_B, "vl_task_kind must extend vl_op_kind");

vl_status vl_sim_scratch_new(vl_sim_scratch **out, vl_err *err)
{
    *out = calloc(1, sizeof **out);
    return *out ? VL_OK : vl_seterr(err, VL_ENOMEM, "simulator: out of memory");
}

void vl_sim_scratch_free(vl_sim_scratch *s)
{
    if (s == NULL)
        return;
    void *bufs[] = {s->layers, s->cls, s->ptr, s->avail, s->stack, s->inq, s->tf, s->tb,
                    s->rc, s->cf, s->cb, s->act, s->store, s->p2p, s->pred_off, s->pred,
                    s->succ_off, s->succ, s->hkey, s->hval, s->list, s->ord, s->pos,
                    s->has_r, s->heap, s->pend, s->start, s->end, s->tbusy};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
        free(bufs[i]);
    free(s);
}

void vl_sim_trace_free(vl_sim_trace *t)
{
    if (t == NULL)
        return;
    free(t->tasks);
    free(t->lanes);
    memset(t, 0, sizeof *t);
}

/* ---- one rank ----------------------------------------------------------------- */

typedef struct rank_out {
    double makespan, busy, idle, flops, sync, peak;  /* s, device-s, s, FLOP, s, bytes */
    uint32_t peak_stage;
    uint64_t tokens;
    int gpus;
} rank_out;

/* Live activation bytes of stage s, walked in its execution order (a stage runs one
 * task at a time, so this order is chronological).  The end of F allocates the
 * activations, or only the state store when an R follows; the end of R allocates the
 * activations; the end of B frees both. */
static double stage_act_peak(const vl_sim_scratch *w, uint32_t s)
{
    const vl_op *o = w->ord + (size_t)s * w->n;
    size_t base = (size_t)w->cls[s] * w->nmb;
    double live = 0.0, peak = 0.0;

    for (uint32_t k = 0; k < w->n; k++) {
        size_t i = base + o[k].mb;
        if (o[k].kind == VL_OP_F)
            live += w->has_r[o[k].mb] ? w->store[i] : w->act[i];
        else if (o[k].kind == VL_OP_R)
            live += w->act[i];
        else
            live -= w->has_r[o[k].mb] ? w->store[i] + w->act[i] : w->act[i];
        if (live > peak)
            peak = live;
    }
    return peak;
}

static double stage_states(const vl_sim_scratch *w, uint32_t s, int dp)
{
    vl_par par = w->rk->par;
    par.pp = (int)w->pp;
    return vl_cost_state_bytes(w->c, &par, dp, w->layers[s], s == 0, s + 1 == w->pp);
}

static vl_status push_task(vl_sim_trace *t, vl_sim_task task, vl_err *err)
{
    vl_status st = vl_grow(&t->tasks, &t->tasks_cap, t->ntasks + 1, sizeof task, err);
    if (st == VL_OK)
        t->tasks[t->ntasks++] = task;
    return st;
}

/* Stage s's tasks, plus the transfers that feed them (F from s-1, B from s+1). */
static vl_status trace_stage(const vl_sim_scratch *w, uint32_t s, vl_sim_trace *t,
                             vl_err *err)
{
    const vl_op *o = w->ord + (size_t)s * w->n;
    vl_status st = VL_OK;

    for (uint32_t k = 0; k < w->n && st == VL_OK; k++) {
        size_t node = (size_t)s * w->n + k, i = (size_t)w->cls[s] * w->nmb + o[k].mb;
        vl_sim_task task = {.rank = (uint32_t)w->r, .stage = s, .mb = o[k].mb,
                            .kind = o[k].kind, .start = w->start[node], .end = w->end[node]};
        double lag = w->p2p[o[k].mb];
        int from = o[k].kind == VL_OP_F ? (int)s - 1 : o[k].kind == VL_OP_B ? (int)s + 1 : -1;
        task.comm = o[k].kind == VL_OP_F ? w->cf[i] : o[k].kind == VL_OP_B ? w->cb[i] : 0.0;
        task.recompute = o[k].kind == VL_OP_B ? w->rc[i] : 0.0;
        st = push_task(t, task, err);
        if (st != VL_OK || lag <= 0.0 || from < 0 || from >= (int)w->pp)
            continue;
        /* the transfer starts when the sender's task ends */
        int32_t pk = w->pos[((size_t)from * 3 + o[k].kind) * w->nmb + o[k].mb];
        double t0 = w->end[(size_t)from * w->n + (size_t)pk];
        st = push_task(t, (vl_sim_task){.rank = (uint32_t)w->r, .stage = s, .mb = o[k].mb,
                                        .kind = VL_TASK_P2P, .start = t0, .end = t0 + lag},
                       err);
    }
    return st;
}

static vl_status stage_results(vl_sim_scratch *w, int dp, rank_out *ro, vl_sim_trace *t,
                               vl_err *err)
{
    vl_par par = w->rk->par;
    unsigned synced = 0;  /* classes whose sync time is known: it depends on layers only */

    par.pp = (int)w->pp;
    for (uint32_t s = 0; s < w->pp; s++) {
        double busy = w->cls_busy[w->cls[s]], act = stage_act_peak(w, s);
        double states = stage_states(w, s, dp);
        vl_status st;
        ro->busy += busy;
        ro->idle += ro->makespan - busy;
        if (!(synced & 1u << w->cls[s])) {
            synced |= 1u << w->cls[s];
            ro->sync = fmax(ro->sync, vl_cost_dp_sync_time(w->c, &par, dp, w->layers[s]));
        }
        if (act + states > ro->peak || s == 0) {
            ro->peak = act + states;
            ro->peak_stage = s;
        }
        if (t == NULL)
            continue;
        if ((st = vl_grow(&t->lanes, &t->lanes_cap, t->nlanes + 1,
                                  sizeof *t->lanes, err)) != VL_OK ||
            (st = trace_stage(w, s, t, err)) != VL_OK)
            return st;
        t->lanes[t->nlanes++] = (vl_sim_lane){.rank = (uint32_t)w->r, .stage = s,
            .layers = w->layers[s], .busy = busy, .makespan = ro->makespan,
            .act_peak = act, .states = states};
    }
    return VL_OK;
}

static void rank_volume(const vl_sim_scratch *w, rank_out *ro)
{
    const vl_mb *mbs = w->p->mbs + w->rk->mb0;

    for (uint32_t m = 0; m < w->nmb; m++) {
        ro->tokens += mbs[m].tokens;
        ro->flops += vl_cost_model_flops(w->c, vl_plan_mb_segs(w->p, &mbs[m]), mbs[m].nseg);
    }
    ro->gpus = w->rk->par.tp * (int)w->pp * w->rk->par.sp;
}

static vl_status sim_rank(vl_sim_scratch *w, const vl_sim_opts *o, int dp, rank_out *ro,
                          vl_sim_trace *t, vl_err *err)
{
    vl_status st;

    memset(ro, 0, sizeof *ro);
    w->dp = dp;
    w->nmb = w->rk->nmb;
    w->pp = w->rk->par.pp > 1 ? (uint32_t)w->rk->par.pp : 1;
    w->expl = w->rk->nop > 0 && !o->ignore_ops;
    if ((st = vl__sim_slices(w, err)) != VL_OK || (st = vl__sim_order(w, o, err)) != VL_OK ||
        (st = vl__sim_weights(w, err)) != VL_OK || (st = vl__sim_eval(w, err)) != VL_OK)
        return st;
    for (uint32_t s = 0; s < w->pp; s++)
        if (w->avail[s] > ro->makespan)
            ro->makespan = w->avail[s];
    rank_volume(w, ro);
    return stage_results(w, dp, ro, t, err);
}

/* ---- one iteration ------------------------------------------------------------ */

typedef struct iter_acc {
    double makespan, sync, idle, devtime, peak, tmax, flops;
    double *tbusy;        /* per-rank busy per device, for TBR */
    uint32_t peak_rank, peak_stage;
    uint64_t tokens;
    int gpus;
} iter_acc;

static void add_rank(iter_acc *a, const rank_out *ro, size_t r, uint32_t pp)
{
    double tb = ro->busy / pp;

    a->makespan = fmax(a->makespan, ro->makespan);
    a->sync = fmax(a->sync, ro->sync);
    a->idle += ro->idle;
    a->devtime += ro->makespan * pp;
    a->tbusy[r] = tb;
    a->tmax = fmax(a->tmax, tb);
    a->flops += ro->flops;
    a->tokens += ro->tokens;
    a->gpus += ro->gpus;
    if (r == 0 || ro->peak > a->peak) {
        a->peak = ro->peak;
        a->peak_rank = (uint32_t)r;
        a->peak_stage = ro->peak_stage;
    }
}

static void finish_iter(const iter_acc *a, size_t nranks, const vl_cost *c,
                        vl_sim_iter_result *out)
{
    double t = a->makespan + a->sync, dev = 0.0;

    for (size_t r = 0; r < nranks; r++)
        dev += a->tmax - a->tbusy[r];
    memset(out, 0, sizeof *out);
    out->iter_time_ms = t * 1e3;
    out->makespan_ms = a->makespan * 1e3;
    out->sync_ms = a->sync * 1e3;
    out->bubble = a->devtime > 0.0 ? a->idle / a->devtime : 0.0;
    /* idle = makespan - busy summed over devices cancels to a few ulps either side of
     * zero when nothing waits; report that as the zero it is */
    if (out->bubble < 1e-12)
        out->bubble = 0.0;
    out->tbr = a->tmax > 0.0 ? dev / (a->tmax * (double)nranks) : 0.0;
    out->mfu = t > 0.0 && a->gpus > 0 ? a->flops / (t * a->gpus * c->peak) : 0.0;
    out->tokens_per_s = t > 0.0 ? (double)a->tokens / t : 0.0;
    out->peak_mem_gib = a->peak / GIB;
    out->peak_rank = a->peak_rank;
    out->peak_stage = a->peak_stage;
    out->oom = a->peak > vl_cost_mem_capacity(c);
    out->tokens = a->tokens;
    out->flops = a->flops;
    out->gpus = a->gpus;
}

/* Every lane waits for the slowest rank, then all-reduces gradients together. */
static vl_status trace_sync(vl_sim_trace *t, const iter_acc *a, vl_err *err)
{
    vl_status st = VL_OK;

    t->iter_time = a->makespan + a->sync;
    for (size_t l = 0; l < t->nlanes && st == VL_OK && a->sync > 0.0; l++)
        st = push_task(t, (vl_sim_task){.rank = t->lanes[l].rank, .stage = t->lanes[l].stage,
                                        .kind = VL_TASK_SYNC, .start = a->makespan,
                                        .end = a->makespan + a->sync}, err);
    return st;
}

static vl_status run_iter(const vl_plan *p, size_t it, const vl_cost *c,
                          const vl_sim_opts *o, vl_sim_iter_result *out, vl_sim_scratch *w,
                          vl_sim_trace *t, vl_err *err)
{
    const vl_iter *itr = &p->iters[it];
    iter_acc a = {0};
    vl_status st = vl_grow(&w->tbusy, &w->tbusy_cap, itr->nranks, sizeof(double),
                                   err);

    if (st != VL_OK)
        return st;
    a.tbusy = w->tbusy;
    w->p = p;
    w->c = c;
    w->it = it;
    for (size_t r = 0; r < itr->nranks && st == VL_OK; r++) {
        rank_out ro;
        w->r = r;
        w->rk = &p->ranks[itr->rank0 + r];
        if ((st = sim_rank(w, o, (int)itr->nranks, &ro, t, err)) == VL_OK)
            add_rank(&a, &ro, r, w->pp);
    }
    if (st == VL_OK && t != NULL) {
        t->capacity = vl_cost_mem_capacity(c);
        st = trace_sync(t, &a, err);
    }
    if (st == VL_OK)
        finish_iter(&a, itr->nranks, c, out);
    return st;
}

vl_status vl_sim_iter(const vl_plan *p, size_t it, const vl_cost *c, const vl_sim_opts *o,
                      vl_sim_iter_result *out, vl_sim_scratch *s, vl_sim_trace *trace,
                      vl_err *err)
{
    static const vl_sim_opts defaults = VL_SIM_OPTS_INIT;
    vl_sim_scratch *tmp = NULL;
    vl_status st;

    if (it >= p->niters)
        return vl_seterr(err, VL_EUSAGE, "simulate: iteration %zu out of range (plan has "
                         "%zu)", it, p->niters);
    if (s == NULL && (st = vl_sim_scratch_new(&tmp, err)) != VL_OK)
        return st;
    if (trace != NULL) {
        trace->ntasks = trace->nlanes = 0;
        trace->iter_time = trace->capacity = 0.0;
    }
    st = run_iter(p, it, c, o ? o : &defaults, out, s ? s : tmp, trace, err);
    vl_sim_scratch_free(tmp);
    return st;
}

/* ---- the whole plan ----------------------------------------------------------- */

/* Mean, and nearest-rank p50 / p99 / max of v[0..n-1] (sorted in place). */
enum { COL_TIME, COL_BUBBLE, COL_TBR, COL_MEM, COL_MFU, NCOL };

typedef struct plan_acc {
    double *col;          /* [NCOL][n] per-iteration values */
    size_t n;
    double peak;          /* FLOP/s per GPU */
    double flops, denom, tokens;   /* Σ model FLOPs, Σ time·gpus·peak, Σ tokens */
} plan_acc;

static void add_iter(vl_sim_summary *out, plan_acc *a, size_t it, uint32_t epoch,
                     const vl_sim_iter_result *r)
{
    double t = r->iter_time_ms / 1e3;

    a->col[COL_TIME * a->n + it] = r->iter_time_ms;
    a->col[COL_BUBBLE * a->n + it] = r->bubble;
    a->col[COL_TBR * a->n + it] = r->tbr;
    a->col[COL_MEM * a->n + it] = r->peak_mem_gib;
    a->col[COL_MFU * a->n + it] = r->mfu;
    out->total_time_s += t;
    a->flops += r->flops;
    a->denom += t * r->gpus * a->peak;
    a->tokens += (double)r->tokens;
    if (r->oom && out->oom_iters++ == 0) {
        out->oom = true;
        out->first_oom_iter = it;
    }
    if (epoch + 1 > out->epochs)
        out->epochs = epoch + 1;
}

static void finish_plan(vl_sim_summary *out, const plan_acc *a)
{
    size_t n = a->n;

    vl_dist_of(a->col + COL_TIME * n, n, &out->iter_time_ms);
    vl_dist_of(a->col + COL_BUBBLE * n, n, &out->bubble);
    vl_dist_of(a->col + COL_TBR * n, n, &out->tbr);
    vl_dist_of(a->col + COL_MEM * n, n, &out->peak_mem_gib);
    vl_dist_of(a->col + COL_MFU * n, n, &out->mfu);
    out->epoch_time_s = out->epochs ? out->total_time_s / out->epochs : 0.0;
    out->tokens_per_s = out->total_time_s > 0.0 ? a->tokens / out->total_time_s : 0.0;
    out->mfu_overall = a->denom > 0.0 ? a->flops / a->denom : 0.0;
}

vl_status vl_sim_plan(const vl_plan *p, const vl_cost *c, const vl_sim_opts *o,
                      vl_sim_summary *out, vl_err *err)
{
    plan_acc a = {.n = p->niters, .peak = c->peak};
    vl_sim_scratch *w = NULL;
    vl_status st;

    memset(out, 0, sizeof *out);
    out->iterations = p->niters;
    if ((st = vl_sim_scratch_new(&w, err)) != VL_OK)
        return st;
    if ((a.col = malloc((a.n ? a.n : 1) * NCOL * sizeof *a.col)) == NULL) {
        st = vl_seterr(err, VL_ENOMEM, "simulator: out of memory");
        goto done;
    }
    for (size_t it = 0; it < a.n; it++) {
        vl_sim_iter_result r;
        if ((st = vl_sim_iter(p, it, c, o, &r, w, NULL, err)) != VL_OK)
            goto done;
        add_iter(out, &a, it, p->iters[it].epoch, &r);
    }
    finish_plan(out, &a);
done:
    free(a.col);
    vl_sim_scratch_free(w);
    return st;
}
