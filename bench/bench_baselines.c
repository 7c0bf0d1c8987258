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
 *   iters          iterations (pack's epoch scope: the sampler's batch count, at most one
 *                  per round of DP packs; the others: the sampler's global batches)
 *   micro-batches  non-empty micro-batches (packs)
 *   vs-whole       their count over the bins of FFD on the whole data set at once
 *   fill           tokens / token slots (1 - PR)
 *   tok max/mean   per iteration, the largest rank's tokens over the ranks' mean:
 *                  mean over iterations, and the worst iteration
 *   len2 max/mean  the same for Σ len² (attention work)
 *   veRL same      veRL's own dealing of the same iterations, for an apples-to-apples
 *                  balance comparison: each iteration of this plan, its samples dealt
 *                  by equal-count KK on 24576·len + len² (plans/baseline/baseline_verl.c
 *                  step 1), tokens and Σ len² max/mean (mean over iterations)
 *   veRL mbs       the non-empty micro-batches veRL's dynamic batch size needs for that
 *                  (max over ranks of ceil(tokens / CAP), times DP, per iteration): a
 *                  lower bound, its refit of over-full KK splits not counted
 *   sim s          modelled epoch time (vl_sim_plan, the default cost model)
 *   s              wall seconds of the plan (shared machine: indicative only) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_util.h"
#include "run.h"
#include "sim.h"
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
    const char *sets[4]; /* KEY=VALUE, NULL-terminated */
} row;

static const row rows[] = {
    {"pack (defaults: epoch, ffd, balance time, deal samples)", "pack", {NULL}},
    {"pack deal=packs (whole packs, before)", "pack", {"pack.deal=packs", NULL}},
    {"pack balance=tokens", "pack", {"pack.balance=tokens", NULL}},
    {"pack balance=attention", "pack", {"pack.balance=attention", NULL}},
    {"pack balance=attention deal=packs",
     "pack",
     {"pack.balance=attention", "pack.deal=packs", NULL}},
    {"pack scope=batch balance=tokens (before)",
     "pack",
     {"pack.scope=batch", "pack.balance=tokens", NULL}},
    {"pack bfd (TRL's default)", "pack", {"pack.algo=bfd", NULL}},
    {"pack ffs max_samples=200 (axolotl multipack)",
     "pack",
     {"pack.algo=ffs", "pack.max_samples=200", NULL}},
    {"pack nf (axolotl sequential, Megatron dp_balanced pass 1)",
     "pack",
     {"pack.algo=nf", NULL}},
    {"pack nf scope=batch (~Megatron dp_balanced)",
     "pack",
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

typedef struct figs {
    size_t mbs, verl_mbs;
    double slots, tokens, tok_mean, tok_worst, sq_mean, sq_worst, verl_tok, verl_sq;
} figs;

/* veRL's step 1 on one iteration's samples (lens[0..n)): equal-count KK on
 * 24576·len + len² over dp ranks (zero placeholders up to a multiple of dp, dropped
 * after), adding the ranks' token and Σ len² max/mean to f and veRL's micro-batches. */
static void verl_same(const double *lens, size_t n, uint32_t dp, uint32_t cap, figs *f)
{
    size_t np = (n + dp - 1) / dp * dp, need = 0;
    double *w = calloc(np ? np : 1, sizeof *w), *tok = calloc(dp, sizeof *tok);
    double *sq = calloc(dp, sizeof *sq), junk = 0;
    int *part = malloc((np ? np : 1) * sizeof *part);

    for (size_t i = 0; i < n; i++)
        w[i] = 24576.0 * lens[i] + lens[i] * lens[i];
    if (vl_partition_kk_equal(part, w, np, (int)dp, NULL) == VL_OK) {
        for (size_t i = 0; i < n; i++) {
            tok[part[i]] += lens[i];
            sq[part[i]] += lens[i] * lens[i];
        }
        ratio(tok, dp, &f->verl_tok, &junk);
        ratio(sq, dp, &f->verl_sq, &junk);
        for (uint32_t r = 0; r < dp; r++) {
            size_t m = (size_t)((tok[r] + cap - 1) / cap);
            need = m > need ? m : need;
        }
        f->verl_mbs += need * dp;
    }
    free(w);
    free(tok);
    free(sq);
    free(part);
}

static void measure(const vl_plan *p, uint32_t cap, figs *f)
{
    double *tok = NULL, *sq = NULL, *lens = NULL;
    size_t wcap = 0, lcap = 0;
    memset(f, 0, sizeof *f);
    for (size_t it = 0; it < p->niters; it++) {
        const vl_iter *in = &p->iters[it];
        size_t nl = 0;
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
                    if (nl == lcap) {
                        lcap = lcap ? 2 * lcap : 4096;
                        lens = realloc(lens, lcap * sizeof *lens);
                    }
                    lens[nl++] = sg[q].len;
                }
            }
            f->tokens += tok[k];
        }
        ratio(tok, in->nranks, &f->tok_mean, &f->tok_worst);
        ratio(sq, in->nranks, &f->sq_mean, &f->sq_worst);
        verl_same(lens, nl, in->nranks, cap, f);
    }
    if (p->niters) {
        f->tok_mean /= (double)p->niters;
        f->sq_mean /= (double)p->niters;
        f->verl_tok /= (double)p->niters;
        f->verl_sq /= (double)p->niters;
    }
    free(tok);
    free(sq);
    free(lens);
}

/* Modelled epoch time of plan p under cfg's cost model; -1 when it cannot be had. */
static double sim_epoch(const vl_plan *p, const vl_config *cfg)
{
    vl_cost cost;
    vl_sim_summary sum;
    if (vl_cost_init(&cost, cfg, NULL) != VL_OK ||
        vl_sim_plan(p, &cost, NULL, &sum, NULL) != VL_OK)
        return -1;
    return sum.epoch_time_s;
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
    printf("%s: %zu samples, cap %u, dp %d; FFD on the whole data set: %zu bins\n\n", name, n,
           cap, dp, whole);
    printf("| configuration | iters | micro-batches | vs whole | fill | tok max/mean (mean, "
           "worst) | "
           "len² max/mean (mean, worst) | veRL same: tok, len² | veRL mbs | sim s | s |\n"
           "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
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
        vl_status st =
            vl_run_plan(&p, vl_strategy_find(rows[i].strategy), m, &cfg, &o, &res, &err);
        double t = bench_wall_s() - t0;
        free(res.log);
        if (st != VL_OK) {
            printf("| %s | refused: %s | | | | | | | | | |\n", rows[i].label, err.msg);
            vl_config_free(&cfg);
            continue;
        }
        measure(&p, cap, &f);
        printf("| %s | %zu | %zu | %.4f | %.4f | %.5f, %.3f | %.5f, %.3f | %.5f, %.5f | %zu | "
               "%.1f | "
               "%.2f |\n",
               rows[i].label, p.niters, f.mbs, whole ? (double)f.mbs / (double)whole : 0,
               f.tokens / f.slots, f.tok_mean, f.tok_worst, f.sq_mean, f.sq_worst, f.verl_tok,
               f.verl_sq, f.verl_mbs, sim_epoch(&p, &cfg), t);
        fflush(stdout);
        vl_plan_free(&p);
        vl_config_free(&cfg);
    }
    vl_manifest_free(m);
    free(len);
    return 0;
}
