/* tests/cli/test_cli_sim.c -- `simulate`, `compare` and the simulated figures of `metrics`
 * through the binary: documented JSON keys, --check exit status, SVG files. */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "testutil.h"

static char *dir, *manifest, *plan;

static tu_result run_ok(const char *const *args)
{
    tu_result r;
    cr_assert_eq(tu_run(&r, NULL, args), 0);
    cr_assert_eq(r.status, 0, "%s: exit %d: %s", args[0], r.status, r.err);
    return r;
}

static void setup(void)
{
    dir = tu_tmpdir();
    cr_assert_not_null(dir);
    manifest = tu_path(dir, "m.jsonl");
    plan = tu_path(dir, "p.jsonl");
    const char *gen[] = {"gen", "--dist", "lmsys", "-n", "3000", "--seed", "5", "-o", manifest,
                         NULL};
    tu_result r = run_ok(gen);
    tu_result_free(&r);
    const char *pl[] = {"plan", "-s", "pack", "--set", "training.oversize=drop", "-o", plan,
                        manifest, NULL};
    r = run_ok(pl);
    tu_result_free(&r);
}

static void teardown(void)
{
    tu_rmtree(dir);
    free(dir), free(manifest), free(plan);
}

TestSuite(cli_sim, .init = setup, .fini = teardown);

static void expect_keys(const char *json, const char *const *keys)
{
    for (int i = 0; keys[i]; i++)
        cr_expect(strstr(json, keys[i]) != NULL, "JSON lacks %s: %s", keys[i], json);
}

static const char *const sim_keys[] = {"\"iter_time_ms\":", "\"bubble\":", "\"tbr\":",
                                       "\"peak_mem_gib\":", "\"epoch_time_s\":", "\"mfu\":",
                                       "\"tokens_per_s\":", "\"abr\":", "\"dist\":", NULL};

Test(cli_sim, metrics_and_simulate_json_have_the_simulated_keys)
{
    const char *m[] = {"metrics", "--format", "json", plan, NULL};
    tu_result r = run_ok(m);
    expect_keys(r.out, sim_keys);
    tu_result_free(&r);
    const char *s[] = {"simulate", "--format", "json", plan, NULL};
    r = run_ok(s);
    expect_keys(r.out, sim_keys);
    tu_result_free(&r);
}

Test(cli_sim, simulate_svg_is_one_lane_per_rank_and_stage)
{
    char *svg = tu_path(dir, "g.svg");
    const char *s[] = {"simulate", "--iter", "0", "--svg", svg, plan, NULL};
    tu_result r = run_ok(s);
    char *text = tu_read_file(svg, NULL);
    cr_assert_not_null(text);
    cr_expect(strncmp(text, "<?xml", 5) == 0 || strncmp(text, "<svg", 4) == 0, "%.80s", text);
    cr_expect(strstr(text, "</svg>") != NULL);
    cr_expect(strstr(r.out, "iter_time_ms") != NULL, "%s", r.out);
    free(text), free(svg);
    tu_result_free(&r);
}

Test(cli_sim, compare_table_json_and_checks)
{
    const char *t[] = {"compare", "-s", "random,pack", "--set", "training.oversize=drop",
                       "--format", "json", manifest, NULL};
    tu_result r = run_ok(t);
    cr_expect(strncmp(r.out, "{\"strategies\":[{\"label\":\"random\",\"strategy\":\"random\"",
                      52) == 0, "%s", r.out);
    expect_keys(r.out, sim_keys);
    cr_expect(strstr(r.out, "\"speedup\":") != NULL);
    tu_result_free(&r);

    const char *ok[] = {"compare", "-s", "random,pack", "--set", "training.oversize=drop",
                        "--check", "pack.pr<=1", "--check", "pack.dbr<random.dbr", "--format",
                        "csv", manifest, NULL};
    r = run_ok(ok);
    cr_expect(strncmp(r.out, "label,strategy,fits,scope,samples,tokens,token_share,", 53) == 0,
              "%s", r.out);
    tu_result_free(&r);

    const char *bad[] = {"compare", "-s", "random,pack", "--set", "training.oversize=drop",
                         "--check", "pack.abr>2", manifest, NULL};
    cr_assert_eq(tu_run(&r, NULL, bad), 0);
    cr_expect_eq(r.status, 1, "exit %d: %s", r.status, r.err);
    cr_expect(strstr(r.err, "check failed: pack.abr>2") != NULL, "%s", r.err);
    tu_result_free(&r);

    const char *typo[] = {"compare", "-s", "random,pack", "--set", "training.oversize=drop",
                          "--check", "hbp.abr<1", manifest, NULL};
    cr_assert_eq(tu_run(&r, NULL, typo), 0);
    cr_expect_eq(r.status, 64, "exit %d: %s", r.status, r.err);
    cr_expect(strstr(r.err, "'hbp' is not among") != NULL, "%s", r.err);
    tu_result_free(&r);
}

/* Rows with their own settings and labels; a row that does not fit device memory is
 * marked, has no speedup, and a --check on it fails unless --allow-oom. */
Test(cli_sim, compare_rows_and_memory)
{
    const char *t[] = {"compare", "-s", "pack", "--row",
                       "big=pack:training.recompute=selective,training.max_seq_len=32768",
                       "--row", "one=random:training.micro_batch=1", "--set",
                       "training.oversize=drop", manifest, NULL};
    tu_result r = run_ok(t);
    cr_expect(strstr(r.out, "big") && strstr(r.out, "one"), "%s", r.out);
    cr_expect(strstr(r.out, "NO") != NULL, "the oversized row is marked: %s", r.out);
    cr_expect(strstr(r.out, "n/a") != NULL, "and has no speedup: %s", r.out);
    cr_expect(strstr(r.err, "warning: big does not fit device memory") != NULL, "%s", r.err);
    tu_result_free(&r);

    const char *chk[] = {"compare", "-s", "pack", "--row",
                         "big=pack:training.recompute=selective,training.max_seq_len=32768",
                         "--set", "training.oversize=drop", "--check", "big.abr>=0", manifest,
                         NULL};
    cr_assert_eq(tu_run(&r, NULL, chk), 0);
    cr_expect_eq(r.status, 1, "exit %d: %s", r.status, r.err);
    cr_expect(strstr(r.err, "big does not fit device memory") != NULL, "%s", r.err);
    tu_result_free(&r);
    const char *allow[] = {"compare", "-s", "pack", "--row",
                           "big=pack:training.recompute=selective,training.max_seq_len=32768",
                           "--set", "training.oversize=drop", "--check", "big.abr>=0",
                           "--allow-oom", "--format", "json", manifest, NULL};
    r = run_ok(allow);
    cr_expect(strstr(r.out, "\"label\":\"big\",\"strategy\":\"pack\",\"refused\":false,"
                            "\"scope\":\"epoch\",\"token_share\":1.0,\"less_work\":false,"
                            "\"other_steps\":false,\"speedup\":null") != NULL, "%s", r.out);
    cr_expect(strstr(r.out, "\"fits\":false") != NULL, "%s", r.out);
    tu_result_free(&r);

    static const char *const bad[][2] = {{"pack", "two rows named 'pack'"},
                                         {"9x=pack", "invalid row label '9x'"},
                                         {"x=nosuch", "unknown strategy 'nosuch'"},
                                         {"x=pack:", "nothing after ':'"},
                                         {"x=pack:foo", "'foo' is not KEY=VALUE"},
                                         {"x=pack:training.pp=zero", "training.pp"}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        const char *u[] = {"compare", "-s", "pack", "--row", bad[i][0], manifest, NULL};
        cr_assert_eq(tu_run(&r, NULL, u), 0);
        cr_expect(r.status == 64 || r.status == 78, "%s: exit %d", bad[i][0], r.status);
        cr_expect(strstr(r.err, bad[i][1]) != NULL, "%s: %s", bad[i][0], r.err);
        tu_result_free(&r);
    }
}

Test(cli_sim, compare_svg_and_markdown)
{
    char *svg = tu_path(dir, "c.svg");
    const char *t[] = {"compare", "-s", "sorted,pack", "--set", "training.oversize=drop",
                       "--format", "md", "--svg", svg, manifest, NULL};
    tu_result r = run_ok(t);
    cr_expect(strncmp(r.out, "| label | strategy | fits |", 27) == 0, "%s", r.out);
    cr_expect(strstr(r.out, "iter_time_ms (ms)") != NULL, "units in the heading: %s", r.out);
    char *text = tu_read_file(svg, NULL);
    cr_assert_not_null(text);
    cr_expect(strstr(text, "</svg>") != NULL);
    free(text), free(svg);
    tu_result_free(&r);
}

/* recompute: auto makes a baseline checkpoint just enough layers to fit; without it the
 * same 16K packs of an 8B model exceed an 80 GB device and verify says so (I3). */
/* A plan over device memory is refused (exit 65) with what would fit; --allow-oom
 * writes it (verify then rejects it); the default recompute=auto fits. */
Test(cli_sim, plan_refuses_what_does_not_fit)
{
    char *p = tu_path(dir, "auto.jsonl");
    const char *sel[] = {"plan", "-s", "pack", "--set", "training.oversize=drop", "--set",
                         "training.max_seq_len=16384", "--set", "training.recompute=selective",
                         "-o", p, manifest, NULL};
    tu_result r;
    cr_assert_eq(tu_run(&r, NULL, sel), 0);
    cr_expect_eq(r.status, 65, "exit %d: %s", r.status, r.err);
    cr_expect(strstr(r.err, "does not fit device memory: iteration ") != NULL, "%s", r.err);
    cr_expect(strstr(r.err, "checkpointing ") != NULL, "what would fit: %s", r.err);
    cr_expect(access(p, F_OK) != 0, "nothing written");
    tu_result_free(&r);
    /* random streams its iterations to the file as it plans: refused all the same,
     * with neither the plan nor its temporary left behind */
    const char *str[] = {"plan", "-s", "random", "--set", "training.oversize=drop", "--set",
                         "training.max_seq_len=16384", "--set", "training.recompute=selective",
                         "--set", "training.micro_batch=8", "-o", p, manifest, NULL};
    cr_assert_eq(tu_run(&r, NULL, str), 0);
    cr_expect_eq(r.status, 65, "exit %d: %s", r.status, r.err);
    cr_expect(access(p, F_OK) != 0, "nothing written");
    tu_result_free(&r);
    char *cmd = NULL;
    cr_assert(asprintf(&cmd, "ls -a '%s' | grep -c '\\.tmp\\.' >/dev/null", dir) > 0);
    cr_expect_neq(system(cmd), 0, "a temporary was left in %s", dir);
    free(cmd);

    const char *oom[] = {"plan", "-s", "pack", "--set", "training.oversize=drop", "--set",
                         "training.max_seq_len=16384", "--set", "training.recompute=selective",
                         "--allow-oom", "-o", p, manifest, NULL};
    r = run_ok(oom);
    cr_expect(strstr(r.err, "warning: --allow-oom: ") != NULL, "%s", r.err);
    tu_result_free(&r);
    const char *v[] = {"verify", p, manifest, NULL};
    cr_assert_eq(tu_run(&r, NULL, v), 0);
    cr_expect_eq(r.status, 1, "exit %d: %s", r.status, r.out);
    cr_expect(strstr(r.out, "I3:") != NULL, "%s", r.out);
    tu_result_free(&r);

    const char *aut[] = {"plan", "-s", "pack", "--set", "training.oversize=drop", "--set",
                         "training.max_seq_len=16384", "-o", p, manifest, NULL};
    r = run_ok(aut);
    tu_result_free(&r);
    r = run_ok(v);
    tu_result_free(&r);
    char *text = tu_read_file(p, NULL);
    cr_assert_not_null(text);
    cr_expect(strstr(text, "\"ckpt_layers\":0,") == NULL, "no layer checkpointed");
    free(text);
    free(p);
}

/* metrics and simulate still read a cut-off plan, but say so on stderr. */
Test(cli_sim, metrics_warns_about_a_truncated_plan)
{
    char *cut = tu_path(dir, "cut.jsonl");
    char *text = tu_read_file(plan, NULL);
    cr_assert_not_null(text);
    char *footer = strstr(text, "{\"type\":\"footer\"");
    cr_assert_not_null(footer);
    *footer = '\0';
    cr_assert_eq(tu_write_file(cut, text), 0);
    const char *m[] = {"metrics", cut, NULL};
    tu_result r = run_ok(m);
    cr_expect(strstr(r.err, "vlplan metrics: warning: ") != NULL, "%s", r.err);
    cr_expect(strstr(r.err, "no footer") != NULL, "%s", r.err);
    tu_result_free(&r);
    const char *s[] = {"simulate", "--format", "json", cut, NULL};
    r = run_ok(s);
    cr_expect(strstr(r.err, "vlplan simulate: warning: ") != NULL, "%s", r.err);
    tu_result_free(&r);
    /* a whole plan: no warning */
    const char *w[] = {"metrics", plan, NULL};
    r = run_ok(w);
    cr_expect_eq(r.errlen, 0, "%s", r.err);
    tu_result_free(&r);
    free(text), free(cut);
}

/* --check takes any top-level number of the JSON output, mfu_overall included. */
Test(cli_sim, compare_check_takes_every_json_number)
{
    const char *t[] = {"compare", "-s", "pack", "--set", "training.oversize=drop", "--check",
                       "pack.mfu_overall>0", "--check", "pack.oom_iters>=0", "--check",
                       "pack.dropped_samples>=0", "--format", "csv", manifest, NULL};
    tu_result r = run_ok(t);
    tu_result_free(&r);
}

/* A piece without '=' continues the value before it: list values need no quoting. */
Test(cli_sim, compare_row_with_a_list_value)
{
    const char *t[] = {"compare", "--row", "g=hbp:hbp.groups=4K:1,8K:2,training.seed=3",
                       "--set", "training.oversize=drop", "--format", "json", manifest,
                       NULL};
    tu_result r = run_ok(t);
    cr_expect(strstr(r.out, "\"label\":\"g\"") != NULL, "%s", r.out);
    tu_result_free(&r);
    const char *bad[] = {"compare", "--row", "g=hbp:8K:1,hbp.groups=8K:1", manifest, NULL};
    cr_assert_eq(tu_run(&r, NULL, bad), 0);
    cr_expect_eq(r.status, 64, "a list piece before any KEY=VALUE: %s", r.err);
    tu_result_free(&r);
}
