/* plans/slimpack/slimpack_work.c -- slice work and the closed-form cut (docs/slimpack.md
 * §2.1): the work of tokens [a, b) of a sample is alpha·P + beta·T with P = (b(b+1) −
 * a(a+1))/2 causal pairs and T = b − a tokens, forward and backward separately; the
 * token where a slice reaches a work target is the root of that quadratic.  Also the
 * packing container and the factors list. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "slimpack_impl.h"

/* ---- coefficients ------------------------------------------------------------------- */

/* A measured scheme row: a·(e² − o²) + b·(e − o) ms per stage, forward 1/(1 + bwd_attn)
 * of the quadratic part and 1/(1 + bwd_linear) of the rest; e² − o² = 2P − T.  A row of
 * compute alone (comm: analytic) gets its scheme's analytic communication per token
 * added, as a whole-time row holds it in b (cm: zero for those). */
static sp_coef scheme_coef(const vl_cost_cfg *k, const vl_scheme *sc, vl_comm_line cm)
{
    double fa = 1 / (1 + k->bwd_attn), fl = 1 / (1 + k->bwd_linear);
    sp_coef w;

    w.af = 2 * sc->a * fa;
    w.bf = sc->b * fl - sc->a * fa + cm.bf;
    w.ab = 2 * sc->a * (1 - fa);
    w.bb = sc->b * (1 - fl) - sc->a * (1 - fa) + cm.bb;
    return w;
}

sp_coef vl__sp_coef(const vl_cost *c, const vl_par *par, uint32_t ref_len)
{
    const vl_config *cfg = c->cfg;
    const vl_cost_cfg *k = &cfg->cost;
    const vl_scheme *sc = vl_cost_scheme(c, par);
    double L = cfg->model.layers, x = ref_len > 0 ? ref_len : 4096;
    sp_coef w;

    if (sc)
        return scheme_coef(k, sc, vl_cost_scheme_comm_line(c, par, (uint32_t)x));
    if (k->fit_set) {
        w.af = k->fit_a;
        w.bf = k->fit_b;
        w.ab = k->bwd_attn * k->fit_a;
        w.bb = k->bwd_linear * k->fit_b;
        return w;
    }
    /* analytic: FLOPs over the efficiency a slice of ref_len tokens reaches */
    const vl_cluster_cfg *cl = &cfg->cluster;
    double eg = vl_curve_eval(&cl->gemm_eff, x, VL_WORK_LINEAR);
    double ef = vl_curve_eval(&cl->attn_fwd_eff, x, VL_WORK_QUADRATIC);
    double eb = vl_curve_eval(&cl->attn_bwd_eff, x, VL_WORK_QUADRATIC);
    w.af = c->acoef * L / (c->peak * ef);
    w.bf = (c->lin * L * (1 + cl->elementwise_overhead) + c->head) / (c->peak * eg);
    w.ab = k->bwd_attn * c->acoef * L / (c->peak * eb);
    w.bb = k->bwd_linear * w.bf;
    return w;
}

/* ---- work and cuts -------------------------------------------------------------------- */

/* The real x >= 0 with work(0, x) = K: (alpha/2) x² + (alpha/2 + beta) x = K, in the
 * form without cancellation. */
static double root(double alpha, double beta, double K)
{
    double B = alpha / 2 + beta;

    if (K <= 0)
        return 0;
    if (alpha <= 0)
        return beta > 0 ? K / beta : INFINITY;
    return 2 * K / (B + sqrt(B * B + 2 * alpha * K));
}

/* Of the aligned tokens around x within [lo, hi], the one whose err() is smallest (ties
 * to the lower). */
typedef struct cut_ctx {
    double alpha, beta, target;
    uint32_t anchor; /* the fixed end of the slice */
    bool fwd;        /* slice [anchor, x) or [x, anchor) */
} cut_ctx;

static double cut_err(const cut_ctx *k, uint32_t x)
{
    double w = k->fwd ? vl__sp_work(k->alpha, k->beta, k->anchor, x)
                      : vl__sp_work(k->alpha, k->beta, x, k->anchor);
    return fabs(w - k->target);
}

static uint32_t nearest_aligned(const cut_ctx *k, double x, uint32_t lo, uint32_t hi,
                                uint32_t align)
{
    uint32_t al = align ? align : 1, c[4];
    double fl = floor(x / al) * al;
    uint32_t best = lo;
    double best_err = INFINITY;

    c[0] = fl <= lo ? lo : fl >= hi ? hi : (uint32_t)fl;
    c[1] = fl + al <= lo ? lo : fl + al >= hi ? hi : (uint32_t)(fl + al);
    c[2] = hi; /* the ends are always boundaries, aligned or not */
    c[3] = lo;
    for (int i = 0; i < 4; i++) {
        double e = cut_err(k, c[i]);
        if (e < best_err || (e == best_err && c[i] < best)) {
            best = c[i];
            best_err = e;
        }
    }
    return best;
}

uint32_t vl__sp_cut_fwd(double alpha, double beta, uint32_t a, uint32_t end, double target,
                        uint32_t align)
{
    cut_ctx k = {alpha, beta, target, a, true};
    double x = root(alpha, beta, vl__sp_work(alpha, beta, 0, a) + target);

    return nearest_aligned(&k, x, a, end, align);
}

uint32_t vl__sp_cut_bwd(double alpha, double beta, uint32_t lo, uint32_t b, double target,
                        uint32_t align)
{
    cut_ctx k = {alpha, beta, target, b, false};
    double x = root(alpha, beta, vl__sp_work(alpha, beta, 0, b) - target);
    return nearest_aligned(&k, x, lo, b, align);
}

/* ---- factors ---------------------------------------------------------------------------- */

vl_status vl__sp_parse_factors(const char *text, double *out, uint32_t *n, vl_err *err)
{
    const char *s = text;

    *n = 0;
    while (*s) {
        char *end;
        double f = strtod(s, &end);
        if (end == s || !(f > 0) || f > 1e6)
            return vl_seterr(err, VL_ECONFIG,
                             "slimpack.factors: \"%s\" is not a comma list "
                             "of positive numbers",
                             text);
        if (*n == SP_MAX_FACTORS)
            return vl_seterr(err, VL_ECONFIG, "slimpack.factors: more than %d factors",
                             SP_MAX_FACTORS);
        out[(*n)++] = f;
        s = end;
        while (*s == ' ')
            s++;
        if (*s == ',')
            s++;
        else if (*s)
            return vl_seterr(err, VL_ECONFIG,
                             "slimpack.factors: \"%s\" is not a comma list "
                             "of positive numbers",
                             text);
    }
    if (*n == 0)
        return vl_seterr(err, VL_ECONFIG, "slimpack.factors: empty");
    return VL_OK;
}

/* ---- packing container ------------------------------------------------------------------ */

void vl__sp_packing_reset(sp_packing *p)
{
    p->nsegs = 0;
    p->npacks = 0;
    if (p->start)
        p->start[0] = 0;
}

void vl__sp_packing_free(sp_packing *p)
{
    free(p->segs);
    free(p->start);
    memset(p, 0, sizeof *p);
}

vl_status vl__sp_packing_add(sp_packing *pk, const vl_seg *s, vl_err *err)
{
    vl_status st = vl_grow(&pk->segs, &pk->segs_cap, pk->nsegs + 1, sizeof *pk->segs, err);

    if (st == VL_OK)
        pk->segs[pk->nsegs++] = *s;
    return st;
}

/* Close the open pack: segments since the last close. */
vl_status vl__sp_packing_close(sp_packing *pk, vl_err *err)
{
    vl_status st = vl_grow(&pk->start, &pk->start_cap, pk->npacks + 2, sizeof *pk->start, err);

    if (st != VL_OK)
        return st;
    if (pk->npacks == 0)
        pk->start[0] = 0;
    pk->start[++pk->npacks] = (uint32_t)pk->nsegs;
    return VL_OK;
}

void vl__sp_packing_truncate(sp_packing *pk, size_t p0)
{
    if (pk->npacks > p0) {
        pk->npacks = p0;
        pk->nsegs = p0 ? pk->start[p0] : 0;
    }
}

vl_status vl__sp_packing_append(sp_packing *dst, const sp_packing *src, size_t p0, vl_err *err)
{
    vl_status st = VL_OK;

    for (size_t p = p0; p < src->npacks && st == VL_OK; p++) {
        for (uint32_t j = src->start[p]; j < src->start[p + 1] && st == VL_OK; j++)
            st = vl__sp_packing_add(dst, &src->segs[j], err);
        if (st == VL_OK)
            st = vl__sp_packing_close(dst, err);
    }
    return st;
}
