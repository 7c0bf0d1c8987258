/* lib/model/calibrate_lobo.c -- how well a calibration generalises: leave one token budget
 * out.  Rows measured at the same budget (tokens per micro-batch) share most of what a
 * fit learns from them, so held-out rows of a budget the fit also saw flatter it; here
 * each budget in turn is fitted without and predicted (calibrate.h). */
#include "calibrate.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return (x > y) - (x < y);
}

/* The distinct token budgets of set, ascending, into b (set->n slots); their count. */
static size_t budgets(const vl_calib_rows *set, double *b)
{
    size_t n = 0;

    for (size_t i = 0; i < set->n; i++)
        b[i] = set->rows[i].tokens;
    qsort(b, set->n, sizeof *b, cmp_double);
    for (size_t i = 0; i < set->n; i++)
        if (n == 0 || b[i] != b[n - 1])
            b[n++] = b[i];
    return n;
}

/* The rows of set with tokens == budget (keep) or != budget (!keep), copied into out. */
static void split(const vl_calib_rows *set, double budget, bool keep, vl_calib_rows *out)
{
    out->n = 0;
    for (size_t i = 0; i < set->n; i++)
        if ((set->rows[i].tokens == budget) == keep)
            out->rows[out->n++] = set->rows[i];
}

/* Fit without the budget, score on it; a budget whose remaining rows determine nothing
 * for its scheme is skipped (n = 0). */
static vl_status one_budget(const vl_calib_rows *set, const vl_config *cfg, vl_calib_kind kind,
                            double budget, vl_calib_rows *rest, vl_calib_rows *held,
                            vl_calib_lobo *out, vl_err *err)
{
    vl_calib_fit *fits = NULL;
    size_t nfits = 0;
    vl_err fe = {0};
    vl_status st;

    split(set, budget, false, rest);
    split(set, budget, true, held);
    out->budget = budget;
    out->err = (vl_calib_err){0, 0, 0, 0, NULL};
    st = vl_calib_fit_rows(rest, cfg, kind, &fits, &nfits, &fe);
    if (st == VL_ENOMEM)
        return vl_seterr(err, st, "%s", fe.msg);
    if (st == VL_OK)
        out->err = vl_calib_score(fits, nfits, NULL, cfg, held);
    free(fits);
    return VL_OK;
}

vl_status vl_calib_leave_budget_out(const vl_calib_rows *set, const vl_config *cfg,
                                    vl_calib_kind kind, vl_calib_lobo **out, size_t *n,
                                    vl_err *err)
{
    size_t cap = set->n ? set->n : 1;
    double *b = malloc(cap * sizeof *b);
    vl_calib_rows rest = {.rows = malloc(cap * sizeof *rest.rows), .cap = cap};
    vl_calib_rows held = {.rows = malloc(cap * sizeof *held.rows), .cap = cap};
    vl_status st = VL_OK;

    *out = NULL;
    *n = 0;
    if (!b || !rest.rows || !held.rows || !(*out = calloc(cap, sizeof **out)))
        st = vl_seterr(err, VL_ENOMEM, "out of memory");
    memcpy(rest.name, set->name, sizeof rest.name);
    memcpy(held.name, set->name, sizeof held.name);
    size_t nb = st == VL_OK ? budgets(set, b) : 0;
    for (size_t i = 0; i < nb && nb > 1 && st == VL_OK; i++)
        st = one_budget(set, cfg, kind, b[i], &rest, &held, &(*out)[(*n)++], err);
    if (st != VL_OK) {
        free(*out);
        *out = NULL;
        *n = 0;
    }
    free(b);
    free(rest.rows);
    free(held.rows);
    return st;
}

vl_calib_err vl_calib_lobo_total(const vl_calib_lobo *lo, size_t n)
{
    vl_calib_err t = {0, 0, 0, 0, NULL};
    double sum = 0;

    for (size_t i = 0; i < n; i++) {
        const vl_calib_err *e = &lo[i].err;
        if (e->n == 0)
            continue;
        sum += e->mape * (double)e->n;
        if (t.n == 0 || e->worst > t.worst) {
            t.worst = e->worst;
            t.worst_line = e->worst_line;
            t.worst_file = e->worst_file;
        }
        t.n += e->n;
    }
    t.mape = t.n ? sum / (double)t.n : NAN;
    return t;
}
