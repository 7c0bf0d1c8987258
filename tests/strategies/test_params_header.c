/* tests/strategies/test_params_header.c -- every scalar parameter of every registered
 * strategy, in every YAML spelling its binding accepts, survives the plan header: the
 * config dumped as JSON (vl_config_dump_json_params, what the runner writes) and read
 * back binds to the same values.  Issue 28: `--set mcore_cp.barrier=on` was written
 * "on", a string once read from JSON, and verify refused the plan's own config. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "vlplan_strategy.h"

/* section.key=text bound under the default config, then under the JSON dump of that
 * config read back: the same opts, or the spelling is refused by both. */
static void assert_survives(const vl_strategy *s, const vl_param *p, const char *text)
{
    char assign[256], *json = NULL;
    vl_config a, b;
    vl_err err;
    void *oa = calloc(1, s->opts_size + 1), *ob = calloc(1, s->opts_size + 1);

    cr_assert(oa && ob);
    snprintf(assign, sizeof assign, "%s.%s=%s", s->section, p->key, text);
    cr_assert_eq(vl_config_init_default(&a, &err), VL_OK);
    cr_assert_eq(vl_config_set(&a, assign, &err), VL_OK, "%s: %s", assign, err.msg);
    cr_assert_eq(vl_config_finalize(&a, &err), VL_OK, "%s", err.msg);
    if (vl_config_bind(&a, s->section, s->params, oa, &err) == VL_OK) {
        cr_assert_eq(vl_config_dump_json_params(&a, s->section, s->params, &json, &err), VL_OK);
        cr_assert_eq(vl_config_init_default(&b, &err), VL_OK);
        cr_assert_eq(vl_config_load_string(&b, json, "plan header config", &err), VL_OK,
                     "%s", err.msg);
        cr_assert_eq(vl_config_finalize(&b, &err), VL_OK, "%s", err.msg);
        cr_assert_eq(vl_config_bind(&b, s->section, s->params, ob, &err), VL_OK,
                     "--set %s: the header's config is refused: %s", assign, err.msg);
        cr_assert_eq(memcmp(oa, ob, s->opts_size), 0, "--set %s binds to another value", assign);
        vl_config_free(&b);
        free(json);
    }
    vl_config_free(&a);
    free(oa);
    free(ob);
}

static void spellings(const vl_strategy *s, const vl_param *p)
{
    static const char *const bools[] = {"on", "off", "yes", "no", "True", "FALSE", "true"};
    char text[64];

    switch (p->type) {
    case VL_P_BOOL:
        for (size_t i = 0; i < sizeof bools / sizeof *bools; i++)
            assert_survives(s, p, bools[i]);
        break;
    case VL_P_ENUM:
        for (size_t i = 0; p->choices && p->choices[i]; i++)
            assert_survives(s, p, p->choices[i]);
        break;
    case VL_P_INT:
    case VL_P_UINT:
    case VL_P_AUTO_UINT:
        snprintf(text, sizeof text, "+%.0f", p->max < 1e15 ? p->max : p->min);
        assert_survives(s, p, text);
        snprintf(text, sizeof text, "%.0f", p->min);
        assert_survives(s, p, text);
        break;
    case VL_P_DOUBLE:
        /* 15 significant digits: what the config dump keeps of every real */
        snprintf(text, sizeof text, "%.15g", p->min + (p->max - p->min) / 3);
        assert_survives(s, p, text);
        snprintf(text, sizeof text, "%.0f", p->min);
        assert_survives(s, p, text);
        break;
    default:
        break;
    }
    if (p->def)
        assert_survives(s, p, p->def);
}

Test(params_header, every_scalar_parameter_round_trips)
{
    size_t tried = 0;

    for (size_t i = 0; i < vl_strategy_count(); i++) {
        const vl_strategy *s = vl_strategy_at(i);
        for (const vl_param *p = s->params; s->section && p && p->key; p++, tried++)
            spellings(s, p);
    }
    cr_assert_gt(tried, 20, "only %zu parameters", tried);
}

/* The defect as reported: the header says true, not "on". */
Test(params_header, bool_written_as_json_bool)
{
    const vl_strategy *s = vl_strategy_find("mcore_cp");
    vl_config c;
    vl_err err;
    char *json = NULL;

    cr_assert(s);
    cr_assert_eq(vl_config_init_default(&c, &err), VL_OK);
    cr_assert_eq(vl_config_set(&c, "mcore_cp.barrier=on", &err), VL_OK, "%s", err.msg);
    cr_assert_eq(vl_config_dump_json_params(&c, s->section, s->params, &json, &err), VL_OK);
    cr_assert(strstr(json, "\"mcore_cp\":{\"barrier\":true}") != NULL, "%s", json);
    free(json);
    vl_config_free(&c);
}

/* verify compares the plan header's config with the one given (-c/--set): the header's
 * true and the user's on are the same setting, not "the strategy sections" differing. */
Test(params_header, header_bool_equals_the_users_spelling)
{
    const vl_strategy *s = vl_strategy_find("mcore_cp");
    vl_config given, header;
    vl_err err;
    char *json = NULL, diff[256];
    size_t n = 99;

    cr_assert(s);
    cr_assert_eq(vl_config_init_default(&given, &err), VL_OK);
    cr_assert_eq(vl_config_set(&given, "mcore_cp.barrier=on", &err), VL_OK, "%s", err.msg);
    cr_assert_eq(vl_config_finalize(&given, &err), VL_OK, "%s", err.msg);
    cr_assert_eq(vl_config_dump_json_params(&given, s->section, s->params, &json, &err), VL_OK);
    cr_assert_eq(vl_config_init_default(&header, &err), VL_OK);
    cr_assert_eq(vl_config_load_string(&header, json, "header", &err), VL_OK, "%s", err.msg);
    cr_assert_eq(vl_config_finalize(&header, &err), VL_OK, "%s", err.msg);
    cr_assert_eq(vl_config_diff(&header, &given, diff, sizeof diff, &n, &err), VL_OK);
    cr_assert_eq(n, 0, "%s", diff);
    cr_assert_eq(vl_config_set(&given, "mcore_cp.barrier=off", &err), VL_OK, "%s", err.msg);
    cr_assert_eq(vl_config_diff(&header, &given, diff, sizeof diff, &n, &err), VL_OK);
    cr_assert_eq(n, 1, "on against off must differ");
    vl_config_free(&given);
    vl_config_free(&header);
    free(json);
}
