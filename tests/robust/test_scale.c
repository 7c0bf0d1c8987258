/* tests/robust/test_scale.c -- issue 13 item 7: a configuration whose global batches cannot
 * give every data-parallel rank work (a plan of iterations x ranks micro-batches, nearly
 * all empty: at a million GPUs, billions) is refused up front by every strategy that
 * plans one global batch per iteration, with the numbers and what to change; Hydraulis
 * refuses GPU counts its dispatch cannot plan.  Speed itself is measured by
 * bench/scale.sh, not here. */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sampler.h"
#include "testutil.h"

/* 200 samples of 100..2089 tokens, 20 global batches of 10. */
static char *small_manifest(const char *dir)
{
    char *p = tu_path(dir, "m.txt");
    FILE *f = fopen(p, "w");

    cr_assert_not_null(f);
    for (int i = 0; i < 200; i++)
        fprintf(f, "%d\n", 100 + (i * 397) % 1990);
    cr_assert_eq(fclose(f), 0);
    return p;
}

static tu_result plan(const char *strategy, const char *gpus, const char *manifest,
                      const char *out)
{
    const char *args[] = {"plan", "-q", "-s", strategy, "--set", gpus, "--set",
                          "training.global_batch=10", "-o", out, manifest, NULL};
    tu_result r;

    cr_assert_eq(tu_run(&r, NULL, args), 0);
    return r;
}

static const char *const refusing[] = {"random", "sorted", "verl", "chunkflow",
                                       "skrull", "hydraulis", "slimpack"};
#define NREFUSING (sizeof refusing / sizeof refusing[0])

/* Indices: a test runs in a new process, where the names' pointers are not valid. */
ParameterizedTestParameters(scale, batch_smaller_than_dp_is_refused)
{
    static int index[NREFUSING];

    for (size_t i = 0; i < NREFUSING; i++)
        index[i] = (int)i;
    return cr_make_param_array(int, index, NREFUSING);
}

ParameterizedTest(int *k, scale, batch_smaller_than_dp_is_refused)
{
    const char *const *strategy = &refusing[*k];
    char *dir = tu_tmpdir(), *m = small_manifest(dir), *out = tu_path(dir, "p.jsonl");
    tu_result r = plan(*strategy, "cluster.gpus=4096", m, out);

    cr_expect_eq(r.status, 78, "%s: exit %d: %s", *strategy, r.status, r.err);
    cr_expect(strstr(r.err, "global batch 0 has 10 samples") != NULL, "%s", r.err);
    cr_expect(strstr(r.err, "4096 data-parallel ranks") != NULL, "%s", r.err);
    cr_expect(strstr(r.err, "raise training.global_batch") != NULL, "%s", r.err);
    cr_expect_eq(tu_count_entries(dir), 1, "only the manifest is left");
    tu_result_free(&r);
    r = plan(*strategy, "cluster.gpus=8", m, out);   /* 10 samples for 8 ranks: planned */
    cr_expect_eq(r.status, 0, "%s: exit %d: %s", *strategy, r.status, r.err);
    tu_result_free(&r);
    free(m);
    free(out);
    tu_rmtree(dir);
    free(dir);
}

Test(scale, hydraulis_refuses_more_gpus_than_it_plans)
{
    char *dir = tu_tmpdir(), *m = small_manifest(dir), *out = tu_path(dir, "p.jsonl");
    tu_result r = plan("hydraulis", "cluster.gpus=1048576", m, out);

    cr_expect_eq(r.status, 78, "exit %d: %s", r.status, r.err);
    cr_expect(strstr(r.err, "cluster.gpus = 1048576 is past the 4096") != NULL, "%s", r.err);
    cr_expect(strstr(r.err, "use pack, hbp or chunkflow") != NULL, "%s", r.err);
    tu_result_free(&r);
    free(m);
    free(out);
    tu_rmtree(dir);
    free(dir);
}

/* The last batch of an epoch may be short; pieces count for ChunkFlow, spread over
 * `share` ranks. */
Test(scale, cover_ranks_rule)
{
    static const uint32_t len[] = {5000, 10, 10, 10, 9000};
    static const uint32_t order[] = {0, 1, 2, 3, 4};
    size_t start[] = {0, 2, 4, 5};
    vl_batches b = {.n = 3, .start = start};
    vl_err err = {0};

    cr_assert_eq(vl_batches_cover_ranks(&b, order, len, 0, 1, 2, "", &err), VL_OK);
    cr_assert_eq(vl_batches_cover_ranks(&b, order, len, 0, 1, 3, "x: ", &err), VL_ECONFIG);
    cr_assert_str_eq(err.msg, "x: global batch 0 has 2 samples, fewer than the 3 "
                              "data-parallel ranks: raise training.global_batch or "
                              "training.global_tokens, or use fewer GPUs");
    /* batch 0: 5000 -> 3 pieces of 2048, 10 -> 1: 4 pieces; batch 1: 2 */
    cr_assert_eq(vl_batches_cover_ranks(&b, order, len, 2048, 1, 2, "", &err), VL_OK);
    cr_assert_eq(vl_batches_cover_ranks(&b, order, len, 2048, 1, 3, "", &err), VL_ECONFIG);
    cr_assert(strstr(err.msg, "global batch 1 has 2 samples, 2 pieces of at most 2048 "
                              "tokens, fewer than one for every 1 of the 3") != NULL, "%s",
              err.msg);
    cr_assert_eq(vl_batches_cover_ranks(&b, order, len, 2048, 4, 8, "", &err), VL_OK);
    cr_assert_eq(vl_batches_cover_ranks(&b, order, len, 2048, 4, 9, "", &err), VL_ECONFIG);
}
