/* plans/mcore_cp/mcore_cp_sched.c -- Megatron-Core's BalancedCPScheduler
 * (megatron/core/pipeline_parallel/hybrid_cp_schedule.py; docs/strategies.md §8.1)
 * on lengths alone, step for step, quirks included, so that its groups are the ones
 * Megatron forms for the same global batch:
 *  - gpus_needed(s) = max(1, 2^ceil(log2(s / per_rank))), computed in integers (the
 *    smallest power of two c with c·per_rank >= s: the same value without log2's
 *    rounding);
 *  - workload s²/cp in doubles, summed in Megatron's order (Python floats are doubles,
 *    and s² is exact below 94M tokens), so every comparison comes out the same;
 *  - make_buckets_equal: k = distinct CP sizes, target = total / k, a bucket closes
 *    when the next sample would pass factor·target (1.1) or when
 *    `n - i <= remaining_k - len(buckets)` -- both counters move at each close, so the
 *    reserve rule fires less often than its comment says; kept as written;
 *  - next_hdp_group: the first bucket (in order) whose head fits an existing set of its
 *    CP size or enough free GPUs; a new set of the lowest free GPUs whenever they
 *    suffice (a free GPU's load is 0, below any set's), else the set of that size with
 *    the least load (first on ties); balance is checked only once a CP size below the
 *    FIRST sample's has been placed (prev_needed is never updated), and the group ends
 *    when max − min <= δ·max over all GPUs with samples left;
 *  - leftovers: the rest of every bucket in order, then trim_overload's samples appended
 *    at the end (the next group does not re-sort them);
 *  - trim_overload: while the slack exceeds δ·max and no GPU is idle, pop the newest
 *    sample of the most loaded set (first on ties) if that lowers the slack and leaves
 *    the set a sample;
 *  - fill_empty_gpus: while GPUs are idle, the first set of the smallest size doubles
 *    (min(2m, gpus)), the sets after it shift right; its samples run with the larger CP
 *    (vlplan's one departure: under a cap, cp_most, no set grows past it).
 * Sets are contiguous GPU ranges in creation order, which is GPU order: free GPUs all
 * have load 0 and Python's stable sort takes the lowest, so the free ones are always a
 * suffix.  With gpus a power of two (the caller's rule) every expansion finds its GPUs
 * (Megatron would index past its list otherwise). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "mcore_cp_impl.h"

uint32_t vl__mc_gpus_needed(uint32_t len, uint32_t per_rank)
{
    uint64_t c = 1;

    while (c * (uint64_t)per_rank < len)
        c <<= 1;
    return (uint32_t)c;
}

double vl__mc_workload(uint32_t len, uint32_t cp)
{
    return (double)len * (double)len / (double)cp;
}

static unsigned log2u(uint32_t pow2)
{
    unsigned k = 0;

    while (pow2 > 1u) {
        pow2 >>= 1;
        k++;
    }
    return k;
}

size_t vl__mc_buckets(const vl_mc_item *it, size_t n, uint32_t per_rank, double factor,
                      size_t *start)
{
    uint64_t sizes = 0;
    double total = 0.0, target, cur_work = 0.0;
    size_t k = 0, nb = 0, cur_n = 0;
    int64_t remaining_k;

    for (size_t i = 0; i < n; i++) {
        uint32_t c = vl__mc_gpus_needed(it[i].len, per_rank);
        sizes |= UINT64_C(1) << log2u(c);
        total += vl__mc_workload(it[i].len, c);
    }
    for (uint64_t b = sizes; b; b &= b - 1)
        k++;
    if (k == 0)
        return 0;
    target = total / (double)k;
    remaining_k = (int64_t)k;
    start[0] = 0;
    for (size_t i = 0; i < n; i++) {
        double w = vl__mc_workload(it[i].len, vl__mc_gpus_needed(it[i].len, per_rank));
        double projected = cur_work + w;
        if (cur_n > 0 &&
            (projected > target * factor || (int64_t)(n - i) <= remaining_k - (int64_t)nb)) {
            start[++nb] = i;
            cur_n = 0;
            cur_work = 0.0;
            remaining_k--;
        }
        cur_n++;
        cur_work += w;
    }
    if (cur_n > 0)
        start[++nb] = n;
    return nb;
}

void vl__mc_sched_free(vl_mc_sched *s)
{
    free(s->out);
    free(s->sets);
    free(s->gstart);
    free(s->list);
    free(s->next);
    free(s->bstart);
    free(s->bhead);
    free(s->rec);
    free(s->sgpu0);
    free(s->ssize);
    free(s->sload);
    free(s->slast);
    free(s->scount);
    memset(s, 0, sizeof *s);
}

/* ---- one group (next_hdp_group) --------------------------------------------------- */

/* The group being formed: its sets (s->sgpu0 ...), GPUs in use, placements. */
typedef struct grp {
    size_t nsets;
    uint32_t used;
} grp;

/* Max and min of every GPU's load: an idle GPU's is 0. */
static void extremes(const vl_mc_sched *s, const grp *g, double *max, double *min)
{
    double hi = g->used < s->gpus ? 0.0 : -INFINITY, lo = g->used < s->gpus ? 0.0 : INFINITY;

    for (size_t j = 0; j < g->nsets; j++) {
        hi = fmax(hi, s->sload[j]);
        lo = fmin(lo, s->sload[j]);
    }
    *max = hi;
    *min = lo;
}

static bool has_size(const vl_mc_sched *s, const grp *g, uint32_t size)
{
    for (size_t j = 0; j < g->nsets; j++)
        if (s->ssize[j] == size)
            return true;
    return false;
}

/* Step 1: the first bucket from `front` whose head can be placed, or nb. */
static size_t pick_bucket(const vl_mc_sched *s, const grp *g, size_t front, size_t nb)
{
    for (size_t b = front; b < nb; b++) {
        uint32_t need;
        if (s->bhead[b] == s->bstart[b + 1])
            continue;
        need = vl__mc_gpus_needed(s->list[s->bhead[b]].len, s->per_rank);
        if (has_size(s, g, need) || s->gpus - g->used >= need)
            return b;
    }
    return nb;
}

/* Step 2: the set that takes a sample needing `need` GPUs (created when new). */
static size_t pick_set(vl_mc_sched *s, grp *g, uint32_t need)
{
    size_t best = SIZE_MAX;
    double best_load = INFINITY;

    for (size_t j = 0; j < g->nsets; j++)
        if (s->ssize[j] == need && s->sload[j] < best_load) {
            best = j;
            best_load = s->sload[j];
        }
    if (s->gpus - g->used >= need && 0.0 < best_load) { /* free GPUs carry load 0 */
        best = g->nsets++;
        s->sgpu0[best] = g->used;
        s->ssize[best] = need;
        s->sload[best] = 0.0;
        s->slast[best] = -1;
        s->scount[best] = 0;
        g->used += need;
    }
    return best;
}

static void place(vl_mc_sched *s, size_t j, vl_mc_item it, uint32_t need)
{
    vl_mc_rec *r = &s->rec[s->nrec];

    s->sload[j] += vl__mc_workload(it.len, need);
    *r = (vl_mc_rec){.it = it, .set = (uint32_t)j, .prev = s->slast[j], .alive = true};
    s->slast[j] = (int64_t)s->nrec++;
    s->scount[j]++;
}

/* Steps 1-4 of the loop: place samples until no head fits or the group is balanced.
 * Returns the buckets' front (buckets before it are empty). */
static size_t assign(vl_mc_sched *s, grp *g, size_t nb)
{
    size_t front = 0;
    uint32_t prev_needed = 0;
    bool check = false;

    while (front < nb) {
        size_t b = pick_bucket(s, g, front, nb);
        vl_mc_item it;
        uint32_t need;
        double hi, lo;
        if (b == nb)
            break;
        it = s->list[s->bhead[b]];
        need = vl__mc_gpus_needed(it.len, s->per_rank);
        prev_needed = prev_needed ? prev_needed : need;
        place(s, pick_set(s, g, need), it, need);
        s->bhead[b]++;
        while (front < nb && s->bhead[front] == s->bstart[front + 1])
            front++;
        check = check || need < prev_needed;
        if (!check || front == nb)
            continue;
        extremes(s, g, &hi, &lo);
        if (hi - lo <= s->delta * hi)
            break;
    }
    return front;
}

/* trim_overload: pops go to next[*nleft ...]. */
static void trim(vl_mc_sched *s, const grp *g, size_t *nleft)
{
    for (;;) {
        double hi, lo, slack, cost, phi = -INFINITY, plo = INFINITY;
        size_t j = 0;
        vl_mc_rec *r;
        extremes(s, g, &hi, &lo);
        slack = hi - lo;
        if (slack <= s->delta * hi || lo == 0.0)
            break;
        while (s->sload[j] != hi) /* the first GPU at the maximum */
            j++;
        if (s->scount[j] <= 1)
            break;
        r = &s->rec[s->slast[j]];
        cost = vl__mc_workload(r->it.len, vl__mc_gpus_needed(r->it.len, s->per_rank));
        for (size_t q = 0; q < g->nsets; q++) {
            double v = q == j ? s->sload[q] - cost : s->sload[q];
            phi = fmax(phi, v);
            plo = fmin(plo, v);
        }
        if (!(phi - plo < slack))
            break;
        s->sload[j] -= cost;
        r->alive = false;
        s->slast[j] = r->prev;
        s->scount[j]--;
        s->next[(*nleft)++] = r->it;
        s->stat_trimmed++;
    }
}

/* fill_empty_gpus: double the first smallest set until no GPU is idle -- or, under a
 * cap (cp_most), until every set has reached it: the GPUs left then sit this group out
 * (Megatron has no cap; Ulysses cannot run a set its heads do not split over). */
static void fill(vl_mc_sched *s, grp *g)
{
    uint32_t top = s->cp_most && s->cp_most < s->gpus ? s->cp_most : s->gpus;

    while (g->used < s->gpus) {
        uint32_t m = UINT32_MAX, grow;
        size_t j = 0;
        for (size_t q = 0; q < g->nsets; q++)
            m = s->ssize[q] < m ? s->ssize[q] : m;
        if (m >= top)
            break;
        grow = (2 * (uint64_t)m < top ? 2 * m : top) - m;
        while (s->ssize[j] != m)
            j++;
        s->ssize[j] += grow;
        for (size_t q = j + 1; q < g->nsets; q++)
            s->sgpu0[q] += grow;
        g->used += grow;
        s->stat_expanded++;
    }
}

/* The group's sets and samples appended to the result. */
static vl_status emit_group(vl_mc_sched *s, const grp *g, vl_err *err)
{
    vl_status st;

    if ((st = vl_grow(&s->sets, &s->sets_cap, s->nsets + g->nsets, sizeof *s->sets, err)) ||
        (st = vl_grow(&s->out, &s->out_cap, s->nout + s->nrec, sizeof *s->out, err)) ||
        (st = vl_grow(&s->gstart, &s->gstart_cap, s->ngroups + 2, sizeof *s->gstart, err)))
        return st;
    for (size_t j = 0; j < g->nsets; j++) {
        size_t n = s->scount[j], k = n;
        for (int64_t r = s->slast[j]; r >= 0; r = s->rec[r].prev) /* newest last */
            s->out[s->nout + --k] = s->rec[r].it;
        s->sets[s->nsets++] = (vl_mc_set){s->sgpu0[j], s->ssize[j], s->nout, n};
        s->nout += n;
    }
    s->gstart[++s->ngroups] = s->nsets;
    s->stat_groups++;
    return VL_OK;
}

/* next_hdp_group on list[0..n-1]: one group emitted, the leftovers in next[0..*nleft). */
static vl_status hdp_group(vl_mc_sched *s, size_t n, size_t *nleft, vl_err *err)
{
    size_t nb = vl__mc_buckets(s->list, n, s->per_rank, s->bucket_factor, s->bstart);
    grp g = {0, 0};
    size_t front;

    for (size_t b = 0; b < nb; b++)
        s->bhead[b] = s->bstart[b];
    s->nrec = 0;
    front = assign(s, &g, nb);
    if (s->nrec == 0) /* only a sample over per_rank · gpus: the caller's limit */
        return vl_seterr(err, VL_EINTERNAL,
                         "mcore_cp: a sample of %u tokens needs more "
                         "than %u GPUs",
                         s->list[0].len, s->gpus);
    *nleft = 0;
    for (size_t b = front; b < nb; b++)
        for (size_t i = s->bhead[b]; i < s->bstart[b + 1]; i++)
            s->next[(*nleft)++] = s->list[i];
    trim(s, &g, nleft);
    fill(s, &g);
    return emit_group(s, &g, err);
}

static vl_status reserve(vl_mc_sched *s, size_t n, vl_err *err)
{
    size_t k = n ? n : 1, gp = s->gpus ? s->gpus : 1;
    vl_status st;

    if ((st = vl_grow(&s->list, &s->list_cap, k, sizeof *s->list, err)) ||
        (st = vl_grow(&s->next, &s->next_cap, k, sizeof *s->next, err)) ||
        (st = vl_grow(&s->bstart, &s->bstart_cap, k + 1, sizeof *s->bstart, err)) ||
        (st = vl_grow(&s->bhead, &s->bhead_cap, k, sizeof *s->bhead, err)) ||
        (st = vl_grow(&s->rec, &s->rec_cap, k, sizeof *s->rec, err)) ||
        (st = vl_grow(&s->sgpu0, &s->sgpu0_cap, gp, sizeof *s->sgpu0, err)) ||
        (st = vl_grow(&s->ssize, &s->ssize_cap, gp, sizeof *s->ssize, err)) ||
        (st = vl_grow(&s->sload, &s->sload_cap, gp, sizeof *s->sload, err)) ||
        (st = vl_grow(&s->slast, &s->slast_cap, gp, sizeof *s->slast, err)) ||
        (st = vl_grow(&s->scount, &s->scount_cap, gp, sizeof *s->scount, err)) ||
        (st = vl_grow(&s->gstart, &s->gstart_cap, 1, sizeof *s->gstart, err)))
        return st;
    return VL_OK;
}

/* The batch sorted by length, longest first; equal lengths keep batch order (Python's
 * stable sorted(reverse=True)).  next[] is the scratch for the keys. */
static vl_status sort_batch(vl_mc_sched *s, const vl_mc_item *it, size_t n, vl_err *err)
{
    uint64_t *key = malloc((n ? n : 1) * sizeof *key);

    if (!key)
        return vl_seterr(err, VL_ENOMEM, "mcore_cp: out of memory for %zu samples", n);
    for (size_t i = 0; i < n; i++)
        key[i] = (uint64_t)(UINT32_MAX - it[i].len) << 32 | (uint64_t)i;
    vl_sort_u64(key, n);
    for (size_t i = 0; i < n; i++)
        s->list[i] = it[(uint32_t)key[i]];
    free(key);
    return VL_OK;
}

vl_status vl__mc_schedule(vl_mc_sched *s, const vl_mc_item *it, size_t n, vl_err *err)
{
    vl_status st = reserve(s, n, err);
    size_t left = n;

    s->nout = s->nsets = s->ngroups = 0;
    if (st != VL_OK || (st = sort_batch(s, it, n, err)) != VL_OK)
        return st;
    s->gstart[0] = 0;
    while (left > 0 && st == VL_OK) {
        size_t nleft = 0;
        vl_mc_item *t;
        st = hdp_group(s, left, &nleft, err);
        size_t cap = s->list_cap;
        t = s->list;
        s->list = s->next;
        s->next = t;
        s->list_cap = s->next_cap;
        s->next_cap = cap;
        left = nleft;
    }
    return st;
}
