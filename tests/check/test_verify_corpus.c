/* tests/check/test_verify_corpus.c -- the regression corpus of wrong plans (issue 28 items 1
 * and 2): testdata/verify/<case>.jsonl, each a valid plan of a strategy changed by one
 * semantic mutation with every claim, footer and checksum made consistent again
 * (tools/craft_plans.py), which `vlplan verify` must reject with the message of the
 * invariant it breaks; testdata/verify/cases.tsv gives each case's manifest, verify
 * arguments and message.  One test per case, so that removing a check fails its test by
 * name; and the unmutated plans of every strategy, the controls, still pass. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

#define CASES "testdata/verify/cases.tsv"

/* The row of cases.tsv for `name`: its fields, cut in place in *text (freed by the
 * caller). */
typedef struct row {
    char *plan, *manifest, *args, *expect;
} row;

static bool find_row(char *text, const char *name, row *r)
{
    char want[128];

    snprintf(want, sizeof want, "testdata/verify/%s.jsonl\t", name);
    for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
        if (strncmp(line, want, strlen(want)) != 0)
            continue;
        r->plan = line;
        r->manifest = strchr(line, '\t') + 1;
        r->manifest[-1] = '\0';
        r->args = strchr(r->manifest, '\t') + 1;
        r->args[-1] = '\0';
        r->expect = strchr(r->args, '\t') + 1;
        r->expect[-1] = '\0';
        return true;
    }
    return false;
}

static void run_case(const char *name)
{
    char *text = tu_read_file(CASES, NULL);
    const char *argv[16];
    size_t n = 0;
    tu_result res;
    row r;

    cr_assert(text, "cannot read " CASES);
    cr_assert(find_row(text, name, &r), "no row for %s in " CASES, name);
    argv[n++] = "verify";
    if (strcmp(r.args, "-") != 0)
        for (char *a = strtok(r.args, " "); a && n < 12; a = strtok(NULL, " "))
            argv[n++] = a;
    argv[n++] = r.plan;
    argv[n++] = r.manifest;
    argv[n] = NULL;
    cr_assert_eq(tu_run(&res, NULL, argv), 0);
    cr_expect_eq(res.status, 1, "%s: exit %d: %s %s", name, res.status, res.out, res.err);
    cr_expect(strstr(res.out, r.expect) != NULL, "%s: no line says \"%s\":\n%s", name,
              r.expect, res.out);
    tu_result_free(&res);
    free(text);
}

#define CASE(name) Test(verify_corpus, name) { run_case(#name); }

/* a: the slices of a sample in causal order, where the strategy slices */
CASE(chunk_to_other_rank)
CASE(chunk_to_next_iter)
CASE(chunk_to_earlier_iter)
CASE(slimpack_slice_other_rank)
CASE(pack_sample_sliced)
CASE(pieces_same_rank)
CASE(pieces_short_cut)
/* b: CP coordinates */
CASE(skrull_cp_on_sp1)
CASE(skrull_two_cps)
/* c: shared packs */
CASE(mcore_cp_three)
CASE(shared_without_self)
CASE(shared_primary_missing)
/* CP group sizes the heads split over under Ulysses */
CASE(mcore_cp_ulysses_kv4)
/* every GPU joins every optimizer step */
CASE(skrull_gpu_idle)
CASE(renamed_hydraulis_idle)
/* d: capacities, loss tokens, the optimizer's sharding */
CASE(verl_cap_over)
CASE(loss_tokens_removed)
CASE(hydraulis_replica_optimizer)
/* e: the header is not trusted */
CASE(slimpack_as_pack)
CASE(unknown_name_drop)
CASE(unknown_name_truncate)
CASE(header_mem_800)

/* The controls: every strategy's golden plan passes, also checked against a config
 * given with --set that agrees with its header. */
Test(verify_corpus, golden_plans_pass)
{
    static const char *const s[] = {"random", "sorted", "pack", "verl", "hbp", "chunkflow",
                                    "skrull", "mcore_cp", "hydraulis", "slimpack"};
    char plan[128];

    for (size_t i = 0; i < sizeof s / sizeof s[0]; i++) {
        const char *argv[] = {"verify", "--set", "cluster.mem_gib=80", plan,
                              "testdata/golden/manifest.jsonl", NULL};
        tu_result res;
        snprintf(plan, sizeof plan, "testdata/golden/%s.jsonl", s[i]);
        cr_assert_eq(tu_run(&res, NULL, argv), 0);
        cr_expect_eq(res.status, 0, "%s: exit %d: %s %s", s[i], res.status, res.out, res.err);
        cr_expect(strstr(res.out, "config: the plan header's with --set cluster.mem_gib=80"),
                  "%s: %s", s[i], res.out);
        tu_result_free(&res);
    }
}

/* The base plans the corpus mutates besides the goldens pass: pieces under
 * training.oversize=split, Skrull with CP 2, loss tokens, and a Hydraulis iteration
 * with an idle pipeline (its registry entry lets it: vl_strategy.idles). */
Test(verify_corpus, base_plans_pass)
{
    static const char *const b[][2] = {
        {"testdata/verify/base_pack_split.jsonl", "testdata/golden/manifest.jsonl"},
        {"testdata/verify/base_skrull_cp2.jsonl", "testdata/golden/manifest.jsonl"},
        {"testdata/verify/base_pack_loss.jsonl", "testdata/verify/manifest_loss.jsonl"},
        {"testdata/verify/base_hydraulis_idle.jsonl", "testdata/golden/manifest.jsonl"}};

    for (size_t i = 0; i < sizeof b / sizeof b[0]; i++) {
        const char *argv[] = {"verify", b[i][0], b[i][1], NULL};
        tu_result res;
        cr_assert_eq(tu_run(&res, NULL, argv), 0);
        cr_expect_eq(res.status, 0, "%s: exit %d: %s %s", b[i][0], res.status, res.out,
                     res.err);
        tu_result_free(&res);
    }
}
