/* bench/bench_hbp.c -- HBP on the paper's setting (Llama-3.1-8B, 32 x H100, 128K,
 * tulu3-longcite): balance metrics and simulated epoch time against plain ISF packing at
 * SP 8, checked against the paper's shape; then planning speed at 1M and 10M samples.
 *
 *   bench_hbp [--quick] [--no-speed] [-n SAMPLES]
 *
 * --quick plans 100K samples for the metrics and skips 10M; exit status 1 when a check
 * fails. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_util.h"
#include "gen.h"
#include "metrics.h"
#include "run.h"
#include "sim.h"
#include "vlplan_strategy.h"

extern const vl_strategy vl_strategy_hbp;

#define PAPER_TRAINING "training: {max_seq_len: 131072, global_tokens: 524288, sp: 8"
#define PAPER_CFG "pack: {algo: isf}\n" PAPER_TRAINING "}\n"
#define PAPER_FULL "pack: {algo: isf}\n" PAPER_TRAINING ", recompute: full}\n"
#define PAPER_GROUPS PAPER_CFG "hbp: {groups: '16K:1,128K:8'}\n" /* the paper's choice */

static int fail(const char *what, const vl_err *err)
{
    fprintf(stderr, "bench_hbp: %s: %s\n", what, err->msg);
    return 2;
}

static int load_cfg(vl_config *cfg, const char *yaml, vl_err *err)
{
    if (vl_config_init_default(cfg, err) != VL_OK)
        return -1;
    if (vl_config_load_string(cfg, yaml, "bench", err) != VL_OK ||
        vl_config_finalize(cfg, err) != VL_OK) {
        vl_config_free(cfg);
        return -1;
    }
    return 0;
}

static int checks_failed;

static void check(const char *name, double v, double lo, double hi, const char *paper)
{
    int ok = v >= lo && v <= hi;
    printf("  %-34s %8.4f  in [%g, %g]  paper %-8s %s\n", name, v, lo, hi, paper,
           ok ? "ok" : "FAIL");
    checks_failed += !ok;
}

typedef struct result {
    vl_metrics mt;
    vl_sim_summary sim;
    double secs;
} result;

static int plan_one(const vl_strategy *s, vl_manifest *m, const vl_config *cfg, result *res,
                    char **log, vl_err *err)
{
    vl_run_opts ro = {.seed = 1, .verbose = log != NULL, .allow_oom = true};
    vl_run_result rr;
    vl_plan p;
    vl_cost cost;
    double t0 = bench_wall_s();
    vl_status st = vl_run_plan(&p, s, m, cfg, &ro, &rr, err);

    if (log)
        *log = rr.log;
    else
        free(rr.log);
    if (st != VL_OK)
        return -1;
    res->secs = bench_wall_s() - t0;
    if (vl_cost_init(&cost, cfg, err) != VL_OK ||
        vl_metrics_compute(&p, &res->mt, err) != VL_OK ||
        vl_sim_plan(&p, &cost, NULL, &res->sim, err) != VL_OK) {
        vl_plan_free(&p);
        return -1;
    }
    vl_plan_free(&p);
    return 0;
}

static void print_result(const char *name, const result *r)
{
    printf("%-22s abr %.4f  cr %.4f  dbr %.4f  pr %.4f  ave_t %8.0f  iters %6zu  "
           "epoch %8.1f s%s  mfu %.3f  (planned in %.2f s)\n",
           name, r->mt.abr.mean, r->mt.cr.mean, r->mt.dbr.mean, r->mt.pr.mean,
           r->mt.ave_t.mean, r->mt.iterations, r->sim.epoch_time_s, r->sim.oom ? " OOM" : "",
           r->sim.mfu_overall, r->secs);
}

static int paper(size_t n)
{
    uint32_t *len = malloc(n * sizeof *len);
    vl_manifest *m = NULL;
    vl_config cfg, full, manual;
    vl_err err;
    result isf, isf_full, hbp, hbp_paper;
    char *log = NULL;
    int rc = 0;

    if (len == NULL || vl_gen_lengths(len, n, "tulu3-longcite", 1, &err) != VL_OK ||
        vl_manifest_from_lengths(&m, len, n, &err) != VL_OK)
        return fail("manifest", &err);
    if (load_cfg(&cfg, PAPER_CFG, &err) != 0 || load_cfg(&full, PAPER_FULL, &err) != 0 ||
        load_cfg(&manual, PAPER_GROUPS, &err) != 0)
        return fail("config", &err);
    printf("== paper setting: %zu tulu3-longcite samples, llama3.1-8b, 32 x h100, "
           "128K ==\n",
           n);
    if (plan_one(vl_strategy_find("pack"), m, &cfg, &isf, NULL, &err) != 0 ||
        plan_one(vl_strategy_find("pack"), m, &full, &isf_full, NULL, &err) != 0 ||
        plan_one(&vl_strategy_hbp, m, &cfg, &hbp, &log, &err) != 0 ||
        plan_one(&vl_strategy_hbp, m, &manual, &hbp_paper, NULL, &err) != 0) {
        rc = fail("plan", &err);
        goto done;
    }
    fputs(log ? log : "", stdout);
    print_result("isf 128K sp8", &isf);
    print_result("isf 128K sp8 full-rc", &isf_full);
    print_result("hbp", &hbp);
    print_result("hbp 16K:1,128K:8", &hbp_paper);
    check("isf: cr", isf.mt.cr.mean, 0.999, 1.0, "1.0");
    check("isf: abr", isf.mt.abr.mean, 0.35, 0.65, "0.506");
    check("hbp: abr", hbp.mt.abr.mean, 0, 0.005, "0.002");
    check("hbp: cr", hbp.mt.cr.mean, 0, 0.25, "0.173");
    check("hbp: dbr", hbp.mt.dbr.mean, 0, 0.005, "0.001");
    check("hbp: pr", hbp.mt.pr.mean, 0, 0.01, "0");
    check("hbp: oom (0 = fits)", hbp.sim.oom, 0, 0, "-");
    check("epoch time hbp / isf", hbp.sim.epoch_time_s / isf.sim.epoch_time_s, 0, 0.999,
          "0.71");
    check("epoch time hbp / isf full-rc", hbp.sim.epoch_time_s / isf_full.sim.epoch_time_s, 0,
          0.999, "0.71");
done:
    free(log);
    vl_config_free(&cfg);
    vl_config_free(&full);
    vl_config_free(&manual);
    vl_manifest_free(m);
    free(len);
    return rc;
}

/* Planning speed: the strategy alone (what HBP adds) and the whole run with the
 * self-check. */
static int speed(size_t n)
{
    uint32_t *len = malloc(n * sizeof *len);
    vl_manifest *m = NULL;
    vl_config cfg;
    vl_err err;
    vl_plan p;
    vl_cost cost;
    vl_selection sel;
    void *opts = calloc(1, vl_strategy_hbp.opts_size);
    double t0, t_plan, t_run, c0, c_plan;
    vl_run_opts ro = {.seed = 1, .allow_oom = true};

    if (len == NULL || opts == NULL ||
        vl_gen_lengths(len, n, "tulu3-longcite", 1, &err) != VL_OK ||
        vl_manifest_from_lengths(&m, len, n, &err) != VL_OK ||
        load_cfg(&cfg, PAPER_CFG, &err) != 0)
        return fail("setup", &err);
    if (vl_config_bind(&cfg, "hbp", vl_strategy_hbp.params, opts, &err) != VL_OK ||
        vl_cost_init(&cost, &cfg, &err) != VL_OK ||
        vl_plan_init(&p, m, "hbp", 1, &err) != VL_OK ||
        vl_select(&sel, m, cfg.training.max_seq_len, cfg.training.oversize, &err) != VL_OK)
        return fail("setup", &err);
    vl_job job = {.m = m, .cfg = &cfg, .cost = &cost, .sel = &sel, .seed = 1};
    t0 = bench_wall_s();
    c0 = (double)clock() / CLOCKS_PER_SEC;
    if (vl_strategy_hbp.plan(opts, &job, &p, &err) != VL_OK)
        return fail("plan", &err);
    t_plan = bench_wall_s() - t0;
    c_plan = (double)clock() / CLOCKS_PER_SEC - c0;
    vl_plan_free(&p);
    vl_selection_free(&sel);
    t0 = bench_wall_s();
    if (vl_run_plan(&p, &vl_strategy_hbp, m, &cfg, &ro, NULL, &err) != VL_OK)
        return fail("run", &err);
    t_run = bench_wall_s() - t0;
    printf("speed %9zu samples: hbp plan %6.3f s wall, %6.3f s cpu (%.2f M samples/s), "
           "with self-check %6.3f s, %zu iterations\n",
           n, t_plan, c_plan, (double)n / t_plan / 1e6, t_run, p.niters);
    vl_plan_free(&p);
    vl_config_free(&cfg);
    vl_manifest_free(m);
    free(len);
    free(opts);
    return 0;
}

int main(int argc, char **argv)
{
    size_t n = 1000000;
    int quick = 0, do_speed = 1, rc;

    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--quick") == 0)
            quick = 1, n = 100000;
        else if (strcmp(argv[i], "--no-speed") == 0)
            do_speed = 0;
        else if (strcmp(argv[i], "-n") == 0 && i + 1 < argc)
            n = strtoul(argv[++i], NULL, 10);
        else {
            fprintf(stderr, "usage: bench_hbp [--quick] [--no-speed] [-n SAMPLES]\n");
            return 64;
        }
    }
    if ((rc = paper(n)) != 0)
        return rc;
    if (do_speed && ((rc = speed(1000000)) != 0 || (!quick && (rc = speed(10000000)) != 0)))
        return rc;
    return checks_failed ? 1 : 0;
}
