/* plans/hbp/hbp_groups.c -- HBP's hierarchical group auto-selection (paper Alg. 1, 3, 4 and
 * appendices F, I) on vlplan's cost model, or on measured profile rows: which packing
 * lengths to use, and each group's SP degree and checkpointed layers. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hbp_impl.h"

#define MAX_SEGS 4096 /* representative pack: at most this many segments */
#define GIB 1073741824.0

/* ---- the -v log ---------------------------------------------------------------------- */

void vl__hbp_logf(hbp_log *lg, const char *fmt, ...)
{
    va_list ap;

    if (!lg->job)
        return;
    va_start(ap, fmt);
    vl_job_vlog(lg->job, fmt, ap);
    va_end(ap);
}

/* ---- one configuration (length, sp, ckpt) on the cost model -------------------------- */

typedef struct eval {
    const hbp_sel_in *in;
    int L, layers0, layersl; /* model layers; on the first / last pipeline stage */
} eval;

typedef struct row {
    uint32_t len;
    int sp, ckpt; /* ckpt < 0: does not fit even with every layer recomputed */
    int mem_ckpt; /* checkpointed layers `mem` was modelled with */
    int ranks;
    uint32_t mbs;
    double mem; /* bytes on the fullest device at that ckpt */
    double spm; /* cluster seconds per million tokens */
} row;

bool vl__hbp_sp_ok(const vl_config *cfg, int sp)
{
    const vl_training_cfg *t = &cfg->training;
    long per = (long)sp * t->tp * t->pp;

    if (sp < 1 || per > cfg->cluster.gpus || cfg->cluster.gpus % per != 0)
        return false;
    /* Ulysses scatters each TP shard's heads over the SP ranks (as training.sp requires:
     * tp·sp divides the heads); ring passes KV blocks and does not. */
    return t->sp_kind != VL_SP_ULYSSES ||
           (cfg->model.kv_heads % sp == 0 && cfg->model.heads % ((long)t->tp * sp) == 0);
}

/* Fewest checkpointed layers that fit (Alg. 4 measures two points and extrapolates the
 * memory line; the cost model gives the line exactly), or -1; r->mem is the memory at
 * the count chosen (every layer when nothing fits). */
static int fewest_ckpt(const eval *e, row *r, vl_par *par)
{
    const vl_cost *c = e->in->cost;
    int k = vl_cost_fewest_ckpt(c, r->len, par, r->ranks, r->mbs);

    par->ckpt_layers = k < 0 ? e->layers0 : k;
    r->mem_ckpt = par->ckpt_layers;
    r->mem = vl_cost_rank_peak_bytes(c, r->len, par, r->ranks, r->mbs);
    return k;
}

/* A pack of l tokens cut into segments of s (the content's attention-weighted mean
 * length), so Σ tokens and Σ len² match what packing that content would give. */
static size_t rep_pack(vl_seg *segs, uint32_t l, double s)
{
    uint32_t w = s < 1 ? 1 : s > l ? l : (uint32_t)(s + 0.5);
    size_t k = 0;

    if ((uint64_t)l / w > MAX_SEGS - 1)
        w = (uint32_t)((l + MAX_SEGS - 2) / (MAX_SEGS - 1));
    for (uint32_t off = 0; off < l; off += w)
        segs[k++] = (vl_seg){0, 0, l - off < w ? l - off : w};
    return k;
}

/* Wall seconds per million tokens: one iteration (a rank's micro-batches, the ranks run
 * in parallel, plus the exposed gradient synchronisation) over all its tokens. */
static double s_per_mtok(const eval *e, const row *r, const vl_par *par, double s)
{
    const vl_cost *c = e->in->cost;
    vl_seg segs[MAX_SEGS];
    size_t n = rep_pack(segs, r->len, s);
    vl_mb_time t0 = vl_cost_mb_time(c, segs, n, par, e->layers0, par->pp == 1);
    double t = t0.fwd + t0.bwd;

    if (par->pp > 1) {
        vl_mb_time t1 = vl_cost_mb_time(c, segs, n, par, e->layersl, 1);
        if (t1.fwd + t1.bwd > t)
            t = t1.fwd + t1.bwd;
    }
    /* Pipeline fill/drain is ignored: it is the same fraction for every candidate. */
    double it = t * r->mbs + vl_cost_dp_sync_time(c, par, r->ranks, e->layers0);
    return it * 1e6 / ((double)r->ranks * r->mbs * r->len);
}

static void row_init(const eval *e, row *r, uint32_t l, int sp, vl_par *par)
{
    const vl_training_cfg *t = &e->in->cfg->training;
    uint64_t per;

    *par = (vl_par){.tp = t->tp, .pp = t->pp, .sp = sp, .ckpt_layers = 0};
    r->len = l;
    r->sp = sp;
    r->ranks = e->in->cfg->cluster.gpus / (sp * t->tp * t->pp);
    per = (uint64_t)l * (uint64_t)r->ranks;
    r->mbs = e->in->budget / per > 1 ? (uint32_t)(e->in->budget / per) : 1;
}

/* Configuration (l, sp) with ckpt fixed (≥ 0) or the fewest that fits (HBP_AUTO).
 * Under training.recompute = full the cost model recomputes every layer whatever the
 * plan says, so the plan says so too. */
static void eval_row(const eval *e, row *r, uint32_t l, int sp, int ckpt, double s)
{
    vl_par par;

    if (e->in->cfg->training.recompute == VL_RECOMPUTE_FULL)
        ckpt = e->layers0;
    row_init(e, r, l, sp, &par);
    if (ckpt == HBP_AUTO) {
        r->ckpt = fewest_ckpt(e, r, &par);
    } else {
        par.ckpt_layers = r->mem_ckpt = ckpt;
        r->mem = vl_cost_rank_peak_bytes(e->in->cost, l, &par, r->ranks, r->mbs);
        r->ckpt = r->mem <= vl_cost_mem_capacity(e->in->cost) ? ckpt : -1;
    }
    r->spm = r->ckpt >= 0 ? s_per_mtok(e, r, &par, s) : 0;
}

/* ---- content: what a pack of each length would hold ------------------------------- */

/* Attention-weighted mean length Σ len² / Σ len of the samples in (lo, hi], or 0. */
static double content_len(const hbp_sel_in *in, uint32_t lo, uint32_t hi)
{
    double s1 = 0, s2 = 0;

    for (size_t i = 0; i < in->n; i++) {
        uint32_t l = in->len[in->idx[i]];
        if (l > lo && l <= hi) {
            s1 += l;
            s2 += (double)l * l;
        }
    }
    return s1 > 0 ? s2 / s1 : 0;
}

/* ---- FindBestSpCkpt (Alg. 3) ------------------------------------------------------- */

typedef struct table {
    row r[(HBP_MAX_GROUPS + 1) * HBP_MAX_GROUPS]; /* lengths (+ max_seq_len) x degrees */
    size_t n;
} table;

/* Best sp for length l over the degrees sps (ties: smaller sp); rows go to tb when
 * non-NULL.  Returns false when no degree fits; then *best is the least demanding row
 * tried (smallest memory; len 0 when no degree was usable), for the message. */
static bool best_row(const eval *e, const hbp_spec *sps, size_t nsp, uint32_t l, int ckpt,
                     double s, row *best, table *tb)
{
    bool found = false;
    row least = {.len = 0};

    for (size_t i = 0; i < nsp; i++) {
        row r;
        if (!vl__hbp_sp_ok(e->in->cfg, sps[i].sp) || (uint32_t)sps[i].sp > l)
            continue;
        eval_row(e, &r, l, sps[i].sp, ckpt, s);
        if (tb != NULL && tb->n < sizeof tb->r / sizeof tb->r[0])
            tb->r[tb->n++] = r;
        if (r.ckpt >= 0 && (!found || r.spm < best->spm)) {
            *best = r;
            found = true;
        }
        if (least.len == 0 || r.mem < least.mem)
            least = r;
    }
    if (!found)
        *best = least;
    return found;
}

/* Why length l fits with none of the degrees: the figures of the least demanding one
 * tried (r from best_row), as `what` names the set of degrees. */
static vl_status no_fit(const eval *e, uint32_t l, const row *r, const char *what, vl_err *err)
{
    if (r->len == 0)
        return vl_seterr(err, VL_EINFEASIBLE,
                         "hbp: %s has no degree usable for a %u-token pack with %d GPUs, tp "
                         "%d, pp %d",
                         what, l, e->in->cfg->cluster.gpus, e->in->cfg->training.tp,
                         e->in->cfg->training.pp);
    return vl_seterr(err, VL_EINFEASIBLE,
                     "hbp: no SP degree of %s fits a %u-token pack in memory: the least "
                     "demanding, sp %d with %d of %d layers checkpointed (%d ranks x %u "
                     "micro-batches), needs %.1f GiB per GPU, %.1f GiB usable",
                     what, l, r->sp, r->mem_ckpt, e->layers0, r->ranks, r->mbs, r->mem / GIB,
                     vl_cost_mem_capacity(e->in->cost) / GIB);
}

static void set_group(hbp_group *g, const eval *e, const row *r)
{
    const vl_training_cfg *t = &e->in->cfg->training;

    g->len = r->len;
    g->par = (vl_par){.tp = t->tp, .pp = t->pp, .sp = r->sp, .ckpt_layers = r->ckpt};
    g->ranks = r->ranks;
    g->mbs = r->mbs;
    g->s_per_mtok = r->spm;
}

static void log_table(hbp_log *lg, const table *tb, uint32_t best_len, int best_sp)
{
    vl__hbp_logf(lg, "hbp:      len   sp  ckpt  ranks  mbs   mem_GiB    s/Mtok\n");
    for (size_t i = 0; i < tb->n; i++) {
        const row *r = &tb->r[i];
        if (r->ckpt < 0) {
            vl__hbp_logf(lg, "hbp: %8u %4d     -  %5d %4u  %8.2f   (does not fit)\n", r->len,
                         r->sp, r->ranks, r->mbs, r->mem / GIB);
            continue;
        }
        vl__hbp_logf(lg, "hbp: %8u %4d  %4d  %5d %4u  %8.2f  %8.4f%s\n", r->len, r->sp,
                     r->ckpt, r->ranks, r->mbs, r->mem / GIB, r->spm,
                     r->len == best_len && r->sp == best_sp ? "  <- best" : "");
    }
}

/* ---- stage 2 ------------------------------------------------------------------------- */

/* Lp = [l1, l_best, l2, l_max] when l2 > l_best, else [l1, l_best, l_max]; ascending,
 * duplicates merged (the paper's "merged into the l_best range"). */
static size_t stage2(uint32_t *lp, const row *best, const row *max)
{
    uint32_t l1 = best->len / (uint32_t)best->sp, l2 = max->len / (uint32_t)max->sp;
    size_t n = 0, k = 0;

    lp[n++] = l1;
    lp[n++] = best->len;
    if (l2 > best->len)
        lp[n++] = l2;
    lp[n++] = max->len;
    vl_sort_u32(lp, n);
    for (size_t i = 0; i < n; i++)
        if (i == 0 || lp[i] != lp[k - 1])
            lp[k++] = lp[i];
    return k;
}

/* The lengths of stage 1: hbp.candidates below training.max_seq_len, then max_seq_len
 * itself (l_max must hold the longest sample). */
static size_t stage1_lengths(uint32_t *out, const hbp_spec *c, size_t nc, uint32_t maxlen)
{
    size_t n = 0;

    for (size_t i = 0; i < nc; i++)
        if (c[i].len < maxlen)
            out[n++] = c[i].len;
    vl_sort_u32(out, n);
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (k == 0 || out[i] != out[k - 1])
            out[k++] = out[i];
    out[k++] = maxlen;
    return k;
}

/* ---- analytic selection ------------------------------------------------------------ */

typedef struct lists {
    hbp_spec cand[HBP_MAX_GROUPS], sps[HBP_MAX_GROUPS];
    size_t ncand, nsp;
} lists;

static vl_status parse_lists(lists *ls, const hbp_opts *o, vl_err *err)
{
    char why[128];

    if (vl__hbp_parse_list(o->candidates, false, ls->cand, HBP_MAX_GROUPS, &ls->ncand, why,
                           sizeof why) != 0)
        return vl_seterr(err, VL_ECONFIG, "hbp.candidates: %s", why);
    if (vl__hbp_parse_list(o->sp_degrees, false, ls->sps, HBP_MAX_GROUPS, &ls->nsp, why,
                           sizeof why) != 0)
        return vl_seterr(err, VL_ECONFIG, "hbp.sp_degrees: %s", why);
    for (size_t i = 0; i < ls->nsp; i++) /* the list holds degrees, not lengths */
        ls->sps[i].sp = (int)ls->sps[i].len;
    return VL_OK;
}

/* Stage 1: best (sp, ckpt) per candidate length on a common content, argmin over
 * lengths.  *best and *max receive l_best's and l_max's rows. */
static vl_status stage1(const eval *e, const lists *ls, row *best, row *max, hbp_log *lg,
                        vl_err *err)
{
    uint32_t lens[HBP_MAX_GROUPS + 1];
    size_t nl = stage1_lengths(lens, ls->cand, ls->ncand, e->in->cfg->training.max_seq_len);
    double s = 0;
    table tb = {.n = 0};
    bool any = false;

    /* One content for every length, the samples the shortest candidate can hold, so the
     * comparison measures the parallel configuration and not the data each length
     * admits (longer packs would otherwise look slow for holding longer samples). */
    uint32_t lo_len = lens[0];
    for (size_t i = 0; i < nl && s == 0; i++)
        s = content_len(e->in, 0, (lo_len = lens[i]));
    if (s == 0)
        s = lens[0];
    vl__hbp_logf(lg,
                 "hbp: stage 1: content = samples of at most %u tokens, "
                 "attention-weighted length %.0f\n",
                 lo_len, s);
    bool fits_max = false;
    row r;
    for (size_t i = 0; i < nl; i++) {
        fits_max = best_row(e, ls->sps, ls->nsp, lens[i], HBP_AUTO, s, &r, &tb);
        if (!fits_max)
            continue;
        if (!any || r.spm < best->spm)
            *best = r;
        any = true;
        if (i == nl - 1)
            *max = r;
    }
    log_table(lg, &tb, any ? best->len : 0, any ? best->sp : 0);
    if (!fits_max) /* r: the least demanding degree tried for l_max */
        return no_fit(e, lens[nl - 1], &r, "hbp.sp_degrees", err);
    return VL_OK;
}

/* The degree a final group of length l runs at: stage 1's for l_best and l_max; SP 1
 * for the lengths stage 2 derives (l1 = l_best/sp_best, l2 = l_max/sp_max), which is
 * why they exist: the paper's "ensuring no communication overhead".  0: none fixed. */
static int paper_sp(uint32_t l, const row *best, const row *max)
{
    if (l == max->len)
        return max->sp;
    if (l == best->len)
        return best->sp;
    return 1;
}

/* The final groups, each on its own content (l_{i-1}, l_i], at the paper's degree
 * (hbp.stage2_sp=one) or at the degree fastest for that content (free); the fewest
 * checkpointed layers that fit either way.  A paper degree that does not fit (model
 * states shard over fewer ranks at SP 1) falls back to the fastest that does, logged. */
static vl_status finish(hbp_groups *out, const eval *e, const lists *ls, const uint32_t *lp,
                        size_t n, const row *best, const row *max, bool free_sp, hbp_log *lg,
                        vl_err *err)
{
    out->n = 0;
    for (size_t i = 0; i < n; i++) {
        double s = content_len(e->in, i ? lp[i - 1] : 0, lp[i]);
        hbp_spec one = {.len = 0, .sp = paper_sp(lp[i], best, max), .ckpt = 0};
        row r;
        if (s <= 0)
            s = lp[i];
        bool ok = !free_sp && best_row(e, &one, 1, lp[i], HBP_AUTO, s, &r, NULL);
        if (!ok && !free_sp)
            vl__hbp_logf(lg,
                         "hbp: group %u: sp %d does not fit, taking the fastest degree "
                         "that does\n",
                         lp[i], one.sp);
        if (!ok && !best_row(e, ls->sps, ls->nsp, lp[i], HBP_AUTO, s, &r, NULL))
            return no_fit(e, lp[i], &r, "hbp.sp_degrees", err);
        set_group(&out->g[out->n++], e, &r);
    }
    return VL_OK;
}

static vl_status select_analytic(hbp_groups *out, const eval *e, const hbp_opts *o,
                                 hbp_log *lg, vl_err *err)
{
    lists ls;
    row best = {0}, max = {0};
    uint32_t lp[4];
    vl_status st;

    if ((st = parse_lists(&ls, o, err)) != VL_OK ||
        (st = stage1(e, &ls, &best, &max, lg, err)) != VL_OK)
        return st;
    size_t n = stage2(lp, &best, &max);
    vl__hbp_logf(lg,
                 "hbp: stage 2: l_best %u (sp %d), l_max %u (sp %d): l1 = %u, l2 = %u; "
                 "%s\n",
                 best.len, best.sp, max.len, max.sp, best.len / (uint32_t)best.sp,
                 max.len / (uint32_t)max.sp,
                 o->stage2_sp == HBP_STAGE2_FREE
                     ? "every group at its fastest degree (hbp.stage2_sp=free)"
                     : "l1 and l2 at sp 1, l_best and l_max at their stage-1 degrees");
    return finish(out, e, &ls, lp, n, &best, &max, o->stage2_sp == HBP_STAGE2_FREE, lg, err);
}

/* ---- measured profile ------------------------------------------------------------- */

/* Best measured row of length l at degree sp (0: any degree; ties: smaller sp, then
 * fewer checkpointed layers). */
static const hbp_prof *prof_best_sp(const hbp_sel_in *in, uint32_t l, int sp)
{
    const hbp_prof *b = NULL;

    for (size_t i = 0; i < in->nprof; i++) {
        const hbp_prof *p = &in->prof[i];
        if (p->len != l || (sp > 0 && p->sp != sp))
            continue;
        bool tie = b != NULL && p->time_s == b->time_s;
        if (b == NULL || p->time_s < b->time_s ||
            (tie && (p->sp < b->sp || (p->sp == b->sp && p->ckpt < b->ckpt))))
            b = p;
    }
    return b;
}

static const hbp_prof *prof_best(const hbp_sel_in *in, uint32_t l)
{
    return prof_best_sp(in, l, 0);
}

static void prof_row(const eval *e, row *r, const hbp_prof *p, uint32_t l, int sp, int ckpt)
{
    vl_par par;

    row_init(e, r, l, p ? p->sp : sp, &par);
    r->ckpt = p ? p->ckpt : ckpt;
    par.ckpt_layers = r->ckpt;
    r->mem = vl_cost_rank_peak_bytes(e->in->cost, l, &par, r->ranks, r->mbs);
    r->spm = p ? p->time_s : 0; /* seconds per iteration, comparable across rows */
}

static vl_status select_profile(hbp_groups *out, const eval *e, bool free_sp, hbp_log *lg,
                                vl_err *err)
{
    const hbp_sel_in *in = e->in;
    uint32_t maxlen = in->cfg->training.max_seq_len, lp[4];
    row best = {0}, max = {0};
    bool any = false;

    for (size_t i = 0; i < in->nprof; i++) {
        const hbp_prof *p = &in->prof[i];
        if (p->len > maxlen || prof_best(in, p->len) != p)
            continue;
        vl__hbp_logf(lg, "hbp: profile best for %u: sp %d, ckpt %d, %.4g s\n", p->len, p->sp,
                     p->ckpt, p->time_s);
        if (!any || p->time_s < best.spm || (p->time_s == best.spm && p->len < best.len))
            prof_row(e, &best, p, p->len, 0, 0);
        any = true;
    }
    const hbp_prof *pm = prof_best(in, maxlen);
    if (!any || pm == NULL)
        return vl_seterr(err, VL_ECONFIG,
                         "hbp.profile: no row with len = training.max_seq_len (%u)", maxlen);
    prof_row(e, &max, pm, maxlen, 0, 0);
    size_t n = stage2(lp, &best, &max);
    out->n = 0;
    for (size_t i = 0; i < n; i++) {
        /* An unprofiled length is l1 or l2: a parent's per-GPU share, so SP 1 with the
         * parent's checkpointing holds the same tokens per device.  A derived length
         * with rows takes its fastest SP 1 row (hbp.stage2_sp=one), or its fastest. */
        int ckpt = (uint64_t)lp[i] * (uint64_t)best.sp == best.len ? best.ckpt : max.ckpt;
        bool derived = lp[i] != best.len && lp[i] != max.len;
        row r;
        prof_row(e, &r, prof_best_sp(in, lp[i], derived && !free_sp ? 1 : 0), lp[i], 1, ckpt);
        r.spm = 0; /* measured seconds per iteration, not the model's s/Mtok */
        set_group(&out->g[out->n++], e, &r);
    }
    vl__hbp_logf(lg, "hbp: stage 2: l_best %u (sp %d), l_max %u (sp %d)\n", best.len, best.sp,
                 max.len, max.sp);
    return VL_OK;
}

vl_status vl__hbp_profile_check(const hbp_prof *rows, size_t n, const vl_config *cfg,
                                vl_err *err)
{
    int pp = cfg->training.pp, layers0 = (cfg->model.layers + pp - 1) / pp;

    for (size_t i = 0; i < n; i++) {
        const hbp_prof *p = &rows[i];
        if (p->len < 1)
            return vl_seterr(err, VL_ECONFIG,
                             "hbp.profile[%zu].len: expected at least 1, got %u", i, p->len);
        if (!vl__hbp_sp_ok(cfg, p->sp))
            return vl_seterr(err, VL_ECONFIG,
                             "hbp.profile[%zu].sp: %d is not usable with %d GPUs, tp %d, "
                             "pp %d and %d KV heads",
                             i, p->sp, cfg->cluster.gpus, cfg->training.tp, pp,
                             cfg->model.kv_heads);
        if (p->ckpt < 0 || p->ckpt > layers0)
            return vl_seterr(err, VL_ECONFIG,
                             "hbp.profile[%zu].ckpt_layers: expected 0..%d, got %d", i,
                             layers0, p->ckpt);
        if (!(p->time_s > 0))
            return vl_seterr(err, VL_ECONFIG, "hbp.profile[%zu].time_s: expected > 0", i);
    }
    return VL_OK;
}

static bool is_int_in(double v, double lo, double hi)
{
    return v >= lo && v <= hi && v == (double)(long long)v;
}

vl_status vl__hbp_profile_rows(hbp_prof **out, const double *v, size_t nrows,
                               const vl_config *cfg, vl_err *err)
{
    static const char *const col[] = {"len", "sp", "ckpt_layers"};
    hbp_prof *p;
    vl_status st;

    *out = NULL;
    for (size_t i = 0; i < nrows; i++)
        for (int c = 0; c < 3; c++)
            if (!is_int_in(v[4 * i + c], c == 2 ? 0 : 1, c == 0 ? VL_MAX_SAMPLE_LEN : 1e6))
                return vl_seterr(err, VL_ECONFIG,
                                 "hbp.profile[%zu].%s: expected a %s integer, got %g", i,
                                 col[c], c == 2 ? "non-negative" : "positive", v[4 * i + c]);
    if ((p = malloc((nrows ? nrows : 1) * sizeof *p)) == NULL)
        return vl_seterr(err, VL_ENOMEM, "out of memory for %zu profile rows", nrows);
    for (size_t i = 0; i < nrows; i++)
        p[i] =
            (hbp_prof){(uint32_t)v[4 * i], (int)v[4 * i + 1], (int)v[4 * i + 2], v[4 * i + 3]};
    if ((st = vl__hbp_profile_check(p, nrows, cfg, err)) != VL_OK) {
        free(p);
        return st;
    }
    *out = p;
    return VL_OK;
}

/* ---- manual groups ---------------------------------------------------------------- */

static vl_status select_manual(hbp_groups *out, const eval *e, const hbp_opts *o, vl_err *err)
{
    hbp_spec gs[HBP_MAX_GROUPS];
    lists ls;
    size_t n;
    char why[128];
    vl_status st;

    if (vl__hbp_parse_list(o->groups, true, gs, HBP_MAX_GROUPS, &n, why, sizeof why) != 0)
        return vl_seterr(err, VL_ECONFIG, "hbp.groups: %s", why);
    if ((st = parse_lists(&ls, o, err)) != VL_OK)
        return st;
    out->n = 0;
    for (size_t i = 0; i < n; i++) {
        double s = content_len(e->in, i ? gs[i - 1].len : 0, gs[i].len);
        hbp_spec one = {.len = 0, .sp = gs[i].sp, .ckpt = 0};
        row r;
        if (s == 0)
            s = gs[i].len;
        bool ok = gs[i].sp == HBP_AUTO
                      ? best_row(e, ls.sps, ls.nsp, gs[i].len, gs[i].ckpt, s, &r, NULL)
                      : best_row(e, &one, 1, gs[i].len, gs[i].ckpt, s, &r, NULL);
        if (!ok && r.len == 0)
            return no_fit(e, gs[i].len, &r,
                          gs[i].sp == HBP_AUTO ? "hbp.sp_degrees" : "the hbp.groups entry",
                          err);
        if (!ok)
            return vl_seterr(err, VL_EINFEASIBLE,
                             "hbp.groups: %u tokens do not fit in memory with %s: sp %d "
                             "with %d of %d layers checkpointed (%d ranks x %u "
                             "micro-batches), needs %.1f GiB per GPU, %.1f GiB usable",
                             gs[i].len,
                             gs[i].sp == HBP_AUTO ? "any SP degree of hbp.sp_degrees, the "
                                                    "least demanding being"
                                                  : "the given SP degree",
                             r.sp, r.mem_ckpt, e->layers0, r.ranks, r.mbs, r.mem / GIB,
                             vl_cost_mem_capacity(e->in->cost) / GIB);
        set_group(&out->g[out->n++], e, &r);
    }
    return VL_OK;
}

vl_status vl__hbp_select(hbp_groups *out, const hbp_opts *o, const hbp_sel_in *in, hbp_log *lg,
                         vl_err *err)
{
    const vl_config *cfg = in->cfg;
    int pp = cfg->training.pp;
    eval e = {.in = in, .L = cfg->model.layers};
    vl_status st;

    e.layers0 = (e.L + pp - 1) / pp; /* the first stages take the extra layers */
    e.layersl = e.L / pp;
    if (strcmp(o->groups, "auto") != 0)
        st = select_manual(out, &e, o, err);
    else if (in->nprof > 0)
        st = select_profile(out, &e, o->stage2_sp == HBP_STAGE2_FREE, lg, err);
    else
        st = select_analytic(out, &e, o, lg, err);
    for (size_t i = 0; st == VL_OK && i < out->n; i++) {
        const hbp_group *g = &out->g[i];
        vl__hbp_logf(lg, "hbp: group %zu: len %u, sp %d, ckpt_layers %d, %d ranks x %u mbs", i,
                     g->len, g->par.sp, g->par.ckpt_layers, g->ranks, g->mbs);
        if (g->s_per_mtok > 0)
            vl__hbp_logf(lg, ", %.4f s/Mtok", g->s_per_mtok);
        vl__hbp_logf(lg, "\n");
    }
    return st;
}
