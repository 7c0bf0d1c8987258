/* tests/hbp_fixture.h -- the HBP tests' fixture (test_hbp.c, test_hbp_select.c): one
 * planning run from YAML and --set, long-tailed lengths, small training configs. */
#ifndef VLPLAN_HBP_FIXTURE_H
#define VLPLAN_HBP_FIXTURE_H

#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "hbp_impl.h"
#include "rng.h"
#include "run.h"

extern const vl_strategy vl_strategy_hbp;

typedef struct fx {
    vl_manifest *m;
    vl_config cfg;
    vl_cost cost;
    vl_plan p;
    char *log;
    char warnings[sizeof ((vl_run_result *)0)->warnings];
    vl_err err;
    bool cfg_ok;
} fx;

/* yaml, then the --set assignment `set` (either may be NULL), then plan. */
static inline vl_status run_set(fx *f, const vl_strategy *s, const uint32_t *len, size_t n,
                                const char *yaml, const char *set, uint64_t seed,
                                int verbose)
{
    vl_run_opts ro = {.seed = seed, .verbose = verbose};
    vl_status st;

    memset(f, 0, sizeof *f);
    cr_assert_eq(vl_manifest_from_lengths(&f->m, len, n, &f->err), VL_OK, "%s", f->err.msg);
    cr_assert_eq(vl_config_init_default(&f->cfg, &f->err), VL_OK, "%s", f->err.msg);
    f->cfg_ok = true;
    if (yaml && (st = vl_config_load_string(&f->cfg, yaml, "test.yaml", &f->err)) != VL_OK)
        return st;
    if (set && (st = vl_config_set(&f->cfg, set, &f->err)) != VL_OK)
        return st;
    if ((st = vl_config_finalize(&f->cfg, &f->err)) != VL_OK)
        return st;
    cr_assert_eq(vl_cost_init(&f->cost, &f->cfg, &f->err), VL_OK, "%s", f->err.msg);
    vl_run_result res;
    st = vl_run_plan(&f->p, s, f->m, &f->cfg, &ro, &res, &f->err);
    f->log = res.log;
    memcpy(f->warnings, res.warnings, sizeof f->warnings);
    return st;
}

static inline vl_status run_strategy(fx *f, const vl_strategy *s, const uint32_t *len,
                                     size_t n, const char *yaml, uint64_t seed,
                                     int verbose)
{
    return run_set(f, s, len, n, yaml, NULL, seed, verbose);
}

static inline vl_status run_hbp(fx *f, const uint32_t *len, size_t n, const char *yaml,
                                uint64_t seed)
{
    return run_strategy(f, &vl_strategy_hbp, len, n, yaml, seed, 0);
}

static inline void fx_free(fx *f)
{
    vl_plan_free(&f->p);
    vl_manifest_free(f->m);
    if (f->cfg_ok)
        vl_config_free(&f->cfg);
    free(f->log);
}

/* Long-tailed lengths in [1, maxlen]: mostly short, a few long. */
static inline uint32_t *mixed_lengths(size_t n, uint32_t maxlen, uint64_t seed)
{
    uint32_t *len = malloc(n * sizeof *len);
    vl_rng r;

    vl_rng_seed(&r, seed, 7);
    for (size_t i = 0; i < n; i++) {
        double u = vl_rng_unit(&r);
        uint32_t l = (uint32_t)(1 + u * u * u * u * maxlen);
        len[i] = l > maxlen ? maxlen : l;
    }
    return len;
}

#define SMALL_TRAINING "training: {max_seq_len: 32768, global_tokens: 131072"
#define SMALL_CFG "cluster: {gpus: 8}\n" SMALL_TRAINING "}\n"
#define SMALL_2EPOCHS "cluster: {gpus: 8}\n" SMALL_TRAINING ", epochs: 2}\n"

#endif
