/* cmd/vlplan/cmd_verify.c -- `vlplan verify PLAN MANIFEST...`: prove a plan against
 * its manifest.  Exit 0 when every invariant holds, 1 when one is violated (like cmp
 * and diff), a sysexits code when the inputs cannot be read. */
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "cost.h"
#include "evaluate.h"
#include "planio.h"
#include "verify.h"

static const char *const CMD = "verify";
static const char *const USAGE = "[-q] [-c CONFIG] [--set KEY=VALUE]... PLAN MANIFEST...";

static const cli_opt options[] = {
    {"config", 'c', "FILE", "config for the memory and cluster checks (default: the plan's "
                            "own)"},
    {"set", OPT_SET, "KEY=VALUE", "override a config key (repeatable)"},
    CLI_MANIFEST_OPTIONS,
    {"allow-empty", OPT_ALLOW_EMPTY, NULL, "accept a manifest with no samples"},
    {"quiet", 'q', NULL, "print nothing; the exit status tells"},
    {"help", 'h', NULL, "show this help"},
    {NULL, 0, NULL, NULL},
};

typedef struct verify_args {
    cli_manifest_args man;
    cli_config_args cfg;
    cli_log log;
} verify_args;

static int on_option(int key, const char *arg, void *ud)
{
    verify_args *a = ud;
    int rc = cli_manifest_option(CMD, &a->man, key, arg);

    if (rc == 1 && key != OPT_SEED)
        rc = cli_config_option(CMD, &a->cfg, key, arg);
    if (rc != 1)
        return rc;
    switch (key) {
    case 'q': a->log.quiet++; return 0;
    case OPT_ALLOW_EMPTY: a->man.allow_empty = true; return 0;
    }
    return EX_USAGE_;
}

/* The plan header carries the effective config it was made with (JSON is YAML), so
 * the memory check uses exactly what the planner assumed; -c and --set replace or
 * amend it (a plan from another tool may have none).  *have: false when there is no
 * config at all: the memory and cluster checks are then skipped, with a warning.
 * Returns 0 or the exit code of a bad -c / --set. */
static int cost_for(const verify_args *a, const vl_plan *p, vl_config *cfg, vl_cost *cost,
                    bool *have)
{
    vl_err err = {0};
    int rc;

    *have = false;
    if (!p->config_json && a->cfg.npaths == 0 && a->cfg.nsets == 0) {
        if (!a->log.quiet)
            fprintf(stderr, "vlplan verify: warning: the plan header has no config and no -c "
                            "was given; modelled memory and cluster limits not checked\n");
        return 0;
    }
    if ((rc = cli_config_load_over(CMD, &a->cfg, p->config_json, "plan header config", cfg)))
        return rc;
    if (vl_cost_init(cost, cfg, &err) != VL_OK) {
        vl_config_free(cfg);
        return cli_fail(CMD, &err);
    }
    *have = true;
    return 0;
}

static int report(const verify_args *a, const char *path, const vl_plan *p,
                  const vl_verify_report *rep, vl_status st)
{
    if (st == VL_OK) {
        if (!a->log.quiet)
            printf("%s: ok: %zu iterations, %zu epochs, every sample accounted for\n", path,
                   p->niters, (size_t)p->epochs);
        return 0;
    }
    if (!a->log.quiet) {
        for (size_t i = 0; i < rep->nmsgs; i++)
            printf("%s: %s\n", path, rep->msgs[i]);
        if (rep->violations > rep->nmsgs)
            printf("%s: ... and %zu more\n", path, rep->violations - rep->nmsgs);
        fflush(stdout); /* the list, then the count, also when both go to one pipe */
        fprintf(stderr, "vlplan verify: %s: %zu violation(s)\n", path, rep->violations);
    }
    return 1;
}

static int check(const verify_args *a, const char *plan_path, const vl_plan *p,
                 const vl_plan_file *f)
{
    vl_config cfg;
    vl_cost cost;
    vl_verify_report *rep = malloc(sizeof *rep);
    vl_err err = {0};
    bool have = false;
    vl_status st;
    int rc;

    if (!rep) {
        cli_error(CMD, "out of memory");
        return cli_exit_for(VL_ENOMEM);
    }
    if ((rc = cost_for(a, p, &cfg, &cost, &have)) == 0) {
        st = vl_plan_verify_read(p, f, have ? &cost : NULL, rep, &err);
        if (st == VL_OK || st == VL_EVERIFY)
            rc = report(a, plan_path, p, rep, st);
        else
            rc = cli_fail(CMD, &err);
    }
    if (have)
        vl_config_free(&cfg);
    free(rep);
    return rc;
}

static int run(const verify_args *a, char *plan_path, char **ins, int nin)
{
    vl_manifest *m = NULL;
    vl_plan p;
    vl_plan_file *f = malloc(sizeof *f);
    vl_err err = {0};
    int rc;

    if (!f) {
        cli_error(CMD, "out of memory");
        return cli_exit_for(VL_ENOMEM);
    }
    if ((rc = cli_manifest_load(CMD, &a->man, ins, nin, &m)) != 0)
        goto done;
    memset(&p, 0, sizeof p);
    if (vl_plan_read(&p, f, plan_path, m, &err) != VL_OK) {
        rc = eval_read_fail(CMD, f, &err);
        goto done;
    }
    rc = check(a, plan_path, &p, f);
    vl_plan_free(&p);
done:
    vl_manifest_free(m);
    free(f);
    return rc;
}

int cmd_verify(int argc, char **argv)
{
    verify_args a;
    int first = 0, rc;

    memset(&a, 0, sizeof a);
    cli_log_init(&a.log);
    rc = cli_parse(argc, argv, CMD, USAGE, options, on_option, &a, &first);
    if (rc)
        return rc < 0 ? 0 : rc;
    if (argc - first < 2) {
        cli_error(CMD, "expected a plan and at least one manifest");
        fprintf(stderr, "usage: vlplan %s %s\n", CMD, USAGE);
        return EX_USAGE_;
    }
    if (strcmp(argv[first], "-") == 0)
        for (int i = first + 1; i < argc; i++)
            if (strcmp(argv[i], "-") == 0) {
                cli_error(CMD, "the plan and a manifest cannot both be standard input");
                return EX_USAGE_;
            }
    return run(&a, argv[first], argv + first + 1, argc - first - 1);
}
