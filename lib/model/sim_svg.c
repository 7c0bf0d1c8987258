/* lib/model/sim_svg.c -- the SVG writer of svg.h and the simulator's Gantt chart: one lane
 * per (rank, stage), forward / backward / recompute / communication colours over a
 * grey idle background, legend and time axis.  Returns text; never writes files. */
#include "svg.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- writer --------------------------------------------------------------------- */

#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
static void
put(vl_svg *g, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vl_strbuf_vprintf(&g->text, fmt, ap);
    va_end(ap);
}

/* XML character data / attribute value. */
static void put_escaped(vl_svg *g, const char *s)
{
    for (; s && *s; s++) {
        switch (*s) {
        case '&': put(g, "&amp;"); break;
        case '<': put(g, "&lt;"); break;
        case '>': put(g, "&gt;"); break;
        case '"': put(g, "&quot;"); break;
        case '\'': put(g, "&apos;"); break;
        default:
            /* control characters are not allowed in XML 1.0 */
            put(g, "%c", (unsigned char)*s < 0x20 && *s != '\t' && *s != '\n' ? '?' : *s);
        }
    }
}

static double clamp(double v, double lo, double hi)
{
    return v < lo ? lo : v > hi ? hi : v;
}

void vl_svg_begin(vl_svg *g, double w, double h)
{
    memset(g, 0, sizeof *g);
    g->w = w;
    g->h = h;
    put(g,
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" "
        "viewBox=\"0 0 %.0f %.0f\" font-family=\"sans-serif\">\n",
        w, h, w, h);
    put(g, "<rect x=\"0\" y=\"0\" width=\"%.0f\" height=\"%.0f\" fill=\"#ffffff\"/>\n", w, h);
}

void vl_svg_rect(vl_svg *g, double x, double y, double w, double h, const char *fill,
                 const char *cls, const char *tip)
{
    double x0 = clamp(x, 0, g->w), x1 = clamp(x + w, 0, g->w);
    double y0 = clamp(y, 0, g->h), y1 = clamp(y + h, 0, g->h);

    if (x1 - x0 <= 0.0 || y1 - y0 <= 0.0)
        return;
    put(g, "<rect x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" height=\"%.2f\" fill=\"%s\"", x0, y0,
        x1 - x0, y1 - y0, fill);
    if (cls)
        put(g, " class=\"%s\"", cls);
    if (!tip) {
        put(g, "/>\n");
        return;
    }
    put(g, "><title>");
    put_escaped(g, tip);
    put(g, "</title></rect>\n");
}

void vl_svg_line(vl_svg *g, double x1, double y1, double x2, double y2, const char *stroke,
                 double width)
{
    put(g,
        "<line x1=\"%.2f\" y1=\"%.2f\" x2=\"%.2f\" y2=\"%.2f\" stroke=\"%s\" "
        "stroke-width=\"%.2f\"/>\n",
        clamp(x1, 0, g->w), clamp(y1, 0, g->h), clamp(x2, 0, g->w), clamp(y2, 0, g->h), stroke,
        width);
}

void vl_svg_text(vl_svg *g, double x, double y, double size, const char *anchor,
                 const char *fill, const char *text)
{
    put(g, "<text x=\"%.2f\" y=\"%.2f\" font-size=\"%.1f\" text-anchor=\"%s\" fill=\"%s\">",
        clamp(x, 0, g->w), clamp(y, 0, g->h), size, anchor, fill);
    put_escaped(g, text);
    put(g, "</text>\n");
}

vl_status vl_svg_finish(vl_svg *g, char **out, vl_err *err)
{
    put(g, "</svg>\n");
    *out = vl_strbuf_take(&g->text);
    memset(g, 0, sizeof *g);
    return *out ? VL_OK : vl_seterr(err, VL_ENOMEM, "svg: out of memory");
}

/* ---- Gantt chart ---------------------------------------------------------------- */

#define COL_F "#4e79a7"
#define COL_B "#59a14f"
#define COL_R "#f28e2b"
#define COL_COMM "#e15759"
#define COL_IDLE "#e4e4e4"
#define COL_TEXT "#222222"

typedef struct layout {
    double w, h, left, right, top, lane_h, gap, xs; /* xs: px per second */
    double pad;  /* space above and below a task inside its lane */
    double unit; /* seconds per displayed unit */
    const char *uname;
    uint32_t nranks;
} layout;

static double lane_y(const layout *L, const vl_sim_trace *t, size_t l)
{
    return L->top + (double)l * L->lane_h + t->lanes[l].rank * L->gap;
}

static double tx(const layout *L, double sec)
{
    return L->left + sec * L->xs;
}

static void plan_layout(layout *L, const vl_sim_trace *t)
{
    double span = t->iter_time > 0.0 ? t->iter_time : 1.0;

    L->nranks = t->nlanes ? t->lanes[t->nlanes - 1].rank + 1 : 0;
    L->w = 1200.0;
    L->left = 84.0;
    L->right = 40.0;
    L->top = 64.0;
    L->lane_h = clamp(floor(720.0 / (t->nlanes ? (double)t->nlanes : 1.0)), 4.0, 24.0);
    L->gap = L->lane_h >= 8.0 ? 6.0 : 2.0;
    L->pad = L->lane_h >= 8.0 ? 1.0 : 0.0; /* thin lanes: tasks fill them */
    L->h = L->top + (double)t->nlanes * L->lane_h + (L->nranks ? L->nranks - 1 : 0) * L->gap +
           56.0;
    L->xs = (L->w - L->left - L->right) / span;
    if (span >= 10.0)
        L->unit = 1.0, L->uname = "s";
    else if (span >= 0.01)
        L->unit = 1e-3, L->uname = "ms";
    else
        L->unit = 1e-6, L->uname = "us";
}

static void draw_legend(vl_svg *g, const layout *L)
{
    static const char *const name[] = {"forward", "backward", "recompute", "communication",
                                       "idle"};
    static const char *const col[] = {COL_F, COL_B, COL_R, COL_COMM, COL_IDLE};
    double x = L->left;

    for (size_t i = 0; i < 5; i++) {
        vl_svg_rect(g, x, 36, 12, 12, col[i], "legend", NULL);
        vl_svg_text(g, x + 16, 46, 12, "start", COL_TEXT, name[i]);
        x += 30 + 8.0 * (double)strlen(name[i]);
    }
}

/* Ticks at 1, 2 or 5 × 10^k units, about eight of them. */
static void draw_axis(vl_svg *g, const layout *L, double span, double y)
{
    double range = span / L->unit, raw = range / 8.0, mag, step;
    char lab[48];

    if (!(raw > 0.0))
        raw = 1.0;
    mag = pow(10.0, floor(log10(raw)));
    step = raw / mag < 1.5   ? mag
           : raw / mag < 3.5 ? 2 * mag
           : raw / mag < 7.5 ? 5 * mag
                             : 10 * mag;
    vl_svg_line(g, L->left, y, tx(L, span), y, COL_TEXT, 1);
    for (int i = 0; i * step <= range * (1 + 1e-9); i++) {
        double x = tx(L, i * step * L->unit);
        vl_svg_line(g, x, y, x, y + 5, COL_TEXT, 1);
        snprintf(lab, sizeof lab, "%g", i * step);
        vl_svg_text(g, x, y + 18, 11, "middle", COL_TEXT, lab);
    }
    snprintf(lab, sizeof lab, "time (%s)", L->uname);
    vl_svg_text(g, (L->left + tx(L, span)) / 2, y + 36, 12, "middle", COL_TEXT, lab);
}

static void draw_lane(vl_svg *g, const layout *L, const vl_sim_trace *t, size_t l)
{
    const vl_sim_lane *ln = &t->lanes[l];
    double y = lane_y(L, t, l), peak = ln->act_peak + ln->states;
    char tip[256], lab[32];

    snprintf(tip, sizeof tip,
             "rank %u stage %u: %d layers, busy %.1f %s (%.1f%% of the "
             "iteration), peak memory %.2f GiB of %.2f GiB%s",
             ln->rank, ln->stage, ln->layers, ln->busy / L->unit, L->uname,
             t->iter_time > 0 ? 100.0 * ln->busy / t->iter_time : 0.0, peak / 1073741824.0,
             t->capacity / 1073741824.0, peak > t->capacity ? " (out of memory)" : "");
    vl_svg_rect(g, L->left, y, tx(L, t->iter_time) - L->left, L->lane_h - 1,
                peak > t->capacity ? "#f4c7c7" : COL_IDLE, "lane", tip);
    if (L->lane_h >= 7) {
        snprintf(lab, sizeof lab, "r%u s%u", ln->rank, ln->stage);
        vl_svg_text(g, L->left - 6, y + L->lane_h * 0.72, fmin(11, L->lane_h * 0.8), "end",
                    COL_TEXT, lab);
    } else if (ln->stage == 0 && ln->rank % 2 == 0) { /* thin lanes: every other rank */
        snprintf(lab, sizeof lab, "rank %u", ln->rank);
        vl_svg_text(g, L->left - 6, y + 8, 9, "end", COL_TEXT, lab);
    }
}

/* One segment of a task: [a, b) seconds on lane y in colour col; a task's last
 * segment stops short of its end so that back-to-back tasks stay distinguishable. */
static void seg(vl_svg *g, const layout *L, double y, double a, double b, const char *col,
                bool last, const char *tip)
{
    double w = (b - a) * L->xs;

    if (b <= a)
        return;
    if (last)
        w -= fmin(0.8, w / 4);
    vl_svg_rect(g, tx(L, a), y + L->pad, w, L->lane_h - 1 - 2 * L->pad, col, "task", tip);
}

static void task_tip(char *tip, size_t n, const layout *L, const vl_sim_task *k)
{
    static const char *const what[] = {"forward", "recompute", "backward", "receive"};
    double a = k->start / L->unit, b = k->end / L->unit;

    if (k->kind == VL_TASK_SYNC)
        snprintf(tip, n, "gradient sync, rank %u stage %u: %.4g-%.4g %s", k->rank, k->stage, a,
                 b, L->uname);
    else
        snprintf(tip, n, "%s of micro-batch %u, rank %u stage %u: %.4g-%.4g %s", what[k->kind],
                 k->mb, k->rank, k->stage, a, b, L->uname);
}

static void draw_task(vl_svg *g, const layout *L, const vl_sim_task *k, double y)
{
    char tip[160], lab[16];
    double cut = k->end - k->comm, rc = k->start + k->recompute;

    task_tip(tip, sizeof tip, L, k);
    if (k->kind == VL_TASK_P2P) { /* a thin strip: transfers occupy no compute */
        vl_svg_rect(g, tx(L, k->start), y + L->lane_h - 4, (k->end - k->start) * L->xs, 2,
                    COL_COMM, "p2p", tip);
        return;
    }
    if (k->kind == VL_TASK_SYNC || k->kind == VL_TASK_R) {
        seg(g, L, y, k->start, k->end, k->kind == VL_TASK_R ? COL_R : COL_COMM, true, tip);
        return;
    }
    seg(g, L, y, k->start, rc, COL_R, rc >= k->end, tip);
    seg(g, L, y, rc, cut, k->kind == VL_TASK_F ? COL_F : COL_B, cut >= k->end, tip);
    seg(g, L, y, cut, k->end, COL_COMM, true, tip);
    if ((k->end - k->start) * L->xs >= 14 && L->lane_h >= 10) {
        snprintf(lab, sizeof lab, "%u", k->mb);
        vl_svg_text(g, tx(L, (k->start + k->end) / 2), y + L->lane_h * 0.68, L->lane_h * 0.55,
                    "middle", "#ffffff", lab);
    }
}

vl_status vl_svg_gantt(const vl_sim_trace *t, const char *title, char **out, vl_err *err)
{
    vl_svg g;
    layout L;
    size_t l = 0;

    plan_layout(&L, t);
    vl_svg_begin(&g, L.w, L.h);
    vl_svg_text(&g, L.left, 22, 14, "start", COL_TEXT, title ? title : "");
    draw_legend(&g, &L);
    for (size_t i = 0; i < t->nlanes; i++)
        draw_lane(&g, &L, t, i);
    /* tasks of one lane are contiguous in the trace except transfers and syncs, so
     * look the lane up by (rank, stage) with a moving cursor */
    for (size_t i = 0; i < t->ntasks; i++) {
        const vl_sim_task *k = &t->tasks[i];
        if (l + 1 < t->nlanes &&
            (t->lanes[l].rank != k->rank || t->lanes[l].stage != k->stage))
            l++;
        if (l >= t->nlanes || t->lanes[l].rank != k->rank || t->lanes[l].stage != k->stage)
            for (l = 0; l < t->nlanes; l++)
                if (t->lanes[l].rank == k->rank && t->lanes[l].stage == k->stage)
                    break;
        if (l < t->nlanes)
            draw_task(&g, &L, k, lane_y(&L, t, l));
    }
    draw_axis(&g, &L, t->iter_time > 0 ? t->iter_time : 1.0, L.h - 50);
    return vl_svg_finish(&g, out, err);
}

vl_status vl_sim_svg(const vl_plan *p, size_t it, const vl_cost *c, const vl_sim_opts *o,
                     char **svg, vl_err *err)
{
    vl_sim_trace t = {0};
    vl_sim_iter_result r;
    char title[256];
    vl_status st = vl_sim_iter(p, it, c, o, &r, NULL, &t, err);

    if (st == VL_OK) {
        snprintf(title, sizeof title,
                 "%s: iteration %zu (epoch %u), %.1f ms, bubble "
                 "%.1f%%, peak %.2f GiB%s",
                 p->strategy[0] ? p->strategy : "plan", (size_t)p->iter_base + it,
                 p->iters[it].epoch, r.iter_time_ms, 100.0 * r.bubble, r.peak_mem_gib,
                 r.oom ? ", OUT OF MEMORY" : "");
        st = vl_svg_gantt(&t, title, svg, err);
    }
    vl_sim_trace_free(&t);
    return st;
}
