/* tests/strategies/test_skrull.c -- Skrull's parts on the hand examples of docs/skrull.md §5, exact,
 * with F(s) = s²: DACP (S1 both roll-back orders, S2), GDS (S3 on [1..8] and [1..12]), the
 * capacity boundary, and the ablation and padding settings.  Whole plans are in
 * test_skrull_plan.c. */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdlib.h>

#include "skrull_impl.h"

/* ---- helpers ------------------------------------------------------------------------ */

static double square(const void *ud, uint32_t len)
{
    (void)ud;
    return (double)len * len;
}

typedef struct dacp_run {
    int64_t rb[8];
    double load[8];
    int16_t ret[16];
    vl_sk_dacp d;
    bool ok;
} dacp_run;

static void run_placed(dacp_run *r, const uint32_t *len, size_t k, uint32_t bucket, int n,
                       vl_sk_rollback mode, vl_sk_placement place, double slack)
{
    double f[16];
    cr_assert_leq(k, 16);
    for (size_t i = 0; i < k; i++)
        f[i] = square(NULL, len[i]);
    r->d = (vl_sk_dacp){.bucket = bucket, .n = n, .mode = mode, .place = place,
                        .slack = slack, .rb = r->rb, .load = r->load};
    r->ok = vl__sk_dacp(&r->d, len, f, k, r->ret);
}

/* The paper's placement (Algorithm 1, fixed). */
static void run_dacp(dacp_run *r, const uint32_t *len, size_t k, uint32_t bucket, int n,
                     vl_sk_rollback mode)
{
    run_placed(r, len, k, bucket, n, mode, VL_SK_PAPER, 0);
}

/* The balanced placement with the default slack. */
static void run_balanced(dacp_run *r, const uint32_t *len, size_t k, uint32_t bucket, int n)
{
    run_placed(r, len, k, bucket, n, VL_SK_SHORTEST, VL_SK_BALANCED, 0.1);
}

static void assert_ret(const int16_t *ret, const int *want, size_t k)
{
    for (size_t i = 0; i < k; i++)
        cr_assert_eq(ret[i], want[i], "ret[%zu] = %d, want %d", i, ret[i], want[i]);
}

static vl_sk_setting setting(int dp, uint32_t bucket, int cp)
{
    return (vl_sk_setting){.bucket = bucket, .cp = cp, .dp = dp, .rollback = VL_SK_SHORTEST,
                           .dacp = true, .gds = true,
                           .par = {.tp = 1, .pp = 1, .sp = cp, .ckpt_layers = 0}};
}

/* GDS on lengths 1..n (sample i has i + 1 tokens, in that batch order). */
static void run_gds(vl_sk_work *w, const vl_sk_setting *s, size_t n)
{
    uint32_t samples[64], len[64];
    vl_err err;
    cr_assert_leq(n, 64);
    for (size_t i = 0; i < n; i++) {
        samples[i] = (uint32_t)i;
        len[i] = (uint32_t)i + 1;
    }
    cr_assert_eq(vl__sk_gds(w, s, samples, n, len, square, NULL, &err), VL_OK, "%s",
                 err.msg);
}

/* Micro-batch j of w as lengths and placements. */
static void assert_mb(const vl_sk_work *w, size_t j, const uint32_t *len, const int *ret,
                      size_t k)
{
    cr_assert_lt(j, w->nmb);
    cr_assert_eq(w->mstart[j + 1] - w->mstart[j], k, "micro-batch %zu holds %zu, want %zu",
                 j, w->mstart[j + 1] - w->mstart[j], k);
    for (size_t i = 0; i < k; i++) {
        cr_assert_eq(w->slen[w->mstart[j] + i], len[i], "mb %zu item %zu", j, i);
        cr_assert_eq(w->ret[w->mstart[j] + i], ret[i], "mb %zu item %zu: ret %d, want %d", j,
                     i, w->ret[w->mstart[j] + i], ret[i]);
    }
}

/* ---- DACP (S1, S2) ------------------------------------------------------------------ */

/* S1 shortest-first: 8 fits nowhere; three roll-backs (2, then 6 from rank 0, then 3
 * from rank 1) leave every sequence sharded, RB = [0.5, 0.5], L = [56.5, 56.5]. */
Test(skrull, s1_dacp_shortest_rolls_back_three_times)
{
    static const uint32_t len[] = {2, 3, 6, 8};
    static const int want[] = {-1, -1, -1, -1};
    dacp_run r;
    run_dacp(&r, len, 4, 10, 2, VL_SK_SHORTEST);
    cr_assert(r.ok);
    assert_ret(r.ret, want, 4);
    cr_assert_eq(r.d.rollbacks, 3);
    cr_assert_eq(r.rb[0], 1, "RB[0] = %lld/2, want 0.5", (long long)r.rb[0]);
    cr_assert_eq(r.rb[1], 1);
    cr_assert_eq(r.load[0], 56.5);
    cr_assert_eq(r.load[1], 56.5);
}

/* S1 longest-first: one roll-back (6) and 8 sharded: ret [0, 1, -1, -1], RB [1, 0],
 * L [54, 59]. */
Test(skrull, s1_dacp_longest_rolls_back_once)
{
    static const uint32_t len[] = {2, 3, 6, 8};
    static const int want[] = {0, 1, -1, -1};
    dacp_run r;
    run_dacp(&r, len, 4, 10, 2, VL_SK_LONGEST);
    cr_assert(r.ok);
    assert_ret(r.ret, want, 4);
    cr_assert_eq(r.d.rollbacks, 1);
    cr_assert_eq(r.rb[0], 2, "RB[0] = %lld/2, want 1", (long long)r.rb[0]);
    cr_assert_eq(r.rb[1], 0);
    cr_assert_eq(r.load[0], 54.0);
    cr_assert_eq(r.load[1], 59.0);
}

/* S2: 26 tokens over two ranks of 10 cannot fit (13 > C), whatever is rolled back. */
Test(skrull, s2_dacp_fails_over_capacity)
{
    static const uint32_t len[] = {2, 3, 9, 12};
    dacp_run r;
    run_dacp(&r, len, 4, 10, 2, VL_SK_SHORTEST);
    cr_assert_not(r.ok);
    run_dacp(&r, len, 4, 10, 2, VL_SK_LONGEST);
    cr_assert_not(r.ok);
}

/* Memory is charged in 1/N tokens: 3 sharded over 2 ranks leaves 8.5 on each. */
Test(skrull, dacp_shards_above_bucket_and_charges_halves)
{
    static const uint32_t len[] = {15};
    dacp_run r;
    run_dacp(&r, len, 1, 10, 2, VL_SK_SHORTEST);
    cr_assert(r.ok);
    cr_assert_eq(r.ret[0], VL_CP_SHARDED, "C < S <= C·N can only be sharded");
    cr_assert_eq(r.rb[0], 5);
    cr_assert_eq(r.rb[1], 5);
}

/* Ties of argmin L go to the lowest rank; equal memory use is allowed (RB = 0). */
Test(skrull, dacp_ties_lowest_rank_and_fills_exactly)
{
    static const uint32_t len[] = {10, 10};
    static const int want[] = {0, 1};
    dacp_run r;
    run_dacp(&r, len, 2, 10, 2, VL_SK_SHORTEST);
    cr_assert(r.ok);
    assert_ret(r.ret, want, 2);
    cr_assert_eq(r.rb[0], 0);
    cr_assert_eq(r.rb[1], 0);
}

/* A roll-back charges every other rank S/N; out of ascending order that can push one
 * past C ([9, 8, 3]: sharding 3 leaves rank 1, holding 8, at -0.5).  That rank is rolled
 * back in turn, so the micro-batch ends with every rank within C. */
Test(skrull, dacp_rolls_back_a_rank_pushed_past_c)
{
    static const uint32_t len[] = {9, 8, 3};
    static const int want[] = {-1, -1, -1};
    dacp_run r;
    run_dacp(&r, len, 3, 10, 2, VL_SK_SHORTEST);
    cr_assert(r.ok);
    assert_ret(r.ret, want, 3);
    cr_assert_eq(r.rb[0], 0);
    cr_assert_eq(r.rb[1], 0);
    cr_assert_eq(r.load[0], 77.0);
    cr_assert_eq(r.load[1], 77.0);
}

/* ---- DACP, balanced placement ------------------------------------------------------ */

/* Seven 1s and a 10 (F = 1 and 100), C = 100, N = 2.  The paper's order deals the 1s
 * out (loads 4 and 3) and puts the 10 local on the lighter rank: loads [4, 103].
 * Balanced takes the 10 first: local it would make 100 against 53.5 sharded (ΣF / N,
 * more than 10% lower), so it is sharded; the 1s then alternate, and the last, which
 * would lift its rank to 54 against 53.5 sharded (no slack once the micro-batch has a
 * sharded sequence), is sharded too: loads [53.5, 53.5]. */
Test(skrull, balanced_shards_a_sequence_that_outweighs_the_rest)
{
    static const uint32_t len[] = {1, 1, 1, 1, 1, 1, 1, 10};
    static const int paper[] = {0, 1, 0, 1, 0, 1, 0, 1};
    static const int balanced[] = {-1, 1, 0, 1, 0, 1, 0, -1};
    dacp_run r;
    run_dacp(&r, len, 8, 100, 2, VL_SK_SHORTEST);
    cr_assert(r.ok);
    assert_ret(r.ret, paper, 8);
    cr_assert_eq(r.load[0], 4.0);
    cr_assert_eq(r.load[1], 103.0);
    run_balanced(&r, len, 8, 100, 2);
    cr_assert(r.ok);
    assert_ret(r.ret, balanced, 8);
    cr_assert_eq(r.load[0], 53.5);
    cr_assert_eq(r.load[1], 53.5);
    cr_assert_eq(r.d.rollbacks, 0);
}

/* Nine equal sequences on eight ranks: eight local, longest first onto ranks 0..7 (the
 * input is ascending, so index 8 goes first); the ninth would double its rank's load and
 * is sharded: every rank 81/8. */
Test(skrull, balanced_shards_the_ninth_of_nine_equal_on_eight)
{
    static const uint32_t len[] = {3, 3, 3, 3, 3, 3, 3, 3, 3};
    static const int want[] = {-1, 7, 6, 5, 4, 3, 2, 1, 0};
    dacp_run r;
    run_balanced(&r, len, 9, 100, 8);
    cr_assert(r.ok);
    assert_ret(r.ret, want, 9);
    for (int j = 0; j < 8; j++)
        cr_assert_eq(r.load[j], 10.125, "rank %d: %g", j, r.load[j]);
}

/* [1, 2, 3, 4] on two ranks (ΣF / N = 15): the 4 local would make 16, within 10% of
 * sharding's 15, so it stays local and everything after it too: loads [16, 14].  With no
 * slack the 4 is sharded (16 > 15) and every later one follows: all sharded, [15, 15]. */
Test(skrull, balanced_slack_keeps_short_sequences_local)
{
    static const uint32_t len[] = {1, 2, 3, 4};
    static const int local[] = {1, 1, 1, 0}, sharded[] = {-1, -1, -1, -1};
    dacp_run r;
    run_balanced(&r, len, 4, 100, 2);
    cr_assert(r.ok);
    assert_ret(r.ret, local, 4);
    cr_assert_eq(r.load[0], 16.0);
    cr_assert_eq(r.load[1], 14.0);
    run_placed(&r, len, 4, 100, 2, VL_SK_SHORTEST, VL_SK_BALANCED, 0);
    cr_assert(r.ok);
    assert_ret(r.ret, sharded, 4);
    cr_assert_eq(r.load[0], 15.0);
    cr_assert_eq(r.load[1], 15.0);
}

/* S1 balanced: 8 and then 6 and 3 are sharded for balance, 2 for memory (RB 1.5 < 2):
 * the same end as the paper's shortest-first S1, without a roll-back. */
Test(skrull, s1_balanced_needs_no_roll_back)
{
    static const uint32_t len[] = {2, 3, 6, 8};
    static const int want[] = {-1, -1, -1, -1};
    dacp_run r;
    run_balanced(&r, len, 4, 10, 2);
    cr_assert(r.ok);
    assert_ret(r.ret, want, 4);
    cr_assert_eq(r.d.rollbacks, 0);
    cr_assert_eq(r.rb[0], 1, "RB[0] = %lld/2, want 0.5", (long long)r.rb[0]);
    cr_assert_eq(r.load[0], 56.5);
    cr_assert_eq(r.load[1], 56.5);
}

/* S2 balanced: 26 tokens over two ranks of 10 fail whatever the order. */
Test(skrull, s2_balanced_fails_over_capacity)
{
    static const uint32_t len[] = {2, 3, 9, 12};
    dacp_run r;
    run_balanced(&r, len, 4, 10, 2);
    cr_assert_not(r.ok);
}

/* Memory still rules: [6, 7, 7] with C = 10, N = 2 cannot put two on one rank: 7 local
 * on 0, 7 local on 1, and 6 fits neither (3 tokens left on each) and is sharded. */
Test(skrull, balanced_respects_the_bucket)
{
    static const uint32_t len[] = {6, 7, 7};
    static const int want[] = {-1, 1, 0};
    dacp_run r;
    run_balanced(&r, len, 3, 10, 2);
    cr_assert(r.ok);
    assert_ret(r.ret, want, 3);
    cr_assert_eq(r.rb[0], 0);
    cr_assert_eq(r.rb[1], 0);
}

/* ---- GDS (S3) ----------------------------------------------------------------------- */

/* [1..8], ws = 2, C = 10, N = 2: LPT gives {8,5,3,2} and {7,6,4,1} (102 each), one
 * micro-batch each, ret [-1, 1, 0, -1] in ascending order on both. */
Test(skrull, s3_gds_one_to_eight)
{
    static const uint32_t r0[] = {2, 3, 5, 8}, r1[] = {1, 4, 6, 7};
    static const int ret[] = {-1, 1, 0, -1};
    vl_sk_setting s = setting(2, 10, 2);
    vl_sk_work w = {0};
    run_gds(&w, &s, 8);
    cr_assert_eq(w.rmb[0], 0);
    cr_assert_eq(w.rmb[1], 1);
    cr_assert_eq(w.rmb[2], 2);
    assert_mb(&w, 0, r0, ret, 4);
    assert_mb(&w, 1, r1, ret, 4);
    cr_assert_eq(w.stat_retries, 0);
    vl__sk_work_free(&w);
}

/* [1..12]: rank 0 holds {4,6,7,9,12} (38 tokens): m = 2 is rejected ([4,7,12] = 23 >
 * 20), m = 3 gives [4,9] -> (0,1), [6,12] -> (-1,-1), [7] -> 0.  Rank 1 holds
 * {1,2,3,5,8,10,11}: m = 3 as well, every micro-batch within 20. */
Test(skrull, s3_gds_one_to_twelve_retries_to_three)
{
    static const uint32_t a[] = {4, 9}, b[] = {6, 12}, c[] = {7};
    static const int ra[] = {0, 1}, rb[] = {-1, -1}, rc[] = {0};
    vl_sk_setting s = setting(2, 10, 2);
    vl_sk_work w = {0};
    run_gds(&w, &s, 12);
    cr_assert_eq(w.rmb[1], 3, "rank 0 runs %zu micro-batches, want 3", w.rmb[1]);
    assert_mb(&w, 0, a, ra, 2);
    assert_mb(&w, 1, b, rb, 2);
    assert_mb(&w, 2, c, rc, 1);
    cr_assert_eq(w.rmb[2], 6);
    for (size_t j = 3; j < 6; j++) {
        uint64_t sum = 0;
        for (size_t i = w.mstart[j]; i < w.mstart[j + 1]; i++)
            sum += w.slen[i];
        cr_assert_leq(sum, 20);
    }
    cr_assert_eq(w.stat_retries, 2, "each rank rejected m = 2 once");
    vl__sk_work_free(&w);
}

/* Eq. 7 allows a micro-batch of exactly C·N tokens (the text's ">=" is a slip). */
Test(skrull, gds_accepts_exactly_c_times_n)
{
    static const uint32_t len[] = {10, 10}, samples[] = {0, 1};
    static const int ret[] = {0, 1};
    vl_sk_setting s = setting(1, 10, 2);
    vl_sk_work w = {0};
    vl_err err;
    cr_assert_eq(vl__sk_gds(&w, &s, samples, 2, len, square, NULL, &err), VL_OK);
    cr_assert_eq(w.nmb, 1);
    assert_mb(&w, 0, len, ret, 2);
    vl__sk_work_free(&w);
}

/* ---- settings ----------------------------------------------------------------------- */

/* dacp off: the same micro-batches, every sequence sharded. */
Test(skrull, dacp_off_shards_everything)
{
    static const uint32_t r0[] = {2, 3, 5, 8};
    static const int ret[] = {-1, -1, -1, -1};
    vl_sk_setting s = setting(2, 10, 2);
    vl_sk_work w = {0};
    s.dacp = false;
    run_gds(&w, &s, 8);
    assert_mb(&w, 0, r0, ret, 4);
    vl__sk_work_free(&w);
}

/* gds off: contiguous halves [1..4] and [5..8] of the batch, next-fit into micro-batches
 * of <= 20 tokens: [1,2,3,4] | [5,6,7] [8]. */
Test(skrull, gds_off_splits_contiguously_and_next_fits)
{
    static const uint32_t a[] = {1, 2, 3, 4}, b[] = {5, 6, 7}, c[] = {8};
    static const int ra[] = {0, 1, 0, 1}, rb[] = {0, 1, -1}, rc[] = {0};
    vl_sk_setting s = setting(2, 10, 2);
    vl_sk_work w = {0};
    s.gds = false;
    run_gds(&w, &s, 8);
    cr_assert_eq(w.rmb[1], 1);
    cr_assert_eq(w.rmb[2], 3);
    assert_mb(&w, 0, a, ra, 4);
    assert_mb(&w, 1, b, rb, 3);
    assert_mb(&w, 2, c, rc, 1);
    vl__sk_work_free(&w);
}

/* equal_mbs: 2 items over 3 ranks leave one rank empty; it gets one empty micro-batch. */
Test(skrull, equal_mbs_pads_with_empty_micro_batches)
{
    vl_sk_setting s = setting(3, 10, 2);
    vl_sk_work w = {0};
    s.equal_mbs = true;
    run_gds(&w, &s, 2);
    cr_assert_eq(w.nmb, 3);
    for (int d = 0; d < 3; d++)
        cr_assert_eq(w.rmb[d + 1] - w.rmb[d], 1, "rank %d", d);
    cr_assert_eq(w.mstart[3], 2);
    cr_assert_eq(w.mstart[2], 2, "the third rank's micro-batch is empty");
    cr_assert_eq(w.stat_empty, 1);
    vl__sk_work_free(&w);
}

/* equal_mbs with GDS: one count for both ranks, the smallest both accept.  LPT puts
 * {20, 20} on rank 0 (2 micro-batches would do) and {1, 1, 1, 20} on rank 1, which needs
 * 4 (a 1 beside the 20 is 21 > C·N = 20): both run 4, rank 0 two of them empty, and
 * each rank's heaviest micro-batch comes first. */
Test(skrull, equal_mbs_searches_one_count_heaviest_first)
{
    static const uint32_t len[] = {20, 20, 20, 1, 1, 1}, samples[] = {0, 1, 2, 3, 4, 5};
    static const uint32_t big[] = {20}, one[] = {1};
    static const int sh[] = {-1}, loc[] = {0};
    vl_sk_setting s = setting(2, 10, 2);
    vl_sk_work w = {0};
    vl_err err;
    s.equal_mbs = true;
    cr_assert_eq(vl__sk_gds(&w, &s, samples, 6, len, square, NULL, &err), VL_OK);
    cr_assert_eq(w.rmb[1], 4);
    cr_assert_eq(w.rmb[2], 8);
    assert_mb(&w, 0, big, sh, 1);
    assert_mb(&w, 1, big, sh, 1);
    cr_assert_eq(w.mstart[3] - w.mstart[2], 0, "rank 0's third micro-batch is empty");
    cr_assert_eq(w.mstart[4] - w.mstart[3], 0);
    assert_mb(&w, 4, big, sh, 1);
    for (size_t j = 5; j < 8; j++)
        assert_mb(&w, j, one, loc, 1);
    cr_assert_eq(w.stat_empty, 2);
    cr_assert_eq(w.stat_retries, 2, "m = 2 and m = 3 rejected");
    vl__sk_work_free(&w);
}

/* Uneven counts without equal_mbs: 3 big and 3 small on two ranks by LPT. */
Test(skrull, counts_may_differ_per_rank)
{
    static const uint32_t len[] = {20, 20, 20, 1, 1, 1}, samples[] = {0, 1, 2, 3, 4, 5};
    vl_sk_setting s = setting(2, 10, 2);
    vl_sk_work w = {0};
    vl_err err;
    cr_assert_eq(vl__sk_gds(&w, &s, samples, 6, len, square, NULL, &err), VL_OK);
    cr_assert_neq(w.rmb[1] - w.rmb[0], w.rmb[2] - w.rmb[1]);
    s.equal_mbs = true;
    cr_assert_eq(vl__sk_gds(&w, &s, samples, 6, len, square, NULL, &err), VL_OK);
    cr_assert_eq(w.rmb[1] - w.rmb[0], w.rmb[2] - w.rmb[1]);
    vl__sk_work_free(&w);
}
