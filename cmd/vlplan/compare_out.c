/* cmd/vlplan/compare_out.c -- `compare` output formats and chart (compare_out.h).  A row
 * whose plan exceeds device memory is marked wherever it is shown: "NO" under "fits",
 * n/a for its speedup, "(OOM)" on its bars; a refused row says "refused" and its
 * reason; a row of less work shows its token share and n/a for its speedup. */
#include "compare_out.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "figures.h"
#include "vlplan.h"

#define COL 14

const char *compare_scope_name(const eval_result *r)
{
    return r->epoch_scope ? "epoch" : "batch";
}

const char *compare_fits_word(const eval_result *r)
{
    return r->refused ? "refused" : !r->ev.has_sim ? "-" : eval_fits(r) ? "yes" : "NO";
}

static const char *cell(const figure *g, const eval_result *r, char *buf, size_t cap)
{
    double v;

    if (r->refused)
        return "-";
    if (!g->value(r, &v))
        return strcmp(g->key, "speedup") == 0 && r->ev.has_sim ? "n/a" : "-";
    return fig_format(g, v, buf, cap);
}

/* The work a row did, above its figures: what makes its figures comparable. */
typedef struct work_row {
    const char *key, *unit;
    int kind; /* 0 count, 1 share, 2 scope */
    uint64_t (*count)(const eval_result *r);
} work_row;

static uint64_t w_samples(const eval_result *r)
{
    return r->ev.mt.samples;
}
static uint64_t w_tokens(const eval_result *r)
{
    return r->ev.mt.tokens;
}
static uint64_t w_dropped(const eval_result *r)
{
    return r->ev.mt.dropped_tokens - r->ev.mt.truncated_tokens;
}
static uint64_t w_truncated(const eval_result *r)
{
    return r->ev.mt.truncated_tokens;
}
static uint64_t w_iterations(const eval_result *r)
{
    return r->ev.mt.iterations;
}

static const work_row work_rows[] = {
    {"scope", "", 2, NULL},
    {"samples", "samples", 0, w_samples},
    {"tokens", "tokens", 0, w_tokens},
    {"token_share", "%", 1, NULL},
    {"dropped_tokens", "tokens", 0, w_dropped},
    {"truncated_tokens", "tokens", 0, w_truncated},
    {"iterations", "steps", 0, w_iterations},
    {NULL, NULL, 0, NULL},
};

static const char *work_cell(const work_row *w, const eval_result *r, char *buf, size_t cap)
{
    if (r->refused)
        return "-";
    if (w->kind == 2)
        return compare_scope_name(r);
    if (w->kind == 1) {
        snprintf(buf, cap, "%.1f%s", 100.0 * r->token_share, r->less_work ? " LESS" : "");
        return buf;
    }
    cli_count(w->count(r), buf, cap);
    if (w->count == w_iterations && r->other_steps && strlen(buf) + 7 < cap)
        strcat(buf, " OTHER");
    return buf;
}

/* Figures down, rows across: a dozen figures read better as rows. */
static void print_table(FILE *f, const compare_ctx *ctx, const eval_result *res, size_t n)
{
    char buf[48];

    if (ctx->same_tokens[0])
        fprintf(f, "%s\n", ctx->same_tokens);
    fprintf(f, "%-16s %-10s", "figure", "unit");
    for (size_t i = 0; i < n; i++)
        fprintf(f, " %*s", COL, res[i].label);
    fputs("  better\n", f);
    for (const work_row *w = work_rows; w->key; w++) {
        fprintf(f, "%-16s %-10s", w->key, w->unit);
        for (size_t i = 0; i < n; i++)
            fprintf(f, " %*s", COL, work_cell(w, &res[i], buf, sizeof buf));
        fputc('\n', f);
    }
    fprintf(f, "%-16s %-10s", "fits", "");
    for (size_t i = 0; i < n; i++)
        fprintf(f, " %*s", COL, compare_fits_word(&res[i]));
    fputc('\n', f);
    for (const figure *g = fig_table; g->key; g++) {
        fprintf(f, "%-16s %-10s", g->key, g->unit);
        for (size_t i = 0; i < n; i++)
            fprintf(f, " %*s", COL, cell(g, &res[i], buf, sizeof buf));
        fprintf(f, "  %s\n", fig_better_word(g->better));
    }
    for (size_t i = 0; i < n; i++)
        if (res[i].refused)
            fprintf(f, "%s: refused: %s\n", res[i].label, res[i].why);
}

/* CSV: raw numbers for programs (empty when not available); Markdown: as the table
 * prints them, units in the heading. */
static void print_rows(FILE *f, const eval_result *res, size_t n, int md)
{
    const char *sep = md ? " | " : ",";
    char buf[48];

    fprintf(f, "%slabel%sstrategy%sfits", md ? "| " : "", sep, sep);
    for (const work_row *w = work_rows; w->key; w++)
        fprintf(f, "%s%s", sep, w->key);
    for (const figure *g = fig_table; g->key; g++)
        fprintf(f, md && *g->unit ? "%s%s (%s)" : "%s%s", sep, g->key, g->unit);
    fputs(md ? " |\n" : "\n", f);
    if (md) {
        fputs("|---|---|---", f);
        for (const work_row *w = work_rows; w->key; w++)
            fputs("|---:", f);
        for (const figure *g = fig_table; g->key; g++)
            fputs("|---:", f);
        fputs("|\n", f);
    }
    for (size_t i = 0; i < n; i++) {
        const eval_result *r = &res[i];
        fprintf(f, "%s%s%s%s%s%s", md ? "| " : "", r->label, sep, r->ev.strategy, sep,
                md               ? compare_fits_word(r)
                : r->refused     ? "refused"
                : !r->ev.has_sim ? ""
                : eval_fits(r)   ? "1"
                                 : "0");
        for (const work_row *w = work_rows; w->key; w++) {
            if (md || w->kind == 2 || r->refused)
                fprintf(f, "%s%s", sep,
                        r->refused ? ""
                        : md       ? work_cell(w, r, buf, sizeof buf)
                                   : compare_scope_name(r));
            else if (w->kind == 1)
                fprintf(f, "%s%s", sep, cli_plain(r->token_share, buf, sizeof buf));
            else
                fprintf(f, "%s%llu", sep, (unsigned long long)w->count(r));
        }
        for (const figure *g = fig_table; g->key; g++) {
            double v;
            if (md)
                fprintf(f, "%s%s", sep, cell(g, r, buf, sizeof buf));
            else if (!r->refused && g->value(r, &v))
                fprintf(f, "%s%s", sep, cli_plain(v, buf, sizeof buf));
            else
                fputs(sep, f);
        }
        fputs(md ? " |\n" : "\n", f);
    }
}

static int json_compared(vl_jw *o, const compare_ctx *ctx)
{
    vl_jw *c = vl_jw_child(o, "compared");

    return !c || vl_jw_str(c, "manifest", ctx->manifest) ||
           vl_jw_int(c, "samples", (int64_t)ctx->samples) ||
           vl_jw_int(c, "tokens", (int64_t)ctx->tokens) || vl_jw_int(c, "p50", ctx->p50) ||
           vl_jw_int(c, "p90", ctx->p90) || vl_jw_int(c, "p99", ctx->p99) ||
           vl_jw_int(c, "longest", ctx->longest) || vl_jw_str(c, "config", ctx->config) ||
           (ctx->same_tokens[0] && vl_jw_str(c, "same_tokens", ctx->same_tokens));
}

static int json_row(vl_jw *e, const eval_result *r)
{
    int bad = !e || vl_jw_str(e, "label", r->label) ||
              vl_jw_str(e, "strategy", r->ev.strategy) || vl_jw_bool(e, "refused", r->refused);

    if (bad || r->refused)
        return bad || vl_jw_str(e, "reason", r->why);
    return vl_jw_str(e, "scope", compare_scope_name(r)) ||
           vl_jw_num(e, "token_share", r->token_share) ||
           vl_jw_bool(e, "less_work", r->less_work) ||
           vl_jw_bool(e, "other_steps", r->other_steps) ||
           vl_jw_num(e, "speedup", r->speedup) || eval_json_into(e, r);
}

static int print_json(FILE *f, const char *cmd, const compare_ctx *ctx, const eval_result *res,
                      size_t n)
{
    vl_jw *o = vl_jw_object(), *arr = o ? vl_jw_array(o, "strategies") : NULL;
    int bad = !arr || json_compared(o, ctx);

    for (size_t i = 0; !bad && i < n; i++)
        bad = json_row(vl_jw_push(arr), &res[i]);
    return cli_print_json(f, cmd, o, bad);
}

int compare_print(FILE *f, const char *cmd, report_format fmt, const compare_ctx *ctx,
                  const eval_result *res, size_t n)
{
    if (fmt == FMT_JSON)
        return print_json(f, cmd, ctx, res, n);
    if (fmt == FMT_CSV || fmt == FMT_MD)
        print_rows(f, res, n, fmt == FMT_MD);
    else
        print_table(f, ctx, res, n);
    return 0;
}

int compare_export(const char *cmd, const char *path, report_format fmt,
                   const compare_ctx *ctx, const eval_result *res, size_t n)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    int rc;

    if (!f) {
        cli_error(cmd, "out of memory");
        return EX_OSERR_;
    }
    rc = compare_print(f, cmd, fmt, ctx, res, n);
    if (fclose(f) != 0 && rc == 0) {
        cli_error(cmd, "out of memory");
        rc = EX_OSERR_;
    }
    if (rc == 0)
        rc = cli_write_text(cmd, path, text);
    free(text);
    return rc;
}

/* ---- the chart: one small panel per figure, a horizontal bar per row ---- */

static const char *const palette[] = {"#4e79a7", "#f28e2b", "#59a14f", "#e15759",
                                      "#76b7b2", "#edc948", "#b07aa1", "#ff9da7"};

#define PANEL_W 300.0
#define PANEL_COLS 3
#define LABEL_W 110.0
#define BAR_H 16.0
#define PANEL_PAD 46.0

static double panel_h(size_t n)
{
    return PANEL_PAD + BAR_H * (double)n + 14;
}

static void draw_panel(vl_svg *g, const figure *fg, const eval_result *res, size_t n,
                       double x0, double y0)
{
    double vmax = 0, v, room = PANEL_W - LABEL_W - 70;
    char title[96], num[48], tip[160], name[64];

    for (size_t i = 0; i < n; i++)
        if (!res[i].refused && fg->value(&res[i], &v) && fabs(v) > vmax)
            vmax = fabs(v);
    snprintf(title, sizeof title, "%s%s%s%s", fg->key, *fg->unit ? " (" : "", fg->unit,
             *fg->unit ? ")" : "");
    vl_svg_text(g, x0, y0 + 14, 12, "start", "#000", title);
    if (fg->better != FIG_NEITHER) {
        snprintf(title, sizeof title, "%s is better", fig_better_word(fg->better));
        vl_svg_text(g, x0, y0 + 28, 10, "start", "#666", title);
    }
    for (size_t i = 0; i < n; i++) {
        const eval_result *r = &res[i];
        double y = y0 + PANEL_PAD - 8 + BAR_H * (double)i;
        bool ok = !r->refused && fg->value(r, &v);
        bool oom = !r->refused && r->ev.has_sim && !eval_fits(r), marked = oom || r->less_work;
        double w = ok && vmax > 0 ? room * fabs(v) / vmax : 0;
        snprintf(name, sizeof name, "%.18s%s", r->label,
                 r->refused     ? " (refused)"
                 : oom          ? " (OOM)"
                 : r->less_work ? " (less)"
                                : "");
        vl_svg_text(g, x0 + LABEL_W - 6, y + 11, 10, "end",
                    marked || r->refused ? "#c00" : "#333", name);
        snprintf(tip, sizeof tip, "%s %s = %s %s", r->label, fg->key,
                 ok ? fig_format(fg, v, num, sizeof num) : "n/a", fg->unit);
        /* a plan that does not fit, or did less work, is no result: grey bars */
        vl_svg_rect(g, x0 + LABEL_W, y + 2, w, BAR_H - 4, marked ? "#bbbbbb" : palette[i % 8],
                    NULL, tip);
        vl_svg_text(g, x0 + LABEL_W + w + 4, y + 11, 10, "start", "#333",
                    ok ? fig_format(fg, v, num, sizeof num) : "n/a");
    }
}

/* What was compared: the data, the configuration and each row's work. */
static double draw_heading(vl_svg *g, const compare_ctx *ctx, const eval_result *res, size_t n)
{
    char line[512], c[6][32];
    double y = 44;

    snprintf(line, sizeof line,
             "data: %s, %s samples, %s tokens; length p50 %s, p90 %s, "
             "p99 %s, longest %s",
             ctx->manifest, cli_count(ctx->samples, c[0], 32),
             cli_count(ctx->tokens, c[1], 32), cli_count(ctx->p50, c[2], 32),
             cli_count(ctx->p90, c[3], 32), cli_count(ctx->p99, c[4], 32),
             cli_count(ctx->longest, c[5], 32));
    vl_svg_text(g, 20, y, 11, "start", "#333", line);
    vl_svg_text(g, 20, y += 16, 11, "start", "#333", ctx->config);
    if (ctx->same_tokens[0])
        vl_svg_text(g, 20, y += 16, 11, "start", "#333", ctx->same_tokens);
    for (size_t i = 0; i < n; i++) {
        const eval_result *r = &res[i];
        if (r->refused)
            snprintf(line, sizeof line, "%s: refused: %.200s", r->label, r->why);
        else
            snprintf(line, sizeof line,
                     "%s: %.1f%% of the tokens%s, %zu iterations%s, %s "
                     "scope",
                     r->label, 100.0 * r->token_share, r->less_work ? " (less work)" : "",
                     r->ev.mt.iterations, r->other_steps ? " (other steps)" : "",
                     compare_scope_name(r));
        vl_svg_text(g, 20, y += 16, 11, "start", r->refused || r->less_work ? "#c00" : "#333",
                    line);
    }
    return y + 12;
}

vl_status compare_svg_text(const compare_ctx *ctx, const eval_result *res, size_t n,
                           char **out, vl_err *err)
{
    size_t nfig = 0;
    vl_svg g;
    bool any_oom = false;

    while (fig_table[nfig].key)
        nfig++;
    for (size_t i = 0; i < n; i++)
        any_oom |= !res[i].refused && res[i].ev.has_sim && !eval_fits(&res[i]);
    size_t rows = (nfig + PANEL_COLS - 1) / PANEL_COLS;
    double head = 44 + 16.0 * (double)(n + 2 + (ctx->same_tokens[0] != 0)) + 12;
    double top = head + (any_oom ? 18 : 0), ph = panel_h(n);
    vl_svg_begin(&g, 20 + PANEL_W * PANEL_COLS, top + ph * (double)rows + 10);
    vl_svg_text(&g, 20, 24, 15, "start", "#000", "vlplan compare");
    draw_heading(&g, ctx, res, n);
    if (any_oom)
        vl_svg_text(&g, 20, head + 6, 11, "start", "#c00",
                    "(OOM), (less), grey bars: the plan exceeds device memory or planned "
                    "fewer tokens; its figures are no result and its speedup is n/a");
    for (size_t k = 0; k < nfig; k++)
        draw_panel(&g, &fig_table[k], res, n, 20 + PANEL_W * (double)(k % PANEL_COLS),
                   top + ph * (double)(k / PANEL_COLS));
    return vl_svg_finish(&g, out, err);
}

int compare_svg(const char *cmd, const char *path, const compare_ctx *ctx,
                const eval_result *res, size_t n)
{
    vl_err err = {0};
    char *text = NULL;
    int rc;

    if (compare_svg_text(ctx, res, n, &text, &err) != VL_OK)
        return cli_fail(cmd, &err);
    rc = cli_write_text(cmd, path, text);
    free(text);
    return rc;
}
