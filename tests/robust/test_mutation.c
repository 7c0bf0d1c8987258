/* tests/robust/test_mutation.c -- verify cannot be fooled (issue 13 item 3): valid plans of every
 * strategy in the registry (so a new strategy is included by its registration line),
 * each changed by thousands of seeded single mutations, every one of which makes the
 * plan wrong, and verify must reject every one -- in memory, and every eighth also
 * written to a file and read back the way `vlplan verify` reads it.
 *
 * Each mutation is edited consistently, the way a hand-made plan with a valid checksum
 * would be: a segment removed, added or resized changes its pack's token count and its
 * iteration's totals with it, so what must catch it is the invariant it breaks, not a
 * stale sum.  Mutations are generated only where they change the plan's meaning, by
 * construction:
 *   - segments (drop, duplicate, shift, resize): the base plan covers every token
 *     exactly once per epoch, so removing, repeating, moving or growing/shrinking a
 *     non-empty segment leaves tokens missing, twice, or beyond the sample (I1);
 *   - counts: a pack's tokens or an iteration's totals off by d != 0 (I2); a rank's
 *     micro-batch count one lower only when its last pack holds tokens (removing an empty
 *     filler pack from a plan that declares uneven counts is another valid plan: skipped);
 *   - degrees: tp, pp, sp or ckpt_layers set outside what the config's cluster and model
 *     permit (tp not dividing the heads, tp·sp·pp above the GPUs, pp above the layers,
 *     ckpt_layers above a stage's layers, a value below 1 or 0); a change within them is
 *     another valid layout and is not generated;
 *   - capacity: above the strategy's limit under the config (vl_strategy.max_cap, for a
 *     strategy that states one), or below the pack's tokens; a change within
 *     [tokens, limit] is not generated;
 *   - epochs: the header's count changed (it must equal training.epochs), or an
 *     iteration moved to another epoch (its tokens then miss in one epoch and repeat in
 *     another; skipped for an iteration holding no tokens);
 *   - dropped ranges: one added for a planned sample, removed, resized, its reason
 *     flipped, or an oversize sample planned in every epoch instead of dropped.
 * A mutation whose target the plan lacks (no dropped range, no rank with two packs, ...)
 * is skipped and counted; the totals are printed. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plan_prop.h"
#include "testutil.h"

#define BASES 3          /* valid plans per strategy */
#define MUTATIONS 250    /* per base plan ($VLPLAN_MUTATIONS overrides, for a quick look) */
#define FILE_EVERY 8     /* every n-th applied mutation also goes through a file */

enum {
    M_SEG_DROP, M_SEG_DUP, M_SEG_SHIFT, M_SEG_RESIZE, M_MB_TOKENS, M_ITER_TOTAL, M_NMB,
    M_DEGREE, M_CAP, M_EPOCHS, M_ITER_EPOCH, M_DROP_ADD, M_DROP_REMOVE, M_DROP_RESIZE,
    M_DROP_REASON, M_DROP_PLANNED, NKINDS
};
static const char *const KIND[NKINDS] = {
    "drop a segment", "duplicate a segment", "shift a segment", "resize a segment",
    "change a pack's token count", "change an iteration's totals", "lower a micro-batch count",
    "change a degree", "change a capacity", "change the epochs", "move an iteration's epoch",
    "add a dropped range", "remove a dropped range", "resize a dropped range",
    "flip a drop's reason", "plan an oversize sample instead of dropping it"};

typedef struct tally {
    unsigned tried[NKINDS], rejected[NKINDS], skipped[NKINDS], via_file;
} tally;

/* ---- a deep copy with room for a few more segments (one per epoch) and drops ---- */

#define ROOM 8

static void *dup_arr(const void *a, size_t n, size_t size)
{
    void *b = malloc((n + ROOM) * size);

    cr_assert_not_null(b);
    if (a && n)
        memcpy(b, a, n * size);
    return b;
}

static void clone_plan(vl_plan *q, const vl_plan *p)
{
    *q = *p;
#define DUP(f, n) (q->f = dup_arr(p->f, p->n, sizeof *p->f), q->f##_cap = p->n + ROOM)
    DUP(segs, nsegs);
    DUP(mbs, nmbs);
    DUP(ranks, nranks);
    DUP(iters, niters);
    DUP(ops, nops);
    DUP(gpus, ngpus);
    DUP(shares, nshares);
    DUP(members, nmembers);
    DUP(drops, ndrops);
#undef DUP
    q->cps = p->cps ? dup_arr(p->cps, p->nsegs, sizeof *p->cps) : NULL;
    q->cps_cap = p->cps ? p->nsegs + ROOM : 0;
    q->params_json = p->params_json ? strdup(p->params_json) : NULL;
    q->config_json = p->config_json ? strdup(p->config_json) : NULL;
}

/* ---- consistent edits ---- */

/* Every iteration's totals from its primary forward packs, as the builder keeps them. */
static void fix_totals(vl_plan *q)
{
    for (size_t it = 0; it < q->niters; it++) {
        vl_iter *in = &q->iters[it];
        in->tokens = in->loss = in->samples = 0;
        for (uint64_t r = in->rank0; r < in->rank0 + in->nranks; r++)
            for (uint32_t j = 0; j < q->ranks[r].nmb; j++) {
                const vl_mb *mb = &q->mbs[q->ranks[r].mb0 + j];
                if (!vl_plan_mb_primary(q, &q->ranks[r], mb))
                    continue;
                for (uint32_t k = 0; k < mb->nseg; k++) {
                    const vl_seg *s = &q->segs[mb->seg0 + k];
                    in->tokens += s->len;
                    in->loss += vl_plan_seg_loss(q, s);
                    in->samples += s->off == 0;
                }
            }
    }
}

static void insert_seg(vl_plan *q, size_t b, uint32_t k, vl_seg s)
{
    uint64_t at = q->mbs[b].seg0 + k;

    memmove(q->segs + at + 1, q->segs + at, (q->nsegs - at) * sizeof *q->segs);
    if (q->cps)
        memmove(q->cps + at + 1, q->cps + at, (q->nsegs - at) * sizeof *q->cps);
    q->segs[at] = s;
    q->nsegs++;
    q->mbs[b].nseg++;
    q->mbs[b].tokens += s.len;
    for (size_t i = b + 1; i < q->nmbs; i++)   /* packs are laid out in segment order */
        q->mbs[i].seg0++;
}

static void remove_seg(vl_plan *q, size_t b, uint32_t k)
{
    uint64_t at = q->mbs[b].seg0 + k;

    q->mbs[b].tokens -= q->segs[at].len;
    memmove(q->segs + at, q->segs + at + 1, (q->nsegs - at - 1) * sizeof *q->segs);
    if (q->cps)
        memmove(q->cps + at, q->cps + at + 1, (q->nsegs - at - 1) * sizeof *q->cps);
    q->nsegs--;
    q->mbs[b].nseg--;
    for (size_t i = b + 1; i < q->nmbs; i++)
        q->mbs[i].seg0--;
}

/* ---- targets ---- */

typedef struct mut {
    vl_plan *q;
    const pp_case *c;
    vl_rng *r;
    uint64_t cap_limit;   /* what the strategy writes under the config */
    uint32_t len_limit;
    char what[200];       /* the mutation, for a failure message */
} mut;

static uint64_t pick(mut *x, uint64_t n)
{
    return n ? vl_rng_below(x->r, n) : 0;
}

/* A pack holding segments, or SIZE_MAX. */
static size_t full_pack(mut *x)
{
    for (int t = 0; t < 64; t++) {
        size_t b = pick(x, x->q->nmbs);
        if (x->q->nmbs && x->q->mbs[b].nseg > 0)
            return b;
    }
    return SIZE_MAX;
}

/* Iteration holding pack b. */
static size_t iter_of_pack(const vl_plan *q, size_t b)
{
    for (size_t it = 0; it < q->niters; it++) {
        const vl_iter *in = &q->iters[it];
        const vl_rank *last = &q->ranks[in->rank0 + in->nranks - 1];
        if (in->nranks && b < last->mb0 + last->nmb + last->nbwd)
            return it;
    }
    return q->niters - 1;
}

static int64_t nonzero(mut *x, int64_t lo, int64_t hi)   /* in [lo, hi], not 0 */
{
    int64_t d;

    do
        d = lo + (int64_t)pick(x, (uint64_t)(hi - lo + 1));
    while (d == 0);
    return d;
}

/* ---- the mutations: true when applied, false when skipped ---- */

static bool seg_mut(mut *x, int kind)
{
    size_t b = full_pack(x);
    vl_plan *q = x->q;

    if (b == SIZE_MAX)
        return false;
    uint32_t k = (uint32_t)pick(x, q->mbs[b].nseg);
    vl_seg *s = &q->segs[q->mbs[b].seg0 + k];
    uint32_t L = q->m->len[s->sample];
    snprintf(x->what, sizeof x->what, "pack %zu, segment %u [%u, %u, %u]", b, k, s->sample,
             s->off, s->len);
    if (kind == M_SEG_DROP) {
        remove_seg(q, b, k);
    } else if (kind == M_SEG_DUP) {
        insert_seg(q, b, k + 1, *s);
    } else if (kind == M_SEG_SHIFT) {
        s->off = (uint32_t)((int64_t)s->off + nonzero(x, -(int64_t)s->off, L));
    } else {
        uint32_t len = (uint32_t)(s->len + nonzero(x, 1 - (int64_t)s->len, L));
        q->mbs[b].tokens = q->mbs[b].tokens - s->len + len;
        s->len = len;
    }
    fix_totals(q);
    return true;
}

static bool count_mut(mut *x, int kind)
{
    vl_plan *q = x->q;

    if (kind == M_MB_TOKENS) {
        size_t b = pick(x, q->nmbs);
        if (q->nmbs == 0)
            return false;
        q->mbs[b].tokens += (uint64_t)nonzero(x, -(int64_t)q->mbs[b].tokens, 1000);
        snprintf(x->what, sizeof x->what, "pack %zu tokens %llu", b,
                 (unsigned long long)q->mbs[b].tokens);
        return true;
    }
    if (kind == M_ITER_TOTAL) {
        vl_iter *in = &q->iters[pick(x, q->niters)];
        uint64_t *f = (uint64_t *[]){&in->tokens, &in->loss, &in->samples}[pick(x, 3)];
        *f += (uint64_t)nonzero(x, -(int64_t)*f, 100);
        snprintf(x->what, sizeof x->what, "iteration %zu totals", (size_t)(in - q->iters));
        return q->niters > 0;
    }
    /* M_NMB: a rank whose last forward pack holds tokens */
    vl_rank *rk = &q->ranks[pick(x, q->nranks)];
    if (rk->nmb < 1 || rk->nbwd > 0 || q->mbs[rk->mb0 + rk->nmb - 1].nseg == 0)
        return false;
    rk->nmb--;
    fix_totals(q);
    snprintf(x->what, sizeof x->what, "rank %zu: %u micro-batches", (size_t)(rk - q->ranks),
             rk->nmb);
    return true;
}

/* A degree outside what the config's cluster and model permit. */
static bool degree_mut(mut *x)
{
    const vl_config *cfg = &x->c->cfg;
    vl_rank *rk = &x->q->ranks[pick(x, x->q->nranks)];
    vl_par *par = &rk->par;
    int L = cfg->model.layers, gpus = cfg->cluster.gpus, field = (int)pick(x, 4), v;

    if (field == 0) {
        v = (int)(int[]){0, -1, cfg->model.heads + 1, 2 * gpus * cfg->model.heads}[pick(x, 4)];
        par->tp = v;
    } else if (field == 1) {
        v = (int)(int[]){0, -3, L + 1 + (int)pick(x, 8)}[pick(x, 3)];
        par->pp = v;
    } else if (field == 2) {
        v = (int)(int[]){0, -2, 2 * gpus + (int)pick(x, 2) * 2 * gpus}[pick(x, 3)];
        par->sp = v;
    } else {
        int pp = par->pp < 1 ? 1 : par->pp, stage = L / pp + (L % pp != 0);
        v = pick(x, 4) ? stage + 1 + (int)pick(x, 4) : -1;
        par->ckpt_layers = v;
    }
    snprintf(x->what, sizeof x->what, "rank %zu: %s = %d", (size_t)(rk - x->q->ranks),
             (const char *[]){"tp", "pp", "sp", "ckpt_layers"}[field], v);
    return true;
}

static bool cap_mut(mut *x)
{
    vl_mb *mb = &x->q->mbs[pick(x, x->q->nmbs)];

    if (x->q->nmbs == 0)
        return false;
    if (pick(x, 2) && x->cap_limit > 0 && x->cap_limit < UINT32_MAX)
        mb->cap = (uint32_t)(x->cap_limit + 1 + pick(x, UINT32_MAX - x->cap_limit));
    else if (mb->tokens > 0)
        mb->cap = (uint32_t)(mb->tokens - 1 - pick(x, mb->tokens));
    else
        return false;
    snprintf(x->what, sizeof x->what, "pack %zu: capacity %u (%llu tokens, limit %llu)",
             (size_t)(mb - x->q->mbs), mb->cap, (unsigned long long)mb->tokens,
             (unsigned long long)x->cap_limit);
    return true;
}

static bool epoch_mut(mut *x, int kind)
{
    vl_plan *q = x->q;

    if (kind == M_EPOCHS) {
        uint32_t e = q->epochs;
        q->epochs = (uint32_t)(int64_t)(e + nonzero(x, -(int64_t)e, 3));
        snprintf(x->what, sizeof x->what, "epochs %u -> %u", e, q->epochs);
        return true;
    }
    vl_iter *in = &q->iters[pick(x, q->niters)];
    if (q->niters == 0 || in->tokens == 0)
        return false;
    uint32_t e = in->epoch;
    in->epoch = (uint32_t)(int64_t)(e + nonzero(x, -(int64_t)e, q->epochs + 1));
    snprintf(x->what, sizeof x->what, "iteration %zu: epoch %u -> %u", (size_t)(in - q->iters),
             e, in->epoch);
    return true;
}

/* An oversize sample's dropped range planned instead, in every epoch: appended to a
 * pack of one of the epoch's iterations, the pack's capacity grown to hold it. */
static bool plan_dropped(mut *x)
{
    vl_plan *q = x->q;
    size_t i = pick(x, q->ndrops);
    vl_drop d = q->drops[i];

    memmove(q->drops + i, q->drops + i + 1, (q->ndrops - i - 1) * sizeof *q->drops);
    q->ndrops--;
    for (uint32_t e = 0; e < q->epochs && e < ROOM; e++) {
        size_t b = SIZE_MAX;
        for (int t = 0; t < 256 && b == SIZE_MAX; t++) {
            size_t c = pick(x, q->nmbs);
            if (q->iters[iter_of_pack(q, c)].epoch == e)
                b = c;
        }
        if (b == SIZE_MAX)
            return false;
        insert_seg(q, b, q->mbs[b].nseg, (vl_seg){d.sample, d.off, d.len});
        if (q->mbs[b].tokens > q->mbs[b].cap)
            q->mbs[b].cap = (uint32_t)q->mbs[b].tokens;
    }
    fix_totals(q);
    snprintf(x->what, sizeof x->what, "sample %u [%u, %u) planned instead of dropped", d.sample,
             d.off, d.off + d.len);
    return true;
}

static bool drop_mut(mut *x, int kind)
{
    vl_plan *q = x->q;
    const vl_manifest *m = q->m;

    if (kind == M_DROP_ADD) {   /* a planned sample's tokens, also dropped */
        size_t b = full_pack(x);
        if (b == SIZE_MAX)
            return false;
        vl_seg s = q->segs[q->mbs[b].seg0 + pick(x, q->mbs[b].nseg)];
        bool whole = x->c->cfg.training.oversize != VL_OVERSIZE_TRUNCATE || s.off == 0;
        q->drops[q->ndrops++] = (vl_drop){s.sample, whole ? 0 : s.off,
                                          whole ? m->len[s.sample] : m->len[s.sample] - s.off,
                                          whole ? VL_DROP_OVERSIZE : VL_DROP_TRUNCATED};
        snprintf(x->what, sizeof x->what, "sample %u dropped too", s.sample);
        return true;
    }
    if (q->ndrops == 0)
        return false;
    if (kind == M_DROP_PLANNED)
        return plan_dropped(x);
    size_t i = pick(x, q->ndrops);
    vl_drop *d = &q->drops[i];
    snprintf(x->what, sizeof x->what, "drop %zu [%u, %u, %u]", i, d->sample, d->off, d->len);
    if (kind == M_DROP_REMOVE) {
        memmove(d, d + 1, (q->ndrops - i - 1) * sizeof *d);
        q->ndrops--;
    } else if (kind == M_DROP_RESIZE) {
        if (pick(x, 2))
            d->off = (uint32_t)((int64_t)d->off + nonzero(x, -(int64_t)d->off, d->len));
        else
            d->len = (uint32_t)(d->len + nonzero(x, 1 - (int64_t)d->len, d->len));
    } else {
        d->reason = d->reason == VL_DROP_OVERSIZE ? VL_DROP_TRUNCATED : VL_DROP_OVERSIZE;
    }
    return true;
}

static bool mutate(mut *x, int kind)
{
    switch (kind) {
    case M_SEG_DROP: case M_SEG_DUP: case M_SEG_SHIFT: case M_SEG_RESIZE:
        return seg_mut(x, kind);
    case M_MB_TOKENS: case M_ITER_TOTAL: case M_NMB:
        return count_mut(x, kind);
    case M_DEGREE:
        return degree_mut(x);
    case M_CAP:
        return cap_mut(x);
    case M_EPOCHS: case M_ITER_EPOCH:
        return epoch_mut(x, kind);
    default:
        return drop_mut(x, kind);
    }
}

/* ---- verification, in memory and through a file ---- */

static vl_status verify_mem(const vl_plan *q, const pp_case *c)
{
    vl_cost cost;
    vl_verify_report rep;
    vl_err err = {0};

    cr_assert_eq(vl_cost_init(&cost, &c->cfg, &err), VL_OK, "%s", err.msg);
    return vl_plan_verify(q, &cost, &vl_registry_rules, &rep, &err);
}

/* Rejected through a file: the writer or the reader refuses it, or verify does. */
static bool rejected_via_file(const vl_plan *q, const pp_case *c, const char *path)
{
    vl_verify_report rep;
    vl_err err = {0};

    if (vl_plan_write_file(q, path, &err) != VL_OK)
        return true;
    return pp_verify_file(c, path, &rep, &err) != VL_OK;
}

/* The strategy's capacity limit under c's config, as `plan` binds it. */
static void strategy_limits(const pp_case *c, uint64_t *cap, uint32_t *len)
{
    const vl_strategy *s = c->s;
    void *opts = calloc(1, s->opts_size ? s->opts_size : 1);
    vl_err err = {0};

    cr_assert_not_null(opts);
    if (s->section && s->params)
        cr_assert_eq(vl_config_bind(&c->cfg, s->section, s->params, opts, &err), VL_OK);
    *len = s->max_len(opts, &c->cfg);
    *cap = s->max_cap ? s->max_cap(opts, &c->cfg) : 0;   /* 0: none stated */
    free(opts);
}

/* A valid base plan of strategy si: the first case from seed that plans within memory,
 * with 2..24 iterations and at most 300 packs (verify simulates every iteration of
 * every mutant); base 1 has dropped ranges, base 2 several epochs. */
static uint64_t find_base(size_t si, int base, uint64_t seed, pp_case *c, vl_plan *p)
{
    for (;; seed++) {
        vl_run_opts o = {0};
        vl_run_result rs = {0};
        vl_err err = {0};
        cr_assert_lt(seed, 20000, "no base plan for %s", vl_strategy_at(si)->name);
        cr_assert_eq(pp_make(c, seed, (int)si, &err), VL_OK, "%s", err.msg);
        o.seed = c->cfg.training.seed;
        bool ok = c->m->n <= 400 && vl_run_plan(p, c->s, c->m, &c->cfg, &o, &rs, &err) == VL_OK;
        free(rs.log);
        if (ok && p->niters >= 2 && p->niters <= 24 && p->nmbs <= 300 && rs.oom_iters == 0 &&
            (base != 1 || p->ndrops > 0) && (base != 2 || p->epochs >= 2))
            return seed;
        if (ok)
            vl_plan_free(p);
        pp_free(c);
    }
}

static void mutate_base(size_t si, int base, const char *path, tally *t)
{
    pp_case c;
    vl_plan p;
    uint64_t seed = find_base(si, base, 1 + 1000 * (uint64_t)base, &c, &p);
    mut x = {.c = &c};
    unsigned applied = 0, n = MUTATIONS;
    const char *env = getenv("VLPLAN_MUTATIONS");

    if (env)
        n = (unsigned)strtoul(env, NULL, 10);
    strategy_limits(&c, &x.cap_limit, &x.len_limit);
    cr_assert_eq(verify_mem(&p, &c), VL_OK, "base plan %s", c.desc);
    for (unsigned k = 0; k < n; k++) {
        vl_rng r;
        vl_plan q;
        vl_rng_seed(&r, seed * 1000003 + k, PP_STREAM + si);
        x.r = &r;
        int kind = (int)vl_rng_below(&r, NKINDS);
        clone_plan(&q, &p);
        x.q = &q;
        x.what[0] = '\0';
        t->tried[kind]++;
        if (!mutate(&x, kind)) {
            t->skipped[kind]++;
            vl_plan_free(&q);
            continue;
        }
        if (getenv("VLPLAN_MUTATIONS_TRACE"))   /* the last line names a mutant that hangs */
            fprintf(stderr, "try %s %u %s: %s\n", vl_strategy_at(si)->name, k, KIND[kind],
                    x.what);
        bool rejected = verify_mem(&q, &c) != VL_OK;
        /* (not a degree mutant: the writer lists a rank's tp·sp·pp GPUs, billions here) */
        if (rejected && kind != M_DEGREE && ++applied % FILE_EVERY == 0) {
            rejected = rejected_via_file(&q, &c, path);
            t->via_file++;
        }
        t->rejected[kind] += rejected;
        if (!rejected)
            fprintf(stderr, "NOT REJECTED: %s, base %s, mutation %u (%s: %s)\n",
                    vl_strategy_at(si)->name, c.desc, k, KIND[kind], x.what);
        vl_plan_free(&q);
    }
    if (getenv("VLPLAN_MUTATIONS"))
        fprintf(stderr, "base %s: %u plans, %zu iterations\n", c.desc, n, p.niters);
    vl_plan_free(&p);
    pp_free(&c);
}

Test(mutation, every_meaningful_mutation_is_rejected)
{
    char *dir = tu_tmpdir(), *path = tu_path(dir, "mutated.jsonl");
    tally t;

    memset(&t, 0, sizeof t);
    unsigned tried = 0, rejected = 0, skipped = 0;

    for (size_t si = 0; si < vl_strategy_count(); si++)
        for (int base = 0; base < BASES; base++)
            mutate_base(si, base, path, &t);
    for (int k = 0; k < NKINDS; k++) {
        fprintf(stderr, "mutation: %-48s tried %5u rejected %5u skipped %5u\n", KIND[k],
                t.tried[k], t.rejected[k], t.skipped[k]);
        tried += t.tried[k];
        rejected += t.rejected[k];
        skipped += t.skipped[k];
    }
    fprintf(stderr, "mutation: %zu strategies x %d plans: %u tried, %u rejected (%u of them "
            "also through a file), %u skipped\n", vl_strategy_count(), BASES, tried, rejected,
            t.via_file, skipped);
    cr_assert_eq(rejected + skipped, tried, "%u mutations not rejected (listed above)",
                 tried - rejected - skipped);
    cr_assert_gt(rejected, tried / 2, "most mutations must apply");
    for (int k = 0; k < NKINDS; k++)
        cr_assert_gt(t.rejected[k], 0, "no mutant of kind \"%s\" was made", KIND[k]);
    tu_rmtree(dir);
    free(path);
    free(dir);
}
