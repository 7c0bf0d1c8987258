/* plans/hydraulis/hydraulis_scheme.c -- the parallel schemes <tp, pp> of Hydraulis
 * pipelines: their latency T(l) = a·l² + b·l + c (cost.schemes rows, or a least-squares
 * fit to the analytic cost model), MaxLen from the project's own memory model (App. B.1:
 * 1F1B in flight, fp32 optimizer share spread over every GPU), and UtilLen (App. C);
 * the homogeneous scheme and the largest MaxLen a plan may use (its length limit). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "hydraulis_impl.h"

/* ---- memory: MaxLen ---- */

double vl__hy_peak_bytes(const vl_cost *c, int tp, int pp, int world, uint64_t tokens)
{
    vl_par par = {.tp = tp, .pp = pp, .sp = 1, .ckpt_layers = 0};
    double peak = 0;

    /* stage s of 1F1B holds pp - s micro-batches in flight (the simulator's timeline) */
    for (int s = 0; s < pp; s++) {
        int layers = vl_cost_stage_layers(c, pp, s), last = s == pp - 1;
        double m = vl_cost_state_bytes_world(c, &par, layers, s == 0, last, world) +
                   (double)(pp - s) * vl_cost_act_bytes(c, tokens, &par, layers, last);
        peak = fmax(peak, m);
    }
    return peak;
}

uint32_t vl__hy_maxlen(const vl_cost *c, int tp, int pp, int world)
{
    double cap = vl_cost_mem_capacity(c);
    double fixed = vl__hy_peak_bytes(c, tp, pp, world, 0);
    double per = vl__hy_peak_bytes(c, tp, pp, world, 1 << 20) - fixed;
    double guess = per > 0 ? (cap - fixed) / per * (1 << 20) : 0;
    uint64_t m;

    if (!(guess >= HY_ALIGN))
        guess = 0;
    if (guess > (double)(1u << 30))
        guess = (double)(1u << 30);
    /* the linear guess, then exact steps: the answer is what the model itself says */
    m = (uint64_t)guess / HY_ALIGN * HY_ALIGN;
    while (m > 0 && vl__hy_peak_bytes(c, tp, pp, world, m) > cap)
        m -= HY_ALIGN;
    while (m + HY_ALIGN <= (1u << 30) &&
           vl__hy_peak_bytes(c, tp, pp, world, m + HY_ALIGN) <= cap)
        m += HY_ALIGN;
    return (uint32_t)m;
}

/* ---- latency: least-squares fit ---- */

/* Solve the k x k system A x = y (Gaussian elimination, partial pivoting); false when
 * singular. */
static bool solve(double A[3][3], double y[3], int k, double x[3])
{
    for (int i = 0; i < k; i++) {
        int p = i;
        for (int r = i + 1; r < k; r++)
            if (fabs(A[r][i]) > fabs(A[p][i]))
                p = r;
        if (fabs(A[p][i]) < 1e-300)
            return false;
        for (int j = 0; j < k; j++) {
            double t = A[i][j];
            A[i][j] = A[p][j];
            A[p][j] = t;
        }
        double t = y[i];
        y[i] = y[p];
        y[p] = t;
        for (int r = i + 1; r < k; r++) {
            double f = A[r][i] / A[i][i];
            for (int j = i; j < k; j++)
                A[r][j] -= f * A[i][j];
            y[r] -= f * y[i];
        }
    }
    for (int i = k - 1; i >= 0; i--) {
        double s = y[i];
        for (int j = i + 1; j < k; j++)
            s -= A[i][j] * x[j];
        x[i] = s / A[i][i];
    }
    return true;
}

#define FIT_POINTS 24

/* Fit the basis terms on (mask bit 0: u², 1: u, 2: 1) to y by relative least squares. */
static void fit_masked(const double *u, const double *y, int n, unsigned mask, double coef[3])
{
    double A[3][3] = {{0}}, r[3] = {0}, x[3] = {0};
    int map[3], k = 0;

    for (int j = 0; j < 3; j++)
        if (mask >> j & 1)
            map[k++] = j;
    for (int i = 0; i < n; i++) {
        double f[3] = {u[i] * u[i] / y[i], u[i] / y[i], 1 / y[i]};
        for (int p = 0; p < k; p++) {
            for (int q = 0; q < k; q++)
                A[p][q] += f[map[p]] * f[map[q]];
            r[p] += f[map[p]];
        }
    }
    coef[0] = coef[1] = coef[2] = 0;
    if (k > 0 && solve(A, r, k, x))
        for (int p = 0; p < k; p++)
            coef[map[p]] = x[p];
}

/* Forward + backward of one sequence on the slower of the first and last stages, ms. */
static double stage_ms(const vl_cost *c, int tp, int pp, uint32_t l)
{
    vl_par par = {.tp = tp, .pp = pp, .sp = 1, .ckpt_layers = 0};
    vl_seg seg = {.sample = 0, .off = 0, .len = l};
    vl_mb_time f = vl_cost_mb_time(c, &seg, 1, &par, vl_cost_stage_layers(c, pp, 0), pp == 1);
    double ms = f.fwd + f.bwd;

    if (pp > 1) {
        vl_mb_time g =
            vl_cost_mb_time(c, &seg, 1, &par, vl_cost_stage_layers(c, pp, pp - 1), 1);
        ms = fmax(ms, g.fwd + g.bwd);
    }
    return ms * 1e3;
}

void vl__hy_fit(const vl_cost *c, int tp, int pp, uint32_t upto, double *a, double *b,
                double *cc)
{
    double u[FIT_POINTS], y[FIT_POINTS], coef[3];
    double top = upto > HY_ALIGN ? upto : 2 * HY_ALIGN;
    unsigned mask = 7;
    int n = 0;

    for (int i = 0; i < FIT_POINTS; i++) { /* geometric from 128 to `upto` */
        double l = HY_ALIGN * pow(top / HY_ALIGN, (double)i / (FIT_POINTS - 1));
        uint32_t li = (uint32_t)llround(l);
        double ms = stage_ms(c, tp, pp, li);
        if (ms > 0) {
            u[n] = li / top;
            y[n++] = ms;
        }
    }
    /* negative terms are dropped and the rest refitted: T must stay increasing */
    for (;;) {
        fit_masked(u, y, n, mask, coef);
        int neg = -1;
        for (int j = 0; j < 3; j++)
            if ((mask >> j & 1) && coef[j] < 0 && (neg < 0 || coef[j] < coef[neg]))
                neg = j;
        if (neg < 0 || mask == 0)
            break;
        mask &= ~(1u << neg);
    }
    *a = coef[0] / (top * top);
    *b = coef[1] / top;
    *cc = coef[2];
}

/* ---- UtilLen ---- */

uint32_t vl__hy_utillen(const vl_config *cfg, int tp, bool table)
{
    const vl_curve *g = &cfg->cluster.gemm_eff;
    double best = 0;

    if (table) { /* the authors' planner: {1: 384, 2: 512, 4: 768, 8: 1024, 16: 1280} */
        static const uint32_t by_tp[] = {384, 512, 768, 1024, 1280};
        int k = 0;
        while ((1 << k) < tp && k < 4)
            k++;
        return by_tp[k];
    }
    for (int i = 0; i < g->n; i++)
        best = fmax(best, g->y[i]);
    for (uint32_t l = HY_ALIGN; l < (1u << 24); l += HY_ALIGN)
        if (g->n == 0 || vl_curve_eval(g, l, VL_WORK_LINEAR) >= 0.85 * best)
            return l;
    return 1u << 24;
}

/* ---- the scheme space ---- */

void vl__hy_schemes_free(hy_schemes *s)
{
    free(s->s);
    *s = (hy_schemes){0};
}

int vl__hy_scheme_find(const hy_schemes *s, int tp, int pp)
{
    for (size_t i = 0; i < s->n; i++)
        if (s->s[i].tp == tp && s->s[i].pp == pp)
            return (int)i;
    return -1;
}

static bool usable(const vl_config *cfg, int tp, int pp)
{
    const vl_model_cfg *m = &cfg->model;

    return tp >= 1 && tp <= 16 && (tp & (tp - 1)) == 0 && m->heads % tp == 0 && pp >= 1 &&
           m->layers % pp == 0 && (long)tp * pp <= cfg->cluster.gpus;
}

static vl_status add(hy_schemes *out, const vl_cost *c, int tp, int pp, const vl_scheme *row,
                     vl_err *err)
{
    const vl_config *cfg = c->cfg;
    hy_scheme s = {.tp = tp, .pp = pp, .measured = row != NULL};
    vl_status st;

    s.maxlen = vl__hy_maxlen(c, tp, pp, cfg->cluster.gpus);
    if (s.maxlen < HY_ALIGN || vl__hy_scheme_find(out, tp, pp) >= 0)
        return VL_OK;
    if (row) { /* plus the TP communication a comm-analytic row leaves out */
        vl_par par = {.tp = tp, .pp = pp, .sp = 1, .ckpt_layers = 0};
        vl_comm_line cm = vl_cost_scheme_comm_line(c, &par, cfg->training.max_seq_len);
        s.a = row->a;
        s.b = row->b + cm.bf + cm.bb;
        s.c = row->c + cm.cf + cm.cb;
    } else {
        uint32_t upto =
            s.maxlen < cfg->training.max_seq_len ? s.maxlen : cfg->training.max_seq_len;
        vl__hy_fit(c, tp, pp, upto, &s.a, &s.b, &s.c);
    }
    s.utillen = vl__hy_utillen(cfg, tp, row != NULL);
    if ((st = vl_grow(&out->s, &out->cap, out->n + 1, sizeof *out->s, err)) != VL_OK)
        return st;
    out->s[out->n++] = s;
    return VL_OK;
}

vl_status vl__hy_schemes(hy_schemes *out, const vl_cost *c, vl_err *err)
{
    const vl_config *cfg = c->cfg;
    const vl_cost_cfg *k = &cfg->cost;
    vl_status st = VL_OK;

    *out = (hy_schemes){0};
    if (k->nschemes > 0) { /* measured rows, in table order */
        for (int i = 0; i < k->nschemes && st == VL_OK; i++) {
            const vl_scheme *r = &k->schemes[i];
            if (r->sp == 1 && usable(cfg, r->tp, r->pp))
                st = add(out, c, r->tp, r->pp, r, err);
        }
        return st;
    }
    for (int tp = 1; tp <= 16 && st == VL_OK; tp *= 2)
        for (int pp = 1; pp <= cfg->model.layers && st == VL_OK; pp++)
            if (usable(cfg, tp, pp))
                st = add(out, c, tp, pp, NULL, err);
    return st;
}

/* The homogeneous scheme: <training.tp, training.pp> when usable, else the one holding
 * the longest micro-batch (ties: fewer GPUs, then table order). */
int vl__hy_homo_scheme(const hy_schemes *sch, const vl_config *cfg)
{
    int pp = cfg->training.pp > 1 ? cfg->training.pp : 1;
    int k = vl__hy_scheme_find(sch, cfg->training.tp, pp);

    for (size_t i = 0; k < 0 && i < sch->n; i++) {
        const hy_scheme *a = &sch->s[i];
        if (i == 0 || a->maxlen > sch->s[k].maxlen ||
            (a->maxlen == sch->s[k].maxlen && a->tp * a->pp < sch->s[k].tp * sch->s[k].pp))
            k = (int)i;
    }
    return k;
}

/* The largest MaxLen among the pipelines a plan under opts may use: the homogeneous
 * scheme's, and every scheme's (proposed candidates) or the given candidates'; 0 when
 * no scheme is usable. */
uint32_t vl__hy_largest_maxlen(const hy_opts *o, const vl_config *cfg)
{
    uint32_t best = 0;
    int k;
    hy_schemes sch;
    hy_cands given = {0};
    vl_cost c;
    vl_err err;

    if (vl_cost_init(&c, cfg, &err) != VL_OK || vl__hy_schemes(&sch, &c, &err) != VL_OK)
        return 0;
    if ((k = vl__hy_homo_scheme(&sch, cfg)) >= 0)
        best = sch.s[k].maxlen;
    if (o->mode != HY_HOMO && strcmp(o->candidates, "auto") == 0) {
        for (size_t i = 0; i < sch.n; i++)
            best = sch.s[i].maxlen > best ? sch.s[i].maxlen : best;
    } else if (o->mode != HY_HOMO && vl__hy_parse_cands(&given, o->candidates, &sch,
                                                        cfg->cluster.gpus, &err) == VL_OK) {
        for (size_t i = 0; i < given.n; i++)
            best = given.c[i].maxlen > best ? given.c[i].maxlen : best;
    }
    vl__hy_cands_free(&given);
    vl__hy_schemes_free(&sch);
    return best;
}
