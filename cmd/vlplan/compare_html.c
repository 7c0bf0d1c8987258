/* cmd/vlplan/compare_html.c -- `compare --html FILE`: one self-contained page (no
 * scripts, no network: inline CSS and inline SVG) with what was compared, the table of
 * every row's work and figures, the small-multiples chart, the simulated time of every
 * iteration of every row on one axis, the length histogram, and the Gantt chart of each
 * row's slowest iteration. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compare_out.h"
#include "figures.h"
#include "vlplan.h"

static const char *const palette[] = {"#4e79a7", "#f28e2b", "#59a14f", "#e15759",
                                      "#76b7b2", "#edc948", "#b07aa1", "#ff9da7"};

static void esc(FILE *f, const char *s)
{
    for (; *s; s++)
        switch (*s) {
        case '&': fputs("&amp;", f); break;
        case '<': fputs("&lt;", f); break;
        case '>': fputs("&gt;", f); break;
        case '"': fputs("&quot;", f); break;
        default: fputc(*s, f);
        }
}

/* An SVG document inline: without its XML declaration. */
static void inline_svg(FILE *f, const char *svg)
{
    const char *start = strstr(svg, "<svg");

    fputs(start ? start : svg, f);
}

static void head(FILE *f, const compare_ctx *ctx)
{
    char c[6][32];

    fputs("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
          "<title>vlplan compare</title>\n<style>\n"
          "body{font-family:sans-serif;margin:24px;color:#222}"
          "table{border-collapse:collapse;font-size:13px}"
          "td,th{border:1px solid #ccc;padding:3px 8px;text-align:right}"
          "th{background:#f3f3f3}td.l,th.l{text-align:left}"
          ".bad{color:#c00}.note{color:#555;font-size:13px}"
          "h2{margin-top:28px;font-size:18px}\n</style></head><body>\n"
          "<h1>vlplan compare</h1>\n<p>",
          f);
    fprintf(f, "Data: ");
    esc(f, ctx->manifest);
    fprintf(f, ", %s samples, %s tokens; length p50 %s, p90 %s, p99 %s, longest %s.<br>\n",
            cli_count(ctx->samples, c[0], 32), cli_count(ctx->tokens, c[1], 32),
            cli_count(ctx->p50, c[2], 32), cli_count(ctx->p90, c[3], 32),
            cli_count(ctx->p99, c[4], 32), cli_count(ctx->longest, c[5], 32));
    fputs("Configuration: ", f);
    esc(f, ctx->config);
    if (ctx->same_tokens[0]) {
        fputs(".<br>\n", f);
        esc(f, ctx->same_tokens);
    }
    fputs(".</p>\n", f);
}

static void work_cells(FILE *f, const eval_result *r)
{
    char c[3][32];

    if (r->refused) {
        fputs("<td class=\"l bad\" colspan=\"5\">refused: ", f);
        esc(f, r->why);
        fputs("</td>", f);
        return;
    }
    fprintf(f, "<td class=\"l\">%s</td><td>%s</td><td%s>%.1f%%</td><td>%s</td><td%s>%s</td>",
            compare_scope_name(r), cli_count(r->ev.mt.tokens, c[0], 32),
            r->less_work ? " class=\"bad\"" : "", 100.0 * r->token_share,
            cli_count(r->ev.mt.dropped_tokens, c[1], 32),
            r->other_steps ? " class=\"bad\"" : "", cli_count(r->ev.mt.iterations, c[2], 32));
}

static void table(FILE *f, const eval_result *res, size_t n)
{
    char buf[48];
    double v;

    fputs("<h2>Rows</h2>\n<table><tr><th class=\"l\">row</th><th class=\"l\">strategy</th>"
          "<th class=\"l\">scope</th><th>tokens</th><th>token share</th>"
          "<th>dropped+cut tokens</th><th>iterations</th><th>fits</th>",
          f);
    for (const figure *g = fig_table; g->key; g++)
        fprintf(f, "<th>%s%s%s%s</th>", g->key, *g->unit ? " (" : "", g->unit,
                *g->unit ? ")" : "");
    fputs("</tr>\n", f);
    for (size_t i = 0; i < n; i++) {
        const eval_result *r = &res[i];
        fputs("<tr><td class=\"l\">", f);
        esc(f, r->label);
        fputs("</td><td class=\"l\">", f);
        esc(f, r->ev.strategy);
        fputs("</td>", f);
        work_cells(f, r);
        bool bad = r->refused || (r->ev.has_sim && !eval_fits(r));
        fprintf(f, "<td%s>%s</td>", bad ? " class=\"bad\"" : "", compare_fits_word(r));
        for (const figure *g = fig_table; g->key; g++)
            fprintf(f, "<td>%s</td>",
                    r->refused                       ? "-"
                    : g->value(r, &v)                ? fig_format(g, v, buf, sizeof buf)
                    : strcmp(g->key, "speedup") == 0 ? "n/a"
                                                     : "-");
        fputs("</tr>\n", f);
    }
    fputs("</table>\n<p class=\"note\">A red token share: the row planned fewer tokens than "
          "the most (its speedup is n/a); red iterations: other optimizer steps than the "
          "baseline; scope epoch: samples regrouped across the epoch, batch: each sampled "
          "global batch kept.</p>\n",
          f);
}

/* Every row's iteration times on one axis, as steps; a long epoch is shown as the worst
 * iteration of each of at most 1,000 buckets. */
#define ITER_W 900.0
#define ITER_H 300.0
#define ITER_BUCKETS 1000

static double bucket_max(const compare_detail *d, size_t b, size_t nb)
{
    size_t lo = d->niters * b / nb, hi = d->niters * (b + 1) / nb;
    double m = 0;

    for (size_t i = lo; i < hi || i == lo; i++)
        if (i < d->niters && d->iter_ms[i] > m)
            m = d->iter_ms[i];
    return m;
}

static vl_status iteration_chart(const compare_ctx *ctx, const eval_result *res, size_t n,
                                 char **out, vl_err *err)
{
    double ymax = 0, left = 70, top = 20, w = ITER_W - left - 20, h = ITER_H - top - 60;
    size_t most = 0;
    vl_svg g;
    char lab[64];

    for (size_t i = 0; i < n; i++)
        for (size_t k = 0; k < ctx->details[i].niters; k++) {
            ymax = fmax(ymax, ctx->details[i].iter_ms[k]);
            most = ctx->details[i].niters > most ? ctx->details[i].niters : most;
        }
    vl_svg_begin(&g, ITER_W, ITER_H + 16.0 * (double)n);
    vl_svg_line(&g, left, top + h, left + w, top + h, "#999", 1);
    vl_svg_line(&g, left, top, left, top + h, "#999", 1);
    snprintf(lab, sizeof lab, "%.0f ms", ymax);
    vl_svg_text(&g, left - 4, top + 8, 10, "end", "#333", lab);
    vl_svg_text(&g, left - 4, top + h, 10, "end", "#333", "0");
    snprintf(lab, sizeof lab, "iteration (of %zu)", most);
    vl_svg_text(&g, left + w / 2, top + h + 30, 11, "middle", "#333", lab);
    for (size_t i = 0; i < n && ymax > 0; i++) {
        const compare_detail *d = &ctx->details[i];
        size_t nb = d->niters < ITER_BUCKETS ? d->niters : ITER_BUCKETS;
        double prev_y = NAN;
        for (size_t b = 0; b < nb; b++) {
            double x0 = left + w * (double)b / (double)nb,
                   x1 = left + w * (double)(b + 1) / nb;
            double y = top + h - h * bucket_max(d, b, nb) / ymax;
            if (!isnan(prev_y))
                vl_svg_line(&g, x0, prev_y, x0, y, palette[i % 8], 1.5);
            vl_svg_line(&g, x0, y, x1, y, palette[i % 8], 1.5);
            prev_y = y;
        }
        double ly = ITER_H - 10 + 16.0 * (double)i;
        vl_svg_rect(&g, left, ly - 9, 12, 10, palette[i % 8], NULL, NULL);
        vl_svg_text(&g, left + 18, ly, 11, "start", "#333", res[i].label);
    }
    return vl_svg_finish(&g, out, err);
}

/* Samples and tokens by length, in power-of-two bins. */
static vl_status histogram(const compare_ctx *ctx, char **out, vl_err *err)
{
    double ns[33] = {0}, nt[33] = {0}, tot = 0, top = 30, h = 180, left = 60, bw = 24;
    int hi = 0;
    vl_svg g;
    char lab[32];

    for (size_t i = 0; i < ctx->nlengths; i++) {
        uint32_t l = ctx->lengths[i];
        int b = 0;
        while (b < 32 && (1u << (b + 1)) <= l)
            b++;
        ns[b] += 1;
        nt[b] += l;
        tot += l;
        hi = b > hi ? b : hi;
    }
    vl_svg_begin(&g, left + bw * (hi + 1) + 40, top + h + 60);
    vl_svg_text(&g, left, 16, 11, "start", "#333",
                "share of samples (blue) and of tokens (orange) by length, power-of-two bins");
    for (int b = 0; b <= hi && ctx->nlengths > 0; b++) {
        double x = left + bw * b, fs = ns[b] / (double)ctx->nlengths,
               ft = tot ? nt[b] / tot : 0;
        vl_svg_rect(&g, x + 2, top + h - h * fs, bw / 2 - 2, h * fs, palette[0], NULL, NULL);
        vl_svg_rect(&g, x + bw / 2, top + h - h * ft, bw / 2 - 2, h * ft, palette[1], NULL,
                    NULL);
        if (b % 2 == 0) {
            if (b >= 20)
                snprintf(lab, sizeof lab, "%uM", 1u << (b - 20));
            else if (b >= 10)
                snprintf(lab, sizeof lab, "%uK", 1u << (b - 10));
            else
                snprintf(lab, sizeof lab, "%u", 1u << b);
            vl_svg_text(&g, x + bw / 2, top + h + 14, 9, "middle", "#333", lab);
        }
    }
    vl_svg_line(&g, left, top + h, left + bw * (hi + 1), top + h, "#999", 1);
    return vl_svg_finish(&g, out, err);
}

static void section(FILE *f, const char *title, char *svg)
{
    fprintf(f, "<h2>%s</h2>\n", title);
    inline_svg(f, svg);
    fputc('\n', f);
    free(svg);
}

static int body(FILE *f, const compare_ctx *ctx, const eval_result *res, size_t n, vl_err *err)
{
    char *svg = NULL;

    table(f, res, n);
    if (compare_svg_text(ctx, res, n, &svg, err) != VL_OK)
        return -1;
    section(f, "Figures", svg);
    if (ctx->details) {
        if (iteration_chart(ctx, res, n, &svg, err) != VL_OK)
            return -1;
        section(f, "Simulated time of every iteration", svg);
    }
    if (histogram(ctx, &svg, err) != VL_OK)
        return -1;
    section(f, "Lengths", svg);
    for (size_t i = 0; ctx->details && i < n; i++) {
        const compare_detail *d = &ctx->details[i];
        if (!d->gantt)
            continue;
        fputs("<h2>", f);
        esc(f, res[i].label);
        fprintf(f, ": the slowest iteration, %zu (%.1f ms)</h2>\n", d->slowest,
                d->iter_ms[d->slowest]);
        inline_svg(f, d->gantt);
        fputc('\n', f);
    }
    fputs("</body></html>\n", f);
    return 0;
}

int compare_html(const char *cmd, const char *path, const compare_ctx *ctx,
                 const eval_result *res, size_t n)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    vl_err err = {0};
    int bad, rc;

    if (!f) {
        cli_error(cmd, "out of memory");
        return EX_OSERR_;
    }
    head(f, ctx);
    bad = body(f, ctx, res, n, &err);
    if (fclose(f) != 0 || bad) {
        free(text);
        cli_error(cmd, "out of memory writing the report");
        return EX_OSERR_;
    }
    rc = cli_write_text(cmd, path, text);
    free(text);
    return rc;
}
