/* bench/bench_skrull.c -- Skrull on the paper's settings (the skrull paper, docs/papers.md §5): Qwen2.5-0.5B
 * and 7B on 32 H100, <DP 4, CP 8>, 64 sequences per DP rank (7B on ChatQA2: <DP 2, CP 16>,
 * 40 per DP rank), ZeRO-2 with gradients reduced every micro-step (DeepSpeed), selective
 * recompute, ring CP, lengths from `vlplan gen` wikipedia, lmsys and chatqa2-long.
 * Rows: the paper's baseline (DeepSpeed: every sequence sharded over CP, one sample per
 * micro-batch = `random` with training.micro_batch 1), DACP only (skrull.gds off), GDS
 * only (skrull.dacp off) and Skrull.  Prints simulated iteration times, speedups over the
 * baseline beside the paper's, the batch-size sweep of its figure 4 (ChatQA2, 0.5B, 8 to
 * 54 per DP rank), the shape checks of issue 10 item 6 (PASS/FAIL), and the planning
 * speed of item 8 (plan() alone, best of 3: per 256-sequence batch, and a whole epoch).
 *
 * The batch-size check allows 2%: in this cost model the gain is flat in batch size
 * (every micro-batch of ChatQA2 at 0.5B ends up mostly sharded, so a sequence costs the
 * same in any batch), and the composition of the batches moves it by about that much.
 *
 *   bench_skrull [SPEED_N [LOGITS_BYTES]]   defaults: 1000000 samples, the project's
 *                                           cost.logits_bytes (12: an unfused HF loss,
 *                                           DeepSpeed's runtime)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_util.h"
#include "gen.h"
#include "run.h"
#include "sim.h"
#include "skrull_impl.h"
#include "vlplan_strategy.h"

extern const vl_strategy vl_strategy_skrull, vl_strategy_random;

static const char *logits_bytes; /* NULL: the config's default */

/* One experiment: model, layout, batch per DP rank. */
typedef struct setting {
    const char *model;
    int dp, sp;
    unsigned per_rank;
} setting;

static vl_status make_config(vl_config *cfg, const setting *g, const char *const *extra,
                             vl_err *err)
{
    char model[64], gpus[64], dp[64], sp[64], gb[64], lb[64];
    const char *sets[] = {model, gpus, dp, sp, gb, "cluster.gpus_per_node=8",
                          "training.sp_kind=ring", "training.oversize=drop", "training.zero=2",
                          "training.recompute=selective", "training.dp_sync=micro_step",
                          /* DeepSpeed's bf16 mode reduces bf16 gradients */
                          "training.grad_bytes=2", logits_bytes ? lb : NULL, NULL};
    vl_status st;

    snprintf(model, sizeof model, "model.preset=%s", g->model);
    snprintf(gpus, sizeof gpus, "cluster.gpus=%d", g->dp * g->sp);
    snprintf(dp, sizeof dp, "training.dp=%d", g->dp);
    snprintf(sp, sizeof sp, "training.sp=%d", g->sp);
    snprintf(gb, sizeof gb, "training.global_batch=%u", g->per_rank * (unsigned)g->dp);
    snprintf(lb, sizeof lb, "cost.logits_bytes=%s", logits_bytes ? logits_bytes : "");
    if ((st = bench_config(cfg, NULL, sets, extra, err)) != VL_OK)
        return st;
    /* every row plans the same samples: those Skrull can place (C·N tokens) */
    snprintf(gb, sizeof gb, "training.max_seq_len=%u",
             vl__sk_auto_bucket_of(cfg) * (unsigned)g->sp);
    if ((st = vl_config_set(cfg, gb, err)) != VL_OK)
        return st;
    return vl_config_finalize(cfg, err);
}

static vl_manifest *manifest(const char *dist, size_t n, vl_err *err)
{
    vl_manifest *m = NULL;

    (void)bench_manifest(&m, dist, n, 1, err);
    return m;
}

/* ---- simulated step times ------------------------------------------------------------ */

typedef struct result {
    double iter_ms, peak_gib;
    bool oom;
} result;

static vl_status simulate(const vl_strategy *s, vl_manifest *m, const setting *g,
                          const char *const *extra, result *r, vl_err *err)
{
    vl_config cfg = {0};
    vl_run_opts o = {.seed = 1, .allow_oom = true};
    vl_plan p = {0};
    vl_sim_summary sum;
    vl_cost c;
    vl_status st = make_config(&cfg, g, extra, err);

    if (st == VL_OK) {
        vl_run_result res;
        st = vl_run_plan(&p, s, m, &cfg, &o, &res, err);
        if (st == VL_OK)
            free(res.log);
    }
    if (st == VL_OK)
        st = vl_cost_init(&c, &cfg, err);
    if (st == VL_OK)
        st = vl_sim_plan(&p, &c, NULL, &sum, err);
    if (st == VL_OK)
        *r = (result){.iter_ms = sum.iter_time_ms.mean,
                      .peak_gib = sum.peak_mem_gib.max,
                      .oom = sum.oom};
    vl_plan_free(&p);
    vl_config_free(&cfg);
    return st;
}

enum { DEEPSPEED, DACP_ONLY, GDS_ONLY, SKRULL, NROWS };
static const char *const row_name[NROWS] = {"deepspeed", "dacp_only", "gds_only", "skrull"};
static const char *const one_sample[] = {"training.micro_batch=1", NULL};
static const char *const gds_off[] = {"skrull.gds=off", NULL};
static const char *const dacp_off[] = {"skrull.dacp=off", NULL};

static vl_status run_rows(vl_manifest *m, const setting *g, result *r, unsigned *bucket,
                          vl_err *err)
{
    vl_config cfg = {0};
    vl_status st = make_config(&cfg, g, NULL, err);

    *bucket = st == VL_OK ? vl__sk_auto_bucket_of(&cfg) : 0;
    vl_config_free(&cfg);
    if (st == VL_OK)
        st = simulate(&vl_strategy_random, m, g, one_sample, &r[DEEPSPEED], err);
    if (st == VL_OK)
        st = simulate(&vl_strategy_skrull, m, g, gds_off, &r[DACP_ONLY], err);
    if (st == VL_OK)
        st = simulate(&vl_strategy_skrull, m, g, dacp_off, &r[GDS_ONLY], err);
    if (st == VL_OK)
        st = simulate(&vl_strategy_skrull, m, g, NULL, &r[SKRULL], err);
    return st;
}

/* Baseline time over r's: n/a (0) when the baseline does not fit. */
static double speedup(const result *base, const result *r)
{
    return base->oom || r->oom || r->iter_ms <= 0 ? 0.0 : base->iter_ms / r->iter_ms;
}

static int checks_failed;

static void check(bool ok, const char *what)
{
    printf("  %s  %s\n", ok ? "PASS" : "FAIL", what);
    checks_failed += !ok;
}

typedef struct experiment {
    const char *model, *dist;
    setting g;
    size_t n;
    result r[NROWS];
    double sp;       /* Skrull over the baseline */
    unsigned bucket; /* C auto */
} experiment;

static void print_row(const experiment *e)
{
    double dacp = speedup(&e->r[DEEPSPEED], &e->r[DACP_ONLY]);
    printf("%-13s %-13s dp%-2d cp%-2d %6u %8.1f%s %8.1f %8.1f %8.1f  %5.2fx  %5.2fx  %5.1f\n",
           e->model, e->dist, e->g.dp, e->g.sp, e->bucket, e->r[DEEPSPEED].iter_ms,
           e->r[DEEPSPEED].oom ? "*" : " ", e->r[DACP_ONLY].iter_ms, e->r[GDS_ONLY].iter_ms,
           e->r[SKRULL].iter_ms, e->sp, dacp, e->r[SKRULL].peak_gib);
}

static vl_status paper_table(vl_err *err)
{
    experiment ex[] = {
        {.model = "qwen2.5-0.5b",
         .dist = "wikipedia",
         .g = {"qwen2.5-0.5b", 4, 8, 64},
         .n = 10240},
        {.model = "qwen2.5-0.5b",
         .dist = "lmsys",
         .g = {"qwen2.5-0.5b", 4, 8, 64},
         .n = 10240},
        {.model = "qwen2.5-0.5b",
         .dist = "chatqa2-long",
         .g = {"qwen2.5-0.5b", 4, 8, 64},
         .n = 4096},
        {.model = "qwen2.5-7b",
         .dist = "wikipedia",
         .g = {"qwen2.5-7b", 4, 8, 64},
         .n = 10240},
        {.model = "qwen2.5-7b", .dist = "lmsys", .g = {"qwen2.5-7b", 4, 8, 64}, .n = 10240},
        {.model = "qwen2.5-7b",
         .dist = "chatqa2-long",
         .g = {"qwen2.5-7b", 2, 16, 40},
         .n = 4000},
    };
    size_t n = sizeof ex / sizeof ex[0];
    vl_status st = VL_OK;
    double mean[2] = {0, 0};
    int cnt[2] = {0, 0};
    bool faster = true, ordered = true, fits = true;

    printf("## paper setting: simulated iteration ms (cost.logits_bytes=%s; * = the "
           "baseline exceeds memory)\n",
           logits_bytes ? logits_bytes : "default");
    printf("%-13s %-13s %-9s %6s %9s %8s %8s %8s  %6s  %6s  %5s\n", "model", "dataset",
           "layout", "C", row_name[0], row_name[1], row_name[2], row_name[3], "skrull", "dacp",
           "GiB");
    for (size_t i = 0; i < n && st == VL_OK; i++) {
        experiment *e = &ex[i];
        vl_manifest *m = manifest(e->dist, e->n, err);
        if (m == NULL)
            return VL_ENOMEM;
        st = run_rows(m, &e->g, e->r, &e->bucket, err);
        vl_manifest_free(m);
        if (st != VL_OK)
            break;
        e->sp = speedup(&e->r[DEEPSPEED], &e->r[SKRULL]);
        print_row(e);
        int k = strcmp(e->model, "qwen2.5-7b") == 0;
        if (e->sp > 0) {
            mean[k] += e->sp;
            cnt[k]++;
        }
        faster &= e->r[DEEPSPEED].oom || e->sp > 1.0;
        ordered &= e->r[DEEPSPEED].oom || (e->r[DEEPSPEED].iter_ms > e->r[DACP_ONLY].iter_ms &&
                                           e->r[DACP_ONLY].iter_ms > e->r[SKRULL].iter_ms);
        fits &= !e->r[SKRULL].oom && !e->r[DACP_ONLY].oom && !e->r[GDS_ONLY].oom;
    }
    if (st != VL_OK)
        return st;
    for (int k = 0; k < 2; k++)
        mean[k] = cnt[k] ? mean[k] / cnt[k] : 0;
    printf("mean speedup over the baseline: 0.5B %.2fx (paper 5.50x), 7B %.2fx (paper "
           "2.03x), all %.2fx (paper 3.76x average, 7.54x peak)\n",
           mean[0], mean[1],
           cnt[0] + cnt[1] ? (mean[0] * cnt[0] + mean[1] * cnt[1]) / (cnt[0] + cnt[1]) : 0);
    printf("checks (issue 10 item 6):\n");
    check(faster, "Skrull faster than the baseline on every set where the baseline fits");
    check(ex[0].sp >= 1.5 && ex[1].sp >= 1.5, ">= 1.5x for 0.5B on wikipedia and lmsys");
    check(mean[0] > mean[1], "0.5B gains more than 7B (mean speedups)");
    check(ex[0].sp > ex[2].sp && ex[1].sp > ex[2].sp &&
              (ex[5].sp == 0 || (ex[3].sp > ex[5].sp && ex[4].sp > ex[5].sp)),
          "long-tail sets gain more than ChatQA2 (each model)");
    check(ordered, "baseline slower than DACP only, DACP only slower than Skrull");
    check(fits, "no Skrull plan (any ablation) exceeds device memory");
    return VL_OK;
}

/* Figure 4: ChatQA2, 0.5B, batch per DP rank 8 .. 54. */
static vl_status batch_sweep(vl_err *err)
{
    static const unsigned per_rank[] = {8, 16, 24, 32, 40, 48, 54};
    enum { NPOINTS = sizeof per_rank / sizeof per_rank[0] };
    vl_manifest *m = manifest("chatqa2-long", 4320, err);
    double x[NPOINTS];
    vl_status st = m ? VL_OK : VL_ENOMEM;

    printf("## batch size sweep (figure 4): chatqa2-long, qwen2.5-0.5b, dp4 cp8\n");
    printf("%-9s %10s %10s %8s\n", "per rank", "deepspeed", "skrull", "speedup");
    for (size_t i = 0; i < NPOINTS && st == VL_OK; i++) {
        setting g = {"qwen2.5-0.5b", 4, 8, per_rank[i]};
        result b, s;
        st = simulate(&vl_strategy_random, m, &g, one_sample, &b, err);
        if (st == VL_OK)
            st = simulate(&vl_strategy_skrull, m, &g, NULL, &s, err);
        if (st != VL_OK)
            break;
        x[i] = speedup(&b, &s);
        printf("%-9u %10.1f %10.1f %7.3fx\n", per_rank[i], b.iter_ms, s.iter_ms, x[i]);
    }
    vl_manifest_free(m);
    if (st != VL_OK)
        return st;
    double low = (x[0] + x[1] + x[2]) / 3, high = (x[4] + x[5] + x[6]) / 3;
    printf("gain at 54 / gain at 8 = %.3f; mean gain 40-54 / mean gain 8-24 = %.3f\n",
           x[6] / x[0], high / low);
    check(x[6] >= 0.98 * x[0] && high >= 0.98 * low,
          "the gain does not fall from batch 8 to 54 per DP rank (within 2%)");
    return st;
}

/* ---- planning speed ------------------------------------------------------------------ */

static vl_status time_plan(vl_manifest *m, const setting *g, double *best_s, double *cpu_s,
                           size_t *iters, vl_err *err)
{
    vl_config cfg = {0};
    bench_plan_time t = {0};
    vl_status st = make_config(&cfg, g, NULL, err);

    if (st == VL_OK)
        st = bench_time_plan(&vl_strategy_skrull, m, &cfg, 3, &t, err);
    *best_s = t.wall_s;
    *cpu_s = t.cpu_s;
    *iters = t.iters;
    vl_config_free(&cfg);
    return st;
}

static vl_status speed(size_t n, vl_err *err)
{
    static const char *const dists[] = {"wikipedia", "lmsys", "chatqa2-long"};
    setting g = {"qwen2.5-0.5b", 4, 8, 64};
    vl_status st = VL_OK;
    bool fast = true;

    printf("## planning speed: plan() alone, best of 3, %zu samples, batches of 256, "
           "qwen2.5-0.5b dp4 cp8\n",
           n);
    for (size_t i = 0; i < 3 && st == VL_OK; i++) {
        vl_manifest *m = manifest(dists[i], n, err);
        double t = 0, cpu = 0;
        size_t iters = 0;
        if (m == NULL)
            return VL_ENOMEM;
        st = time_plan(m, &g, &t, &cpu, &iters, err);
        vl_manifest_free(m);
        if (st != VL_OK)
            break;
        double per = iters ? t * 1e3 / (double)iters : 0;
        printf("%-13s epoch %.3f s wall (%.3f s CPU), %zu batches, %.3f ms per batch wall "
               "(%.3f CPU)\n",
               dists[i], t, cpu, iters, per, iters ? cpu * 1e3 / (double)iters : 0);
        fast &= per <= 1.0 && (n < 1000000 || t <= 2.0);
    }
    if (st == VL_OK)
        check(fast, "<= 1 ms per 256-sequence batch and a 1M-sample epoch <= 2 s");
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
    if (st == VL_OK)
        st = batch_sweep(&err);
    if (st == VL_OK && n > 0)
        st = speed(n, &err);
    if (st != VL_OK) {
        fprintf(stderr, "bench_skrull: %s\n", err.msg);
        return 1;
    }
    printf("%d check(s) failed\n", checks_failed);
    return 0;
}
