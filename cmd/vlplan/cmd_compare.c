/* cmd/vlplan/cmd_compare.c -- `vlplan compare -s S1,S2,...`: plan one manifest with
 * several strategies under one config and print every figure side by side, with the
 * speedup against the first strategy, planning time and peak planner memory.
 * --check turns conditions into an exit status for CI. */
#include <errno.h>
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
    "-s S1,S2,... [-c CONFIG] [--set KEY=VALUE]... [--format table|json|csv|md] "
    "[--svg FILE] [--check EXPR]... MANIFEST...";

#define MAX_STRATEGIES 16
#define MAX_CHECKS 32

static const cli_opt options[] = {
    {"strategies", 's', "S1,S2,...", "strategies to compare; the first is the baseline"},
    {"config", 'c', "FILE", "cluster/model YAML (default: built-in preset)"},
    {"set", OPT_SET, "KEY=VALUE", "override a config key (repeatable)"},
    {"seed", OPT_SEED, "N", "seed (overrides training.seed)"},
    {"format", OPT_FORMAT, "FMT", "table (default), json, csv or md"},
    {"svg", OPT_SVG, "FILE", "grouped bar chart of the figures"},
    {"check", OPT_CHECK, "EXPR", "condition such as 'hbp.abr<=0.01' (repeatable; exit 1)"},
    CLI_MANIFEST_OPTIONS,
    {"quiet", 'q', NULL, "no progress line"},
    {"help", 'h', NULL, "show this help"},
    {NULL, 0, NULL, NULL},
};

typedef struct compare_args {
    char *list;           /* -s, split in place */
    const char *names[MAX_STRATEGIES];
    int nnames;
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

static int split_strategies(compare_args *a)
{
    size_t n = strlen(a->list);
    if (n == 0 || a->list[0] == ',' || a->list[n - 1] == ',' || strstr(a->list, ",,")) {
        cli_error(CMD, "invalid value '%s' for -s (expected S1,S2,... with no empty name)",
                  a->list);
        return EX_USAGE_;
    }
    for (char *tok = strtok(a->list, ","); tok; tok = strtok(NULL, ",")) {
        if (a->nnames == MAX_STRATEGIES) {
            cli_error(CMD, "too many strategies (at most %d)", MAX_STRATEGIES);
            return EX_USAGE_;
        }
        if (!vl_strategy_find(tok)) {
            cli_error(CMD, "unknown strategy '%s' (see 'vlplan strategies')", tok);
            return EX_USAGE_;
        }
        for (int i = 0; i < a->nnames; i++)
            if (strcmp(a->names[i], tok) == 0) {
                cli_error(CMD, "strategy '%s' given twice", tok);
                return EX_USAGE_;
            }
        a->names[a->nnames++] = tok;
    }
    if (a->nnames == 0) {
        cli_error(CMD, "missing -s S1,S2,... (see 'vlplan strategies')");
        return EX_USAGE_;
    }
    return 0;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Child side: plan, evaluate, send the result.  Runs in its own process so that its
 * peak memory is its own. */
static int child_plan(const char *name, vl_manifest *m, const vl_config *cfg, int fd)
{
    const vl_strategy *s = vl_strategy_find(name);
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

static int plan_one(const char *name, vl_manifest *m, const vl_config *cfg, eval_result *r)
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
        rc = child_plan(name, m, cfg, fds[1]);
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
        int ok = check_expr(a->checks[i], res, n, why, sizeof why);
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

    for (int i = 0; i < a->nnames; i++) {
        memset(&res[i], 0, sizeof res[i]);
        snprintf(res[i].strategy, sizeof res[i].strategy, "%s", a->names[i]);
        res[i].has_sim = res[i].has_timing = true;
    }
    for (int i = 0; i < a->nchecks; i++)
        if (check_expr(a->checks[i], res, (size_t)a->nnames, why, sizeof why) < 0) {
            cli_error(CMD, "--check '%s': %s", a->checks[i], why);
            return EX_USAGE_;
        }
    return 0;
}

static int compare(const compare_args *a, vl_manifest *m, const vl_config *cfg)
{
    eval_result res[MAX_STRATEGIES];
    int rc = 0;

    for (int i = 0; i < a->nnames && rc == 0; i++) {
        cli_progress(&a->log, false, "compare: [%d/%d] planning %s...", i + 1, a->nnames,
                     a->names[i]);
        rc = plan_one(a->names[i], m, cfg, &res[i]);
    }
    cli_progress(&a->log, true, " ");
    if (rc)
        return rc;
    for (int i = 0; i < a->nnames; i++)
        res[i].speedup = res[i].sim.epoch_time_s > 0
                             ? res[0].sim.epoch_time_s / res[i].sim.epoch_time_s : 0;
    if ((rc = compare_print(stdout, CMD, a->fmt, res, (size_t)a->nnames)) != 0)
        return rc;
    if (a->svg && (rc = compare_svg(CMD, a->svg, res, (size_t)a->nnames)) != 0)
        return rc;
    return run_checks(a, res, (size_t)a->nnames);
}

int cmd_compare(int argc, char **argv)
{
    compare_args a;
    vl_config cfg;
    vl_manifest *m = NULL;
    int first = 0, rc;

    memset(&a, 0, sizeof a);
    cli_log_init(&a.log);
    rc = cli_parse(argc, argv, CMD, USAGE, options, on_option, &a, &first);
    if (rc)
        return rc < 0 ? 0 : rc;
    if (!a.list) {
        cli_error(CMD, "missing -s S1,S2,... (see 'vlplan strategies')");
        return EX_USAGE_;
    }
    if ((rc = split_strategies(&a)) != 0 || (rc = precheck(&a)) != 0)
        return rc;
    if (a.svg && cli_is_stdout(a.svg)) {
        cli_error(CMD, "--svg needs a file: standard output has the table");
        return EX_USAGE_;
    }
    if (cli_check_not_input(CMD, "--svg", a.svg, a.cfg.paths, a.cfg.npaths) ||
        cli_check_not_input(CMD, "--svg", a.svg, (const char *const *)argv + first,
                            argc - first))
        return EX_USAGE_;
    if ((rc = cli_config_load(CMD, &a.cfg, &cfg)) != 0)
        return rc;
    if ((rc = cli_manifest_load(CMD, &a.man, argv + first, argc - first, &m)) == 0)
        rc = compare(&a, m, &cfg);
    vl_manifest_free(m);
    vl_config_free(&cfg);
    return rc;
}
