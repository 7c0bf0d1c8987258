/* plans/slimpack/slimpack_search.c -- candidate selection (paper §4.1.2, §5.1;
 * docs/slimpack.md §2.8) and the batch driver.
 * Candidates are M = round(pp·f) over the factors list (duplicates dropped), each with
 * the asymmetric partition, the symmetric one, or both (slimpack.asymmetric auto).
 * Every candidate is planned into a scratch iteration and run through the shared
 * simulator (on one stage only for the ranks whose bound says it may be their choice:
 * search_bounded); a rank that does not fit device memory checkpoints
 * more layers (estimated from its simulated activation peak, then simulated again), so
 * each candidate carries the fewest checkpointed layers that fit.  Each rank (a merge
 * group jointly) then keeps its fastest feasible candidate, ties to the smaller M and to
 * the asymmetric partition; a candidate whose packs average fewer than min_pack_tokens
 * is not eligible unless it is the rank's smallest.  Under ZeRO-3 every rank takes the
 * same M (parameters are gathered per micro-batch on all ranks together).  The MILP
 * refinement of the chosen packs and the emission are in slimpack_refine.c; the lower
 * bounds that leave simulations out, and the checkpointing estimate, in
 * slimpack_bound.c. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sim.h"
#include "slimpack_impl.h"

/* ---- one candidate ---- */

typedef sp_cand cand;

static vl_status build(sp_work *w, const sp_setting *s, const uint32_t *len, const cand *c,
                       vl_err *err)
{
    vl_status st;

    vl_plan_clear_iters(&w->scratch, 0);
    if ((st = vl_plan_iter_begin(&w->scratch, 0, err)) != VL_OK)
        return st;
    for (int r = 0; r < s->dp && st == VL_OK; r++) {
        if ((st = vl__sp_rank_packs(w, s, len, r, c->M, c->asym, err)) == VL_OK &&
            (st = vl__sp_schedule(w, s, err)) == VL_OK)
            st = vl__sp_emit_rank(w, s, r,
                                  s->ckpt_mode == VL_RECOMPUTE_FULL ? s->stage_layers : 0,
                                  &w->scratch, err);
    }
    return st;
}

/* Bytes a GPU may hold in this batch (slimpack_mem.c), the device's without a budget. */
double vl__sp_room(const sp_work *w, double capacity)
{
    return w->room > 0 && w->room < capacity ? w->room : capacity;
}

static double room(const sp_work *w, const vl_sim_trace *t)
{
    return vl__sp_room(w, t->capacity);
}

/* Simulate the scratch iteration, fill res[0..dp) and raise the checkpointing of ranks
 * that do not fit (recompute auto).  *again: some rank changed.  round > 0: the last
 * simulation was of this candidate, which only raised checkpointing since, so the
 * simulator re-weighs the raised ranks alone (vl_sim_iter_again: the same results). */
static vl_status simulate(sp_work *w, const sp_setting *s, const vl_cost *cost, int round,
                          sp_res *res, bool *again, vl_err *err)
{
    vl_sim_trace *t = w->trace;
    vl_sim_iter_result r;
    vl_status st = round > 0
                       ? vl_sim_iter_again(&w->scratch, 0, cost, NULL, &r, w->sim, t, err)
                       : vl_sim_iter(&w->scratch, 0, cost, NULL, &r, w->sim, t, err);

    *again = false;
    if (st != VL_OK)
        return st;
    for (int k = 0; k < s->dp; k++) {
        res[k].ms = 0;
        res[k].over = res[k].dev_over = -INFINITY;
    }
    if ((st = vl__sp_keep_states(w, s, t, err)) != VL_OK)
        return st;
    for (size_t i = 0; i < t->nlanes; i++) {
        const vl_sim_lane *l = &t->lanes[i];
        sp_res *x = &res[l->rank];
        x->ms = fmax(x->ms, l->makespan);
        x->over = fmax(x->over, l->states + l->act_peak - room(w, t));
        x->dev_over = fmax(x->dev_over, l->states + l->act_peak - t->capacity);
    }
    if (s->ckpt_mode != VL_RECOMPUTE_AUTO)
        return VL_OK;
    for (size_t i = 0; i < t->nlanes; i++) {
        const vl_sim_lane *l = &t->lanes[i];
        vl_rank *rk = &w->scratch.ranks[w->scratch.iters[0].rank0 + l->rank];
        int c = rk->par.ckpt_layers, want;
        if (l->states + l->act_peak <= room(w, t) || c >= s->stage_layers)
            continue;
        want = vl__sp_more_ckpt(cost, l->layers, c, l->act_peak, room(w, t) - l->states,
                                s->stage_layers);
        if (want > c) {
            rk->par.ckpt_layers = want;
            *again = true;
        }
    }
    return VL_OK;
}

/* ---- choice ---- */

/* Tokens a rank carries: its own samples and its share of a merged outlier. */
static uint64_t rank_tokens(const sp_work *w, int r)
{
    uint64_t t = 0;

    for (uint32_t j = w->own0[r]; j < w->own0[r + 1]; j++)
        t += w->slen[w->own[j]];
    if (w->group_of[r] >= 0) {
        const sp_group *g = &w->groups[w->group_of[r]];
        t += w->slen[g->slot] / (uint64_t)g->k;
    }
    return t;
}

/* Is candidate ci better than bi for ranks [r0, r1) (a merge group jointly)?  Within the
 * batch's room first, then the slower member's makespan; when neither is within it,
 * one that fits the device, then the least overshoot of the room (the peak closest to
 * the budget).  Earlier candidates (smaller M, asymmetric first) win ties. */
static bool better(const sp_res *res, int dp, size_t ci, long bi, int r0, int r1)
{
    if (bi < 0)
        return true;
    double ms_c = 0, ms_b = 0, ov_c = -INFINITY, ov_b = -INFINITY;
    double dv_c = -INFINITY, dv_b = -INFINITY;
    for (int r = r0; r < r1; r++) {
        const sp_res *x = &res[ci * (size_t)dp + r], *y = &res[(size_t)bi * dp + r];
        ms_c = fmax(ms_c, x->ms);
        ms_b = fmax(ms_b, y->ms);
        ov_c = fmax(ov_c, x->over);
        ov_b = fmax(ov_b, y->over);
        dv_c = fmax(dv_c, x->dev_over);
        dv_b = fmax(dv_b, y->dev_over);
    }
    bool fit_c = ov_c <= 0, fit_b = ov_b <= 0;
    if (fit_c != fit_b)
        return fit_c;
    if (fit_c)
        return ms_c < ms_b;
    if ((dv_c <= 0) != (dv_b <= 0))
        return dv_c <= 0;
    return ov_c < ov_b;
}

/* The state of candidate ci for the unit of rank r (its first): not settled, lost
 * (provably not its choice, as unit_may_win finds: left out of its scan, which changes
 * nothing the scan picks) or simulated to the end for it. */
enum { PAIR_OPEN = 0, PAIR_LOST = 1, PAIR_DONE = 2 };

static uint8_t *pair(const sp_work *w, const sp_setting *s, size_t ci, int r)
{
    return &w->pair[ci * (size_t)s->dp + r];
}

/* The best of the candidates simulated to the end for ranks [r0, r1) that they may take,
 * scanned in index order; -1 none. */
static long unit_best(const sp_work *w, const sp_setting *s, const cand *cs, size_t nc,
                      size_t eligible_m, const uint32_t *Ms, int r0, int r1)
{
    long best = -1;

    for (size_t ci = 0; ci < nc; ci++) {
        size_t mi = 0;
        if (*pair(w, s, ci, r0) != PAIR_DONE)
            continue;
        while (Ms[mi] != cs[ci].M)
            mi++;
        if (mi >= eligible_m && !s->common_m)
            continue;
        if (better(w->res, s->dp, ci, best, r0, r1))
            best = (long)ci;
    }
    return best;
}

/* The unit's choice among the candidates simulated to the end: the cut ones (may_win)
 * are chosen by no unit, so leaving them out changes no choice.  `better` orders the
 * candidates totally (fit, then makespan or the device and the overshoot, then index),
 * so the scan finds the least of them whichever others it skips. */
static void choose_unit(sp_work *w, const sp_setting *s, const cand *cs, size_t nc,
                        size_t eligible_m, const uint32_t *Ms, int r0, int r1)
{
    long best = unit_best(w, s, cs, nc, eligible_m, Ms, r0, r1);

    for (int r = r0; r < r1; r++)
        w->choice[r] = (int)best;
}

/* The eligible M count of each rank of the batch into w->elig (the search asks for it
 * per candidate and unit). */
static vl_status rank_eligible(sp_work *w, const sp_setting *s, vl_err *err)
{
    uint32_t tmp[SP_MAX_FACTORS];
    vl_status st = vl_grow(&w->elig, &w->elig_cap, (size_t)s->dp, sizeof *w->elig, err);

    for (int r = 0; r < s->dp && st == VL_OK; r++)
        w->elig[r] = (uint8_t)vl__sp_candidates(s, rank_tokens(w, r), tmp, SP_MAX_FACTORS);
    return st;
}

/* The eligible M count of ranks [r0, r1): the fewest any member allows. */
static size_t eligible(const sp_work *w, int r0, int r1)
{
    size_t least = SP_MAX_FACTORS;

    for (int r = r0; r < r1; r++)
        least = w->elig[r] < least ? w->elig[r] : least;
    return least;
}

/* How many of the M values (a prefix: the smallest) some unit may choose.  The others
 * are never simulated: choose_unit skips a candidate no member of the unit may take, so
 * leaving them out changes no plan (at 8K tokens a rank on pp 16 only M = 16 is
 * eligible, and the other candidates were most of the time planning took). */
static size_t eligible_any(const sp_work *w, const sp_setting *s, size_t nM)
{
    size_t most = 0;

    if (s->common_m)
        return nM;
    for (int r = 0; r < s->dp && most < nM;) {
        int gi = w->group_of[r], r1 = gi >= 0 ? w->groups[gi].dp0 + w->groups[gi].k : r + 1;
        size_t k = eligible(w, r, r1);
        most = k > most ? k : most;
        r = r1;
    }
    return most < nM ? most : nM;
}

static void choose(sp_work *w, const sp_setting *s, const cand *cs, size_t nc,
                   const uint32_t *Ms)
{
    if (s->common_m) { /* one unit of every rank */
        choose_unit(w, s, cs, nc, SP_MAX_FACTORS, Ms, 0, s->dp);
        return;
    }
    for (int r = 0; r < s->dp;) {
        int gi = w->group_of[r], r1 = gi >= 0 ? w->groups[gi].dp0 + w->groups[gi].k : r + 1;
        choose_unit(w, s, cs, nc, eligible(w, r, r1), Ms, r, r1);
        r = r1;
    }
}

/* The candidate most ranks chose (ties: the lower index), as 1 + index. */
static size_t most_chosen(const sp_work *w, const sp_setting *s, size_t nc)
{
    uint32_t votes[2 * SP_MAX_FACTORS] = {0};
    size_t best = 0;

    for (int r = 0; r < s->dp; r++)
        if (w->choice[r] >= 0 && (size_t)w->choice[r] < nc)
            votes[w->choice[r]]++;
    for (size_t ci = 1; ci < nc; ci++)
        best = votes[ci] > votes[best] ? ci : best;
    return votes[best] ? best + 1 : 0;
}

/* ---- pruning ---- */

/* The candidates of a batch (their states per unit in w->pair). */
typedef struct search {
    const cand *cs;
    size_t nc;
    const uint32_t *Ms;
} search;

/* May ranks [r0, r1) (a unit that may take candidate ci) choose ci, whose makespans in
 * w->res are lower bounds?  Not when ci is lost to it already, nor when the unit's best
 * candidate simulated to the end fits its room and is no slower than them (ties: the
 * lower index, as choose_unit scans). */
static bool unit_may_win(const sp_work *w, const sp_setting *s, const search *sr, size_t ci,
                         size_t em, int r0, int r1)
{
    long best;
    double ms_b = 0, ov_b = -INFINITY, lb = 0;

    if (*pair(w, s, ci, r0) == PAIR_LOST)
        return false;
    best = unit_best(w, s, sr->cs, sr->nc, em, sr->Ms, r0, r1);
    if (best < 0)
        return true;
    for (int r = r0; r < r1; r++) {
        const sp_res *y = &w->res[(size_t)best * s->dp + r];
        ms_b = fmax(ms_b, y->ms);
        ov_b = fmax(ov_b, y->over);
        lb = fmax(lb, w->res[ci * (size_t)s->dp + r].ms);
    }
    return !(ov_b <= 0) || lb < ms_b || (lb == ms_b && (long)ci < best);
}

static size_t m_index(const search *sr, size_t ci)
{
    size_t mi = 0;

    while (sr->Ms[mi] != sr->cs[ci].M)
        mi++;
    return mi;
}

/* Ci lost to the unit of ranks [r0, r1): left out of its scan. */
static void lose(sp_work *w, const sp_setting *s, size_t ci, int r0, int r1)
{
    memset(pair(w, s, ci, r0), PAIR_LOST, (size_t)(r1 - r0));
}

/* Can candidate ci, whose makespans in w->res bound from below what it will end with,
 * still be some unit's choice (of those simulated now: emit, NULL every one)?  Raising
 * checkpointing only lengthens tasks (recompute) on a fixed DAG, so no makespan of a
 * later round falls below an earlier round's.  The units that cannot choose it are
 * marked lost. */
static bool may_win(sp_work *w, const sp_setting *s, const search *sr, size_t ci,
                    const bool *emit)
{
    size_t mi = m_index(sr, ci);
    bool any = false;

    for (int r0 = 0; r0 < s->dp;) {
        int gi = w->group_of[r0], r1;
        size_t em;
        if (s->common_m) {
            r1 = s->dp;
            em = SP_MAX_FACTORS;
        } else {
            r1 = gi >= 0 ? w->groups[gi].dp0 + w->groups[gi].k : r0 + 1;
            em = eligible(w, r0, r1);
        }
        if (emit && !emit[r0])
            ;
        else if ((mi < em || s->common_m) && unit_may_win(w, s, sr, ci, em, r0, r1))
            any = true;
        else
            lose(w, s, ci, r0, r1);
        r0 = r1;
    }
    return any;
}

/* ---- bounds before simulating ---- */

/* Where a rank's busy time bounds its makespan from below as the simulator costs it:
 * one stage (pp 1: the makespan is at least the sum of its tasks), no CP placements in
 * the scratch plan, every rank its own unit but the merge groups' (rank_bounded). */
static bool busy_bounds(const sp_work *w, const sp_setting *s)
{
    return s->par.pp <= 1 && !s->common_m && w->scratch.cps == NULL;
}

/* busy_bounds for rank r: not in a merge group (its shared packs are timed by the
 * pack-level model, which rank_busy does not follow). */
static bool rank_bounded(const sp_work *w, const sp_setting *s, int r)
{
    return busy_bounds(w, s) && w->group_of[r] < 0;
}

/* The ranks [r, *r1) of rank r's unit: its merge group, or itself. */
static int unit_end(const sp_work *w, int r)
{
    int gi = w->group_of[r];

    return gi >= 0 ? w->groups[gi].dp0 + w->groups[gi].k : r + 1;
}

/* Where a unit's makespans do not depend on the other units' packs: no micro-step
 * barriers (shared packs couple the ranks of one merge group alone). */
static bool ranks_alone(const vl_cost *cost)
{
    return cost->cfg->training.dp_sync != VL_DP_SYNC_MICRO_STEP;
}

/* Every open pair's bound into w->res: a lone rank's busy time at the least
 * checkpointing it may end with (its packs for the candidate built and scheduled), a
 * merge group's members 0 (no bound); a pair the unit may not take (eligible) is lost. */
static vl_status bound_all(sp_work *w, const sp_setting *s, const vl_cost *cost,
                           const uint32_t *len, const search *sr, vl_err *err)
{
    int ckpt = s->ckpt_mode == VL_RECOMPUTE_FULL ? s->stage_layers : 0;
    vl_status st = VL_OK;

    for (size_t ci = 0; ci < sr->nc && st == VL_OK; ci++)
        for (int r = 0, r1; r < s->dp && st == VL_OK; r = r1) {
            sp_res *x = &w->res[ci * (size_t)s->dp + r];
            r1 = unit_end(w, r);
            if (m_index(sr, ci) >= eligible(w, r, r1)) {
                lose(w, s, ci, r, r1);
                continue;
            }
            for (int q = r; q < r1; q++)
                w->res[ci * (size_t)s->dp + q].ms = 0;
            if (!rank_bounded(w, s, r))
                continue;
            if ((st = vl__sp_rank_packs(w, s, len, r, sr->cs[ci].M, sr->cs[ci].asym, err)) ==
                    VL_OK &&
                (st = vl__sp_schedule(w, s, err)) == VL_OK)
                st = vl__sp_rank_busy(w, s, cost, vl__sp_least_ckpt(w, s, cost, r, ckpt),
                                      &x->ms, err);
        }
    return st;
}

/* Per lone rank, the open candidate of least bound (ties: the lower index), -1 none (and
 * for a merge group's members, which have no bound). */
static void least_bounds(const sp_work *w, const sp_setting *s, const search *sr, long *target)
{
    for (int r = 0; r < s->dp; r++) {
        target[r] = -1;
        for (size_t ci = 0; ci < sr->nc && rank_bounded(w, s, r); ci++)
            if (*pair(w, s, ci, r) == PAIR_OPEN &&
                (target[r] < 0 ||
                 w->res[ci * (size_t)s->dp + r].ms < w->res[(size_t)target[r] * s->dp + r].ms))
                target[r] = (long)ci;
    }
}

/* The ranks candidate ci is simulated for now (emit): the open pairs whose unit may still
 * take it (the others lose it) and, with target, only the lone ranks whose least bound
 * it is.  False when there are none. */
static bool pick(sp_work *w, const sp_setting *s, const search *sr, size_t ci,
                 const long *target, bool *emit)
{
    bool any = false;

    for (int r = 0, r1; r < s->dp; r = r1) {
        bool on = false;
        r1 = unit_end(w, r);
        if (*pair(w, s, ci, r) != PAIR_OPEN)
            ;
        else if (!unit_may_win(w, s, sr, ci, eligible(w, r, r1), r, r1))
            lose(w, s, ci, r, r1);
        else if (!target || target[r] == (long)ci)
            on = any = true;
        for (int q = r; q < r1; q++)
            emit[q] = on;
    }
    return any;
}

/* build() of the ranks in emit alone, the others empty (ranks_alone: their makespans do
 * not change the emitted ones', and an empty rank costs nothing to simulate). */
static vl_status build_some(sp_work *w, const sp_setting *s, const uint32_t *len,
                            const cand *c, const bool *emit, vl_err *err)
{
    int ckpt = s->ckpt_mode == VL_RECOMPUTE_FULL ? s->stage_layers : 0;
    vl_status st;

    vl_plan_clear_iters(&w->scratch, 0);
    if ((st = vl_plan_iter_begin(&w->scratch, 0, err)) != VL_OK)
        return st;
    for (int r = 0; r < s->dp && st == VL_OK; r++) {
        if (!emit[r]) {
            st = vl_plan_rank_begin(&w->scratch, r, &s->par, err);
            continue;
        }
        if ((st = vl__sp_rank_packs(w, s, len, r, c->M, c->asym, err)) == VL_OK &&
            (st = vl__sp_schedule(w, s, err)) == VL_OK)
            st = vl__sp_emit_rank(w, s, r, ckpt, &w->scratch, err);
    }
    return st;
}

/* Simulate candidate ci as built in the scratch iteration for the ranks in emit (NULL:
 * every rank), raising checkpointing until every rank fits (recompute auto), their
 * results into w->res; with `prune`, stop after a round that leaves no such rank's unit
 * able to take it (may_win marks them lost).  Those left are done. */
static vl_status evaluate(sp_work *w, const sp_setting *s, const vl_cost *cost, search *sr,
                          size_t ci, const bool *emit, bool prune, vl_err *err)
{
    bool again = true;
    sp_res *res = w->res + ci * (size_t)s->dp, *now = w->res_now;
    vl_status st = VL_OK;

    for (int k = 0; k < s->dp; k++) /* as simulated next */
        now[k].ckpt = w->scratch.ranks[w->scratch.iters[0].rank0 + k].par.ckpt_layers;
    /* each round raises some rank's checkpointing; stage_layers bounds the rounds */
    for (int round = 0; st == VL_OK && again && round <= s->stage_layers; round++) {
        st = simulate(w, s, cost, round, now, &again, err);
        /* the raised ranks' next makespans: at least their busy time at the new
         * checkpointing (one stage) */
        for (int r = 0; st == VL_OK && again && prune && r < s->dp; r++) {
            const vl_rank *rk = &w->scratch.ranks[w->scratch.iters[0].rank0 + r];
            double b;
            if (rk->par.ckpt_layers != now[r].ckpt && rank_bounded(w, s, r) &&
                (st = vl__sp_plan_rank_busy(w, cost, r, &b, err)) == VL_OK)
                now[r].ms = fmax(now[r].ms, b);
        }
        for (int k = 0; st == VL_OK && k < s->dp; k++)
            if (!emit || emit[k])
                res[k] = now[k];
        if (st == VL_OK && again && prune && !may_win(w, s, sr, ci, emit))
            return VL_OK;
        for (int k = 0; st == VL_OK && k < s->dp; k++)
            now[k].ckpt = w->scratch.ranks[w->scratch.iters[0].rank0 + k].par.ckpt_layers;
    }
    for (int k = 0; st == VL_OK && k < s->dp; k++) {
        now[k].ckpt = w->scratch.ranks[w->scratch.iters[0].rank0 + k].par.ckpt_layers;
        if (!emit || emit[k]) {
            res[k] = now[k];
            if (*pair(w, s, ci, k) == PAIR_OPEN)
                *pair(w, s, ci, k) = PAIR_DONE;
        }
    }
    return st;
}

/* The candidates of a batch on one stage (busy_bounds, ranks_alone): every pair bounded
 * first; then each candidate simulated for the lone ranks whose least bound it is and
 * whose unit may still take it; then, in index order, for the units it may still win
 * (few lone ranks: a bound is the makespan itself unless the rank's checkpointing ends
 * above the least that fits; every merge group, which has no bound).  Every pair ends
 * simulated or lost, whatever the order, so the choice is that of simulating them all. */
static vl_status search_bounded(sp_work *w, const sp_setting *s, const vl_cost *cost,
                                const uint32_t *len, search *sr, vl_err *err)
{
    long *target = w->target;
    bool *emit = w->emit;
    vl_status st = bound_all(w, s, cost, len, sr, err);

    if (st == VL_OK)
        least_bounds(w, s, sr, target);
    for (int pass = 0; pass < 2; pass++)
        for (size_t ci = 0; ci < sr->nc && st == VL_OK; ci++)
            if (pick(w, s, sr, ci, pass == 0 ? target : NULL, emit) &&
                (st = build_some(w, s, len, &sr->cs[ci], emit, err)) == VL_OK)
                st = evaluate(w, s, cost, sr, ci, emit, true, err);
    return st;
}

/* The candidates of a batch otherwise: the last batch's choice first, so its makespans
 * can cut the checkpointing rounds of the others (the first batch, whose table is
 * logged, simulates every candidate to the end: prune false). */
static vl_status search_all(sp_work *w, const sp_setting *s, const vl_cost *cost,
                            const uint32_t *len, search *sr, bool prune, vl_err *err)
{
    size_t first = prune && w->hint > 0 && w->hint <= sr->nc ? w->hint - 1 : 0;
    vl_status st = VL_OK;

    for (size_t i = 0; i < sr->nc && st == VL_OK; i++) {
        size_t ci = i == 0 ? first : i <= first ? i - 1 : i;
        if ((st = build(w, s, len, &sr->cs[ci], err)) == VL_OK)
            st = evaluate(w, s, cost, sr, ci, NULL, prune && i > 0, err);
    }
    return st;
}

/* ---- the batch ---- */

static vl_status ensure_search(sp_work *w, const sp_setting *s, vl_manifest *m, size_t ncand,
                               vl_err *err)
{
    vl_status st;

    if (!w->scratch_ready) {
        if ((st = vl_plan_init(&w->scratch, m, "slimpack", 0, err)) != VL_OK)
            return st;
        w->scratch.caps =
            VL_CAP_BWD_PACKS | VL_CAP_SCHEDULE | VL_CAP_SHARED | VL_CAP_UNEVEN_MBS;
        w->scratch_ready = true;
    }
    if (!w->sim && (st = vl_sim_scratch_new((vl_sim_scratch **)&w->sim, err)) != VL_OK)
        return st;
    if (!w->trace && !(w->trace = calloc(1, sizeof(vl_sim_trace))))
        return vl_seterr(err, VL_ENOMEM, "slimpack: out of memory for a trace");
    ((vl_sim_trace *)w->trace)->lanes_only = true; /* the search reads lanes alone */
    if ((st = vl_grow(&w->res, &w->res_cap, ncand * (size_t)s->dp, sizeof *w->res, err)) !=
            VL_OK ||
        (st = vl_grow(&w->res_now, &w->res_now_cap, (size_t)s->dp, sizeof *w->res_now, err)) ||
        (st = vl_grow(&w->pair, &w->pair_cap, ncand * (size_t)s->dp, sizeof *w->pair, err)) ||
        (st = vl_grow(&w->target, &w->target_cap, (size_t)s->dp, sizeof *w->target, err)) ||
        (st = vl_grow(&w->emit, &w->emit_cap, (size_t)s->dp, sizeof *w->emit, err)))
        return st;
    memset(w->pair, PAIR_OPEN, ncand * (size_t)s->dp * sizeof *w->pair);
    return vl_grow(&w->choice, &w->choice_cap, (size_t)s->dp, sizeof *w->choice, err);
}

static void log_table(const vl_job *job, const sp_work *w, const sp_setting *s, const cand *cs,
                      size_t nc, size_t nall)
{
    vl_job_log(job,
               "slimpack: first batch, room %.2f GiB per GPU, candidates (rank: makespan "
               "ms / ckpt / ok: within it, over: above it, oom: above the device)\n",
               room(w, w->trace) / 1073741824.0);
    for (size_t ci = 0; ci < nc; ci++) {
        vl_job_log(job, "slimpack:   M=%4u %-4s", cs[ci].M, cs[ci].asym ? "asym" : "sym");
        for (int r = 0; r < s->dp && r < 8; r++) {
            const sp_res *x = &w->res[ci * (size_t)s->dp + r];
            vl_job_log(job, "  %10.1f/%d/%s", x->ms * 1e3, x->ckpt,
                       x->over <= 0       ? "ok"
                       : x->dev_over <= 0 ? "over"
                                          : "oom");
        }
        vl_job_log(job, "\n");
    }
    if (nc < nall)
        vl_job_log(job,
                   "slimpack:   (%zu larger candidates not simulated: no rank's packs "
                   "would average min_pack_tokens)\n",
                   nall - nc);
}

vl_status vl__sp_plan_batch(sp_work *w, const sp_setting *s, const vl_job *job, vl_manifest *m,
                            const uint32_t *samples, size_t n, const uint32_t *len,
                            uint32_t epoch, vl_plan *out, vl_err *err)
{
    uint32_t Ms[SP_MAX_FACTORS];
    cand cs[2 * SP_MAX_FACTORS];
    size_t nM, nc = vl__sp_list_candidates(s, Ms, &nM, cs);
    vl_status st;

    if ((st = vl_grow(&w->samples, &w->samples_cap, n ? n : 1, sizeof *w->samples, err)) !=
        VL_OK)
        return st;
    memcpy(w->samples, samples, n * sizeof *samples);
    w->nsamples = n;
    uint64_t tokens = 0;
    for (size_t i = 0; i < n; i++)
        tokens += len[samples[i]];
    w->room = vl__sp_batch_room(s, tokens);
    w->cost = vl_cost_memoized(job->cost, &w->memo);
    if ((st = vl__sp_phase1(w, s, len, err)) != VL_OK ||
        (st = rank_eligible(w, s, err)) != VL_OK ||
        (st = ensure_search(w, s, m, nc, err)) != VL_OK)
        return st;
    /* candidates come grouped by M, ascending: the eligible ones are a prefix */
    size_t per = nM ? nc / nM : 0, neval = eligible_any(w, s, nM) * per;
    search sr = {.cs = cs, .nc = neval, .Ms = Ms};
    bool prune = w->stat_iters > 0;
    st = prune && busy_bounds(w, s) && ranks_alone(&w->cost)
             ? search_bounded(w, s, &w->cost, len, &sr, err)
             : search_all(w, s, &w->cost, len, &sr, prune, err);
    if (st != VL_OK)
        return st;
    choose(w, s, cs, neval, Ms);
    w->hint = most_chosen(w, s, neval);
    if (w->stat_iters == 0)
        log_table(job, w, s, cs, neval, nc);
    return vl__sp_emit_batch(w, s, &w->cost, len, cs, epoch, out, err);
}

void vl__sp_work_free(sp_work *w)
{
    free(w->samples);
    free(w->slen);
    free(w->wf);
    free(w->rank_of);
    free(w->group_of);
    free(w->own);
    free(w->own0);
    free(w->order);
    free(w->load);
    free(w->tag);
    free(w->tmp);
    free(w->cnt);
    free(w->heap);
    free(w->done_at);
    free(w->slots);
    free(w->multi);
    free(w->need_f);
    free(w->next);
    free(w->seg_slot);
    free(w->pend);
    free(w->wait0);
    free(w->waiter);
    free(w->done);
    free(w->look);
    free(w->look_pend);
    vl__sp_packing_free(&w->rp.fwd);
    vl__sp_packing_free(&w->rp.bwd);
    free(w->rp.ops);
    if (w->scratch_ready)
        vl_plan_free(&w->scratch);
    vl_sim_scratch_free(w->sim);
    if (w->trace) {
        vl_sim_trace_free(w->trace);
        free(w->trace);
    }
    free(w->res);
    free(w->res_now);
    free(w->pair);
    free(w->target);
    free(w->emit);
    free(w->elig);
    free(w->lbtmp);
    free(w->states);
    free(w->choice);
    for (size_t r = 0; r < w->refined_cap; r++)
        vl__sp_packing_free(&w->refined[r]);
    free(w->refined);
    free(w->keep);
    free(w->mark);
    free(w->fin);
    free(w->units);
    vl_cost_memo_free(w->memo);
    memset(w, 0, sizeof *w);
}
