/* bench/bench_hydraulis.c -- Hydraulis on the paper's 32B setting and its planner speed.
 *
 * Part 1, the paper's shape (Fig. 10, 12b, 13; Table 1): configs/hydraulis-32b_a800x64.yaml
 * (the authors' measured 32B schemes as cost.schemes, 64 GPUs, ~200K tokens per
 * iteration), lengths lognormal(6.7, 1.1) truncated at 32K, the first ITERS iterations.
 * Rows: homogeneous DP 4 x TP 16 fixed-length packing (`pack`, the baseline), then the
 * ablation steps (a) homo + packing to the context length, (b) homo + balanced
 * packing, (c) one heterogeneous candidate for every iteration, (d) dynamic (the authors' six
 * candidates), and dynamic with the DP's own candidates.  Per row: mean and median
 * simulated iteration time, median slowest/fastest rank gap, the median and range of the
 * per-iteration speedup over the baseline, distinct candidates chosen.
 *
 * Part 2, speed (Table 2): the proposal DP at 64 GPUs / 32K / S_STEP 128 and at 1024 GPUs
 * (S_STEP 1024, N_STEP 4, and S_STEP 128, N_STEP 1); dispatch + packing over every
 * candidate per iteration at 64 GPUs / 200K tokens and 1024 GPUs / 3.2M tokens.
 *
 * Times are CPU seconds of the process (one thread).
 *
 *   bench_hydraulis [ITERS]        default 40; run from the repository root
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_util.h"
#include "hydraulis_impl.h"
#include "run.h"
#include "sim.h"

#define CONFIG "configs/hydraulis-32b_a800x64.yaml"

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(const double *v, size_t n)
{
    double *s = malloc(n * sizeof *s), m;
    if (s == NULL || n == 0) {
        free(s);
        return NAN;
    }
    memcpy(s, v, n * sizeof *s);
    qsort(s, n, sizeof *s, cmp_double);
    m = n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
    free(s);
    return m;
}

/* ---- part 1 ---- */

typedef struct row_out {
    double *ms, *gap;
    int distinct;
    double plan_s;
} row_out;

static vl_status run_row(const char *strategy, const char *const *sets, vl_manifest *m,
                         size_t iters, row_out *o, vl_err *err)
{
    vl_config cfg;
    vl_run_opts ro = {.seed = 7};
    vl_plan p = {0};
    vl_cost c;
    bool seen[256] = {false};
    double t0;
    vl_status st = bench_config(&cfg, CONFIG, sets, NULL, err);

    t0 = bench_cpu_s();
    if (st == VL_OK)
        st = vl_run_plan(&p, vl_strategy_find(strategy), m, &cfg, &ro, NULL, err);
    o->plan_s = bench_cpu_s() - t0;
    if (st == VL_OK)
        st = vl_cost_init(&c, &cfg, err);
    if (st == VL_OK && p.niters < iters)
        st = vl_seterr(err, VL_EDATA, "%s: only %zu iterations", strategy, p.niters);
    o->distinct = 0;
    for (size_t i = 0; i < iters && st == VL_OK; i++) {
        vl_sim_iter_result r;
        st = vl_sim_iter(&p, i, &c, NULL, &r, NULL, NULL, err);
        o->ms[i] = r.iter_time_ms;
        o->gap[i] = r.rank_gap;
        if (p.iters[i].candidate >= 0 && p.iters[i].candidate < 256 &&
            !seen[p.iters[i].candidate]) {
            seen[p.iters[i].candidate] = true;
            o->distinct++;
        }
        if (st == VL_OK && r.oom)
            st = vl_seterr(err, VL_EDATA, "%s: iteration %zu out of memory", strategy, i);
    }
    vl_plan_free(&p);
    vl_config_free(&cfg);
    return st;
}

static void print_row(const char *label, const row_out *o, const row_out *base, size_t n)
{
    double sum = 0, *sp = malloc(n * sizeof *sp), lo = INFINITY, hi = 0;

    for (size_t i = 0; sp && i < n; i++) {
        sum += o->ms[i];
        sp[i] = base->ms[i] / o->ms[i];
        lo = fmin(lo, sp[i]);
        hi = fmax(hi, sp[i]);
    }
    printf("| %-44s | %8.0f | %8.0f | %6.3f | %5.2f (%.2f-%.2f) | %2d | %6.2f |\n", label,
           sum / (double)n, median(o->ms, n), median(o->gap, n), sp ? median(sp, n) : NAN, lo,
           hi, o->distinct, o->plan_s);
    free(sp);
}

static vl_status part1(size_t iters, vl_err *err)
{
    /* ~200K tokens at a mean of ~1.5K: 134 samples an iteration, 5% to spare */
    size_t n = iters * 140;
    vl_manifest *m = NULL;
    static const char *const a[] = {"hydraulis.mode=homo", "hydraulis.packing=max", NULL};
    static const char *const b[] = {"hydraulis.mode=homo", NULL};
    static const char *const c[] = {"hydraulis.mode=static", NULL};
    static const char *const e[] = {"hydraulis.candidates=auto", NULL};
    /* per-batch packing: the same global batches as every Hydraulis row */
    static const char *const pk[] = {"pack.scope=batch", NULL};
    struct {
        const char *label, *strategy;
        const char *const *sets;
    } rows[] = {
        {"pack, DP 4 x TP 16 (baseline)", "pack", pk},
        {"(a) homo DP 4 x TP 16, dispatch + pack to 32K", "hydraulis", a},
        {"(b) homo DP 4 x TP 16, two-stage assignment", "hydraulis", b},
        {"(c) static heterogeneous (best of the six)", "hydraulis", c},
        {"(d) dynamic, the authors' six candidates", "hydraulis", NULL},
        {"dynamic, the DP's own candidates", "hydraulis", e},
    };
    row_out out[6];
    vl_status st = bench_manifest(&m, "lognormal:6.7:1.1", n, 7, err);

    memset(out, 0, sizeof out);
    printf("## part 1: 32B, 64 GPUs, ~200K tokens/iteration, lognormal(6.7, 1.1) cut at 32K, "
           "first %zu iterations, seed 7\n\n",
           iters);
    printf("| %-44s | %8s | %8s | %6s | %-18s | %2s | %6s |\n", "row", "mean ms", "p50 ms",
           "gap50", "speedup p50 (range)", "#c", "plan s");
    printf("|---|---|---|---|---|---|---|\n");
    for (size_t r = 0; r < 6 && st == VL_OK; r++) {
        out[r].ms = calloc(iters, sizeof(double));
        out[r].gap = calloc(iters, sizeof(double));
        if (!out[r].ms || !out[r].gap)
            st = vl_seterr(err, VL_ENOMEM, "out of memory");
        if (st == VL_OK)
            st = run_row(rows[r].strategy, rows[r].sets, m, iters, &out[r], err);
        if (st == VL_OK)
            print_row(rows[r].label, &out[r], &out[0], iters);
    }
    if (st == VL_OK) {
        double *x = malloc(iters * sizeof *x);
        for (size_t i = 0; x && i < iters; i++)
            x[i] = out[2].ms[i] / out[4].ms[i];
        if (x)
            printf("\n(d) over (b), the homogeneous strategy with the same two-stage "
                   "assignment: median %.3f\n",
                   median(x, iters));
        free(x);
    }
    for (size_t r = 0; r < 6; r++) {
        free(out[r].ms);
        free(out[r].gap);
    }
    vl_manifest_free(m);
    return st;
}

/* ---- part 2 ---- */

/* The proposal's inputs and result under one row's settings: the config, cost model and
 * schemes, the selection, the length histogram and the candidates. */
typedef struct proposal {
    vl_config cfg;
    vl_cost c;
    hy_schemes sch;
    vl_selection sel;
    hy_hist h;
    hy_cands cands;
    double setup_s; /* CPU seconds: cost model, selection and schemes */
} proposal;

static vl_status proposal_setup(proposal *pr, const char *const *sets, vl_manifest *m,
                                vl_err *err)
{
    vl_status st = bench_config(&pr->cfg, CONFIG, sets, NULL, err);
    double t0 = bench_cpu_s();

    if (st == VL_OK)
        st = vl_cost_init(&pr->c, &pr->cfg, err);
    if (st == VL_OK)
        st = vl_select(&pr->sel, m, pr->cfg.training.max_seq_len, VL_OVERSIZE_TRUNCATE, err);
    if (st == VL_OK)
        st = vl__hy_schemes(&pr->sch, &pr->c, err);
    pr->setup_s = bench_cpu_s() - t0;
    return st;
}

/* The candidates from one iteration's expected counts, as plan() weighs them. */
static vl_status proposal_run(proposal *pr, uint32_t step, int nstep, vl_err *err)
{
    vl_status st =
        vl__hy_hist(&pr->h, pr->sel.idx, pr->sel.n, pr->sel.len, step,
                    (double)pr->cfg.training.global_tokens / (double)pr->sel.tokens, err);

    if (st == VL_OK)
        st = vl__hy_propose(&pr->cands, &pr->h, &pr->sch, pr->cfg.cluster.gpus, nstep, err);
    return st;
}

static void proposal_free(proposal *pr)
{
    vl__hy_hist_free(&pr->h);
    vl__hy_cands_free(&pr->cands);
    vl__hy_schemes_free(&pr->sch);
    vl_selection_free(&pr->sel);
    vl_config_free(&pr->cfg);
}

static vl_status time_proposal(const char *label, const char *const *sets, vl_manifest *m,
                               uint32_t step, int nstep, vl_err *err)
{
    proposal pr = {0};
    vl_status st = proposal_setup(&pr, sets, m, err);
    double t0 = bench_cpu_s();

    if (st == VL_OK)
        st = proposal_run(&pr, step, nstep, err);
    if (st == VL_OK)
        printf("| %-46s | %3zu | %6.3f | %7.3f | %3zu |\n", label, pr.sch.n, pr.setup_s,
               bench_cpu_s() - t0, pr.cands.n);
    proposal_free(&pr);
    return st;
}

/* Dispatch + packing of every candidate, per iteration, over the first `iters` batches. */
static vl_status time_dispatch(const char *label, const char *const *sets, vl_manifest *m,
                               size_t iters, vl_err *err)
{
    proposal pr = {0};
    vl_batches b = {0};
    uint32_t *order = NULL;
    hy_iter it = {0};
    double t0, total = 0;
    size_t seqs = 0, done = 0;
    vl_status st = proposal_setup(&pr, sets, m, err);
    bool large = pr.cfg.cluster.gpus >= 1024;

    if (st == VL_OK)
        st = proposal_run(&pr, large ? 1024 : 128, large ? 4 : 1, err);
    if (st == VL_OK) {
        vl__hy_cands_trim(&pr.cands, 8);
        order = malloc(pr.sel.n * sizeof *order);
        st = order ? VL_OK : vl_seterr(err, VL_ENOMEM, "out of memory");
    }
    if (st == VL_OK) {
        vl_epoch_order(&pr.sel, 1, 0, order);
        st = vl_make_batches(&b, order, pr.sel.n, pr.sel.len, &pr.cfg.training, err);
    }
    it = (hy_iter){
        .sch = &pr.sch, .cands = &pr.cands, .trials = 50, .packing = HY_BALANCED, .seed = 1};
    for (size_t k = 0; k < b.n && done < iters && st == VL_OK; k++) {
        size_t n = b.start[k + 1] - b.start[k];
        if (k + 1 == b.n && done > 0)
            break; /* the short last batch is not an iteration of the setting */
        t0 = bench_cpu_s();
        for (size_t ci = 0; ci < pr.cands.n && st == VL_OK; ci++)
            vl__hy_eval(&it, ci, order + b.start[k], n, pr.sel.len, k << 16, false, INFINITY,
                        &st, err);
        total += bench_cpu_s() - t0;
        seqs += n;
        done++;
    }
    if (st == VL_OK && done > 0)
        printf("| %-46s | %3zu | %5.0f | %8.4f |\n", label, pr.cands.n,
               (double)seqs / (double)done, total / (double)done);
    vl__hy_iter_free(&it);
    vl_batches_free(&b);
    free(order);
    proposal_free(&pr);
    return st;
}

static vl_status part2(vl_err *err)
{
    size_t n = 40000;
    vl_manifest *m = NULL;
    static const char *const analytic[] = {"cost.schemes=[]", NULL};
    static const char *const g1024[] = {"cluster.gpus=1024", "training.global_tokens=3200000",
                                        NULL};
    static const char *const g1024a[] = {"cluster.gpus=1024", "training.global_tokens=3200000",
                                         "cost.schemes=[]", NULL};
    vl_status st = bench_manifest(&m, "lognormal:6.7:1.1", n, 7, err);

    printf(
        "\n## part 2: planner speed, CPU seconds of one core (%zu samples of lognormal(6.7, "
        "1.1))\n\n",
        n);
    printf("| %-46s | %3s | %6s | %7s | %3s |\n", "proposal", "K", "schm s", "DP s", "#c");
    printf("|---|---|---|---|---|\n");
    if (st == VL_OK)
        st = time_proposal("64 GPUs, 32K, S_STEP 128, 32B table", NULL, m, 128, 1, err);
    if (st == VL_OK)
        st = time_proposal("64 GPUs, 32K, S_STEP 128, fitted schemes", analytic, m, 128, 1,
                           err);
    if (st == VL_OK)
        st = time_proposal("1024 GPUs, S_STEP 1024, N_STEP 4, 32B table", g1024, m, 1024, 4,
                           err);
    if (st == VL_OK)
        st =
            time_proposal("1024 GPUs, S_STEP 1024, N_STEP 4, fitted", g1024a, m, 1024, 4, err);
    if (st == VL_OK)
        st =
            time_proposal("1024 GPUs, S_STEP 128, N_STEP 1, 32B table", g1024, m, 128, 1, err);
    printf("\n| %-46s | %3s | %5s | %8s |\n", "dispatch + packing, all candidates", "#c",
           "seqs", "s/iter");
    printf("|---|---|---|---|\n");
    if (st == VL_OK)
        st = time_dispatch("64 GPUs, 200K tokens, 32B table", NULL, m, 20, err);
    if (st == VL_OK)
        st = time_dispatch("1024 GPUs, 3.2M tokens, 32B table", g1024, m, 10, err);
    if (st == VL_OK)
        st = time_dispatch("1024 GPUs, 3.2M tokens, fitted", g1024a, m, 10, err);
    vl_manifest_free(m);
    return st;
}

int main(int argc, char **argv)
{
    size_t iters = argc > 1 ? strtoul(argv[1], NULL, 10) : 40;
    vl_err err = {0};
    vl_status st;

    if (iters < 1) {
        fprintf(stderr, "bench_hydraulis: ITERS must be at least 1\n");
        return 1;
    }
    st = part1(iters, &err);
    if (st == VL_OK)
        st = part2(&err);
    if (st != VL_OK)
        fprintf(stderr, "bench_hydraulis: %s\n", err.msg);
    return st == VL_OK ? 0 : 1;
}
