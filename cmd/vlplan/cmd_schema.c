/* cmd/vlplan/cmd_schema.c -- `vlplan schema --format json`: the plan file's schema as the
 * writer and the C readers hold it (lib/plan/planio_fields.c), for other readers to check
 * against; python/vlplan/plan_schema.json is this output. */
#include <stdio.h>
#include <stdlib.h>

#include "cli.h"
#include "vlplan.h"
#include "report.h"

static const char *const CMD = "schema";
static const char *const USAGE = "[--format json]";

static const cli_opt options[] = {
    {"format", OPT_FORMAT, "FMT", "json (the default and only format)"},
    {"help", 'h', NULL, "show this help"},
    {NULL, 0, NULL, NULL},
};

static int on_option(int key, const char *arg, void *ud)
{
    if (key == OPT_FORMAT)
        return report_parse_format(CMD, arg, 1u << FMT_JSON, ud);
    return EX_USAGE_;
}

int cmd_schema(int argc, char **argv)
{
    report_format fmt = FMT_JSON;
    int first = 0, rc;
    char *text = NULL;
    vl_err err;

    rc = cli_parse(argc, argv, CMD, USAGE, options, on_option, &fmt, &first);
    if (rc)
        return rc < 0 ? 0 : rc;
    if (first != argc) {
        cli_error(CMD, "unexpected argument '%s'", argv[first]);
        return EX_USAGE_;
    }
    if (vl_plan_schema_json(&text, &err) != VL_OK)
        return cli_fail(CMD, &err);
    puts(text);
    free(text);
    return 0;
}
