/* cmd/vlplan/cmd_strategies.c -- `vlplan strategies`: the registry, with -v the
 * parameters of each (key, type, default, help: its own section's, or the built-in keys
 * it reads) and the plan capabilities it may use; `--format mdoc` prints the same as the
 * man page's generated strategy list (tools/mkman.sh splices it in, so the page can
 * never forget a strategy or a parameter). */
#include <string.h>

#include "cli.h"
#include "report.h"
#include "vlplan.h"

static const char *const CMD = "strategies";
static const char *const USAGE = "[-v] [--format table|csv|mdoc]";

static const cli_opt options[] = {
    {"verbose", 'v', NULL, "also list each strategy's parameters and capabilities"},
    {"format", OPT_FORMAT, "FMT",
     "table (default), csv (name,section,summary) or mdoc "
     "(the man page's list)"},
    {"help", 'h', NULL, "show this help"},
    {NULL, 0, NULL, NULL},
};

typedef struct strategies_args {
    int verbose;
    bool mdoc;
    report_format fmt;
} strategies_args;

static int on_option(int key, const char *arg, void *ud)
{
    strategies_args *a = ud;

    if (key == 'v') {
        a->verbose++;
        return 0;
    }
    if (key == OPT_FORMAT) {
        int rc = report_parse_format(
            CMD, arg, 1u << FMT_TABLE | 1u << FMT_CSV | 1u << FMT_MDOC, &a->fmt);
        a->mdoc = rc == 0 && a->fmt == FMT_MDOC;
        return rc;
    }
    return EX_USAGE_;
}

static const char *type_name(vl_ptype t)
{
    switch (t) {
    case VL_P_INT: return "int";
    case VL_P_UINT: return "uint";
    case VL_P_DOUBLE: return "number";
    case VL_P_BOOL: return "bool";
    case VL_P_ENUM: return "enum";
    case VL_P_STRING: return "string";
    case VL_P_AUTO_UINT: return "uint|auto";
    case VL_P_TEXT: return "string";
    case VL_P_TABLE: return "table";
    }
    return "?";
}

/* One parameter in a common shape, from a strategy's table or the config's key table. */
typedef struct param_line {
    char key[96];
    const char *type, *def, *help;
    const char *const *names; /* an enumeration's names, or NULL */
} param_line;

/* Parameter i of s: its own (section.key), or the i-th built-in key under s->builtin.
 * False past the last. */
static bool param_at(const vl_strategy *s, size_t i, param_line *pl)
{
    size_t prefix = s->builtin ? strlen(s->builtin) : 0;
    vl_key_info k;

    memset(pl, 0, sizeof *pl);
    if (s->params) {
        const vl_param *p = &s->params[i];
        for (size_t j = 0; j < i; j++)
            if (!s->params[j].key)
                return false;
        if (!p->key)
            return false;
        snprintf(pl->key, sizeof pl->key, "%s.%s", s->section, p->key);
        pl->type = type_name(p->type);
        pl->def = p->def;
        pl->help = p->help;
        pl->names = p->choices && p->type != VL_P_TABLE ? p->choices : NULL;
        return true;
    }
    for (size_t j = 0, n = 0; s->builtin && vl_config_key_at(j, &k); j++) {
        if (strncmp(k.path, s->builtin, prefix) != 0 || k.path[prefix] != '.')
            continue;
        if (n++ < i)
            continue;
        snprintf(pl->key, sizeof pl->key, "%s", k.path);
        pl->type = k.type;
        pl->def = k.def;
        pl->help = k.help;
        pl->names = k.choices;
        return true;
    }
    return false;
}

static void print_caps(const vl_strategy *s, const char *lead, const char *sep)
{
    bool any = false;

    for (unsigned i = 0; vl_cap_name(i); i++)
        if (s->caps >> i & 1) {
            printf("%s%s", any ? sep : lead,
                   (1u << i) == VL_CAP_WORLD_OPTIM ? "optimizer_shard=world" : vl_cap_name(i));
            any = true;
        }
    if (any)
        putchar('\n');
}

static void print_params(const vl_strategy *s)
{
    param_line pl;
    size_t i = 0;

    for (; param_at(s, i, &pl); i++) {
        printf("    %s (%s", pl.key, pl.type);
        for (int k = 0; pl.names && pl.names[k]; k++)
            printf("%s%s", k ? ", " : ": ", pl.names[k]);
        printf("%s default %s)\n        %s\n", pl.names ? ";" : ",", pl.def ? pl.def : "none",
               pl.help ? pl.help : "");
    }
    if (i == 0)
        printf("    (no parameters of its own)\n");
    print_caps(s, "    plan capabilities: ", ", ");
}

/* mdoc of one strategy: its summary, capabilities and parameters. */
static void mdoc_strategy(const vl_strategy *s)
{
    param_line pl;

    printf(".It Cm %s\n%s.\n", s->name, s->summary);
    if (s->caps) {
        printf("Plan capabilities:");
        print_caps(s, " ", ", ");
    }
    if (!param_at(s, 0, &pl)) {
        printf("No parameters of its own.\n");
        return;
    }
    printf(".Bl -tag -width Ds -compact\n");
    for (size_t i = 0; param_at(s, i, &pl); i++) {
        printf(".It Cm %s Ar %s\n", pl.key, pl.type);
        if (pl.names) {
            printf("One of");
            for (int k = 0; pl.names[k]; k++)
                printf("%s %s", k ? "," : "", pl.names[k]);
            printf(".\n");
        }
        printf("%s\nDefault: %s.\n", pl.help ? pl.help : "", pl.def ? pl.def : "none");
    }
    printf(".El\n");
}

int cmd_strategies(int argc, char **argv)
{
    strategies_args a = {0, false, FMT_TABLE};
    int first = 0, rc;

    rc = cli_parse(argc, argv, CMD, USAGE, options, on_option, &a, &first);
    if (rc)
        return rc < 0 ? 0 : rc;
    if (first != argc) {
        cli_error(CMD, "unexpected argument '%s'", argv[first]);
        return EX_USAGE_;
    }
    if (a.mdoc)
        printf(".\\\" generated by 'vlplan strategies --format mdoc' from the registry\n"
               ".Bl -tag -width Ds\n");
    if (a.fmt == FMT_CSV && !a.mdoc)
        puts("name,section,summary");
    for (size_t i = 0; i < vl_strategy_count(); i++) {
        const vl_strategy *s = vl_strategy_at(i);
        if (a.mdoc) {
            mdoc_strategy(s);
            continue;
        }
        if (a.fmt == FMT_CSV) {
            printf("%s,%s,\"%s\"\n", s->name, s->section ? s->section : "", s->summary);
            continue;
        }
        printf("%-10s %s\n", s->name, s->summary);
        if (a.verbose)
            print_params(s);
    }
    if (a.mdoc)
        printf(".El\n");
    return 0;
}
