/* bench/bench_chunkflow.c -- ChunkFlow on the paper's evaluation setting: lengths from
 * `chunkflow-eval` (ChunkFlow Table 2), Qwen2.5-7B, 256K context, <TP4, SP4 (ring),
 * PP4>, global batch 256.  Prints the planning time per global batch (the strategy's
 * plan() alone, CPU time, best of 5 runs; target: at most 1 ms on average) and the
 * simulated step time, bubble and peak memory of ChunkFlow (the paper's best (8K, 4),
 * the default (8K, 1), and the grid search) against fixed-length packing (`pack`,
 * capacity 256K) with selective and with full recompute (the paper's Megatron-LM
 * baseline at 256K uses full).
 *
 * Then planning speed at scale (issue 9: near-linear): N samples (default 1M) of three
 * length distributions, Llama-3.1-8B on 32 GPUs, 32K context (and 8K for the uniform
 * lengths: nothing split, every sample bin-packed; longer samples dropped), the
 * default chunk_size 8192 and K 1, global batches of 16M and 64M tokens: plan() alone
 * (construction, rank balance, the per-batch memory check by simulation, and
 * emission), in CPU seconds, best of 3.  Targets for 1M samples: <= 3 s at 16M-token
 * batches, <= 10 s at 64M.
 *
 *   bench_chunkflow [BATCHES [DP [N]]]   defaults: 40 batches of 256 samples, dp 2, 1M
 *   bench_chunkflow speed [N]            only the speed rows
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_util.h"
#include "run.h"
#include "sim.h"
#include "vlplan_strategy.h"

extern const vl_strategy vl_strategy_chunkflow;

static vl_status make_config(vl_config *cfg, int dp, const char *recompute, const char *chunk,
                             const char *k, vl_err *err)
{
    char gpus[64], rc[64], cs[64], ks[64];
    const char *sets[] = {"model.preset=qwen2.5-7b",
                          gpus,
                          "training.tp=4",
                          "training.sp=4",
                          "training.sp_kind=ring",
                          "training.pp=4",
                          "training.max_seq_len=262144",
                          "training.global_batch=256",
                          "training.oversize=drop",
                          rc,
                          cs,
                          ks,
                          NULL};

    snprintf(gpus, sizeof gpus, "cluster.gpus=%d", 64 * dp);
    snprintf(rc, sizeof rc, "training.recompute=%s", recompute);
    snprintf(cs, sizeof cs, "chunkflow.chunk_size=%s", chunk);
    snprintf(ks, sizeof ks, "chunkflow.k=%s", k);
    return bench_config(cfg, NULL, sets, NULL, err);
}

/* Planning time per global batch: plan() alone, CPU time (on a shared machine wall
 * time measures the neighbours too), the best of reps runs against machine noise. */
#define REPS 5
static vl_status time_plan_reps(const vl_strategy *s, vl_manifest *m, const vl_config *cfg,
                                int reps, double *ms, size_t *iters, vl_err *err)
{
    bench_plan_time t;
    vl_status st = bench_time_plan(s, m, cfg, reps, &t, err);

    *iters = t.iters;
    *ms = t.cpu_s * 1e3 / (double)(t.iters ? t.iters : 1);
    return st;
}

static vl_status time_plan(const vl_strategy *s, vl_manifest *m, const vl_config *cfg,
                           double *ms, vl_err *err)
{
    size_t iters = 0;
    return time_plan_reps(s, m, cfg, REPS, ms, &iters, err);
}

static vl_status row(const char *name, const vl_strategy *s, vl_manifest *m, int dp,
                     const char *recompute, const char *chunk, const char *k, vl_err *err)
{
    vl_config cfg = {0};
    vl_run_opts o = {.seed = 1, .verbose = 1, .allow_oom = true};
    vl_plan p = {0};
    vl_sim_summary sum;
    vl_cost c;
    char *log = NULL;
    double ms = 0.0;
    vl_status st = make_config(&cfg, dp, recompute, chunk, k, err);

    if (st == VL_OK)
        st = time_plan(s, m, &cfg, &ms, err);
    if (st == VL_OK) {
        vl_run_result res;
        st = vl_run_plan(&p, s, m, &cfg, &o, &res, err);
        log = res.log;
    }
    if (st == VL_OK)
        st = vl_cost_init(&c, &cfg, err);
    if (st == VL_OK)
        st = vl_sim_plan(&p, &c, NULL, &sum, err);
    if (st == VL_OK) {
        const char *chose = log ? strstr(log, "chose ") : NULL;
        printf("%-28s %-10s %8.3f %10.0f %7.3f %8.2f %s", name, recompute, ms,
               sum.iter_time_ms.mean, sum.bubble.mean, sum.peak_mem_gib.max,
               sum.oom ? "OOM" : "ok");
        const char *mbs = log ? strstr(log, "chunkflow: chunk_size=") : NULL;
        if (chose)
            printf("  (%.*s)", (int)strcspn(chose, "\n"), chose);
        printf("\n");
        if (mbs)
            printf("    %.*s\n", (int)strcspn(mbs, "\n"), mbs);
    }
    free(log);
    vl_plan_free(&p);
    vl_config_free(&cfg);
    return st;
}

/* ---- planning speed at scale ------------------------------------------------------ */

static vl_status speed_config(vl_config *cfg, const char *ctx, const char *tokens, vl_err *err)
{
    const char *sets[] = {ctx, "training.oversize=drop", tokens, NULL};

    return bench_config(cfg, NULL, sets, NULL, err);
}

static vl_status speed_rows(size_t n, vl_err *err)
{
    /* the last row has 8K context = the chunk size: nothing is split, every sample is
     * bin-packed, which is where trying every bin count cost most */
    static const char *const dists[] = {"chunkflow-eval", "lmsys", "uniform:1:16384",
                                        "uniform:1:16384"};
    static const char *const ctxs[] = {
        "training.max_seq_len=32768", "training.max_seq_len=32768",
        "training.max_seq_len=32768", "training.max_seq_len=8192"};
    static const char *const budgets[] = {"training.global_tokens=16777216",
                                          "training.global_tokens=67108864"};
    vl_status st = VL_OK;

    printf("\nplanning speed: %zu samples, llama3.1-8b, 32 GPUs (dp 32), longer than the "
           "context dropped, chunk_size 8192, k 1; plan() alone, CPU seconds, best of 3\n",
           n);
    printf("%-18s %-4s %-6s %6s %10s %10s\n", "lengths", "ctx", "batch", "iters", "plan_s",
           "per_iter");
    for (size_t d = 0; d < 4 && st == VL_OK; d++) {
        vl_manifest *m = NULL;
        if ((st = bench_manifest(&m, dists[d], n, 1, err)) != VL_OK)
            break;
        for (size_t b = 0; b < 2 && st == VL_OK; b++) {
            vl_config cfg = {0};
            double ms = 0.0;
            size_t iters = 0;
            if ((st = speed_config(&cfg, ctxs[d], budgets[b], err)) == VL_OK)
                st = time_plan_reps(&vl_strategy_chunkflow, m, &cfg, 3, &ms, &iters, err);
            if (st == VL_OK)
                printf("%-18s %-4s %-6s %6zu %10.3f %8.1f ms\n", dists[d],
                       d == 3 ? "8K" : "32K", b ? "64M" : "16M", iters,
                       ms * (double)iters / 1e3, ms);
            vl_config_free(&cfg);
        }
        vl_manifest_free(m);
    }
    return st;
}

int main(int argc, char **argv)
{
    bool speed_only = argc > 1 && strcmp(argv[1], "speed") == 0;
    size_t batches = argc > 1 && !speed_only ? strtoul(argv[1], NULL, 10) : 40;
    int dp = argc > 2 && !speed_only ? atoi(argv[2]) : 2;
    size_t nspeed = speed_only ? (argc > 2 ? strtoul(argv[2], NULL, 10) : 1000000)
                               : (argc > 3 ? strtoul(argv[3], NULL, 10) : 1000000);
    size_t n = batches * 256;
    const vl_strategy *pack = vl_strategy_find("pack");
    vl_manifest *m = NULL;
    vl_err err = {0};
    vl_status st;

    if (pack == NULL || dp < 1) {
        fprintf(stderr, "bench_chunkflow: bad setup\n");
        return 1;
    }
    if (speed_only) {
        st = speed_rows(nspeed, &err);
        goto done;
    }
    if ((st = bench_manifest(&m, "chunkflow-eval", n, 1, &err)) != VL_OK)
        goto done;
    printf("chunkflow-eval, %zu samples (%zu global batches of 256), qwen2.5-7b, 256K "
           "context, tp4 sp4(ring) pp4, dp %d\n",
           n, batches, dp);
    printf("%-28s %-10s %8s %10s %7s %8s\n", "strategy", "recompute", "plan_ms", "step_ms",
           "bubble", "peak_gib");
    if ((st = row("chunkflow (8K, 4)", &vl_strategy_chunkflow, m, dp, "selective", "8192", "4",
                  &err)) != VL_OK ||
        (st = row("chunkflow (8K, 1) default", &vl_strategy_chunkflow, m, dp, "selective",
                  "8192", "1", &err)) != VL_OK ||
        (st = row("chunkflow auto", &vl_strategy_chunkflow, m, dp, "selective", "auto", "auto",
                  &err)) != VL_OK ||
        (st = row("pack (256K)", pack, m, dp, "selective", "8192", "1", &err)) != VL_OK ||
        (st = row("pack (256K)", pack, m, dp, "full", "8192", "1", &err)) != VL_OK)
        goto done;
    st = speed_rows(nspeed, &err);
done:
    if (st != VL_OK)
        fprintf(stderr, "bench_chunkflow: %s\n", err.msg);
    vl_manifest_free(m);
    return st == VL_OK ? 0 : 1;
}
