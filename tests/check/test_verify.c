/* tests/check/test_verify.c -- the plan checker on plans built in memory: a valid plan passes,
 * and each invariant violation is caught with its message: missing, duplicate,
 * overlapping and phantom tokens (I1); token sums and empty segments (I2); capacity and
 * the parallel layout (I3); lockstep (I4); epochs and schedules (I5).  Plans read back
 * from files: test_verify_file.c; modelled memory: test_verify_memory.c. */
#include <criterion/criterion.h>

#include "verify_fixture.h"

Test(verify, valid_plan_passes)
{
    vl_manifest *m = man4();
    vl_plan p;

    valid_plan(&p, m);
    expect_ok(&p);
    vl_plan_free(&p);
    vl_manifest_free(m);
}

Test(verify, empty_plan_of_no_samples_passes)
{
    vl_manifest *m = tu_manifest(NULL, 0);
    vl_plan p;

    vl_plan_init(&p, m, "t", 1, NULL);
    expect_ok(&p);
    vl_plan_free(&p);
    vl_manifest_free(m);
}

Test(verify, missing_sample)
{
    static const uint32_t len[] = {100, 200, 300, 400, 50};
    vl_manifest *m = tu_manifest(len, 5);
    vl_plan p;

    valid_plan(&p, m);
    expect_violation(&p, 1, 1, "I1: sample 4 (id 4): tokens [0, 50) missing in epoch 0");
    vl_plan_free(&p);
    vl_manifest_free(m);
}

Test(verify, missing_tail_of_sliced_sample)
{
    vl_manifest *m = man4();
    vl_plan p;

    valid_plan(&p, m);
    p.segs[p.nsegs - 1].len = 200;
    p.mbs[p.nmbs - 2].tokens = 200;
    p.iters[1].tokens = p.iters[1].loss = 200;
    expect_violation(&p, 1, 1, "I1: sample 3 (id 3): tokens [350, 400) missing in epoch 0");
    vl_plan_free(&p);
    vl_manifest_free(m);
}

Test(verify, duplicate_whole_sample)
{
    vl_manifest *m = man4();
    vl_plan p;

    valid_plan(&p, m);
    vl_plan_seg(&p, 0, 0, 100, NULL); /* rank 1 of iteration 1 */
    expect_violation(&p, 1, 1, "sample 0 (id 0): tokens [0, 100) planned more than once in "
                               "epoch 0");
    vl_plan_free(&p);
    vl_manifest_free(m);
}

Test(verify, overlapping_slices)
{
    vl_manifest *m = man4();
    vl_plan p;

    valid_plan(&p, m);
    vl_plan_seg(&p, 3, 100, 60, NULL);
    /* [100, 160) against [0, 150) and [150, 400): counted once per slice it overlaps;
     * and, on rank 1 of iteration 1 beside [150, 400) on rank 0, out of causal order */
    vl_verify_report rep;
    cr_assert_eq(vl_plan_verify(&p, NULL, &vl_registry_rules, &rep, NULL), VL_EVERIFY);
    cr_assert_eq(rep.by_inv[0], 2);
    cr_assert(has_msg(&rep, "sample 3 (id 3): tokens [100, 150) planned more than once"));
    cr_assert_eq(rep.by_inv[4], 1);
    cr_assert(has_msg(&rep, "runs on another rank of the same iteration"));
    vl_plan_free(&p);
    vl_manifest_free(m);
}

Test(verify, slice_overlapping_a_whole_sample)
{
    vl_manifest *m = man4();
    vl_plan p;

    valid_plan(&p, m);
    vl_plan_seg(&p, 1, 50, 10, NULL);
    expect_violation(&p, 1, 1, "sample 1 (id 1): tokens [50, 60) planned more than once");
    vl_plan_free(&p);
    vl_manifest_free(m);
}

Test(verify, tokens_beyond_the_length_and_phantom_index)
{
    vl_manifest *m = man4();
    vl_plan p;

    valid_plan(&p, m);
    vl_plan_seg(&p, 0, 100, 5, NULL);
    expect_violation(&p, 1, 1, "sample 0 (id 0): tokens [100, 105) beyond its length");
    vl_plan_free(&p);
    valid_plan(&p, m);
    vl_plan_seg(&p, 9, 0, 5, NULL);
    expect_violation(&p, 1, 1, "segment of sample index 9, the manifest has 4 samples");
    vl_plan_free(&p);
    vl_manifest_free(m);
}

Test(verify, drops_cover_what_is_not_planned)
{
    static const uint32_t len[] = {100, 200, 300, 400, 5000, 900};
    vl_manifest *m = tu_manifest(len, 6);
    vl_plan p;

    valid_plan(&p, m);
    vl_plan_drop(&p, 4, 0, 5000, VL_DROP_OVERSIZE, NULL);
    vl_plan_drop(&p, 5, 500, 400, VL_DROP_TRUNCATED, NULL);
    vl_plan_seg(&p, 5, 0, 500, NULL);
    p.mbs[p.nmbs - 1].cap = 500;
    expect_ok(&p);
    /* a drop of planned tokens is a duplicate */
    vl_plan_drop(&p, 0, 90, 10, VL_DROP_TRUNCATED, NULL);
    expect_violation(&p, 1, 1, "sample 0 (id 0): tokens [90, 100) planned more than once");
    vl_plan_free(&p);
    vl_manifest_free(m);
}

Test(verify, every_epoch_is_covered)
{
    vl_manifest *m = man4();
    vl_plan p;

    valid_plan(&p, m);
    vl_plan_set_meta(&p, 3, NULL, NULL);
    /* epoch 1: everything, epoch 2: nothing */
    vl_plan_iter_begin(&p, 1, NULL);
    vl_plan_rank_begin(&p, 0, &PAR1, NULL);
    vl_plan_mb_begin(&p, 1000, NULL);
    vl_plan_seg(&p, 3, 0, 400, NULL);
    vl_plan_seg(&p, 2, 0, 300, NULL);
    vl_plan_rank_begin(&p, 1, &PAR1, NULL);
    vl_plan_mb_begin(&p, 1000, NULL);
    vl_plan_seg(&p, 1, 0, 200, NULL);
    vl_plan_seg(&p, 0, 0, 100, NULL);
    vl_verify_report rep;
    cr_assert_eq(vl_plan_verify(&p, NULL, &vl_registry_rules, &rep, NULL), VL_EVERIFY);
    cr_assert_eq(rep.by_inv[0], 4);
    cr_assert(has_msg(&rep, "sample 2 (id 2): tokens [0, 300) missing in epoch 2"));
    /* and the header claims an epoch the iterations do not show */
    cr_assert_eq(rep.by_inv[4], 1);
    cr_assert(has_msg(&rep, "I5: the header says 3 epochs, the iterations show 2"));
    vl_plan_free(&p);
    vl_manifest_free(m);
}

Test(verify, empty_epochs_are_counted_not_scanned_each)
{
    vl_manifest *m = man4();
    vl_plan p;

    valid_plan(&p, m);
    vl_plan_set_meta(&p, 1000000, NULL, NULL);
    vl_verify_report rep;
    cr_assert_eq(vl_plan_verify(&p, NULL, &vl_registry_rules, &rep, NULL), VL_EVERIFY);
    cr_assert_eq(rep.by_inv[0], 4 * 999999ull);
    cr_assert(has_msg(&rep, "999998 more epochs without iterations"));
    vl_plan_free(&p);
    vl_manifest_free(m);
}

Test(verify, epochs_must_not_decrease_and_exist)
{
    vl_manifest *m = man4();
    vl_plan p;

    valid_plan(&p, m);
    p.iters[0].epoch = 1;
    /* epoch 1 of 1: structure, and epoch 0 then misses samples 0-2 and 3's head */
    vl_verify_report rep;
    cr_assert_eq(vl_plan_verify(&p, NULL, &vl_registry_rules, &rep, NULL), VL_EVERIFY);
    cr_assert_eq(rep.by_inv[4], 2, "%zu", rep.by_inv[4]);
    cr_assert(has_msg(&rep, "I5: iteration 0: epoch 1, but the plan has 1 epochs"));
    cr_assert(has_msg(&rep, "I5: iteration 1: epoch 0 follows epoch 1"));
    cr_assert(has_msg(&rep, "I1: sample 3 (id 3): tokens [0, 150) missing in epoch 0"));
    vl_plan_free(&p);
    vl_manifest_free(m);
}

Test(verify, capacity_exceeded)
{
    vl_manifest *m = man4();
    vl_plan p;

    valid_plan(&p, m);
    p.mbs[1].cap = 449;
    expect_violation(&p, 3, 1, "I3: iteration 0, rank 1, micro-batch 0: 450 tokens exceed "
                               "its capacity 449");
    vl_plan_free(&p);
    vl_manifest_free(m);
}

Test(verify, tokens_mismatch_and_empty_segment)
{
    vl_manifest *m = man4();
    vl_plan p;

    valid_plan(&p, m);
    p.mbs[0].tokens = 299;
    expect_violation(&p, 2, 1, "I2: iteration 0, rank 0, micro-batch 0: tokens 299, but its "
                               "segments sum to 300");
    p.mbs[0].tokens = 300;
    vl_plan_seg(&p, 1, 0, 0, NULL);
    expect_violation(&p, 2, 1, "I2: iteration 1, rank 1, micro-batch 0: segment 0 is empty");
    p.mbs[p.nmbs - 1].nseg = 0;
    p.iters[1].samples--;
    vl_plan_drop(&p, 3, 400, 0, VL_DROP_TRUNCATED, NULL);
    expect_violation(&p, 2, 1, "I2: dropped range 0 (sample 3, offset 400) is empty");
    vl_plan_free(&p);
    vl_manifest_free(m);
}

Test(verify, lockstep)
{
    vl_manifest *m = man4();
    vl_plan p;

    valid_plan(&p, m);
    vl_plan_mb_begin(&p, 100, NULL);
    expect_violation(&p, 4, 1, "I4: iteration 1: rank 1 has 2 micro-batches, rank 0 has 1");
    vl_plan_free(&p);
    vl_manifest_free(m);
}

Test(verify, bad_parallel_layout)
{
    vl_manifest *m = man4();
    vl_plan p;

    valid_plan(&p, m);
    p.ranks[1].par.sp = 0;
    expect_violation(&p, 3, 1, "I3: iteration 0, rank 1: \"sp\" is 0, expected 1..");
    vl_plan_free(&p);
    vl_manifest_free(m);
}

Test(verify, schedule_order)
{
    vl_manifest *m = man4();
    vl_plan p;

    valid_plan(&p, m);
    p.caps = VL_CAP_SCHEDULE;
    vl_plan_op(&p, 0, VL_OP_F, NULL);
    vl_plan_op(&p, 0, VL_OP_R, NULL);
    vl_plan_op(&p, 0, VL_OP_B, NULL);
    expect_ok(&p);
    vl_plan_op(&p, 0, VL_OP_B, NULL);
    expect_violation(&p, 5, 1, "schedule step 3 (B 0) runs a backward twice");
    vl_plan_free(&p);
    valid_plan(&p, m);
    p.caps = VL_CAP_SCHEDULE;
    vl_plan_op(&p, 0, VL_OP_F, NULL);
    vl_plan_op(&p, 4, VL_OP_F, NULL);
    expect_violation(&p, 5, 2, "the schedule never runs micro-batch 0 backward");
    vl_plan_free(&p);
    /* a plan that does not declare its schedule */
    valid_plan(&p, m);
    vl_plan_op(&p, 0, VL_OP_F, NULL);
    vl_plan_op(&p, 0, VL_OP_B, NULL);
    expect_violation(&p, 5, 1, "the plan uses an explicit schedule but does not declare schedule");
    vl_plan_free(&p);
    vl_manifest_free(m);
}

Test(verify, in_memory_plans_skip_file_checks)
{
    vl_manifest *m = man4();
    vl_plan p;

    valid_plan(&p, m);
    expect_ok(&p);
    vl_plan_free(&p);
    vl_manifest_free(m);
}
