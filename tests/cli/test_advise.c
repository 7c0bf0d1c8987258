/* tests/cli/test_advise.c -- `vlplan advise`: a search whose answer is known by hand, the
 * same answer with and without pruning (a brute-force comparison on small cases), the
 * same output twice, pinned and freed keys, the winner's plan, and bad arguments. */
#include <criterion/criterion.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

static tu_result run(const char *const *args)
{
    tu_result r;

    cr_assert_eq(tu_run(&r, NULL, args), 0);
    return r;
}

static json_t *run_json(const char *const *args)
{
    tu_result r = run(args);
    json_error_t e;
    json_t *j;

    cr_assert_eq(r.status, 0, "exit %d: %s", r.status, r.err);
    j = json_loads(r.out, 0, &e);
    cr_assert_not_null(j, "%s: %s", e.text, r.out);
    tu_result_free(&r);
    return j;
}

static const char *row_str(json_t *j, size_t i, const char *key)
{
    return json_string_value(json_object_get(json_array_get(json_object_get(j, "rows"), i),
                                             key));
}

static double row_num(json_t *j, size_t i, const char *key)
{
    return json_number_value(json_object_get(json_array_get(json_object_get(j, "rows"), i),
                                             key));
}

static long long count(json_t *j, const char *key)
{
    return json_integer_value(json_object_get(json_object_get(j, "candidates"), key));
}

/* With the layout pinned, packing beats padded random batching on a long-tailed set:
 * known without a search (random pads every micro-batch to its longest sample). */
Test(advise, known_answer_with_the_layout_pinned)
{
    char *dir = tu_tmpdir(), *man = tu_path(dir, "m.jsonl");
    const char *gen[] = {"gen", "--dist", "lmsys", "-n", "2000", "--seed", "3", "-o", man,
                         NULL};
    const char *args[] = {"advise", "-s", "random,pack", "--set", "cluster.gpus=8",
                          "--set", "training.oversize=drop", "--set", "training.tp=1",
                          "--set", "training.pp=1", "--set", "training.sp=1", "--set",
                          "training.zero=2", "--set", "training.recompute=auto",
                          "--format", "json", man, NULL};
    tu_result g = run(gen);
    json_t *j;

    cr_assert_eq(g.status, 0, "%s", g.err);
    j = run_json(args);
    cr_expect_eq(json_integer_value(json_object_get(j, "layouts")), 1);
    cr_expect_str_eq(row_str(j, 0, "strategy"), "pack");
    cr_expect_eq(row_num(j, 0, "tp") + row_num(j, 0, "pp") + row_num(j, 0, "sp"), 3);
    cr_expect(strstr(row_str(j, 0, "command"), "vlplan plan -s pack ") != NULL);
    json_decref(j);
    tu_result_free(&g);
    tu_rmtree(dir);
    free(man);
    free(dir);
}

/* Pruning never discards the best: the pruned search and the exhaustive one agree on
 * the winner and its time, on small data sets of three shapes. */
Test(advise, pruning_keeps_the_best_of_a_brute_force_search)
{
    static const char *const dists[] = {"lmsys", "wikipedia", "tulu3-longcite"};
    char *dir = tu_tmpdir(), *man = tu_path(dir, "m.jsonl");

    for (size_t d = 0; d < 3; d++) {
        const char *gen[] = {"gen", "--dist", dists[d], "-n", "600", "--seed", "7", "-o",
                             man, NULL};
        const char *args[] = {"advise", "-s", "pack,verl,sorted,chunkflow", "--set",
                              "cluster.gpus=4", "--set", "training.oversize=drop",
                              "--set", "training.global_batch=64", "--set",
                              "training.recompute=auto", "--format", "json", man, NULL,
                              NULL};
        tu_result g = run(gen);
        cr_assert_eq(g.status, 0, "%s", g.err);
        tu_result_free(&g);
        json_t *pruned = run_json(args);
        args[13] = "--no-prune";
        args[14] = man;
        json_t *all = run_json(args);
        cr_expect_eq(count(all, "pruned_bound"), 0);
        cr_expect_str_eq(row_str(pruned, 0, "strategy"), row_str(all, 0, "strategy"), "%s",
                         dists[d]);
        cr_expect_eq(row_num(pruned, 0, "epoch_time_s"), row_num(all, 0, "epoch_time_s"),
                     "%s: %g against %g", dists[d], row_num(pruned, 0, "epoch_time_s"),
                     row_num(all, 0, "epoch_time_s"));
        json_decref(pruned);
        json_decref(all);
    }
    tu_rmtree(dir);
    free(man);
    free(dir);
}

Test(advise, same_output_twice)
{
    const char *args[] = {"advise", "-s", "pack,hbp", "--set", "cluster.gpus=8", "--set",
                          "training.oversize=drop", "testdata/demo.jsonl", NULL};
    tu_result a = run(args), b = run(args);

    cr_assert_eq(a.status, 0, "%s", a.err);
    cr_expect_str_eq(a.out, b.out);
    tu_result_free(&a);
    tu_result_free(&b);
}

/* A key a config file gives is pinned; --free searches it; --set always pins. */
Test(advise, config_keys_pinned_unless_freed)
{
    char *dir = tu_tmpdir(), *cfg = tu_path(dir, "c.yaml");
    cr_assert_eq(tu_write_file(cfg, "cluster:\n  gpus: 8\ntraining:\n  tp: 2\n  pp: 1\n  sp: 1\n"
                                    "  zero: 2\n  recompute: auto\n  oversize: drop\n"), 0);
    const char *pinned[] = {"advise", "-s", "pack", "-c", cfg, "--format", "json",
                            "testdata/demo.jsonl", NULL};
    const char *freed[] = {"advise", "-s", "pack", "-c", cfg, "--free", "training.tp",
                           "--format", "json", "testdata/demo.jsonl", NULL};
    json_t *p = run_json(pinned), *f = run_json(freed);

    cr_expect_eq(json_integer_value(json_object_get(p, "layouts")), 1);
    cr_expect_eq(row_num(p, 0, "tp"), 2);
    cr_expect_gt(json_integer_value(json_object_get(f, "layouts")), 1);
    json_decref(p);
    json_decref(f);
    tu_rmtree(dir);
    free(cfg);
    free(dir);
}

Test(advise, write_plan_writes_the_winner_which_verifies)
{
    char *dir = tu_tmpdir(), *plan = tu_path(dir, "p.jsonl"), *met = tu_path(dir, "m.json");
    const char *args[] = {"advise", "-q", "-s", "pack,sorted", "--set", "cluster.gpus=8",
                          "--set", "training.oversize=drop", "--write-plan", plan,
                          "--write-metrics", met, "testdata/demo.jsonl", NULL};
    const char *verify[] = {"verify", plan, "testdata/demo.jsonl", NULL};
    tu_result r = run(args), v;
    char *text;

    cr_assert_eq(r.status, 0, "%s", r.err);
    v = run(verify);
    cr_expect_eq(v.status, 0, "%s%s", v.out, v.err);
    cr_assert_not_null(text = tu_read_file(plan, NULL));
    cr_expect(strstr(text, "\"strategy\":\"pack\"") != NULL);
    free(text);
    cr_assert_not_null(text = tu_read_file(met, NULL));
    cr_expect(strstr(text, "\"epoch_time_s\"") != NULL);
    free(text);
    tu_result_free(&r);
    tu_result_free(&v);
    tu_rmtree(dir);
    free(plan);
    free(met);
    free(dir);
}

Test(advise, bad_arguments)
{
    const char *a1[] = {"advise", "--free", "training.dp", "testdata/demo.jsonl", NULL};
    const char *a2[] = {"advise", "--write-metrics", "m.json", "testdata/demo.jsonl", NULL};
    const char *a3[] = {"advise", "-s", "pakc", "testdata/demo.jsonl", NULL};
    const char *a4[] = {"advise", "--write-plan", "p.jsonl", "-", NULL};
    tu_result r1 = run(a1), r2 = run(a2), r3 = run(a3), r4 = run(a4);

    cr_expect_eq(r1.status, 64);
    cr_expect(strstr(r1.err, "not a searched key") != NULL, "%s", r1.err);
    cr_expect_eq(r2.status, 64);
    cr_expect_eq(r3.status, 64);
    cr_expect(strstr(r3.err, "unknown strategy 'pakc'") != NULL, "%s", r3.err);
    cr_expect_eq(r4.status, 64, "%s", r4.err);
    tu_result_free(&r1);
    tu_result_free(&r2);
    tu_result_free(&r3);
    tu_result_free(&r4);
}

static double best_compare_row(json_t *cmp, json_int_t *tokens)
{
    json_t *rows = json_object_get(cmp, "strategies"), *r;
    double best = 1e300;
    size_t i;

    json_array_foreach(rows, i, r)
        if (json_is_true(json_object_get(r, "fits")) &&
            json_is_false(json_object_get(r, "less_work")) &&
            json_number_value(json_object_get(r, "epoch_time_s")) < best) {
            best = json_number_value(json_object_get(r, "epoch_time_s"));
            *tokens = json_integer_value(json_object_get(r, "tokens"));
        }
    return best;
}

/* A row planned whole because it is the configuration's own layout at defaults. */
static bool has_reference_row(json_t *j, const char *zero)
{
    json_t *r;
    size_t i;

    json_array_foreach(json_object_get(j, "rows"), i, r)
        if (json_is_true(json_object_get(r, "reference")) &&
            strcmp(json_string_value(json_object_get(r, "zero")), zero) == 0)
            return true;
    return false;
}

/* advise looks at what compare plans (the configuration's layout at each strategy's
 * defaults) and never answers slower than compare's best row, on the same tokens; the
 * configuration's layout is searched even when the grid lacks it (ZeRO 0 here). */
Test(advise, never_slower_than_the_best_compare_row)
{
    static const char *const dists[] = {"lmsys", "tulu3-longcite"};
    char *dir = tu_tmpdir(), *man = tu_path(dir, "m.jsonl"), *cfg = tu_path(dir, "c.yaml");

    cr_assert_eq(tu_write_file(cfg, "model:\n  preset: qwen2.5-0.5b\ncluster:\n  gpus: 4\n"
                                    "training:\n  zero: 0\n"
                                    "  global_batch: 64\n  oversize: drop\n"), 0);
    for (size_t d = 0; d < 2; d++) {
        const char *gen[] = {"gen", "--dist", dists[d], "-n", "800", "--seed", "5", "-o",
                             man, NULL};
        const char *cmp[] = {"compare", "-q", "-s", "pack,verl,sorted,hbp", "-c", cfg,
                             "--format", "json", man, NULL};
        const char *adv[] = {"advise", "-q", "-s", "pack,verl,sorted,hbp", "-c", cfg,
                             "--free", "layout", "--top", "1", "--format", "json", man,
                             NULL};
        tu_result g = run(gen);
        json_int_t tokens = 0;
        cr_assert_eq(g.status, 0, "%s", g.err);
        tu_result_free(&g);
        json_t *c = run_json(cmp), *a = run_json(adv);
        double best = best_compare_row(c, &tokens);
        cr_expect_leq(row_num(a, 0, "epoch_time_s"), best, "%s: advise %g, compare %g",
                      dists[d], row_num(a, 0, "epoch_time_s"), best);
        cr_expect_eq((json_int_t)row_num(a, 0, "tokens"), tokens, "%s", dists[d]);
        cr_expect(has_reference_row(a, "0"), "%s: no row of the configuration's layout",
                  dists[d]);
        json_decref(c);
        json_decref(a);
    }
    tu_rmtree(dir);
    free(man);
    free(cfg);
    free(dir);
}
