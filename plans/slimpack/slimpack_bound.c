/* plans/slimpack/slimpack_bound.c -- what a rank's checkpointing and busy time must at
 * least be, by the cost model alone (docs/slimpack.md §8): the checkpointed layers that
 * bring an activation peak within the room (more_ckpt, what simulate() in
 * slimpack_search.c raises a rank to), and the lower bounds the candidate search uses to
 * leave out simulations that cannot win (a rank's busy time; the fewest checkpointed
 * layers it may end with).  Each bound says why it cannot exceed what the simulator
 * would find. */
#include <math.h>

#include "sim.h"
#include "slimpack_impl.h"

/* Per-token-per-layer activation factor with c checkpointed layers of `layers`. */
static double act_factor(const vl_cost *cost, int layers, int c)
{
    double A = cost->act_bytes, h2 = 2.0 * cost->cfg->model.hidden;
    return (layers - c) * A + c * h2 + (c > 0 ? A : 0);
}

/* The fewest checkpointed layers that bring a lane's activation peak from act (at c)
 * within room, by the linear activation model; at least c + 1. */
int vl__sp_more_ckpt(const vl_cost *cost, int layers, int c, double act, double room, int most)
{
    double q = act > 0 ? room / act : 0, A = cost->act_bytes;
    double step = A - 2.0 * cost->cfg->model.hidden;
    int want = c + 1;

    if (q > 0 && step > 0) {
        double need = (layers * A + A - q * act_factor(cost, layers, c)) / step;
        if (need > want)
            want = need > most ? most : (int)ceil(need);
    } else if (q <= 0) {
        want = most;
    }
    return want > most ? most : want;
}

/* The rank's packs in w->rp as the simulator times them on its one stage at ckpt
 * checkpointed layers (sim_rank.c class_weights: forward packs by vl_cost_mb_time, a
 * symmetric rank's backward from the same, an asymmetric one's backward packs by
 * vl_cost_pack_time; no recompute-forward operations): the sum of its tasks, shaded
 * far above the rounding of the simulator's own sums. */
vl_status vl__sp_rank_busy(sp_work *w, const sp_setting *s, const vl_cost *cost, int ckpt,
                           double *busy, vl_err *err)
{
    const sp_rankplan *rp = &w->rp;
    const sp_packing *f = &rp->fwd, *b = &rp->bwd;
    vl_par par = s->par;
    int layers = cost->cfg->model.layers;
    double sum = 0;
    vl_status st;

    par.pp = 1;
    par.ckpt_layers = ckpt;
    if ((st = vl_grow(&w->lbtmp, &w->lbtmp_cap, b->nsegs + 1, sizeof *w->lbtmp, err)))
        return st;
    for (size_t p = 0; p < f->npacks; p++) {
        vl_mb_time t = vl_cost_mb_time(cost, f->segs + f->start[p],
                                       f->start[p + 1] - f->start[p], &par, layers, 1);
        sum += t.fwd;
        if (b->npacks == 0)
            sum += t.bwd;
    }
    for (size_t p = 0; p < b->npacks; p++) {
        vl_pack_view v = {b->segs + b->start[p], NULL, b->start[p + 1] - b->start[p], 1};
        sum += vl_cost_pack_time(cost, &v, &par, layers, 1, w->lbtmp).bwd;
    }
    *busy = sum * (1 - 1e-9);
    return VL_OK;
}

/* Tokens of pack p of pk. */
static uint64_t pack_tokens(const sp_packing *pk, size_t p)
{
    uint64_t t = 0;

    for (uint32_t j = pk->start[p]; j < pk->start[p + 1]; j++)
        t += pk->segs[j].len;
    return t;
}

/* The most tokens whose activations are held at once as w->rp's list runs (scheduled):
 * a forward adds its pack's tokens, a backward frees its own pack's (the forward pack's
 * when symmetric); *all: every forward token. */
static uint64_t live_tokens_peak(const sp_rankplan *rp, uint64_t *all)
{
    const sp_packing *b = rp->bwd.npacks > 0 ? &rp->bwd : &rp->fwd;
    int64_t live = 0, peak = 0;

    *all = 0;
    for (size_t p = 0; p < rp->fwd.npacks; p++)
        *all += pack_tokens(&rp->fwd, p);
    for (size_t i = 0; i < rp->nops; i++) {
        if (rp->ops[i].kind == VL_OP_F)
            live += (int64_t)pack_tokens(&rp->fwd, rp->ops[i].mb);
        else
            live -= (int64_t)pack_tokens(b, rp->ops[i].mb);
        peak = live > peak ? live : peak;
    }
    return (uint64_t)peak;
}

/* The fewest checkpointed layers, from ckpt up, that rank r may end with when it runs
 * w->rp's list (scheduled) on one stage under recompute auto: a lower bound on what
 * simulate() raises it to.  The simulator walks that list as the stage's order (sim.c
 * stage_act_peak): a forward adds its pack's activations, a backward frees its pack's,
 * both vl_cost_act_bytes of the pack's tokens (vl_cost_pack_act without placements or
 * shared packs), which is linear in tokens, so its peak at c layers is the bytes of
 * live_tokens_peak() tokens at c.  simulate() raises every checkpointing at which that
 * peak and the rank's model states are above the room, so the rank ends at or above the
 * first one where they are not.  The simulator's sums round differently: the peak is
 * lowered by 1e-9 of all the rank's tokens' bytes, far above that rounding. */
int vl__sp_least_ckpt(const sp_work *w, const sp_setting *s, const vl_cost *cost, int r,
                      int ckpt)
{
    uint64_t all, peak;
    vl_par par = s->par;
    int layers = cost->cfg->model.layers;

    if (s->ckpt_mode != VL_RECOMPUTE_AUTO || w->capacity <= 0)
        return ckpt;
    peak = live_tokens_peak(&w->rp, &all);
    par.pp = 1;
    for (int c = ckpt; c < s->stage_layers; c++) {
        par.ckpt_layers = c;
        double act = vl_cost_act_bytes(cost, peak, &par, layers, 1) -
                     1e-9 * vl_cost_act_bytes(cost, all, &par, layers, 1);
        if (w->states[r] + act <= vl__sp_room(w, w->capacity))
            return c;
    }
    return s->stage_layers > ckpt ? s->stage_layers : ckpt;
}

/* rank_busy() of rank r as the scratch iteration holds it, at its checkpointing now
 * (after simulate() raised it: a bound on the next round's makespan). */
vl_status vl__sp_plan_rank_busy(sp_work *w, const vl_cost *cost, int r, double *busy,
                                vl_err *err)
{
    const vl_plan *p = &w->scratch;
    const vl_rank *rk = &p->ranks[p->iters[0].rank0 + r];
    const vl_mb *mbs = vl_plan_rank_mbs(p, rk);
    vl_par par = rk->par;
    int layers = cost->cfg->model.layers;
    uint32_t most = 1;
    double sum = 0;
    vl_status st;

    par.pp = 1;
    for (uint32_t b = 0; b < rk->nbwd; b++)
        most = mbs[rk->nmb + b].nseg > most ? mbs[rk->nmb + b].nseg : most;
    if ((st = vl_grow(&w->lbtmp, &w->lbtmp_cap, most, sizeof *w->lbtmp, err)) != VL_OK)
        return st;
    for (uint32_t f = 0; f < rk->nmb; f++) {
        vl_mb_time t =
            vl_cost_mb_time(cost, vl_plan_mb_segs(p, &mbs[f]), mbs[f].nseg, &par, layers, 1);
        sum += t.fwd;
        if (rk->nbwd == 0)
            sum += t.bwd;
    }
    for (uint32_t b = 0; b < rk->nbwd; b++) {
        const vl_mb *mb = &mbs[rk->nmb + b];
        vl_pack_view v = {vl_plan_mb_segs(p, mb), NULL, mb->nseg, 1};
        sum += vl_cost_pack_time(cost, &v, &par, layers, 1, w->lbtmp).bwd;
    }
    *busy = sum * (1 - 1e-9);
    return VL_OK;
}

/* The model states of each rank's stage and the device's capacity, from the simulation
 * just run, for least_ckpt (one stage: the bounds are used only then).  States follow
 * the rank's degrees, the layers and the rank count alone (vl_cost_state_bytes), not its
 * packs or checkpointing, so the last simulation's hold for the next batch's bounds. */
vl_status vl__sp_keep_states(sp_work *w, const sp_setting *s, const vl_sim_trace *t,
                             vl_err *err)
{
    vl_status st = vl_grow(&w->states, &w->states_cap, (size_t)s->dp, sizeof *w->states, err);

    if (st != VL_OK)
        return st;
    for (size_t i = 0; i < t->nlanes; i++)
        if (t->lanes[i].stage == 0)
            w->states[t->lanes[i].rank] = t->lanes[i].states;
    w->capacity = t->capacity;
    return VL_OK;
}
