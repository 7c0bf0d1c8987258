/* plans/slimpack/slimpack_refine.c -- which ranks the MILP refines, whether they keep it,
 * and the emission of a batch (paper §4.1.2 refinement; docs/slimpack.md §2.7).
 * A rank keeps its refined forward packs only when, simulated, it fits the batch's room
 * and its makespan is no worse than the greedy's (a better balanced pack can hold more
 * tokens, hence more activations), so the refinement never makes a rank slower.
 *  - slimpack.refine all (the paper): every rank is refined into the scratch iteration,
 *    which is simulated once.
 *  - critical (default): the iteration's time is its slowest rank's plus the gradient
 *    sync, so only the units (a merge group, or a rank alone) that can set it are
 *    refined: slowest greedy makespan first (ties: lower rank), until the slowest
 *    makespan after refinement is at least the next unit's greedy makespan; the rest
 *    keep the greedy, which is no slower than what they would have kept.  Units are
 *    refined in rounds of 1, 2, 4, ... and simulated alone, the other ranks of the
 *    iteration present but empty (the simulator's rank count sets the states' sharding
 *    and the pipeline transfer's distance; an empty rank costs nothing to simulate);
 *    units refined past the stopping point go back to the greedy, so the plan is the
 *    rule's and not the round sizes'.  Ranks interact in the simulator only through
 *    shared packs (a merge group: one unit) and micro-step barriers (training.dp_sync
 *    micro_step: every rank is refined, as with all).  A unit whose greedy packing is
 *    above the batch's room is refined too, wherever it stands: all could bring it
 *    within, and critical must not leave a rank out of memory that all would not.
 *    So the simulated iteration time is the one all gives; the plan bytes differ in the
 *    ranks left greedy, and so may the iteration's memory peak (within the room). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sim.h"
#include "slimpack_impl.h"

/* Per-rank refinement state (w->mark). */
enum { MARK_NONE = 0, MARK_ROUND = 1, MARK_DONE = 2 };

static void count_choice(sp_work *w, const sp_setting *s, const sp_cand *c)
{
    int pp = s->par.pp > 1 ? s->par.pp : 1, b = 0;
    double f = (double)c->M / pp;

    while (b < 7 && f > (double)(1u << b))
        b++;
    w->stat_m_hist[b]++;
    w->stat_asym_ranks += c->asym;
}

static void count_ckpt(sp_work *w, int ckpt)
{
    w->stat_ckpt_ranks += ckpt > 0;
    if (ckpt > w->stat_ckpt_max)
        w->stat_ckpt_max = ckpt;
}

/* The chosen candidate's result of rank r. */
static const sp_res *greedy_of(const sp_work *w, const sp_setting *s, int r)
{
    return &w->res[(size_t)w->choice[r] * s->dp + r];
}

/* What build_rank does with the MILP: nothing, solve it (and keep the refined packs in
 * w->refined), or take the refined packs solved earlier in this batch (the solver is
 * deterministic: solving again gave the same packs at the cost of a second solve). */
enum { MILP_NONE, MILP_SOLVE, MILP_CACHED };

/* Rank r's packs and schedule under candidate c into w->rp, its forward packs refined
 * by the MILP as milp says (*refined: the MILP changed them). */
static vl_status build_rank(sp_work *w, const sp_setting *s, const uint32_t *len, int r,
                            const sp_cand *c, int milp, bool *refined, vl_err *err)
{
    sp_rankplan *rp = &w->rp;
    vl_status st = vl__sp_rank_packs(w, s, len, r, c->M, c->asym, err);

    *refined = false;
    if (st == VL_OK && milp == MILP_SOLVE) {
        st = vl__sp_milp_refine(w, s, len, w->own + w->own0[r], w->own0[r + 1] - w->own0[r],
                                rp->nshared_f, refined, err);
        vl__sp_packing_reset(&w->refined[r]);
        if (st == VL_OK && *refined)
            st = vl__sp_packing_append(&w->refined[r], &rp->fwd, rp->nshared_f, err);
    } else if (st == VL_OK && milp == MILP_CACHED) {
        vl__sp_packing_truncate(&rp->fwd, rp->nshared_f);
        st = vl__sp_packing_append(&rp->fwd, &w->refined[r], 0, err);
        *refined = st == VL_OK;
    }
    if (st == VL_OK && *refined && c->asym) { /* the backward packs follow the new ones */
        vl__sp_packing_truncate(&rp->bwd, rp->nshared_b);
        uint32_t Mown = (uint32_t)(rp->fwd.npacks - rp->nshared_f);
        st = vl__sp_backward(w, s, len, &rp->fwd, rp->nshared_f, Mown, &rp->bwd, err);
    }
    return st == VL_OK ? vl__sp_schedule(w, s, err) : st;
}

/* Per-rank room for the refined packs, the keep flags, marks, makespans and units. */
static vl_status ensure_refined(sp_work *w, size_t dp, vl_err *err)
{
    size_t had = w->refined_cap;
    vl_status st = vl_grow(&w->refined, &w->refined_cap, dp, sizeof *w->refined, err);

    if (st != VL_OK)
        return st;
    if (w->refined_cap > had)
        memset(w->refined + had, 0, (w->refined_cap - had) * sizeof *w->refined);
    if ((st = vl_grow(&w->keep, &w->keep_cap, dp, sizeof *w->keep, err)) != VL_OK ||
        (st = vl_grow(&w->mark, &w->mark_cap, dp, sizeof *w->mark, err)) != VL_OK ||
        (st = vl_grow(&w->fin, &w->fin_cap, dp, sizeof *w->fin, err)) != VL_OK)
        return st;
    memset(w->keep, 0, dp * sizeof *w->keep);
    memset(w->mark, 0, dp * sizeof *w->mark);
    return vl_grow(&w->units, &w->units_cap, dp, sizeof *w->units, err);
}

/* Simulate the scratch iteration and take back the refinement of the ranks marked
 * MARK_ROUND that do not fit the room or got slower; w->fin of those ranks: their
 * makespan as they will be emitted. */
static vl_status judge_sim(sp_work *w, const sp_setting *s, const vl_cost *cost, bool *keep,
                           vl_err *err)
{
    vl_sim_trace *t = w->trace;
    vl_sim_iter_result res;
    vl_status st = vl_sim_iter(&w->scratch, 0, cost, NULL, &res, w->sim, t, err);

    if (st != VL_OK)
        return st;
    for (size_t i = 0; i < t->nlanes; i++) {
        const vl_sim_lane *l = &t->lanes[i];
        if (w->mark[l->rank] == MARK_ROUND &&
            (l->states + l->act_peak > vl__sp_room(w, t->capacity) ||
             l->makespan > greedy_of(w, s, (int)l->rank)->ms))
            keep[l->rank] = false;
    }
    for (size_t i = 0; i < t->nlanes; i++) {
        const vl_sim_lane *l = &t->lanes[i];
        if (w->mark[l->rank] == MARK_ROUND && keep[l->rank])
            w->fin[l->rank] = l->makespan;
    }
    return VL_OK;
}

/* Refine the ranks marked MARK_ROUND into the scratch iteration (the others present but
 * empty, so the iteration keeps its rank count), simulate it when some refinement
 * changed packs, and mark them MARK_DONE. */
static vl_status refine_round(sp_work *w, const sp_setting *s, const vl_cost *cost,
                              const uint32_t *len, const sp_cand *cs, bool *keep, vl_err *err)
{
    vl_status st;
    bool any = false;

    vl_plan_clear_iters(&w->scratch, 0);
    if ((st = vl_plan_iter_begin(&w->scratch, 0, err)) != VL_OK)
        return st;
    for (int r = 0; r < s->dp && st == VL_OK; r++) {
        if (w->mark[r] != MARK_ROUND) {
            st = vl_plan_rank_begin(&w->scratch, r, &s->par, err);
            continue;
        }
        w->fin[r] = greedy_of(w, s, r)->ms;
        if ((st = build_rank(w, s, len, r, &cs[w->choice[r]], MILP_SOLVE, &keep[r], err)) ==
            VL_OK)
            st = vl__sp_emit_rank(w, s, r, greedy_of(w, s, r)->ckpt, &w->scratch, err);
        any = any || keep[r];
    }
    if (st == VL_OK && any)
        st = judge_sim(w, s, cost, keep, err);
    for (int r = 0; r < s->dp; r++)
        if (w->mark[r] == MARK_ROUND)
            w->mark[r] = MARK_DONE;
    return st;
}

/* Every rank refined in one round (slimpack.refine all, the paper). */
static vl_status judge_all(sp_work *w, const sp_setting *s, const vl_cost *cost,
                           const uint32_t *len, const sp_cand *cs, bool *keep, vl_err *err)
{
    memset(w->mark, MARK_ROUND, (size_t)s->dp * sizeof *w->mark);
    w->stat_refined += (uint64_t)s->dp;
    return refine_round(w, s, cost, len, cs, keep, err);
}

/* Slowest greedy makespan first, then the lower rank: a total order. */
static int by_ms_desc(const void *a, const void *b)
{
    const sp_unit *x = a, *y = b;

    if (x->ms != y->ms)
        return x->ms > y->ms ? -1 : 1;
    return (x->r0 > y->r0) - (x->r0 < y->r0);
}

/* The units of the batch (merge groups and lone ranks), slowest first. */
static size_t list_units(sp_work *w, const sp_setting *s)
{
    size_t n = 0;

    for (int r = 0; r < s->dp;) {
        int gi = w->group_of[r], r1 = gi >= 0 ? w->groups[gi].dp0 + w->groups[gi].k : r + 1;
        sp_unit u = {r, r1, 0.0};
        for (int q = r; q < r1; q++)
            u.ms = fmax(u.ms, greedy_of(w, s, q)->ms);
        w->units[n++] = u;
        r = r1;
    }
    qsort(w->units, n, sizeof *w->units, by_ms_desc);
    return n;
}

/* The unit's makespan as it will be emitted, when it was simulated that way; -INFINITY
 * for a DP-Merge group whose members split on keeping the refinement: the mix emitted
 * was never simulated, so it cannot bound the ranks left greedy (the stopping rule
 * goes on past it, and the iteration time stays the one refine=all gives) */
static double unit_fin(const sp_work *w, const sp_unit *u, const bool *keep)
{
    double ms = 0.0;

    for (int r = u->r0; r < u->r1; r++) {
        if (keep[r] != keep[u->r0])
            return -INFINITY;
        ms = fmax(ms, w->fin[r]);
    }
    return ms;
}

static bool unit_over(const sp_work *w, const sp_setting *s, const sp_unit *u)
{
    for (int r = u->r0; r < u->r1; r++)
        if (greedy_of(w, s, r)->over > 0)
            return true;
    return false;
}

static void mark_unit(sp_work *w, const sp_unit *u, uint8_t m)
{
    memset(w->mark + u->r0, m, (size_t)(u->r1 - u->r0) * sizeof *w->mark);
}

/* Units [stop, done) were refined past the stopping point: back to the greedy unless
 * above the room; then every later unit above the room is refined, in one round. */
static vl_status refine_over_room(sp_work *w, const sp_setting *s, const vl_cost *cost,
                                  const uint32_t *len, const sp_cand *cs, size_t stop,
                                  size_t done, size_t nu, bool *keep, vl_err *err)
{
    bool any = false;

    for (size_t i = stop; i < done; i++)
        if (!unit_over(w, s, &w->units[i])) {
            mark_unit(w, &w->units[i], MARK_NONE);
            memset(keep + w->units[i].r0, 0,
                   (size_t)(w->units[i].r1 - w->units[i].r0) * sizeof *keep);
        }
    for (size_t i = done; i < nu; i++)
        if (unit_over(w, s, &w->units[i])) {
            mark_unit(w, &w->units[i], MARK_ROUND);
            any = true;
        }
    return any ? refine_round(w, s, cost, len, cs, keep, err) : VL_OK;
}

/* Refine the units that can set the iteration time (slimpack.refine critical). */
static vl_status judge_critical(sp_work *w, const sp_setting *s, const vl_cost *cost,
                                const uint32_t *len, const sp_cand *cs, bool *keep,
                                vl_err *err)
{
    size_t nu = list_units(w, s), done = 0, stop = nu, round = 1;
    double slowest = -INFINITY;
    vl_status st = VL_OK;

    while (st == VL_OK && done < nu && stop == nu) {
        size_t end = done + round < nu ? done + round : nu;
        for (size_t i = done; i < end; i++)
            mark_unit(w, &w->units[i], MARK_ROUND);
        st = refine_round(w, s, cost, len, cs, keep, err);
        for (size_t i = done; i < end && stop == nu && st == VL_OK; i++) {
            slowest = fmax(slowest, unit_fin(w, &w->units[i], keep));
            if (i + 1 == nu || slowest >= w->units[i + 1].ms)
                stop = i + 1;
        }
        done = end;
        round *= 2;
    }
    if (st == VL_OK)
        st = refine_over_room(w, s, cost, len, cs, stop, done, nu, keep, err);
    for (int r = 0; r < s->dp; r++) {
        w->stat_refined += w->mark[r] == MARK_DONE;
        w->stat_not_refined += w->mark[r] != MARK_DONE;
    }
    return st;
}

/* Ranks couple in the simulator through micro-step barriers: then every rank matters. */
static bool ranks_independent(const vl_cost *cost)
{
    return cost == NULL || cost->cfg->training.dp_sync != VL_DP_SYNC_MICRO_STEP;
}

vl_status vl__sp_emit_batch(sp_work *w, const sp_setting *s, const vl_cost *cost,
                            const uint32_t *len, const sp_cand *cs, uint32_t epoch,
                            vl_plan *out, vl_err *err)
{
    bool refined, *keep;
    vl_status st = ensure_refined(w, (size_t)s->dp, err);

    keep = w->keep;
    if (st == VL_OK && s->o->milp != SP_MILP_OFF)
        st = s->o->refine == SP_REFINE_CRITICAL && ranks_independent(cost)
                 ? judge_critical(w, s, cost, len, cs, keep, err)
                 : judge_all(w, s, cost, len, cs, keep, err);
    if (st == VL_OK)
        st = vl_plan_iter_begin(out, epoch, err);
    for (int r = 0; r < s->dp && st == VL_OK; r++) {
        const sp_cand *c = &cs[w->choice[r]];
        w->stat_milp_better += keep[r];
        if ((st = build_rank(w, s, len, r, c, keep[r] ? MILP_CACHED : MILP_NONE, &refined,
                             err)) == VL_OK)
            st = vl__sp_emit_rank(w, s, r, greedy_of(w, s, r)->ckpt, out, err);
        count_choice(w, s, c);
        count_ckpt(w, greedy_of(w, s, r)->ckpt);
        w->stat_packs += w->rp.fwd.npacks;
        w->stat_bwd_packs += w->rp.bwd.npacks;
        for (size_t p = 0; p < w->rp.fwd.nsegs; p++)
            w->stat_slices += w->rp.fwd.segs[p].off > 0;
    }
    w->stat_merges += w->ngroups;
    w->stat_iters++;
    return st;
}
