/* tests/check/test_verify_config.c -- verify against what the config and the strategy permit
 * (issue 13 item 3), each case naming its invariant: the header's epochs against the
 * config's and the iterations' (none skipped, not zero, also read from a file); the
 * iteration totals against their packs; dropped ranges against the sample's length and
 * the oversize policy, and an oversize sample planned instead of dropped; a pack's
 * capacity above what the strategy writes; tp not dividing the heads, Ulysses sp not
 * dividing the KV heads; a config the strategy refuses; what simulate refuses. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "config.h"
#include "cost.h"
#include "planio.h"
#include "sim_fixture.h"
#include "testutil.h"
#include "verify.h"
#include "vlplan_strategy.h"

static vl_config cfg;
static vl_cost cost;
static vl_manifest *man;
static vl_plan p;
static vl_verify_report rep;
static const vl_par PAR1 = {1, 1, 1, 0};

/* qwen2.5-0.5b (14 heads, 2 KV heads, 24 layers) on 2 GPUs (the two ranks of plan_of,
 * so every GPU joins every step), packs of 1000 tokens. */
static void config(const char *const *sets)
{
    vl_err err = {0};

    cr_assert_eq(vl_config_init_default(&cfg, &err), VL_OK);
    for (const char *const *s = (const char *const[]){
             "model.preset=qwen2.5-0.5b", "cluster.gpus=2", "training.max_seq_len=1000",
             "training.oversize=drop", NULL};
         *s; s++)
        cr_assert_eq(vl_config_set(&cfg, *s, &err), VL_OK, "%s", err.msg);
    for (; sets && *sets; sets++)
        cr_assert_eq(vl_config_set(&cfg, *sets, &err), VL_OK, "%s", err.msg);
    cr_assert_eq(vl_config_finalize(&cfg, &err), VL_OK, "%s", err.msg);
    cr_assert_eq(vl_cost_init(&cost, &cfg, &err), VL_OK, "%s", err.msg);
}

/* Samples {600, 900, 1500, 700}: an iteration of two ranks, sample 0 on rank 0, samples
 * 1 and 3 on rank 1; sample 2 is longer than the 1000 tokens pack places: dropped. */
static void plan_of(const char *strategy)
{
    static const uint32_t len[] = {600, 900, 1500, 700};

    cr_assert_eq(vl_manifest_from_lengths(&man, len, 4, NULL), VL_OK);
    vl_plan_init(&p, man, strategy, 1, NULL);
    vl_plan_iter_begin(&p, 0, NULL);
    vl_plan_rank_begin(&p, 0, &PAR1, NULL);
    vl_plan_mb_begin(&p, 1000, NULL);
    vl_plan_seg(&p, 0, 0, 600, NULL);
    vl_plan_mb_begin(&p, 1000, NULL);
    vl_plan_seg(&p, 3, 0, 700, NULL);
    vl_plan_rank_begin(&p, 1, &PAR1, NULL);
    vl_plan_mb_begin(&p, 1000, NULL);
    vl_plan_seg(&p, 1, 0, 900, NULL);
    vl_plan_mb_begin(&p, 1000, NULL);
}

static void setup(void)
{
    memset(&rep, 0, sizeof rep);
}

static void teardown(void)
{
    vl_plan_free(&p);
    vl_manifest_free(man);
    vl_config_free(&cfg);
    man = NULL;
}

TestSuite(verify_config, .init = setup, .fini = teardown);

static bool has_msg(const char *needle)
{
    for (size_t i = 0; i < rep.nmsgs; i++)
        if (strstr(rep.msgs[i], needle))
            return true;
    return false;
}

static void dump(void)
{
    for (size_t i = 0; i < rep.nmsgs; i++)
        fprintf(stderr, "  %s\n", rep.msgs[i]);
}

static void expect(int inv, const char *needle)
{
    vl_err err = {0};
    vl_status st = vl_plan_verify(&p, &cost, &vl_registry_rules, &rep, &err);

    if (st != VL_EVERIFY || !has_msg(needle) || rep.by_inv[inv - 1] == 0)
        dump();
    cr_assert_eq(st, VL_EVERIFY, "%s", err.msg);
    cr_assert(has_msg(needle), "no message contains \"%s\"", needle);
    cr_assert_gt(rep.by_inv[inv - 1], 0, "no violation of I%d", inv);
}

static void ok(void)
{
    vl_err err = {0};
    vl_status st = vl_plan_verify(&p, &cost, &vl_registry_rules, &rep, &err);

    if (st != VL_OK)
        dump();
    cr_assert_eq(st, VL_OK, "%s", err.msg);
}

static void drop2(void)
{
    vl_plan_drop(&p, 2, 0, 1500, VL_DROP_OVERSIZE, NULL);
}

Test(verify_config, the_valid_plan_passes)
{
    config(NULL);
    plan_of("pack");
    drop2();
    ok();
}

/* ---- epochs ---- */

Test(verify_config, header_epochs_match_the_config)
{
    config((const char *const[]){"training.epochs=2", NULL});
    plan_of("pack");
    drop2();
    expect(5, "I5: the header says 1 epochs, the config's training.epochs is 2");
}

Test(verify_config, no_epoch_is_skipped)
{
    config((const char *const[]){"training.epochs=3", NULL});
    plan_of("pack");
    drop2();
    p.epochs = 3;
    p.iters[0].epoch = 1;
    expect(5, "I5: iteration 0: epoch 1, but epoch 0 has no iterations");
    cr_assert(has_msg("I5: the header says 3 epochs, the iterations show 2"));
}

/* In memory a plan of 0 epochs breaks I5; written out, the reader refuses it before
 * verify sees it (the schema's "epochs" is 1.., as the Python reader holds it). */
Test(verify_config, zero_epochs_also_from_a_file)
{
    char *dir = tu_tmpdir(), *path = tu_path(dir, "p.jsonl");
    vl_plan q;
    vl_plan_file *f = malloc(sizeof *f);
    vl_err err = {0};

    config(NULL);
    plan_of("pack");
    drop2();
    p.epochs = 0;
    expect(5, "I5: the plan declares 0 epochs");
    cr_assert_eq(vl_plan_write_file(&p, path, &err), VL_OK, "%s", err.msg);
    cr_assert_eq(vl_plan_read(&q, f, path, man, &err), VL_EDATA);
    cr_assert(strstr(err.msg, "\"epochs\": expected an integer 1..4294967295"), "%s",
              err.msg);
    vl_plan_free(&q);
    free(f);
    tu_rmtree(dir);
    free(path);
    free(dir);
}

static vl_status visit(void *v, vl_plan *q, vl_err *err)
{
    return vl_verifier_iter(v, q, 0, err);
}

/* A multi-epoch plan read an iteration at a time knows its epochs from the header. */
Test(verify_config, epochs_of_a_file_read_an_iteration_at_a_time)
{
    char *dir = tu_tmpdir(), *path = tu_path(dir, "p.jsonl");
    vl_plan_file *f = malloc(sizeof *f);
    vl_err err = {0};
    vl_plan q;

    config((const char *const[]){"training.epochs=2", NULL});
    plan_of("pack");
    vl_plan_iter_begin(&p, 1, NULL);   /* epoch 1: the same samples */
    vl_plan_rank_begin(&p, 0, &PAR1, NULL);
    vl_plan_mb_begin(&p, 1000, NULL);
    vl_plan_seg(&p, 3, 0, 700, NULL);
    vl_plan_mb_begin(&p, 1000, NULL);
    vl_plan_seg(&p, 0, 0, 600, NULL);
    vl_plan_rank_begin(&p, 1, &PAR1, NULL);
    vl_plan_mb_begin(&p, 1000, NULL);
    vl_plan_mb_begin(&p, 1000, NULL);
    vl_plan_seg(&p, 1, 0, 900, NULL);
    drop2();
    p.epochs = 2;
    ok();
    cr_assert_eq(vl_plan_write_file(&p, path, &err), VL_OK, "%s", err.msg);
    vl_verifier *v = NULL;
    memset(&q, 0, sizeof q);
    cr_assert_eq(vl_verifier_new(&v, man, &cost, &vl_registry_rules, &rep, &err), VL_OK);
    cr_assert_eq(vl_plan_read_each(&q, f, path, man, 1, visit, v, &err), VL_OK, "%s",
                 err.msg);
    cr_assert_eq(vl_verifier_finish(v, &q, f, &err), VL_OK, "%s", err.msg);
    vl_verifier_free(v);
    vl_plan_free(&q);
    free(f);
    tu_rmtree(dir);
    free(path);
    free(dir);
}

Test(verify_config, iteration_totals_match_their_packs)
{
    config(NULL);
    plan_of("pack");
    drop2();
    p.iters[0].tokens++;
    expect(2, "I2: iteration 0: totals of 2201 tokens, 2200 loss tokens, 3 samples, but its "
              "micro-batches hold 2200, 2200, 3");
}

/* ---- dropped ranges ---- */

Test(verify_config, a_drop_of_a_sample_that_fits)
{
    config(NULL);
    plan_of("pack");
    drop2();
    p.mbs[1].nseg = 0;          /* sample 3 (700 tokens) dropped instead of planned */
    p.mbs[1].tokens = 0;
    p.iters[0].tokens -= 700;
    p.iters[0].loss -= 700;
    p.iters[0].samples--;
    vl_plan_drop(&p, 3, 0, 700, VL_DROP_OVERSIZE, NULL);
    expect(1, "sample 3 (id 3) (700 tokens): dropped range [0, 700) as oversize, but the "
              "sample is not longer than the strategy places");
}

Test(verify_config, a_drop_under_oversize_error)
{
    config((const char *const[]){"training.oversize=error", NULL});
    plan_of("pack");
    drop2();
    expect(1, "dropped range [0, 1500) as oversize, but training.oversize is error: nothing "
              "is dropped");
}

Test(verify_config, drops_follow_the_policy)
{
    config((const char *const[]){"training.oversize=truncate", NULL});
    plan_of("pack");
    drop2();   /* truncate keeps the first 1000 tokens */
    expect(1, "dropped range [0, 1500) as oversize, but training.oversize is truncate: tails "
              "only");
    vl_plan_free(&p);
    vl_manifest_free(man);
    plan_of("pack");
    vl_plan_seg(&p, 2, 0, 900, NULL);
    vl_plan_drop(&p, 2, 900, 600, VL_DROP_TRUNCATED, NULL);
    expect(1, "dropped range [900, 1500) as truncated, but a truncation keeps exactly the "
              "tokens the strategy places");
    vl_plan_free(&p);
    vl_manifest_free(man);
    plan_of("pack");
    vl_plan_seg(&p, 2, 0, 1000, NULL);
    vl_plan_drop(&p, 2, 1000, 500, VL_DROP_TRUNCATED, NULL);
    ok();
    p.drops[0].reason = VL_DROP_OVERSIZE;
    expect(1, "a sample dropped as oversize is dropped whole");
}

Test(verify_config, an_oversize_sample_planned_instead_of_dropped)
{
    config(NULL);
    plan_of("pack");
    vl_plan_iter_begin(&p, 0, NULL);    /* in slices, each within its pack */
    vl_plan_rank_begin(&p, 0, &PAR1, NULL);
    vl_plan_mb_begin(&p, 1000, NULL);
    vl_plan_seg(&p, 2, 0, 750, NULL);
    vl_plan_rank_begin(&p, 1, &PAR1, NULL);
    vl_plan_mb_begin(&p, 1000, NULL);
    vl_plan_seg(&p, 2, 750, 750, NULL);
    p.caps |= VL_CAP_UNEVEN_MBS;
    expect(1, "sample 2 (id 2) has 1500 tokens, more than the 1000 strategy pack places, and "
              "training.oversize=drop does not drop it");
}

/* ---- capacity and degrees ---- */

Test(verify_config, capacity_above_what_the_strategy_writes)
{
    config(NULL);
    plan_of("pack");
    drop2();
    p.mbs[0].cap = 1001;
    expect(3, "I3: iteration 0, rank 0, micro-batch 0: capacity 1001 exceeds the 1000 token "
              "slots strategy pack writes (training.max_seq_len 1000)");
}

Test(verify_config, padded_capacity_is_micro_batch_times_the_length)
{
    config((const char *const[]){"training.micro_batch=3", NULL});
    plan_of("random");
    drop2();
    p.mbs[0].cap = 3000;
    ok();
    p.mbs[0].cap = 3001;
    expect(3, "capacity 3001 exceeds the 3000 token slots strategy random writes");
}

Test(verify_config, tp_divides_the_heads)
{
    config(NULL);
    plan_of("pack");
    drop2();
    p.ranks[1].par.tp = 4;   /* 14 heads */
    expect(3, "I3: iteration 0, rank 1: tp 4 does not divide the 14 attention heads");
}

Test(verify_config, ulysses_sp_divides_the_kv_heads)
{
    config((const char *const[]){"model.preset=qwen2.5-7b", "training.zero=3", NULL});
    plan_of("pack");
    drop2();
    p.ranks[1].par.sp = 7;   /* 28 heads, 4 KV heads */
    expect(3, "I3: iteration 0, rank 1: Ulysses sp 7 does not divide the 4 KV heads");
}

Test(verify_config, a_config_the_strategy_refuses)
{
    config((const char *const[]){"hbp.groups=2K", NULL});
    plan_of("hbp");
    drop2();
    expect(5, "I5: strategy hbp refuses the config: hbp.groups: 2048 exceeds "
              "training.max_seq_len 1000");
}

/* ---- what simulate refuses ---- */

/* Two ranks sharing both their packs, forward in the same order, backward each in the
 * other's: every pass of verify accepts it, the simulator deadlocks. */
static void two_shared(fx *f, const char *ops0, const char *ops1)
{
    vl_par par = {1, 1, 1, 0};
    const int32_t both[2] = {0, 1};

    fx_init(f, 4);
    /* a cluster of the two ranks' GPUs, so every GPU joins every step */
    f->cfg.cluster.gpus = 2;
    cr_assert_eq(vl_cost_init(&f->c, &f->cfg, &f->err), VL_OK, "%s", f->err.msg);
    /* SlimPack's DP-Merge: a strategy whose rules allow shared packs and schedules */
    snprintf(f->p.strategy, sizeof f->p.strategy, "slimpack");
    f->p.caps = VL_CAP_SHARED | VL_CAP_SCHEDULE | VL_CAP_BWD_PACKS | VL_CAP_UNEVEN_MBS;
    cr_assert_eq(vl_plan_iter_begin(&f->p, 0, &f->err), VL_OK);
    for (int k = 0; k < 2; k++) {
        cr_assert_eq(vl_plan_rank_begin(&f->p, k, &par, &f->err), VL_OK);
        for (uint32_t j = 0; j < 2; j++) {
            cr_assert_eq(vl_plan_mb_begin(&f->p, 1000, &f->err), VL_OK);
            fx_seg(f, j, 0, 1000);
            cr_assert_eq(vl_plan_mb_share(&f->p, both, 2, &f->err), VL_OK);
        }
        fx_ops(f, k == 0 ? ops0 : ops1);
    }
    fx_manifest_of_plan(f);
}

Test(verify_config, what_simulate_refuses)
{
    fx f;
    vl_verify_report r;

    two_shared(&f, "F0 F1 B1 B0", "F0 F1 B0 B1");
    cr_assert_eq(vl_plan_verify(&f.p, NULL, &vl_registry_rules,
                                &r, &f.err), VL_OK, "%s", f.err.msg);
    cr_assert_eq(vl_plan_verify(&f.p, &f.c, &vl_registry_rules,
                                &r, &f.err), VL_EVERIFY, "%s", f.err.msg);
    cr_assert_eq(r.by_inv[4], 1);
    cr_assert(strstr(r.msgs[0], "I5: iteration 0: simulate refuses it: ") &&
              strstr(r.msgs[0], "deadlocks"), "%s", r.msgs[0]);
    fx_fini(&f);
}

/* Forward each in the other's order: a cycle among the shared packs, found without a
 * config (issue 28 item 2: shared packs acyclic). */
Test(verify_config, shared_packs_in_contradicting_orders)
{
    fx f;
    vl_verify_report r;

    two_shared(&f, "F0 F1 B1 B0", "F1 F0 B0 B1");
    cr_assert_eq(vl_plan_verify(&f.p, NULL, &vl_registry_rules,
                                &r, &f.err), VL_EVERIFY, "%s", f.err.msg);
    cr_assert_eq(r.violations, 1);
    cr_assert(strstr(r.msgs[0], "I5: iteration 0: ranks run their shared packs in orders "
                                "that contradict each other"), "%s", r.msgs[0]);
    fx_fini(&f);
}

/* tp 32 x sp 2^22 x pp 32 is 2^32 GPUs: in 32 bits the product wraps to 0; counted in 64
 * bits (saturating) it is far over the 2 GPUs of the cluster. */
Test(verify_config, gpu_count_does_not_wrap)
{
    config((const char *const[]){"training.sp_kind=ring", NULL});
    plan_of("pack");
    drop2();
    p.ranks[0].par = (vl_par){32, 32, 1 << 22, 0};
    cr_assert_eq(vl_plan_rank_size(&p.ranks[0]), 0u, "the 32-bit product wraps");
    cr_assert_eq(vl_plan_rank_size64(&p.ranks[0]), 1ull << 32);
    expect(3, "tp 32 x sp 4194304 x pp 32 needs more than the 2 GPUs of the cluster");
}
