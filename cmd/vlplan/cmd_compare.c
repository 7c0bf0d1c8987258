/* cmd/vlplan/cmd_compare.c -- `vlplan compare -s S1,S2,... [--row LABEL=S:K=V,...]`:
 * plan one manifest with several rows -- a strategy, its own settings over the shared
 * config, a label -- and print every figure side by side, with whether each plan fits
 * device memory, the speedup against the first row (only between plans that fit),
 * planning time and peak planner memory.  --check turns conditions into an exit status
 * for CI; a condition on a plan that does not fit fails unless --allow-oom. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check_expr.h"
#include "cli.h"
#include "compare_out.h"
#include "evaluate.h"
#include "run.h"

static const char *const CMD = "compare";
static const char *const USAGE =
    "-s S1,S2,... | --row [LABEL=]STRATEGY[:KEY=VALUE,...]... [-c CONFIG] [--set KEY=VALUE]... "
    "[--format table|json|csv|md] [--svg FILE] [--check EXPR]... [--allow-oom] MANIFEST...";

#define MAX_STRATEGIES 16
#define MAX_CHECKS 32

static const cli_opt options[] = {
    {"strategies", 's', "S1,S2,...", "strategies to compare, one row each; the first row is "
                                     "the baseline"},
    {"row", OPT_ROW, "SPEC", "a row: [LABEL=]STRATEGY[:KEY=VALUE,...], its own settings "
                             "over the config (repeatable, after -s's rows)"},
    {"config", 'c', "FILE", "cluster/model YAML (default: built-in preset)"},
    {"set", OPT_SET, "KEY=VALUE", "override a config key (repeatable)"},
    {"seed", OPT_SEED, "N", "seed (overrides training.seed)"},
    {"format", OPT_FORMAT, "FMT", "table (default), json, csv or md"},
    {"svg", OPT_SVG, "FILE", "grouped bar chart of the figures"},
    {"check", OPT_CHECK, "EXPR", "condition such as 'hbp.abr<=0.01' on LABEL.KEY (repeatable; "
                                 "exit 1)"},
    {"allow-oom", OPT_ALLOW_OOM, NULL, "let --check judge plans that exceed device memory"},
    CLI_MANIFEST_OPTIONS,
    {"quiet", 'q', NULL, "no progress line"},
    {"help", 'h', NULL, "show this help"},
    {NULL, 0, NULL, NULL},
};

/* One row: a strategy under the shared config plus its own --set values. */
typedef struct row {
    const char *label, *strategy;
    const char *sets[16];
    int nsets;
} row;

typedef struct compare_args {
    char *list;           /* -s, split in place */
    char *specs[MAX_STRATEGIES];   /* --row, parsed in place */
    int nspecs;
    row rows[MAX_STRATEGIES];
    int nrows;
    bool allow_oom;
    const char *checks[MAX_CHECKS];
    int nchecks;
    const char *svg;
    report_format fmt;
    cli_config_args cfg;
    cli_manifest_args man;
    cli_log log;
} compare_args;

static int on_option(int key, const char *arg, void *ud)
{
    compare_args *a = ud;
    int rc = cli_manifest_option(CMD, &a->man, key, arg);

    if (rc == 1)
        rc = cli_config_option(CMD, &a->cfg, key, arg);
    if (rc != 1)
        return rc;
    switch (key) {
    case 's': a->list = (char *)arg; return 0;
    case OPT_ROW:
        if (a->nspecs == MAX_STRATEGIES) {
            cli_error(CMD, "too many --row options (at most %d)", MAX_STRATEGIES);
            return EX_USAGE_;
        }
        a->specs[a->nspecs++] = (char *)arg;
        return 0;
    case OPT_ALLOW_OOM: a->allow_oom = true; return 0;
    case OPT_FORMAT:
        return report_parse_format(CMD, arg, 0xfu, &a->fmt);
    case OPT_SVG: a->svg = arg; return 0;
    case OPT_CHECK:
        if (a->nchecks == MAX_CHECKS) {
            cli_error(CMD, "too many --check options (at most %d)", MAX_CHECKS);
            return EX_USAGE_;
        }
        a->checks[a->nchecks++] = arg;
        return 0;
    case 'q': a->log.quiet++; return 0;
    }
    return EX_USAGE_;
}

static bool good_label(const char *s)
{
    if (!((*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z') || *s == '_'))
        return false;
    return strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-") ==
           strlen(s) && strlen(s) < 48;
}

/* A row's strategy exists and its label is new and usable in --check. */
static int add_row(compare_args *a, row *r)
{
    if (a->nrows == MAX_STRATEGIES) {
        cli_error(CMD, "too many rows (at most %d)", MAX_STRATEGIES);
        return EX_USAGE_;
    }
    if (!vl_strategy_find(r->strategy)) {
        cli_error(CMD, "unknown strategy '%s' (see 'vlplan strategies')", r->strategy);
        return EX_USAGE_;
    }
    if (!good_label(r->label)) {
        cli_error(CMD, "invalid row label '%s' (a letter or '_', then letters, digits, '_' "
                       "or '-'; it names the row in --check)", r->label);
        return EX_USAGE_;
    }
    for (int i = 0; i < a->nrows; i++)
        if (strcmp(a->rows[i].label, r->label) == 0) {
            cli_error(CMD, "two rows named '%s': give one a label, e.g. --row "
                           "'%s2=%s:KEY=VALUE'", r->label, r->label, r->strategy);
            return EX_USAGE_;
        }
    a->rows[a->nrows++] = *r;
    return 0;
}

static int split_strategies(compare_args *a)
{
    size_t n = strlen(a->list);
    int rc;

    if (n == 0 || a->list[0] == ',' || a->list[n - 1] == ',' || strstr(a->list, ",,")) {
        cli_error(CMD, "invalid value '%s' for -s (expected S1,S2,... with no empty name)",
                  a->list);
        return EX_USAGE_;
    }
    for (char *tok = strtok(a->list, ","); tok; tok = strtok(NULL, ",")) {
        row r = {.label = tok, .strategy = tok};
        if ((rc = add_row(a, &r)) != 0)
            return rc;
    }
    return 0;
}

/* [LABEL=]STRATEGY[:KEY=VALUE,...]: a label is what comes before an '=' that precedes
 * any ':'.  A piece without '=' continues the value before it, so list values such as
 * hbp.groups=16K:1,128K:8 need no quoting. */
static int parse_spec(compare_args *a, char *spec)
{
    char *colon = strchr(spec, ':'), *eq = strchr(spec, '=');
    row r = {0};

    if (colon)
        *colon = '\0';
    if (eq && (!colon || eq < colon)) {
        *eq = '\0';
        r.label = spec;
        r.strategy = eq + 1;
    } else {
        r.label = r.strategy = spec;
    }
    for (char *kv = colon ? colon + 1 : NULL, *next; kv; kv = next) {
        next = strchr(kv, ',');
        if (next)
            *next++ = '\0';
        if (*kv == '\0')
            continue;
        if (!strchr(kv, '=') && r.nsets > 0) {
            kv[-1] = ',';   /* a list value: "hbp.groups=16K:1,128K:8" */
            continue;
        }
        if (!strchr(kv, '=') || r.nsets == 16) {
            cli_error(CMD, "--row '%s': '%s' is not KEY=VALUE (at most 16 per row)", r.label,
                      kv);
            return EX_USAGE_;
        }
        r.sets[r.nsets++] = kv;
    }
    if (colon && r.nsets == 0) {
        cli_error(CMD, "--row '%s': nothing after ':' (expected KEY=VALUE,...)", r.label);
        return EX_USAGE_;
    }
    return add_row(a, &r);
}

static int make_rows(compare_args *a)
{
    int rc;

    if (a->list && (rc = split_strategies(a)) != 0)
        return rc;
    for (int i = 0; i < a->nspecs; i++)
        if ((rc = parse_spec(a, a->specs[i])) != 0)
            return rc;
    if (a->nrows == 0) {
        cli_error(CMD, "nothing to compare: give -s S1,S2,... or --row SPEC (see 'vlplan "
                       "strategies')");
        return EX_USAGE_;
    }
    return 0;
}

/* The shared config with the row's own settings after every --set. */
static int row_config(const compare_args *a, const row *r, vl_config *cfg)
{
    cli_config_args c = a->cfg;

    for (int i = 0; i < r->nsets; i++)
        if (cli_config_add_set(CMD, &c, r->sets[i]) != 0)
            return EX_USAGE_;
    return cli_config_load(CMD, &c, cfg);
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Child side: plan, evaluate, send the result.  Runs in its own process so that its
 * peak memory is its own. */
static int child_plan(const row *rw, vl_manifest *m, const vl_config *cfg, int fd)
{
    const vl_strategy *s = vl_strategy_find(rw->strategy);
    vl_run_opts ro = {.seed = cfg->training.seed, .allow_oom = true};
    vl_sim_opts so = VL_SIM_OPTS_INIT;
    vl_err err = {0};
    vl_plan p;
    vl_cost cost;
    eval_result r;
    double t0 = now_s();
    int rc;

    if (vl_run_plan(&p, s, m, cfg, &ro, NULL, &err) != VL_OK)
        return cli_fail(CMD, &err);
    double secs = now_s() - t0;
    if (vl_cost_init(&cost, cfg, &err) != VL_OK)
        rc = cli_fail(CMD, &err);
    else
        rc = eval_plan(CMD, &p, &cost, &so, &r);
    vl_plan_free(&p);
    if (rc)
        return rc;
    snprintf(r.label, sizeof r.label, "%s", rw->label);
    r.has_timing = true;
    r.plan_time_s = secs;
    /* a forked child's high-water mark starts at what it shares with the parent (the
     * manifest), so this is the memory planning with this strategy needs */
    r.peak_rss_mib = cli_peak_rss_mib();
    if (write(fd, &r, sizeof r) != (ssize_t)sizeof r)
        return EX_IOERR_;
    return 0;
}

static int collect(pid_t pid, int fd, eval_result *r)
{
    int status;
    size_t got = 0;

    while (got < sizeof *r) {
        ssize_t n = read(fd, (char *)r + got, sizeof *r - got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        got += (size_t)n;
    }
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR)
            return EX_OSERR_;
    if (!WIFEXITED(status))
        return EX_SOFTWARE_;
    if (WEXITSTATUS(status) != 0)
        return WEXITSTATUS(status);
    return got == sizeof *r ? 0 : EX_SOFTWARE_;
}

static int plan_one(const row *rw, vl_manifest *m, const vl_config *cfg, eval_result *r)
{
    int fds[2];
    pid_t pid;
    int rc;

    if (pipe(fds) != 0) {
        cli_error(CMD, "pipe: %s", strerror(errno));
        return EX_OSERR_;
    }
    fflush(NULL);
    if ((pid = fork()) < 0) {
        cli_error(CMD, "fork: %s", strerror(errno));
        close(fds[0]);
        close(fds[1]);
        return EX_OSERR_;
    }
    if (pid == 0) {
        close(fds[0]);
        rc = child_plan(rw, m, cfg, fds[1]);
        close(fds[1]);
        fflush(NULL);
        _exit(rc);
    }
    close(fds[1]);
    rc = collect(pid, fds[0], r);
    close(fds[0]);
    return rc;
}

static int run_checks(const compare_args *a, const eval_result *res, size_t n)
{
    char why[256];
    int failed = 0;

    for (int i = 0; i < a->nchecks; i++) {
        int ok = check_expr(a->checks[i], res, n, a->allow_oom, why, sizeof why);
        if (ok < 0) {
            cli_error(CMD, "--check '%s': %s", a->checks[i], why);
            return EX_USAGE_;
        }
        if (ok == 0) {
            fprintf(stderr, "vlplan compare: check failed: %s (%s)\n", a->checks[i], why);
            failed = 1;
        }
    }
    return failed;
}

/* Malformed conditions, unknown strategies and unknown keys are usage errors found
 * before any planning: every check is tried once on placeholder results. */
static int precheck(const compare_args *a)
{
    static eval_result res[MAX_STRATEGIES];
    char why[256];

    for (int i = 0; i < a->nrows; i++) {
        memset(&res[i], 0, sizeof res[i]);
        snprintf(res[i].strategy, sizeof res[i].strategy, "%s", a->rows[i].strategy);
        snprintf(res[i].label, sizeof res[i].label, "%s", a->rows[i].label);
        res[i].has_sim = res[i].has_timing = true;
    }
    for (int i = 0; i < a->nchecks; i++)
        if (check_expr(a->checks[i], res, (size_t)a->nrows, true, why, sizeof why) < 0) {
            cli_error(CMD, "--check '%s': %s", a->checks[i], why);
            return EX_USAGE_;
        }
    return 0;
}

/* Speedups only between plans that fit; every plan that does not is said. */
static void speedups(const compare_args *a, eval_result *res, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        bool both = eval_fits(&res[0]) && eval_fits(&res[i]);
        res[i].speedup = both && res[i].sim.epoch_time_s > 0
                             ? res[0].sim.epoch_time_s / res[i].sim.epoch_time_s : NAN;
        if (!eval_fits(&res[i]) && !a->log.quiet)
            fprintf(stderr, "vlplan compare: warning: %s does not fit device memory: %zu of "
                            "%zu iterations over, worst %.2f GiB; its speedup is n/a%s\n",
                    res[i].label, res[i].sim.oom_iters, res[i].sim.iterations,
                    res[i].sim.peak_mem_gib.max,
                    i == 0 ? ", and so is every row's against it" : "");
    }
}

static int compare(const compare_args *a, vl_manifest *m)
{
    eval_result res[MAX_STRATEGIES];
    size_t n = (size_t)a->nrows;
    int rc = 0;

    for (int i = 0; i < a->nrows && rc == 0; i++) {
        vl_config cfg;
        cli_progress(&a->log, false, "compare: [%d/%d] planning %s...", i + 1, a->nrows,
                     a->rows[i].label);
        if ((rc = row_config(a, &a->rows[i], &cfg)) != 0)
            break;
        rc = plan_one(&a->rows[i], m, &cfg, &res[i]);
        vl_config_free(&cfg);
    }
    cli_progress(&a->log, true, " ");
    if (rc)
        return rc;
    speedups(a, res, n);
    if ((rc = compare_print(stdout, CMD, a->fmt, res, n)) != 0)
        return rc;
    if (a->svg && (rc = compare_svg(CMD, a->svg, res, n)) != 0)
        return rc;
    return run_checks(a, res, n);
}

/* Every row's config loads before anything is planned: a bad KEY=VALUE is found at once. */
static int check_configs(const compare_args *a)
{
    for (int i = 0; i < a->nrows; i++) {
        vl_config cfg;
        int rc = row_config(a, &a->rows[i], &cfg);
        if (rc)
            return rc;
        vl_config_free(&cfg);
    }
    return 0;
}

int cmd_compare(int argc, char **argv)
{
    compare_args a;
    vl_manifest *m = NULL;
    int first = 0, rc;

    memset(&a, 0, sizeof a);
    cli_log_init(&a.log);
    rc = cli_parse(argc, argv, CMD, USAGE, options, on_option, &a, &first);
    if (rc)
        return rc < 0 ? 0 : rc;
    if ((rc = make_rows(&a)) != 0 || (rc = precheck(&a)) != 0)
        return rc;
    if (a.svg && cli_is_stdout(a.svg)) {
        cli_error(CMD, "--svg needs a file: standard output has the table");
        return EX_USAGE_;
    }
    if (cli_check_not_input(CMD, "--svg", a.svg, a.cfg.paths, a.cfg.npaths) ||
        cli_check_not_input(CMD, "--svg", a.svg, (const char *const *)argv + first,
                            argc - first))
        return EX_USAGE_;
    if ((rc = check_configs(&a)) != 0)
        return rc;
    if ((rc = cli_manifest_load(CMD, &a.man, argv + first, argc - first, &m)) == 0)
        rc = compare(&a, m);
    vl_manifest_free(m);
    return rc;
}
