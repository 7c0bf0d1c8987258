/* lib/model/sim.c -- the simulator's driver: one iteration at a time -- every rank
 * prepared (sim_rank.c, sim_sched.c), the joint longest path (sim_dag.c), then the
 * memory timeline, the trace and the per-iteration results (definitions in sim.h);
 * their aggregation over a plan is in sim_acc.c. */
#include "sim_impl.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sort.h"

#define GIB 1073741824.0

/* Trace tasks reuse the schedule's operation codes. */
_Static_assert(VL_TASK_F == (int)VL_OP_F && VL_TASK_R == (int)VL_OP_R &&
                   VL_TASK_B == (int)VL_OP_B,
               "vl_task_kind must extend vl_op_kind");

vl_status vl_sim_scratch_new(vl_sim_scratch **out, vl_err *err)
{
    *out = calloc(1, sizeof **out);
    return *out ? VL_OK : vl_seterr(err, VL_ENOMEM, "simulator: out of memory");
}

void vl_sim_scratch_free(vl_sim_scratch *s)
{
    if (s == NULL)
        return;
    void *bufs[] = {
        s->rk,      s->lrank,  s->lstage,  s->lcls,     s->llayers,  s->ptr,      s->avail,
        s->bdone,   s->stack,  s->inq,     s->ord,      s->start,    s->end,      s->dur,
        s->pos,     s->tf,     s->cf,      s->af,       s->sf,       s->tb,       s->rc,
        s->cb,      s->ab,     s->p2pf,    s->p2pb,     s->has_r,    s->sharef,   s->shareb,
        s->list,    s->fp_off, s->fp,      s->bf_off,   s->bf,       s->bb_off,   s->bb,
        s->rbf_off, s->rbf,    s->rbb_off, s->rbb,      s->heap,     s->pend,     s->iv,
        s->tmp,     s->ivtab,  s->inst,    s->inst_off, s->bar_left, s->bar_time, s->tbusy};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
        free(bufs[i]);
    free(s->edges.fp);
    free(s->edges.bf);
    free(s->edges.bb);
    vl_cost_memo_free(s->memo);
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

/* ---- laying out the iteration ---------------------------------------------------- */

/* Counts and offsets of every rank into the iteration-wide arrays. */
typedef struct totals {
    uint64_t lanes, nodes, pos, wf, wb, pk, list, maxb;
} totals;

static void lay_out(vl_sim_scratch *w, uint32_t r, totals *t)
{
    vl_sim_rank *R = &w->rk[r];
    const vl_rank *rk = &w->p->ranks[w->p->iters[w->it].rank0 + r];
    bool expl = rk->nop > 0 && !w->o->ignore_ops;

    memset(R, 0, sizeof *R);
    R->rk = rk;
    R->nf = rk->nmb;
    R->asym = rk->nbwd > 0;
    R->nb = R->asym ? rk->nbwd : rk->nmb;
    R->npk = R->nf > R->nb ? R->nf : R->nb;
    R->pp = rk->par.pp > 1 ? (uint32_t)rk->par.pp : 1;
    R->n = expl ? rk->nop : R->nf + R->nb;
    R->lane0 = t->lanes;
    R->node0 = t->nodes;
    R->pos0 = t->pos;
    R->wf0 = t->wf;
    R->wb0 = t->wb;
    R->pk0 = t->pk;
    R->list0 = t->list;
    t->lanes += R->pp;
    t->nodes += (uint64_t)R->pp * R->n;
    t->pos += (uint64_t)R->pp * 3 * R->npk;
    t->wf += (uint64_t)VL_SIM_MAXCLS * R->nf;
    t->wb += (uint64_t)VL_SIM_MAXCLS * R->nb;
    t->pk += R->npk;
    t->list += R->n;
    t->maxb = R->nb > t->maxb ? R->nb : t->maxb;
}

static vl_status reserve(vl_sim_scratch *w, const totals *t, vl_err *err)
{
    struct {
        void *a;
        size_t *cap;
        uint64_t n;
        size_t el;
    } g[] = {
        {&w->lrank, &w->lrank_cap, t->lanes, sizeof(uint32_t)},
        {&w->lstage, &w->lstage_cap, t->lanes, sizeof(uint32_t)},
        {&w->lcls, &w->lcls_cap, t->lanes, sizeof(int)},
        {&w->llayers, &w->llayers_cap, t->lanes, sizeof(int)},
        {&w->ord, &w->ord_cap, t->nodes, sizeof(vl_op)},
        {&w->pos, &w->pos_cap, t->pos, sizeof(int32_t)},
        {&w->tf, &w->tf_cap, t->wf, sizeof(double)},
        {&w->cf, &w->cf_cap, t->wf, sizeof(double)},
        {&w->af, &w->af_cap, t->wf, sizeof(double)},
        {&w->sf, &w->sf_cap, t->wf, sizeof(double)},
        {&w->tb, &w->tb_cap, t->wb, sizeof(double)},
        {&w->rc, &w->rc_cap, t->wb, sizeof(double)},
        {&w->cb, &w->cb_cap, t->wb, sizeof(double)},
        {&w->ab, &w->ab_cap, t->wb, sizeof(double)},
        {&w->p2pf, &w->p2pf_cap, t->pk, sizeof(double)},
        {&w->p2pb, &w->p2pb_cap, t->pk, sizeof(double)},
        {&w->has_r, &w->has_r_cap, t->pk, 1},
        {&w->sharef, &w->sharef_cap, t->pk, sizeof(int32_t)},
        {&w->shareb, &w->shareb_cap, t->pk, sizeof(int32_t)},
        {&w->list, &w->list_cap, t->list, sizeof(vl_op)},
        {&w->bar_left, &w->bar_left_cap, t->maxb, sizeof(uint32_t)},
        {&w->bar_time, &w->bar_time_cap, t->maxb, sizeof(double)},
        {&w->tbusy, &w->tbusy_cap, w->nranks, sizeof(double)},
    };
    vl_status st;

    for (size_t i = 0; i < sizeof g / sizeof g[0]; i++)
        if ((st = vl_grow(g[i].a, g[i].cap, g[i].n ? g[i].n : 1, g[i].el, err)) != VL_OK)
            return st;
    return VL_OK;
}

/* ---- gradient synchronisation ---------------------------------------------------- */

/* The ranks sharding one stage's states: every rank of the iteration, or, with the
 * optimizer sharded over the world, the GPUs of the job. */
static double stage_states(const vl_sim_scratch *w, const vl_sim_rank *R, uint32_t s)
{
    vl_par par = R->rk->par;
    int layers = w->llayers[R->lane0 + s];

    par.pp = (int)R->pp;
    if (w->p->caps & VL_CAP_WORLD_OPTIM)
        return vl_cost_state_bytes_world(w->c, &par, layers, s == 0, s + 1 == R->pp,
                                         w->c->cfg->cluster.gpus);
    return vl_cost_state_bytes(w->c, &par, (int)w->nranks, layers, s == 0, s + 1 == R->pp);
}

/* The replicas one stage of rank R reduces over: every rank of the iteration, or, with
 * the optimizer sharded over the world, the job's copies of the rank. */
static int sync_copies(const vl_sim_scratch *w, const vl_sim_rank *R)
{
    if (w->p->caps & VL_CAP_WORLD_OPTIM) {
        uint32_t g = vl_plan_rank_size(R->rk);
        return g ? (int)(w->c->cfg->cluster.gpus / (int)g) : 1;
    }
    return (int)w->nranks;
}

/* The longest gradient reduction of any stage of any rank, unhidden: what each
 * micro-step's backward has to hide under training.dp_sync=micro_step (sim_dag.c). */
static double step_grad(const vl_sim_scratch *w)
{
    double g = 0.0;

    for (uint32_t r = 0; r < w->nranks; r++) {
        const vl_sim_rank *R = &w->rk[r];
        vl_par par = R->rk->par;
        par.pp = (int)R->pp;
        for (int k = 0; k < R->ncls; k++)
            g = fmax(g, vl_cost_dp_grad_time(w->c, &par, sync_copies(w, R), R->cls_layers[k]));
    }
    return g;
}

/* When the last backward on stage s of R starts (its makespan when it has none). */
static double last_bwd_start(const vl_sim_scratch *w, const vl_sim_rank *R, uint32_t s)
{
    uint64_t n0 = R->node0 + (uint64_t)s * R->n;

    for (uint32_t i = R->n; i-- > 0;)
        if (w->ord[n0 + i].kind == VL_OP_B)
            return w->start[n0 + i];
    return R->makespan;
}

/* Exposed synchronisation at the end of the iteration, the worst stage of any rank: the
 * last gradient reduction, hidden behind what is computed from the start of the stage's
 * last backward to the end of the iteration (at most overlap.dp of it), then the
 * parameter gather. */
static double end_sync(const vl_sim_scratch *w, double makespan)
{
    double end = 0.0;

    for (uint32_t r = 0; r < w->nranks; r++) {
        const vl_sim_rank *R = &w->rk[r];
        vl_par par = R->rk->par;
        int copies = sync_copies(w, R);
        par.pp = (int)R->pp;
        for (uint32_t s = 0; s < R->pp; s++) {
            int layers = w->llayers[R->lane0 + s];
            double grad = vl_cost_dp_grad_time(w->c, &par, copies, layers);
            double param = vl_cost_dp_param_time(w->c, &par, copies, layers);
            double hide = makespan - last_bwd_start(w, R, s);
            end = fmax(end, vl_cost_dp_grad_exposed(w->c, grad, hide) +
                                vl_cost_dp_exposed(w->c, 0.0, param));
        }
    }
    return end;
}

/* The optimizer step after the synchronisation: the slowest device's. */
static double optimizer_time(const vl_sim_scratch *w)
{
    double t = 0.0;

    for (uint32_t r = 0; r < w->nranks; r++)
        for (uint32_t s = 0; s < w->rk[r].pp; s++)
            t = fmax(t, vl_cost_optimizer_time(w->c, stage_states(w, &w->rk[r], s)));
    return t;
}

/* Micro-step barriers: barrier k waits for the ranks with more than k B packs. */
static void set_barriers(vl_sim_scratch *w, uint64_t maxb)
{
    w->nbar = 0;
    w->step_grad = 0.0;
    if (w->c->cfg->training.dp_sync != VL_DP_SYNC_MICRO_STEP || w->nranks < 2)
        return;
    w->nbar = (uint32_t)maxb;
    w->step_grad = step_grad(w);
    for (uint32_t k = 0; k < w->nbar; k++) {
        w->bar_left[k] = 0;
        w->bar_time[k] = 0.0;
        for (uint32_t r = 0; r < w->nranks; r++)
            w->bar_left[k] += w->rk[r].nb > k;
    }
}

/* ---- preparing every rank ---------------------------------------------------------- */

static vl_status prepare(vl_sim_scratch *w, vl_err *err)
{
    totals t = {0};
    vl_status st;

    if ((st = vl_grow(&w->rk, &w->rk_cap, w->nranks ? w->nranks : 1, sizeof *w->rk, err)))
        return st;
    for (uint32_t r = 0; r < w->nranks; r++)
        lay_out(w, r, &t);
    w->nlanes = t.lanes;
    w->nnodes = t.nodes;
    w->nfp = w->nbf = w->nbb = w->nfp_rows = w->nb_rows = 0;
    if ((st = reserve(w, &t, err)) != VL_OK)
        return st;
    for (uint32_t r = 0; r < w->nranks; r++) {
        const vl_sim_rank *R = &w->rk[r];
        for (uint32_t s = 0; s < R->pp; s++) {
            w->lrank[R->lane0 + s] = r;
            w->lstage[R->lane0 + s] = s;
        }
        if ((st = vl__sim_layers(w, r, err)) != VL_OK || (st = vl__sim_deps(w, r, err)) ||
            (st = vl__sim_order(w, r, err)) != VL_OK || (st = vl__sim_weights(w, r, err)))
            return st;
    }
    set_barriers(w, t.maxb);
    return vl__sim_shares(w, err);
}

/* Whether w's prepared ranks are iteration it of p (with c and o) up to the ranks'
 * checkpointing: the same rank records, pack and operation counts and degrees. */
static bool same_shapes(const vl_sim_scratch *w, const vl_plan *p, size_t it, const vl_cost *c,
                        const vl_sim_opts *o)
{
    if (!w->prepared || w->p != p || w->it != it || w->c_in != c || w->o != o ||
        w->nranks != p->iters[it].nranks)
        return false;
    for (uint32_t r = 0; r < w->nranks; r++) {
        const vl_sim_rank *R = &w->rk[r];
        const vl_rank *rk = &p->ranks[p->iters[it].rank0 + r];
        bool expl = rk->nop > 0 && !o->ignore_ops;
        if (R->rk != rk || R->nf != rk->nmb || (R->asym ? R->nb : 0) != rk->nbwd ||
            R->n != (expl ? rk->nop : R->nf + R->nb) || R->weighed.tp != rk->par.tp ||
            R->weighed.pp != rk->par.pp || R->weighed.sp != rk->par.sp)
            return false;
    }
    return true;
}

/* prepare() for vl_sim_iter_again: only the ranks whose checkpointing changed are
 * weighed again; the barriers and shared packs, which the longest path consumes, are
 * set up afresh. */
static vl_status prepare_again(vl_sim_scratch *w, vl_err *err)
{
    uint64_t maxb = 0;
    vl_status st;

    for (uint32_t r = 0; r < w->nranks; r++) {
        const vl_sim_rank *R = &w->rk[r];
        maxb = R->nb > maxb ? R->nb : maxb;
        if (R->rk->par.ckpt_layers != R->weighed.ckpt_layers &&
            (st = vl__sim_weights(w, r, err)) != VL_OK)
            return st;
    }
    set_barriers(w, maxb);
    return vl__sim_shares(w, err);
}

/* ---- results of one rank ----------------------------------------------------------- */

typedef struct rank_out {
    double makespan, busy, idle, flops, peak; /* s, device-s, s, FLOP, bytes */
    uint32_t peak_stage;
    uint64_t tokens;
    int gpus;
} rank_out;

/* Live activation bytes of lane (R, s), walked in its execution order (a stage runs one
 * task at a time, so this order is chronological).  The end of F allocates the
 * activations, or only the state store when an R follows; the end of R allocates the
 * activations; the end of B frees what its pack holds. */
static double stage_act_peak(const vl_sim_scratch *w, const vl_sim_rank *R, uint32_t s)
{
    const vl_op *o = w->ord + R->node0 + (uint64_t)s * R->n;
    int k = w->lcls[R->lane0 + s];
    uint64_t fb = R->wf0 + (uint64_t)k * R->nf, bb = R->wb0 + (uint64_t)k * R->nb;
    double live = 0.0, peak = 0.0;

    for (uint32_t i = 0; i < R->n; i++) {
        uint32_t m = o[i].mb;
        if (o[i].kind == VL_OP_F)
            live += w->has_r[R->pk0 + m] ? w->sf[fb + m] : w->af[fb + m];
        else if (o[i].kind == VL_OP_R)
            live += w->af[fb + m];
        else
            live -= w->ab[bb + m];
        if (live > peak)
            peak = live;
    }
    return peak;
}

static vl_status push_task(vl_sim_trace *t, vl_sim_task task, vl_err *err)
{
    vl_status st = vl_grow(&t->tasks, &t->tasks_cap, t->ntasks + 1, sizeof task, err);
    if (st == VL_OK)
        t->tasks[t->ntasks++] = task;
    return st;
}

/* Lane (r, s)'s tasks, plus the transfers that feed them (F from s-1, B from s+1). */
static vl_status trace_stage(const vl_sim_scratch *w, uint32_t r, uint32_t s, vl_sim_trace *t,
                             vl_err *err)
{
    const vl_sim_rank *R = &w->rk[r];
    const vl_op *o = w->ord + R->node0 + (uint64_t)s * R->n;
    int k = w->lcls[R->lane0 + s];
    vl_status st = VL_OK;

    for (uint32_t i = 0; i < R->n && st == VL_OK; i++) {
        uint64_t node = R->node0 + (uint64_t)s * R->n + i;
        uint32_t m = o[i].mb;
        bool b = o[i].kind == VL_OP_B;
        vl_sim_task task = {.rank = r,
                            .stage = s,
                            .mb = m,
                            .kind = o[i].kind,
                            .start = w->start[node],
                            .end = w->end[node]};
        double lag = b ? w->p2pb[R->pk0 + m] : w->p2pf[R->pk0 + m];
        int from = o[i].kind == VL_OP_F ? (int)s - 1 : b ? (int)s + 1 : -1;
        int32_t pk;
        task.comm = o[i].kind == VL_OP_F ? w->cf[R->wf0 + (uint64_t)k * R->nf + m]
                    : b                  ? w->cb[R->wb0 + (uint64_t)k * R->nb + m]
                                         : 0.0;
        task.recompute = b ? w->rc[R->wb0 + (uint64_t)k * R->nb + m] : 0.0;
        st = push_task(t, task, err);
        if (st != VL_OK || lag <= 0.0 || from < 0 || from >= (int)R->pp)
            continue;
        /* the transfer starts when the sender's task ends */
        pk = *vl__sim_pos(w, R, (uint32_t)from, o[i].kind, m);
        double t0 = w->end[R->node0 + (uint64_t)from * R->n + (uint64_t)pk];
        st = push_task(t,
                       (vl_sim_task){.rank = r,
                                     .stage = s,
                                     .mb = m,
                                     .kind = VL_TASK_P2P,
                                     .start = t0,
                                     .end = t0 + lag},
                       err);
    }
    return st;
}

static vl_status rank_results(const vl_sim_scratch *w, uint32_t r, rank_out *ro,
                              vl_sim_trace *t, vl_err *err)
{
    const vl_sim_rank *R = &w->rk[r];
    const vl_mb *mbs = vl_plan_rank_mbs(w->p, R->rk);
    vl_status st;

    memset(ro, 0, sizeof *ro);
    ro->makespan = R->makespan;
    for (uint32_t s = 0; s < R->pp; s++) {
        uint64_t l = R->lane0 + s;
        double busy = R->cls_busy[w->lcls[l]], act = stage_act_peak(w, R, s);
        double states = stage_states(w, R, s);
        ro->busy += busy;
        ro->idle += ro->makespan - busy;
        if (act + states > ro->peak || s == 0) {
            ro->peak = act + states;
            ro->peak_stage = s;
        }
        if (t == NULL)
            continue;
        if ((st = vl_grow(&t->lanes, &t->lanes_cap, t->nlanes + 1, sizeof *t->lanes, err)) ||
            (!t->lanes_only && (st = trace_stage(w, r, s, t, err)) != VL_OK))
            return st;
        t->lanes[t->nlanes++] = (vl_sim_lane){.rank = r,
                                              .stage = s,
                                              .layers = w->llayers[l],
                                              .busy = busy,
                                              .makespan = ro->makespan,
                                              .act_peak = act,
                                              .states = states};
    }
    for (uint32_t m = 0; m < R->nf; m++) { /* a shared pack counts once */
        if (!vl_plan_mb_primary(w->p, R->rk, &mbs[m]))
            continue;
        ro->tokens += mbs[m].tokens;
        if (!w->o->memory_only)
            ro->flops +=
                vl_cost_model_flops(w->c, vl_plan_mb_segs(w->p, &mbs[m]), mbs[m].nseg);
    }
    ro->gpus = (int)vl_plan_rank_size(R->rk);
    return VL_OK;
}

/* ---- one iteration ------------------------------------------------------------ */

typedef struct iter_acc {
    double makespan, fastest, idle, devtime, peak, tmax, flops;
    double *tbusy; /* per-rank busy per device, for TBR */
    uint32_t peak_rank, peak_stage;
    uint64_t tokens;
    int gpus;
} iter_acc;

static void add_rank(iter_acc *a, const rank_out *ro, size_t r, uint32_t pp)
{
    double tb = ro->busy / pp;

    a->makespan = fmax(a->makespan, ro->makespan);
    a->fastest = r == 0 ? ro->makespan : fmin(a->fastest, ro->makespan);
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

static void finish_iter(const iter_acc *a, size_t nranks, double sync, double opt,
                        const vl_cost *c, vl_sim_iter_result *out)
{
    double t = a->makespan + sync + opt, dev = 0.0;

    for (size_t r = 0; r < nranks; r++)
        dev += a->tmax - a->tbusy[r];
    memset(out, 0, sizeof *out);
    out->iter_time_ms = t * 1e3;
    out->makespan_ms = a->makespan * 1e3;
    out->sync_ms = sync * 1e3;
    out->optimizer_ms = opt * 1e3;
    out->rank_gap = a->makespan > 0.0 ? (a->makespan - a->fastest) / a->makespan : 0.0;
    if (out->rank_gap < 1e-12)
        out->rank_gap = 0.0;
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
static vl_status trace_sync(vl_sim_trace *t, double makespan, double sync, vl_err *err)
{
    vl_status st = VL_OK;

    t->iter_time = makespan + sync;
    for (size_t l = 0; l < t->nlanes && st == VL_OK && sync > 0.0 && !t->lanes_only; l++)
        st = push_task(t,
                       (vl_sim_task){.rank = t->lanes[l].rank,
                                     .stage = t->lanes[l].stage,
                                     .kind = VL_TASK_SYNC,
                                     .start = makespan,
                                     .end = makespan + sync},
                       err);
    return st;
}

static vl_status run_iter(vl_sim_scratch *w, bool again, vl_sim_iter_result *out,
                          vl_sim_trace *t, vl_err *err)
{
    iter_acc a = {0};
    double sync;
    vl_status st;

    w->prepared = false;
    if ((st = again ? prepare_again(w, err) : prepare(w, err)) != VL_OK ||
        (st = vl__sim_eval(w, err)) != VL_OK)
        return st;
    a.tbusy = w->tbusy;
    for (uint32_t r = 0; r < w->nranks && st == VL_OK; r++) {
        rank_out ro;
        if ((st = rank_results(w, r, &ro, t, err)) == VL_OK)
            add_rank(&a, &ro, r, w->rk[r].pp);
    }
    /* the last step's reduction and the parameter gather end the iteration (under
     * micro-step sync the earlier reductions are inside the makespan: the barriers), then
     * the optimizer step */
    double opt = w->o->memory_only ? 0.0 : optimizer_time(w);
    sync = w->o->memory_only ? 0.0 : end_sync(w, a.makespan);
    if (st == VL_OK && t != NULL) {
        t->capacity = vl_cost_mem_capacity(w->c);
        st = trace_sync(t, a.makespan, sync + opt, err);
    }
    if (st == VL_OK)
        finish_iter(&a, w->nranks, sync, opt, w->c, out);
    w->prepared = st == VL_OK;
    return st;
}

static const vl_sim_opts defaults = VL_SIM_OPTS_INIT;

/* The weights cost with c through a memo (vl_cost_memoized: the same values; a whole
 * sample's attention taken once per length): c's own when it has one (the caller's,
 * shared with its other cost calls), else the scratch's, kept across the iterations it
 * simulates. */
static void bind_cost(vl_sim_scratch *s, const vl_cost *c)
{
    s->c_in = c;
    if (c->memo) {
        s->c = c;
        return;
    }
    s->cm = vl_cost_memoized(c, &s->memo);
    s->c = &s->cm;
}

vl_status vl_sim_iter_again(const vl_plan *p, size_t it, const vl_cost *c,
                            const vl_sim_opts *o, vl_sim_iter_result *out, vl_sim_scratch *s,
                            vl_sim_trace *trace, vl_err *err)
{
    if (it >= p->niters || !same_shapes(s, p, it, c, o ? o : &defaults))
        return vl_sim_iter(p, it, c, o, out, s, trace, err);
    if (trace != NULL) {
        trace->ntasks = trace->nlanes = 0;
        trace->iter_time = trace->capacity = 0.0;
    }
    bind_cost(s, c);
    return run_iter(s, true, out, trace, err);
}

vl_status vl_sim_iter(const vl_plan *p, size_t it, const vl_cost *c, const vl_sim_opts *o,
                      vl_sim_iter_result *out, vl_sim_scratch *s, vl_sim_trace *trace,
                      vl_err *err)
{
    vl_sim_scratch *tmp = NULL;
    vl_status st;

    if (it >= p->niters)
        return vl_seterr(err, VL_EUSAGE,
                         "simulate: iteration %zu out of range (plan has "
                         "%zu)",
                         it, p->niters);
    if (s == NULL && (st = vl_sim_scratch_new(&tmp, err)) != VL_OK)
        return st;
    if (s == NULL)
        s = tmp;
    if (trace != NULL) {
        trace->ntasks = trace->nlanes = 0;
        trace->iter_time = trace->capacity = 0.0;
    }
    s->p = p;
    bind_cost(s, c);
    s->o = o ? o : &defaults;
    s->it = it;
    s->nranks = p->iters[it].nranks;
    st = run_iter(s, false, out, trace, err);
    vl_sim_scratch_free(tmp);
    return st;
}
