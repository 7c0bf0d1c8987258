/* tests/config/test_config_bind.c -- strategy sections: bind with defaults, values and errors,
 * text parameters and tables of rows, check_sections, and dumps that load back.  The
 * suite's init is in test_config.c; each test names it too, so this file runs alone. */
#include <criterion/criterion.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "config_fixture.h"

/* ---- strategy sections ---- */

typedef struct demo_opts {
    int k;
    uint32_t cap;
    double alpha;
    bool greedy;
    int mode;
    char name[VL_NAME_MAX];
    uint32_t budget;
} demo_opts;

static const char *const demo_modes[] = {"fast", "exact", NULL};

static const vl_param demo_params[] = {
    {"k", VL_P_INT, offsetof(demo_opts, k), 1, 64, NULL, "4", "groups"},
    {"cap", VL_P_UINT, offsetof(demo_opts, cap), 1, 1e9, NULL, "16384", "capacity"},
    {"alpha", VL_P_DOUBLE, offsetof(demo_opts, alpha), 0, 1, NULL, "0.25", "weight"},
    {"greedy", VL_P_BOOL, offsetof(demo_opts, greedy), 0, 0, NULL, "false", "greedy"},
    {"mode", VL_P_ENUM, offsetof(demo_opts, mode), 0, 0, demo_modes, "fast", "mode"},
    {"name", VL_P_STRING, offsetof(demo_opts, name), 0, 0, NULL, "demo", "label"},
    {"budget", VL_P_AUTO_UINT, offsetof(demo_opts, budget), 1, 1e6, NULL, "auto", "budget"},
    {NULL, VL_P_INT, 0, 0, 0, NULL, NULL, NULL},
};

Test(config, bind_defaults_then_values, .init = setup, .fini = teardown)
{
    demo_opts o;
    char *json = NULL;

    memset(&o, 0xff, sizeof o);
    cr_assert_eq(vl_config_bind(&cfg, "demo", demo_params, &o, &err), VL_OK, "%s", err.msg);
    cr_assert(o.k == 4 && o.cap == 16384 && o.alpha == 0.25 && !o.greedy && o.mode == 0);
    cr_assert_str_eq(o.name, "demo");
    cr_assert_eq(o.budget, 0);
    load_ok("demo:\n  k: 8\n  mode: exact\n  budget: 500\n  name: x1\n");
    set_ok("demo.k=16");
    set_ok("demo.greedy=true");
    cr_assert_eq(vl_config_bind(&cfg, "demo", demo_params, &o, &err), VL_OK, "%s", err.msg);
    cr_assert(o.k == 16 && o.mode == 1 && o.budget == 500 && o.greedy);
    cr_assert_str_eq(o.name, "x1");
    cr_assert_eq(vl_params_dump_json(demo_params, &o, &json, &err), VL_OK);
    cr_assert_str_eq(json, "{\"k\":16,\"cap\":16384,\"alpha\":0.25,\"greedy\":true,"
                           "\"mode\":\"exact\",\"name\":\"x1\",\"budget\":500}");
    free(json);
}

Test(config, bind_errors, .init = setup, .fini = teardown)
{
    demo_opts o;

    load_ok("demo:\n  k: 8\n  kk: 2\n");
    cr_assert_eq(vl_config_bind(&cfg, "demo", demo_params, &o, &err), VL_ECONFIG);
    cr_assert_str_eq(err.msg, "t.yaml:3:3: demo.kk: unknown key, did you mean 'k'?");
    vl_config_free(&cfg);
    setup();
    load_ok("demo:\n  k: 0\n");
    cr_assert_eq(vl_config_bind(&cfg, "demo", demo_params, &o, &err), VL_ECONFIG);
    cr_assert_str_eq(err.msg, "t.yaml:2:6: demo.k: expected 1..64, got 0");
    vl_config_free(&cfg);
    setup();
    set_ok("demo.mode=slow");
    cr_assert_eq(vl_config_bind(&cfg, "demo", demo_params, &o, &err), VL_ECONFIG);
    cr_assert_str_eq(err.msg, "--set demo.mode=slow: demo.mode: expected one of fast, exact, "
                              "got 'slow'");
}

/* ---- longer strings and tables ---- */

typedef struct text_opts {
    char groups[VL_TEXT_MAX];
    int k;
} text_opts;

static const char *const row_cols[] = {"len", "sp", "time_s", NULL};

static const vl_param text_params[] = {
    {"groups", VL_P_TEXT, offsetof(text_opts, groups), 0, 0, NULL, "auto", "groups"},
    {"profile", VL_P_TABLE, 0, 0, 1e12, row_cols, NULL, "measured rows"},
    {"k", VL_P_INT, offsetof(text_opts, k), 1, 64, NULL, "4", "k"},
    {NULL, VL_P_INT, 0, 0, 0, NULL, NULL, NULL},
};

/* section.profile as rows of (len, sp, time_s) */
static vl_status table_of(const char *section, double **rows, size_t *n)
{
    return vl_config_table(&cfg, section, "profile", row_cols, 3, rows, n, &err);
}

Test(config, text_param_is_longer, .init = setup, .fini = teardown)
{
    text_opts o;
    char yaml[600], *json = NULL;
    const char *g = "8K:1:0,16K:2:0,128K:8:14,256K:16:20,512K:16:32,1M:16:32";

    memset(&o, 0xff, sizeof o);
    cr_assert_eq(vl_config_bind(&cfg, "demo", text_params, &o, &err), VL_OK, "%s", err.msg);
    cr_assert_str_eq(o.groups, "auto");
    cr_assert_eq(o.k, 4);   /* the table entry stores nothing, not even at offset 0 */
    snprintf(yaml, sizeof yaml, "demo: {groups: '%s'}\n", g);
    load_ok(yaml);
    cr_assert_gt(strlen(g), VL_NAME_MAX);
    cr_assert_eq(vl_config_bind(&cfg, "demo", text_params, &o, &err), VL_OK, "%s", err.msg);
    cr_assert_str_eq(o.groups, g);
    cr_assert_eq(vl_params_dump_json(text_params, &o, &json, &err), VL_OK);
    snprintf(yaml, sizeof yaml, "{\"groups\":\"%s\",\"k\":4}", g);
    cr_assert_str_eq(json, yaml);   /* the table is left out: it is in the config */
    free(json);
    memset(yaml, 'x', 300);
    memcpy(yaml, "demo.groups=", 12);
    yaml[12 + 255] = '\0';
    set_ok(yaml);
    cr_assert_eq(vl_config_bind(&cfg, "demo", text_params, &o, &err), VL_OK, "%s", err.msg);
    cr_assert_eq(strlen(o.groups), 255);
    yaml[12 + 255] = 'x';
    yaml[12 + 256] = '\0';
    set_ok(yaml);
    cr_assert_eq(vl_config_bind(&cfg, "demo", text_params, &o, &err), VL_ECONFIG);
    cr_assert(strstr(err.msg, "demo.groups: expected a string of at most 255 characters, "
                              "got 'xxx") != NULL, "%s", err.msg);
    vl_config_free(&cfg);
    setup();
    load_ok("demo:\n  groups: [1, 2]\n");
    cr_assert_eq(vl_config_bind(&cfg, "demo", text_params, &o, &err), VL_ECONFIG);
    cr_assert_str_eq(err.msg, "t.yaml:2:11: demo.groups: expected a string of at most 255 "
                              "characters, got a sequence");
}

Test(config, table_rows, .init = setup, .fini = teardown)
{
    text_opts o;
    double *r = NULL;
    size_t n = 99;

    cr_assert_eq(table_of("demo", &r, &n), VL_OK, "%s", err.msg);
    cr_assert(r == NULL && n == 0);   /* absent */
    load_ok("demo:\n  profile:\n    - {len: 16384, sp: 1, time_s: 2.65}\n"
            "    - time_s: 3.05\n      len: 131072\n      sp: 8\n");
    cr_assert_eq(vl_config_bind(&cfg, "demo", text_params, &o, &err), VL_OK, "%s", err.msg);
    cr_assert_eq(table_of("demo", &r, &n), VL_OK, "%s", err.msg);
    cr_assert_eq(n, 2);
    cr_assert(r[0] == 16384 && r[1] == 1 && r[2] == 2.65);
    cr_assert(r[3] == 131072 && r[4] == 8 && r[5] == 3.05);   /* cols order, not YAML's */
    free(r);
    /* --set takes flow YAML; the last overlay giving the key replaces the whole table */
    set_ok("demo.profile=[{len: 8192, sp: 2, time_s: 1e0}]");
    cr_assert_eq(table_of("demo", &r, &n), VL_OK, "%s", err.msg);
    cr_assert(n == 1 && r[0] == 8192 && r[1] == 2 && r[2] == 1.0);
    free(r);
    load_ok("demo: {k: 3}\n");   /* a later section without the key keeps it */
    cr_assert_eq(table_of("demo", &r, &n), VL_OK, "%s", err.msg);
    cr_assert_eq(n, 1);
    free(r);
    set_ok("demo.profile=[]");
    cr_assert_eq(table_of("demo", &r, &n), VL_OK, "%s", err.msg);
    cr_assert(r == NULL && n == 0);
    set_ok("demo.profile=[{len: 1, sp: 1, time_s: 1}]");
    set_ok("demo.profile=");   /* null clears it */
    cr_assert_eq(table_of("demo", &r, &n), VL_OK, "%s", err.msg);
    cr_assert(r == NULL && n == 0);
    cr_assert_eq(vl_config_bind(&cfg, "demo", text_params, &o, &err), VL_OK, "%s", err.msg);
    cr_assert_eq(vl_config_table(&cfg, "demo", "profile", row_cols, 0, &r, &n, &err),
                 VL_EINTERNAL);
    cr_assert_eq(vl_config_table(&cfg, "demo", "profile", NULL, 3, &r, &n, &err),
                 VL_EINTERNAL);
}

/* Every malformed table: the accessor's message, and bind's (same text, same place). */
Test(config, table_errors, .init = setup, .fini = teardown)
{
    static const struct {
        const char *yaml, *msg;
    } cases[] = {
        {"demo: {profile: 3}\n",
         "t.yaml:1:17: demo.profile: expected a list of mappings of len, sp, time_s, got '3'"},
        {"demo:\n  profile: {len: 1}\n",
         "t.yaml:2:12: demo.profile: expected a list of mappings of len, sp, time_s, got a "
         "mapping"},
        {"demo:\n  profile:\n    - {len: 1, sp: 1, time_s: 1}\n    - [1, 1, 1]\n",
         "t.yaml:4:7: demo.profile[1]: expected a mapping of len, sp, time_s, got a sequence"},
        {"demo:\n  profile:\n    - {len: 1, sp: 1, tme_s: 1}\n",
         "t.yaml:3:23: demo.profile[0].tme_s: unknown column, did you mean 'time_s'?"},
        {"demo:\n  profile:\n    - {len: 1, sp: 1, time_s: 1, zzzzzz: 2}\n",
         "t.yaml:3:34: demo.profile[0].zzzzzz: unknown column (expected len, sp, time_s)"},
        {"demo:\n  profile:\n    - {len: 1, time_s: 1}\n",
         "t.yaml:3:7: demo.profile[0]: missing column 'sp' (a row has len, sp, time_s)"},
        {"demo:\n  profile:\n    - len: 16K\n      sp: 1\n      time_s: 1\n",
         "t.yaml:3:12: demo.profile[0].len: expected a number, got '16K'"},
        {"demo:\n  profile:\n    - {len: 1, sp: '1', time_s: 1}\n",
         "t.yaml:3:20: demo.profile[0].sp: expected a number, got '\"1\"'"},
        {"demo:\n  profile:\n    - {len: 1, sp: 1, time_s: .nan}\n",
         "t.yaml:3:31: demo.profile[0].time_s: expected a number, got '.nan'"},
    };
    text_opts o;
    double *r = NULL;
    size_t n;

    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        vl_config_free(&cfg);
        setup();
        load_ok(cases[i].yaml);
        cr_assert_eq(table_of("demo", &r, &n), VL_ECONFIG, "case %zu", i);
        cr_assert_str_eq(err.msg, cases[i].msg, "case %zu", i);
        cr_assert(r == NULL && n == 0);
        cr_assert_eq(vl_config_bind(&cfg, "demo", text_params, &o, &err), VL_ECONFIG);
        cr_assert_str_eq(err.msg, cases[i].msg, "case %zu (bind)", i);
    }
    /* ranges are bind's (the vl_param's min, max), not the accessor's */
    vl_config_free(&cfg);
    setup();
    load_ok("demo:\n  profile:\n    - {len: 1, sp: -2, time_s: 1}\n");
    cr_assert_eq(table_of("demo", &r, &n), VL_OK, "%s", err.msg);
    cr_assert(n == 1 && r[1] == -2);
    free(r);
    cr_assert_eq(vl_config_bind(&cfg, "demo", text_params, &o, &err), VL_ECONFIG);
    cr_assert_str_eq(err.msg, "t.yaml:3:20: demo.profile[0].sp: expected 0..1e+12, got -2");
    /* an assignment has no line:col */
    vl_config_free(&cfg);
    setup();
    set_ok("demo.profile=[{len: 1, sp: x, time_s: 1}]");
    cr_assert_eq(table_of("demo", &r, &n), VL_ECONFIG);
    cr_assert_str_eq(err.msg, "--set demo.profile=[{len: 1, sp: x, time_s: 1}]: "
                              "demo.profile[0].sp: expected a number, got 'x'");
}

Test(config, check_sections, .init = setup, .fini = teardown)
{
    const char *const known[] = {"hbp", "skrull"};

    load_ok("hbp:\n  k: 1\nskrul:\n  x: 1\n");
    cr_assert_eq(vl_config_check_sections(&cfg, known, 2, &err), VL_ECONFIG);
    cr_assert_str_eq(err.msg, "t.yaml:3:1: skrul: unknown section, did you mean 'skrull'?");
    vl_config_free(&cfg);
    setup();
    load_ok("zzz: {}\n");
    cr_assert_eq(vl_config_check_sections(&cfg, known, 2, &err), VL_ECONFIG);
    cr_assert_str_eq(err.msg, "t.yaml:1:1: zzz: unknown section (expected one of model, "
                              "cluster, training, cost, pack, hbp, skrull)");
    vl_config_free(&cfg);
    setup();
    load_ok("hbp: {k: 1}\ntraining: {pp: 2}\n");
    cr_assert_eq(vl_config_check_sections(&cfg, known, 2, &err), VL_OK, "%s", err.msg);
}

/* ---- dumps (assert_round_trip: config_fixture.h) ---- */

Test(config, dump_round_trip_default, .init = setup, .fini = teardown)
{
    cr_assert_eq(vl_config_finalize(&cfg, &err), VL_OK);
    assert_round_trip(&cfg);
}

Test(config, dump_round_trip_changed, .init = setup, .fini = teardown)
{
    load_ok("model: {preset: deepseek-v2}\n"
            "cluster: {gpu: a100-80gb, gpus: 64, mem_gib: 79.3, gemm_eff: [[100, 0.1], "
            "[3000, 0.9]]}\n"
            "training: {tp: 2, sp: 4, sp_kind: ring, seed: 123456789012, global_tokens: 99,"
            " overlap: {dp: 0.3333333333333333}}\n"
            "cost: {fit: {a: 1.5e-13, b: 3e-9, c: 0.00002}, comm: off, act_bytes: 12345.5}\n"
            "pack: {algo: spfhp}\n"
            "hbp: {k: 4, name: \"007\", list: [1, 2.5, yes]}\n");
    set_ok("hbp.k=5");
    set_ok("chunkflow.chunk=8192");
    cr_assert_eq(vl_config_finalize(&cfg, &err), VL_OK, "%s", err.msg);
    assert_round_trip(&cfg);
}

Test(config, dump_json_shape, .init = setup, .fini = teardown)
{
    char *j = NULL;

    set_ok("hbp.k=5");
    cr_assert_eq(vl_config_finalize(&cfg, &err), VL_OK);
    cr_assert_eq(vl_config_dump_json(&cfg, &j, &err), VL_OK);
    cr_assert(strncmp(j, "{\"model\":{\"preset\":\"llama3.1-8b\",\"layers\":32,", 43) == 0, "%s",
              j);
    cr_assert(strstr(j, "\"training\":{\"dp\":32,\"tp\":1,") != NULL, "%s", j);
    cr_assert(strstr(j, "\"cost\":{\"fit\":null,\"schemes\":[],\"comm\":true,") != NULL, "%s",
              j);
    cr_assert(strstr(j, "\"gemm_eff\":[[128,0.35],[256,0.5],") != NULL, "%s", j);
    cr_assert(strstr(j, "},\"hbp\":{\"k\":5}}") != NULL, "%s", j);
    free(j);
}

Test(config, cost_schemes, .init = setup, .fini = teardown)
{
    char *j = NULL;

    load_ok("cost:\n  schemes:\n    - {tp: 4, pp: 2, a: 2.04563898e-06, b: 0.118301177, "
            "c: 65.4}\n    - {tp: 8, pp: 1, sp: 2, a: 0, b: 0.5, c: 1}\n");
    cr_assert_eq(vl_config_finalize(&cfg, &err), VL_OK, "%s", err.msg);
    cr_assert_eq(cfg.cost.nschemes, 2);
    cr_assert_eq(cfg.cost.schemes[0].tp, 4);
    cr_assert_eq(cfg.cost.schemes[0].sp, 1, "sp defaults to 1");
    cr_assert_eq(cfg.cost.schemes[1].sp, 2);
    cr_assert_float_eq(cfg.cost.schemes[0].a, 2.04563898e-06, 1e-20);
    assert_round_trip(&cfg);
    cr_assert_eq(vl_config_dump_json(&cfg, &j, &err), VL_OK);
    cr_assert(strstr(j, "\"schemes\":[{\"tp\":4,\"pp\":2,\"sp\":1,\"a\":2.04563898e-6,"
                        "\"b\":0.118301177,\"c\":65.4},{\"tp\":8,") != NULL, "%s", j);
    free(j);
    set_ok("cost.schemes=null");
    cr_assert_eq(cfg.cost.nschemes, 0);
    cr_assert_eq(vl_config_set(&cfg, "cost.schemes=[{tp: 1, pp: 1, a: 1, b: 1}]", &err),
                 VL_ECONFIG);
    cr_assert(strstr(err.msg, "cost.schemes[0]: missing column 'c'") != NULL, "%s", err.msg);
    cr_assert_eq(vl_config_set(&cfg, "cost.schemes=[{tp: 0, pp: 1, a: 1, b: 1, c: 1}]", &err),
                 VL_ECONFIG);
    cr_assert_eq(vl_config_set(&cfg, "cost.schemes=[{tp: 1, pp: 1, a: -1, b: 1, c: 1}]", &err),
                 VL_ECONFIG);
    cr_assert_eq(vl_config_set(&cfg, "cost.schemes=[{tp: 1, pp: 1, a: 1, b: 1, c: 1, x: 1}]",
                               &err), VL_ECONFIG);
    cr_assert(strstr(err.msg, "unknown column 'x'") != NULL, "%s", err.msg);
}

/* comm: analytic marks a row of compute alone; it reads, dumps and reads back, a row
 * without it dumps as before, and it is refused where it cannot mean anything. */
Test(config, cost_schemes_comm_analytic, .init = setup, .fini = teardown)
{
    char *j = NULL, *y = NULL;

    load_ok("cost:\n  schemes:\n    - {tp: 1, pp: 1, a: 1e-7, b: 0.002, c: 1}\n"
            "    - {tp: 1, pp: 1, sp: 8, a: 2e-8, b: 0.0003, c: 0.5, comm: analytic}\n"
            "    - {tp: 2, pp: 1, a: 5e-8, b: 0.001, c: 0.7, comm: included}\n");
    cr_assert_eq(vl_config_finalize(&cfg, &err), VL_OK, "%s", err.msg);
    cr_assert_eq(cfg.cost.nschemes, 3);
    cr_assert(!cfg.cost.schemes[0].comm_analytic);
    cr_assert(cfg.cost.schemes[1].comm_analytic);
    cr_assert(!cfg.cost.schemes[2].comm_analytic);
    assert_round_trip(&cfg);
    cr_assert_eq(vl_config_dump_json(&cfg, &j, &err), VL_OK);
    cr_assert(strstr(j, "\"b\":0.002,\"c\":1.0},{\"tp\":1,\"pp\":1,\"sp\":8,") != NULL, "%s", j);
    cr_assert(strstr(j, "\"b\":0.0003,\"c\":0.5,\"comm\":\"analytic\"},{\"tp\":2,") != NULL,
              "%s", j);
    cr_assert(strstr(j, "\"c\":0.7}]") != NULL, "%s", j);
    cr_assert_eq(vl_config_dump_yaml(&cfg, &y, &err), VL_OK);
    cr_assert(strstr(y, "{tp: 1, pp: 1, sp: 8, a: 2e-08, b: 0.0003, c: 0.5, comm: analytic}") !=
              NULL, "%s", y);
    cr_assert(strstr(y, "{tp: 2, pp: 1, sp: 1, a: 5e-08, b: 0.001, c: 0.7}") != NULL, "%s", y);
    free(j);
    free(y);
    cr_assert_eq(vl_config_set(&cfg, "cost.schemes=[{tp: 1, pp: 1, sp: 2, a: 1, b: 1, c: 1, "
                               "comm: measured}]", &err), VL_ECONFIG);
    cr_assert(strstr(err.msg, "included or analytic") != NULL, "%s", err.msg);
    cr_assert_eq(vl_config_set(&cfg, "cost.schemes=[{tp: 1, pp: 4, a: 1, b: 1, c: 1, "
                               "comm: analytic}]", &err), VL_ECONFIG);
    cr_assert(strstr(err.msg, "cost.schemes[0]: comm: analytic on a row of tp 1, sp 1") != NULL,
              "%s", err.msg);
    /* cost.fit models no communication: nothing for the row to add */
    set_ok("cost.schemes=[{tp: 2, pp: 1, a: 1, b: 1, c: 1, comm: analytic}]");
    set_ok("cost.fit={a: 1e-12, b: 1e-9, c: 1e-5}");
    cr_assert_eq(vl_config_finalize(&cfg, &err), VL_ECONFIG);
    cr_assert(strstr(err.msg, "cost.schemes: row 0 has comm: analytic, but with cost.fit") !=
              NULL, "%s", err.msg);
}

Test(config, table_dumps, .init = setup, .fini = teardown)
{
    char *j = NULL;

    load_ok("hbp:\n  groups: auto\n  profile:\n    - {len: 16384, sp: 1, time_s: 2.65}\n"
            "    - len: 131072\n      sp: 8\n      time_s: 3\n");
    set_ok("chunkflow.profile=[{len: 8192, sp: 2, time_s: 1.5}]");
    cr_assert_eq(vl_config_finalize(&cfg, &err), VL_OK, "%s", err.msg);
    assert_round_trip(&cfg);
    cr_assert_eq(vl_config_dump_json(&cfg, &j, &err), VL_OK);
    cr_assert(strstr(j, "\"hbp\":{\"groups\":\"auto\",\"profile\":[{\"len\":16384,\"sp\":1,"
                        "\"time_s\":2.65},{\"len\":131072,\"sp\":8,\"time_s\":3}]}") != NULL,
              "%s", j);
    cr_assert(strstr(j, "\"chunkflow\":{\"profile\":[{\"len\":8192,\"sp\":2,"
                        "\"time_s\":1.5}]}") != NULL, "%s", j);
    free(j);
}
