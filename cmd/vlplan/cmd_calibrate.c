/* cmd/vlplan/cmd_calibrate.c -- `vlplan calibrate`: fit the cost model to measured step
 * times (lib/model/calibrate.h), print how well the configured model and the fit predict
 * them, and write a config fragment that -c accepts (cost.schemes, or cost.fit). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "strbuf.h"
#include "vlplan.h"

static const char *const CMD = "calibrate";
static const char *const USAGE =
    "[-c CONFIG] [--set KEY=VALUE]... [--fit schemes|layer] [--eval FILE] [-o FILE] TIMINGS";

enum { OPT_FIT_ = 700, OPT_EVAL_ }; /* this command's own long options */

static const cli_opt options[] = {
    {"config", 'c', "FILE", "cluster/model YAML the timings were measured for"},
    {"set", OPT_SET, "KEY=VALUE", "override a config key (repeatable)"},
    {"fit", OPT_FIT_, "KIND",
     "schemes: a*len^2+b*len+c per (tp, pp, sp, sp_kind, comm), "
     "as cost.schemes (default); layer: one per-layer cost.fit"},
    {"eval", OPT_EVAL_, "FILE", "held-out timings: report the errors on them too"},
    {"output", 'o', "FILE", "write the config fragment here (default: standard output)"},
    {"help", 'h', NULL, "show this help"},
    {NULL, 0, NULL, NULL},
};

typedef struct calib_args {
    cli_config_args cfg;
    vl_calib_kind kind;
    const char *eval, *out;
} calib_args;

static int on_option(int key, const char *arg, void *ud)
{
    calib_args *a = ud;
    int rc = cli_config_option(CMD, &a->cfg, key, arg);

    if (rc != 1)
        return rc;
    switch (key) {
    case 'o': a->out = arg; return 0;
    case OPT_EVAL_: a->eval = arg; return 0;
    case OPT_FIT_:
        if (strcmp(arg, "schemes") == 0 || strcmp(arg, "layer") == 0) {
            a->kind = arg[0] == 's' ? VL_CALIB_SCHEMES : VL_CALIB_LAYER;
            return 0;
        }
        cli_error(CMD, "--fit '%s': expected schemes or layer", arg);
        return EX_USAGE_;
    }
    return EX_USAGE_;
}

static void put_err(FILE *f, const char *what, vl_calib_err e, const char *name)
{
    if (e.n == 0) {
        fprintf(f, "%s: no rows it covers\n", what);
        return;
    }
    fprintf(f, "%s: %zu rows, MAPE %.2f%%, worst %.2f%% (%s:%u)\n", what, e.n, 100 * e.mape,
            100 * e.worst, e.worst_file ? e.worst_file : name, e.worst_line);
}

/* "tp1 pp1 sp2 ring", with " compute" where the rows leave communication out. */
static void scheme_label(const vl_calib_fit *x, char *label, size_t size)
{
    if (x->kind != VL_CALIB_SCHEMES) {
        snprintf(label, size, "per layer");
        return;
    }
    snprintf(label, size, "tp%d pp%d sp%d%s%s", x->scheme.tp, x->scheme.pp, x->scheme.sp,
             x->scheme.sp == 1          ? ""
             : x->sp_kind == VL_SP_RING ? " ring"
                                        : " ulysses",
             x->comm_analytic ? " compute" : "");
}

static bool same_key(const vl_scheme *x, const vl_scheme *y)
{
    return x->tp == y->tp && x->pp == y->pp && x->sp == y->sp;
}

/* Why fit i of fits cannot stand as a cost.schemes row of cfg, or NULL when it can: a row
 * is keyed by (tp, pp, sp) alone and timed under training.sp_kind; a compute-alone fit
 * becomes a row with comm: analytic (cost.c adds its communication) unless a whole-time
 * fit of the same scheme is a row already, or its scheme has no communication to add. */
static const char *not_config_row(const vl_calib_fit *fits, size_t n, size_t i,
                                  const vl_config *cfg)
{
    const vl_calib_fit *x = &fits[i];

    if (x->scheme.sp > 1 && x->sp_kind != cfg->training.sp_kind)
        return "not training.sp_kind";
    if (!x->comm_analytic)
        return NULL;
    if (x->scheme.tp == 1 && x->scheme.sp == 1)
        return "its rows are compute alone, and tp 1, sp 1 has no communication to add";
    for (size_t j = 0; j < n; j++)
        if (j != i && !fits[j].comm_analytic && same_key(&fits[j].scheme, &x->scheme) &&
            !not_config_row(fits, n, j, cfg))
            return "its whole time was measured too, and that is the row";
    return NULL;
}

static void put_fits(FILE *f, const vl_calib_fit *fits, size_t n, const char *name)
{
    fprintf(f, "%-28s %6s %13s %13s %13s %8s %8s\n", "scheme", "rows", "a", "b", "c", "MAPE",
            "worst");
    for (size_t i = 0; i < n; i++) {
        const vl_calib_fit *x = &fits[i];
        char label[64];
        scheme_label(x, label, sizeof label);
        fprintf(f, "%-28s %6zu %13.6g %13.6g %13.6g %7.2f%% %7.2f%%  %s:%u%s\n", label,
                x->err.n, x->scheme.a, x->scheme.b, x->scheme.c, 100 * x->err.mape,
                100 * x->err.worst, name, x->err.worst_line,
                x->zeroed ? "  (some held at 0)" : "");
    }
    if (fits[0].kind == VL_CALIB_SCHEMES)
        fputs("units: ms of a stage of model.layers/pp layers, forward+backward: a per "
              "token^2, b per token, c per micro-batch (\"compute\": one GPU's share of an "
              "sp or cp shard, communication: analytic, not in the rows)\n",
              f);
    else
        fputs("units: s per layer, forward: a per causal query-key pair, b per token, c per "
              "micro-batch\n",
              f);
}

/* The fragment: comments saying what it was fitted to, then cost.schemes or cost.fit,
 * every number with 17 significant digits so it reads back exactly. */
static char *fragment(const vl_calib_fit *fits, size_t n, const vl_config *cfg,
                      const char *name, size_t rows, double scale, size_t scaled,
                      double head_scale)
{
    vl_strbuf b = {0};
    size_t written = 0;

    vl_strbuf_printf(&b, "# vlplan calibrate: fitted to %zu rows of %s\n", rows, name);
    vl_strbuf_printf(&b,
                     "# for model %s (%d layers), cost.bwd_attn %g, cost.bwd_linear %g: "
                     "use it with the same\n# model and ratios, e.g. vlplan plan -c CONFIG "
                     "-c THIS_FILE ...\n",
                     cfg->model.preset, cfg->model.layers, cfg->cost.bwd_attn,
                     cfg->cost.bwd_linear);
    if (fits[0].kind == VL_CALIB_LAYER) {
        const vl_scheme *s = &fits[0].scheme;
        vl_strbuf_printf(&b,
                         "# MAPE %.2f%%, worst %.2f%%\ncost:\n  fit:\n    a: %.17g\n"
                         "    b: %.17g\n    c: %.17g\n",
                         100 * fits[0].err.mape, 100 * fits[0].err.worst, s->a, s->b, s->c);
        return vl_strbuf_take(&b);
    }
    vl_strbuf_printf(&b, "cost:\n");
    if (scaled > 0)
        vl_strbuf_printf(
            &b,
            "  # measured / analytic over the %zu rows (geometric mean): the "
            "schemes below\n  # replace the analytic compute; every scheme without a "
            "row (sp or cp > 1, other tp or pp)\n  # keeps it, corrected alike\n"
            "  compute_scale: %.17g\n",
            scaled, scale);
    if (head_scale > 0)
        vl_strbuf_printf(&b,
                         "  # the LM head and loss: measured / analytic over the rows "
                         "with head = 1\n  head_scale: %.17g\n",
                         head_scale);
    for (size_t i = 0; i < n; i++) {
        const vl_scheme *s = &fits[i].scheme;
        const char *why = not_config_row(fits, n, i, cfg);
        char label[64];
        if (!why)
            continue;
        scheme_label(&fits[i], label, sizeof label);
        vl_strbuf_printf(&b,
                         "  # %s: a %.17g, b %.17g, c %.17g\n  #   measured, not a "
                         "cost.schemes row: %s\n",
                         label, s->a, s->b, s->c, why);
    }
    vl_strbuf_printf(&b, "  # the rows time decoder layers, no LM head: a last stage adds "
                         "the analytic one\n  schemes_with_head: false\n  schemes:\n");
    for (size_t i = 0; i < n; i++) {
        const vl_scheme *s = &fits[i].scheme;
        if (not_config_row(fits, n, i, cfg))
            continue;
        written++;
        vl_strbuf_printf(&b, "    # %zu rows, MAPE %.2f%%, worst %.2f%%%s\n", fits[i].err.n,
                         100 * fits[i].err.mape, 100 * fits[i].err.worst,
                         fits[i].comm_analytic ? "; one GPU's compute of its shard, the "
                                                 "analytic communication added"
                                               : "");
        vl_strbuf_printf(
            &b, "    - {tp: %d, pp: %d, sp: %d, a: %.17g, b: %.17g, c: %.17g%s}\n", s->tp,
            s->pp, s->sp, s->a, s->b, s->c, fits[i].comm_analytic ? ", comm: analytic" : "");
    }
    if (written == 0)
        vl_strbuf_printf(&b, "    []\n");
    return vl_strbuf_take(&b);
}

/* The pooled error of leaving each budget of set out, *rc set on failure. */
static vl_calib_err lobo_total(const calib_args *a, const vl_calib_rows *set,
                               const vl_config *cfg, int *rc)
{
    vl_calib_lobo *lo = NULL;
    size_t n = 0;
    vl_err err = {0};
    vl_calib_err t = {0, 0, 0, 0, NULL};

    if (vl_calib_leave_budget_out(set, cfg, a->kind, &lo, &n, &err) != VL_OK)
        *rc = cli_fail(CMD, &err);
    else
        t = vl_calib_lobo_total(lo, n);
    free(lo);
    return t;
}

/* With several schemes, each one's budgets left out on its own rows: a scheme measured
 * as one GPU's shard generalises (or not) apart from the one it is compared with. */
static int lobo_per_scheme(const calib_args *a, const vl_calib_fit *fits, size_t nfits,
                           const vl_calib_rows *set, const vl_config *cfg, FILE *rep)
{
    int rc = 0;

    for (size_t i = 0; nfits > 1 && i < nfits && rc == 0; i++) {
        vl_calib_rows mine = {0};
        vl_err err = {0};
        char label[64], what[80];
        if (vl_calib_rows_of(set, &fits[i], &mine, &err) != VL_OK)
            return cli_fail(CMD, &err);
        scheme_label(&fits[i], label, sizeof label);
        snprintf(what, sizeof what, "    %s", label);
        vl_calib_err e = lobo_total(a, &mine, cfg, &rc);
        if (rc == 0)
            put_err(rep, what, e, set->name);
        free(mine.rows);
    }
    return rc;
}

/* Leave one token budget out over set: what a budget the fit never saw costs it. */
static int leave_budget_out(const calib_args *a, const vl_calib_fit *fits, size_t nfits,
                            const vl_calib_rows *set, const vl_config *cfg, FILE *rep)
{
    vl_calib_lobo *lo = NULL;
    size_t n = 0;
    vl_err err = {0};

    if (vl_calib_leave_budget_out(set, cfg, a->kind, &lo, &n, &err) != VL_OK)
        return cli_fail(CMD, &err);
    if (n == 0) {
        fprintf(rep, "leave one token budget out: one budget only, nothing to leave out\n");
        free(lo);
        return 0;
    }
    fprintf(rep, "leave one token budget out (each fitted on the other %zu budgets of %s):\n",
            n - 1, set->name);
    for (size_t i = 0; i < n; i++) {
        char what[64];
        snprintf(what, sizeof what, "  budget %.0f tokens", lo[i].budget);
        put_err(rep, what, lo[i].err, set->name);
    }
    put_err(rep, "  all budgets", vl_calib_lobo_total(lo, n), set->name);
    free(lo);
    if (nfits > 1)
        fprintf(rep, "  each scheme on its own rows, all budgets:\n");
    return lobo_per_scheme(a, fits, nfits, set, cfg, rep);
}

static bool has_shards(const vl_calib_fit *fits, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (fits[i].comm_analytic)
            return true;
    return false;
}

/* What the consistent correction makes of each scheme measured as one GPU's shard
 * (compute alone), against that scheme's own fit, on the rows of set. */
static void put_shards(FILE *rep, const char *what, const vl_calib_fit *fits, size_t n,
                       const vl_cost *cost, const vl_calib_rows *set, double scale)
{
    bool any = false;

    for (size_t i = 0; i < n; i++) {
        char label[64], line[160];
        if (!fits[i].comm_analytic)
            continue;
        if (!any)
            fprintf(rep,
                    "%ssp/cp shards measured on one GPU (compute alone; communication: "
                    "analytic, not timed):\n",
                    what);
        any = true;
        scheme_label(&fits[i], label, sizeof label);
        snprintf(line, sizeof line, "  %s, measured (its own fit)", label);
        put_err(rep, line, vl_calib_score(&fits[i], 1, NULL, cost->cfg, set), set->name);
        snprintf(line, sizeof line, "  %s, corrected (analytic compute x %.4f)", label, scale);
        put_err(rep, line, vl_calib_score_corrected(cost, scale, &fits[i], set), set->name);
    }
}

/* Held-out error of each scheme's fit on its own rows, when there are several. */
static void put_held_per_scheme(FILE *rep, const vl_calib_fit *fits, size_t n,
                                const vl_config *cfg, const vl_calib_rows *held)
{
    for (size_t i = 0; n > 1 && i < n; i++) {
        char label[64], line[128];
        scheme_label(&fits[i], label, sizeof label);
        snprintf(line, sizeof line, "  %s", label);
        put_err(rep, line, vl_calib_score(&fits[i], 1, NULL, cfg, held), held->name);
    }
}

/* The fit rows and the held-out ones together, for leaving budgets out. */
static vl_status join(vl_calib_rows *all, const vl_calib_rows *x, const vl_calib_rows *y,
                      vl_err *err)
{
    all->n = x->n + y->n;
    all->rows = malloc((all->n ? all->n : 1) * sizeof *all->rows);
    if (!all->rows)
        return vl_seterr(err, VL_ENOMEM, "out of memory");
    memcpy(all->rows, x->rows, x->n * sizeof *x->rows);
    memcpy(all->rows + x->n, y->rows, y->n * sizeof *y->rows);
    for (size_t i = 0; i < all->n; i++)
        all->rows[i].file = i < x->n ? x->name : y->name;
    snprintf(all->name, sizeof all->name, "%.120s and %.120s", x->name, y->name);
    return VL_OK;
}

/* Errors of the configured model and of the fit on the held-out rows, then leave one
 * budget out over both files. */
static int evaluate(const calib_args *a, const vl_calib_fit *fits, size_t n,
                    const vl_cost *cost, const vl_config *cfg, const vl_calib_rows *set,
                    double scale, FILE *rep)
{
    vl_calib_rows held = {0}, all = {0}, head = {0};
    vl_err err = {0};
    vl_status st = vl_calib_read(&held, a->eval, cfg, &err);
    int rc = 0;

    if (st == VL_OK) /* the fits and their scores are of decoder layers */
        st = vl_calib_take_head(&held, &head, &err);
    vl_calib_rows_free(&head);

    if (st == VL_OK) {
        put_err(rep, "held out, cost model before calibration",
                vl_calib_score(NULL, 0, cost, cfg, &held), held.name);
        put_err(rep, "held out, after calibration", vl_calib_score(fits, n, NULL, cfg, &held),
                held.name);
        put_held_per_scheme(rep, fits, n, cfg, &held);
        put_shards(rep, "held out, ", fits, n, cost, &held, scale);
        st = join(&all, set, &held, &err);
    }
    rc = st != VL_OK ? cli_fail(CMD, &err) : leave_budget_out(a, fits, n, &all, cfg, rep);
    free(all.rows);
    vl_calib_rows_free(&held);
    return rc;
}

/* The rows with head = 1: cost.head_scale for the schemes (NAN: none, or a per-layer fit,
 * which has no head), said on rep. */
static double head_line(const calib_args *a, const vl_cost *cost, const vl_calib_rows *head,
                        FILE *rep)
{
    size_t used = 0;
    double s = NAN;

    if (head->n == 0)
        return NAN;
    if (a->kind == VL_CALIB_SCHEMES)
        s = vl_calib_head_scale(cost, head, &used);
    if (used > 0)
        fprintf(rep,
                "the LM head and loss (%zu rows with head = 1): cost.head_scale %.4f "
                "(measured / analytic)\n",
                used, s);
    else
        fprintf(rep, "%zu rows with head = 1 not used (%s)\n", head->n,
                a->kind == VL_CALIB_SCHEMES ? "no usable ratio" : "cost.fit has no LM head");
    return used > 0 ? s : NAN;
}

static int run(const calib_args *a, const char *path, const vl_config *cfg)
{
    vl_calib_rows set = {0}, head = {0};
    vl_calib_fit *fits = NULL;
    size_t n = 0;
    vl_cost cost;
    vl_err err = {0};
    vl_status st = vl_cost_init(&cost, cfg, &err);
    FILE *rep = cli_is_stdout(a->out) ? stderr : stdout; /* the fragment owns stdout */
    int rc = 0;

    if (st == VL_OK)
        st = vl_calib_read(&set, path, cfg, &err);
    if (st == VL_OK)
        st = vl_calib_take_head(&set, &head, &err);
    if (st == VL_OK)
        st = vl_calib_fit_rows(&set, cfg, a->kind, &fits, &n, &err);
    if (st != VL_OK) {
        vl_calib_rows_free(&set);
        vl_calib_rows_free(&head);
        return cli_fail(CMD, &err);
    }
    put_fits(rep, fits, n, set.name);
    put_err(rep, "cost model before calibration", vl_calib_score(NULL, 0, &cost, cfg, &set),
            set.name);
    put_err(rep, "after calibration", vl_calib_score(fits, n, NULL, cfg, &set), set.name);
    size_t scaled = 0;
    double scale =
        a->kind == VL_CALIB_SCHEMES ? vl_calib_compute_scale(&cost, &set, &scaled) : NAN;
    /* without a measured scheme to correct from, the configured correction stands */
    double corr = scaled ? scale : cfg->cost.compute_scale > 0 ? cfg->cost.compute_scale : 1.0;
    put_shards(rep, "", fits, n, &cost, &set, corr);
    rc = a->eval ? evaluate(a, fits, n, &cost, cfg, &set, corr, rep)
                 : leave_budget_out(a, fits, n, &set, cfg, rep);
    if (rc == 0 && scaled > 0)
        fprintf(rep,
                "schemes not measured (sp or cp > 1, other tp or pp) keep the analytic "
                "model, scaled by cost.compute_scale %.4f (measured / analytic over %zu "
                "rows)\n",
                scale, scaled);
    if (rc == 0 && has_shards(fits, n))
        fprintf(rep, "sp/cp shards measured as compute alone are written as cost.schemes rows "
                     "with comm: analytic (where training.sp_kind is theirs): the cost model "
                     "adds their scheme's analytic communication to the fitted compute\n");
    double head_scale = head_line(a, &cost, &head, rep);
    if (rc == 0) {
        char *text = fragment(fits, n, cfg, set.name, set.n, scale, scaled, head_scale);
        if (!text) {
            cli_error(CMD, "out of memory");
            rc = EX_OSERR_;
        } else {
            rc = cli_write_text(CMD, a->out, text);
        }
        free(text);
    }
    free(fits);
    vl_calib_rows_free(&set);
    vl_calib_rows_free(&head);
    return rc;
}

int cmd_calibrate(int argc, char **argv)
{
    calib_args a;
    vl_config cfg;
    int first = 0, rc;

    memset(&a, 0, sizeof a);
    rc = cli_parse(argc, argv, CMD, USAGE, options, on_option, &a, &first);
    if (rc)
        return rc < 0 ? 0 : rc;
    if (argc - first != 1) {
        cli_error(CMD, argc == first ? "missing TIMINGS (a CSV or JSON Lines file of measured "
                                       "step times)"
                                     : "one TIMINGS file expected");
        return EX_USAGE_;
    }
    if ((rc = cli_check_not_input(CMD, "-o", a.out, (const char *const *)&argv[first], 1)) !=
        0)
        return rc;
    if ((rc = cli_config_load(CMD, &a.cfg, &cfg)) != 0)
        return rc;
    rc = run(&a, argv[first], &cfg);
    vl_config_free(&cfg);
    return rc;
}
