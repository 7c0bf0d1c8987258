/* tests/check/test_verify_model.c -- verify on the vocabulary of issue "one plan model", each
 * negative case named by its invariant (docs/slimpack.md "Negatives" and more):
 * backward tokens missing or twice (I1), a backward pack before its forward, slices
 * out of LIFO order, forward slices out of token order, a recompute on a rank with
 * backward packs, mismatched copies of a shared pack, CP coordinates out of range, GPUs
 * placed twice or outside the cluster, uneven counts and capabilities not declared (I5,
 * I4), degrees the model does not permit (I3).  Every violation is counted, not only the
 * first. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "sim_fixture.h"
#include "verify.h"
#include "vlplan_strategy.h"

static bool has_msg(const vl_verify_report *rep, const char *needle)
{
    for (size_t i = 0; i < rep->nmsgs; i++)
        if (strstr(rep->msgs[i], needle))
            return true;
    return false;
}

static void expect(fx *f, const vl_cost *cost, int inv, size_t count, const char *needle)
{
    vl_verify_report rep;
    vl_status st;

    fx_manifest_of_plan(f);
    st = vl_plan_verify(&f->p, cost, &vl_registry_rules, &rep, &f->err);
    if (rep.by_inv[inv - 1] != count || !has_msg(&rep, needle))
        for (size_t i = 0; i < rep.nmsgs; i++)
            fprintf(stderr, "  %s\n", rep.msgs[i]);
    cr_assert_eq(st, count ? VL_EVERIFY : VL_OK, "%s", f->err.msg);
    cr_assert_eq(rep.by_inv[inv - 1], count, "I%d: %zu, expected %zu", inv,
                 rep.by_inv[inv - 1], count);
    cr_assert(!needle || has_msg(&rep, needle), "no message contains \"%s\"", needle);
}

static void ok(fx *f, const vl_cost *cost)
{
    vl_verify_report rep;

    fx_manifest_of_plan(f);
    vl_status st = vl_plan_verify(&f->p, cost, &vl_registry_rules, &rep, &f->err);
    for (size_t i = 0; st != VL_OK && i < rep.nmsgs; i++)
        fprintf(stderr, "  %s\n", rep.msgs[i]);
    cr_assert_eq(st, VL_OK, "%s", f->err.msg);
}

/* One rank, sample 0 of 3000 tokens forwarded in [0,1000) [1000,3000), backward packs
 * given as (off, len) pairs, and an optional schedule. */
static void sliced(fx *f, const uint32_t *bwd, size_t nb, const char *sched)
{
    vl_par par = {1, 1, 1, 0};

    fx_init(f, 4);
    f->len[0] = 3000;
    f->p.caps = VL_CAP_BWD_PACKS | VL_CAP_SCHEDULE;
    cr_assert_eq(vl_plan_iter_begin(&f->p, 0, &f->err), VL_OK);
    cr_assert_eq(vl_plan_rank_begin(&f->p, 0, &par, &f->err), VL_OK);
    cr_assert_eq(vl_plan_mb_begin(&f->p, 3000, &f->err), VL_OK);
    fx_seg(f, 0, 0, 1000);
    cr_assert_eq(vl_plan_mb_begin(&f->p, 3000, &f->err), VL_OK);
    fx_seg(f, 0, 1000, 2000);
    for (size_t j = 0; j < nb; j++) {
        cr_assert_eq(vl_plan_bwd_begin(&f->p, 3000, &f->err), VL_OK);
        fx_seg(f, 0, bwd[2 * j], bwd[2 * j + 1]);
    }
    if (sched)
        fx_ops(f, sched);
}

Test(verify_model, backward_packs_valid)
{
    fx f;
    sliced(&f, (const uint32_t[]){1500, 1500, 0, 1500}, 2, "F0 F1 B0 B1");
    ok(&f, NULL);
    fx_fini(&f);
    sliced(&f, (const uint32_t[]){1500, 1500, 0, 1500}, 2, NULL);   /* default order */
    ok(&f, NULL);
    fx_fini(&f);
}

Test(verify_model, backward_token_missing_or_twice)
{
    fx f;
    sliced(&f, (const uint32_t[]){1500, 1500, 0, 1400}, 2, "F0 F1 B0 B1");
    expect(&f, NULL, 1, 1, "its backward packs do not hold exactly the tokens");
    fx_fini(&f);
    sliced(&f, (const uint32_t[]){1400, 1600, 0, 1500}, 2, "F0 F1 B0 B1");
    expect(&f, NULL, 1, 1, "from token 1500");
    fx_fini(&f);
}

Test(verify_model, backward_pack_before_its_forward)
{
    fx f;
    sliced(&f, (const uint32_t[]){1500, 1500, 0, 1500}, 2, "F0 B0 F1 B1");
    expect(&f, NULL, 5, 1, "tokens [1500, 3000) go backward before their forward");
    fx_fini(&f);
}

Test(verify_model, backward_slices_out_of_lifo_order)
{
    fx f;
    sliced(&f, (const uint32_t[]){1500, 1500, 0, 1500}, 2, "F0 F1 B1 B0");
    expect(&f, NULL, 5, 1, "tokens from 0 go backward before tokens from 1500");
    fx_fini(&f);
}

Test(verify_model, forward_slices_out_of_token_order)
{
    fx f;
    vl_par par = {1, 1, 1, 0};

    fx_init(&f, 4);
    f.len[0] = 3000;
    cr_assert_eq(vl_plan_iter_begin(&f.p, 0, &f.err), VL_OK);
    cr_assert_eq(vl_plan_rank_begin(&f.p, 0, &par, &f.err), VL_OK);
    cr_assert_eq(vl_plan_mb_begin(&f.p, 3000, &f.err), VL_OK);
    fx_seg(&f, 0, 1000, 2000);
    cr_assert_eq(vl_plan_mb_begin(&f.p, 3000, &f.err), VL_OK);
    fx_seg(&f, 0, 0, 1000);
    expect(&f, NULL, 5, 1, "tokens from 1000 go forward before tokens from 0");
    fx_fini(&f);
}

Test(verify_model, recompute_on_a_rank_with_backward_packs)
{
    fx f;
    sliced(&f, (const uint32_t[]){1500, 1500, 0, 1500}, 2, "F0 F1 R1 B0 B1");
    expect(&f, NULL, 5, 1, "recomputes on a rank with backward packs");
    fx_fini(&f);
}

/* Two ranks sharing a pack; copy_edit changes rank 1's copy. */
static void shared(fx *f, int copy_edit)
{
    vl_par par = {1, 1, 1, 0};
    const int32_t both[2] = {0, 1}, other[2] = {0, 2};

    fx_init(f, 4);
    f->p.caps = VL_CAP_SHARED;
    cr_assert_eq(vl_plan_iter_begin(&f->p, 0, &f->err), VL_OK);
    for (int r = 0; r < 2; r++) {
        cr_assert_eq(vl_plan_rank_begin(&f->p, r, &par, &f->err), VL_OK);
        cr_assert_eq(vl_plan_mb_begin(&f->p, 1000, &f->err), VL_OK);
        fx_seg(f, (r == 1 && copy_edit == 1) ? 3 : 0, 0, 1000);
        cr_assert_eq(vl_plan_mb_share(&f->p, (r == 1 && copy_edit == 2) ? other : both, 2,
                                      &f->err), VL_OK);
        cr_assert_eq(vl_plan_mb_begin(&f->p, 1000, &f->err), VL_OK);
        fx_seg(f, 1 + (uint32_t)r, 0, 1000);
    }
}

Test(verify_model, shared_pack_copies)
{
    fx f;
    shared(&f, 0);
    ok(&f, NULL);
    fx_fini(&f);
    shared(&f, 1);    /* rank 1 holds another sample under the shared list */
    expect(&f, NULL, 5, 1, "the copy of this shared pack on dp 1 is different");
    fx_fini(&f);
    shared(&f, 2);    /* rank 1's copy names dp 2, which the iteration lacks; and dp 0, the
                       * primary, holds no pack shared by [0, 2] */
    expect(&f, NULL, 5, 4, "shared with dp 2, which the iteration does not have");
    expect(&f, NULL, 5, 4, "whose primary copy, on dp 0, is missing");
    fx_fini(&f);
}

Test(verify_model, cp_out_of_range_and_undeclared)
{
    fx f;
    vl_par par = {1, 1, 2, 0};

    fx_init(&f, 4);
    cr_assert_eq(vl_plan_iter_begin(&f.p, 0, &f.err), VL_OK);
    cr_assert_eq(vl_plan_rank_begin(&f.p, 0, &par, &f.err), VL_OK);
    cr_assert_eq(vl_plan_mb_begin(&f.p, 2000, &f.err), VL_OK);
    cr_assert_eq(vl_plan_seg_cp(&f.p, 0, 0, 1000, 1, &f.err), VL_OK);
    cr_assert_eq(vl_plan_seg_cp(&f.p, 1, 0, 1000, 2, &f.err), VL_OK);
    expect(&f, NULL, 5, 2, "CP coordinate 2 outside the rank's sp group of 2");
    expect(&f, NULL, 5, 2, "uses per-segment CP placement but does not declare seg_cp");
    cr_assert_eq(f.p.ranks[0].par.sp, 2);
    f.p.caps = VL_CAP_SEG_CP;
    expect(&f, NULL, 5, 1, "CP coordinate 2 outside");
    fx_fini(&f);
}

Test(verify_model, gpus_distinct_and_within_the_cluster)
{
    fx f;
    vl_par par = {1, 1, 1, 0};
    uint32_t g0 = 3, g1 = 3, far = 8;

    fx_init(&f, 4);
    cr_assert_eq(vl_plan_iter_begin(&f.p, 0, &f.err), VL_OK);
    for (int r = 0; r < 2; r++) {
        cr_assert_eq(vl_plan_rank_begin(&f.p, r, &par, &f.err), VL_OK);
        cr_assert_eq(vl_plan_rank_gpus(&f.p, r ? &g1 : &g0, 1, &f.err), VL_OK);
        cr_assert_eq(vl_plan_mb_begin(&f.p, 1000, &f.err), VL_OK);
        fx_seg(&f, (uint32_t)r, 0, 1000);
    }
    expect(&f, NULL, 5, 1, "GPU 3 belongs to two ranks");
    f.p.gpus[f.p.ranks[1].gpu0] = far;    /* the fixture's cluster has 8 GPUs */
    expect(&f, NULL, 5, 0, NULL);
    expect(&f, &f.c, 5, 1, "GPU 8 is outside the cluster's 8 GPUs");
    fx_fini(&f);
}

/* Past 4,096 GPUs an iteration's ids are radix sorted: the same repeat is found */
Test(verify_model, gpus_distinct_at_thousands_of_gpus)
{
    fx f;
    vl_par par = {3000, 1, 1, 0};
    static uint32_t ids[2][3000];

    fx_init(&f, 4);
    for (uint32_t k = 0; k < 3000; k++) {
        ids[0][k] = 5998 - k;           /* 5998 .. 2999 */
        ids[1][k] = k;                  /* 0 .. 2999: 2999 twice */
    }
    cr_assert_eq(vl_plan_iter_begin(&f.p, 0, &f.err), VL_OK);
    for (int r = 0; r < 2; r++) {
        cr_assert_eq(vl_plan_rank_begin(&f.p, r, &par, &f.err), VL_OK);
        cr_assert_eq(vl_plan_rank_gpus(&f.p, ids[r], 3000, &f.err), VL_OK);
        cr_assert_eq(vl_plan_mb_begin(&f.p, 1000, &f.err), VL_OK);
        fx_seg(&f, (uint32_t)r, 0, 1000);
    }
    expect(&f, NULL, 5, 1, "GPU 2999 belongs to two ranks");
    f.p.gpus[f.p.ranks[1].gpu0 + 2999] = 5999;
    expect(&f, NULL, 5, 0, NULL);
    fx_fini(&f);
}

Test(verify_model, uneven_counts_need_the_capability)
{
    fx f;
    vl_par par = {1, 1, 1, 0};

    fx_init(&f, 4);
    cr_assert_eq(vl_plan_iter_begin(&f.p, 0, &f.err), VL_OK);
    cr_assert_eq(vl_plan_rank_begin(&f.p, 0, &par, &f.err), VL_OK);
    cr_assert_eq(vl_plan_mb_begin(&f.p, 1000, &f.err), VL_OK);
    fx_seg(&f, 0, 0, 1000);
    cr_assert_eq(vl_plan_mb_begin(&f.p, 1000, &f.err), VL_OK);
    fx_seg(&f, 1, 0, 1000);
    cr_assert_eq(vl_plan_rank_begin(&f.p, 1, &par, &f.err), VL_OK);
    cr_assert_eq(vl_plan_mb_begin(&f.p, 1000, &f.err), VL_OK);
    fx_seg(&f, 2, 0, 1000);
    expect(&f, NULL, 4, 1, "does not declare uneven counts");
    f.p.caps = VL_CAP_UNEVEN_MBS;
    ok(&f, NULL);
    fx_fini(&f);
}

Test(verify_model, undeclared_backward_packs)
{
    fx f;
    sliced(&f, (const uint32_t[]){1500, 1500, 0, 1500}, 2, NULL);
    f.p.caps = 0;
    expect(&f, NULL, 5, 1, "the plan uses backward packs but does not declare bwd_packs");
    fx_fini(&f);
}

Test(verify_model, degrees_the_model_permits)
{
    fx f;
    vl_par par = {1, 8, 1, 9};   /* 8 stages of a 4-layer model, 9 of 1 layer checkpointed */

    fx_init(&f, 4);
    cr_assert_eq(vl_plan_iter_begin(&f.p, 0, &f.err), VL_OK);
    cr_assert_eq(vl_plan_rank_begin(&f.p, 0, &par, &f.err), VL_OK);
    cr_assert_eq(vl_plan_mb_begin(&f.p, 1000, &f.err), VL_OK);
    fx_seg(&f, 0, 0, 1000);
    expect(&f, &f.c, 3, 1, "pp 8 exceeds the 4 model layers");
    f.p.ranks[0].par.pp = 2;
    expect(&f, &f.c, 3, 1, "ckpt_layers 9 exceeds the 2 layers of a pipeline stage");
    fx_fini(&f);
}

/* Every violation is counted and named, not only the first. */
Test(verify_model, all_violations_reported)
{
    fx f;
    vl_par par = {1, 1, 2, 0};
    vl_verify_report rep;

    fx_init(&f, 4);
    cr_assert_eq(vl_plan_iter_begin(&f.p, 0, &f.err), VL_OK);
    cr_assert_eq(vl_plan_rank_begin(&f.p, 0, &par, &f.err), VL_OK);
    cr_assert_eq(vl_plan_mb_begin(&f.p, 10, &f.err), VL_OK);
    for (uint32_t s = 0; s < 5; s++)
        cr_assert_eq(vl_plan_seg_cp(&f.p, s, 0, 1000, 5, &f.err), VL_OK);
    fx_manifest_of_plan(&f);
    cr_assert_eq(vl_plan_verify(&f.p, NULL, &vl_registry_rules, &rep, &f.err), VL_EVERIFY);
    cr_assert_eq(rep.by_inv[2], 1, "capacity");
    cr_assert_eq(rep.by_inv[4], 6, "five out of range, the capability once");
    cr_assert_eq(rep.nmsgs, rep.violations);
    fx_fini(&f);
}
