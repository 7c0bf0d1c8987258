/* tests/cli/test_cli_plan.c -- the vlplan binary on good input: every strategy's plan
 * verifies; the same seed gives byte-identical plans whether the manifest comes from a
 * file, stdin, a .zst file or shards; outputs land atomically; help and version. */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

static char *dir;

static void load_strategies(void);
static const char *strategies[32];
static char *strategies_csv;

static void setup(void)
{
    dir = tu_tmpdir();
    cr_assert_not_null(dir);
    load_strategies();
}

static void teardown(void)
{
    tu_rmtree(dir);
    free(dir);
    free(strategies_csv);
}

TestSuite(cli_plan, .init = setup, .fini = teardown);

static tu_result run_ok(const char *stdin_path, const char *const *args)
{
    tu_result r;
    cr_assert_eq(tu_run(&r, stdin_path, args), 0);
    cr_assert_eq(r.status, 0, "%s %s: exit %d: %s", args[0], args[1], r.status, r.err);
    return r;
}

/* A seeded random manifest in JSONL with string and integer ids; returns its path. */
static char *random_manifest(unsigned seed, int n, const char *name)
{
    char *path = tu_path(dir, name);
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f);
    srand(seed);
    for (int i = 0; i < n; i++) {
        int len = 1 + rand() % (rand() % 8 == 0 ? 8000 : 2000);
        if (i % 3 == 0)
            fprintf(f, "{\"id\":\"s%d\",\"len\":%d}\n", i, len);
        else
            fprintf(f, "{\"id\":%d,\"len\":%d,\"loss_tokens\":%d}\n", i, len, 1 + len / 2);
    }
    cr_assert_eq(fclose(f), 0);
    return path;
}

static char *plan_to(const char *strategy, const char *seed, const char *in, const char *out,
                     const char *stdin_path)
{
    char *o = tu_path(dir, out);
    const char *args[] = {"plan", "-s", strategy, "--seed", seed, "--set",
                          "training.max_seq_len=8192", "--set", "training.global_batch=64",
                          "-o", o, in, NULL};
    tu_result r = run_ok(stdin_path, args);
    tu_result_free(&r);
    return o;
}

static void assert_same_file(const char *a, const char *b)
{
    size_t na, nb;
    char *x = tu_read_file(a, &na), *y = tu_read_file(b, &nb);
    cr_assert_not_null(x);
    cr_assert_not_null(y);
    cr_assert(na == nb && memcmp(x, y, na) == 0, "%s and %s differ", a, b);
    free(x);
    free(y);
}

static void verify_ok(const char *plan, const char *manifest)
{
    const char *args[] = {"verify", plan, manifest, NULL};
    tu_result r = run_ok(NULL, args);
    cr_assert(strstr(r.out, "ok") != NULL, "%s", r.out);
    tu_result_free(&r);
}

/* Every registered strategy, from `vlplan strategies --format csv`, so a new strategy
 * is covered by these properties without editing this file. */
static void load_strategies(void)
{
    const char *args[] = {"strategies", "--format", "csv", NULL};
    tu_result r;
    int n = 0;

    cr_assert_eq(tu_run(&r, NULL, args), 0);
    cr_assert_eq(r.status, 0, "%s", r.err);
    strategies_csv = r.out;
    r.out = NULL;
    char *line = strchr(strategies_csv, '\n');   /* skip the header */
    while (line && line[1] && n < 31) {
        char *name = line + 1, *comma = strchr(name, ',');
        line = strchr(name, '\n');
        if (!comma)
            break;
        *comma = '\0';
        strategies[n++] = name;
    }
    strategies[n] = NULL;
    cr_assert_geq(n, 3);
    tu_result_free(&r);
}

Test(cli_plan, every_strategy_verifies_and_is_deterministic)
{
    char *m = random_manifest(1, 700, "m.jsonl");
    for (int i = 0; strategies[i]; i++) {
        char *a = plan_to(strategies[i], "7", m, "a.jsonl", NULL);
        char *b = plan_to(strategies[i], "7", m, "b.jsonl", NULL);
        verify_ok(a, m);
        assert_same_file(a, b);
        free(a);
        free(b);
    }
    free(m);
}

Test(cli_plan, seeded_properties_over_random_manifests)
{
    char seed[16];
    for (unsigned s = 0; s < 6; s++) {
        char *m = random_manifest(100 + s, 50 + (int)s * 97, "p.jsonl");
        snprintf(seed, sizeof seed, "%u", s);
        for (int i = 0; strategies[i]; i++) {
            char *a = plan_to(strategies[i], seed, m, "pa.jsonl", NULL);
            verify_ok(a, m);
            free(a);
        }
        free(m);
    }
}

Test(cli_plan, stdin_zst_and_shards_give_the_same_plan)
{
    char *m = random_manifest(2, 500, "m.jsonl");
    char *zst = tu_path(dir, "m.jsonl.zst"), *cmd = NULL;
    char *s1 = tu_path(dir, "s1.jsonl"), *s2 = tu_path(dir, "s2.jsonl");

    cr_assert(asprintf(&cmd, "zstd -q -f '%s' -o '%s' && head -n 200 '%s' > '%s' && "
                             "tail -n +201 '%s' > '%s'",
                       m, zst, m, s1, m, s2) > 0);
    cr_assert_eq(system(cmd), 0);
    free(cmd);
    for (int i = 0; strategies[i]; i++) {
        char *a = plan_to(strategies[i], "3", m, "a.jsonl", NULL);
        char *b = plan_to(strategies[i], "3", "-", "b.jsonl", m);
        char *c = plan_to(strategies[i], "3", zst, "c.jsonl", NULL);
        char *o = tu_path(dir, "d.jsonl");
        const char *args[] = {"plan", "-s", strategies[i], "--seed", "3", "--set",
                              "training.max_seq_len=8192", "--set",
                              "training.global_batch=64", "-o", o, s1, s2, NULL};
        tu_result r = run_ok(NULL, args);
        tu_result_free(&r);
        assert_same_file(a, b);
        assert_same_file(a, c);
        assert_same_file(a, o);
        free(a), free(b), free(c), free(o);
    }
    free(m), free(zst), free(s1), free(s2);
}

Test(cli_plan, stdout_equals_file_and_zst_output_roundtrips)
{
    char *m = random_manifest(3, 300, "m.jsonl");
    char *a = plan_to("pack", "1", m, "a.jsonl", NULL);
    char *z = plan_to("pack", "1", m, "a.jsonl.zst", NULL);
    const char *args[] = {"plan", "-s", "pack", "--seed", "1", "--set",
                          "training.max_seq_len=8192", "--set", "training.global_batch=64",
                          m, NULL};
    tu_result r = run_ok(NULL, args);
    size_t n;
    char *x = tu_read_file(a, &n);
    cr_assert(n == r.outlen && memcmp(x, r.out, n) == 0, "stdout differs from -o file");
    verify_ok(z, m);
    /* only the two plans and the manifest: no temporary files left behind */
    cr_assert_eq(tu_count_entries(dir), 3);
    free(x), free(a), free(z), free(m);
    tu_result_free(&r);
}

Test(cli_plan, metrics_json_has_the_documented_keys)
{
    char *m = random_manifest(4, 300, "m.jsonl");
    char *mj = tu_path(dir, "m.json"), *p = tu_path(dir, "p.jsonl");
    const char *args[] = {"plan", "-s", "pack", "-o", p, "--metrics", mj, m, NULL};
    tu_result r = run_ok(NULL, args);
    char *js = tu_read_file(mj, NULL);
    const char *keys[] = {"\"abr\":", "\"dbr\":", "\"pr\":", "\"cr\":", "\"ave_t\":",
                          "\"iterations\":", "\"samples\":", "\"tokens\":", "\"dist\":",
                          "\"p99\":", NULL};
    for (int i = 0; keys[i]; i++)
        cr_expect(strstr(js, keys[i]) != NULL, "metrics JSON lacks %s: %s", keys[i], js);
    const char *margs[] = {"metrics", "--format", "csv", p, NULL};
    tu_result_free(&r);
    r = run_ok(NULL, margs);
    cr_expect(strncmp(r.out, "metric,mean,p50,p99,max\n", 24) == 0, "%s", r.out);
    free(js), free(mj), free(p), free(m);
    tu_result_free(&r);
}

Test(cli_plan, verify_catches_a_tampered_plan)
{
    char *m = random_manifest(5, 200, "m.jsonl");
    char *p = plan_to("pack", "1", m, "p.jsonl", NULL);
    size_t n;
    char *text = tu_read_file(p, &n);
    /* drop the last iteration line: samples go missing and the footer no longer matches */
    char *footer = strstr(text, "{\"type\":\"footer\"");
    cr_assert_not_null(footer);
    char *last_iter = footer - 1;
    while (last_iter > text && last_iter[-1] != '\n')
        last_iter--;
    memmove(last_iter, footer, strlen(footer) + 1);
    cr_assert_eq(tu_write_file(p, text), 0);
    const char *args[] = {"verify", p, m, NULL};
    tu_result r;
    cr_assert_eq(tu_run(&r, NULL, args), 0);
    cr_expect_eq(r.status, 1, "exit %d: %s %s", r.status, r.out, r.err);
    cr_expect(strstr(r.out, "I1") != NULL || strstr(r.out, "missing") != NULL, "%s", r.out);
    tu_result_free(&r);
    free(text), free(p), free(m);
}

/* An empty manifest, accepted with --allow-empty, gives a plan that verify proves
 * with the same option, and that simulate has nothing to draw of. */
Test(cli_plan, empty_manifest_plan_verifies_with_allow_empty)
{
    char *m = tu_path(dir, "empty.txt"), *p = tu_path(dir, "e.jsonl"),
         *svg = tu_path(dir, "e.svg");
    cr_assert_eq(tu_write_file(m, ""), 0);
    const char *pl[] = {"plan", "-s", "pack", "--allow-empty", "-o", p, m, NULL};
    tu_result r = run_ok(NULL, pl);
    tu_result_free(&r);
    const char *v[] = {"verify", "--allow-empty", p, m, NULL};
    r = run_ok(NULL, v);
    cr_expect(strstr(r.out, "ok: 0 iterations") != NULL, "%s", r.out);
    tu_result_free(&r);
    const char *v2[] = {"verify", p, m, NULL};
    cr_assert_eq(tu_run(&r, NULL, v2), 0);
    cr_expect_eq(r.status, 65, "exit %d: %s", r.status, r.err);
    cr_expect(strstr(r.err, "no samples") != NULL, "%s", r.err);
    tu_result_free(&r);
    const char *s[] = {"simulate", "--svg", svg, p, NULL};
    cr_assert_eq(tu_run(&r, NULL, s), 0);
    cr_expect_eq(r.status, 64, "exit %d: %s", r.status, r.err);
    cr_expect(strstr(r.err, "vlplan simulate: error: --svg: the plan has no iterations") != NULL,
              "%s", r.err);
    tu_result_free(&r);
    free(m), free(p), free(svg);
}

/* strategies -v names the values an enumerated parameter takes. */
Test(cli_plan, strategies_verbose_lists_enum_values)
{
    const char *args[] = {"strategies", "-v", NULL};
    tu_result r = run_ok(NULL, args);
    cr_expect(strstr(r.out, "hbp.packer (enum: isf, ffd, bfd, ffs, bfs, spfhp; default isf)") !=
                  NULL, "%s", r.out);
    cr_expect(strstr(r.out, "hbp.groups (string, default auto)") != NULL, "%s", r.out);
    tu_result_free(&r);
}

Test(cli_plan, every_command_has_help)
{
    const char *cmds[] = {"plan", "metrics", "verify", "stats", "gen", "strategies", "config",
                          NULL};
    for (int i = 0; cmds[i]; i++) {
        const char *args[] = {cmds[i], "--help", NULL};
        tu_result r = run_ok(NULL, args);
        cr_expect(strstr(r.out, "usage: vlplan") != NULL, "%s --help: %s", cmds[i], r.out);
        tu_result_free(&r);
    }
    const char *v[] = {"--version", NULL};
    tu_result r = run_ok(NULL, v);
    cr_expect(strncmp(r.out, "vlplan ", 7) == 0, "%s", r.out);
    tu_result_free(&r);
}

Test(cli_plan, help_options_are_in_the_man_page)
{
    char *man = tu_read_file("man/vlplan.1", NULL);
    const char *cmds[] = {"plan", "metrics", "verify", "stats", "gen", "strategies", "config",
                          NULL};
    cr_assert_not_null(man);
    for (int i = 0; cmds[i]; i++) {
        const char *args[] = {cmds[i], "--help", NULL};
        tu_result r = run_ok(NULL, args);
        /* every "--name" in the help text appears as "Fl \-name" in the page */
        for (char *p = strstr(r.out, "--"); p; p = strstr(p + 2, "--")) {
            char name[64], pat[80];
            int k = 0;
            while (k < 63 && (p[2 + k] == '-' || (p[2 + k] >= 'a' && p[2 + k] <= 'z')))
                name[k] = p[2 + k], k++;
            name[k] = '\0';
            if (k == 0 || strcmp(name, "help") == 0)
                continue;
            snprintf(pat, sizeof pat, "Fl \\-%s", name);
            cr_expect(strstr(man, pat) != NULL, "man page lacks --%s (%s)", name, cmds[i]);
        }
        tu_result_free(&r);
    }
    free(man);
}

/* Every preset in configs/ loads and plans the demo manifest with every strategy, and
 * the plan verifies, modelled memory included -- except that mcore_cp refuses pipeline
 * stages (exit 78), as Megatron's hybrid CP does. */
Test(cli_plan, every_config_plans_with_every_strategy)
{
    DIR *d = opendir("configs");
    struct dirent *e;
    int nconf = 0;

    cr_assert_not_null(d);
    while ((e = readdir(d)) != NULL) {
        size_t n = strlen(e->d_name);
        if (n < 6 || strcmp(e->d_name + n - 5, ".yaml") != 0)
            continue;
        char *cfg = tu_path("configs", e->d_name);
        for (int i = 0; strategies[i]; i++) {
            char *o = tu_path(dir, "c.jsonl");
            const char *args[] = {"plan", "-s", strategies[i], "-c", cfg, "--set",
                                  "training.oversize=truncate", "-o", o,
                                  "testdata/demo.jsonl", NULL};
            tu_result r;
            cr_assert_eq(tu_run(&r, NULL, args), 0);
            if (strcmp(strategies[i], "mcore_cp") == 0 && r.status == 78 &&
                strstr(r.err, "pipeline parallelism")) {
                tu_result_free(&r);
                free(o);
                continue;
            }
            cr_assert_eq(r.status, 0, "%s -c %s: exit %d: %s", strategies[i], cfg, r.status,
                         r.err);
            tu_result_free(&r);
            verify_ok(o, "testdata/demo.jsonl");
            free(o);
        }
        free(cfg);
        nconf++;
    }
    closedir(d);
    cr_assert_geq(nconf, 5);
}

/* Killed while writing, vlplan removes its temporary and dies of the signal: neither a
 * partial file under the final name nor a stray ".tmp" is left behind. */
Test(cli_plan, signal_removes_the_temporary)
{
    const char *bin = getenv("VLPLAN_BIN") ? getenv("VLPLAN_BIN") : "build/vlplan";
    char *out = tu_path(dir, "big.jsonl.zst");
    int status, seen = 0;
    pid_t pid = fork();

    cr_assert_geq(pid, 0);
    if (pid == 0) {
        int null = open("/dev/null", O_WRONLY);
        dup2(null, 1);
        dup2(null, 2);
        execl(bin, bin, "gen", "--dist", "lmsys", "-n", "60000000", "-o", out, (char *)NULL);
        _exit(127);
    }
    /* wait until the temporary exists, then interrupt */
    for (int i = 0; i < 1200 && !seen; i++) {
        DIR *d = opendir(dir);
        struct dirent *e;
        while (d && (e = readdir(d)) != NULL)
            if (strstr(e->d_name, ".tmp."))
                seen = 1;
        if (d)
            closedir(d);
        if (!seen)
            usleep(50000);
    }
    cr_assert(seen, "no temporary appeared");
    kill(pid, SIGTERM);
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    cr_expect(WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM, "status %d", status);
    cr_expect_eq(tu_count_entries(dir), 0, "files left behind");
    free(out);
}

/* The man page's strategy list is what the registry says now (tools/mkman.sh splices
 * `vlplan strategies --format mdoc`): a strategy or parameter added without
 * regenerating the page fails here. */
Test(cli_plan, man_page_lists_the_registry)
{
    char *man = tu_read_file("man/vlplan.1", NULL);
    const char *args[] = {"strategies", "--format", "mdoc", NULL};
    tu_result r = run_ok(NULL, args);

    cr_assert_not_null(man);
    cr_assert(strstr(r.out, ".It Cm pack\n") && strstr(r.out, ".It Cm pack.algo Ar enum"),
              "%s", r.out);
    cr_assert(strstr(man, r.out) != NULL, "man/vlplan.1 is stale: run make man/vlplan.1");
    tu_result_free(&r);
    free(man);
}

/* Truncation that cuts every loss token of an iteration's samples leaves it a normaliser
 * of 0: plan says so (a trainer dividing by it would spread NaN), and -q keeps quiet. */
Test(cli_plan, iterations_without_loss_tokens_are_said)
{
    char *man = tu_path(dir, "loss.jsonl"), *o = tu_path(dir, "loss_plan.jsonl");
    cr_assert_eq(tu_write_file(man, "{\"id\":0,\"length\":9000,\"loss_tokens\":100}\n"), 0);
    const char *args[] = {"plan", "-s", "pack", "--set", "training.oversize=truncate", "--set",
                          "training.max_seq_len=8192", "-o", o, man, NULL};
    tu_result r;
    cr_assert_eq(tu_run(&r, NULL, args), 0);
    cr_expect_eq(r.status, 0, "%s", r.err);
    cr_expect(strstr(r.err, "warning: 1 iteration has tokens but no loss token (first: "
                            "iteration 0;") != NULL, "%s", r.err);
    tu_result_free(&r);
    const char *quiet[] = {"plan", "-q", "-s", "pack", "--set", "training.oversize=truncate",
                           "--set", "training.max_seq_len=8192", "-f", "-o", o, man, NULL};
    cr_assert_eq(tu_run(&r, NULL, quiet), 0);
    cr_expect(strstr(r.err, "no loss token") == NULL, "%s", r.err);
    cr_expect(strstr(r.err, "truncated 1 samples") != NULL, "%s", r.err);
    tu_result_free(&r);
    free(man);
    free(o);
}

/* Hydraulis never checkpoints: at 8K on Llama-3.1-8B its homogeneous tp 1 x pp 1 layout
 * holds ~4.8K tokens, so plan warns that longer samples take deeper pipelines. */
Test(cli_plan, hydraulis_warns_when_its_homogeneous_layout_is_short)
{
    char *o = tu_path(dir, "hy.jsonl");
    const char *args[] = {"plan", "-s", "hydraulis", "--set", "training.oversize=drop",
                          "-o", o, "testdata/demo.jsonl", NULL};
    tu_result r;

    cr_assert_eq(tu_run(&r, NULL, args), 0);
    cr_expect_eq(r.status, 0, "%s", r.err);
    cr_expect(strstr(r.err, "warning: hydraulis: the homogeneous layout tp 1 x pp 1 holds at "
                            "most") != NULL, "%s", r.err);
    tu_result_free(&r);
    free(o);
}

/* SlimPack's equal-work packs cut samples, whose slices stay in memory: at 8K on
 * Llama-3.1-8B its plans checkpoint where whole 8K packs need none, and plan says so; at
 * 32K whole packs need checkpointing too, and it is quiet. */
Test(cli_plan, slimpack_warns_when_it_checkpoints_where_whole_packs_need_none)
{
    char *o = tu_path(dir, "sl.jsonl");
    const char *args[] = {"plan", "-s", "slimpack", "--set", "training.oversize=drop",
                          "--set", "cluster.gpus=8", "--set", "training.max_seq_len=8192",
                          "-o", o, "testdata/demo.jsonl", NULL};
    tu_result r;

    cr_assert_eq(tu_run(&r, NULL, args), 0);
    cr_expect_eq(r.status, 0, "%s", r.err);
    cr_expect(strstr(r.err, "warning: slimpack: ") != NULL, "%s", r.err);
    cr_expect(strstr(r.err, "need none") != NULL, "%s", r.err);
    tu_result_free(&r);
    args[8] = "training.max_seq_len=32768";
    cr_assert_eq(tu_run(&r, NULL, args), 0);
    cr_expect_eq(r.status, 0, "%s", r.err);
    cr_expect(strstr(r.err, "warning: slimpack") == NULL, "%s", r.err);
    tu_result_free(&r);
    free(o);
}

/* Skrull's GDS adds a micro-batch wherever one overflows; where that leaves them under
 * half the bucket, -v says why pack may be faster (man page, skrull, "Short contexts").
 * Samples of 3,000 tokens fill two to a 8,674-token bucket: no such line. */
Test(cli_plan, skrull_says_when_its_micro_batches_run_short)
{
    char *m = tu_path(dir, "ac.txt"), *even = tu_path(dir, "even.txt"),
         *o = tu_path(dir, "sk.jsonl");
    const char *gen[] = {"gen", "--dist", "azure-code", "-n", "2000", "--seed", "1", "-o", m,
                         NULL};
    const char *plan[] = {"plan", "-v", "-s", "skrull", "--set", "cluster.gpus=8",
                          "--set", "training.max_seq_len=8192",
                          "--set", "training.oversize=drop", "-o", o, m, NULL};
    const char *say = "the paper's GDS deals strided";
    FILE *f = fopen(even, "w");
    tu_result r = run_ok(NULL, gen);

    tu_result_free(&r);
    r = run_ok(NULL, plan);
    cr_assert(strstr(r.err, say) != NULL, "%s", r.err);
    tu_result_free(&r);
    cr_assert_not_null(f);
    for (int i = 0; i < 512; i++)
        fprintf(f, "3000\n");
    cr_assert_eq(fclose(f), 0);
    plan[12] = even;
    r = run_ok(NULL, plan);
    cr_assert(strstr(r.err, "skrull: bucket_size=") != NULL, "%s", r.err);
    cr_assert(strstr(r.err, say) == NULL, "%s", r.err);
    tu_result_free(&r);
    free(m);
    free(even);
    free(o);
}
