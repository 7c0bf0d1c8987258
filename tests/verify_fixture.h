/* tests/verify_fixture.h -- the plan checker tests' fixture (test_verify*.c): a small
 * valid plan of four samples, and checks that verify accepts a plan or finds exactly the
 * violations expected, with their message. */
#ifndef VLPLAN_VERIFY_FIXTURE_H
#define VLPLAN_VERIFY_FIXTURE_H

#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "planio.h"
#include "testutil.h"
#include "verify.h"
#include "vlplan_strategy.h"

static const vl_par PAR1 = {1, 1, 1, 0};

/* Lengths {100, 200, 300, 400}.  Iteration 0: rank 0 holds samples 0 and 1, rank 1
 * holds 2 and the first 150 tokens of 3; iteration 1: rank 0 the rest of 3, rank 1 an
 * empty micro-batch (lockstep). */
static inline vl_manifest *man4(void)
{
    static const uint32_t len[] = {100, 200, 300, 400};
    return tu_manifest(len, 4);
}

static inline void valid_plan(vl_plan *p, vl_manifest *m)
{
    vl_plan_init(p, m, "t", 1, NULL);
    vl_plan_iter_begin(p, 0, NULL);
    vl_plan_rank_begin(p, 0, &PAR1, NULL);
    vl_plan_mb_begin(p, 500, NULL);
    vl_plan_seg(p, 0, 0, 100, NULL);
    vl_plan_seg(p, 1, 0, 200, NULL);
    vl_plan_rank_begin(p, 1, &PAR1, NULL);
    vl_plan_mb_begin(p, 500, NULL);
    vl_plan_seg(p, 2, 0, 300, NULL);
    vl_plan_seg(p, 3, 0, 150, NULL);
    vl_plan_iter_begin(p, 0, NULL);
    vl_plan_rank_begin(p, 0, &PAR1, NULL);
    vl_plan_mb_begin(p, 500, NULL);
    vl_plan_seg(p, 3, 150, 250, NULL);
    vl_plan_rank_begin(p, 1, &PAR1, NULL);
    vl_plan_mb_begin(p, 500, NULL);
}

static inline bool has_msg(const vl_verify_report *rep, const char *needle)
{
    for (size_t i = 0; i < rep->nmsgs; i++)
        if (strstr(rep->msgs[i], needle))
            return true;
    return false;
}

static inline void dump(const vl_verify_report *rep)
{
    for (size_t i = 0; i < rep->nmsgs; i++)
        fprintf(stderr, "  %s\n", rep->msgs[i]);
}

/* Verify p, read from the file that claimed f (NULL: built in memory); expect exactly
 * `count` violations of invariant inv and a message. */
static inline void expect_violation_in(const vl_plan *p, const vl_plan_file *f, int inv,
                                       size_t count, const char *needle)
{
    vl_verify_report rep;
    vl_err err = {0};
    vl_status st = vl_plan_verify_read(p, f, NULL, &vl_registry_rules, &rep, &err);

    if (st != VL_EVERIFY || rep.by_inv[inv - 1] != count || !has_msg(&rep, needle))
        dump(&rep);
    cr_assert_eq(st, VL_EVERIFY);
    cr_assert_eq(rep.by_inv[inv - 1], count, "I%d: %zu violations, expected %zu", inv,
                 rep.by_inv[inv - 1], count);
    cr_assert_eq(rep.violations, count, "%zu violations in all", rep.violations);
    cr_assert(has_msg(&rep, needle), "no message contains \"%s\"", needle);
    cr_assert(strstr(err.msg, "violates"), "%s", err.msg);
}

static inline void expect_violation(const vl_plan *p, int inv, size_t count, const char *needle)
{
    expect_violation_in(p, NULL, inv, count, needle);
}

static inline void expect_ok_in(const vl_plan *p, const vl_plan_file *f)
{
    vl_verify_report rep;
    vl_err err = {0};
    vl_status st = vl_plan_verify_read(p, f, NULL, &vl_registry_rules, &rep, &err);

    if (st != VL_OK)
        dump(&rep);
    cr_assert_eq(st, VL_OK, "%s", err.msg);
    cr_assert_eq(rep.violations, 0);
    cr_assert_eq(rep.nmsgs, 0);
}

static inline void expect_ok(const vl_plan *p)
{
    expect_ok_in(p, NULL);
}

#endif
