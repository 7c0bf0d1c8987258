/* tests/calib_fixture.h -- the calibration tests' fixture (test_calibrate.c,
 * test_calibrate_shards.c): a default finalized cfg per test, rows generated from known
 * coefficients by the scheme and layer models written out independently of the library,
 * and parse().  Each file declares its own TestSuite. */
#ifndef VLPLAN_CALIB_FIXTURE_H
#define VLPLAN_CALIB_FIXTURE_H

#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "calibrate.h"
#include "cost.h"
#include "grow.h"

static vl_config cfg;
static vl_err err;

static inline void setup(void)
{
    vl_err_clear(&err);
    cr_assert_eq(vl_config_init_default(&cfg, &err), VL_OK, "%s", err.msg);
    cr_assert_eq(vl_config_finalize(&cfg, &err), VL_OK, "%s", err.msg);
}

static inline void teardown(void)
{
    vl_config_free(&cfg);
}

/* A deterministic composition: n sequences with lengths from a small LCG. */
typedef struct comp {
    double tokens, sumsq;
} comp;

static inline comp composition(unsigned *state, int n, int maxlen)
{
    comp c = {0, 0};
    for (int i = 0; i < n; i++) {
        *state = *state * 1103515245u + 12345u;
        double l = 16 + (double)((*state >> 8) % (unsigned)maxlen);
        c.tokens += l;
        c.sumsq += l * l;
    }
    return c;
}

/* The scheme model of calibrate.h, written out independently of the library. */
static inline double scheme_seconds(const vl_scheme *s, const vl_calib_row *r)
{
    double even = (double)cfg.model.layers / r->pp, rr = r->ckpt_layers / r->layers;
    double fa = 1 / (1 + cfg.cost.bwd_attn), fl = 1 / (1 + cfg.cost.bwd_linear);
    return r->layers / even * 1e-3 *
           (s->a * r->sum_len2 * (1 + fa * rr) + (s->b * r->tokens + s->c * r->mbs) * (1 + fl * rr));
}

static inline double layer_seconds(const vl_scheme *s, const vl_calib_row *r)
{
    double g = (double)r->tp * r->sp, P = (r->sum_len2 + r->tokens) / 2, L = r->layers;
    double wl = L * (1 + cfg.cost.bwd_linear) + r->ckpt_layers;
    return (L * (1 + cfg.cost.bwd_attn) + r->ckpt_layers) * s->a * P / g +
           wl * (s->b * r->tokens / g + s->c * r->mbs);
}

/* Rows of every scheme in truth[], varied compositions, ckpt, layers and mbs. */
static inline void make_rows(vl_calib_rows *set, const vl_scheme *truth, int nt, vl_calib_kind kind,
                      double noise)
{
    unsigned st = 7;
    snprintf(set->name, sizeof set->name, "gen.csv");
    for (int t = 0; t < nt; t++)
        for (int i = 0; i < 30; i++) {
            comp c = composition(&st, 1 + i % 9, 1 + 512 * (1 + i % 16));
            vl_calib_row r = {.tp = truth[t].tp, .pp = truth[t].pp, .sp = truth[t].sp,
                              .layers = 2 + i % 3, .mbs = 1 + i % 4, .tokens = c.tokens,
                              .sum_len2 = c.sumsq, .line = (uint32_t)(2 + set->n)};
            r.ckpt_layers = i % 5 == 0 ? (int)r.layers : 0;
            r.seconds = kind == VL_CALIB_SCHEMES ? scheme_seconds(&truth[t], &r)
                                                 : layer_seconds(&truth[t], &r);
            r.seconds *= 1 + noise * ((i % 3) - 1);      /* -noise, 0, +noise */
            cr_assert_eq(vl_grow(&set->rows, &set->cap, set->n + 1, sizeof r, &err), VL_OK);
            set->rows[set->n++] = r;
        }
}

static inline void expect_close(double got, double want, double tol, const char *what)
{
    cr_expect(fabs(got - want) <= tol * fabs(want), "%s: got %.9g, want %.9g (within %g%%)",
              what, got, want, 100 * tol);
}

static inline vl_status parse(const char *text, vl_calib_rows *set)
{
    vl_err_clear(&err);
    return vl_calib_parse(set, text, strlen(text), "t.csv", &cfg, &err);
}

#endif
