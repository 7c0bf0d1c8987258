/* tests/robust/test_soak.c -- plan and verify agree (issue 13 item 4), the suite's share of the
 * property loop of tests/plan_prop.h: a few hundred seeded cases (random manifests,
 * every strategy of the registry, random settings), each planned into a file as `vlplan
 * plan` does and verified from it as `vlplan verify` does.  `make soak` runs ten thousand
 * more (tools/soak.c).  A failing case prints its seed and the command reproducing it. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>

#include "plan_prop.h"
#include "testutil.h"

#define CASES 300

static char *dir, *path;

static void setup(void)
{
    dir = tu_tmpdir();
    cr_assert_not_null(dir);
    path = tu_path(dir, "plan.jsonl");
}

static void teardown(void)
{
    tu_rmtree(dir);
    free(path);
    free(dir);
}

TestSuite(soak, .init = setup, .fini = teardown);

Test(soak, plan_and_verify_agree)
{
    unsigned planned = 0, refused = 0, findings = 0;
    unsigned per[32] = {0};
    char why[1024];

    for (uint64_t seed = 1; seed <= CASES; seed++) {
        pp_case c;
        vl_err err = {0};
        cr_assert_eq(pp_make(&c, seed, -1, &err), VL_OK, "seed %llu: %s",
                     (unsigned long long)seed, err.msg);
        pp_outcome o = pp_check(&c, path, why, sizeof why);
        for (size_t i = 0; i < vl_strategy_count() && i < 32; i++)
            per[i] += o == PP_PLANNED && vl_strategy_at(i) == c.s;
        if (o == PP_FINDING)
            fprintf(stderr, "FAIL %s\n  %s\n", c.desc, why);
        planned += o == PP_PLANNED;
        refused += o == PP_REFUSED;
        findings += o == PP_FINDING;
        pp_free(&c);
    }
    cr_assert_eq(findings, 0, "%u of %d cases: plan and verify disagree (seeds above)",
                 findings, CASES);
    /* the loop tests something: most cases plan, and every strategy plans some */
    cr_assert_gt(planned, CASES / 2, "only %u of %d cases planned (%u refused)", planned,
                 CASES, refused);
    for (size_t i = 0; i < vl_strategy_count() && i < 32; i++)
        cr_assert_gt(per[i], 0, "strategy %s planned no case", vl_strategy_at(i)->name);
}

/* The check can fail: the same plan against a manifest with one more sample. */
Test(soak, a_disagreement_is_found)
{
    pp_case c;
    vl_err err = {0};
    vl_verify_report rep;
    vl_run_result rs = {0};
    uint64_t seed = 1;

    for (;; seed++) {   /* the first case that plans */
        cr_assert_eq(pp_make(&c, seed, 2, &err), VL_OK, "%s", err.msg);
        if (c.m->n > 0 && pp_plan_file(&c, path, &rs, &err) == VL_OK && rs.oom_iters == 0)
            break;
        free(rs.log);
        rs.log = NULL;
        pp_free(&c);
    }
    free(rs.log);
    cr_assert_eq(pp_verify_file(&c, path, &rep, &err), VL_OK, "%s", err.msg);
    uint32_t *len = malloc((c.m->n + 1) * sizeof *len);
    memcpy(len, c.m->len, c.m->n * sizeof *len);
    len[c.m->n] = 1;
    vl_manifest *more = NULL;
    cr_assert_eq(vl_manifest_from_lengths(&more, len, c.m->n + 1, &err), VL_OK);
    vl_manifest *had = c.m;
    c.m = more;
    cr_assert_eq(pp_verify_file(&c, path, &rep, &err), VL_EVERIFY, "%s", err.msg);
    cr_assert_geq(rep.by_inv[0], 1);
    c.m = had;
    vl_manifest_free(more);
    free(len);
    pp_free(&c);
}
