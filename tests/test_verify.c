/* tests/test_verify.c -- the plan checker: a valid plan passes, and each invariant
 * violation is caught with its message: missing, duplicate, overlapping and phantom
 * tokens, unknown ids (I1); token sums and empty segments (I2); capacity and modelled
 * memory (I3); lockstep (I4); epochs, schedules, footer, checksum, counts (I5). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "cost.h"
#include "planio.h"
#include "testutil.h"
#include "verify.h"

static const vl_par PAR1 = {1, 1, 1, 0};

static vl_manifest *lengths(const uint32_t *len, size_t n)
{
    vl_manifest *m = NULL;
    cr_assert_eq(vl_manifest_from_lengths(&m, len, n, NULL), VL_OK);
    return m;
}

/* Lengths {100, 200, 300, 400}.  Iteration 0: rank 0 holds samples 0 and 1, rank 1
 * holds 2 and the first 150 tokens of 3; iteration 1: rank 0 the rest of 3, rank 1 an
 * empty micro-batch (lockstep). */
static vl_manifest *man4(void)
{
    static const uint32_t len[] = {100, 200, 300, 400};
    return lengths(len, 4);
}

static void valid_plan(vl_plan *p, vl_manifest *m)
{
    vl_plan_init(p, m, "t", 1, NULL);
    vl_plan_iter_begin(p, 0, NULL);
    vl_plan_rank_begin(p, 0, &PAR1, NULL);
    vl_plan_mb_begin(p, 500, NULL);
    vl_plan_seg(p, 0, 0, 100, NULL);
    vl_plan_seg(p, 1, 0, 200, NULL);
    vl_plan_rank_begin(p, 1, &PAR1, NULL);
    vl_plan_mb_begin(p, 500, NULL);
    vl_plan_seg(p, 2, 0, 300, NULL);
    vl_plan_seg(p, 3, 0, 150, NULL);
    vl_plan_iter_begin(p, 0, NULL);
    vl_plan_rank_begin(p, 0, &PAR1, NULL);
    vl_plan_mb_begin(p, 500, NULL);
    vl_plan_seg(p, 3, 150, 250, NULL);
    vl_plan_rank_begin(p, 1, &PAR1, NULL);
    vl_plan_mb_begin(p, 500, NULL);
}

static bool has_msg(const vl_verify_report *rep, const char *needle)
{
    for (size_t i = 0; i < rep->nmsgs; i++)
        if (strstr(rep->msgs[i], needle))
            return true;
    return false;
}

/* What the last plan read from a file claimed (NULL: the plan under test was built in
 * memory).  Criterion runs each test in its own process. */
static vl_plan_file vf;
static const vl_plan_file *cur_file;

static void dump(const vl_verify_report *rep)
{
    for (size_t i = 0; i < rep->nmsgs; i++)
        fprintf(stderr, "  %s\n", rep->msgs[i]);
}

/* Verify p; expect exactly `count` violations of invariant inv and a message. */
static void expect_violation(const vl_plan *p, int inv, size_t count, const char *needle)
{
    vl_verify_report rep;
    vl_err err = {0};
    vl_status st = vl_plan_verify_read(p, cur_file, NULL, &rep, &err);

    if (st != VL_EVERIFY || rep.by_inv[inv - 1] != count || !has_msg(&rep, needle))
        dump(&rep);
    cr_assert_eq(st, VL_EVERIFY);
    cr_assert_eq(rep.by_inv[inv - 1], count, "I%d: %zu violations, expected %zu", inv,
                 rep.by_inv[inv - 1], count);
    cr_assert_eq(rep.violations, count, "%zu violations in all", rep.violations);
    cr_assert(has_msg(&rep, needle), "no message contains \"%s\"", needle);
    cr_assert(strstr(err.msg, "violates"), "%s", err.msg);
}

static void expect_ok(const vl_plan *p)
{
    vl_verify_report rep;
    vl_err err = {0};
    vl_status st = vl_plan_verify_read(p, cur_file, NULL, &rep, &err);

    if (st != VL_OK)
        dump(&rep);
    cr_assert_eq(st, VL_OK, "%s", err.msg);
    cr_assert_eq(rep.violations, 0);
    cr_assert_eq(rep.nmsgs, 0);
}

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
    vl_manifest *m = lengths(NULL, 0);
    vl_plan p;

    vl_plan_init(&p, m, "t", 1, NULL);
    expect_ok(&p);
    vl_plan_free(&p);
    vl_manifest_free(m);
}

Test(verify, missing_sample)
{
    static const uint32_t len[] = {100, 200, 300, 400, 50};
    vl_manifest *m = lengths(len, 5);
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
    /* [100, 160) against [0, 150) and [150, 400): counted once per slice it overlaps */
    expect_violation(&p, 1, 2, "sample 3 (id 3): tokens [100, 150) planned more than once");
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
    vl_manifest *m = lengths(len, 6);
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
    cr_assert_eq(vl_plan_verify(&p, NULL, &rep, NULL), VL_EVERIFY);
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
    cr_assert_eq(vl_plan_verify(&p, NULL, &rep, NULL), VL_EVERIFY);
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
    cr_assert_eq(vl_plan_verify(&p, NULL, &rep, NULL), VL_EVERIFY);
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

/* ---- plans read back from edited files ---- */

static char *scratch;

static void setup(void)
{
    scratch = tu_tmpdir();
}

static void teardown(void)
{
    tu_rmtree(scratch);
    free(scratch);
}

/* Write p, replace the first `from` by `to` in the text, read it back into q. */
static void edited(const vl_plan *p, vl_manifest *m, const char *from, const char *to,
                   vl_plan *q)
{
    char *path = tu_path(scratch, "p.jsonl");
    vl_err err = {0};
    size_t n;

    cr_assert_eq(vl_plan_write_file(p, path, &err), VL_OK, "%s", err.msg);
    char *text = tu_read_file(path, &n);
    char *at = strstr(text, from);
    cr_assert_not_null(at, "\"%s\" not in the plan", from);
    char *out = malloc(n + strlen(to) + 1);
    size_t head = (size_t)(at - text);
    memcpy(out, text, head);
    strcpy(out + head, to);
    strcat(out, at + strlen(from));
    cr_assert_eq(tu_write_file(path, out), 0);
    cr_assert_eq(vl_plan_read(q, &vf, path, m, &err), VL_OK, "%s", err.msg);
    cur_file = &vf;
    free(out);
    free(text);
    free(path);
}

TestSuite(verify_file, .init = setup, .fini = teardown);

Test(verify_file, unedited_file_passes)
{
    vl_manifest *m = man4();
    vl_plan p, q;

    valid_plan(&p, m);
    edited(&p, m, "\"type\"", "\"type\"", &q);
    expect_ok(&q);
    vl_plan_free(&q);
    vl_plan_free(&p);
    vl_manifest_free(m);
}

Test(verify_file, checksum_mismatch_after_one_byte)
{
    vl_manifest *m = man4();
    vl_plan p, q;

    valid_plan(&p, m);
    edited(&p, m, "\"cap\":500", "\"cap\":501", &q);
    expect_violation(&q, 5, 1, "I5: the footer's sha256 does not match the content");
    vl_plan_free(&q);
    vl_plan_free(&p);
    vl_manifest_free(m);
}

Test(verify_file, truncated_file_without_footer)
{
    vl_manifest *m = man4();
    vl_plan p, q;

    valid_plan(&p, m);
    char *path = tu_path(scratch, "cut.jsonl");
    vl_err err = {0};
    size_t n;
    cr_assert_eq(vl_plan_write_file(&p, path, &err), VL_OK);
    char *text = tu_read_file(path, &n);
    *strstr(text, "{\"type\":\"footer\"") = '\0';
    tu_write_file(path, text);
    cr_assert_eq(vl_plan_read(&q, &vf, path, m, &err), VL_OK, "%s", err.msg);
    cur_file = &vf;
    expect_violation(&q, 5, 1, "I5: no footer: the plan file is truncated or incomplete");
    vl_plan_free(&q);
    free(text);
    free(path);
    vl_plan_free(&p);
    vl_manifest_free(m);
}

Test(verify_file, iteration_count_mismatch)
{
    vl_manifest *m = man4();
    vl_plan p, q;
    vl_verify_report rep;

    valid_plan(&p, m);
    edited(&p, m, "\"type\":\"footer\",\"iterations\":2", "\"type\":\"footer\",\"iterations\":3",
           &q);
    cr_assert_eq(vl_plan_verify_read(&q, cur_file, NULL, &rep, NULL), VL_EVERIFY);
    cr_assert(has_msg(&rep, "I5: the footer says 3 iterations, the file has 2"));
    cr_assert_eq(rep.by_inv[4], 1); /* the footer line is not hashed: checksum still ok */
    vl_plan_free(&q);
    edited(&p, m, "\"iterations\":2}", "\"iterations\":5}", &q);
    cr_assert_eq(vl_plan_verify_read(&q, cur_file, NULL, &rep, NULL), VL_EVERIFY);
    cr_assert(has_msg(&rep, "I5: the header says 5 iterations, the file has 2"));
    cr_assert(has_msg(&rep, "sha256 does not match"));
    vl_plan_free(&q);
    vl_plan_free(&p);
    vl_manifest_free(m);
}

Test(verify_file, unknown_id)
{
    vl_manifest *m = man4();
    vl_plan p, q;
    vl_verify_report rep;

    valid_plan(&p, m);
    edited(&p, m, "[[2,0,300]", "[[\"two\",0,300]", &q);
    cr_assert_eq(vl_plan_verify_read(&q, cur_file, NULL, &rep, NULL), VL_EVERIFY);
    cr_assert(has_msg(&rep, "p.jsonl:2: iteration 0, rank 1, micro-batch 0, entry 0, sample id "
                            "\"two\" is not in the manifest"));
    cr_assert(has_msg(&rep, "I1: sample 2 (id 2): tokens [0, 300) missing in epoch 0"));
    cr_assert_eq(rep.by_inv[0], 2);
    cr_assert_eq(rep.violations, 3); /* and the checksum */
    vl_plan_free(&q);
    vl_plan_free(&p);
    vl_manifest_free(m);
}

Test(verify_file, micro_batch_tokens_claim)
{
    vl_manifest *m = man4();
    vl_plan p, q;
    vl_verify_report rep;

    valid_plan(&p, m);
    edited(&p, m, "\"tokens\":300,\"cap\"", "\"tokens\":301,\"cap\"", &q);
    cr_assert_eq(vl_plan_verify_read(&q, cur_file, NULL, &rep, NULL), VL_EVERIFY);
    cr_assert(has_msg(&rep, "p.jsonl:2: iteration 0, rank 0, micro-batch 0, \"tokens\" is 301, "
                            "the segments sum to 300"));
    cr_assert_eq(rep.by_inv[1], 1);
    vl_plan_free(&q);
    edited(&p, m, "\"cu_seqlens\":[0,100,300]", "\"cu_seqlens\":[0,100,301]", &q);
    cr_assert_eq(vl_plan_verify_read(&q, cur_file, NULL, &rep, NULL), VL_EVERIFY);
    cr_assert(has_msg(&rep, "\"cu_seqlens\" is not 0 followed by the running sums"));
    vl_plan_free(&q);
    edited(&p, m, "\"loss_tokens\":750", "\"loss_tokens\":7", &q);
    cr_assert_eq(vl_plan_verify_read(&q, cur_file, NULL, &rep, NULL), VL_EVERIFY);
    cr_assert(has_msg(&rep, "\"loss_tokens\" is 7, its segments carry 750"));
    vl_plan_free(&q);
    vl_plan_free(&p);
    vl_manifest_free(m);
}

/* ---- I3: modelled memory ---- */

Test(verify, modelled_memory)
{
    static const uint32_t len[] = {2000000000u, 1000};
    vl_manifest *m = lengths(len, 2);
    vl_config cfg;
    vl_cost cost;
    vl_plan p;
    vl_verify_report rep;
    vl_err err = {0};

    cr_assert_eq(vl_config_init_default(&cfg, &err), VL_OK, "%s", err.msg);
    /* a small model, so that one unsharded replica's states fit on the device */
    cr_assert_eq(vl_config_set(&cfg, "model.preset=qwen2.5-0.5b", &err), VL_OK, "%s",
                 err.msg);
    cr_assert_eq(vl_config_set(&cfg, "training.oversize=drop", &err), VL_OK, "%s", err.msg);
    cr_assert_eq(vl_config_finalize(&cfg, &err), VL_OK, "%s", err.msg);
    cr_assert_eq(vl_cost_init(&cost, &cfg, &err), VL_OK, "%s", err.msg);
    vl_plan_init(&p, m, "t", 1, NULL);
    vl_plan_iter_begin(&p, 0, NULL);
    vl_plan_rank_begin(&p, 0, &PAR1, NULL);
    vl_plan_mb_begin(&p, 1000, NULL);
    vl_plan_seg(&p, 1, 0, 1000, NULL);
    vl_plan_drop(&p, 0, 0, 2000000000u, VL_DROP_OVERSIZE, NULL);
    cr_assert_eq(vl_plan_verify(&p, &cost, &rep, &err), VL_OK, "%s", err.msg);
    /* two billion tokens in one micro-batch cannot fit any device */
    vl_plan_free(&p);
    vl_plan_init(&p, m, "t", 1, NULL);
    vl_plan_iter_begin(&p, 0, NULL);
    vl_plan_rank_begin(&p, 0, &PAR1, NULL);
    vl_plan_mb_begin(&p, 2000000000u, NULL);
    vl_plan_seg(&p, 0, 0, 2000000000u, NULL);
    vl_plan_mb_begin(&p, 1000, NULL);
    vl_plan_seg(&p, 1, 0, 1000, NULL);
    cr_assert_eq(vl_plan_verify(&p, &cost, &rep, &err), VL_EVERIFY);
    cr_assert_eq(rep.by_inv[2], 1);
    cr_assert(has_msg(&rep, "I3: iteration 0, rank 0, stage 0: modelled memory"));
    vl_plan_free(&p);
    vl_config_free(&cfg);
    vl_manifest_free(m);
}

/* ---- properties: no edit of a plan file goes unnoticed ---- */

/* Read text as a plan: VL_EDATA, or a plan that verify rejects (must_fail) / accepts.
 * Asserts only on failure: Criterion reports every assertion to its runner, which
 * would make these loops of thousands of cases crawl. */
static void check_text(const char *text, size_t n, vl_manifest *m, bool must_fail,
                       const char *what, size_t at)
{
    char *path = tu_path(scratch, "edit.jsonl");
    vl_plan q;
    vl_verify_report rep;
    vl_err err = {0};
    vl_status st;

    if (tu_write_bytes(path, text, n) != 0)
        cr_assert_fail("cannot write %s", path);
    st = vl_plan_read(&q, &vf, path, m, &err);
    if (st != VL_OK && st != VL_EDATA)
        cr_assert_fail("%s at %zu: %s", what, at, err.msg);
    if (st == VL_OK) {
        st = vl_plan_verify_read(&q, &vf, NULL, &rep, &err);
        if (st != (must_fail ? VL_EVERIFY : VL_OK))
            cr_assert_fail("%s at %zu: verify returned %d: %s", what, at, (int)st, err.msg);
        vl_plan_free(&q);
    }
    free(path);
}

static vl_manifest *man5(void)
{
    static const uint32_t len[] = {100, 200, 300, 400, 50};
    return lengths(len, 5);
}

static char *valid_text(vl_manifest *m, size_t *n)
{
    vl_plan p;
    vl_err err = {0};
    char *path = tu_path(scratch, "valid.jsonl");

    valid_plan(&p, m);
    vl_plan_drop(&p, 4, 0, 50, VL_DROP_OVERSIZE, NULL); /* a footer entry to edit */
    cr_assert_eq(vl_plan_write_file(&p, path, &err), VL_OK, "%s", err.msg);
    char *text = tu_read_file(path, n);
    vl_plan_free(&p);
    free(path);
    return text;
}

Test(verify_file, every_truncation_is_caught)
{
    vl_manifest *m = man5();
    size_t n;
    char *text = valid_text(m, &n);

    for (size_t cut = 1; cut < n - 1; cut++)
        check_text(text, cut, m, true, "cut", cut);
    check_text(text, n - 1, m, false, "cut", n - 1); /* only the last newline lost */
    free(text);
    vl_manifest_free(m);
}

Test(verify_file, every_single_byte_edit_is_caught)
{
    static const char subst[] = {'0', '7', 'x', '"', '\n', ' ', '['};
    vl_manifest *m = man5();
    size_t n;
    char *text = valid_text(m, &n);

    /* the last byte is the footer's newline: a space there is harmless */
    for (size_t at = 0; at + 1 < n; at++)
        for (size_t k = 0; k < sizeof subst; k++) {
            char was = text[at];
            if (was == subst[k])
                continue;
            text[at] = subst[k];
            check_text(text, n, m, true, "edit", at);
            text[at] = was;
        }
    free(text);
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
        vl_plan_init(&p, m, "t", 1, NULL);
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
        vl_status st = vl_plan_verify(&p, &cost, &rep, &err);
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
