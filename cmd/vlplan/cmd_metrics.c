/* cmd/vlplan/cmd_metrics.c -- `vlplan metrics PLAN`: balance metrics of a plan file,
 * computed from the plan alone, and its simulated step time under the config the plan
 * was made with (or -c / --set). */
#include <string.h>

#include "cli.h"
#include "evaluate.h"
#include "report.h"

static const char *const CMD = "metrics";
static const char *const USAGE =
    "[-c CONFIG] [--set KEY=VALUE]... [--format table|json|csv] [-j N] PLAN";

static const cli_opt options[] = {
    {"config", 'c', "FILE", "config for the simulated figures (default: the plan's own)"},
    {"set", OPT_SET, "KEY=VALUE", "override a config key (repeatable)"},
    {"format", OPT_FORMAT, "FMT", "table (default), json or csv"},
    CLI_JOBS_OPTION,
    {"help", 'h', NULL, "show this help"},
    {NULL, 0, NULL, NULL},
};

typedef struct metrics_args {
    cli_config_args cfg;
    report_format fmt;
    int jobs;
} metrics_args;

static int on_option(int key, const char *arg, void *ud)
{
    metrics_args *a = ud;
    int rc = cli_config_option(CMD, &a->cfg, key, arg);

    if (rc != 1)
        return rc;
    switch (key) {
    case 'j': return cli_parse_jobs(CMD, arg, &a->jobs);
    case OPT_FORMAT:
        return report_parse_format(CMD, arg, 1u << FMT_TABLE | 1u << FMT_JSON | 1u << FMT_CSV,
                                   &a->fmt);
    }
    return EX_USAGE_;
}

static int show(const metrics_args *a, const char *path)
{
    vl_sim_opts so = VL_SIM_OPTS_INIT;
    eval_file_opts o = {.cfg = &a->cfg, .so = &so, .threads = a->jobs};
    eval_result r;
    int rc = eval_plan_file(CMD, path, &o, &r);

    if (rc == 0 && a->fmt == FMT_JSON)
        rc = eval_print_json(stdout, CMD, &r);
    else if (rc == 0 && a->fmt == FMT_CSV)
        eval_print_csv(stdout, &r);
    else if (rc == 0)
        eval_print_table(stdout, &r);
    return rc;
}

int cmd_metrics(int argc, char **argv)
{
    metrics_args a;
    int first = 0, rc;

    memset(&a, 0, sizeof a);
    a.jobs = cli_default_jobs();
    rc = cli_parse(argc, argv, CMD, USAGE, options, on_option, &a, &first);
    if (rc)
        return rc < 0 ? 0 : rc;
    if ((rc = eval_one_plan_operand(CMD, USAGE, argc, first)) != 0)
        return rc;
    return show(&a, argv[first]);
}
