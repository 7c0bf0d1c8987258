/* cmd/vlplan/compare_out.c -- `compare` output formats and chart (compare_out.h).  A row
 * whose plan exceeds device memory is marked wherever it is shown: "NO" under "fits",
 * n/a for its speedup, "(OOM)" on its bars. */
#include "compare_out.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "figures.h"
#include "svg.h"

#define COL 14

static const char *cell(const figure *g, const eval_result *r, char *buf, size_t cap)
{
    double v;

    if (!g->value(r, &v))
        return strcmp(g->key, "speedup") == 0 && r->has_sim ? "n/a" : "-";
    return fig_format(g, v, buf, cap);
}

/* Figures down, rows across: a dozen figures read better as rows. */
static void print_table(FILE *f, const eval_result *res, size_t n)
{
    char buf[48];

    fprintf(f, "%-14s %-10s", "figure", "unit");
    for (size_t i = 0; i < n; i++)
        fprintf(f, " %*s", COL, res[i].label);
    fprintf(f, "  %s\n%-14s %-10s", "better", "fits", "");
    for (size_t i = 0; i < n; i++)
        fprintf(f, " %*s", COL, !res[i].has_sim ? "-" : eval_fits(&res[i]) ? "yes" : "NO");
    fputc('\n', f);
    for (const figure *g = fig_table; g->key; g++) {
        fprintf(f, "%-14s %-10s", g->key, g->unit);
        for (size_t i = 0; i < n; i++)
            fprintf(f, " %*s", COL, cell(g, &res[i], buf, sizeof buf));
        fprintf(f, "  %s\n", fig_better_word(g->better));
    }
}

/* CSV: raw numbers for programs (empty when not available); Markdown: as the table
 * prints them, units in the heading. */
static void print_rows(FILE *f, const eval_result *res, size_t n, int md)
{
    const char *sep = md ? " | " : ",";
    char buf[48];

    fprintf(f, "%slabel%sstrategy%sfits", md ? "| " : "", sep, sep);
    for (const figure *g = fig_table; g->key; g++)
        fprintf(f, md && *g->unit ? "%s%s (%s)" : "%s%s", sep, g->key, g->unit);
    fputs(md ? " |\n" : "\n", f);
    if (md) {
        fputs("|---|---|---", f);
        for (const figure *g = fig_table; g->key; g++)
            fputs("|---:", f);
        fputs("|\n", f);
    }
    for (size_t i = 0; i < n; i++) {
        const eval_result *r = &res[i];
        fprintf(f, "%s%s%s%s%s%s", md ? "| " : "", r->label, sep, r->strategy, sep,
                !r->has_sim ? "" : eval_fits(r) ? (md ? "yes" : "1") : (md ? "NO" : "0"));
        for (const figure *g = fig_table; g->key; g++) {
            double v;
            if (md)
                fprintf(f, "%s%s", sep, cell(g, r, buf, sizeof buf));
            else if (g->value(r, &v))
                fprintf(f, "%s%.6g", sep, v);
            else
                fputs(sep, f);
        }
        fputs(md ? " |\n" : "\n", f);
    }
}

static int print_json(FILE *f, const char *cmd, const eval_result *res, size_t n)
{
    vl_jw *o = vl_jw_object(), *arr = o ? vl_jw_array(o, "strategies") : NULL;
    int bad = !arr;

    for (size_t i = 0; !bad && i < n; i++) {
        vl_jw *e = vl_jw_push(arr);
        bad = !e || vl_jw_str(e, "label", res[i].label) ||
              vl_jw_str(e, "strategy", res[i].strategy) ||
              vl_jw_num(e, "speedup", res[i].speedup) || eval_json_into(e, &res[i]);
    }
    return cli_print_json(f, cmd, o, bad);
}

int compare_print(FILE *f, const char *cmd, report_format fmt, const eval_result *res,
                  size_t n)
{
    if (fmt == FMT_JSON)
        return print_json(f, cmd, res, n);
    if (fmt == FMT_CSV || fmt == FMT_MD)
        print_rows(f, res, n, fmt == FMT_MD);
    else
        print_table(f, res, n);
    return 0;
}

/* ---- the chart: one small panel per figure, a horizontal bar per row ---- */

static const char *const palette[] = {"#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2",
                                      "#edc948", "#b07aa1", "#ff9da7"};

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
        if (fg->value(&res[i], &v) && fabs(v) > vmax)
            vmax = fabs(v);
    snprintf(title, sizeof title, "%s%s%s%s", fg->key, *fg->unit ? " (" : "", fg->unit,
             *fg->unit ? ")" : "");
    vl_svg_text(g, x0, y0 + 14, 12, "start", "#000", title);
    if (fg->better != FIG_NEITHER) {
        snprintf(title, sizeof title, "%s is better", fig_better_word(fg->better));
        vl_svg_text(g, x0, y0 + 28, 10, "start", "#666", title);
    }
    for (size_t i = 0; i < n; i++) {
        double y = y0 + PANEL_PAD - 8 + BAR_H * (double)i;
        bool ok = fg->value(&res[i], &v), oom = res[i].has_sim && !eval_fits(&res[i]);
        double w = ok && vmax > 0 ? room * fabs(v) / vmax : 0;
        snprintf(name, sizeof name, "%.18s%s", res[i].label, oom ? " (OOM)" : "");
        vl_svg_text(g, x0 + LABEL_W - 6, y + 11, 10, "end", oom ? "#c00" : "#333", name);
        snprintf(tip, sizeof tip, "%s %s = %s %s", res[i].label, fg->key,
                 ok ? fig_format(fg, v, num, sizeof num) : "n/a", fg->unit);
        /* a plan that does not fit is no result: its bars are grey, whatever its colour */
        vl_svg_rect(g, x0 + LABEL_W, y + 2, w, BAR_H - 4, oom ? "#bbbbbb" : palette[i % 8], NULL,
                    tip);
        vl_svg_text(g, x0 + LABEL_W + w + 4, y + 11, 10, "start", "#333",
                    ok ? fig_format(fg, v, num, sizeof num) : "n/a");
    }
}

int compare_svg(const char *cmd, const char *path, const eval_result *res, size_t n)
{
    size_t nfig = 0;
    vl_svg g;
    vl_err err = {0};
    char *text = NULL;
    bool any_oom = false;
    int rc;

    while (fig_table[nfig].key)
        nfig++;
    for (size_t i = 0; i < n; i++)
        any_oom |= res[i].has_sim && !eval_fits(&res[i]);
    size_t rows = (nfig + PANEL_COLS - 1) / PANEL_COLS;
    double top = any_oom ? 58 : 40, ph = panel_h(n);
    vl_svg_begin(&g, 20 + PANEL_W * PANEL_COLS, top + ph * (double)rows + 10);
    vl_svg_text(&g, 20, 24, 15, "start", "#000", "vlplan compare");
    if (any_oom)
        vl_svg_text(&g, 20, 44, 11, "start", "#c00",
                    "(OOM), grey bars: the plan exceeds device memory; its figures are no "
                    "result and its speedup is n/a");
    for (size_t k = 0; k < nfig; k++)
        draw_panel(&g, &fig_table[k], res, n, 20 + PANEL_W * (double)(k % PANEL_COLS),
                   top + ph * (double)(k / PANEL_COLS));
    if (vl_svg_finish(&g, &text, &err) != VL_OK)
        return cli_fail(cmd, &err);
    rc = cli_write_text(cmd, path, text);
    free(text);
    return rc;
}
