/* cmd/vlplan/cmd_compare.c -- `vlplan compare -s S1,S2,... [--row LABEL=S:K=V,...]`:
 * plan one manifest with several rows -- a strategy, its own settings over the shared
 * config, a label -- and print every figure side by side, with the work each row did
 * (tokens, optimizer steps, batch scope), whether each plan fits device memory, the
 * speedup against the baseline row (only between plans that fit and planned the same
 * tokens), planning time and peak planner memory.  A strategy that refuses is a row with
 * its reason.  --check turns conditions into an exit status for CI; a condition on a
 * plan that does not fit, or planned fewer tokens, fails unless allowed.  Every export
 * comes from the one run (compare_work.c marks the work, compare_out.c and
 * compare_html.c print it). */
#include <errno.h>
#include <stddef.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check_expr.h"
#include "cli.h"
#include "compare_out.h"
#include "compare_work.h"
#include "evaluate.h"
#include "vlplan.h"

static const char *const CMD = "compare";
static const char *const USAGE =
    "-s S1,S2,... | --row [LABEL=]STRATEGY[:KEY=VALUE,...]... [-c CONFIG] [--set "
    "KEY=VALUE]... "
    "[--seed N] [--baseline LABEL] [--same-tokens] [--format table|json|csv|md] "
    "[--export-json FILE] [--export-csv FILE] [--export-md FILE] [--svg FILE] [--html FILE] "
    "[--check EXPR]... [--allow-oom] [--allow-dropped] [-q] MANIFEST...";

enum {
    OPT_BASELINE = 600,
    OPT_SAME_TOKENS,
    OPT_ALLOW_DROPPED,
    OPT_EXPORT_JSON,
    OPT_EXPORT_CSV,
    OPT_EXPORT_MD,
    OPT_HTML
};

#define MAX_STRATEGIES 16
#define MAX_CHECKS 32

static const cli_opt options[] = {
    {"strategies", 's', "S1,S2,...",
     "strategies to compare, one row each; the first row is "
     "the baseline"},
    {"row", OPT_ROW, "SPEC",
     "a row: [LABEL=]STRATEGY[:KEY=VALUE,...], its own settings "
     "over the config (repeatable, after -s's rows)"},
    {"config", 'c', "FILE", "cluster/model YAML (default: built-in preset)"},
    {"set", OPT_SET, "KEY=VALUE", "override a config key (repeatable)"},
    {"seed", OPT_SEED, "N", "seed (overrides training.seed)"},
    {"baseline", OPT_BASELINE, "LABEL", "the row speedups are against (default: the first)"},
    {"same-tokens", OPT_SAME_TOKENS, NULL,
     "cut every row's samples at the smallest length "
     "limit any row has (training.oversize)"},
    {"format", OPT_FORMAT, "FMT", "table (default), json, csv or md, on standard output"},
    {"export-json", OPT_EXPORT_JSON, "FILE", "also the JSON into FILE"},
    {"export-csv", OPT_EXPORT_CSV, "FILE", "also the CSV into FILE"},
    {"export-md", OPT_EXPORT_MD, "FILE", "also the Markdown into FILE"},
    {"svg", OPT_SVG, "FILE", "also the chart of the figures (SVG) into FILE"},
    {"html", OPT_HTML, "FILE", "also a self-contained HTML report into FILE"},
    {"check", OPT_CHECK, "EXPR",
     "condition such as 'hbp.abr<=0.01' on LABEL.KEY (repeatable; "
     "exit 1)"},
    {"allow-oom", OPT_ALLOW_OOM, NULL, "let --check judge plans that exceed device memory"},
    {"allow-dropped", OPT_ALLOW_DROPPED, NULL,
     "let --check judge rows that planned fewer "
     "tokens than the most"},
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
    char *list;                  /* -s, split in place */
    char *specs[MAX_STRATEGIES]; /* --row, parsed in place */
    int nspecs;
    row rows[MAX_STRATEGIES];
    int nrows;
    compare_row_view rows_view[MAX_STRATEGIES];
    bool allow_oom, allow_dropped, same_tokens;
    const char *baseline;
    const char *checks[MAX_CHECKS];
    int nchecks;
    const char *svg, *html, *export_json, *export_csv, *export_md;
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
    case OPT_ALLOW_DROPPED: a->allow_dropped = true; return 0;
    case OPT_SAME_TOKENS: a->same_tokens = true; return 0;
    case OPT_BASELINE: a->baseline = arg; return 0;
    case OPT_EXPORT_JSON: a->export_json = arg; return 0;
    case OPT_EXPORT_CSV: a->export_csv = arg; return 0;
    case OPT_EXPORT_MD: a->export_md = arg; return 0;
    case OPT_HTML: a->html = arg; return 0;
    case OPT_FORMAT: return report_parse_format(CMD, arg, 0xfu, &a->fmt);
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
               strlen(s) &&
           strlen(s) < 48;
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
        cli_error(CMD,
                  "invalid row label '%s' (a letter or '_', then letters, digits, '_' "
                  "or '-'; it names the row in --check)",
                  r->label);
        return EX_USAGE_;
    }
    for (int i = 0; i < a->nrows; i++)
        if (strcmp(a->rows[i].label, r->label) == 0) {
            cli_error(CMD,
                      "two rows named '%s': give one a label, e.g. --row "
                      "'%s2=%s:KEY=VALUE'",
                      r->label, r->label, r->strategy);
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
            kv[-1] = ','; /* a list value: "hbp.groups=16K:1,128K:8" */
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

static int plan_one(const compare_args *a, const row *rw, vl_manifest *m, const vl_config *cfg,
                    eval_result *r, compare_detail *d)
{
    return compare_plan_row(rw->label, rw->strategy, m, cfg, a->html != NULL, r, d);
}

static int run_checks(const compare_args *a, const eval_result *res, size_t n)
{
    check_allow allow = {a->allow_oom, a->allow_dropped};
    char why[512];
    int failed = 0;

    for (int i = 0; i < a->nchecks; i++) {
        int ok = check_expr(a->checks[i], res, n, allow, why, sizeof why);
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
    check_allow allow = {true, true};
    char why[512];

    for (int i = 0; i < a->nrows; i++) {
        memset(&res[i], 0, sizeof res[i]);
        snprintf(res[i].ev.strategy, sizeof res[i].ev.strategy, "%s", a->rows[i].strategy);
        snprintf(res[i].label, sizeof res[i].label, "%s", a->rows[i].label);
        res[i].ev.has_sim = res[i].has_timing = true;
    }
    for (int i = 0; i < a->nchecks; i++)
        if (check_expr(a->checks[i], res, (size_t)a->nrows, allow, why, sizeof why) < 0) {
            cli_error(CMD, "--check '%s': %s", a->checks[i], why);
            return EX_USAGE_;
        }
    if (a->baseline) {
        for (int i = 0; i < a->nrows; i++)
            if (strcmp(a->rows[i].label, a->baseline) == 0)
                return 0;
        cli_error(CMD, "--baseline '%s' is not among the rows compared", a->baseline);
        return EX_USAGE_;
    }
    return 0;
}

/* Every output: the terminal's, then each export; all from the same rows. */
static int outputs(const compare_args *a, const compare_ctx *ctx, const eval_result *res,
                   size_t n)
{
    static const struct {
        size_t off;
        report_format fmt;
    } exports[] = {
        {offsetof(compare_args, export_json), FMT_JSON},
        {offsetof(compare_args, export_csv), FMT_CSV},
        {offsetof(compare_args, export_md), FMT_MD},
    };
    int rc = compare_print(stdout, CMD, a->fmt, ctx, res, n);

    fflush(stdout);
    for (size_t k = 0; rc == 0 && k < sizeof exports / sizeof exports[0]; k++) {
        const char *path = *(const char *const *)((const char *)a + exports[k].off);
        if (path)
            rc = compare_export(CMD, path, exports[k].fmt, ctx, res, n);
    }
    if (rc == 0 && a->svg)
        rc = compare_svg(CMD, a->svg, ctx, res, n);
    if (rc == 0 && a->html)
        rc = compare_html(CMD, a->html, ctx, res, n);
    return rc;
}

static int plan_rows(const compare_args *a, vl_manifest *m, eval_result *res,
                     compare_detail *det)
{
    int rc = 0;

    double t0 = cli_now_s();

    for (int i = 0; i < a->nrows && rc == 0; i++) {
        vl_config cfg;
        double spent = cli_now_s() - t0;
        if (i == 0)
            cli_progress(&a->log, false, "compare: [1/%d] planning %s...", a->nrows,
                         a->rows[i].label);
        else /* the rows so far tell how long the rest takes */
            cli_progress(&a->log, false,
                         "compare: [%d/%d] planning %s... (%.0f%% of the "
                         "rows, %.0f s so far, about %.0f s left)",
                         i + 1, a->nrows, a->rows[i].label, 100.0 * i / a->nrows, spent,
                         spent / i * (a->nrows - i));
        if ((rc = row_config(a, &a->rows[i], &cfg)) != 0)
            break;
        rc = plan_one(a, &a->rows[i], m, &cfg, &res[i], &det[i]);
        if (rc == 0)
            res[i].epoch_scope = compare_epoch_scope(a->rows[i].strategy, &cfg);
        vl_config_free(&cfg);
    }
    cli_progress(&a->log, true, " ");
    return rc;
}

static int compare(const compare_args *a, vl_manifest *m, compare_ctx *ctx)
{
    eval_result res[MAX_STRATEGIES];
    compare_detail det[MAX_STRATEGIES];
    size_t n = (size_t)a->nrows, refused = 0;
    int rc;

    memset(det, 0, sizeof det);
    ctx->details = det;
    rc = plan_rows(a, m, res, det);
    if (rc != 0) {
        compare_details_free(det, n);
        return rc;
    }
    compare_annotate(res, n, a->baseline, a->log.quiet);
    if ((rc = outputs(a, ctx, res, n)) != 0) {
        compare_details_free(det, n);
        return rc;
    }
    rc = run_checks(a, res, n);
    compare_details_free(det, n);
    ctx->details = NULL;
    for (size_t i = 0; i < n; i++)
        refused += res[i].refused;
    if (rc == 0 && refused == n) {
        cli_error(CMD, "every row was refused (see the reasons above)");
        return EX_DATAERR_;
    }
    return rc;
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

static int check_outputs(const compare_args *a, char **ins, int nin)
{
    const char *outs[] = {a->svg, a->html, a->export_json, a->export_csv, a->export_md};
    const char *names[] = {"--svg", "--html", "--export-json", "--export-csv", "--export-md"};

    for (size_t k = 0; k < sizeof outs / sizeof outs[0]; k++) {
        if (!outs[k])
            continue;
        if (cli_is_stdout(outs[k])) {
            cli_error(CMD, "%s needs a file: standard output has the table", names[k]);
            return EX_USAGE_;
        }
        if (cli_check_not_input(CMD, names[k], outs[k], a->cfg.paths, a->cfg.npaths) ||
            cli_check_not_input(CMD, names[k], outs[k], (const char *const *)ins, nin))
            return EX_USAGE_;
    }
    return 0;
}

/* The rows' limits and, with --same-tokens, the manifest every row then plans. */
static int prepare(const compare_args *a, vl_manifest **m, compare_ctx *ctx)
{
    vl_config cfg;
    int rc;

    if ((rc = cli_config_load(CMD, &a->cfg, &cfg)) != 0)
        return rc;
    compare_ctx_describe(ctx, *m, &cfg);
    if (a->same_tokens) {
        rc = compare_same_tokens(a->rows_view, (size_t)a->nrows, &a->cfg, &cfg, m, ctx,
                                 a->log.quiet);
    }
    vl_config_free(&cfg);
    return rc;
}

int cmd_compare(int argc, char **argv)
{
    compare_args a;
    compare_ctx ctx;
    vl_manifest *m = NULL;
    int first = 0, rc;

    memset(&a, 0, sizeof a);
    memset(&ctx, 0, sizeof ctx);
    cli_log_init(&a.log);
    rc = cli_parse(argc, argv, CMD, USAGE, options, on_option, &a, &first);
    if (rc)
        return rc < 0 ? 0 : rc;
    if ((rc = make_rows(&a)) != 0 || (rc = precheck(&a)) != 0)
        return rc;
    if ((rc = check_outputs(&a, argv + first, argc - first)) != 0)
        return rc;
    if ((rc = check_configs(&a)) != 0)
        return rc;
    for (int i = 0; i < a.nrows; i++) {
        a.rows_view[i].label = a.rows[i].label;
        a.rows_view[i].strategy = a.rows[i].strategy;
        a.rows_view[i].sets = a.rows[i].sets;
        a.rows_view[i].nsets = a.rows[i].nsets;
    }
    for (int i = first; i < argc; i++) { /* the manifests' names, for the chart */
        size_t k = strlen(ctx.manifest);
        snprintf(ctx.manifest + k, sizeof ctx.manifest - k, "%s%s", i > first ? ", " : "",
                 strcmp(argv[i], "-") == 0 ? "<stdin>" : argv[i]);
    }
    if (first == argc)
        snprintf(ctx.manifest, sizeof ctx.manifest, "<stdin>");
    if ((rc = cli_manifest_load(CMD, &a.man, argv + first, argc - first, &m)) == 0)
        rc = prepare(&a, &m, &ctx);
    if (rc == 0)
        rc = compare(&a, m, &ctx);
    vl_manifest_free(m);
    return rc;
}
