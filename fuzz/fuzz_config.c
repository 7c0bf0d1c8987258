/* fuzz/fuzz_config.c -- the config loader on any bytes (issue 13, item 1): YAML text
 * and --set assignments over the built-in defaults, then finalize and the strategy
 * sections checked and bound, as `vlplan config -c FILE --set K=V ...` does.  The input
 * is the YAML text, then up to eight assignments, each after a NUL byte.  Beyond "no
 * crash, no leak, no UB", an accepted config must dump to YAML and JSON, and its YAML
 * dump must load back over the defaults into the same config (equal JSON dumps: what
 * `vlplan config --dump` promises, its output is that config). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "vlplan_strategy.h"

#define MAX_SETS 8

static void check(int ok, const char *what, const char *detail)
{
    if (!ok) {
        fprintf(stderr, "fuzz_config: %s%s%s\n", what, detail ? ": " : "",
                detail ? detail : "");
        abort();
    }
}

/* What `vlplan config` checks beyond finalize: every strategy section is known and
 * binds. */
static vl_status strategies(const vl_config *cfg, vl_err *err)
{
    const char *names[64];
    size_t n = 0;
    vl_status st;

    for (size_t i = 0; i < vl_strategy_count() && n < 64; i++)
        if (vl_strategy_at(i)->section)
            names[n++] = vl_strategy_at(i)->section;
    if ((st = vl_config_check_sections(cfg, names, n, err)) != VL_OK)
        return st;
    for (size_t i = 0; i < vl_strategy_count() && st == VL_OK; i++) {
        const vl_strategy *s = vl_strategy_at(i);
        void *opts;
        if (!s->section || !s->params)
            continue;
        if ((opts = calloc(1, s->opts_size)) == NULL)
            return vl_seterr(err, VL_ENOMEM, "out of memory");
        st = vl_config_bind(cfg, s->section, s->params, opts, err);
        free(opts);
    }
    return st;
}

/* The YAML dump loaded back is the same config. */
static void round_trip(const char *yaml, const char *json)
{
    vl_config c;
    vl_err err = {0};
    char *again = NULL;

    check(vl_config_init_default(&c, &err) == VL_OK, "defaults", err.msg);
    if (vl_config_load_string(&c, yaml, "dump", &err) != VL_OK ||
        vl_config_finalize(&c, &err) != VL_OK || strategies(&c, &err) != VL_OK) {
        fprintf(stderr, "%s\n", yaml);
        check(0, "the dump does not load back", err.msg);
    }
    check(vl_config_dump_json(&c, &again, &err) == VL_OK, "JSON dump of the dump", err.msg);
    if (strcmp(again, json) != 0) {
        fprintf(stderr, "--- YAML dump\n%s--- JSON before\n%s\n--- JSON after\n%s\n", yaml,
                json, again);
        check(0, "the dump reads back as another config", NULL);
    }
    free(again);
    vl_config_free(&c);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1), *sets[MAX_SETS], *yaml = NULL, *json = NULL;
    size_t nsets = 0, yaml_len;
    vl_config cfg;
    vl_err err = {0};
    vl_status st;

    check(text != NULL, "out of memory", NULL);
    memcpy(text, data, size);
    text[size] = '\0';
    yaml_len = strlen(text);
    for (char *p = text + yaml_len; p < text + size && nsets < MAX_SETS; p += strlen(p)) {
        sets[nsets++] = ++p; /* past the NUL */
        if (p >= text + size)
            break;
    }
    check(vl_config_init_default(&cfg, &err) == VL_OK, "defaults", err.msg);
    st = vl_config_load_string(&cfg, text, "fuzz.yaml", &err);
    for (size_t i = 0; i < nsets && st == VL_OK; i++)
        st = vl_config_set(&cfg, sets[i], &err);
    if (st == VL_OK)
        st = vl_config_finalize(&cfg, &err);
    if (st == VL_OK)
        st = strategies(&cfg, &err);
    if (st == VL_OK) {
        check(vl_config_dump_yaml(&cfg, &yaml, &err) == VL_OK, "dump", err.msg);
        check(vl_config_dump_json(&cfg, &json, &err) == VL_OK, "JSON dump", err.msg);
        round_trip(yaml, json);
    } else {
        check(err.msg[0] != '\0', "an error without a message", NULL);
        check(st != VL_EINTERNAL, "internal error", err.msg);
    }
    free(yaml);
    free(json);
    vl_config_free(&cfg);
    free(text);
    return 0;
}
