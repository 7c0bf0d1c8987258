/* plans/chunkflow/chunkflow_search.c -- ChunkFlow's grid search over (ChunkSize, K) (paper
 * §5): plan the first epoch's worst global batches (the longest sample, the most tokens)
 * and a spread of others with each candidate, simulate them, drop candidates out of
 * device memory on any, keep the fastest; and the -v log it leaves in job->log. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chunkflow_impl.h"

#define GIB 1073741824.0

/* The paper's chunk sizes (§5, Tables 4 and 6): 2K..32K tokens. */
static const uint32_t grid_chunk[] = {VL_CF_GRID_CHUNK_MIN, 4096, 8192, 16384,
                                      VL_CF_GRID_CHUNK_MAX};
#define NCHUNK (sizeof grid_chunk / sizeof grid_chunk[0])

typedef struct cand_result {
    double iter_ms;  /* mean simulated iteration time over the judged batches */
    double peak_gib; /* worst peak memory over them */
    bool oom;
} cand_result;

/* The batches a candidate is judged on, ascending, without repeats. */
typedef struct judged {
    size_t *idx, n;
    size_t worst_len; /* the batch holding the longest sample */
    uint32_t longest; /* its length */
} judged;

static int cmp_size(const void *a, const void *b)
{
    size_t x = *(const size_t *)a, y = *(const size_t *)b;

    return (x > y) - (x < y);
}

/* Every batch's worst case in one pass over the epoch: the batch holding the longest
 * sample and the one with the most tokens (memory follows these), then evenly spaced
 * batches up to `want` in all (the time estimate).  Ties: the earlier batch. */
static vl_status pick_batches(judged *j, const vl_batches *b, const uint32_t *order,
                              const uint32_t *len, size_t want, vl_err *err)
{
    size_t most_tok = 0, n = 0;
    uint64_t best_tok = 0;

    memset(j, 0, sizeof *j);
    want = want < b->n ? want : b->n;
    if ((j->idx = malloc((want + 2) * sizeof *j->idx)) == NULL)
        return vl_seterr(err, VL_ENOMEM, "chunkflow: out of memory choosing batches");
    for (size_t i = 0; i < b->n; i++) {
        uint64_t tok = 0;
        for (size_t k = b->start[i]; k < b->start[i + 1]; k++) {
            uint32_t l = len[order[k]];
            tok += l;
            if (l > j->longest) {
                j->longest = l;
                j->worst_len = i;
            }
        }
        if (tok > best_tok) {
            best_tok = tok;
            most_tok = i;
        }
    }
    j->idx[n++] = j->worst_len;
    if (most_tok != j->worst_len)
        j->idx[n++] = most_tok;
    for (size_t k = 0; n < want && k < want; k++)
        j->idx[n++] = want >= b->n ? k : k * b->n / want;
    qsort(j->idx, n, sizeof *j->idx, cmp_size);
    j->n = 0;
    for (size_t k = 0; k < n; k++)
        if (j->n == 0 || j->idx[j->n - 1] != j->idx[k])
            j->idx[j->n++] = j->idx[k];
    return VL_OK;
}

/* Plan and simulate every judged batch with s, one at a time. */
static vl_status evaluate(const vl_cf_setting *s, const uint32_t *order, const vl_batches *b,
                          const judged *j, vl_cf_fit *fit, vl_cf_work *w, cand_result *res,
                          vl_err *err)
{
    memset(res, 0, sizeof *res);
    for (size_t k = 0; k < j->n; k++) {
        size_t bi = j->idx[k];
        vl_sim_iter_result r;
        vl_status st = vl__cf_try(fit, w, s, order + b->start[bi],
                                  b->start[bi + 1] - b->start[bi], &r, err);
        if (st != VL_OK)
            return st;
        res->iter_ms += r.iter_time_ms / (double)j->n;
        res->peak_gib = r.peak_mem_gib > res->peak_gib ? r.peak_mem_gib : res->peak_gib;
        res->oom = res->oom || r.oom;
    }
    return VL_OK;
}

static void log_row(const vl_job *job, const vl_cf_setting *s, const cand_result *r)
{
    vl_job_log(job, "chunkflow:   %10u %4u %4d %12.1f %9.2f  %s\n", s->chunk, s->k,
               s->par.ckpt_layers, r->iter_ms, r->peak_gib, r->oom ? "out of memory" : "ok");
}

/* The grid's state: the best candidate that fits and the least demanding one. */
typedef struct grid {
    vl_cf_setting best, low;
    double best_ms, low_gib;
    bool found, any;
} grid;

/* One candidate: evaluated, logged, kept when it is the fastest that fits (strict
 * improvement: ties go to the earlier, i.e. smaller chunk, then smaller K). */
static vl_status candidate(const vl_cf_setting *s, const vl_job *job, const uint32_t *order,
                           const vl_batches *b, const judged *j, vl_cf_fit *fit, vl_cf_work *w,
                           grid *g, vl_err *err)
{
    cand_result r;
    vl_status st = evaluate(s, order, b, j, fit, w, &r, err);

    if (st != VL_OK)
        return st;
    log_row(job, s, &r);
    if (!r.oom && (!g->found || r.iter_ms < g->best_ms)) {
        g->best = *s;
        g->best_ms = r.iter_ms;
        g->found = true;
    }
    if (!g->any || r.peak_gib < g->low_gib) {
        g->low = *s;
        g->low_gib = r.peak_gib;
        g->any = true;
    }
    return VL_OK;
}

/* Candidates in (ChunkSize, K) ascending order at checkpointing ckpt.  For a chunk
 * size, a K at or above the most chunks any sample has (n_max) plans exactly like K =
 * n_max's first grid value at or above it: the larger ones are skipped. */
static vl_status run_grid(const vl_cf_opts *o, const vl_job *job, const vl_cf_setting *base,
                          int ckpt, const uint32_t *order, const vl_batches *b,
                          const judged *j, vl_cf_fit *fit, vl_cf_work *w, grid *g, vl_err *err)
{
    for (size_t i = 0; i < NCHUNK; i++) {
        if (o->chunk_size && i > 0)
            break; /* a fixed parameter is a grid of one */
        vl_cf_setting s = *base;
        s.chunk = o->chunk_size ? o->chunk_size : grid_chunk[i];
        s.par.ckpt_layers = ckpt;
        uint32_t nmax = (uint32_t)((j->longest + (uint64_t)s.chunk - 1) / s.chunk);
        for (size_t k = 0; k < vl__cf_ngrid_k; k++) {
            if (o->k && k > 0)
                break;
            s.k = o->k ? o->k : vl__cf_grid_k[k];
            if (!o->k && k > 0 && vl__cf_grid_k[k - 1] >= nmax)
                break; /* same plans as the previous K */
            vl_status st = candidate(&s, job, order, b, j, fit, w, g, err);
            if (st != VL_OK)
                return st;
        }
    }
    return VL_OK;
}

static vl_status none_fits(const grid *g, const vl_job *job, const uint32_t *order,
                           const vl_batches *b, const judged *j, vl_cf_fit *fit, vl_cf_work *w,
                           vl_err *err)
{
    size_t bi = j->worst_len;
    int sp = vl__cf_wider_sp(fit, w, &g->low, order + b->start[bi],
                             b->start[bi + 1] - b->start[bi]);
    char hint[96] = "";

    if (sp > 0)
        snprintf(hint, sizeof hint, "; training.sp=%d would fit that batch with it", sp);
    return vl_seterr(err, VL_EINFEASIBLE,
                     "chunkflow: every (chunk_size, k) candidate exceeds device memory on "
                     "the worst batches (the longest sample has %u tokens); the least "
                     "demanding, chunk_size=%u k=%u with %d checkpointed layers, peaks at "
                     "%.2f GiB of %.2f GiB usable%s",
                     j->longest, g->low.chunk, g->low.k, g->low.par.ckpt_layers, g->low_gib,
                     vl_cost_mem_capacity(job->cost) / GIB, hint);
}

vl_status vl__cf_search(const vl_cf_opts *o, const vl_job *job, const vl_cf_setting *base,
                        const uint32_t *order, const vl_batches *b, vl_cf_fit *fit,
                        vl_cf_setting *best, vl_err *err)
{
    vl_cf_setting b0 = *base; /* best may alias base */
    vl_cf_work w = {0};
    grid g = {.found = false};
    judged j;
    vl_status st;

    *best = b0;
    if (b->n == 0)
        return VL_OK;
    if ((st = pick_batches(&j, b, order, job->sel->len, o->search_iters, err)) != VL_OK)
        return st;
    vl_job_log(job,
               "chunkflow: grid search over %zu of %zu batches (batch %zu holds the "
               "longest sample, %u tokens)\n"
               "chunkflow:   chunk_size    k ckpt      iter_ms  peak_gib  status\n",
               j.n, b->n, j.worst_len, j.longest);
    st = run_grid(o, job, &b0, b0.par.ckpt_layers, order, b, &j, fit, &w, &g, err);
    if (st == VL_OK && !g.found && job->cfg->training.recompute == VL_RECOMPUTE_AUTO &&
        b0.par.ckpt_layers < b0.stage_layers) {
        vl_job_log(job,
                   "chunkflow: nothing fits with %d checkpointed layers; "
                   "training.recompute=auto: every layer checkpointed\n",
                   b0.par.ckpt_layers);
        st = run_grid(o, job, &b0, b0.stage_layers, order, b, &j, fit, &w, &g, err);
    }
    if (st == VL_OK && !g.found)
        st = none_fits(&g, job, order, b, &j, fit, &w, err);
    if (st == VL_OK) {
        *best = g.best;
        vl_job_log(job, "chunkflow: chose chunk_size=%u k=%u with %d checkpointed layers\n",
                   best->chunk, best->k, best->par.ckpt_layers);
    }
    vl__cf_work_free(&w);
    free(j.idx);
    return st;
}
