/* tests/strategies/test_mcore_cp.c -- Megatron-Core's BalancedCPScheduler as mcore_cp_sched.c
 * re-implements it: gpus_needed and the workload, make_buckets_equal's closing rules,
 * whole schedules traced by hand from hybrid_cp_schedule.py (placement, the balance
 * check, trim_overload, fill_empty_gpus), and 400 random global batches against the
 * groups Megatron's own code forms (testdata/mcore_cp/megatron_groups.txt). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mcore_cp_impl.h"
#include "testutil.h"

/* The schedule of lens[] (sample i = position i) as "gpu0:size:ids | ..." text, the form
 * of the fixture file; sets capped at cp_most GPUs (0: none, Megatron's rule). */
static char *schedule_capped(uint32_t per_rank, uint32_t gpus, uint32_t cp_most,
                             const uint32_t *lens, size_t n)
{
    vl_mc_sched s = {.per_rank = per_rank, .gpus = gpus, .cp_most = cp_most, .delta = 0.05,
                     .bucket_factor = 1.1};
    vl_mc_item *it = malloc((n ? n : 1) * sizeof *it);
    size_t cap = 64 + 24 * n + 16 * gpus * n, used = 0;
    char *out = malloc(cap);
    vl_err err;

    cr_assert(it && out);
    for (size_t i = 0; i < n; i++)
        it[i] = (vl_mc_item){(uint32_t)i, lens[i]};
    cr_assert_eq(vl__mc_schedule(&s, it, n, &err), VL_OK, "%s", err.msg);
    out[0] = '\0';
    for (size_t g = 0; g < s.ngroups; g++) {
        used += (size_t)snprintf(out + used, cap - used, "%s", g ? " | " : "");
        for (size_t j = s.gstart[g]; j < s.gstart[g + 1]; j++) {
            const vl_mc_set *t = &s.sets[j];
            used += (size_t)snprintf(out + used, cap - used, "%s%u:%u:", j > s.gstart[g] ? " " : "",
                                     t->gpu0, t->size);
            for (size_t i = 0; i < t->n; i++)
                used += (size_t)snprintf(out + used, cap - used, "%s%u", i ? "," : "",
                                         s.out[t->i0 + i].sample);
        }
    }
    cr_assert_lt(used, cap);
    vl__mc_sched_free(&s);
    free(it);
    return out;
}

static char *schedule_text(uint32_t per_rank, uint32_t gpus, const uint32_t *lens, size_t n)
{
    return schedule_capped(per_rank, gpus, 0, lens, n);
}

/* ---- gpus_needed, workload, buckets ---------------------------------------------------- */

Test(mcore_cp, gpus_needed_is_the_next_power_of_two_of_len_over_per_rank)
{
    /* max(1, 2^ceil(log2(s / 1000))) */
    static const uint32_t len[] = {1, 999, 1000, 1001, 2000, 2001, 3000, 4000, 4001, 8000,
                                   8001, 31999, 32000};
    static const uint32_t want[] = {1, 1, 1, 2, 2, 4, 4, 4, 8, 8, 16, 32, 32};
    for (size_t i = 0; i < sizeof len / sizeof len[0]; i++)
        cr_assert_eq(vl__mc_gpus_needed(len[i], 1000), want[i], "len %u", len[i]);
    cr_assert_eq(vl__mc_gpus_needed(27033, 27033), 1);
    cr_assert_eq(vl__mc_gpus_needed(27034, 27033), 2);
    cr_assert_eq(vl__mc_gpus_needed(27033u * 32u, 27033), 32);
}

Test(mcore_cp, workload_is_len_squared_over_cp)
{
    cr_assert_float_eq(vl__mc_workload(3000, 4), 2250000.0, 1e-9);
    cr_assert_float_eq(vl__mc_workload(1500, 2), 1125000.0, 1e-9);
    cr_assert_float_eq(vl__mc_workload(2001, 4), 1001000.25, 1e-9);
}

/* Sorted 3000 2500 1500 900 ... 100 at 1000 tokens per rank: CP 4, 4, 2, then 1 (k = 3).
 * Work 2.25M, 1.5625M, 1.125M, 0.81M, ...; total 7.7875M, 1.1·target = 2.855417M.
 * 3000 alone: adding 2500 would make 3.8125M, closed.  2500 + 1500 = 2.6875M; adding
 * 900 would make 3.4975M, closed.  The rest sums to 2.85M <= 2.855417M: one bucket.
 * The reserve rule never fires: n - i <= remaining_k - len(buckets) = 3 - 2·closed. */
Test(mcore_cp, buckets_close_above_1_1_target)
{
    static const uint32_t lens[] = {3000, 2500, 1500, 900, 800, 700, 600, 500, 400, 300,
                                    200, 100};
    vl_mc_item it[12];
    size_t start[13];
    for (size_t i = 0; i < 12; i++)
        it[i] = (vl_mc_item){(uint32_t)i, lens[i]};
    cr_assert_eq(vl__mc_buckets(it, 12, 1000, 1.1, start), 3);
    cr_assert(start[0] == 0 && start[1] == 1 && start[2] == 3 && start[3] == 12);
}

/* 1000 1000 300 at CP 1 (k = 1): the work never passes 1.1·total, but at i = 2
 * n - i = 1 <= remaining_k - len(buckets) = 1 - 0: the reserve rule closes {1000, 1000}
 * and 300 gets a bucket of its own, though there is one CP size. */
Test(mcore_cp, buckets_reserve_rule_as_written)
{
    vl_mc_item it[3] = {{0, 1000}, {1, 1000}, {2, 300}};
    size_t start[4];
    cr_assert_eq(vl__mc_buckets(it, 3, 1000, 1.1, start), 2);
    cr_assert(start[0] == 0 && start[1] == 2 && start[2] == 3);
}

/* ---- whole schedules, traced by hand --------------------------------------------------- */

/* Ids 0..11 = 3000 900 800 700 600 500 400 300 200 100 2500 1500, 8 GPUs, 1000 per rank.
 * Group 1 (buckets {3000}, {2500, 1500}, {900..100}): 3000 (CP 4) opens GPUs 0-3, 2500
 * (CP 4) opens 4-7; 1500 (CP 2) has no set of 2 and no free GPU, nor has 900 (CP 1): the
 * group ends.  Slack 0.6875M > 5% but the fullest set holds one sample: no trim.
 * Group 2 (buckets {1500, 900} {800..100}, total 3.975M): 1500 opens GPUs 0-1, 900 GPU 2
 * (CP below the first's: balance checks start, but idle GPUs keep min at 0), 800..400
 * GPUs 3-7 each; then 300 goes to the least loaded CP-1 set (400's, 0.16M), 200 to the
 * first of the two at 0.25M (500's), 100 to 400's (0.25M < 0.29M). */
Test(mcore_cp, two_groups_by_hand)
{
    static const uint32_t lens[] = {3000, 900, 800, 700, 600, 500, 400, 300, 200, 100,
                                    2500, 1500};
    char *got = schedule_text(1000, 8, lens, 12);
    cr_assert_str_eq(got, "0:4:0 4:4:10 | 0:2:11 2:1:1 3:1:2 4:1:3 5:1:4 6:1:5,8 7:1:6,7,9");
    free(got);
}

/* 1000 1000 300 on 2 GPUs: 1000s open GPU 0 and 1; 300 goes to the first least loaded
 * (GPU 0: 1.09M against 1M).  trim_overload: slack 0.09M > 5% of 1.09M, no GPU idle, the
 * fullest set has two samples and popping 300 makes the slack 0: 300 is a leftover.
 * Group 2: 300 alone on GPU 0, then fill_empty_gpus doubles it to GPUs 0-1 (CP 2). */
Test(mcore_cp, trim_then_fill_by_hand)
{
    static const uint32_t lens[] = {1000, 1000, 300};
    char *got = schedule_text(1000, 2, lens, 3);
    cr_assert_str_eq(got, "0:1:0 1:1:1 | 0:2:2");
    free(got);
}

/* 900 1500 300 on 8 GPUs, sorted 1500 900 300 (CP 2, 1, 1): GPUs 0-1, 2, 3; nothing left.
 * fill_empty_gpus, 4 idle: the first CP-1 set (900's, GPU 2) doubles to 2-3 and 300's
 * shifts to 4; still idle: the first of size 2 is 1500's (0-1) -> 0-3, the others shift
 * to 4-5 and 6; then 300's (size 1) -> 6-7. */
Test(mcore_cp, fill_shifts_the_sets_after_the_one_it_doubles)
{
    static const uint32_t lens[] = {900, 1500, 300};
    char *got = schedule_text(1000, 8, lens, 3);
    cr_assert_str_eq(got, "0:4:1 4:2:0 6:2:2");
    free(got);
}

/* The same under a cap of 2 (Ulysses over 2 KV heads): 900's set doubles to 2-3, 300's
 * (shifted to 4) to 4-5, and then every set is at the cap: GPUs 6 and 7 sit the group
 * out rather than grow 1500's set to 4. */
Test(mcore_cp, fill_stops_at_the_cap)
{
    static const uint32_t lens[] = {900, 1500, 300};
    char *got = schedule_capped(1000, 8, 2, lens, 3);
    cr_assert_str_eq(got, "0:2:1 2:2:0 4:2:2");
    free(got);
}

Test(mcore_cp, one_gpu_runs_everything_in_one_group_longest_first)
{
    static const uint32_t lens[] = {5, 7, 7, 1};
    char *got = schedule_text(1000, 1, lens, 4);
    cr_assert_str_eq(got, "0:1:1,2,0,3");
    free(got);
}

Test(mcore_cp, a_sample_over_per_rank_times_gpus_is_refused_not_looped)
{
    vl_mc_sched s = {.per_rank = 1000, .gpus = 4, .delta = 0.05, .bucket_factor = 1.1};
    vl_mc_item it[1] = {{0, 4001}};
    vl_err err;
    cr_assert_eq(vl__mc_schedule(&s, it, 1, &err), VL_EINTERNAL);
    vl__mc_sched_free(&s);
}

/* ---- against Megatron's own code ----------------------------------------------------- */

Test(mcore_cp, matches_megatron_on_400_random_batches)
{
    FILE *f = fopen("testdata/mcore_cp/megatron_groups.txt", "r");
    size_t cap = 1 << 20, cases = 0;
    char *line = malloc(cap);
    uint32_t *lens = malloc(4096 * sizeof *lens);

    cr_assert(f && line && lens);
    while (fgets(line, (int)cap, f)) {
        char *eq = strstr(line, " = "), *p = line, *e, *got;
        unsigned long v[2];
        size_t n = 0;
        if (line[0] == '#')
            continue;
        cr_assert_not_null(eq);
        *eq = '\0';
        eq[3 + strcspn(eq + 3, "\n")] = '\0';
        for (int k = 0; k < 2; k++, p = e)
            v[k] = strtoul(p, &e, 10);
        for (unsigned long x = strtoul(p, &e, 10); e != p; x = strtoul(p, &e, 10)) {
            cr_assert_lt(n, 4096);
            lens[n++] = (uint32_t)x;
            p = e;
        }
        got = schedule_text((uint32_t)v[0], (uint32_t)v[1], lens, n);
        cr_assert_str_eq(got, eq + 3, "case %zu (per_rank %lu, %lu GPUs, %zu samples)", cases,
                         v[0], v[1], n);
        free(got);
        cases++;
    }
    fclose(f);
    free(line);
    free(lens);
    cr_assert_eq(cases, 400);
}
