/* plans/chunkflow/chunkflow_search.c -- ChunkFlow's grid search over (ChunkSize, K) (paper §5):
 * plan a sample of global batches with each candidate, simulate them, drop candidates
 * out of device memory, keep the fastest; and the -v log it leaves in job->log. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chunkflow_impl.h"
#include "sim.h"

/* The paper's grid (§5, Table 6): chunk sizes 2K..32K tokens, K 1..16. */
static const uint32_t grid_chunk[] = {2048, 4096, 8192, 16384, VL_CF_GRID_CHUNK_MAX};
static const uint32_t grid_k[] = {1, 2, 4, 8, 16};
#define NGRID 5

typedef struct cand_result {
    double iter_ms;       /* mean simulated iteration time over the sample */
    double peak_gib;      /* worst peak memory over the sample */
    bool oom;
} cand_result;

/* Batch indices to simulate: nsample spread evenly over the epoch's nb batches. */
static size_t sample_batch(size_t j, size_t nsample, size_t nb)
{
    return nsample >= nb ? j : j * nb / nsample;
}

/* Plan the sampled batches with setting s into a scratch plan and simulate each. */
static vl_status evaluate(const vl_cf_setting *s, const vl_job *job, const uint32_t *order,
                          const vl_batches *b, size_t nsample, vl_manifest *m,
                          vl_sim_scratch *ss, cand_result *res, vl_err *err)
{
    vl_cf_work w = {0};
    vl_plan p;
    vl_status st = vl_plan_init(&p, m, "chunkflow", job->seed, err);

    memset(res, 0, sizeof *res);
    if (st != VL_OK)
        return st;
    for (size_t j = 0; j < nsample && st == VL_OK; j++) {
        size_t bi = sample_batch(j, nsample, b->n);
        st = vl__cf_plan_batch(&w, s, job->cost, order + b->start[bi],
                               b->start[bi + 1] - b->start[bi], job->sel->len, 0, &p, err);
    }
    for (size_t it = 0; it < p.niters && st == VL_OK; it++) {
        vl_sim_iter_result r;
        if ((st = vl_sim_iter(&p, it, job->cost, NULL, &r, ss, NULL, err)) != VL_OK)
            break;
        res->iter_ms += r.iter_time_ms / (double)p.niters;
        res->peak_gib = r.peak_mem_gib > res->peak_gib ? r.peak_mem_gib : res->peak_gib;
        res->oom = res->oom || r.oom;
    }
    vl__cf_work_free(&w);
    vl_plan_free(&p);
    return st;
}

static void log_row(const vl_job *job, const vl_cf_setting *s, const cand_result *r)
{
    vl_job_log(job, "chunkflow:   %10u %4u %12.1f %9.2f  %s\n", s->chunk, s->k, r->iter_ms,
               r->peak_gib, r->oom ? "out of memory" : "ok");
}

static vl_status none_fits(const vl_cf_setting *low, double low_gib, const vl_cost *c,
                           vl_err *err)
{
    return vl_seterr(err, VL_EINFEASIBLE,
                     "chunkflow: every (chunk_size, k) candidate exceeds device memory; "
                     "the smallest, chunk_size=%u k=%u, peaks at %.2f GiB of %.2f GiB "
                     "usable",
                     low->chunk, low->k, low_gib, vl_cost_mem_capacity(c) / 1073741824.0);
}

/* Candidates in (ChunkSize, K) ascending order; strict improvement keeps the first of
 * equal times, so ties go to the smaller chunk, then the smaller K. */
static vl_status run_grid(const vl_cf_opts *o, const vl_job *job, const vl_cf_setting *base,
                          const uint32_t *order, const vl_batches *b, vl_manifest *m,
                          vl_sim_scratch *ss, vl_cf_setting *best, vl_err *err)
{
    size_t nsample = o->search_iters < b->n ? o->search_iters : b->n;
    double best_ms = 0.0, low_gib = 0.0;
    vl_cf_setting low = *base;
    bool found = false;
    vl_status st;

    for (int i = 0; i < NGRID; i++) {
        for (int j = 0; j < NGRID; j++) {
            vl_cf_setting s = *base;
            cand_result r;
            if ((o->chunk_size && i > 0) || (o->k && j > 0))
                continue;   /* a fixed parameter is a grid of one */
            s.chunk = o->chunk_size ? o->chunk_size : grid_chunk[i];
            s.k = o->k ? o->k : grid_k[j];
            if ((st = evaluate(&s, job, order, b, nsample, m, ss, &r, err)) != VL_OK)
                return st;
            log_row(job, &s, &r);
            if (!r.oom && (!found || r.iter_ms < best_ms)) {
                *best = s;
                best_ms = r.iter_ms;
                found = true;
            }
            if (low_gib == 0.0 || r.peak_gib < low_gib) {
                low = s;
                low_gib = r.peak_gib;
            }
        }
    }
    return found ? VL_OK : none_fits(&low, low_gib, job->cost, err);
}

vl_status vl__cf_search(const vl_cf_opts *o, const vl_job *job, const vl_cf_setting *base,
                        const uint32_t *order, const vl_batches *b, vl_manifest *m,
                        vl_cf_setting *best, vl_err *err)
{
    vl_cf_setting b0 = *base;   /* best may alias base */
    vl_sim_scratch *ss = NULL;
    vl_status st;

    *best = b0;
    if (b->n == 0)
        return VL_OK;
    vl_job_log(job, "chunkflow: grid search over %zu of %zu batches\n"
                    "chunkflow:   chunk_size    k      iter_ms  peak_gib  status\n",
               o->search_iters < b->n ? (size_t)o->search_iters : b->n, b->n);
    if ((st = vl_sim_scratch_new(&ss, err)) != VL_OK)
        return st;
    st = run_grid(o, job, &b0, order, b, m, ss, best, err);
    vl_sim_scratch_free(ss);
    if (st == VL_OK)
        vl_job_log(job, "chunkflow: chose chunk_size=%u k=%u\n", best->chunk, best->k);
    return st;
}
