/* lib/model/calibrate.c -- least-squares fits of the cost model to timing rows
 * (calibrate.h).  Each row gives three features, one per coefficient, whose dot product
 * with (a, b, c) is the predicted time; the fit minimises the squared relative error
 * (each row divided by its measured time, so a 10 ms step weighs as much as a 10 s one)
 * with a, b, c >= 0, as cost.schemes and the config's ranges require.  With three
 * unknowns the non-negative solution is found exactly by trying every subset of them
 * (Lawson-Hanson would find the same), each solved by a QR factorisation of the
 * column-scaled matrix (modified Gram-Schmidt, twice, for stability). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "calibrate.h"
#include "grow.h"

#define NCOEF 3
/* a column whose norm after orthogonalisation falls below this share of its own norm
 * is (numerically) a combination of the others: that subset is not identifiable */
#define RANK_TOL 1e-9

static double clampd(double x, double lo, double hi)
{
    return x < lo ? lo : x > hi ? hi : x;
}

/* Features of r for a model of kind k: predicted seconds = Σ x[j]·coef[j]. */
static void features(const vl_config *cfg, vl_calib_kind k, const vl_calib_row *r, double *x)
{
    const vl_cost_cfg *cc = &cfg->cost;
    double L = r->layers, ck = clampd(r->ckpt_layers, 0, L), Q = r->sum_len2, T = r->tokens;

    if (k == VL_CALIB_SCHEMES) {
        double even = (double)cfg->model.layers / r->pp, s = L / even * 1e-3, rr = ck / L;
        double fa = 1 / (1 + cc->bwd_attn), fl = 1 / (1 + cc->bwd_linear);
        x[0] = s * Q * (1 + fa * rr);
        x[1] = s * T * (1 + fl * rr);
        x[2] = s * r->mbs * (1 + fl * rr);
    } else {
        double g = (double)r->tp * r->sp, P = (Q + T) / 2;
        double wl = L * (1 + cc->bwd_linear) + ck;
        x[0] = (L * (1 + cc->bwd_attn) + ck) * P / g;
        x[1] = wl * T / g;
        x[2] = wl * r->mbs;
    }
}

/* A scheme is its (tp, pp, sp), its kind of sp and whether its rows leave communication
 * out: a ring's share and a Ulysses share of the same sp are different work, and compute
 * alone is not the time of a scheme that communicates. */
static bool same_scheme(const vl_calib_row *r, const vl_calib_fit *f)
{
    const vl_scheme *s = &f->scheme;
    return r->tp == s->tp && r->pp == s->pp && r->sp == s->sp &&
           (r->sp == 1 || r->sp_kind == f->sp_kind) && r->comm_analytic == f->comm_analytic;
}

/* The rows a fit covers: all for LAYER, its scheme's for SCHEMES. */
static bool covers(const vl_calib_fit *f, const vl_calib_row *r)
{
    return f->kind == VL_CALIB_LAYER || same_scheme(r, f);
}

/* Least squares on the columns in mask of A (n×NCOEF, row-major, already divided by the
 * measured times) against a target of ones.  coef gets the solution (0 outside mask);
 * returns the residual sum of squares, or INFINITY when the subset is not identifiable. */
static double solve_subset(const double *A, size_t n, unsigned mask, double *coef,
                           double *work)
{
    double *q[NCOEF], R[NCOEF][NCOEF] = {{0}}, scale[NCOEF], qtb[NCOEF], rss = 0;
    int cols[NCOEF], m = 0;

    for (int j = 0; j < NCOEF; j++) {
        coef[j] = 0;
        if (mask & (1u << j))
            cols[m++] = j;
    }
    for (int i = 0; i < m; i++) {
        double norm = 0;
        q[i] = work + (size_t)i * n;
        for (size_t r = 0; r < n; r++)
            norm += A[r * NCOEF + cols[i]] * A[r * NCOEF + cols[i]];
        scale[i] = sqrt(norm);
        if (!(scale[i] > 0))
            return INFINITY;
        for (size_t r = 0; r < n; r++)
            q[i][r] = A[r * NCOEF + cols[i]] / scale[i];
        for (int pass = 0; pass < 2; pass++)
            for (int k = 0; k < i; k++) {
                double d = 0;
                for (size_t r = 0; r < n; r++)
                    d += q[k][r] * q[i][r];
                R[k][i] += d;
                for (size_t r = 0; r < n; r++)
                    q[i][r] -= d * q[k][r];
            }
        norm = 0;
        for (size_t r = 0; r < n; r++)
            norm += q[i][r] * q[i][r];
        R[i][i] = sqrt(norm);
        if (R[i][i] < RANK_TOL)
            return INFINITY;
        for (size_t r = 0; r < n; r++)
            q[i][r] /= R[i][i];
    }
    for (int i = 0; i < m; i++) {
        qtb[i] = 0;
        for (size_t r = 0; r < n; r++)
            qtb[i] += q[i][r];
    }
    for (int i = m - 1; i >= 0; i--) { /* R z = Qᵀb, then coef = z / scale */
        double z = qtb[i];
        for (int k = i + 1; k < m; k++)
            z -= R[i][k] * coef[cols[k]] * scale[k];
        coef[cols[i]] = z / R[i][i] / scale[i];
    }
    for (size_t r = 0; r < n; r++) {
        double pred = 0;
        for (int j = 0; j < NCOEF; j++)
            pred += A[r * NCOEF + j] * coef[j];
        rss += (pred - 1) * (pred - 1);
    }
    return rss;
}

/* The non-negative least-squares fit over every subset: the fullest subset wins ties. */
static vl_status fit_group(const double *A, size_t n, double *coef, unsigned *zeroed,
                           double *work)
{
    double best = INFINITY, c[NCOEF];
    unsigned best_mask = 0;

    for (unsigned mask = 7; mask >= 1; mask--) {
        double rss = solve_subset(A, n, mask, c, work);
        bool ok = isfinite(rss);
        for (int j = 0; ok && j < NCOEF; j++)
            ok = c[j] >= 0;
        if (ok && rss < best * (1 - 1e-12)) {
            best = rss;
            best_mask = mask;
            memcpy(coef, c, sizeof c);
        }
    }
    *zeroed = ~best_mask & 7u;
    return best_mask ? VL_OK : VL_EDATA;
}

double vl_calib_predict(const vl_calib_fit *fits, size_t nfits, const vl_config *cfg,
                        const vl_calib_row *r)
{
    for (size_t i = 0; i < nfits; i++) {
        const vl_calib_fit *f = &fits[i];
        double x[NCOEF];
        if (!covers(f, r))
            continue;
        features(cfg, f->kind, r, x);
        return x[0] * f->scheme.a + x[1] * f->scheme.b + x[2] * f->scheme.c;
    }
    return NAN;
}

/* How a prediction is made for scoring: by fits, or by the cost model times a factor. */
typedef struct predictor {
    const vl_calib_fit *fits;
    size_t nfits;
    const vl_cost *c;
    const vl_config *cfg;
    double factor;
    const vl_calib_fit *only; /* score only the rows this fit covers (NULL: all) */
} predictor;

static vl_calib_err score(const predictor *p, const vl_calib_rows *set)
{
    vl_calib_err e = {0, 0, 0, 0, NULL};
    double sum = 0;

    for (size_t i = 0; i < set->n; i++) {
        const vl_calib_row *r = &set->rows[i];
        if (p->only && !covers(p->only, r))
            continue;
        double pred = p->fits ? vl_calib_predict(p->fits, p->nfits, p->cfg, r)
                              : vl_calib_predict_model(p->c, r) * p->factor;
        double rel = fabs(pred - r->seconds) / r->seconds;
        if (isnan(pred))
            continue;
        sum += rel;
        e.n++;
        if (rel > e.worst || e.n == 1) {
            e.worst = rel;
            e.worst_line = r->line;
            e.worst_file = r->file;
        }
    }
    e.mape = e.n ? sum / (double)e.n : NAN;
    return e;
}

vl_calib_err vl_calib_score(const vl_calib_fit *fits, size_t nfits, const vl_cost *c,
                            const vl_config *cfg, const vl_calib_rows *set)
{
    predictor p = {fits, nfits, c, cfg, 1.0, NULL};
    return score(&p, set);
}

vl_calib_err vl_calib_score_corrected(const vl_cost *c, double scale, const vl_calib_fit *f,
                                      const vl_calib_rows *set)
{
    double now = c->cfg->cost.compute_scale > 0 ? c->cfg->cost.compute_scale : 1.0;
    predictor p = {NULL, 0, c, c->cfg, scale / now, f};
    return score(&p, set);
}

/* Fit the rows f covers into f; A and work hold n×NCOEF doubles each. */
static vl_status fit_one(const vl_calib_rows *set, const vl_config *cfg, vl_calib_fit *f,
                         double *A, double *work, vl_err *err)
{
    size_t n = 0;
    double coef[NCOEF] = {0, 0, 0};

    for (size_t i = 0; i < set->n; i++) {
        const vl_calib_row *r = &set->rows[i];
        if (!covers(f, r))
            continue;
        features(cfg, f->kind, r, A + n * NCOEF);
        for (int j = 0; j < NCOEF; j++)
            A[n * NCOEF + j] /= r->seconds;
        n++;
    }
    if (fit_group(A, n, coef, &f->zeroed, work) != VL_OK)
        return vl_seterr(err, VL_EDATA,
                         "%s: the %zu rows of tp %d, pp %d, sp %d determine "
                         "no coefficient",
                         set->name, n, f->scheme.tp, f->scheme.pp, f->scheme.sp);
    f->scheme.a = coef[0];
    f->scheme.b = coef[1];
    f->scheme.c = coef[2];
    return VL_OK;
}

/* The distinct (tp, pp, sp) of the rows in order of first appearance, or one LAYER fit. */
static vl_status make_fits(const vl_calib_rows *set, vl_calib_kind kind, vl_calib_fit **fits,
                           size_t *nfits, vl_err *err)
{
    vl_calib_fit *f = calloc(kind == VL_CALIB_LAYER ? 1 : set->n, sizeof *f);
    size_t n = 0;

    if (!f)
        return vl_seterr(err, VL_ENOMEM, "out of memory");
    for (size_t i = 0; i < set->n; i++) {
        const vl_calib_row *r = &set->rows[i];
        bool seen = false;
        for (size_t j = 0; j < n && !seen; j++)
            seen = kind == VL_CALIB_LAYER || same_scheme(r, &f[j]);
        if (seen)
            continue;
        f[n].kind = kind;
        f[n].scheme = (vl_scheme){.tp = r->tp, .pp = r->pp, .sp = r->sp};
        f[n].sp_kind = r->sp_kind;
        f[n].comm_analytic = r->comm_analytic;
        n++;
    }
    *fits = f;
    *nfits = n;
    return VL_OK;
}

vl_status vl_calib_fit_rows(const vl_calib_rows *set, const vl_config *cfg, vl_calib_kind kind,
                            vl_calib_fit **fits, size_t *nfits, vl_err *err)
{
    size_t cells = (set->n ? set->n : 1) * NCOEF;
    double *A = malloc(cells * sizeof *A), *work = malloc(cells * sizeof *work);
    vl_status st;

    *fits = NULL;
    *nfits = 0;
    st = A && work ? make_fits(set, kind, fits, nfits, err)
                   : vl_seterr(err, VL_ENOMEM, "out of memory");
    if (st == VL_OK && kind == VL_CALIB_SCHEMES && *nfits > VL_SCHEMES_MAX)
        st = vl_seterr(err, VL_EDATA, "%s: %zu schemes, cost.schemes holds at most %d",
                       set->name, *nfits, VL_SCHEMES_MAX);
    for (size_t i = 0; st == VL_OK && i < *nfits; i++)
        st = fit_one(set, cfg, &(*fits)[i], A, work, err);
    for (size_t i = 0; st == VL_OK && i < *nfits; i++) /* each on its own rows */
        (*fits)[i].err = vl_calib_score(&(*fits)[i], 1, NULL, cfg, set);
    if (st != VL_OK) {
        free(*fits);
        *fits = NULL;
        *nfits = 0;
    }
    free(A);
    free(work);
    return st;
}

/* ---- the configured cost model on a row ---- */

static double predict_as_configured(const vl_cost *c, const vl_calib_row *r);

/* A row of another sp kind than the configuration's, or whose seconds leave communication
 * out, is predicted by the same model with that kind and cost.comm off (which zeroes
 * every communication time and nothing else, cost.c). */
double vl_calib_predict_model(const vl_cost *c, const vl_calib_row *r)
{
    const vl_config *cfg = c->cfg;
    bool other_kind = r->sp > 1 && r->sp_kind != cfg->training.sp_kind;
    vl_config *copy;
    vl_cost alt;
    vl_err ignored = {0};
    double t = NAN;

    if (!other_kind && (!r->comm_analytic || !cfg->cost.comm))
        return predict_as_configured(c, r);
    if (!(copy = malloc(sizeof *copy)))
        return NAN;
    *copy = *cfg; /* shallow: read only, never freed as a config */
    copy->training.sp_kind = r->sp_kind;
    copy->cost.comm = copy->cost.comm && !r->comm_analytic;
    if (vl_cost_init(&alt, copy, &ignored) == VL_OK)
        t = predict_as_configured(&alt, r);
    free(copy);
    return t;
}

static double predict_as_configured(const vl_cost *c, const vl_calib_row *r)
{
    /* The row gives only Σ len and Σ len²: its micro-batches are taken as equal, each of
     * n sequences of length l with n·l = T/M and n·l² = Q/M (the composition with those
     * sums whose sequences are all alike), n rounded */
    double per_mb = r->tokens / r->mbs, l = r->sum_len2 / r->tokens;
    double nseq = fmax(1, round(per_mb / l));
    uint32_t n = nseq > 65536 ? 65536 : (uint32_t)nseq;
    uint32_t len = (uint32_t)fmax(1, round(per_mb / n));
    vl_par par = {r->tp, r->pp, r->sp, r->ckpt_layers};
    vl_seg *segs = malloc(n * sizeof *segs);
    vl_mb_time t;

    if (!segs)
        return NAN;
    for (uint32_t i = 0; i < n; i++)
        segs[i] = (vl_seg){.sample = i, .off = 0, .len = len};
    /* a row times the decoder layers of a stage, as a cost.schemes row does: the LM head
     * and loss are not in it (tools/profile_step.py has none), so neither is the analytic
     * figure it is compared with */
    t = vl_cost_mb_time(c, segs, n, &par, (int)lround(r->layers), 0);
    free(segs);
    return (t.fwd + t.bwd) * r->mbs;
}

double vl_calib_compute_scale(const vl_cost *c, const vl_calib_rows *set, size_t *used)
{
    double logsum = 0;
    size_t n = 0;

    for (size_t i = 0; i < set->n && !c->cfg->cost.fit_set; i++) {
        const vl_calib_row *r = &set->rows[i];
        vl_par par = {r->tp, r->pp, r->sp, r->ckpt_layers};
        if (vl_cost_scheme(c, &par) || r->comm_analytic) /* see calibrate.h */
            continue;
        double p = vl_calib_predict_model(c, r);
        if (!(p > 0) || !(r->seconds > 0))
            continue;
        logsum += log(r->seconds / p);
        n++;
    }
    double s = n ? c->cfg->cost.compute_scale * exp(logsum / (double)n) : NAN;
    *used = s >= 1e-6 && s <= 1e6 ? n : 0; /* cost.compute_scale's range */
    return *used ? s : NAN;
}

vl_status vl_calib_rows_of(const vl_calib_rows *set, const vl_calib_fit *f, vl_calib_rows *out,
                           vl_err *err)
{
    *out = (vl_calib_rows){.rows = malloc((set->n ? set->n : 1) * sizeof *out->rows)};
    if (!out->rows)
        return vl_seterr(err, VL_ENOMEM, "out of memory");
    out->cap = set->n ? set->n : 1;
    for (size_t i = 0; i < set->n; i++)
        if (covers(f, &set->rows[i]))
            out->rows[out->n++] = set->rows[i];
    memcpy(out->name, set->name, sizeof out->name);
    return VL_OK;
}

vl_status vl_calib_take_head(vl_calib_rows *set, vl_calib_rows *head, vl_err *err)
{
    size_t heads = 0, kept = 0;
    vl_status st;

    for (size_t i = 0; i < set->n; i++)
        heads += set->rows[i].head;
    if (heads == 0)
        return VL_OK;
    /* room first: on failure nothing has moved */
    if ((st = vl_grow(&head->rows, &head->cap, head->n + heads, sizeof *head->rows, err)))
        return st;
    for (size_t i = 0; i < set->n; i++) {
        if (set->rows[i].head)
            head->rows[head->n++] = set->rows[i];
        else
            set->rows[kept++] = set->rows[i];
    }
    set->n = kept;
    if (head->name[0] == '\0')
        snprintf(head->name, sizeof head->name, "%s", set->name);
    return VL_OK;
}

double vl_calib_head_scale(const vl_cost *c, const vl_calib_rows *head, size_t *used)
{
    const vl_cost_cfg *k = &c->cfg->cost;
    double now = k->head_scale > 0      ? k->head_scale
                 : k->compute_scale > 0 ? k->compute_scale
                                        : 1.0;
    double logsum = 0;
    size_t n = 0;

    for (size_t i = 0; i < head->n; i++) {
        const vl_calib_row *r = &head->rows[i];
        vl_par par = {r->tp, 1, r->sp, 0};
        double p = vl_cost_head_time(c, r->tokens, &par);
        if (!(p > 0))
            continue;
        logsum += log(r->seconds / p);
        n++;
    }
    double s = n ? now * exp(logsum / (double)n) : NAN;
    *used = s >= 1e-6 && s <= 1e6 ? n : 0; /* cost.head_scale's range */
    return *used ? s : NAN;
}
