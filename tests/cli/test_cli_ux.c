/* tests/cli/test_cli_ux.c -- what a newcomer meets: help where git users look for it,
 * "did you mean" for options, the --format lists, the progress meter on a terminal,
 * length limits named by their source, drops counted by verify and metrics, simulate
 * --iter N about iteration N only, numbers as tables print them. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

static tu_result run(const char *const *args)
{
    tu_result r;

    cr_assert_eq(tu_run(&r, NULL, args), 0);
    return r;
}

Test(cli_ux, help_cmd_is_cmd_help)
{
    const char *a1[] = {"help", "simulate", NULL}, *a2[] = {"simulate", "--help", NULL};
    tu_result r1 = run(a1), r2 = run(a2);

    cr_expect_eq(r1.status, 0, "%s", r1.err);
    cr_expect(strstr(r1.out, "usage: vlplan simulate") != NULL, "%s", r1.out);
    cr_expect_str_eq(r1.out, r2.out);
    tu_result_free(&r1);
    tu_result_free(&r2);
}

Test(cli_ux, help_of_unknown_command_suggests)
{
    const char *args[] = {"help", "simulte", NULL};
    tu_result r = run(args);

    cr_expect_eq(r.status, 64);
    cr_expect(strstr(r.err, "did you mean 'simulate'?") != NULL, "%s", r.err);
    tu_result_free(&r);
}

Test(cli_ux, mistyped_option_suggests_the_nearest)
{
    const char *a1[] = {"plan", "--allow-om", "-s", "pack", "testdata/demo.jsonl", NULL};
    const char *a2[] = {"compare", "--chek=x", "testdata/demo.jsonl", NULL};
    const char *a3[] = {"plan", "--frobnicate", "testdata/demo.jsonl", NULL};
    tu_result r1 = run(a1), r2 = run(a2), r3 = run(a3);

    cr_expect_eq(r1.status, 64);
    cr_expect(strstr(r1.err, "unknown option '--allow-om' (did you mean '--allow-oom'?)"),
              "%s", r1.err);
    cr_expect(strstr(r2.err, "(did you mean '--check'?)") != NULL, "%s", r2.err);
    cr_expect(strstr(r3.err, "did you mean") == NULL, "%s", r3.err);
    tu_result_free(&r1);
    tu_result_free(&r2);
    tu_result_free(&r3);
}

Test(cli_ux, strategies_format_lists_mdoc)
{
    const char *a1[] = {"strategies", "--format", "x", NULL};
    const char *a2[] = {"strategies", "--format", "mdoc", NULL};
    tu_result r1 = run(a1), r2 = run(a2);

    cr_expect(strstr(r1.err, "expected one of: table, csv, mdoc") != NULL, "%s", r1.err);
    cr_expect_eq(r2.status, 0);
    cr_expect(strstr(r2.out, ".Bl -tag") != NULL);
    tu_result_free(&r1);
    tu_result_free(&r2);
}

/* On a terminal with the delay at 0 the meter draws "iteration k/K (p%)". */
Test(cli_ux, progress_meter_counts_iterations)
{
    char *dir = tu_tmpdir(), *out = tu_path(dir, "p.jsonl");
    const char *args[] = {"plan", "-s", "random", "-o", out, "testdata/demo.jsonl", NULL};
    tu_result r;

    setenv("VLPLAN_PROGRESS_DELAY", "0", 1);
    cr_assert_eq(tu_run_tty(&r, args), 0);
    unsetenv("VLPLAN_PROGRESS_DELAY");
    cr_expect_eq(r.status, 0, "%s", r.err);
    cr_expect(strstr(r.err, "planning 8819 samples with random: iteration 1/9 (11%), about ")
              != NULL, "%s", r.err);
    tu_result_free(&r);
    tu_rmtree(dir);
    free(out);
    free(dir);
}

/* Without a terminal, nothing: the meter never reaches a pipe or a file. */
Test(cli_ux, no_progress_without_a_terminal)
{
    char *dir = tu_tmpdir(), *out = tu_path(dir, "p.jsonl");
    const char *args[] = {"plan", "-s", "random", "-o", out, "testdata/demo.jsonl", NULL};
    tu_result r;

    setenv("VLPLAN_PROGRESS_DELAY", "0", 1);
    r = run(args);
    unsetenv("VLPLAN_PROGRESS_DELAY");
    cr_expect_eq(r.status, 0, "%s", r.err);
    cr_expect_eq(r.errlen, 0, "%s", r.err);
    tu_result_free(&r);
    tu_rmtree(dir);
    free(out);
    free(dir);
}

/* A limit shorter than training.max_seq_len is named by its source, with its numbers. */
Test(cli_ux, skrull_limit_named_with_bucket_and_cp)
{
    char *dir = tu_tmpdir(), *man = tu_path(dir, "m.txt");
    cr_assert_eq(tu_write_file(man, "1000\n2000\n900000\n3000\n"), 0);
    const char *args[] = {"plan", "-s", "skrull", "-c", "configs/qwen2.5-7b_h100x32_dp4cp8.yaml",
                          "--set", "training.max_seq_len=1048576", "--set",
                          "skrull.bucket_size=5000", man, NULL};
    tu_result r = run(args);

    cr_expect_eq(r.status, 65, "%s", r.err);
    cr_expect(strstr(r.err, "1 samples exceed 40000 tokens, the length limit (skrull's "
                            "BucketSize C x CP N = 5000 x 8; C: skrull.bucket_size, "
                            "N: training.sp;") != NULL, "%s", r.err);
    tu_result_free(&r);
    tu_rmtree(dir);
    free(man);
    free(dir);
}

Test(cli_ux, drop_report_names_the_limit)
{
    char *dir = tu_tmpdir(), *man = tu_path(dir, "m.txt"), *out = tu_path(dir, "p.jsonl");
    cr_assert_eq(tu_write_file(man, "1000\n2000\n9000\n3000\n"), 0);
    const char *args[] = {"plan", "-s", "pack", "--set", "training.oversize=drop", "-o", out,
                          man, NULL};
    tu_result r = run(args);

    cr_expect_eq(r.status, 0, "%s", r.err);
    cr_expect(strstr(r.err, "dropped 1 samples over the length limit of 8,192 tokens (9,000 "
                            "tokens, 60.00% of all tokens); the limit is training.max_seq_len")
              != NULL, "%s", r.err);
    tu_result_free(&r);
    tu_rmtree(dir);
    free(man);
    free(out);
    free(dir);
}

/* A truncating plan of four samples, one of them over 8,192 tokens, in dir. */
static char *truncated_plan(const char *dir, char **man)
{
    char *out = tu_path(dir, "p.jsonl");
    *man = tu_path(dir, "m.txt");
    cr_assert_eq(tu_write_file(*man, "1000\n2000\n9000\n3000\n"), 0);
    const char *args[] = {"plan", "-s", "pack", "--set", "training.oversize=truncate", "-o",
                          out, *man, NULL};
    tu_result r = run(args);
    cr_assert_eq(r.status, 0, "%s", r.err);
    tu_result_free(&r);
    return out;
}

Test(cli_ux, verify_and_metrics_count_drops)
{
    char *dir = tu_tmpdir(), *man = NULL, *plan = truncated_plan(dir, &man);
    const char *a1[] = {"verify", plan, man, NULL}, *a2[] = {"metrics", plan, NULL};
    tu_result r1 = run(a1), r2 = run(a2);

    cr_expect_eq(r1.status, 0, "%s", r1.err);
    cr_expect(strstr(r1.out, "every sample accounted for: 0 dropped (0 tokens), 1 truncated "
                             "(808 tokens cut)") != NULL, "%s", r1.out);
    cr_expect(strstr(r2.out, "4 samples, 14,192 tokens, 1 truncated (808 tokens cut)") != NULL,
              "%s", r2.out);
    cr_expect(strstr(r2.out, "epoch MFU ") != NULL, "%s", r2.out);
    cr_expect(strstr(r2.out, "model FLOPs utilisation per iteration") != NULL, "%s", r2.out);
    tu_result_free(&r1);
    tu_result_free(&r2);
    tu_rmtree(dir);
    free(plan);
    free(man);
    free(dir);
}

Test(cli_ux, simulate_iter_is_about_that_iteration)
{
    char *dir = tu_tmpdir(), *plan = tu_path(dir, "p.jsonl"), *svg = tu_path(dir, "i.svg");
    const char *a1[] = {"plan", "-s", "random", "-o", plan, "testdata/demo.jsonl", NULL};
    const char *a2[] = {"simulate", "--iter", "3", "--svg", svg, plan, NULL};
    tu_result r1 = run(a1), r2 = run(a2);
    char *text;

    cr_assert_eq(r2.status, 0, "%s", r2.err);
    cr_expect(strstr(r2.out, "\n     3     0 ") != NULL, "%s", r2.out);
    cr_expect(strstr(r2.out, "\n     2 ") == NULL && strstr(r2.out, "abr") == NULL, "%s",
              r2.out);
    cr_assert_not_null(text = tu_read_file(svg, NULL));
    cr_expect(strstr(text, "random: iteration 3 (epoch 0)") != NULL);
    cr_expect(strstr(text, "e+0") == NULL, "e-notation in the chart");
    free(text);
    tu_result_free(&r1);
    tu_result_free(&r2);
    tu_rmtree(dir);
    free(plan);
    free(svg);
    free(dir);
}

Test(cli_ux, stats_table_says_longest_once_with_separators)
{
    char *dir = tu_tmpdir(), *man = tu_path(dir, "m.txt");
    cr_assert_eq(tu_write_file(man, "1000\n2000\n1234567\n3000\n"), 0);
    const char *args[] = {"stats", man, NULL};
    tu_result r = run(args);
    const char *first = strstr(r.out, "longest");

    cr_expect_eq(r.status, 0, "%s", r.err);
    cr_expect(strstr(r.out, "samples 4, tokens 1,240,567,") != NULL, "%s", r.out);
    cr_expect(first && strstr(first + 1, "longest") == NULL, "%s", r.out);
    cr_expect(strstr(r.out, "longest 1,234,567") != NULL, "%s", r.out);
    tu_result_free(&r);
    tu_rmtree(dir);
    free(man);
    free(dir);
}

/* -q silences progress and warnings, never what was dropped. */
Test(cli_ux, drops_said_under_quiet)
{
    char *dir = tu_tmpdir(), *man = tu_path(dir, "m.txt"), *out = tu_path(dir, "p.jsonl");
    cr_assert_eq(tu_write_file(man, "9000\n9500\n"), 0);
    const char *args[] = {"plan", "-q", "-s", "pack", "--set", "training.oversize=drop",
                          "--allow-empty", "-o", out, man, NULL};
    tu_result r = run(args);

    cr_expect(strstr(r.err, "dropped 2 samples over the length limit of 8,192 tokens "
                            "(18,500 tokens, 100.00% of all tokens)") != NULL, "%s", r.err);
    tu_result_free(&r);
    tu_rmtree(dir);
    free(man);
    free(out);
    free(dir);
}

/* Strategies that plan a whole epoch before its first iteration still show how far
 * they are: with the count when they announce it (hbp, which packs every epoch first),
 * else by the iterations begun (pack, which holds its plan whole). */
static void progress_of(const char *strategy, const char *want)
{
    char *dir = tu_tmpdir(), *out = tu_path(dir, "p.jsonl");
    const char *args[] = {"plan", "-s", strategy, "-o", out, "testdata/demo.jsonl", NULL};
    tu_result r;

    setenv("VLPLAN_PROGRESS_DELAY", "0", 1);
    cr_assert_eq(tu_run_tty(&r, args), 0);
    unsetenv("VLPLAN_PROGRESS_DELAY");
    cr_expect_eq(r.status, 0, "%s", r.err);
    cr_expect(strstr(r.err, want) != NULL, "%s: %s", want, r.err);
    tu_result_free(&r);
    tu_rmtree(dir);
    free(out);
    free(dir);
}

Test(cli_ux, progress_meter_for_whole_epoch_strategies)
{
    progress_of("hbp", "planning 8819 samples with hbp: iteration 1/10 (10%)");
    progress_of("pack", "planning 8819 samples with pack: iteration 1");
}

/* CSV numbers are plain: no thousands separators, never e-notation. */
Test(cli_ux, csv_numbers_are_plain)
{
    char *dir = tu_tmpdir(), *plan = tu_path(dir, "p.jsonl");
    const char *a1[] = {"plan", "-s", "pack", "-o", plan, "testdata/demo.jsonl", NULL};
    const char *a2[] = {"metrics", "--format", "csv", plan, NULL};
    tu_result r1 = run(a1), r2 = run(a2);

    cr_assert_eq(r2.status, 0, "%s", r2.err);
    cr_expect(strstr(r2.out, "e-0") == NULL && strstr(r2.out, "e+") == NULL &&
              strstr(r2.out, "e-1") == NULL, "%s", r2.out);
    cr_expect(strncmp(r2.out, "metric,mean,p50,p99,max\nabr,0.", 30) == 0, "%s", r2.out);
    tu_result_free(&r1);
    tu_result_free(&r2);
    tu_rmtree(dir);
    free(plan);
    free(dir);
}
