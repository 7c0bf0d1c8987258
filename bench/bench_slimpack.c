/* bench/bench_slimpack.c -- SlimPack on the paper's setting (the slimpack paper, docs/papers.md §6): the 13B
 * shape (llama2-13b) on 128 H800 as TP 8 x PP 4 x DP 4, global batch 1024, against
 * best-fit packing (`pack`, pack.algo=bfd, capacity = the context) with 1F1B and
 * recompute auto (the fewest checkpointed layers that fit), both simulated by the
 * shared simulator.
 *
 *   bench_slimpack speed [N]     planning time per iteration (CPU and wall, best of 3):
 *                                greedy + simulation of every candidate (milp off), and
 *                                with the MILP (auto, on); N samples (default 4096) of
 *                                Common-Crawl-like lengths at 256K
 *   bench_slimpack paper [N]     per dataset (Common-Crawl-like lognormal(6.36, 2.33),
 *                                GitHub-like mooncake-conv, Wikipedia-like wikipedia)
 *                                and context (64K, 128K, 256K): throughput of pack and of
 *                                SlimPack asymmetric / symmetric, speedup, peak memory,
 *                                per-pack forward-work CV, worst backward pack against its
 *                                rank's mean, DP-Merge on/off rank gap, and SlimPack
 *                                planned within the whole device (mem_budget=device)
 *                                instead of the baseline's memory; N samples (default
 *                                4096) per set, lengths capped at the context
 *   bench_slimpack align [N]     backward-pack spread and throughput against slice_align
 *                                (128, 16, 1) on the Common-Crawl-like set */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_util.h"
#include "gen.h"
#include "run.h"
#include "sim.h"
#include "slimpack_impl.h"
#include "vlplan_strategy.h"

extern const vl_strategy vl_strategy_slimpack;

static vl_status make_config(vl_config *cfg, uint32_t ctx, const char *const *extra,
                             vl_err *err)
{
    char c[64];
    const char *sets[] = {"model.preset=llama2-13b",
                          "cluster.gpu=h800-80gb",
                          "cluster.gpus=128",
                          "training.tp=8",
                          "training.pp=4",
                          "training.dp=4",
                          "training.global_batch=1024",
                          c,
                          "training.oversize=truncate",
                          "training.recompute=auto",
                          "pack.algo=bfd",
                          NULL};

    snprintf(c, sizeof c, "training.max_seq_len=%u", ctx);
    return bench_config(cfg, NULL, sets, extra, err);
}

static vl_status make_manifest(vl_manifest **m, const char *dist, size_t n, vl_err *err)
{
    return bench_manifest(m, dist, n, 1, err);
}

/* ---- speed ---- */

/* The strategy's plan() alone, as vl_run_plan calls it: CPU and wall ms per iteration. */
static vl_status speed_row(vl_manifest *m, const char *label, const char *const *extra,
                           vl_err *err)
{
    vl_config cfg = {0};
    bench_plan_time t;
    vl_status st = make_config(&cfg, 262144, extra, err);

    if (st == VL_OK)
        st = bench_time_plan(&vl_strategy_slimpack, m, &cfg, 3, &t, err);
    if (st == VL_OK) {
        double n = (double)(t.iters ? t.iters : 1);
        printf("%-34s %10.1f %10.1f\n", label, t.cpu_s * 1e3 / n, t.wall_s * 1e3 / n);
    }
    vl_config_free(&cfg);
    return st;
}

static vl_status speed(size_t n, vl_err *err)
{
    static const char *const greedy[] = {"slimpack.milp=off", NULL};
    static const char *const greedy_auto[] = {"slimpack.milp=off", "slimpack.asymmetric=auto",
                                              NULL};
    static const char *const milp_auto[] = {"slimpack.milp=auto", NULL};
    static const char *const milp_on[] = {"slimpack.milp=on", NULL};
    static const char *const milp_on_auto[] = {"slimpack.milp=on", "slimpack.asymmetric=auto",
                                               NULL};
    vl_manifest *m = NULL;
    vl_status st = make_manifest(&m, "lognormal:6.36:2.33", n, err);

    printf("# slimpack planning time per iteration (ms, best of 3): %zu samples, 13B, "
           "TP8 PP4 DP4, gb 1024, 256K\n%-34s %10s %10s\n",
           n, "setting", "cpu_ms", "wall_ms");
    if (st == VL_OK)
        st = speed_row(m, "greedy+sim, asymmetric on", greedy, err);
    if (st == VL_OK)
        st = speed_row(m, "greedy+sim, asymmetric auto", greedy_auto, err);
    if (st == VL_OK)
        st = speed_row(m, "milp auto (default)", milp_auto, err);
    if (st == VL_OK)
        st = speed_row(m, "milp on", milp_on, err);
    if (st == VL_OK)
        st = speed_row(m, "milp on, asymmetric auto", milp_on_auto, err);
    vl_manifest_free(m);
    return st;
}

/* ---- paper-shaped results ---- */

typedef struct figures {
    double tps, iter_ms, peak, cv, bwd_dev, gap;
    bool oom;
} figures;

/* Forward work (FLOPs) of a pack. */
static double pack_flops(const vl_cost *c, const vl_plan *p, const vl_mb *mb)
{
    return vl_cost_fwd_flops(c, vl_plan_mb_segs(p, mb), mb->nseg);
}

/* Mean over (iteration, rank) of the coefficient of variation of the forward packs'
 * work, and the worst backward pack's |work - mean| / mean (SlimPack's backward work). */
static void balance(const vl_cost *c, const vl_plan *p, const sp_coef *k, figures *f)
{
    double cv_sum = 0, worst = 0;
    size_t n = 0;

    for (size_t r = 0; r < p->nranks; r++) {
        const vl_rank *rk = &p->ranks[r];
        double s = 0, s2 = 0, bs = 0;
        if (rk->nmb < 2)
            continue;
        for (uint32_t j = 0; j < rk->nmb; j++) {
            double w = pack_flops(c, p, &p->mbs[rk->mb0 + j]);
            s += w;
            s2 += w * w;
        }
        double mean = s / rk->nmb;
        cv_sum += sqrt(fmax(0, s2 / rk->nmb - mean * mean)) / mean;
        n++;
        for (int pass = 0; pass < 2 && rk->nbwd > 1; pass++)
            for (uint32_t j = 0; j < rk->nbwd; j++) {
                const vl_mb *mb = vl_plan_bwd(p, rk, j);
                const vl_seg *sg = vl_plan_mb_segs(p, mb);
                double w = 0;
                for (uint32_t q = 0; q < mb->nseg; q++)
                    w += vl__sp_work(k->ab, k->bb, sg[q].off, sg[q].off + sg[q].len);
                if (pass == 0)
                    bs += w;
                else if (mb->share == 0) /* a merged outlier's packs have their own target */
                    worst = fmax(worst, fabs(w - bs / rk->nbwd) / (bs / rk->nbwd));
            }
    }
    f->cv = n ? cv_sum / n : 0;
    f->bwd_dev = worst;
}

static vl_status run_one(vl_manifest *m, uint32_t ctx, const char *strategy,
                         const char *const *extra, figures *f, vl_err *err)
{
    vl_config cfg = {0};
    vl_run_opts o = {.seed = 1, .allow_oom = true};
    vl_plan p = {0};
    vl_sim_summary sum;
    vl_cost c;
    vl_status st = make_config(&cfg, ctx, extra, err);

    if (st == VL_OK)
        st = vl_cost_init(&c, &cfg, err);
    if (st == VL_OK)
        st = vl_run_plan(&p, vl_strategy_find(strategy), m, &cfg, &o, NULL, err);
    if (st == VL_OK)
        st = vl_sim_plan(&p, &c, NULL, &sum, err);
    if (st == VL_OK) {
        vl_par par = {8, 4, 1, 0};
        sp_coef k = vl__sp_coef(&c, &par, ctx);
        f->tps = sum.tokens_per_s;
        f->iter_ms = sum.iter_time_ms.mean;
        f->peak = sum.peak_mem_gib.max;
        f->gap = sum.rank_gap.mean;
        f->oom = sum.oom;
        balance(&c, &p, &k, f);
    }
    vl_plan_free(&p);
    vl_config_free(&cfg);
    return st;
}

static vl_status paper(size_t n, vl_err *err)
{
    static const char *const dists[3][2] = {
        {"cc", "lognormal:6.36:2.33"}, {"github", "mooncake-conv"}, {"wiki", "wikipedia"}};
    static const uint32_t ctxs[3] = {65536, 131072, 262144};
    static const char *const sym[] = {"slimpack.asymmetric=off", NULL};
    static const char *const nomerge[] = {"slimpack.dp_merge=false", NULL};
    static const char *const device[] = {"slimpack.mem_budget=device", NULL};
    vl_status st = VL_OK;

    printf("# slimpack vs best-fit packing: %zu samples per set, 13B, 128 H800 TP8 PP4 DP4, "
           "gb 1024\n%-7s %5s %10s %10s %10s %7s %7s %6s %6s %6s %6s %6s %7s %7s %7s %6s\n",
           n, "data", "ctx", "pack_tps", "asym_tps", "sym_tps", "x_asym", "x_sym", "pk_gib",
           "sp_gib", "pk_cv", "sp_cv", "bwd%", "gap_mrg", "gap_no", "x_dev", "dev_gib");
    for (int d = 0; d < 3 && st == VL_OK; d++) {
        vl_manifest *m = NULL;
        if ((st = make_manifest(&m, dists[d][1], n, err)) != VL_OK)
            break;
        for (int c = 0; c < 3 && st == VL_OK; c++) {
            figures b = {0}, a = {0}, s = {0}, nm = {0}, eq = {0};
            if ((st = run_one(m, ctxs[c], "pack", NULL, &b, err)) != VL_OK ||
                (st = run_one(m, ctxs[c], "slimpack", NULL, &a, err)) != VL_OK ||
                (st = run_one(m, ctxs[c], "slimpack", sym, &s, err)) != VL_OK ||
                (st = run_one(m, ctxs[c], "slimpack", nomerge, &nm, err)) != VL_OK)
                break;
            /* the whole device instead of the baseline's memory */
            if ((st = run_one(m, ctxs[c], "slimpack", device, &eq, err)) != VL_OK)
                break;
            printf("%-7s %4uK %10.0f %10.0f %10.0f %7.3f %7.3f %6.1f %6.1f %6.3f %6.3f %6.2f "
                   "%7.4f %7.4f %7.3f %6.1f%s%s\n",
                   dists[d][0], ctxs[c] / 1024, b.tps, a.tps, s.tps, a.tps / b.tps,
                   s.tps / b.tps, b.peak, a.peak, b.cv, a.cv, a.bwd_dev * 100, a.gap, nm.gap,
                   eq.tps / b.tps, eq.peak,
                   a.peak <= b.peak ? "" : "  (peak above the baseline's)",
                   b.oom || a.oom || s.oom || eq.oom ? "  (oom)" : "");
            fflush(stdout);
        }
        vl_manifest_free(m);
    }
    return st;
}

/* The backward packs' spread against slice_align on the Common-Crawl-like set: a cut is
 * rounded to an aligned token, and one 128-token block deep in a 256K sample is a few
 * per cent of a small pack's work. */
static vl_status align(size_t n, vl_err *err)
{
    static const uint32_t ctxs[3] = {65536, 131072, 262144};
    static const char *const aligns[3][3] = {
        {"slimpack.slice_align=128", NULL, NULL},
        {"slimpack.slice_align=16", "slimpack.min_slice_tokens=16", NULL},
        {"slimpack.slice_align=1", "slimpack.min_slice_tokens=1", NULL}};
    static const char *const names[3] = {"128", "16", "1"};
    vl_manifest *m = NULL;
    vl_status st = make_manifest(&m, "lognormal:6.36:2.33", n, err);

    printf("# slimpack backward packs vs slice_align, cc set, %zu samples\n%5s %6s %10s %8s "
           "%7s\n",
           n, "ctx", "align", "tps", "bwd%", "fwd_cv");
    for (int c = 0; c < 3 && st == VL_OK; c++)
        for (int a = 0; a < 3 && st == VL_OK; a++) {
            figures f = {0};
            if ((st = run_one(m, ctxs[c], "slimpack", aligns[a], &f, err)) == VL_OK)
                printf("%4uK %6s %10.0f %8.3f %7.4f%s\n", ctxs[c] / 1024, names[a], f.tps,
                       f.bwd_dev * 100, f.cv, f.oom ? "  (oom)" : "");
            fflush(stdout);
        }
    vl_manifest_free(m);
    return st;
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "speed";
    size_t n = argc > 2 ? strtoul(argv[2], NULL, 10) : 4096;
    vl_err err = {0};
    vl_status st;

    if (strcmp(mode, "speed") == 0)
        st = speed(n, &err);
    else if (strcmp(mode, "paper") == 0)
        st = paper(n, &err);
    else if (strcmp(mode, "align") == 0)
        st = align(n, &err);
    else {
        fprintf(stderr, "usage: bench_slimpack speed|paper|align [N]\n");
        return 64;
    }
    if (st != VL_OK) {
        fprintf(stderr, "bench_slimpack: %s\n", err.msg);
        return 1;
    }
    return 0;
}
