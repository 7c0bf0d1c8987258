/* tests/check/test_eval.c -- a plan file's figures (vl_eval_file) are those of the same
 * plan held whole (vl_eval_plan), metrics and simulation alike; the hooks are called as
 * documented (the cost model once, `each` once per iteration with its simulation), a
 * hook's failure stops the read with its status, and a plan without a cost model gets
 * metrics only. */
#include <criterion/criterion.h>
#include <string.h>

#include "eval.h"
#include "planio.h"
#include "run.h"
#include "testutil.h"

TestSuite(eval, .init = tu_scratch_init, .fini = tu_scratch_fini);

typedef struct fixture {
    vl_config cfg;
    vl_cost cost;
    vl_manifest *m;
    vl_plan p;
    char *path;
} fixture;

/* A pack plan of 300 long-tailed samples, written to the scratch directory. */
static void fixture_init(fixture *f)
{
    static const char *const sets[] = {"training.global_batch=32", NULL};
    uint32_t *len = tu_tail_lengths(300, 4096, 7);
    vl_run_opts o = {.seed = 7};
    vl_err err = {0};

    tu_config(&f->cfg, NULL, sets);
    cr_assert_eq(vl_cost_init(&f->cost, &f->cfg, &err), VL_OK, "%s", err.msg);
    f->m = tu_manifest(len, 300);
    free(len);
    cr_assert_eq(vl_run_plan(&f->p, vl_strategy_find("pack"), f->m, &f->cfg, &o, NULL, &err),
                 VL_OK, "%s", err.msg);
    cr_assert_gt(f->p.niters, 1);
    f->path = tu_path(tu_scratch, "p.jsonl");
    cr_assert_eq(vl_plan_write_file(&f->p, f->path, &err), VL_OK, "%s", err.msg);
}

static void fixture_free(fixture *f)
{
    vl_plan_free(&f->p);
    vl_manifest_free(f->m);
    vl_config_free(&f->cfg);
    free(f->path);
}

/* What the hooks saw. */
typedef struct seen {
    const vl_cost *cost;  /* handed out by cost_for */
    int cost_calls;
    size_t iters, simulated;
    uint64_t last_iter;
    vl_status fail_at_cost;   /* VL_OK: cost_for succeeds */
} seen;

static vl_status cost_for(void *ud, const vl_plan *p, const vl_cost **cost, vl_err *err)
{
    seen *s = ud;

    s->cost_calls++;
    cr_assert_str_eq(p->strategy, "pack", "the header is read before the cost is asked");
    if (s->fail_at_cost != VL_OK)
        return vl_seterr(err, s->fail_at_cost, "no config for you");
    *cost = s->cost;
    return VL_OK;
}

static vl_status each(void *ud, const vl_plan *p, const vl_cost *cost,
                      const vl_sim_iter_result *r, vl_err *err)
{
    seen *s = ud;

    (void)err;
    cr_assert_eq(cost, s->cost);
    cr_assert_eq(p->iter_base, s->iters, "iterations in order, one at a time");
    s->iters++;
    s->simulated += r != NULL;
    return VL_OK;
}

/* vl_eval_file of f's plan file with the hooks above; so NULL: metrics only. */
static vl_status eval_file(const fixture *f, seen *s, const vl_sim_opts *so, int threads,
                           vl_eval *out, vl_err *err)
{
    vl_eval_file_opts o = {.cost_for = cost_for, .so = so, .each = each, .ud = s,
                           .threads = threads};
    vl_plan_file pf;

    return vl_eval_file(f->path, &o, &pf, out, err);
}

Test(eval, a_file_has_the_figures_of_the_plan_held_whole)
{
    fixture f = {0};
    vl_sim_opts so = {0};
    vl_eval whole, file;
    vl_err err = {0};

    fixture_init(&f);
    seen s = {.cost = &f.cost};
    cr_assert_eq(vl_eval_plan(&f.p, &f.cost, &so, &whole, &err), VL_OK, "%s", err.msg);
    cr_assert_eq(eval_file(&f, &s, &so, 2, &file, &err), VL_OK, "%s", err.msg);
    cr_assert_eq(s.cost_calls, 1);
    cr_assert_eq(s.iters, f.p.niters);
    cr_assert_eq(s.simulated, f.p.niters);
    cr_assert_str_eq(file.strategy, "pack");
    cr_assert(whole.has_sim && file.has_sim);
    cr_assert_eq(file.mt.iterations, whole.mt.iterations);
    cr_assert_eq(file.mt.tokens, whole.mt.tokens);
    cr_assert_eq(file.mt.samples, whole.mt.samples);
    cr_assert_float_eq(file.mt.abr.mean, whole.mt.abr.mean, 1e-12);
    cr_assert_float_eq(file.mt.dbr.p99, whole.mt.dbr.p99, 1e-12);
    cr_assert_float_eq(file.sim.epoch_time_s, whole.sim.epoch_time_s,
                       1e-9 * whole.sim.epoch_time_s);
    cr_assert_gt(file.sim.epoch_time_s, 0);
    fixture_free(&f);
}

Test(eval, without_a_cost_model_metrics_only)
{
    fixture f = {0};
    seen s = {0};
    vl_eval file;
    vl_err err = {0};

    fixture_init(&f);
    cr_assert_eq(eval_file(&f, &s, NULL, 1, &file, &err), VL_OK, "%s", err.msg);
    cr_assert(!file.has_sim);
    cr_assert_eq(s.simulated, 0);
    cr_assert_eq(file.mt.iterations, f.p.niters);
    fixture_free(&f);
}

Test(eval, a_hook_that_fails_stops_the_read)
{
    fixture f = {0};
    vl_sim_opts so = {0};
    vl_eval file;
    vl_err err = {0};

    fixture_init(&f);
    seen s = {.cost = &f.cost, .fail_at_cost = VL_ECONFIG};
    cr_assert_eq(eval_file(&f, &s, &so, 1, &file, &err), VL_ECONFIG);
    cr_assert_str_eq(err.msg, "no config for you");
    cr_assert_eq(s.iters, 0);
    fixture_free(&f);
}
