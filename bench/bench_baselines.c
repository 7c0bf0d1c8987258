/* bench/bench_baselines.c -- bins, fill and balance of every baseline (and the peers'
 * algorithms they stand for) on a real length trace, through the whole planner
 * (vl_run_plan: oversize policy, sampler, strategy, self-check).
 *
 *   bench_baselines FILE [CAP [DP]]
 *
 * FILE is a CSV whose numeric columns are summed per row (context + generated tokens in
 * the Azure and Mooncake traces of shared/data/real/); samples over CAP (default 32768)
 * are dropped (training.oversize=drop).  DP (default 32) data-parallel ranks, tp = pp =
 * sp = 1, the default model (llama3.1-8b) and global_tokens (2M), one epoch, seed 1.
 * One row per configuration:
 *   micro-batches  non-empty micro-batches (packs)
 *   vs-whole       their count over the bins of FFD on the whole data set at once
 *   fill           tokens / token slots (1 - PR)
 *   tok max/mean   per iteration, the largest rank's tokens over the ranks' mean:
 *                  mean over iterations, and the worst iteration
 *   len2 max/mean  the same for Σ len² (attention work)
 *   s              wall seconds of the plan (shared machine: indicative only) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_util.h"
#include "run.h"
#include "vlplan_strategy.h"

static uint32_t *read_trace(const char *path, size_t *n)
{
    FILE *f = fopen(path, "r");
    char line[512];
    uint32_t *a = NULL;
    size_t cap = 0;

    *n = 0;
    if (f == NULL || fgets(line, sizeof line, f) == NULL) {
        if (f)
            fclose(f);
        return NULL;
    }
    while (fgets(line, sizeof line, f) != NULL) {
        int any;
        unsigned long l = bench_csv_row_sum(line, &any);
        if (!any || l == 0)
            continue;
        if (*n == cap) {
            cap = cap ? 2 * cap : 4096;
            uint32_t *t = realloc(a, cap * sizeof *t);
            if (t == NULL) {
                free(a);
                fclose(f);
                return NULL;
            }
            a = t;
        }
        a[(*n)++] = l > UINT32_MAX ? UINT32_MAX : (uint32_t)l;
    }
    fclose(f);
    return a;
}

typedef struct row {
    const char *label, *strategy;
    const char *sets[4];   /* KEY=VALUE, NULL-terminated */
} row;

static const row rows[] = {
    {"pack (defaults: epoch, ffd, balance time)", "pack", {NULL}},
    {"pack balance=tokens", "pack", {"pack.balance=tokens", NULL}},
    {"pack balance=attention", "pack", {"pack.balance=attention", NULL}},
    {"pack scope=batch balance=tokens (before)", "pack",
     {"pack.scope=batch", "pack.balance=tokens", NULL}},
    {"pack bfd (TRL's default)", "pack", {"pack.algo=bfd", NULL}},
    {"pack ffs max_samples=200 (axolotl multipack)", "pack",
     {"pack.algo=ffs", "pack.max_samples=200", NULL}},
    {"pack nf (axolotl sequential, Megatron dp_balanced pass 1)", "pack", {"pack.algo=nf", NULL}},
    {"pack nf scope=batch (~Megatron dp_balanced)", "pack",
     {"pack.algo=nf", "pack.scope=batch", "pack.balance=tokens", NULL}},
    {"pack spfhp (Graphcore)", "pack", {"pack.algo=spfhp", NULL}},
    {"verl (veRL KK + dynamic bsz)", "verl", {NULL}},
    {"sorted (LongAlign)", "sorted", {NULL}},
    {"random", "random", {NULL}},
};

static int configure(vl_config *cfg, const row *r, uint32_t cap, int dp)
{
    vl_err err = {0};
    char buf[64];

    if (vl_config_init_default(cfg, &err) != VL_OK)
        return -1;
    snprintf(buf, sizeof buf, "training.max_seq_len=%u", cap);
    const char *base[] = {buf, "training.oversize=drop", "training.recompute=auto", NULL};
    for (int i = 0; base[i]; i++)
        if (vl_config_set(cfg, base[i], &err) != VL_OK)
            goto bad;
    snprintf(buf, sizeof buf, "cluster.gpus=%d", dp);
    if (vl_config_set(cfg, buf, &err) != VL_OK)
        goto bad;
    for (int i = 0; r->sets[i]; i++)
        if (vl_config_set(cfg, r->sets[i], &err) != VL_OK)
            goto bad;
    if (vl_config_finalize(cfg, &err) != VL_OK)
        goto bad;
    return 0;
bad:
    fprintf(stderr, "bench_baselines: %s\n", err.msg);
    return -1;
}

typedef struct figs {
    size_t mbs;
    double slots, tokens, tok_mean, tok_worst, sq_mean, sq_worst;
} figs;

static void ratio(const double *w, uint32_t n, double *sum_ratio, double *worst)
{
    double mx = 0, s = 0;
    for (uint32_t k = 0; k < n; k++) {
        mx = w[k] > mx ? w[k] : mx;
        s += w[k];
    }
    double r = s > 0 ? mx / (s / n) : 1;
    *sum_ratio += r;
    *worst = r > *worst ? r : *worst;
}

static void measure(const vl_plan *p, figs *f)
{
    double *tok = NULL, *sq = NULL;
    size_t wcap = 0;
    memset(f, 0, sizeof *f);
    for (size_t it = 0; it < p->niters; it++) {
        const vl_iter *in = &p->iters[it];
        if (in->nranks > wcap) {
            wcap = in->nranks;
            tok = realloc(tok, wcap * sizeof *tok);
            sq = realloc(sq, wcap * sizeof *sq);
        }
        for (uint32_t k = 0; k < in->nranks; k++) {
            const vl_rank *rk = &p->ranks[in->rank0 + k];
            tok[k] = sq[k] = 0;
            for (uint32_t j = 0; j < rk->nmb; j++) {
                const vl_mb *mb = &p->mbs[rk->mb0 + j];
                const vl_seg *sg = vl_plan_mb_segs(p, mb);
                f->mbs += mb->nseg > 0;
                f->slots += mb->cap;
                for (uint32_t q = 0; q < mb->nseg; q++) {
                    tok[k] += sg[q].len;
                    sq[k] += (double)sg[q].len * sg[q].len;
                }
            }
            f->tokens += tok[k];
        }
        ratio(tok, in->nranks, &f->tok_mean, &f->tok_worst);
        ratio(sq, in->nranks, &f->sq_mean, &f->sq_worst);
    }
    if (p->niters) {
        f->tok_mean /= (double)p->niters;
        f->sq_mean /= (double)p->niters;
    }
    free(tok);
    free(sq);
}

static size_t whole_ffd_bins(const uint32_t *len, size_t n, uint32_t cap)
{
    uint32_t *items = malloc((n ? n : 1) * sizeof *items);
    size_t k = 0, bins = 0;
    vl_pack_opts o = {.algo = VL_PACK_FFD, .cap = cap};
    vl_bins b;
    for (size_t i = 0; i < n; i++)
        if (len[i] <= cap)
            items[k++] = (uint32_t)i;
    if (vl_pack(&b, items, k, len, &o, NULL) == VL_OK)
        bins = b.n;
    vl_bins_free(&b);
    free(items);
    return bins;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: bench_baselines FILE [CAP [DP]]\n");
        return 2;
    }
    uint32_t cap = argc > 2 ? (uint32_t)strtoul(argv[2], NULL, 10) : 32768;
    int dp = argc > 3 ? atoi(argv[3]) : 32;
    size_t n;
    uint32_t *len = read_trace(argv[1], &n);
    vl_manifest *m = NULL;
    if (len == NULL || vl_manifest_from_lengths(&m, len, n, NULL) != VL_OK) {
        fprintf(stderr, "bench_baselines: cannot read %s\n", argv[1]);
        return 1;
    }
    size_t whole = whole_ffd_bins(len, n, cap);
    const char *name = strrchr(argv[1], '/') ? strrchr(argv[1], '/') + 1 : argv[1];
    printf("%s: %zu samples, cap %u, dp %d; FFD on the whole data set: %zu bins\n\n", name,
           n, cap, dp, whole);
    printf("| configuration | micro-batches | vs whole | fill | tok max/mean (mean, worst) | "
           "len² max/mean (mean, worst) | s |\n|---|---:|---:|---:|---:|---:|---:|\n");
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        vl_config cfg;
        vl_plan p;
        vl_err err = {0};
        vl_run_result res = {0};
        vl_run_opts o = {.seed = 1, .allow_oom = true};
        figs f;
        if (configure(&cfg, &rows[i], cap, dp) != 0)
            return 1;
        double t0 = bench_wall_s();
        vl_status st = vl_run_plan(&p, vl_strategy_find(rows[i].strategy), m, &cfg, &o, &res,
                                   &err);
        double t = bench_wall_s() - t0;
        free(res.log);
        if (st != VL_OK) {
            printf("| %s | refused: %s | | | | | |\n", rows[i].label, err.msg);
            vl_config_free(&cfg);
            continue;
        }
        measure(&p, &f);
        printf("| %s | %zu | %.4f | %.4f | %.3f, %.3f | %.3f, %.3f | %.2f |\n", rows[i].label,
               f.mbs, whole ? (double)f.mbs / (double)whole : 0, f.tokens / f.slots,
               f.tok_mean, f.tok_worst, f.sq_mean, f.sq_worst, t);
        fflush(stdout);
        vl_plan_free(&p);
        vl_config_free(&cfg);
    }
    vl_manifest_free(m);
    free(len);
    return 0;
}
