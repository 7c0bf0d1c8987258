/* plans/chunkflow/chunkflow_fit.c -- ChunkFlow's memory guarantee: every global batch is
 * planned into a scratch plan and simulated (the simulator is the verifier's memory
 * model, so what passes here passes `verify`) before it goes out; a batch over device
 * memory is planned again with a smaller K, then smaller chunks, then (under
 * training.recompute=auto) every layer checkpointed, and when nothing fits the plan
 * fails naming the batch, its longest sample, the least demanding try and what would
 * fit. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chunkflow_impl.h"

#define GIB 1073741824.0
#define MIN_CHUNK 1024u /* the smallest chunk a fallback tries, tokens */

/* The K grid (paper §5 and Table 4: 1..16, with the paper's 6). */
const uint32_t vl__cf_grid_k[] = {1, 2, 3, 4, 6, 8, 12, 16};
const size_t vl__cf_ngrid_k = sizeof vl__cf_grid_k / sizeof vl__cf_grid_k[0];

vl_status vl__cf_fit_init(vl_cf_fit *f, const vl_job *job, vl_manifest *m, vl_err *err)
{
    vl_status st;

    memset(f, 0, sizeof *f);
    f->job = job;
    if ((st = vl_plan_init(&f->scratch, m, "chunkflow", job->seed, err)) != VL_OK)
        return st;
    return vl_sim_scratch_new(&f->ss, err);
}

void vl__cf_fit_free(vl_cf_fit *f)
{
    vl_plan_free(&f->scratch);
    vl_sim_scratch_free(f->ss);
    memset(f, 0, sizeof *f);
}

/* Plan the batch with s into the scratch plan (the work's statistics untouched) and
 * simulate it: *r gets the simulator's verdict. */
vl_status vl__cf_try(vl_cf_fit *f, vl_cf_work *w, const vl_cf_setting *s,
                     const uint32_t *samples, size_t n, vl_sim_iter_result *r, vl_err *err)
{
    vl_cf_work saved = *w;
    vl_status st;

    vl_plan_clear_iters(&f->scratch, 0);
    st = vl__cf_plan_batch(w, s, f->job->cost, samples, n, f->job->sel->len, 0, &f->scratch,
                           err);
    /* only the counters: the buffers may have grown */
    w->stat_chunks = saved.stat_chunks;
    w->stat_dependent = saved.stat_dependent;
    w->stat_samples_split = saved.stat_samples_split;
    w->stat_recompute = saved.stat_recompute;
    w->stat_cuts = saved.stat_cuts;
    w->stat_empty = saved.stat_empty;
    if (st != VL_OK)
        return st;
    return vl_sim_iter(&f->scratch, 0, f->job->cost, NULL, r, f->ss, NULL, err);
}

/* The fallback settings after s, in the order tried: each smaller K of the grid at s's
 * chunk; then halved chunks down to MIN_CHUNK at K = 1; then, when training.recompute
 * is auto and s does not already checkpoint every layer, the same with every layer
 * checkpointed.  Writes at most cap and returns the count. */
static size_t ladder(const vl_cf_setting *s, const vl_config *cfg, vl_cf_setting *out,
                     size_t cap)
{
    size_t n = 0;
    bool ck =
        cfg->training.recompute == VL_RECOMPUTE_AUTO && s->par.ckpt_layers < s->stage_layers;

    for (int pass = 0; pass < (ck ? 2 : 1); pass++) {
        vl_cf_setting t = *s;
        if (pass == 1)
            t.par.ckpt_layers = s->stage_layers;
        for (size_t i = vl__cf_ngrid_k; i-- > 0 && n < cap;) {
            t.k = vl__cf_grid_k[i];
            if (t.k < s->k || (pass == 1 && t.k == s->k))
                out[n++] = t;
        }
        t.k = 1;
        for (t.chunk = s->chunk / 2; t.chunk >= MIN_CHUNK && n < cap; t.chunk /= 2)
            out[n++] = t;
    }
    return n;
}

static uint32_t longest(const uint32_t *samples, size_t n, const uint32_t *len)
{
    uint32_t most = 0;

    for (size_t i = 0; i < n; i++)
        most = len[samples[i]] > most ? len[samples[i]] : most;
    return most;
}

int vl__cf_wider_sp(vl_cf_fit *f, vl_cf_work *w, const vl_cf_setting *t,
                    const uint32_t *samples, size_t n)
{
    const vl_config *cfg = f->job->cfg;
    const vl_training_cfg *tr = &cfg->training;
    vl_sim_iter_result r;
    vl_err e2;

    for (int sp = t->par.sp * 2; (long)sp * tr->tp * t->par.pp <= cfg->cluster.gpus; sp *= 2) {
        vl_cf_setting u = *t;
        long per = (long)sp * tr->tp * t->par.pp;
        if (cfg->cluster.gpus % per != 0 ||
            (tr->sp_kind == VL_SP_ULYSSES &&
             (cfg->model.heads % sp != 0 || cfg->model.kv_heads % sp != 0)))
            continue;
        u.par.sp = sp;
        u.dp = (int)(cfg->cluster.gpus / per);
        if (vl__cf_try(f, w, &u, samples, n, &r, &e2) == VL_OK && !r.oom)
            return sp;
    }
    return 0;
}

static vl_status none_fits(vl_cf_fit *f, vl_cf_work *w, const vl_cf_setting *s,
                           const vl_cf_setting *low, const vl_sim_iter_result *lr,
                           const uint32_t *samples, size_t n, size_t batch, vl_err *err)
{
    const vl_config *cfg = f->job->cfg;
    int sp = vl__cf_wider_sp(f, w, low, samples, n);
    char hint[160] = "";

    if (sp > 0)
        snprintf(hint, sizeof hint,
                 "; training.sp=%d would fit (chunk_size=%u k=%u, %d "
                 "checkpointed layers)",
                 sp, low->chunk, low->k, low->par.ckpt_layers);
    else if (cfg->training.recompute != VL_RECOMPUTE_AUTO &&
             cfg->training.recompute != VL_RECOMPUTE_FULL)
        snprintf(hint, sizeof hint, "; training.recompute=auto may fit (checkpointing)");
    return vl_seterr(err, VL_EINFEASIBLE,
                     "chunkflow: global batch %zu (%zu samples, longest %u tokens) does not "
                     "fit device memory with chunk_size=%u k=%u nor any smaller K or chunk "
                     "down to %u%s: the least demanding, chunk_size=%u k=%u with %d "
                     "checkpointed layers, peaks at %.2f GiB (rank %u, stage %u), %.2f GiB "
                     "usable%s",
                     batch, n, longest(samples, n, f->job->sel->len), s->chunk, s->k,
                     MIN_CHUNK,
                     cfg->training.recompute == VL_RECOMPUTE_AUTO ? " or every layer "
                                                                    "checkpointed"
                                                                  : "",
                     low->chunk, low->k, low->par.ckpt_layers, lr->peak_mem_gib, lr->peak_rank,
                     lr->peak_stage, vl_cost_mem_capacity(f->job->cost) / GIB, hint);
}

vl_status vl__cf_plan_fit(vl_cf_fit *f, vl_cf_work *w, const vl_cf_setting *s,
                          const uint32_t *samples, size_t n, uint32_t epoch, size_t batch,
                          vl_plan *out, vl_err *err)
{
    vl_cf_setting lad[48], low = *s;
    vl_sim_iter_result r, lr;
    size_t nl = 0;
    vl_status st = vl__cf_try(f, w, s, samples, n, &r, err);
    double first = r.peak_mem_gib;

    lr = r;
    for (size_t i = 0; st == VL_OK && r.oom; i++) {
        if (i == 0)
            nl = ladder(s, f->job->cfg, lad, sizeof lad / sizeof lad[0]);
        if (i == nl)
            return none_fits(f, w, s, &low, &lr, samples, n, batch, err);
        if ((st = vl__cf_try(f, w, &lad[i], samples, n, &r, err)) != VL_OK)
            break;
        if (r.peak_mem_gib < lr.peak_mem_gib) {
            low = lad[i];
            lr = r;
        }
        if (!r.oom) {
            f->fallbacks++;
            vl_job_log(f->job,
                       "chunkflow: batch %zu of epoch %u peaks at %.2f GiB with "
                       "chunk_size=%u k=%u, over %.2f GiB usable: planned with "
                       "chunk_size=%u k=%u, %d checkpointed layers (%.2f GiB)\n",
                       batch, epoch, first, s->chunk, s->k,
                       vl_cost_mem_capacity(f->job->cost) / GIB, lad[i].chunk, lad[i].k,
                       lad[i].par.ckpt_layers, r.peak_mem_gib);
            s = &lad[i];
        }
    }
    if (st != VL_OK)
        return st;
    /* the construction in w is for s: emit it for real, and count its split samples
     * (vl__cf_try left the counters as they were) */
    for (size_t g = 0; g < w->ngroups; g++)
        w->stat_samples_split += w->groups[g].dependent;
    return vl__cf_emit(w, s, epoch, out, err);
}
