/* tests/pack/test_partition.c -- the k-way partitioners behind rank balancing: LPT and
 * Karmarkar-Karp by hand, on the textbook case, with equal counts, on large random
 * inputs, deterministically, and KK against a dense reference of the same algorithm. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pack.h"
#include "rng.h"

/* ---- partitioners ----------------------------------------------------------------- */

static void part_sums(const int *part, const double *w, size_t n, int k, double *sum)
{
    for (int j = 0; j < k; j++)
        sum[j] = 0;
    for (size_t i = 0; i < n; i++) {
        cr_assert(part[i] >= 0 && part[i] < k);
        sum[part[i]] += w[i];
    }
}

Test(partition, lpt_by_hand)
{
    double w[] = {7, 5, 4, 3, 1}, s[2];
    int part[5];
    /* 7 -> p0, 5 -> p1, 4 -> p1 (9), 3 -> p0 (10), 1 -> p1 (10). */
    cr_assert_eq(vl_partition_lpt(part, w, 5, 2, NULL), VL_OK);
    int want[] = {0, 1, 1, 0, 1};
    cr_assert_arr_eq(part, want, sizeof want);
    part_sums(part, w, 5, 2, s);
    cr_assert_eq(s[0], 10);
    cr_assert_eq(s[1], 10);
}

Test(partition, kk_beats_lpt_on_textbook_case)
{
    /* {8,7,6,5,4}: LPT ends 17/13; KK differencing 8-7, 6-5, 4-1, 3-1 ends 16/14. */
    double w[] = {8, 7, 6, 5, 4}, s[2];
    int part[5];
    cr_assert_eq(vl_partition_lpt(part, w, 5, 2, NULL), VL_OK);
    part_sums(part, w, 5, 2, s);
    cr_assert_eq(s[0] > s[1] ? s[0] - s[1] : s[1] - s[0], 4);
    cr_assert_eq(vl_partition_kk(part, w, 5, 2, NULL), VL_OK);
    part_sums(part, w, 5, 2, s);
    cr_assert_eq(s[0] > s[1] ? s[0] - s[1] : s[1] - s[0], 2);
}

Test(partition, kk_three_way_and_equal_counts)
{
    double w[] = {8, 7, 6, 5, 4, 0}, s[3];
    int part[6], count[3] = {0};
    cr_assert_eq(vl_partition_kk(part, w, 5, 3, NULL), VL_OK);
    part_sums(part, w, 5, 3, s);
    for (int j = 0; j < 3; j++)
        cr_assert_leq(s[j], 12);
    cr_assert_eq(vl_partition_kk_equal(part, w, 6, 3, NULL), VL_OK);
    part_sums(part, w, 6, 3, s);
    for (size_t i = 0; i < 6; i++)
        count[part[i]]++;
    for (int j = 0; j < 3; j++) {
        cr_assert_eq(count[j], 2);
        cr_assert_leq(s[j], 11);   /* {8,0} {7,4} {6,5} is the best with pairs */
    }
    vl_err err = {0};
    cr_assert_eq(vl_partition_kk_equal(part, w, 5, 3, &err), VL_EUSAGE);
    cr_assert_eq(vl_partition_kk(part, w, 5, 0, &err), VL_EUSAGE);
    double bad[] = {1, NAN};
    cr_assert_eq(vl_partition_lpt(part, bad, 2, 2, &err), VL_EUSAGE);
    /* one part skips the merges (lib/pack/partition.c), never the checks */
    cr_assert_eq(vl_partition_kk(part, bad, 2, 1, &err), VL_EUSAGE);
    cr_assert_eq(vl_partition_kk_equal(part, bad, 2, 1, &err), VL_EUSAGE);
    cr_assert_eq(vl_partition_kk_equal(part, w, 5, 1, &err), VL_OK);
    for (size_t i = 0; i < 5; i++)
        cr_assert_eq(part[i], 0);
}

Test(partition, large_random_balance)
{
    size_t n = 4096;
    int k = 64, *part = malloc(n * sizeof *part), count[64] = {0};
    double *w = malloc(n * sizeof *w), s[64], total = 0;
    vl_rng r;
    vl_rng_seed(&r, 1, 2);
    for (size_t i = 0; i < n; i++) {
        w[i] = 1 + vl_rng_below(&r, 4096);
        total += w[i];
    }
    vl_status (*algo[])(int *, const double *, size_t, int, vl_err *) = {
        vl_partition_lpt, vl_partition_kk, vl_partition_kk_equal};
    for (int a = 0; a < 3; a++) {
        cr_assert_eq(algo[a](part, w, n, k, NULL), VL_OK);
        part_sums(part, w, n, k, s);
        double mx = 0;
        for (int j = 0; j < k; j++)
            mx = s[j] > mx ? s[j] : mx;
        cr_assert_lt(mx, 1.01 * total / k, "algo %d max %.0f mean %.0f", a, mx, total / k);
    }
    for (size_t i = 0; i < n; i++)
        count[part[i]]++;
    for (int j = 0; j < k; j++)
        cr_assert_eq(count[j], (int)(n / (size_t)k));
    free(part);
    free(w);
}

Test(partition, deterministic)
{
    double w[200];
    int p1[200], p2[200];
    for (int i = 0; i < 200; i++)
        w[i] = (double)(i % 17);   /* many ties */
    cr_assert_eq(vl_partition_kk(p1, w, 200, 7, NULL), VL_OK);
    cr_assert_eq(vl_partition_kk(p2, w, 200, 7, NULL), VL_OK);
    cr_assert_arr_eq(p1, p2, sizeof p1);
    cr_assert_eq(vl_partition_lpt(p1, w, 200, 7, NULL), VL_OK);
    cr_assert_eq(vl_partition_lpt(p2, w, 200, 7, NULL), VL_OK);
    cr_assert_arr_eq(p1, p2, sizeof p1);
}

/* ---- Karmarkar-Karp against its dense form ------------------------------------------- */

typedef struct ref_set {
    double sum;
    uint32_t head, tail;   /* UINT32_MAX: empty */
} ref_set;

typedef struct ref_item {
    double w;
    uint32_t i;
} ref_item;

static int ref_item_cmp(const void *a, const void *b)
{
    const ref_item *x = a, *y = b;
    if (x->w != y->w)
        return x->w > y->w ? -1 : 1;
    return (x->i > y->i) - (x->i < y->i);
}

static int ref_set_cmp(const void *a, const void *b)
{
    const ref_set *x = a, *y = b;
    if (x->sum != y->sum)
        return x->sum > y->sum ? -1 : 1;
    return (x->head > y->head) - (x->head < y->head);
}

/* KK as first written: every state holds all k subsets (empty ones too) and is re-sorted
 * after each merge, and the next pair is found by scanning.  The library stores only
 * the non-empty subsets of a state; both must give the same parts. */
static void ref_kk(int *part, const double *w, size_t n, int k, size_t per)
{
    size_t ns = n / per, left = ns;
    ref_item *it = malloc((n + 1) * sizeof *it);
    ref_set *set = malloc((ns * (size_t)k + 1) * sizeof *set);
    double *spread = malloc((ns + 1) * sizeof *spread);
    uint32_t *next = malloc((n + 1) * sizeof *next);
    char *alive = calloc(ns + 1, 1);

    for (size_t i = 0; i < n; i++)
        it[i] = (ref_item){w[i], (uint32_t)i};
    qsort(it, n, sizeof *it, ref_item_cmp);
    for (size_t s = 0; s < ns; s++) {
        ref_set *x = set + s * (size_t)k;
        for (int j = 0; j < k; j++)
            x[j] = (ref_set){0, UINT32_MAX, UINT32_MAX};
        for (size_t j = 0; j < per; j++)
            x[j] = (ref_set){it[s * per + j].w, it[s * per + j].i, it[s * per + j].i};
        qsort(x, (size_t)k, sizeof *x, ref_set_cmp);
        spread[s] = x[0].sum - x[k - 1].sum;
        alive[s] = 1;
    }
    while (left > 1) {
        size_t a = SIZE_MAX, b = SIZE_MAX;
        for (size_t s = 0; s < ns; s++) {   /* the two first by (spread desc, id asc) */
            if (!alive[s])
                continue;
            if (a == SIZE_MAX || spread[s] > spread[a]) {
                b = a;
                a = s;
            } else if (b == SIZE_MAX || spread[s] > spread[b]) {
                b = s;
            }
        }
        ref_set *x = set + a * (size_t)k, *y = set + b * (size_t)k;
        for (int j = 0; j < k; j++) {
            ref_set *s = &x[j], *t = &y[k - 1 - j];
            s->sum += t->sum;
            if (t->head == UINT32_MAX)
                continue;
            if (s->head == UINT32_MAX)
                s->head = t->head;
            else
                next[s->tail] = t->head;
            s->tail = t->tail;
        }
        qsort(x, (size_t)k, sizeof *x, ref_set_cmp);
        spread[a] = x[0].sum - x[k - 1].sum;
        alive[b] = 0;
        left--;
    }
    for (size_t s = 0; s < ns; s++)
        if (alive[s])
            for (int j = 0; j < k; j++) {
                const ref_set *x = &set[s * (size_t)k + (size_t)j];
                for (uint32_t i = x->head; i != UINT32_MAX; i = i == x->tail ? UINT32_MAX : next[i])
                    part[i] = j;
            }
    free(it);
    free(set);
    free(spread);
    free(next);
    free(alive);
}

/* Random weights with ties, zeros, -0 and negatives (empty subsets then sort between
 * the non-negative and the negative ones), k below, near and above n. */
Test(partition, kk_matches_dense_reference)
{
    vl_rng r;
    vl_rng_seed(&r, 7, 3);
    for (int t = 0; t < 3000; t++) {
        size_t n = vl_rng_below(&r, 60);
        int k = 1 + (int)vl_rng_below(&r, t % 4 ? 12 : 80), mode = (int)vl_rng_below(&r, 4);
        bool equal = vl_rng_below(&r, 3) == 0;
        double w[64];
        int got[64], want[64];
        if (equal)
            n -= n % (size_t)k;
        for (size_t i = 0; i < n; i++) {
            long v = (long)vl_rng_below(&r, 21) - 10;
            w[i] = mode == 0 ? (double)(v + 10)                  /* ties */
                 : mode == 1 ? (double)vl_rng_below(&r, 100000) / 7.0
                 : mode == 2 ? (v == 0 ? -0.0 : (double)v)       /* signs, -0 */
                             : (double)v / 3.0;
            got[i] = want[i] = -1;
        }
        ref_kk(want, w, n, k, equal ? (size_t)k : 1);
        cr_assert_eq(equal ? vl_partition_kk_equal(got, w, n, k, NULL)
                           : vl_partition_kk(got, w, n, k, NULL), VL_OK);
        for (size_t i = 0; i < n; i++)
            cr_assert_eq(got[i], want[i], "case %d (n %zu, k %d, mode %d, equal %d): item %zu",
                         t, n, k, mode, equal, i);
    }
}

/* order[0..n) by weight descending, then lower index (-0 and +0 alike): the order a
 * hint must give (insertion: n is small). */
static void weight_order(uint32_t *order, const double *w, size_t n)
{
    for (size_t a = 0; a < n; a++) {
        uint32_t v = (uint32_t)a;
        size_t b = a;
        for (; b > 0 && (w[order[b - 1]] < w[v] ||
                         (w[order[b - 1]] == w[v] && order[b - 1] > v)); b--)
            order[b] = order[b - 1];
        order[b] = v;
    }
}

/* A hint changes no part: the right order, and wrong ones (reversed, an entry repeated,
 * one out of range), which the partitioner must notice and sort past. */
Test(partition, kk_ordered_hint_changes_nothing)
{
    vl_rng r;
    vl_rng_seed(&r, 11, 5);
    for (int t = 0; t < 2000; t++) {
        size_t n = 1 + vl_rng_below(&r, 60);
        int k = 1 + (int)vl_rng_below(&r, 12), mode = (int)vl_rng_below(&r, 3);
        bool equal = vl_rng_below(&r, 2) == 0;
        double w[72];        /* n rounds up to a multiple of k: at most 71 */
        uint32_t order[72];
        int got[72], want[72];
        if (equal && n % (size_t)k != 0)
            n += (size_t)k - n % (size_t)k;
        for (size_t i = 0; i < n; i++) {
            long v = (long)vl_rng_below(&r, 21) - 10;
            w[i] = mode == 0 ? (double)(v + 10) : mode == 1 ? (v == 0 ? -0.0 : (double)v)
                                                             : (double)vl_rng_below(&r, 1000) / 7;
        }
        weight_order(order, w, n);
        int wrong = t % 4;   /* 0: the right order */
        if (wrong == 1)
            for (size_t i = 0; i < n / 2; i++) {
                uint32_t x = order[i];
                order[i] = order[n - 1 - i];
                order[n - 1 - i] = x;
            }
        if (wrong == 2 && n > 1)
            order[n - 1] = order[0];
        if (wrong == 3)
            order[n / 2] = (uint32_t)n;
        cr_assert_eq(equal ? vl_partition_kk_equal(want, w, n, k, NULL)
                           : vl_partition_kk(want, w, n, k, NULL), VL_OK);
        cr_assert_eq(equal ? vl_partition_kk_equal_ordered(got, w, order, n, k, NULL)
                           : vl_partition_kk_ordered(got, w, order, n, k, NULL), VL_OK);
        for (size_t i = 0; i < n; i++)
            cr_assert_eq(got[i], want[i], "case %d (n %zu, k %d, wrong %d): item %zu", t, n, k,
                         wrong, i);
    }
}
