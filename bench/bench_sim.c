/* bench/bench_sim.c -- simulator speed: 1,000 iterations of 32 ranks × 16 micro-batches
 * × 4 pipeline stages under the default analytic cost model (communication on),
 * built in memory.  Target (issue "simulator"): at most 1 s on a 2-core machine.
 *
 *   bench_sim [ITERS]
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "bench_util.h"
#include "config.h"
#include "cost.h"
#include "manifest.h"
#include "plan.h"
#include "sim.h"

#define RANKS 32
#define MBS 16
#define STAGES 4
#define NSAMPLES 65536

/* Lengths 64..8191 from a fixed LCG: no two runs differ. */
static vl_status make_manifest(vl_manifest **m, vl_err *err)
{
    static uint32_t len[NSAMPLES];
    uint64_t x = 42;
    for (size_t i = 0; i < NSAMPLES; i++) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        len[i] = 64 + (uint32_t)(x >> 33) % 8128;
    }
    return vl_manifest_from_lengths(m, len, NSAMPLES, err);
}

/* Each micro-batch packs whole samples up to 16K tokens, taken round-robin. */
static vl_status build(vl_plan *p, vl_manifest *m, size_t iters, vl_err *err)
{
    vl_par par = {.tp = 1, .pp = STAGES, .sp = 1, .ckpt_layers = 0};
    size_t next = 0;
    vl_status st = vl_plan_init(p, m, "bench", 0, err);

    for (size_t it = 0; it < iters && st == VL_OK; it++) {
        st = vl_plan_iter_begin(p, 0, err);
        for (int r = 0; r < RANKS && st == VL_OK; r++) {
            st = vl_plan_rank_begin(p, r, &par, err);
            for (int b = 0; b < MBS && st == VL_OK; b++) {
                uint32_t used = 0;
                st = vl_plan_mb_begin(p, 16384, err);
                while (st == VL_OK && used + m->len[next] <= 16384) {
                    used += m->len[next];
                    st = vl_plan_seg(p, (uint32_t)next, 0, m->len[next], err);
                    next = (next + 1) % m->n;
                }
            }
        }
    }
    return st;
}

static vl_status setup(vl_config *cfg, vl_cost *c, vl_err *err)
{
    vl_status st;
    if ((st = vl_config_init_default(cfg, err)) != VL_OK ||
        (st = vl_config_set(cfg, "cluster.gpus=128", err)) != VL_OK ||
        (st = vl_config_set(cfg, "training.pp=4", err)) != VL_OK ||
        (st = vl_config_finalize(cfg, err)) != VL_OK)
        return st;
    return vl_cost_init(c, cfg, err);
}

int main(int argc, char **argv)
{
    size_t iters = argc > 1 ? strtoul(argv[1], NULL, 10) : 1000;
    vl_config cfg = {0};
    vl_cost c;
    vl_manifest *m = NULL;
    vl_plan p = {0};
    vl_sim_summary s;
    vl_err err = {0};
    double t0, t1, c0, c1;
    int rc = 1;

    if (setup(&cfg, &c, &err) != VL_OK || make_manifest(&m, &err) != VL_OK ||
        build(&p, m, iters, &err) != VL_OK)
        goto done;
    t0 = bench_wall_s();
    c0 = bench_cpu_s();
    if (vl_sim_plan(&p, &c, NULL, &s, &err) != VL_OK)
        goto done;
    t1 = bench_wall_s();
    c1 = bench_cpu_s();
    printf("sim %zu iters x %d ranks x %d mbs x %d stages: %.3f s\n", iters, RANKS, MBS,
           STAGES, t1 - t0);
    /* wall time suffers when the machine is shared; CPU time does not */
    printf("  cpu %.3f s, %zu micro-batches, %.2f segments each\n", c1 - c0, p.nmbs,
           (double)p.nsegs / (double)p.nmbs);
    printf("  iter_time_ms mean %.1f, bubble %.4f, tbr %.4f, peak %.2f GiB, mfu %.3f%s\n",
           s.iter_time_ms.mean, s.bubble.mean, s.tbr.mean, s.peak_mem_gib.max, s.mfu_overall,
           s.oom ? ", out of memory" : "");
    rc = 0;
done:
    if (rc)
        fprintf(stderr, "bench_sim: %s\n", err.msg);
    vl_plan_free(&p);
    vl_manifest_free(m);
    vl_config_free(&cfg);
    return rc;
}
