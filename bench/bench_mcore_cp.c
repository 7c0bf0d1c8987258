/* bench/bench_mcore_cp.c -- Megatron-Core's hybrid CP (mcore_cp) beside Skrull on Skrull's
 * paper settings (bench/bench_skrull.c): Qwen2.5-0.5B and 7B on 32 H100, <DP 4, CP 8>,
 * 64 sequences per DP rank (7B on ChatQA2: <DP 2, CP 16>, 40), ZeRO-2, selective
 * recompute, ring CP, lengths from `vlplan gen` wikipedia, lmsys and chatqa2-long, every
 * row planning the same samples (those Skrull places, C·N tokens).
 * Rows, simulated iteration ms:
 *  - deepspeed: Skrull's baseline (every sequence sharded over CP, one per micro-batch,
 *    gradients reduced every micro-step), as bench_skrull;
 *  - skrull: Skrull under the same DeepSpeed runtime (micro-step reduction), as
 *    bench_skrull; skrull_it: Skrull with one reduction per iteration;
 *  - mcore: mcore_cp (one reduction per iteration, as Megatron under hybrid CP), its
 *    barrier after every group an empty pack all 32 ranks share;
 *  - mcore_nb: the same with mcore_cp.barrier=off (only a sample's GPUs wait for each
 *    other): what the barriers cost;
 *  - est: the strategy's own -v figure (over the groups, the slowest set's samples from
 *    vl_cost_pack_time, plus the gradient reduction), which mcore must equal.
 * Then the planning speed: plan() alone, best of 3, per 256-sequence batch and a whole
 * epoch.
 *
 *   bench_mcore_cp [SPEED_N [LOGITS_BYTES]]   defaults: 1000000 samples, 12
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gen.h"
#include "mcore_cp_impl.h"
#include "run.h"
#include "sim.h"
#include "skrull_impl.h"
#include "vlplan_strategy.h"

extern const vl_strategy vl_strategy_skrull, vl_strategy_random, vl_strategy_mcore_cp;

static const char *logits_bytes = "12";

static double clock_s(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

typedef struct setting {
    const char *model;
    int dp, sp;
    unsigned per_rank;
} setting;

static vl_status make_config(vl_config *cfg, const setting *g, const char *const *extra,
                             vl_err *err)
{
    char model[64], gpus[64], dp[64], sp[64], gb[64], lb[64];
    const char *sets[] = {model,
                          gpus,
                          dp,
                          sp,
                          gb,
                          lb,
                          "cluster.gpus_per_node=8",
                          "training.sp_kind=ring",
                          "training.oversize=drop",
                          "training.zero=2",
                          "training.recompute=selective",
                          NULL};
    vl_status st;

    snprintf(model, sizeof model, "model.preset=%s", g->model);
    snprintf(gpus, sizeof gpus, "cluster.gpus=%d", g->dp * g->sp);
    snprintf(dp, sizeof dp, "training.dp=%d", g->dp);
    snprintf(sp, sizeof sp, "training.sp=%d", g->sp);
    snprintf(gb, sizeof gb, "training.global_batch=%u", g->per_rank * (unsigned)g->dp);
    snprintf(lb, sizeof lb, "cost.logits_bytes=%s", logits_bytes);
    if ((st = vl_config_init_default(cfg, err)) != VL_OK)
        return st;
    for (size_t i = 0; sets[i] != NULL; i++)
        if ((st = vl_config_set(cfg, sets[i], err)) != VL_OK)
            return st;
    for (size_t i = 0; extra && extra[i] != NULL; i++)
        if ((st = vl_config_set(cfg, extra[i], err)) != VL_OK)
            return st;
    if ((st = vl_config_finalize(cfg, err)) != VL_OK)
        return st;
    snprintf(gb, sizeof gb, "training.max_seq_len=%u",
             vl__sk_auto_bucket_of(cfg) * (unsigned)g->sp);
    if ((st = vl_config_set(cfg, gb, err)) != VL_OK)
        return st;
    return vl_config_finalize(cfg, err);
}

static vl_manifest *manifest(const char *dist, size_t n, vl_err *err)
{
    uint32_t *len = malloc(n * sizeof *len);
    vl_manifest *m = NULL;

    if (len && vl_gen_lengths(len, n, dist, 1, err) == VL_OK)
        (void)vl_manifest_from_lengths(&m, len, n, err);
    free(len);
    return m;
}

typedef struct result {
    double iter_ms, barrier_ms, peak_gib;
    bool oom;
} result;

/* The -v figure "with Megatron's group barriers X ms per iteration", or 0. */
static double barrier_of(const char *log)
{
    const char *p = log ? strstr(log, "group barriers ") : NULL;
    return p ? strtod(p + strlen("group barriers "), NULL) : 0.0;
}

static vl_status simulate(const vl_strategy *s, vl_manifest *m, const setting *g,
                          const char *const *extra, result *r, vl_err *err)
{
    vl_config cfg = {0};
    vl_run_opts o = {.seed = 1, .allow_oom = true, .verbose = 1};
    vl_plan p = {0};
    vl_sim_summary sum;
    vl_cost c;
    double bar = 0.0;
    vl_status st = make_config(&cfg, g, extra, err);

    if (st == VL_OK) {
        vl_run_result res;
        st = vl_run_plan(&p, s, m, &cfg, &o, &res, err);
        if (st == VL_OK) {
            bar = barrier_of(res.log);
            free(res.log);
        }
    }
    if (st == VL_OK)
        st = vl_cost_init(&c, &cfg, err);
    if (st == VL_OK)
        st = vl_sim_plan(&p, &c, NULL, &sum, err);
    if (st == VL_OK)
        *r = (result){.iter_ms = sum.iter_time_ms.mean,
                      .barrier_ms = bar,
                      .peak_gib = sum.peak_mem_gib.max,
                      .oom = sum.oom};
    vl_plan_free(&p);
    vl_config_free(&cfg);
    return st;
}

enum { DEEPSPEED, SKRULL, SKRULL_IT, MCORE, MCORE_NB, NROWS };
static const char *const micro[] = {"training.dp_sync=micro_step", NULL};
static const char *const no_barrier[] = {"mcore_cp.barrier=off", NULL};
static const char *const one_sample[] = {"training.micro_batch=1",
                                         "training.dp_sync=micro_step", NULL};

static vl_status run_rows(vl_manifest *m, const setting *g, result *r, vl_err *err)
{
    vl_status st = simulate(&vl_strategy_random, m, g, one_sample, &r[DEEPSPEED], err);

    if (st == VL_OK)
        st = simulate(&vl_strategy_skrull, m, g, micro, &r[SKRULL], err);
    if (st == VL_OK)
        st = simulate(&vl_strategy_skrull, m, g, NULL, &r[SKRULL_IT], err);
    if (st == VL_OK)
        st = simulate(&vl_strategy_mcore_cp, m, g, NULL, &r[MCORE], err);
    if (st == VL_OK)
        st = simulate(&vl_strategy_mcore_cp, m, g, no_barrier, &r[MCORE_NB], err);
    return st;
}

static double ratio(const result *a, const result *b)
{
    return a->oom || b->oom || b->iter_ms <= 0 ? 0.0 : a->iter_ms / b->iter_ms;
}

static vl_status paper_table(vl_err *err)
{
    static const struct {
        const char *dist;
        setting g;
        size_t n;
    } ex[] = {
        {"wikipedia", {"qwen2.5-0.5b", 4, 8, 64}, 10240},
        {"lmsys", {"qwen2.5-0.5b", 4, 8, 64}, 10240},
        {"chatqa2-long", {"qwen2.5-0.5b", 4, 8, 64}, 4096},
        {"wikipedia", {"qwen2.5-7b", 4, 8, 64}, 10240},
        {"lmsys", {"qwen2.5-7b", 4, 8, 64}, 10240},
        {"chatqa2-long", {"qwen2.5-7b", 2, 16, 40}, 4000},
    };
    vl_status st = VL_OK;

    printf("## Skrull's paper setting: simulated iteration ms (cost.logits_bytes=%s; * = "
           "exceeds memory)\n",
           logits_bytes);
    printf("%-13s %-13s %-9s %9s %9s %9s %9s %9s %9s  %8s %8s %9s %6s\n", "model", "dataset",
           "layout", "deepspeed", "skrull", "skrull_it", "mcore", "mcore_nb", "est",
           "ds/mcore", "mc/skr", "mc/skr_it", "GiB");
    for (size_t i = 0; i < sizeof ex / sizeof ex[0] && st == VL_OK; i++) {
        result r[NROWS];
        vl_manifest *m = manifest(ex[i].dist, ex[i].n, err);
        if (m == NULL)
            return VL_ENOMEM;
        st = run_rows(m, &ex[i].g, r, err);
        vl_manifest_free(m);
        if (st != VL_OK)
            break;
        printf("%-13s %-13s dp%-2d cp%-2d %8.1f%s %9.1f %9.1f %8.1f%s %9.1f %9.1f  %7.2fx "
               "%7.2fx %8.2fx %6.1f\n",
               ex[i].g.model, ex[i].dist, ex[i].g.dp, ex[i].g.sp, r[DEEPSPEED].iter_ms,
               r[DEEPSPEED].oom ? "*" : " ", r[SKRULL].iter_ms, r[SKRULL_IT].iter_ms,
               r[MCORE].iter_ms, r[MCORE].oom ? "*" : " ", r[MCORE_NB].iter_ms,
               r[MCORE].barrier_ms, ratio(&r[DEEPSPEED], &r[MCORE]),
               ratio(&r[MCORE], &r[SKRULL]), ratio(&r[MCORE], &r[SKRULL_IT]),
               r[MCORE].peak_gib);
    }
    return st;
}

/* ---- planning speed ------------------------------------------------------------------ */

static vl_status time_plan(vl_manifest *m, const setting *g, double *best_s, double *cpu_s,
                           size_t *iters, vl_err *err)
{
    const vl_strategy *s = &vl_strategy_mcore_cp;
    vl_config cfg = {0};
    void *opts = calloc(1, s->opts_size);
    vl_selection sel = {0};
    vl_cost c;
    vl_status st = opts ? make_config(&cfg, g, NULL, err) : VL_ENOMEM;

    if (st == VL_OK)
        st = vl_config_bind(&cfg, s->section, s->params, opts, err);
    if (st == VL_OK)
        st = vl_cost_init(&c, &cfg, err);
    if (st == VL_OK)
        st = vl_select(&sel, m, s->max_len(opts, &cfg), cfg.training.oversize, err);
    for (int r = 0; r < 3 && st == VL_OK; r++) {
        vl_plan p = {0};
        vl_job job = {.m = m, .cfg = &cfg, .cost = &c, .sel = &sel, .seed = 1};
        st = vl_plan_init(&p, m, s->name, 1, err);
        double t0 = clock_s(CLOCK_MONOTONIC), c0 = clock_s(CLOCK_PROCESS_CPUTIME_ID);
        if (st == VL_OK)
            st = vl_strategy_plan(s, opts, &job, &p, err);
        double t = clock_s(CLOCK_MONOTONIC) - t0, ct = clock_s(CLOCK_PROCESS_CPUTIME_ID) - c0;
        *best_s = r == 0 || t < *best_s ? t : *best_s;
        *cpu_s = r == 0 || ct < *cpu_s ? ct : *cpu_s;
        *iters = p.niters;
        vl_plan_free(&p);
    }
    vl_selection_free(&sel);
    vl_config_free(&cfg);
    free(opts);
    return st;
}

static vl_status speed(size_t n, vl_err *err)
{
    static const char *const dists[] = {"wikipedia", "lmsys", "chatqa2-long"};
    setting g = {"qwen2.5-0.5b", 4, 8, 64};
    vl_status st = VL_OK;

    printf("## planning speed: mcore_cp plan() alone (scheduling, emission and the barrier "
           "estimate), best of 3, %zu samples, batches of 256, qwen2.5-0.5b dp4 cp8\n",
           n);
    for (size_t i = 0; i < 3 && st == VL_OK; i++) {
        vl_manifest *m = manifest(dists[i], n, err);
        double t = 0, cpu = 0;
        size_t iters = 0;
        if (m == NULL)
            return VL_ENOMEM;
        st = time_plan(m, &g, &t, &cpu, &iters, err);
        vl_manifest_free(m);
        if (st == VL_OK)
            printf("%-13s epoch %.3f s wall (%.3f s CPU), %zu batches, %.3f ms per batch "
                   "wall (%.3f CPU)\n",
                   dists[i], t, cpu, iters, iters ? t * 1e3 / (double)iters : 0,
                   iters ? cpu * 1e3 / (double)iters : 0);
    }
    return st;
}

int main(int argc, char **argv)
{
    size_t n = argc > 1 ? strtoul(argv[1], NULL, 10) : 1000000;
    vl_err err = {0};
    vl_status st;

    if (argc > 2)
        logits_bytes = argv[2];
    st = paper_table(&err);
    if (st == VL_OK && n > 0)
        st = speed(n, &err);
    if (st != VL_OK) {
        fprintf(stderr, "bench_mcore_cp: %s\n", err.msg);
        return 1;
    }
    return 0;
}
