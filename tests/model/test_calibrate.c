/* tests/model/test_calibrate.c -- `vlplan calibrate`'s fit (lib/model/calibrate.c): timings made
 * from known coefficients come back within 1%, the fitted numbers mean to the cost model
 * what calibrate says they mean, and bad rows are errors naming FILE:LINE. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "calibrate.h"
#include "cost.h"
#include "grow.h"
#include "testutil.h"

#include "calib_fixture.h"

TestSuite(calibrate, .init = setup, .fini = teardown);

Test(calibrate, schemes_round_trip_within_one_percent)
{
    vl_scheme truth[] = {{1, 1, 1, 2.5e-7, 4e-3, 1.5, false}, {2, 1, 4, 6e-8, 1.1e-3, 0.8, false},
                         {1, 4, 1, 1e-7, 2e-3, 0.3, false}};
    vl_calib_rows set = {0};
    vl_calib_fit *fits;
    size_t n;

    make_rows(&set, truth, 3, VL_CALIB_SCHEMES, 0);
    cr_assert_eq(vl_calib_fit_rows(&set, &cfg, VL_CALIB_SCHEMES, &fits, &n, &err), VL_OK, "%s",
                 err.msg);
    cr_assert_eq(n, 3);
    for (size_t i = 0; i < n; i++) {
        cr_expect_eq(fits[i].scheme.tp, truth[i].tp);
        cr_expect_eq(fits[i].scheme.sp, truth[i].sp);
        expect_close(fits[i].scheme.a, truth[i].a, 0.01, "a");
        expect_close(fits[i].scheme.b, truth[i].b, 0.01, "b");
        expect_close(fits[i].scheme.c, truth[i].c, 0.01, "c");
        cr_expect_lt(fits[i].err.worst, 1e-9);
        cr_expect_eq(fits[i].err.n, 30);
    }
    free(fits);
    vl_calib_rows_free(&set);
}

Test(calibrate, layer_fit_round_trip_within_one_percent)
{
    vl_scheme truth = {1, 1, 1, 3e-13, 2.2e-9, 4e-5, false};
    vl_calib_rows set = {0};
    vl_calib_fit *fits;
    size_t n;

    make_rows(&set, &truth, 1, VL_CALIB_LAYER, 0);
    cr_assert_eq(vl_calib_fit_rows(&set, &cfg, VL_CALIB_LAYER, &fits, &n, &err), VL_OK, "%s",
                 err.msg);
    cr_assert_eq(n, 1);
    expect_close(fits[0].scheme.a, truth.a, 0.01, "a");
    expect_close(fits[0].scheme.b, truth.b, 0.01, "b");
    expect_close(fits[0].scheme.c, truth.c, 0.01, "c");
    free(fits);
    vl_calib_rows_free(&set);
}

Test(calibrate, noise_is_reported_and_coefficients_stay_close)
{
    vl_scheme truth = {1, 1, 1, 2.5e-7, 4e-3, 1.5, false};
    vl_calib_rows set = {0};
    vl_calib_fit *fits;
    size_t n;

    make_rows(&set, &truth, 1, VL_CALIB_SCHEMES, 0.02);
    cr_assert_eq(vl_calib_fit_rows(&set, &cfg, VL_CALIB_SCHEMES, &fits, &n, &err), VL_OK);
    cr_expect_gt(fits[0].err.mape, 0.005);
    cr_expect_lt(fits[0].err.worst, 0.05);
    expect_close(fits[0].scheme.a, truth.a, 0.05, "a");
    free(fits);
    vl_calib_rows_free(&set);
}

Test(calibrate, negative_coefficient_is_held_at_zero)
{
    vl_scheme truth = {1, 1, 1, 2.5e-7, 4e-3, 0, false};
    vl_calib_rows set = {0};
    vl_calib_fit *fits;
    size_t n;

    make_rows(&set, &truth, 1, VL_CALIB_SCHEMES, 0);
    for (size_t i = 0; i < set.n; i++)    /* a constant saving: c < 0 fits best */
        set.rows[i].seconds -= 1e-5 * set.rows[i].mbs;
    cr_assert_eq(vl_calib_fit_rows(&set, &cfg, VL_CALIB_SCHEMES, &fits, &n, &err), VL_OK);
    cr_expect_eq(fits[0].scheme.c, 0);
    cr_expect_eq(fits[0].zeroed, 4u);
    cr_expect(fits[0].scheme.a > 0 && fits[0].scheme.b > 0);
    free(fits);
    vl_calib_rows_free(&set);
}

/* What calibrate predicts for a row is what the cost model computes with the fragment
 * loaded: the fit's numbers mean what vl_cost_scheme_time / cost.fit make of them. */
static double model_seconds(const vl_config *c, const uint32_t *lens, int n, const vl_par *par,
                            int layers)
{
    vl_cost cost;
    vl_seg segs[16];
    cr_assert_eq(vl_cost_init(&cost, c, &err), VL_OK, "%s", err.msg);
    for (int i = 0; i < n; i++)
        segs[i] = (vl_seg){(uint32_t)i, 0, lens[i]};
    vl_mb_time t = vl_cost_mb_time(&cost, segs, (size_t)n, par, layers, 0);
    return t.fwd + t.bwd;
}

static void check_consistency(const char *yaml, vl_calib_kind kind, const vl_scheme *s)
{
    const uint32_t lens[] = {4096, 100, 1777, 9};
    vl_config c2;
    vl_par par = {2, 2, 1, 5};
    vl_calib_fit fit = {.kind = kind, .scheme = *s};
    vl_calib_row r = {.tp = 2, .pp = 2, .sp = 1, .ckpt_layers = 5, .layers = 16, .mbs = 1};

    for (int i = 0; i < 4; i++) {
        r.tokens += lens[i];
        r.sum_len2 += (double)lens[i] * lens[i];
    }
    cr_assert_eq(vl_config_init_default(&c2, &err), VL_OK);
    cr_assert_eq(vl_config_load_string(&c2, yaml, "frag.yaml", &err), VL_OK, "%s", err.msg);
    cr_assert_eq(vl_config_finalize(&c2, &err), VL_OK, "%s", err.msg);
    expect_close(vl_calib_predict(&fit, 1, &c2, &r), model_seconds(&c2, lens, 4, &par, 16),
                 1e-9, "prediction vs cost model");
    vl_config_free(&c2);
}

Test(calibrate, fitted_numbers_mean_what_the_cost_model_reads)
{
    vl_scheme s = {2, 2, 1, 2.5e-7, 4e-3, 1.5, false}, l = {0, 0, 0, 3e-13, 2.2e-9, 4e-5, false};
    check_consistency("cost:\n  schemes:\n    - {tp: 2, pp: 2, sp: 1, a: 2.5e-7, b: 0.004, "
                      "c: 1.5}\n", VL_CALIB_SCHEMES, &s);
    check_consistency("cost:\n  fit: {a: 3e-13, b: 2.2e-9, c: 4e-5}\n", VL_CALIB_LAYER, &l);
}

/* ---- reading ---- */

/* A byte-order mark before the header is skipped, as manifests skip it. */
Test(calibrate, reads_csv_after_a_byte_order_mark)
{
    vl_calib_rows set = {0};

    cr_assert_eq(parse("\xEF\xBB\xBFtokens,sum_len2,seconds\n100,2000,0.5\n", &set), VL_OK,
                 "%s", err.msg);
    cr_expect_eq(set.n, 1);
    cr_expect_eq(set.rows[0].tokens, 100);
    vl_calib_rows_free(&set);
}

Test(calibrate, reads_csv_and_jsonl_with_defaults)
{
    vl_calib_rows set = {0};

    cr_assert_eq(parse("# profile\nseconds,tokens,sum_len2,extra\n0.5,100,2000,x\n\n"
                       "0.25, 50, \"1250\", y\n", &set), VL_OK, "%s", err.msg);
    cr_assert_eq(set.n, 2);
    cr_expect_eq(set.rows[0].tokens, 100);
    cr_expect_eq(set.rows[1].sum_len2, 1250);
    cr_expect_eq(set.rows[1].line, 5);
    cr_expect_eq(set.rows[0].tp, 1);
    cr_expect_eq(set.rows[0].layers, cfg.model.layers);
    cr_expect_eq(set.rows[0].mbs, 1);
    vl_calib_rows_free(&set);
    cr_assert_eq(parse("{\"tokens\":100,\"sum_len2\":5000,\"pp\":4,\"ckpt_layers\":2,"
                       "\"seconds\":0.1}\n", &set), VL_OK, "%s", err.msg);
    cr_expect_eq(set.rows[0].pp, 4);
    cr_expect_eq(set.rows[0].layers, cfg.model.layers / 4.0);
    vl_calib_rows_free(&set);
}

Test(calibrate, bad_rows_name_file_and_line)
{
    static const struct {
        const char *text, *msg;
    } cases[] = {
        {"tokens,sum_len2\n1,1\n", "t.csv:1: header has no column 'seconds'"},
        {"tokens,sum_len2,seconds\n100,2000,0.5\n100,abc,0.5\n",
         "t.csv:3: column 'sum_len2' is 'abc', expected a number"},
        {"tokens,sum_len2,seconds\n100,2000\n", "t.csv:2: 2 fields, the header has 3"},
        {"tokens,sum_len2,seconds\n100,50,1\n", "t.csv:2: column 'sum_len2' is '50'"},
        {"tokens,sum_len2,seconds\n100,2000,0\n", "t.csv:2: column 'seconds' is '0'"},
        {"tokens,sum_len2,seconds,tp\n100,2000,1,1.5\n", "t.csv:2: column 'tp' is '1.5'"},
        {"tokens,sum_len2,seconds,ckpt_layers,layers\n100,2000,1,5,4\n",
         "t.csv:2: column 'ckpt_layers' is '5', expected at most the row's layers"},
        {"{\"tokens\":100,\"sum_len2\":2000,\"seconds\":1}\n{\"tokens\":\"7\"}\n",
         "t.csv:2: column 'tokens' is '\"7\"', expected a number"},
        {"{\"tokens\":100,\"sum_len2\":2000}\n", "t.csv:1: missing 'seconds'"},
        {"{\"tokens\":100,\n", "t.csv:1: not a JSON object"},
        {"tokens,sum_len2,seconds\n", "t.csv: no timing rows"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        vl_calib_rows set = {0};
        cr_expect_eq(parse(cases[i].text, &set), VL_EDATA, "case %zu", i);
        cr_expect(strstr(err.msg, cases[i].msg) != NULL, "case %zu: '%s' lacks '%s'", i,
                  err.msg, cases[i].msg);
        vl_calib_rows_free(&set);
    }
}

Test(calibrate, unidentifiable_rows_are_an_error)
{
    vl_calib_rows set = {0};
    vl_calib_fit *fits = NULL;
    size_t n = 0;

    /* a single row determines one coefficient: the fit keeps one, holds two at 0 */
    cr_assert_eq(parse("tokens,sum_len2,seconds\n100,2000,0.5\n", &set), VL_OK);
    cr_assert_eq(vl_calib_fit_rows(&set, &cfg, VL_CALIB_SCHEMES, &fits, &n, &err), VL_OK);
    cr_expect_eq(__builtin_popcount(fits[0].zeroed), 2);
    free(fits);
    vl_calib_rows_free(&set);
}

/* ---- the command ---- */

Test(calibrate, cli_writes_a_fragment_that_config_accepts)
{
    char *dir = tu_tmpdir(), *csv = tu_path(dir, "t.csv"), *frag = tu_path(dir, "c.yaml");
    char *bad = tu_path(dir, "bad.csv");
    vl_scheme truth = {1, 1, 1, 2.5e-7, 4e-3, 1.5, false};
    vl_calib_rows set = {0};
    FILE *f = fopen(csv, "w");
    tu_result r;

    cr_assert_not_null(f);
    make_rows(&set, &truth, 1, VL_CALIB_SCHEMES, 0);
    fputs("tokens,sum_len2,tp,pp,sp,ckpt_layers,layers,mbs,seconds\n", f);
    for (size_t i = 0; i < set.n; i++) {
        const vl_calib_row *w = &set.rows[i];
        fprintf(f, "%.0f,%.0f,%d,%d,%d,%d,%.0f,%.0f,%.17g\n", w->tokens, w->sum_len2, w->tp,
                w->pp, w->sp, w->ckpt_layers, w->layers, w->mbs, w->seconds);
    }
    fclose(f);
    vl_calib_rows_free(&set);
    cr_assert_eq(tu_run(&r, NULL, (const char *[]){"calibrate", "-o", frag, csv, NULL}), 0);
    cr_expect_eq(r.status, 0, "%s", r.err);
    cr_expect(strstr(r.out, "after calibration: 30 rows, MAPE 0.00%") != NULL, "%s", r.out);
    tu_result_free(&r);
    cr_assert_eq(tu_run(&r, NULL, (const char *[]){"config", "--dump", "-c", frag, NULL}), 0);
    cr_expect_eq(r.status, 0, "%s", r.err);
    cr_expect(strstr(r.out, "schemes: [{tp: 1, pp: 1, sp: 1, a: 2.") != NULL, "%s", r.out);
    /* its rows time decoder layers: a last stage adds the analytic head */
    cr_expect(strstr(r.out, "schemes_with_head: false") != NULL, "%s", r.out);
    tu_result_free(&r);
    tu_write_file(bad, "tokens,sum_len2,seconds\n100,2000,1\n100,2000,-1\n");
    cr_assert_eq(tu_run(&r, NULL, (const char *[]){"calibrate", bad, NULL}), 0);
    cr_expect_eq(r.status, 65);
    cr_expect(strstr(r.err, "bad.csv:3: column 'seconds' is '-1'") != NULL, "%s", r.err);
    cr_expect_eq(r.outlen, 0);
    tu_result_free(&r);
    tu_rmtree(dir);
    free(csv);
    free(frag);
    free(bad);
    free(dir);
}

/* The "before calibration" figure compares a row with the analytic time of the layers it
 * measured: a row timed exactly as the analytic model times 4 decoder layers of equal
 * sequences (no LM head, as tools/profile_step.py measures and a cost.schemes row means)
 * scores 0%, also under pp 1, where the stage would otherwise carry the head. */
Test(calibrate, before_figure_is_the_layers_without_the_head)
{
    vl_cost c;
    vl_seg segs[4];
    vl_par par = {1, 1, 1, 0};

    cr_assert_eq(vl_cost_init(&c, &cfg, &err), VL_OK, "%s", err.msg);
    for (int i = 0; i < 4; i++)
        segs[i] = (vl_seg){.sample = (uint32_t)i, .off = 0, .len = 2048};
    vl_mb_time layers_only = vl_cost_mb_time(&c, segs, 4, &par, 4, 0);
    vl_mb_time with_head = vl_cost_mb_time(&c, segs, 4, &par, 4, 1);
    cr_assert_gt(with_head.fwd, layers_only.fwd * 1.05, "the head must matter here");
    vl_calib_row row = {.tp = 1, .pp = 1, .sp = 1, .layers = 4, .mbs = 1, .tokens = 8192,
                        .sum_len2 = 4.0 * 2048 * 2048,
                        .seconds = layers_only.fwd + layers_only.bwd};
    vl_calib_rows set = {.rows = &row, .n = 1, .cap = 1};
    vl_calib_err e = vl_calib_score(NULL, 0, &c, &cfg, &set);
    cr_expect_eq(e.n, 1);
    cr_expect_lt(e.mape, 1e-9, "before-calibration error %g", e.mape);
}

/* Rows at three token budgets (4K, 8K, 16K per micro-batch), each cut into 1..6 equal
 * sequences, times exactly the scheme model of truth, budget 16K's times scaled by k. */
static void budget_rows(vl_calib_rows *set, const vl_scheme *truth, double k)
{
    static const double budget[] = {4096, 8192, 16384};

    snprintf(set->name, sizeof set->name, "budgets.csv");
    for (int b = 0; b < 3; b++)
        for (int parts = 1; parts <= 6; parts++) {
            double l = budget[b] / parts;
            vl_calib_row r = {.tp = 1, .pp = 1, .sp = 1, .layers = 2, .mbs = 1,
                              .tokens = budget[b], .sum_len2 = parts * l * l,
                              .line = (uint32_t)(2 + set->n)};
            r.seconds = scheme_seconds(truth, &r) * (b == 2 ? k : 1);
            cr_assert_eq(vl_grow(&set->rows, &set->cap, set->n + 1, sizeof r, &err), VL_OK);
            set->rows[set->n++] = r;
        }
}

/* Leave one budget out: exact rows are predicted exactly from the other budgets; a
 * budget measured 10% slow is off by about that when left out, and says which. */
Test(calibrate, leave_one_budget_out)
{
    vl_scheme truth = {1, 1, 1, 2.5e-7, 4e-3, 1.5, false};
    vl_calib_rows set = {0}, skew = {0}, one = {0};
    vl_calib_lobo *lo;
    size_t n;

    budget_rows(&set, &truth, 1.0);
    cr_assert_eq(vl_calib_leave_budget_out(&set, &cfg, VL_CALIB_SCHEMES, &lo, &n, &err), VL_OK,
                 "%s", err.msg);
    cr_assert_eq(n, 3);
    for (size_t i = 0; i < n; i++) {
        cr_expect_eq(lo[i].budget, 4096.0 * (1 << i));
        cr_expect_eq(lo[i].err.n, 6);
        cr_expect_lt(lo[i].err.worst, 1e-6, "budget %g: %g", lo[i].budget, lo[i].err.worst);
    }
    cr_expect_eq(vl_calib_lobo_total(lo, n).n, 18);
    free(lo);

    budget_rows(&skew, &truth, 1.1);
    cr_assert_eq(vl_calib_leave_budget_out(&skew, &cfg, VL_CALIB_SCHEMES, &lo, &n, &err),
                 VL_OK);
    cr_expect_gt(lo[2].err.mape, 0.08, "%g", lo[2].err.mape);
    vl_calib_err all = vl_calib_lobo_total(lo, n);
    cr_expect_geq(all.worst, lo[2].err.worst);
    cr_expect_gt(all.worst_line, 0);
    free(lo);

    one.n = 0;   /* a single budget: nothing to leave out */
    budget_rows(&one, &truth, 1.0);
    one.n = 6;
    cr_assert_eq(vl_calib_leave_budget_out(&one, &cfg, VL_CALIB_SCHEMES, &lo, &n, &err), VL_OK);
    cr_expect_eq(n, 0);
    free(lo);
    vl_calib_rows_free(&set);
    vl_calib_rows_free(&skew);
    vl_calib_rows_free(&one);
}

/* Rows timed at 1.3 times what the analytic model says: calibrate's compute_scale comes
 * back 1.3, and a cost model with it predicts them exactly (comm off: compute only). */
Test(calibrate, compute_scale_is_measured_over_analytic)
{
    const char *off[] = {"cost.comm=off", NULL};
    vl_config c;
    vl_cost cost;
    vl_calib_rows set = {0};
    size_t used;

    tu_config(&c, NULL, off);
    cr_assert_eq(vl_cost_init(&cost, &c, &err), VL_OK);
    snprintf(set.name, sizeof set.name, "scaled.csv");
    for (int i = 0; i < 6; i++) {
        double l = 512.0 * (1 + i);
        vl_calib_row r = {.tp = 1, .pp = 1, .sp = 1, .layers = 2, .mbs = 1, .tokens = 4 * l,
                          .sum_len2 = 4 * l * l, .line = (uint32_t)(2 + i)};
        r.seconds = 1.3 * vl_calib_predict_model(&cost, &r);
        cr_assert_eq(vl_grow(&set.rows, &set.cap, set.n + 1, sizeof r, &err), VL_OK);
        set.rows[set.n++] = r;
    }
    double s = vl_calib_compute_scale(&cost, &set, &used);
    cr_expect_eq(used, 6);
    expect_close(s, 1.3, 1e-9, "compute_scale");
    char set_scale[64];
    snprintf(set_scale, sizeof set_scale, "cost.compute_scale=%.17g", s);
    const char *scaled[] = {"cost.comm=off", set_scale, NULL};
    vl_config c2;
    vl_cost cost2;
    tu_config(&c2, NULL, scaled);
    cr_assert_eq(vl_cost_init(&cost2, &c2, &err), VL_OK);
    for (size_t i = 0; i < set.n; i++)
        expect_close(vl_calib_predict_model(&cost2, &set.rows[i]), set.rows[i].seconds, 1e-9,
                     "scaled prediction");
    vl_config_free(&c);
    vl_config_free(&c2);
    vl_calib_rows_free(&set);
}

/* Rows with head = 1 time the LM head and loss: read from either format, taken out of the
 * set the fits use (both keep their order), and a head timed at 1.3 times the analytic
 * head gives cost.head_scale 1.3 on top of the scale configured, which a cost model with
 * it then predicts exactly. */
Test(calibrate, head_rows_give_the_head_scale)
{
    const char *scale2[] = {"cost.compute_scale=2", NULL};
    vl_calib_rows set = {0}, head = {0};
    vl_config c;
    vl_cost cost;
    size_t used;

    cr_assert_eq(parse("tokens,sum_len2,seconds,head\n100,2000,0.5,0\n4096,16777216,0.1,1\n"
                       "200,4000,0.7,0\n", &set), VL_OK, "%s", err.msg);
    cr_assert_eq(parse("{\"tokens\": 8192, \"sum_len2\": 8192, \"seconds\": 0.2, \"head\": 1}\n",
                       &set), VL_OK, "%s", err.msg);
    cr_assert_eq(parse("tokens,sum_len2,seconds,head\n100,2000,0.5,2\n", &set), VL_EDATA);
    cr_expect(strstr(err.msg, "column 'head' is '2'") != NULL, "%s", err.msg);
    cr_assert_eq(vl_calib_take_head(&set, &head, &err), VL_OK);
    cr_assert_eq(set.n, 2);
    cr_expect_eq(set.rows[1].tokens, 200);
    cr_assert_eq(head.n, 2);
    cr_expect_eq(head.rows[0].tokens, 4096);
    cr_expect(head.rows[1].head && !set.rows[0].head);

    tu_config(&c, NULL, scale2);   /* no cost.head_scale: the head takes compute_scale */
    cr_assert_eq(vl_cost_init(&cost, &c, &err), VL_OK);
    for (size_t i = 0; i < head.n; i++) {
        vl_par par = {1, 1, 1, 0};
        head.rows[i].seconds = 1.3 * vl_cost_head_time(&cost, head.rows[i].tokens, &par);
    }
    double s = vl_calib_head_scale(&cost, &head, &used);
    cr_expect_eq(used, 2);
    expect_close(s, 2 * 1.3, 1e-9, "head_scale");
    char set_scale[64];
    snprintf(set_scale, sizeof set_scale, "cost.head_scale=%.17g", s);
    const char *scaled[] = {"cost.compute_scale=2", set_scale, NULL};
    vl_config c2;
    vl_cost cost2;
    tu_config(&c2, NULL, scaled);
    cr_assert_eq(vl_cost_init(&cost2, &c2, &err), VL_OK);
    for (size_t i = 0; i < head.n; i++) {
        vl_par par = {1, 1, 1, 0};
        expect_close(vl_cost_head_time(&cost2, head.rows[i].tokens, &par), head.rows[i].seconds,
                     1e-9, "scaled head");
    }
    vl_config_free(&c);
    vl_config_free(&c2);
    vl_calib_rows_free(&set);
    vl_calib_rows_free(&head);
}

/* ---- sp/cp shards measured on one GPU (tools/profile_step.py --sp/--cp) ---- */
