/* tests/api/test_vlplan_h.c -- the library's face, lib/vlplan.h, is enough for a program:
 * with that header alone, load lengths and a configuration, plan with a strategy from the
 * registry, write the plan, read it back, verify it against the registry's rules and
 * evaluate it (the file's figures are those of the plan in memory); and hand the
 * verifier its rules. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"   /* the scratch directory only */
#include "vlplan.h"

TestSuite(api, .init = tu_scratch_init, .fini = tu_scratch_fini);

static vl_manifest *lengths(vl_err *err)
{
    uint32_t len[200];
    vl_manifest *m = NULL;

    for (size_t i = 0; i < 200; i++)
        len[i] = (uint32_t)(64 + (i * 7919) % 3000);
    cr_assert_eq(vl_manifest_from_lengths(&m, len, 200, err), VL_OK, "%s", err->msg);
    return m;
}

static void config(vl_config *cfg, vl_err *err)
{
    cr_assert_eq(vl_config_init_default(cfg, err), VL_OK, "%s", err->msg);
    cr_assert_eq(vl_config_set(cfg, "training.global_batch=16", err), VL_OK, "%s", err->msg);
    cr_assert_eq(vl_config_finalize(cfg, err), VL_OK, "%s", err->msg);
}

Test(api, plan_write_read_verify_evaluate)
{
    vl_err err = {0};
    vl_manifest *m = lengths(&err);
    vl_config cfg;
    vl_cost cost;
    vl_plan p, q;
    vl_plan_file f;
    vl_verify_report rep;
    vl_run_opts o = {.seed = 1};
    vl_sim_opts so = {0};
    vl_eval mem, file;
    vl_eval_file_opts eo = {.so = &so, .threads = 1};
    char *path = tu_path(tu_scratch, "p.jsonl");

    config(&cfg, &err);
    cr_assert_eq(vl_cost_init(&cost, &cfg, &err), VL_OK, "%s", err.msg);
    cr_assert_eq(vl_run_plan(&p, vl_strategy_find("pack"), m, &cfg, &o, NULL, &err), VL_OK,
                 "%s", err.msg);
    cr_assert_eq(vl_plan_write_file(&p, path, &err), VL_OK, "%s", err.msg);
    memset(&q, 0, sizeof q);
    cr_assert_eq(vl_plan_read(&q, &f, path, m, &err), VL_OK, "%s", err.msg);
    cr_assert_eq(vl_plan_verify_read(&q, &f, &cost, &vl_registry_rules, &rep, &err), VL_OK,
                 "%s", err.msg);
    cr_assert_eq(vl_eval_plan(&p, &cost, &so, &mem, &err), VL_OK, "%s", err.msg);
    cr_assert_eq(vl_eval_file(path, &eo, &f, &file, &err), VL_OK, "%s", err.msg);
    cr_assert(!file.has_sim, "no cost_for hook: metrics only");
    cr_assert_eq(file.mt.tokens, mem.mt.tokens);
    cr_assert_eq(file.mt.iterations, p.niters);
    cr_assert(mem.has_sim && mem.sim.epoch_time_s > 0);
    vl_plan_free(&q);
    vl_plan_free(&p);
    vl_manifest_free(m);
    vl_config_free(&cfg);
    free(path);
}

/* The verifier's rules come from its caller: a source is asked once, with the plan's
 * strategy and the config, and what it says holds -- here that the strategy refuses the
 * config, which makes the plan a violation (I5). */
typedef struct asked {
    int calls;
    char strategy[32];
    const vl_config *cfg;
} asked;

static vl_status refusing(void *ctx, const char *strategy, const vl_config *cfg,
                          vl_verify_rules *out, vl_err *err)
{
    asked *a = ctx;

    (void)err;
    a->calls++;
    snprintf(a->strategy, sizeof a->strategy, "%s", strategy);
    a->cfg = cfg;
    memset(out, 0, sizeof *out);
    out->caps = ~0u;
    out->slices = VL_SLICES_NONE;
    snprintf(out->refused, sizeof out->refused, "not today");
    return VL_OK;
}

Test(api, the_rules_come_from_the_caller)
{
    vl_err err = {0};
    vl_manifest *m = lengths(&err);
    vl_config cfg;
    vl_cost cost;
    vl_plan p;
    vl_verify_report rep;
    vl_run_opts o = {.seed = 1};
    asked a = {0};
    vl_rules_source src = {refusing, &a};

    config(&cfg, &err);
    cr_assert_eq(vl_cost_init(&cost, &cfg, &err), VL_OK, "%s", err.msg);
    cr_assert_eq(vl_run_plan(&p, vl_strategy_find("pack"), m, &cfg, &o, NULL, &err), VL_OK,
                 "%s", err.msg);
    cr_assert_eq(vl_plan_verify(&p, &cost, &vl_registry_rules, &rep, &err), VL_OK, "%s",
                 err.msg);
    cr_assert_eq(vl_plan_verify(&p, &cost, NULL, &rep, &err), VL_OK,
                 "without a source the format's own rules, which the plan keeps");
    cr_assert_eq(vl_plan_verify(&p, &cost, &src, &rep, &err), VL_EVERIFY);
    cr_assert_eq(a.calls, 1);
    cr_assert_str_eq(a.strategy, "pack");
    cr_assert_eq(a.cfg, &cfg);
    cr_assert_eq(rep.by_inv[4], 1);
    cr_assert_str_eq(rep.msgs[0], "I5: strategy pack refuses the config: not today");
    vl_plan_free(&p);
    vl_manifest_free(m);
    vl_config_free(&cfg);
}
