/* plans/slimpack/slimpack_sched.c -- the PackFlow schedule (paper §4.2, docs/slimpack.md
 * §2.6) and a rank's emission into the plan.
 * The list is the last stage's order.  A backward pack is ready when every sample it
 * touches is fully forwarded and the backward packs holding those samples' later tokens
 * are done; when none is, the next forward runs (the paper's "extra forward").  After
 * each forward the oldest ready backward pack runs -- one, or every ready one (the
 * paper's rule) when they make a burst of at least 2·pp, as a long sample's last slice
 * frees; after the last forward, all (see step() for why not always all).  The
 * simulator derives the other stages by the 1F1B warm-up rule (sim.h), deadlock-free
 * because a backward pack only waits on forwards earlier in the list.  The same rule
 * orders the symmetric variant, whose backward units are the forward packs. */
#include <stdlib.h>
#include <string.h>

#include "slimpack_impl.h"

struct sp_entry {
    uint32_t sample, off, unit, seg; /* seg: index in its packing's segs */
};
typedef struct sp_entry entry;

static bool before(const entry *x, const entry *y)
{
    return x->sample != y->sample ? x->sample < y->sample : x->off < y->off;
}

/* Ascending (sample, off), a total order on one packing's segments (they are disjoint):
 * insertion runs merged bottom-up, typed, as qsort's calls were a tenth of the search. */
static void sort_entries(entry *v, entry *tmp, size_t n)
{
    enum { RUN = 16 };
    entry *src = v, *dst = tmp;

    for (size_t i = 0; i < n; i += RUN)
        for (size_t k = i + 1; k < n && k < i + RUN; k++) {
            entry x = v[k];
            size_t j = k;
            for (; j > i && before(&x, &v[j - 1]); j--)
                v[j] = v[j - 1];
            v[j] = x;
        }
    for (size_t width = RUN; width < n; width *= 2) {
        for (size_t i = 0; i < n; i += 2 * width) {
            size_t a = i, amax = i + width < n ? i + width : n, b = amax;
            size_t bmax = amax + width < n ? amax + width : n, k = i;
            while (a < amax && b < bmax)
                dst[k++] = before(&src[b], &src[a]) ? src[b++] : src[a++];
            while (a < amax)
                dst[k++] = src[a++];
            while (b < bmax)
                dst[k++] = src[b++];
        }
        entry *t = src;
        src = dst;
        dst = t;
    }
    if (src != v)
        memcpy(v, src, n * sizeof *v);
}

/* What each backward unit waits for (find_deps), and the same as counts (count_waits):
 * pend[u] of its segments wait on a unit not done yet, and the units waiting on unit v
 * are waiter[wait0[v], wait0[v + 1]) (once per waiting segment). */
typedef struct deps {
    uint32_t *need_f, *next, *seg_slot;
    uint32_t *pend, *wait0, *waiter;
} deps;

/* A sample of the rank in find_deps' table: its forward slice of the largest offset
 * (off, unit) when it has one, and how many backward segments it has.  The table lives
 * in sp_work across calls: a slot is in use when its gen is the call's (no clearing). */
struct sp_slot {
    uint32_t sample, off, unit, nb, gen;
    bool fwd;
};
typedef struct sp_slot slot;

/* The table of one find_deps call. */
typedef struct table {
    slot *t;
    size_t mask;
    uint32_t gen;
} table;

static slot *slot_of(const table *tb, uint32_t sample)
{
    slot *t = tb->t;
    size_t h = (size_t)((sample * UINT64_C(0x9E3779B97F4A7C15)) >> 32) & tb->mask;

    while (t[h].gen == tb->gen && t[h].sample != sample)
        h = (h + 1) & tb->mask;
    if (t[h].gen != tb->gen)
        t[h] = (slot){.sample = sample, .gen = tb->gen};
    return &t[h];
}

/* w's table with room for n samples at most half full, its slots of earlier calls
 * retired by a new generation.  VL_ENOMEM. */
static vl_status open_table(sp_work *w, size_t n, table *tb, vl_err *err)
{
    size_t cap = 16;

    while (cap < 2 * n)
        cap *= 2;
    if (cap > w->slots_cap || ++w->slots_gen == 0) {
        free(w->slots);
        w->slots_cap = 0;
        if ((w->slots = calloc(cap, sizeof *w->slots)) == NULL)
            return vl_seterr(err, VL_ENOMEM, "slimpack: out of memory for a schedule");
        w->slots_cap = cap;
        w->slots_gen = 1;
    }
    *tb = (table){w->slots, w->slots_cap - 1, w->slots_gen};
    return VL_OK;
}

/* What each backward unit waits for: need_f[u] = the last forward pack holding the end
 * of one of its samples (its slice of the largest offset); next[seg] = the unit holding
 * the next-later tokens of the segment's sample (UINT32_MAX: none, or the unit itself).
 * One pass over each packing through a table by sample; only the samples with several
 * backward segments are sorted, by (sample, off).  VL_ENOMEM. */
static vl_status find_deps(sp_work *w, const sp_packing *fw, const sp_packing *bu, deps *d,
                           vl_err *err)
{
    size_t nmulti = 0;
    table tb = {0}; /* set by open_table; initialised for gcc -O2's flow analysis */
    entry *multi;
    vl_status st = open_table(w, fw->nsegs + bu->nsegs, &tb, err);

    if (st != VL_OK)
        return st;
    for (size_t u = 0; u < bu->npacks; u++)
        d->need_f[u] = 0;
    for (size_t p = 0; p < fw->npacks; p++)
        for (uint32_t j = fw->start[p]; j < fw->start[p + 1]; j++) {
            slot *x = slot_of(&tb, fw->segs[j].sample);
            if (!x->fwd || fw->segs[j].off > x->off) {
                x->fwd = true;
                x->off = fw->segs[j].off;
                x->unit = (uint32_t)p;
            }
        }
    for (size_t u = 0; u < bu->npacks; u++)
        for (uint32_t j = bu->start[u]; j < bu->start[u + 1]; j++) {
            slot *x = slot_of(&tb, bu->segs[j].sample);
            if (x->fwd && x->unit > d->need_f[u])
                d->need_f[u] = x->unit;
            x->nb++;
            d->next[j] = UINT32_MAX;
            d->seg_slot[j] = (uint32_t)(x - tb.t);
        }
    for (size_t j = 0; j < bu->nsegs; j++)
        nmulti += tb.t[d->seg_slot[j]].nb > 1;
    if (nmulti == 0)
        return VL_OK;
    if ((st = vl_grow(&w->multi, &w->multi_cap, 2 * nmulti, sizeof *w->multi, err)) != VL_OK)
        return st;
    multi = w->multi;
    size_t k = 0;
    for (size_t u = 0; u < bu->npacks; u++)
        for (uint32_t j = bu->start[u]; j < bu->start[u + 1]; j++)
            if (tb.t[d->seg_slot[j]].nb > 1)
                multi[k++] = (entry){bu->segs[j].sample, bu->segs[j].off, (uint32_t)u, j};
    sort_entries(multi, multi + nmulti, nmulti);
    for (size_t q = 0; q + 1 < nmulti; q++)
        if (multi[q + 1].sample == multi[q].sample && multi[q + 1].unit != multi[q].unit)
            d->next[multi[q].seg] = multi[q + 1].unit;
    return VL_OK;
}

/* next[] as counts: pend[u] of unit u's segments name a later unit (none is done yet),
 * and each such segment's unit is listed once among that unit's waiters. */
static void count_waits(const sp_packing *bu, deps *d)
{
    size_t units = bu->npacks;

    for (size_t u = 0; u <= units; u++)
        d->wait0[u] = 0;
    for (size_t u = 0; u < units; u++) {
        d->pend[u] = 0;
        for (uint32_t j = bu->start[u]; j < bu->start[u + 1]; j++)
            if (d->next[j] != UINT32_MAX) {
                d->pend[u]++;
                d->wait0[d->next[j] + 1]++;
            }
    }
    for (size_t u = 0; u < units; u++)
        d->wait0[u + 1] += d->wait0[u];
    for (size_t u = 0; u < units; u++) /* wait0[v] moves from v's start to its end */
        for (uint32_t j = bu->start[u]; j < bu->start[u + 1]; j++)
            if (d->next[j] != UINT32_MAX)
                d->waiter[d->wait0[d->next[j]]++] = (uint32_t)u;
    for (size_t u = units; u > 0; u--)
        d->wait0[u] = d->wait0[u - 1];
    d->wait0[0] = 0;
}

/* Unit u is ready after fdone forwards when its samples' last forward slices are done
 * and no segment of it waits on a unit not done (pend: the count of those). */
static bool ready(const deps *d, const uint32_t *pend, uint32_t u, uint32_t fdone)
{
    return d->need_f[u] < fdone && pend[u] == 0;
}

static vl_status push_op(sp_rankplan *rp, uint32_t mb, vl_op_kind kind, vl_err *err)
{
    vl_status st = vl_grow(&rp->ops, &rp->ops_cap, rp->nops + 1, sizeof *rp->ops, err);

    if (st == VL_OK)
        rp->ops[rp->nops++] = (vl_op){.mb = mb, .kind = (uint8_t)kind};
    return st;
}

/* The list being built: which units are done and their waits (and copies to look ahead
 * on), how many, the oldest not done, and the burst size at which every ready unit runs. */
typedef struct lister {
    sp_rankplan *rp;
    const sp_packing *bu;
    const deps *d;
    bool *done, *look;
    uint32_t *pend, *look_pend;
    uint32_t ndone, lo, burst;
} lister;

/* The oldest unit of done[] not done and ready after fdone forwards, or UINT32_MAX. */
static uint32_t oldest_ready(const lister *l, const bool *done, const uint32_t *pend,
                             uint32_t fdone)
{
    for (uint32_t u = l->lo; u < l->bu->npacks; u++)
        if (!done[u] && ready(l->d, pend, u, fdone))
            return u;
    return UINT32_MAX;
}

/* Unit u done: the segments waiting on it wait no more. */
static void finish(const deps *d, bool *done, uint32_t *pend, uint32_t u)
{
    done[u] = true;
    for (uint32_t k = d->wait0[u]; k < d->wait0[u + 1]; k++)
        pend[d->waiter[k]]--;
}

/* How many units would run now if every ready one did (a finished unit may free an
 * older one: those count too), up to `most`. */
static uint32_t ready_count(lister *l, uint32_t fdone, uint32_t most)
{
    uint32_t n = 0, u;

    memcpy(l->look, l->done, l->bu->npacks * sizeof *l->look);
    memcpy(l->look_pend, l->pend, l->bu->npacks * sizeof *l->look_pend);
    while (n < most && (u = oldest_ready(l, l->look, l->look_pend, fdone)) != UINT32_MAX) {
        finish(l->d, l->look, l->look_pend, u);
        n++;
    }
    return n;
}

static vl_status run_unit(lister *l, uint32_t u, vl_err *err)
{
    finish(l->d, l->done, l->pend, u);
    l->ndone++;
    while (l->lo < l->bu->npacks && l->done[l->lo])
        l->lo++;
    return push_op(l->rp, u, VL_OP_B, err);
}

/* After fdone of nf forwards: the oldest ready unit, or every ready one (oldest first,
 * rescanning) after the last forward or when they are a burst.  Why not always every
 * one, as the paper says: when each backward pack needs the forward pack after its own
 * (an asymmetric cut straddles two forward packs), that rule writes F F B B runs, and
 * a forward after two backwards makes the stage before the last run it only after the
 * second-last of them -- about one forward of idle per run, 6-9% of the step on the
 * Common-Crawl-like set at 64K.  One backward per forward keeps the 1F1B alternation
 * (a pack more in flight where a backward waited); a burst still drains at once, so
 * a long sample's slices do not stay in memory for as many forwards as it has. */
static vl_status step(lister *l, uint32_t fdone, uint32_t nf, vl_err *err)
{
    bool all = fdone == nf || ready_count(l, fdone, l->burst) >= l->burst;
    uint32_t u;
    vl_status st = VL_OK;

    while (st == VL_OK && (u = oldest_ready(l, l->done, l->pend, fdone)) != UINT32_MAX) {
        st = run_unit(l, u, err);
        if (!all)
            break;
    }
    return st;
}

/* The schedule's arrays in w, sized for units backward units and nsegs segments. */
static vl_status sched_bufs(sp_work *w, size_t units, size_t nsegs, vl_err *err)
{
    vl_status st;

    units = units ? units : 1;
    nsegs = nsegs ? nsegs : 1;
    if ((st = vl_grow(&w->need_f, &w->need_f_cap, units, sizeof *w->need_f, err)) ||
        (st = vl_grow(&w->next, &w->next_cap, nsegs, sizeof *w->next, err)) ||
        (st = vl_grow(&w->seg_slot, &w->seg_slot_cap, nsegs, sizeof *w->seg_slot, err)) ||
        (st = vl_grow(&w->pend, &w->pend_cap, units, sizeof *w->pend, err)) ||
        (st = vl_grow(&w->wait0, &w->wait0_cap, units + 1, sizeof *w->wait0, err)) ||
        (st = vl_grow(&w->waiter, &w->waiter_cap, nsegs, sizeof *w->waiter, err)) ||
        (st = vl_grow(&w->done, &w->done_cap, units, sizeof *w->done, err)) ||
        (st = vl_grow(&w->look, &w->look_cap, units, sizeof *w->look, err)) ||
        (st = vl_grow(&w->look_pend, &w->look_pend_cap, units, sizeof *w->look_pend, err)))
        return st;
    memset(w->done, 0, units * sizeof *w->done);
    return VL_OK;
}

vl_status vl__sp_schedule(sp_work *w, const sp_setting *s, vl_err *err)
{
    sp_rankplan *rp = &w->rp;
    const sp_packing *fw = &rp->fwd, *bu = rp->bwd.npacks ? &rp->bwd : &rp->fwd;
    vl_status st = sched_bufs(w, bu->npacks, bu->nsegs, err);
    deps d = {w->need_f, w->next, w->seg_slot, w->pend, w->wait0, w->waiter};
    lister l = {
        rp,      bu,           &d, w->done, w->look,
        w->pend, w->look_pend, 0,  0,       2 * (uint32_t)(s->par.pp > 1 ? s->par.pp : 1)};

    rp->nops = 0;
    if (st == VL_OK && (st = find_deps(w, fw, bu, &d, err)) == VL_OK)
        count_waits(bu, &d);
    for (uint32_t f = 0; f < fw->npacks && st == VL_OK; f++)
        if ((st = push_op(rp, f, VL_OP_F, err)) == VL_OK)
            st = step(&l, f + 1, (uint32_t)fw->npacks, err);
    if (st == VL_OK && l.lo < bu->npacks)
        st = vl_seterr(err, VL_EINTERNAL, "slimpack: backward pack %u never became ready",
                       l.lo);
    return st;
}

/* ---- emission ---- */

static vl_status emit_packs(const sp_packing *pk, bool bwd, uint32_t nshared,
                            const int32_t *members, int k, vl_plan *out, vl_err *err)
{
    vl_status st = VL_OK;

    for (size_t p = 0; p < pk->npacks && st == VL_OK; p++) {
        uint64_t tokens = 0;
        for (uint32_t j = pk->start[p]; j < pk->start[p + 1]; j++)
            tokens += pk->segs[j].len;
        uint32_t cap = tokens < UINT32_MAX ? (uint32_t)tokens : UINT32_MAX;
        st = bwd ? vl_plan_bwd_begin(out, cap, err) : vl_plan_mb_begin(out, cap, err);
        for (uint32_t j = pk->start[p]; j < pk->start[p + 1] && st == VL_OK; j++)
            st = vl_plan_seg(out, pk->segs[j].sample, pk->segs[j].off, pk->segs[j].len, err);
        if (st == VL_OK && p < nshared)
            st = vl_plan_mb_share(out, members, (size_t)k, err);
    }
    return st;
}

vl_status vl__sp_emit_rank(sp_work *w, const sp_setting *s, int dp, int ckpt, vl_plan *out,
                           vl_err *err)
{
    const sp_rankplan *rp = &w->rp;
    vl_par par = s->par;
    int gi = w->group_of[dp], k = gi >= 0 ? w->groups[gi].k : 0;
    /* every member of the merged group (a group of more than 64 ranks once lost the
     * rest, so ranks 64.. held packs shared by a list without them) */
    int32_t *members = malloc((size_t)(k > 0 ? k : 1) * sizeof *members);
    vl_status st;

    if (!members)
        return vl_seterr(err, VL_ENOMEM, "slimpack: out of memory for %d group members", k);
    par.ckpt_layers = ckpt;
    for (int i = 0; i < k; i++)
        members[i] = w->groups[gi].dp0 + i;
    if ((st = vl_plan_rank_begin(out, dp, &par, err)) == VL_OK &&
        (st = emit_packs(&rp->fwd, false, rp->nshared_f, members, k, out, err)) == VL_OK)
        st = emit_packs(&rp->bwd, true, rp->nshared_b, members, k, out, err);
    free(members);
    for (size_t i = 0; i < rp->nops && st == VL_OK; i++)
        st = vl_plan_op(out, rp->ops[i].mb, (vl_op_kind)rp->ops[i].kind, err);
    return st;
}
