/* tests/pack_fixture.h -- the pack strategy tests' fixture (test_baseline_pack*.c): a
 * config of dp one-GPU ranks, planning given lengths with `pack`, counting packs. */
#ifndef VLPLAN_PACK_FIXTURE_H
#define VLPLAN_PACK_FIXTURE_H

#include <criterion/criterion.h>
#include <stdlib.h>

#include "run.h"
#include "vlplan_strategy.h"

/* dp ranks of one GPU, gb samples per iteration, packs of cap tokens, one epoch, no
 * recompute (so memory never decides). */
static inline void pack_config(vl_config *cfg, int dp, uint32_t gb, uint32_t cap)
{
    vl_err err = {0};
    cr_assert_eq(vl_config_init_default(cfg, &err), VL_OK, "%s", err.msg);
    cr_assert_eq(vl_config_finalize(cfg, &err), VL_OK, "%s", err.msg);
    cfg->training.dp = dp;
    cfg->cluster.gpus = dp;   /* dp x tp x pp x sp = gpus: every GPU joins every step */
    cfg->training.tp = cfg->training.pp = cfg->training.sp = 1;
    cfg->training.global_batch = gb;
    cfg->training.global_tokens = 0;
    cfg->training.max_seq_len = cap;
    cfg->training.epochs = 1;
    cfg->training.recompute = VL_RECOMPUTE_NONE;
}

typedef struct run {
    vl_manifest *m;
    vl_plan p;
} run;

static inline void pack_plan(run *r, vl_config *cfg, const uint32_t *len, size_t n,
                             uint64_t seed)
{
    vl_err err = {0};
    vl_run_result res;
    vl_run_opts o = {.seed = seed, .allow_oom = true};
    cr_assert_eq(vl_manifest_from_lengths(&r->m, len, n, &err), VL_OK, "%s", err.msg);
    cr_assert_eq(vl_run_plan(&r->p, vl_strategy_find("pack"), r->m, cfg, &o, &res, &err),
                 VL_OK, "%s", err.msg);
    free(res.log);
}

static inline void run_release(run *r)
{
    vl_plan_free(&r->p);
    vl_manifest_free(r->m);
}

/* Micro-batches holding at least one segment. */
static inline size_t nonempty_mbs(const vl_plan *p)
{
    size_t k = 0;
    for (size_t j = 0; j < p->nmbs; j++)
        k += p->mbs[j].nseg > 0;
    return k;
}

#endif
