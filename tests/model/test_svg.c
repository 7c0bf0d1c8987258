/* tests/model/test_svg.c -- the SVG writer and the simulator's Gantt chart: well-formed XML
 * (balanced tags, escaped text and entities), one lane per (rank, stage), every shape
 * inside the canvas, legend and axis present.  A small checker, no XML library. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cost.h"
#include "plan.h"
#include "sim.h"
#include "svg.h"

typedef struct xml_stats {
    int elements, lanes, tasks;
    double w, h;          /* from the root element */
} xml_stats;

static double attr(const char *tag, const char *end, const char *name, bool *found)
{
    char key[32];
    snprintf(key, sizeof key, " %s=\"", name);
    const char *a = strstr(tag, key);
    *found = a != NULL && a < end;
    return *found ? strtod(a + strlen(key), NULL) : 0.0;
}

/* Every coordinate attribute of one element within [0, w] × [0, h]. */
static void check_geometry(const char *tag, const char *end, const xml_stats *st)
{
    static const char *const xs[] = {"x", "x1", "x2"}, *const ys[] = {"y", "y1", "y2"};
    bool fx, fy, fw, fh;
    for (int i = 0; i < 3; i++) {
        double x = attr(tag, end, xs[i], &fx), y = attr(tag, end, ys[i], &fy);
        cr_assert(!fx || (x >= 0 && x <= st->w), "%s=%g outside: %.80s", xs[i], x, tag);
        cr_assert(!fy || (y >= 0 && y <= st->h), "%s=%g outside: %.80s", ys[i], y, tag);
    }
    double x = attr(tag, end, "x", &fx), w = attr(tag, end, "width", &fw);
    double y = attr(tag, end, "y", &fy), h = attr(tag, end, "height", &fh);
    if (strncmp(tag, "<rect", 5) == 0) {
        cr_assert(fx && fw && fy && fh);
        cr_assert(w > 0 && x + w <= st->w + 1e-6, "rect beyond width: %.100s", tag);
        cr_assert(h > 0 && y + h <= st->h + 1e-6, "rect beyond height: %.100s", tag);
    }
}

static void check_entities(const char *s, const char *end)
{
    static const char *const ent[] = {"&amp;", "&lt;", "&gt;", "&quot;", "&apos;"};
    for (; s < end; s++) {
        if (*s != '&')
            continue;
        bool ok = false;
        for (int i = 0; i < 5 && !ok; i++)
            ok = strncmp(s, ent[i], strlen(ent[i])) == 0;
        cr_assert(ok, "bare &: %.20s", s);
    }
}

static void open_tag(const char *p, const char *gt, char stack[][16], int *depth,
                     xml_stats *st)
{
    char name[16];
    size_t n = strcspn(p + 1, " />\n");
    cr_assert(n > 0 && n < sizeof name, "bad tag: %.30s", p);
    memcpy(name, p + 1, n);
    name[n] = '\0';
    if (strcmp(name, "svg") == 0) {
        bool f;
        st->w = attr(p, gt, "width", &f);
        st->h = attr(p, gt, "height", &f);
    } else {
        check_geometry(p, gt, st);
    }
    check_entities(p, gt);
    st->elements++;
    st->lanes += strstr(p, "class=\"lane\"") && strstr(p, "class=\"lane\"") < gt;
    st->tasks += strstr(p, "class=\"task\"") && strstr(p, "class=\"task\"") < gt;
    if (gt[-1] != '/') {
        cr_assert(*depth < 64);
        strcpy(stack[(*depth)++], name);
    }
}

/* Balanced tags, one root, entities only where escaping requires them. */
static xml_stats check_xml(const char *doc)
{
    char stack[64][16];
    int depth = 0, roots = 0;
    xml_stats st = {0};
    const char *p = doc;

    cr_assert(strncmp(doc, "<?xml", 5) == 0);
    while ((p = strchr(p, '<')) != NULL) {
        const char *gt = strchr(p, '>');
        cr_assert(gt != NULL, "unterminated tag");
        if (p[1] == '?') {
            p = gt + 1;
            continue;
        }
        if (p[1] == '/') {
            size_t n = (size_t)(gt - p - 2);
            cr_assert(depth > 0, "close without open");
            depth--;
            cr_assert(strlen(stack[depth]) == n && strncmp(stack[depth], p + 2, n) == 0,
                      "</%.*s> closes <%s>", (int)n, p + 2, stack[depth]);
        } else {
            roots += depth == 0;
            open_tag(p, gt, stack, &depth, &st);
        }
        const char *next = strchr(gt + 1, '<');
        check_entities(gt + 1, next ? next : gt + 1 + strlen(gt + 1));
        cr_assert(next == NULL || memchr(gt + 1, '>', (size_t)(next - gt - 1)) == NULL,
                  "raw > in text");
        p = gt + 1;
    }
    cr_assert_eq(depth, 0, "unclosed <%s>", depth ? stack[depth - 1] : "");
    cr_assert_eq(roots, 1);
    return st;
}

static void lin_config(vl_config *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    cfg->model = (vl_model_cfg){.layers = 4, .hidden = 4096, .ffn = 14336, .ffn_mats = 3,
                                .heads = 32, .kv_heads = 8, .head_dim = 128, .vocab = 128256};
    strcpy(cfg->model.preset, "custom");
    strcpy(cfg->cluster.gpu, "custom");
    cfg->cluster.gpus = 8;
    cfg->cluster.gpus_per_node = 8;
    cfg->cluster.peak_tflops = 989;
    cfg->cluster.mem_gib = 80;
    cfg->cluster.hbm_gbs = 3350;
    vl_curve one = {.n = 1, .x = {1}, .y = {0.5}};
    cfg->cluster.gemm_eff = cfg->cluster.attn_fwd_eff = cfg->cluster.attn_bwd_eff = one;
    cfg->cluster.net = (vl_net_cfg){370, 450, 370, 15, 8, 46, 8, 30, 15};
    cfg->training = (vl_training_cfg){.dp = 2, .tp = 1, .pp = 4, .sp = 1, .epochs = 1,
                                      .max_seq_len = 8192, .act_mem_factor = 1.0,
                                      .grad_bytes = 4};
    cfg->cost = (vl_cost_cfg){.fit_set = true, .fit_b = 1e-3, .bwd_linear = 2.0,
                              .bwd_attn = 2.5};
}

/* Two ranks of 4 stages: ChunkFlow's 4, 1, 2, 1 and an explicit order with a
 * recompute, under a strategy name that needs escaping. */
static void build(vl_plan *p, vl_manifest *m, uint32_t *len)
{
    vl_err err;
    vl_par par = {.tp = 1, .pp = 4, .sp = 1};
    static const uint32_t u[] = {4, 1, 2, 1};
    cr_assert_eq(vl_plan_init(p, m, "a<b&c\"d'e>", 0, &err), VL_OK);
    cr_assert_eq(vl_plan_iter_begin(p, 0, &err), VL_OK);
    for (int r = 0; r < 2; r++) {
        cr_assert_eq(vl_plan_rank_begin(p, r, &par, &err), VL_OK);
        for (uint32_t i = 0; i < 4; i++) {
            len[4 * r + i] = u[i];
            cr_assert_eq(vl_plan_mb_begin(p, 4, &err), VL_OK);
            cr_assert_eq(vl_plan_seg(p, 4 * (uint32_t)r + i, 0, u[i], &err), VL_OK);
        }
    }
    static const char seq[] = "FBFBFRBFB";
    static const uint32_t mb[] = {0, 0, 1, 1, 2, 2, 2, 3, 3};
    for (int i = 0; i < 9; i++)
        cr_assert_eq(vl_plan_op(p, mb[i], seq[i] == 'F' ? VL_OP_F : seq[i] == 'R' ? VL_OP_R
                                                                              : VL_OP_B,
                                &err), VL_OK);
}

Test(svg, gantt_is_well_formed_and_inside_the_canvas)
{
    vl_config cfg;
    vl_cost c;
    vl_err err;
    vl_plan p;
    uint32_t len[8];
    vl_manifest m = {.n = 8, .len = len};
    char *svg = NULL;

    lin_config(&cfg);
    cr_assert_eq(vl_cost_init(&c, &cfg, &err), VL_OK, "%s", err.msg);
    build(&p, &m, len);
    cr_assert_eq(vl_sim_svg(&p, 0, &c, NULL, &svg, &err), VL_OK, "%s", err.msg);
    xml_stats st = check_xml(svg);
    cr_assert_eq(st.lanes, 2 * 4);
    cr_assert_geq(st.tasks, 2 * 4 * 8);
    cr_assert_float_eq(st.w, 1200.0, 1e-9);
    cr_assert(st.h > 100.0);
    cr_assert(strstr(svg, "a&lt;b&amp;c&quot;d&apos;e&gt;") != NULL);
    cr_assert(strstr(svg, "a<b") == NULL);
    static const char *const want[] = {"forward", "backward", "recompute", "communication",
                                       "idle", "time (ms)", "r1 s3",
                                       "fill=\"#f28e2b\" class=\"task\"" /* an R */};
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
        cr_assert(strstr(svg, want[i]) != NULL, "missing %s", want[i]);
    cr_assert_str_eq(svg + strlen(svg) - 7, "</svg>\n");
    free(svg);
    vl_plan_free(&p);
}

Test(svg, writer_clips_and_escapes)
{
    vl_svg g;
    vl_err err;
    char *out = NULL;

    vl_svg_begin(&g, 100, 50);
    vl_svg_rect(&g, -10, -10, 50, 30, "#000", "a", "t<i>p");
    vl_svg_rect(&g, 90, 40, 50, 50, "#000", NULL, NULL);
    vl_svg_rect(&g, 200, 10, 5, 5, "#000", "gone", NULL);
    vl_svg_text(&g, 500, -3, 10, "end", "#000", "x & y");
    cr_assert_eq(vl_svg_finish(&g, &out, &err), VL_OK);
    check_xml(out);
    cr_assert(strstr(out, "x=\"0.00\" y=\"0.00\" width=\"40.00\" height=\"20.00\"") != NULL,
              "%s", out);
    cr_assert(strstr(out, "x=\"90.00\" y=\"40.00\" width=\"10.00\" height=\"10.00\"") != NULL);
    cr_assert(strstr(out, "gone") == NULL);
    cr_assert(strstr(out, "t&lt;i&gt;p") != NULL);
    cr_assert(strstr(out, ">x &amp; y</text>") != NULL);
    free(out);
}
