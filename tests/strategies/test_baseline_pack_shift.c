/* tests/strategies/test_baseline_pack_shift.c -- pack.balance by its own measure and the
 * sample-level refinement (plans/baseline/baseline_pack_refine.c, _shift.c): hand
 * examples where the measure chosen or a single moved sample provably changes the
 * dealing, and a property on random packs (capacity, slots per rank, the samples kept,
 * held maxima never raised). */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "baseline_pack.h"
#include "testutil.h"

/* The largest rank total of x[p] over packs p on ranks part[p]. */
static double busiest(const double *x, const int *part, size_t n, size_t dp)
{
    double load[8] = {0}, mx = 0;
    cr_assert_leq(dp, 8u);
    for (size_t p = 0; p < n; p++)
        load[part[p]] += x[p];
    for (size_t r = 0; r < dp; r++)
        mx = load[r] > mx ? load[r] : mx;
    return mx;
}

/* Packs of weights (time, tokens, attention): rank 0 runs two packs of 10 tokens (time
 * 10 each), rank 1 one of 6 tokens but time 12 (long samples) and one of 8: times 20
 * and 20, tokens 20 and 14.  Every swap that lowers rank 0's tokens raises a rank's
 * time past 20, so under pack.balance=time the dealing stays (tokens 20); under
 * pack.balance=tokens tokens come first and a swap takes rank 0 to 16 or 18. */
Test(baseline_pack_shift, refine_lowers_the_measure_asked_for)
{
    double time[] = {10, 10, 12, 8}, tok[] = {10, 10, 6, 8}, att[] = {5, 5, 5, 5};
    vl__pk_weights w = {4, time, tok, att};
    double got[2];
    for (int k = 0; k < 2; k++) {
        int part[] = {0, 0, 1, 1};
        vl_err err = {0};
        cr_assert_eq(vl__pk_refine(&w, part, 2, k ? VL__PK_TOK : VL__PK_TIME, &err), VL_OK);
        cr_assert_eq(part[0] + part[1] + part[2] + part[3], 2, "two packs a rank");
        got[k] = busiest(tok, part, 4, 2);
        if (k == 0)
            cr_assert_leq(busiest(time, part, 4, 2), 20.0);
    }
    cr_assert_eq(got[0], 20.0, "time held: no swap");
    cr_assert_leq(got[1], 18.0, "tokens asked for: swapped");
}

/* Time is tokens here (a stand-in cost model). */
static vl_status tokens_time(void *ctx, const uint32_t *items, size_t k, double *out,
                             vl_err *err)
{
    const uint32_t *len = ctx;
    (void)err;
    *out = 0;
    for (size_t i = 0; i < k; i++)
        *out += len[items[i]];
    return VL_OK;
}

/* Per-rank totals of a measure over packs (k = 1: tokens, 2: causal pairs). */
static void rank_loads(const packs *pk, const int *part, const uint32_t *len, size_t dp, int k,
                       double *out)
{
    memset(out, 0, dp * sizeof *out);
    for (size_t p = 0; p < pk->n; p++)
        for (size_t i = 0; i < pk->cnt[p]; i++) {
            uint32_t l = len[pk->items[pk->off[p] + i]];
            out[part[p]] += k == 1 ? (double)l : vl_cost_pairs(0, l);
        }
}

static double max_of(const double *x, size_t n)
{
    double m = 0;
    for (size_t i = 0; i < n; i++)
        m = x[i] > m ? x[i] : m;
    return m;
}

/* The iteration Azure code has at 8K in miniature: capacity 10, two ranks of two slots,
 * packs [5 5] [5 4 1] on rank 0 and [5 5] plus an empty slot on rank 1.  No pack can be
 * swapped whole to help (20 against 10 tokens); moving one 5 into the empty slot gives
 * 15 and 15, every rank keeping its two slots. */
Test(baseline_pack_shift, a_sample_fills_the_empty_slot)
{
    uint32_t len[] = {5, 5, 5, 4, 1, 5, 5};
    uint32_t items[] = {0, 1, 2, 3, 4, 5, 6};
    size_t off[] = {0, 2, 5, 7}, cnt[] = {2, 3, 2, 0};
    int part[] = {0, 0, 1, 1};
    packs pk = {.items = items, .off = off, .cnt = cnt, .n = 4};
    vl__pk_shift_in in = {.len = len, .cap = 10, .dp = 2, .a = 1, .b = 0,
                          .primary = VL__PK_TOK, .time = tokens_time, .ctx = len};
    double tok[2];
    vl_err err = {0};

    rank_loads(&pk, part, len, 2, 1, tok);
    cr_assert_eq(max_of(tok, 2), 20.0);
    cr_assert_eq(vl__pk_shift(&in, &pk, part, &err), VL_OK, "%s", err.msg);
    rank_loads(&pk, part, len, 2, 1, tok);
    cr_assert_eq(tok[0], 15.0);
    cr_assert_eq(tok[1], 15.0);
    cr_assert_gt(cnt[3], 0u, "the empty slot holds a pack now");
    cr_assert_eq(cnt[0] + cnt[1] + cnt[2] + cnt[3], 7u);
}

/* Random packs of random ranks: under every pack.balance the packs stay within capacity,
 * hold the same samples, and stay on their ranks; under pack.balance=time (the default)
 * the busiest rank's time is never raised, nor the larger of its tokens and attention
 * over their means; under tokens the busiest rank's tokens are never raised.  And the
 * refinement acts on some of them. */
Test(baseline_pack_shift, property_on_random_packs)
{
    size_t acted = 0;
    for (uint64_t seed = 1; seed <= 40; seed++) {
        size_t dp = 2 + seed % 6, m = 2 + seed % 3, np = dp * m, n = 0;
        cr_assert_leq(np, 64u);
        uint32_t cap = 64, *len = tu_tail_lengths(np * 8, cap, seed);
        uint32_t *items = malloc(np * 8 * sizeof *items);
        size_t *off = malloc(np * sizeof *off), *cnt = calloc(np, sizeof *cnt);
        int *part = malloc(np * sizeof *part);
        /* next fit in order into the first np - seed % dp packs (the rest empty slots),
         * pack p on rank p % dp */
        size_t used = np - seed % dp, p = 0;
        uint32_t fill = 0;
        for (size_t i = 0; i < np * 8 && p < used; i++) {
            if (fill + len[i] > cap) {
                if (++p == used)
                    break;
                fill = 0;
            }
            fill += len[i];
            items[n++] = (uint32_t)i;
            cnt[p]++;
        }
        for (size_t q = 0; q < np; q++) {   /* contiguous: offsets from the counts */
            part[q] = (int)(q % dp);
            off[q] = q ? off[q - 1] + cnt[q - 1] : 0;
        }
        int primary = (int)(seed % 3);
        uint32_t most = 0;   /* every other seed caps samples per pack at today's most */
        for (size_t q = 0; q < np; q++)
            most = cnt[q] > most ? (uint32_t)cnt[q] : most;
        vl__pk_shift_in in = {.len = len, .cap = cap, .dp = dp, .a = 1, .b = 0.01,
                              .primary = primary, .time = tokens_time, .ctx = len,
                              .max_items = seed % 2 ? most : 0};
        packs pk = {.items = items, .off = off, .cnt = cnt, .n = np};
        double tok[8], att[8], tok2[8], att2[8];
        rank_loads(&pk, part, len, dp, 1, tok);
        rank_loads(&pk, part, len, dp, 2, att);
        uint64_t sum_before = 0, sum_after = 0;
        for (size_t i = 0; i < n; i++)
            sum_before += items[i] * 2654435761u;
        vl_err err = {0};
        cr_assert_eq(vl__pk_shift(&in, &pk, part, &err), VL_OK, "%s", err.msg);
        rank_loads(&pk, part, len, dp, 1, tok2);
        rank_loads(&pk, part, len, dp, 2, att2);
        size_t total = 0;
        for (size_t q = 0; q < np; q++) {
            double t = 0;
            for (size_t i = 0; i < cnt[q]; i++)
                t += len[items[off[q] + i]];
            cr_assert_leq(t, (double)cap, "seed %llu pack %zu", (unsigned long long)seed, q);
            cr_assert(in.max_items == 0 || cnt[q] <= in.max_items, "seed %llu pack %zu: %zu",
                      (unsigned long long)seed, q, cnt[q]);
            total += cnt[q];
        }
        cr_assert_eq(total, n);
        unsigned char *seen = calloc(np * 8, 1);   /* each sample once: the same multiset */
        for (size_t i = 0; i < n; i++) {
            sum_after += items[i] * 2654435761u;
            cr_assert_lt(items[i], np * 8);
            cr_assert_eq(seen[items[i]]++, 0, "sample %u twice", items[i]);
        }
        free(seen);
        cr_assert_eq(sum_after, sum_before, "the same samples");
        if (primary == VL__PK_TIME) {
            /* time is tokens here: the busiest rank's time never rises (the first pass
             * lowers it holding nothing else, so the balance of attention may be traded
             * for it) */
            cr_assert_leq(max_of(tok2, dp), max_of(tok, dp), "seed %llu",
                          (unsigned long long)seed);
        } else if (primary == VL__PK_TOK) {
            cr_assert_leq(max_of(tok2, dp), max_of(tok, dp));
        } else {
            cr_assert_leq(max_of(att2, dp), max_of(att, dp));
        }
        acted += max_of(tok2, dp) < max_of(tok, dp) || max_of(att2, dp) < max_of(att, dp);
        free(len);
        free(items);
        free(off);
        free(cnt);
        free(part);
    }
    cr_assert_gt(acted, 0u, "the refinement never lowered a busiest rank");
}
