/* tests/model/test_calibrate_shards.c -- calibration of sharded schemes (CP/SP): rows
 * that carry the kind of sequence parallelism and whether communication is in them, a
 * shard's compute fitted on its own rows, reported against the consistent correction,
 * and written as a comm-analytic cost.schemes row. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "calib_fixture.h"
#include "testutil.h"

TestSuite(calibrate_shards, .init = setup, .fini = teardown);

/* sp_kind and comm are words; a shard's row keeps its kind, an sp 1 row takes the
 * configuration's; a word that is neither is an error naming FILE:LINE. */
Test(calibrate_shards, reads_the_kind_of_sp_and_whether_communication_is_in)
{
    vl_calib_rows set = {0};

    cr_assert_eq(parse("tokens,sum_len2,sp,sp_kind,comm,seconds\n100,2000,2,ring,analytic,0.5\n"
                       "100,2000,1,none,included,0.5\n100,2000,4,ulysses,included,0.5\n",
                       &set), VL_OK, "%s", err.msg);
    cr_assert_eq(set.n, 3);
    cr_expect_eq(set.rows[0].sp_kind, VL_SP_RING);
    cr_expect(set.rows[0].comm_analytic);
    cr_expect_eq(set.rows[1].sp_kind, cfg.training.sp_kind);
    cr_expect(!set.rows[1].comm_analytic);
    cr_expect_eq(set.rows[2].sp_kind, VL_SP_ULYSSES);
    vl_calib_rows_free(&set);
    cr_assert_eq(parse("{\"tokens\":100,\"sum_len2\":5000,\"sp\":2,\"sp_kind\":\"ring\","
                       "\"comm\":\"analytic\",\"seconds\":0.1}\n", &set), VL_OK, "%s", err.msg);
    cr_expect_eq(set.rows[0].sp_kind, VL_SP_RING);
    cr_expect(set.rows[0].comm_analytic);
    vl_calib_rows_free(&set);
    cr_expect_eq(parse("tokens,sum_len2,sp,sp_kind,seconds\n100,2000,2,zigzag,0.5\n", &set),
                 VL_EDATA);
    cr_expect_str_eq(err.msg, "t.csv:2: column 'sp_kind' is 'zigzag', expected ulysses or "
                              "ring or none");
    vl_calib_rows_free(&set);
    cr_expect_eq(parse("tokens,sum_len2,sp,sp_kind,seconds\n100,2000,2,none,0.5\n", &set),
                 VL_EDATA);
    cr_expect_str_eq(err.msg, "t.csv:2: column 'sp_kind' is 'none', expected ulysses or ring "
                              "where sp > 1");
    vl_calib_rows_free(&set);
    cr_expect_eq(parse("{\"tokens\":100,\"sum_len2\":5000,\"comm\":1,\"seconds\":0.1}\n",
                       &set), VL_EDATA);
    cr_expect_str_eq(err.msg, "t.csv:1: column 'comm' is '1', expected a word");
    vl_calib_rows_free(&set);
}

/* Rows of the same (tp, pp, sp) but another kind, or compute alone, are other schemes:
 * each is fitted on its own rows, exactly, from the constants that made them. */
Test(calibrate_shards, shard_schemes_are_fitted_on_their_own_rows)
{
    vl_scheme truth[] = {{1, 1, 1, 2.5e-7, 4e-3, 1.5, false}, {1, 1, 2, 1.3e-7, 2.1e-3, 0.9, false},
                         {1, 1, 2, 1.6e-7, 2.4e-3, 1.1, false}, {1, 1, 2, 1.9e-7, 2.6e-3, 1.2, false}};
    vl_calib_rows set = {0};
    vl_calib_fit *fits;
    size_t n;

    make_rows(&set, truth, 4, VL_CALIB_SCHEMES, 0);
    for (size_t i = 0; i < set.n; i++) {   /* truth[1]: ring compute, [2]: ulysses compute */
        set.rows[i].sp_kind = i / 30 == 1 ? VL_SP_RING : VL_SP_ULYSSES;
        set.rows[i].comm_analytic = i / 30 == 1 || i / 30 == 2;
    }
    cr_assert_eq(vl_calib_fit_rows(&set, &cfg, VL_CALIB_SCHEMES, &fits, &n, &err), VL_OK, "%s",
                 err.msg);
    cr_assert_eq(n, 4);
    for (size_t i = 0; i < n; i++) {
        cr_expect_eq(fits[i].comm_analytic, i == 1 || i == 2);
        cr_expect_eq(fits[i].sp_kind, i == 1 ? VL_SP_RING : VL_SP_ULYSSES);
        expect_close(fits[i].scheme.a, truth[i].a, 1e-9, "a");
        expect_close(fits[i].scheme.b, truth[i].b, 1e-9, "b");
        expect_close(fits[i].scheme.c, truth[i].c, 1e-9, "c");
        cr_expect_eq(fits[i].err.n, 30);
    }
    /* leaving each budget out on one scheme's rows sees that scheme's rows alone */
    vl_calib_rows mine = {0};
    cr_assert_eq(vl_calib_rows_of(&set, &fits[1], &mine, &err), VL_OK);
    cr_expect_eq(mine.n, 30);
    for (size_t i = 0; i < mine.n; i++)
        cr_expect(mine.rows[i].comm_analytic && mine.rows[i].sp_kind == VL_SP_RING);
    free(mine.rows);
    free(fits);
    vl_calib_rows_free(&set);
}

/* A compute-alone row is predicted without communication (and under its own kind), is
 * not part of cost.compute_scale, and the consistent correction scores it from the
 * analytic compute times the scale: rows made as 1.3 x the compute of a configuration
 * with cost.comm off score 0% at scale 1.3 and 30% apart at scale 1. */
Test(calibrate_shards, compute_alone_rows_against_the_consistent_correction)
{
    /* nothing hidden, so the ring's sends show in the time */
    const char *ring[] = {"training.sp_kind=ring", "training.overlap.cp=0", NULL};
    const char *ring_off[] = {"training.sp_kind=ring", "training.overlap.cp=0",
                              "cost.comm=off", NULL};
    vl_config on, off;
    vl_cost c_on, c_off;
    vl_calib_rows set = {0};
    size_t used = 99;

    tu_config(&on, NULL, ring);
    tu_config(&off, NULL, ring_off);
    cr_assert_eq(vl_cost_init(&c_on, &on, &err), VL_OK);
    cr_assert_eq(vl_cost_init(&c_off, &off, &err), VL_OK);
    snprintf(set.name, sizeof set.name, "shard.csv");
    for (int i = 0; i < 4; i++) {
        double l = 4096.0 * (1 + i);
        vl_calib_row r = {.tp = 1, .pp = 1, .sp = 4, .sp_kind = VL_SP_RING, .layers = 2,
                          .mbs = 1, .tokens = 2 * l, .sum_len2 = 2 * l * l,
                          .line = (uint32_t)(2 + i)};
        double compute = vl_calib_predict_model(&c_off, &r);
        cr_expect_gt(vl_calib_predict_model(&c_on, &r), compute * (1 + 1e-6),
                     "the ring's communication is part of the time");
        r.comm_analytic = true;
        expect_close(vl_calib_predict_model(&c_on, &r), compute, 1e-12, "compute alone");
        r.sp_kind = VL_SP_ULYSSES;   /* another kind: predicted as that kind */
        cr_expect_neq(vl_calib_predict_model(&c_on, &r), compute);
        r.sp_kind = VL_SP_RING;
        r.seconds = 1.3 * compute;
        cr_assert_eq(vl_grow(&set.rows, &set.cap, set.n + 1, sizeof r, &err), VL_OK);
        set.rows[set.n++] = r;
    }
    cr_expect(isnan(vl_calib_compute_scale(&c_on, &set, &used)));
    cr_expect_eq(used, 0);
    vl_calib_fit shard = {.kind = VL_CALIB_SCHEMES, .scheme = {.tp = 1, .pp = 1, .sp = 4},
                          .sp_kind = VL_SP_RING, .comm_analytic = true};
    vl_calib_err e = vl_calib_score_corrected(&c_on, 1.3, &shard, &set);
    cr_expect_eq(e.n, 4);
    cr_expect_lt(e.worst, 1e-9);
    e = vl_calib_score_corrected(&c_on, 1.0, &shard, &set);
    expect_close(e.mape, 0.3 / 1.3, 1e-9, "MAPE at scale 1");
    shard.sp_kind = VL_SP_ULYSSES;   /* covers none of the ring's rows */
    cr_expect_eq(vl_calib_score_corrected(&c_on, 1.3, &shard, &set).n, 0);
    vl_config_free(&on);
    vl_config_free(&off);
    vl_calib_rows_free(&set);
}

/* The command: a shard scheme is reported as measured against corrected, its budgets
 * are left out on its own rows, and it is a comment in the fragment, not a
 * cost.schemes row (which would drop its communication); the fragment reads back. */
Test(calibrate_shards, cli_reports_shards_measured_against_corrected)
{
    char *dir = tu_tmpdir(), *csv = tu_path(dir, "t.csv"), *frag = tu_path(dir, "c.yaml");
    vl_scheme truth[] = {{1, 1, 1, 2.5e-7, 4e-3, 1.5, false}, {1, 1, 2, 1.3e-7, 2.1e-3, 0.9, false}};
    vl_calib_rows set = {0};
    FILE *f = fopen(csv, "w");
    tu_result r;

    cr_assert_not_null(f);
    make_rows(&set, truth, 2, VL_CALIB_SCHEMES, 0);
    fputs("tokens,sum_len2,tp,pp,sp,sp_kind,comm,ckpt_layers,layers,mbs,seconds\n", f);
    for (size_t i = 0; i < set.n; i++) {
        const vl_calib_row *w = &set.rows[i];
        fprintf(f, "%.0f,%.0f,%d,%d,%d,%s,%s,%d,%.0f,%.0f,%.17g\n", w->tokens, w->sum_len2,
                w->tp, w->pp, w->sp, w->sp > 1 ? "ring" : "none",
                w->sp > 1 ? "analytic" : "included", w->ckpt_layers, w->layers, w->mbs,
                w->seconds);
    }
    fclose(f);
    vl_calib_rows_free(&set);
    cr_assert_eq(tu_run(&r, NULL, (const char *[]){"calibrate", "--set",
                                                   "training.sp_kind=ring", "-o", frag, csv,
                                                   NULL}), 0);
    cr_expect_eq(r.status, 0, "%s", r.err);
    cr_expect(strstr(r.out, "tp1 pp1 sp2 ring compute, measured (its own fit): 30 rows, MAPE "
                            "0.00%") != NULL, "%s", r.out);
    cr_expect(strstr(r.out, "tp1 pp1 sp2 ring compute, corrected (analytic compute x ") != NULL,
              "%s", r.out);
    cr_expect(strstr(r.out, "communication: analytic, not timed") != NULL, "%s", r.out);
    cr_expect(strstr(r.out, "    tp1 pp1 sp2 ring compute: 30 rows, MAPE 0.00%") != NULL,
              "%s", r.out);
    cr_expect(strstr(r.out, "written as cost.schemes rows with comm: analytic") != NULL, "%s",
              r.out);
    tu_result_free(&r);
    /* the shard's fit is a row of its own, marked as compute alone */
    char *text = tu_read_file(frag, NULL);
    cr_expect(strstr(text, "- {tp: 1, pp: 1, sp: 2, a: 1.3") != NULL, "%s", text);
    cr_expect(strstr(text, ", comm: analytic}") != NULL, "%s", text);
    cr_expect(strstr(text, "not a cost.schemes row") == NULL, "%s", text);
    free(text);
    cr_assert_eq(tu_run(&r, NULL, (const char *[]){"config", "--dump", "-c", frag, NULL}), 0);
    cr_expect_eq(r.status, 0, "%s", r.err);
    cr_expect(strstr(r.out, "schemes: [{tp: 1, pp: 1, sp: 1, a: 2.") != NULL, "%s", r.out);
    cr_expect(strstr(r.out, "{tp: 1, pp: 1, sp: 2, a: 1.3") != NULL, "%s", r.out);
    cr_expect(strstr(r.out, "c: 0.8999999999999998, comm: analytic}]") != NULL, "%s", r.out);
    tu_result_free(&r);
    /* of another kind than training.sp_kind it stays a comment */
    cr_assert_eq(tu_run(&r, NULL, (const char *[]){"calibrate", "--set",
                                                   "training.sp_kind=ulysses", "-o", frag, csv,
                                                   NULL}), 0);
    cr_expect_eq(r.status, 0, "%s", r.err);
    tu_result_free(&r);
    text = tu_read_file(frag, NULL);
    cr_expect(strstr(text, "# tp1 pp1 sp2 ring compute: a 1.3") != NULL, "%s", text);
    cr_expect(strstr(text, "not a cost.schemes row: not training.sp_kind") != NULL, "%s", text);
    cr_expect(strstr(text, "sp: 2") == NULL, "%s", text);
    free(text);
    tu_rmtree(dir);
    free(csv);
    free(frag);
    free(dir);
}
