/* tests/cli/test_compare_work.c -- `compare` on the same work: rows that planned fewer
 * tokens, other optimizer steps or another batch scope are marked and never given a
 * speedup where the work differs; --same-tokens; a refused strategy is a row; checks on
 * the work keys; every export from one run; the HTML report in a headless browser. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "testutil.h"

#define QWEN "configs/qwen2.5-7b_h100x32_dp4cp8.yaml"
#define PP4 "configs/qwen2.5-72b_h100x64_pp4.yaml"

static char *dir, *man;

static void setup(void)
{
    dir = tu_tmpdir();
    man = tu_path(dir, "m.jsonl");
    const char *gen[] = {"gen", "--dist", "tulu3-longcite", "-n", "3000", "--seed", "2", "-o",
                         man, NULL};
    tu_result r;
    cr_assert_eq(tu_run(&r, NULL, gen), 0);
    cr_assert_eq(r.status, 0, "%s", r.err);
    tu_result_free(&r);
}

static void teardown(void)
{
    tu_rmtree(dir);
    free(man);
    free(dir);
}

static tu_result run(const char *const *args)
{
    tu_result r;

    cr_assert_eq(tu_run(&r, NULL, args), 0);
    return r;
}

TestSuite(compare_work, .init = setup, .fini = teardown);

/* Under truncation Skrull cuts at C·N (42,512 here), pack at the context: Skrull's row
 * planned fewer tokens, is said to, has no speedup, and a check on it fails. */
Test(compare_work, fewer_tokens_marked_and_not_ranked)
{
    const char *args[] = {"compare", "-s", "pack,skrull", "-c", QWEN, "--set",
                          "training.max_seq_len=131072", "--set", "training.oversize=truncate",
                          "--check", "skrull.epoch_time_s<pack.epoch_time_s", "--format", "json",
                          man, NULL};
    tu_result r = run(args);

    cr_expect_eq(r.status, 1, "%s", r.err);
    cr_expect(strstr(r.err, "warning: skrull planned 94.4% of the tokens pack planned") != NULL,
              "%s", r.err);
    cr_expect(strstr(r.err, "its figures are for less work (--allow-dropped") != NULL, "%s",
              r.err);
    cr_expect(strstr(r.out, "\"label\":\"skrull\",\"strategy\":\"skrull\",\"refused\":false,"
                            "\"scope\":\"batch\",\"token_share\":0.94") != NULL, "%s", r.out);
    cr_expect(strstr(r.out, "\"less_work\":true,\"other_steps\":false,\"speedup\":null") != NULL,
              "%s", r.out);
    tu_result_free(&r);
    args[10] = "skrull.tokens<pack.tokens";   /* the work keys judge any row */
    r = run(args);
    cr_expect_eq(r.status, 0, "%s", r.err);
    tu_result_free(&r);
}

Test(compare_work, same_tokens_cuts_every_row_at_the_smallest_limit)
{
    const char *args[] = {"compare", "-s", "pack,skrull", "--same-tokens", "-c", QWEN, "--set",
                          "training.max_seq_len=131072", "--set", "training.oversize=truncate",
                          "--format", "csv", man, NULL};
    tu_result r = run(args);
    char *pack, *skrull;

    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_expect(strstr(r.err, "--same-tokens: every row planned samples of at most 42,512 "
                            "tokens, the limit of skrull (skrull's BucketSize C x CP N = ")
              != NULL, "%s", r.err);
    pack = strstr(r.out, "\npack,pack,");
    skrull = strstr(r.out, "\nskrull,skrull,");
    cr_assert(pack && skrull, "%s", r.out);
    /* fits,scope,samples,tokens: the same tokens in both rows */
    char a[64], b[64];
    cr_assert_eq(sscanf(pack, "\npack,pack,%*[^,],%*[^,],%*[^,],%63[^,]", a), 1);
    cr_assert_eq(sscanf(skrull, "\nskrull,skrull,%*[^,],%*[^,],%*[^,],%63[^,]", b), 1);
    cr_expect_str_eq(a, b);
    tu_result_free(&r);

    const char *err[] = {"compare", "-s", "pack,skrull", "--same-tokens", "-c", QWEN, "--set",
                         "training.max_seq_len=131072", man, NULL};
    r = run(err);
    cr_expect_eq(r.status, 64, "%s", r.err);
    cr_expect(strstr(r.err, "set training.oversize=truncate or drop") != NULL, "%s", r.err);
    tu_result_free(&r);
}

/* mcore_cp refuses pipeline parallelism: its row says why, the others are compared, and
 * a check naming it fails with the reason; when every row is refused, exit 65. */
Test(compare_work, refused_strategy_is_a_row)
{
    const char *args[] = {"compare", "-s", "pack,mcore_cp", "-c", PP4, "--set",
                          "training.oversize=drop", man, NULL};
    const char *chk[] = {"compare", "-s", "pack,mcore_cp", "-c", PP4, "--set",
                         "training.oversize=drop", "--check", "mcore_cp.fits==1", man, NULL};
    const char *all[] = {"compare", "-s", "mcore_cp", "-c", PP4, "--set",
                         "training.oversize=drop", man, NULL};
    tu_result r = run(args);

    cr_expect_eq(r.status, 0, "%s", r.err);
    cr_expect(strstr(r.out, "refused") != NULL, "%s", r.out);
    cr_expect(strstr(r.out, "mcore_cp: refused: mcore_cp: training.pp = 4") != NULL, "%s", r.out);
    tu_result_free(&r);
    r = run(chk);
    cr_expect_eq(r.status, 1, "%s", r.err);
    cr_expect(strstr(r.err, "(mcore_cp was refused: mcore_cp: training.pp = 4") != NULL, "%s",
              r.err);
    tu_result_free(&r);
    r = run(all);
    cr_expect_eq(r.status, 65, "%s", r.err);
    cr_expect(strstr(r.err, "every row was refused") != NULL, "%s", r.err);
    tu_result_free(&r);
}

/* Scope per row, speedups against --baseline, a warning when scopes differ. */
Test(compare_work, scope_and_baseline)
{
    const char *args[] = {"compare", "--row", "pack", "--row", "pb=pack:pack.scope=batch",
                          "--row", "sorted", "--baseline", "pb", "--set",
                          "training.oversize=drop", "--format", "json", man, NULL};
    tu_result r = run(args);

    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_expect(strstr(r.out, "\"label\":\"pack\",\"strategy\":\"pack\",\"refused\":false,"
                            "\"scope\":\"epoch\"") != NULL, "%s", r.out);
    cr_expect(strstr(r.out, "\"label\":\"pb\",\"strategy\":\"pack\",\"refused\":false,"
                            "\"scope\":\"batch\"") != NULL, "%s", r.out);
    cr_expect(strstr(r.out, "\"other_steps\":false,\"speedup\":1.0,") != NULL, "%s", r.out);
    cr_expect(strstr(r.err, "warning: rows of different scope: pack regroups") != NULL, "%s",
              r.err);
    tu_result_free(&r);
    const char *bad[] = {"compare", "-s", "pack", "--baseline", "nope", man, NULL};
    r = run(bad);
    cr_expect_eq(r.status, 64);
    cr_expect(strstr(r.err, "--baseline 'nope' is not among the rows") != NULL, "%s", r.err);
    tu_result_free(&r);
}

/* fits, oom_iters, scope judge any row; messages print numbers as the table does. */
Test(compare_work, checks_on_the_work)
{
    const char *args[] = {"compare", "--row",
                          "big=pack:training.recompute=selective,training.max_seq_len=32768",
                          "--set", "training.oversize=drop", "--check", "big.fits==0", "--check",
                          "big.oom_iters>0", "--check", "big.scope==epoch", man, NULL};
    const char *fail[] = {"compare", "-s", "pack", "--set", "training.oversize=drop", "--check",
                          "pack.tokens_per_s>100000000", "--check", "pack.tbr>0.5", man, NULL};
    tu_result r = run(args);

    cr_expect_eq(r.status, 0, "%s", r.err);
    tu_result_free(&r);
    r = run(fail);
    cr_expect_eq(r.status, 1, "%s", r.err);
    cr_expect(strstr(r.err, "> 100,000,000 is false") != NULL, "%s", r.err);
    cr_expect(strstr(r.err, "e+") == NULL && strstr(r.err, "e-0") == NULL, "%s", r.err);
    tu_result_free(&r);
}

/* One run writes the table and every export; the chart says what was compared. */
Test(compare_work, every_export_in_one_run)
{
    char *p[5] = {tu_path(dir, "c.json"), tu_path(dir, "c.csv"), tu_path(dir, "c.md"),
                  tu_path(dir, "c.svg"), tu_path(dir, "c.html")};
    const char *args[] = {"compare", "-s", "pack,hbp", "--set", "training.oversize=drop",
                          "--export-json", p[0], "--export-csv", p[1], "--export-md", p[2],
                          "--svg", p[3], "--html", p[4], man, NULL};
    tu_result r = run(args);
    char *t;

    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_expect(strstr(r.out, "token_share") != NULL, "the table: %s", r.out);
    cr_assert_not_null(t = tu_read_file(p[0], NULL));
    cr_expect(strstr(t, "\"compared\":{\"manifest\":") != NULL, "%s", t);
    free(t);
    cr_assert_not_null(t = tu_read_file(p[1], NULL));
    cr_expect(strncmp(t, "label,strategy,fits,scope,", 26) == 0, "%s", t);
    free(t);
    cr_assert_not_null(t = tu_read_file(p[2], NULL));
    cr_expect(strncmp(t, "| label | strategy | fits | scope", 33) == 0, "%s", t);
    free(t);
    cr_assert_not_null(t = tu_read_file(p[3], NULL));
    cr_expect(strstr(t, "data: ") && strstr(t, "3,000 samples") &&
              strstr(t, "% of the tokens") && strstr(t, "batch scope") == NULL &&
              strstr(t, "epoch scope"), "the chart says what was compared");
    free(t);
    cr_assert_not_null(t = tu_read_file(p[4], NULL));
    cr_expect(strstr(t, "<table>") && strstr(t, "Simulated time of every iteration") &&
              strstr(t, "Lengths") && strstr(t, ": the slowest iteration, "), "report");
    cr_expect(strstr(t, "<script") == NULL && strstr(t, "src=") == NULL &&
              strstr(t, "href=") == NULL, "self-contained");
    free(t);
    for (int i = 0; i < 5; i++)
        free(p[i]);
    tu_result_free(&r);
}

/* The report in headless Chromium: it loads with no console error, and a screenshot is
 * taken (tools/deps.sh browser installs Debian's chromium for this test). */
Test(compare_work, html_report_in_a_browser)
{
    char *html = tu_path(dir, "r.html"), *png = tu_path(dir, "r.png"), cmd[2048];
    const char *args[] = {"compare", "-s", "pack,sorted", "--set", "training.oversize=drop",
                          "--html", html, man, NULL};
    tu_result r = run(args);
    size_t len = 0;
    char *log;

    cr_assert_eq(r.status, 0, "%s", r.err);
    tu_result_free(&r);
    if (access("/usr/bin/chromium", X_OK) != 0) {
        cr_log_warn("skipped: /usr/bin/chromium is not installed (sh tools/deps.sh browser)");
        goto done;
    }
    snprintf(cmd, sizeof cmd,
             "cd '%s' && timeout 120 /usr/bin/chromium --headless --no-sandbox --disable-gpu "
             "--disable-background-networking --disable-component-update --disable-sync "
             "--no-first-run --disable-quic --user-data-dir='%s/profile' --enable-logging=stderr "
             "--v=0 --window-size=1400,2400 --screenshot='%s' 'file://%s' >'%s/log' 2>&1",
             dir, dir, png, html, dir);
    cr_expect_eq(system(cmd), 0, "chromium failed");
    char *lp = tu_path(dir, "log");
    log = tu_read_file(lp, &len);
    free(lp);
    cr_expect(log && strstr(log, "CONSOLE") == NULL && strstr(log, "Uncaught") == NULL,
              "console messages: %s", log ? log : "(no log)");
    free(log);
    char *shot = tu_read_file(png, &len);
    cr_expect(shot && len > 20000 && memcmp(shot, "\x89PNG", 4) == 0,
              "a screenshot of the page: %zu bytes", len);
    free(shot);
done:
    free(html);
    free(png);
}
