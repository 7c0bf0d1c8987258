/* tests/check/test_verify_memory.c -- the plan checker's modelled memory (I3): a micro-batch
 * too large for any device is caught, and the model follows an explicit schedule (one
 * recomputed chunk live at a time fits where keeping every chunk does not). */
#include <criterion/criterion.h>

#include "config.h"
#include "cost.h"
#include "verify_fixture.h"

Test(verify, modelled_memory)
{
    static const uint32_t len[] = {2000000000u, 1000};
    vl_manifest *m = tu_manifest(len, 2);
    vl_config cfg;
    vl_cost cost;
    vl_plan p;
    vl_verify_report rep;
    vl_err err = {0};

    cr_assert_eq(vl_config_init_default(&cfg, &err), VL_OK, "%s", err.msg);
    /* a small model, so that one unsharded replica's states fit on the device */
    cr_assert_eq(vl_config_set(&cfg, "model.preset=qwen2.5-0.5b", &err), VL_OK, "%s",
                 err.msg);
    /* one GPU, the plan's one rank: every GPU joins every step */
    cr_assert_eq(vl_config_set(&cfg, "cluster.gpus=1", &err), VL_OK, "%s", err.msg);
    cr_assert_eq(vl_config_set(&cfg, "training.oversize=drop", &err), VL_OK, "%s", err.msg);
    cr_assert_eq(vl_config_finalize(&cfg, &err), VL_OK, "%s", err.msg);
    cr_assert_eq(vl_cost_init(&cost, &cfg, &err), VL_OK, "%s", err.msg);
    vl_plan_init(&p, m, "t", 1, NULL);
    vl_plan_iter_begin(&p, 0, NULL);
    vl_plan_rank_begin(&p, 0, &PAR1, NULL);
    vl_plan_mb_begin(&p, 1000, NULL);
    vl_plan_seg(&p, 1, 0, 1000, NULL);
    vl_plan_drop(&p, 0, 0, 2000000000u, VL_DROP_OVERSIZE, NULL);
    cr_assert_eq(vl_plan_verify(&p, &cost, &vl_registry_rules,
                                &rep, &err), VL_OK, "%s", err.msg);
    /* two billion tokens in one micro-batch cannot fit any device */
    vl_plan_free(&p);
    vl_plan_init(&p, m, "t", 1, NULL);
    vl_plan_iter_begin(&p, 0, NULL);
    vl_plan_rank_begin(&p, 0, &PAR1, NULL);
    vl_plan_mb_begin(&p, 2000000000u, NULL);
    vl_plan_seg(&p, 0, 0, 2000000000u, NULL);
    vl_plan_mb_begin(&p, 1000, NULL);
    vl_plan_seg(&p, 1, 0, 1000, NULL);
    cr_assert_eq(vl_plan_verify(&p, &cost, &vl_registry_rules, &rep, &err), VL_EVERIFY);
    cr_assert_eq(rep.oom_iters, 1);
    cr_assert(has_msg(&rep, "I3: iteration 0, rank 0, stage 0: modelled memory"));
    vl_plan_free(&p);
    vl_config_free(&cfg);
    vl_manifest_free(m);
}

/* ChunkFlow-style schedule: only the last chunk keeps its activations; the others keep
 * their K/V state and are recomputed one at a time, so one chunk's activations are live
 * at a time.  Sized so that one or two fit the device and four do not. */
Test(verify, modelled_memory_follows_the_schedule)
{
    vl_manifest *m;
    vl_config cfg;
    vl_cost cost;
    vl_plan p;
    vl_verify_report rep;
    vl_err err = {0};
    static const vl_op keep_last[] = {{0, VL_OP_F}, {1, VL_OP_F}, {2, VL_OP_F}, {3, VL_OP_F},
                                      {3, VL_OP_B}, {2, VL_OP_R}, {2, VL_OP_B}, {1, VL_OP_R},
                                      {1, VL_OP_B}, {0, VL_OP_R}, {0, VL_OP_B}};
    static const vl_op keep_all[] = {{0, VL_OP_F}, {1, VL_OP_F}, {2, VL_OP_F}, {3, VL_OP_F},
                                     {3, VL_OP_B}, {2, VL_OP_B}, {1, VL_OP_B}, {0, VL_OP_B}};

    cr_assert_eq(vl_config_init_default(&cfg, &err), VL_OK, "%s", err.msg);
    cr_assert_eq(vl_config_set(&cfg, "model.preset=qwen2.5-0.5b", &err), VL_OK, "%s",
                 err.msg);
    /* one GPU, the plan's one rank: every GPU joins every step */
    cr_assert_eq(vl_config_set(&cfg, "cluster.gpus=1", &err), VL_OK, "%s", err.msg);
    /* a ChunkFlow plan: its samples and chunks as long as the test needs */
    cr_assert_eq(vl_config_set(&cfg, "training.max_seq_len=2000000000", &err), VL_OK, "%s",
                 err.msg);
    cr_assert_eq(vl_config_set(&cfg, "chunkflow.chunk_size=2000000000", &err), VL_OK, "%s",
                 err.msg);
    cr_assert_eq(vl_config_finalize(&cfg, &err), VL_OK, "%s", err.msg);
    cr_assert_eq(vl_cost_init(&cost, &cfg, &err), VL_OK, "%s", err.msg);
    int L = cfg.model.layers;
    double per_tok = vl_cost_act_bytes(&cost, 1000000, &PAR1, L, 1) / 1e6;
    double room = vl_cost_mem_capacity(&cost) - vl_cost_state_bytes(&cost, &PAR1, 1, L, 1, 1);
    uint32_t t = (uint32_t)(room / (3 * per_tok));
    cr_assert_gt(t, 1000);
    cr_assert_lt((double)t * 4, 2e9);
    uint32_t total = 4 * t;
    cr_assert_eq(vl_manifest_from_lengths(&m, &total, 1, NULL), VL_OK);

    for (int variant = 0; variant < 3; variant++) {
        vl_plan_init(&p, m, "chunkflow", 1, NULL);
        p.caps = VL_CAP_SCHEDULE;
        vl_plan_iter_begin(&p, 0, NULL);
        vl_plan_rank_begin(&p, 0, &PAR1, NULL);
        for (uint32_t k = 0; k < 4; k++) {
            vl_plan_mb_begin(&p, t, NULL);
            vl_plan_seg(&p, 0, k * t, t, NULL);
        }
        const vl_op *ops = variant == 0 ? keep_last : keep_all;
        size_t nops = variant == 0 ? 11 : variant == 1 ? 8 : 0;
        for (size_t i = 0; i < nops; i++)
            vl_plan_op(&p, ops[i].mb, (vl_op_kind)ops[i].kind, NULL);
        vl_status st = vl_plan_verify(&p, &cost, &vl_registry_rules, &rep, &err);
        if (variant == 0) {
            cr_assert_eq(st, VL_OK, "variant %d: %s", variant, err.msg);
        } else {
            /* keeping every slice, explicitly or by default (a slice's backward waits
             * for every later slice of its sample, so 1F1B holds all four) */
            cr_assert_eq(st, VL_EVERIFY, "variant %d", variant);
            cr_assert(has_msg(&rep, "I3: iteration 0, rank 0, stage 0: modelled memory"));
        }
        vl_plan_free(&p);
    }
    vl_config_free(&cfg);
    vl_manifest_free(m);
}
