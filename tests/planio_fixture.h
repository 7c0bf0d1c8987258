/* tests/planio_fixture.h -- the plan-file tests' fixture (test_planio*.c): a tiny plan,
 * a scratch directory per test, write/slurp and write -> read -> write round trips.
 * The planio suite's TestSuite() is in test_planio.c. */
#ifndef VLPLAN_PLANIO_FIXTURE_H
#define VLPLAN_PLANIO_FIXTURE_H

#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "planio.h"
#include "testutil.h"

static const vl_par PAR1 = {1, 1, 1, 0};

static inline vl_manifest *lengths(const uint32_t *len, size_t n)
{
    vl_manifest *m = NULL;
    cr_assert_eq(vl_manifest_from_lengths(&m, len, n, NULL), VL_OK);
    return m;
}

/* Lengths {100, 200, 300, 5000}; sample 3 dropped as oversize; two ranks, two
 * micro-batches each, sample 1 sliced in two, a group and a schedule on rank 1. */
static inline vl_manifest *tiny_manifest(void)
{
    static const uint32_t len[] = {100, 200, 300, 5000};
    return lengths(len, 4);
}

static inline void tiny_plan(vl_plan *p, vl_manifest *m)
{
    vl_par sp2 = {1, 1, 2, 0};

    vl_plan_init(p, m, "test", 7, NULL);
    vl_plan_set_meta(p, 1, strdup("{\"k\":1}"), strdup("{\"a\":{\"b\":0.35,\"c\":\"x\"}}"));
    vl_plan_drop(p, 3, 0, 5000, VL_DROP_OVERSIZE, NULL);
    vl_plan_iter_begin(p, 0, NULL);
    vl_plan_rank_begin(p, 0, &PAR1, NULL);
    vl_plan_mb_begin(p, 400, NULL);
    vl_plan_seg(p, 0, 0, 100, NULL);
    vl_plan_mb_begin(p, 400, NULL);
    vl_plan_seg(p, 2, 0, 300, NULL);
    vl_plan_rank_begin(p, 1, &sp2, NULL);
    vl_plan_rank_group(p, 3);
    vl_plan_mb_begin(p, 400, NULL);
    vl_plan_seg(p, 1, 0, 150, NULL);
    vl_plan_mb_begin(p, 400, NULL);
    vl_plan_seg(p, 1, 150, 50, NULL);
    vl_plan_op(p, 0, VL_OP_F, NULL);
    vl_plan_op(p, 1, VL_OP_F, NULL);
    vl_plan_op(p, 1, VL_OP_B, NULL);
    vl_plan_op(p, 0, VL_OP_B, NULL);
}

static char *scratch;

static inline void setup(void)
{
    scratch = tu_tmpdir();
    cr_assert_not_null(scratch);
}

static inline void teardown(void)
{
    tu_rmtree(scratch);
    free(scratch);
}

static inline char *path_of(const char *name)
{
    return tu_path(scratch, name);
}

static inline char *write_and_slurp(const vl_plan *p, const char *name, size_t *n)
{
    char *path = path_of(name);
    vl_err err = {0};
    cr_assert_eq(vl_plan_write_file(p, path, &err), VL_OK, "%s", err.msg);
    char *text = tu_read_file(path, n);
    free(path);
    return text;
}

/* Write, read back with the manifest, write again: the same bytes. */
static inline void round_trip(const vl_plan *p, vl_manifest *m, const char *name)
{
    char *first_path = path_of(name), *again_path = path_of("again.jsonl");
    char *plain, *again;
    size_t n1, n2;
    vl_plan q;
    vl_err err = {0};

    cr_assert_eq(vl_plan_write_file(p, first_path, &err), VL_OK, "%s", err.msg);
    plain = write_and_slurp(p, "plain.jsonl", &n1);
    static vl_plan_file f;
    cr_assert_eq(vl_plan_read(&q, &f, first_path, m, &err), VL_OK, "%s", err.msg);
    cr_assert(f.by_vlplan);
    cr_assert(f.has_footer);
    cr_assert_eq(f.sha, 1);
    cr_assert_eq(f.unknown_ids, 0);
    cr_assert_eq(f.findings.total, 0, "%s", f.findings.msg[0]);
    cr_assert_eq(f.errors.total, 0, "%s", f.errors.msg[0]);
    cr_assert_eq(vl_plan_write_file(&q, again_path, &err), VL_OK, "%s", err.msg);
    again = tu_read_file(again_path, &n2);
    cr_assert_eq(n1, n2);
    cr_assert(memcmp(plain, again, n1) == 0);
    cr_assert_str_eq(q.strategy, p->strategy);
    cr_assert_eq(q.seed, p->seed);
    cr_assert_eq(q.niters, p->niters);
    cr_assert_eq(q.nsegs, p->nsegs);
    cr_assert_eq(q.nops, p->nops);
    cr_assert_eq(q.ndrops, p->ndrops);
    free(plain);
    free(again);
    free(first_path);
    free(again_path);
    vl_plan_free(&q);
}

#endif
