/* tests/model/test_sim_memory.c -- vl_sim_opts.memory_only, what verify's memory check
 * runs: on every strategy's plans (recompute, backward and shared packs, CP placement,
 * uneven ranks, two pipeline stages) each iteration's memory figures equal a full
 * simulation's, and the skipped times and FLOPs are 0. */
#include <criterion/criterion.h>

#include "run.h"
#include "sim.h"
#include "testutil.h"

/* Plan `name` on 600 long-tailed samples under sets (allow_oom: the figures over
 * capacity are compared as well), then compare every iteration both ways. */
static void same_memory(const char *name, const char *const *sets)
{
    const vl_strategy *s = vl_strategy_find(name);
    vl_manifest *m = tu_gen_manifest("tulu3-longcite", 600, 5);
    vl_run_opts o = {.seed = 3, .allow_oom = true};
    vl_sim_opts full = VL_SIM_OPTS_INIT, mem = VL_SIM_OPTS_INIT;
    vl_config cfg;
    vl_cost cost;
    vl_plan p;
    vl_err err;

    cr_assert_not_null(s, "%s", name);
    tu_config(&cfg, NULL, sets);
    cr_assert_eq(vl_cost_init(&cost, &cfg, &err), VL_OK, "%s", err.msg);
    cr_assert_eq(vl_run_plan(&p, s, m, &cfg, &o, NULL, &err), VL_OK, "%s: %s", name, err.msg);
    cr_assert_gt(p.niters, 0, "%s", name);
    mem.memory_only = true;
    for (size_t it = 0; it < p.niters; it++) {
        vl_sim_iter_result a, b;
        cr_assert_eq(vl_sim_iter(&p, it, &cost, &full, &a, NULL, NULL, &err), VL_OK, "%s",
                     err.msg);
        cr_assert_eq(vl_sim_iter(&p, it, &cost, &mem, &b, NULL, NULL, &err), VL_OK, "%s",
                     err.msg);
        cr_assert_eq(a.peak_mem_gib, b.peak_mem_gib, "%s iteration %zu", name, it);
        cr_assert_eq(a.peak_rank, b.peak_rank, "%s iteration %zu", name, it);
        cr_assert_eq(a.peak_stage, b.peak_stage, "%s iteration %zu", name, it);
        cr_assert_eq(a.oom, b.oom, "%s iteration %zu", name, it);
        cr_assert_eq(a.tokens, b.tokens, "%s iteration %zu", name, it);
        cr_assert_gt(a.iter_time_ms, 0.0, "%s iteration %zu", name, it);
        cr_assert(b.iter_time_ms == 0.0 && b.makespan_ms == 0.0 && b.flops == 0.0 &&
                      b.mfu == 0.0,
                  "%s iteration %zu: memory only, yet timed", name, it);
    }
    vl_plan_free(&p);
    vl_manifest_free(m);
    vl_config_free(&cfg);
}

Test(sim_memory, every_strategy_one_stage)
{
    static const char *const sets[] = {"training.oversize=drop", "cluster.gpus=8",
                                       "training.global_batch=64", NULL};
    static const char *const names[] = {"random",   "pack",     "hbp",       "chunkflow",
                                        "skrull",   "mcore_cp", "hydraulis", "slimpack",
                                        "verl",     NULL};

    for (size_t i = 0; names[i] != NULL; i++)
        same_memory(names[i], sets);
}

/* Chunks of 2K, one keeping its activations: long samples recompute (R operations,
 * the state store between F and R). */
Test(sim_memory, chunkflow_recompute)
{
    static const char *const sets[] = {"training.oversize=drop", "cluster.gpus=8",
                                       "training.global_batch=64", "chunkflow.chunk_size=2048",
                                       "chunkflow.k=1", NULL};

    same_memory("chunkflow", sets);
}

Test(sim_memory, two_pipeline_stages)
{
    static const char *const sets[] = {"training.oversize=drop", "cluster.gpus=8",
                                       "training.pp=2", "training.global_batch=64", NULL};
    static const char *const names[] = {"pack", "hbp", "chunkflow", "slimpack", NULL};

    for (size_t i = 0; names[i] != NULL; i++)
        same_memory(names[i], sets);
}
