/* tests/plan/test_golden.c -- every registered strategy's plan of testdata/golden/manifest.jsonl
 * (60 ChatQA2-like samples, 8 GPUs, 32K context) byte for byte against
 * testdata/golden/<strategy>.jsonl, so a shared change cannot silently change any
 * strategy's plans.  An intended change: `make golden`, and say why in the commit. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"
#include "vlplan_strategy.h"

Test(golden, every_strategy_plans_its_golden_bytes)
{
    char *dir = tu_tmpdir();

    for (size_t i = 0; i < vl_strategy_count(); i++) {
        const char *name = vl_strategy_at(i)->name;
        char golden[256], *out = tu_path(dir, "plan.jsonl");
        const char *args[] = {"plan", "-q", "-s", name, "--seed", "7",
                              "--set", "cluster.gpus=8",
                              "--set", "training.max_seq_len=32768",
                              "--set", "training.global_tokens=262144",
                              "--set", "training.oversize=truncate",
                              "-o", out, "testdata/golden/manifest.jsonl", NULL};
        tu_result r;
        size_t n1 = 0, n2 = 0;
        snprintf(golden, sizeof golden, "testdata/golden/%s.jsonl", name);
        cr_assert_eq(tu_run(&r, NULL, args), 0);
        cr_assert_eq(r.status, 0, "%s: %s", name, r.err);
        char *want = tu_read_file(golden, &n1), *got = tu_read_file(out, &n2);
        cr_assert_not_null(want, "%s is missing: make golden", golden);
        cr_assert(n1 == n2 && memcmp(want, got, n1) == 0,
                  "%s: the plan differs from %s; if intended, make golden and say why", name,
                  golden);
        free(want);
        free(got);
        free(out);
        tu_result_free(&r);
    }
    tu_rmtree(dir);
    free(dir);
}
