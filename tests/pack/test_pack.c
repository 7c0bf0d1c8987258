/* tests/pack/test_pack.c -- the packers: validity (every item once, no bin
 * over capacity, loads right), determinism and input-order independence, agreement with
 * naive O(n*bins) reference packers, FFD/BFD within 11/9 OPT + 1 of a brute-forced
 * optimum, ISF's accept/tail behaviour, SPFHP's worst-fit reading.  The partitioners
 * (LPT, KK) are in test_partition.c. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pack.h"
#include "pack_impl.h"
#include "rng.h"

/* The packers whose result does not depend on the input order (all but NF). */
static const vl_pack_algo all_algos[] = {VL_PACK_FFD, VL_PACK_BFD, VL_PACK_FFS, VL_PACK_BFS,
                                         VL_PACK_ISF, VL_PACK_SPFHP, VL_PACK_WFD};
#define NALGO (sizeof all_algos / sizeof all_algos[0])

static vl_pack_opts opts(vl_pack_algo a, uint32_t cap, uint64_t seed)
{
    return (vl_pack_opts){.algo = a, .cap = cap, .seed = seed, .isf_iters = 50,
                          .isf_slack = cap / 32};
}

/* Lengths: a long-tailed mix (many short, some long) in 1..cap. */
static uint32_t *random_lengths(size_t n, uint32_t cap, uint64_t seed)
{
    uint32_t *len = malloc(n * sizeof *len);
    vl_rng r;
    vl_rng_seed(&r, seed, 99);
    for (size_t i = 0; i < n; i++) {
        double u = vl_rng_unit(&r);
        uint32_t l = (uint32_t)(1 + u * u * u * cap);
        len[i] = l > cap ? cap : l;
    }
    return len;
}

static void check_bins(const vl_bins *b, const uint32_t *items, size_t n,
                       const uint32_t *len, uint32_t cap, size_t nlen)
{
    char *seen = calloc(nlen, 1);
    cr_assert_eq(b->start[0], 0);
    cr_assert_eq(b->start[b->n], n, "placed %zu of %zu", b->start[b->n], n);
    for (size_t k = 0; k < b->n; k++) {
        uint64_t sum = 0;
        cr_assert_gt(b->start[k + 1], b->start[k], "bin %zu empty", k);
        for (size_t j = b->start[k]; j < b->start[k + 1]; j++) {
            uint32_t it = b->items[j];
            cr_assert_lt(it, nlen);
            cr_assert_eq(seen[it], 0, "item %u twice", it);
            seen[it] = 1;
            sum += len[it];
        }
        cr_assert_eq(sum, b->load[k]);
        cr_assert_leq(sum, cap, "bin %zu holds %llu > %u", k, (unsigned long long)sum, cap);
    }
    for (size_t i = 0; i < n; i++)
        cr_assert_eq(seen[items[i]], 1, "item %u missing", items[i]);
    free(seen);
}

static int bins_equal(const vl_bins *a, const vl_bins *b)
{
    if (a->n != b->n)
        return 0;
    return memcmp(a->start, b->start, (a->n + 1) * sizeof *a->start) == 0 &&
           memcmp(a->items, b->items, a->start[a->n] * sizeof *a->items) == 0;
}

Test(pack, every_algo_valid_deterministic_order_free)
{
    const uint32_t caps[] = {1, 7, 64, 4096, 70000};
    for (size_t ci = 0; ci < sizeof caps / sizeof caps[0]; ci++) {
        size_t n = 3000;
        uint32_t cap = caps[ci], *len = random_lengths(n, cap, ci);
        uint32_t *items = malloc(n * sizeof *items), *perm = malloc(n * sizeof *perm);
        for (size_t i = 0; i < n; i++)
            items[i] = perm[i] = (uint32_t)i;
        vl_rng r;
        vl_rng_seed(&r, 5, ci);
        vl_rng_shuffle_u32(&r, perm, n);
        for (size_t a = 0; a < NALGO; a++) {
            vl_pack_opts o = opts(all_algos[a], cap, 42);
            vl_bins b1, b2, b3;
            vl_err err = {0};
            cr_assert_eq(vl_pack(&b1, items, n, len, &o, &err), VL_OK, "%s", err.msg);
            check_bins(&b1, items, n, len, cap, n);
            cr_assert_eq(vl_pack(&b2, items, n, len, &o, &err), VL_OK);
            cr_assert(bins_equal(&b1, &b2), "%s not deterministic", vl_pack_algo_name(o.algo));
            cr_assert_eq(vl_pack(&b3, perm, n, len, &o, &err), VL_OK);
            cr_assert(bins_equal(&b1, &b3), "%s depends on input order",
                      vl_pack_algo_name(o.algo));
            vl_bins_free(&b1);
            vl_bins_free(&b2);
            vl_bins_free(&b3);
        }
        free(len);
        free(items);
        free(perm);
    }
}

/* Large inputs: the value-order packers (ffs, bfs, isf) sort the indices before they
 * read the lengths, from 65536 items; the result is still the same for any order of the
 * items, and an oversize item still names the first one in the caller's order. */
Test(pack, value_order_packers_large_inputs)
{
    const vl_pack_algo algos[] = {VL_PACK_FFS, VL_PACK_BFS, VL_PACK_ISF};
    size_t n = 100000, nlen = 150000;
    uint32_t cap = 4096, *len = random_lengths(nlen, cap, 7);
    uint32_t *items = malloc(n * sizeof *items), *perm = malloc(n * sizeof *perm);

    for (size_t i = 0; i < n; i++) /* a subset: every third index left out */
        items[i] = perm[i] = (uint32_t)(i + i / 2);
    vl_rng r;
    vl_rng_seed(&r, 9, 1);
    vl_rng_shuffle_u32(&r, perm, n);
    for (size_t a = 0; a < sizeof algos / sizeof *algos; a++) {
        vl_pack_opts o = opts(algos[a], cap, 42);
        vl_bins b1, b2;
        vl_err err = {0};
        cr_assert_eq(vl_pack(&b1, items, n, len, &o, &err), VL_OK, "%s", err.msg);
        check_bins(&b1, items, n, len, cap, nlen);
        cr_assert_eq(vl_pack(&b2, perm, n, len, &o, &err), VL_OK, "%s", err.msg);
        cr_assert(bins_equal(&b1, &b2), "%s depends on input order", vl_pack_algo_name(o.algo));
        vl_bins_free(&b1);
        vl_bins_free(&b2);
        uint32_t keep[2] = {len[perm[500]], len[perm[900]]};
        len[perm[500]] = len[perm[900]] = cap + 1;
        cr_assert_eq(vl_pack(&b1, perm, n, len, &o, &err), VL_EUSAGE);
        char want[64];
        snprintf(want, sizeof want, "sample %u has %u tokens", perm[500], cap + 1);
        cr_assert(strstr(err.msg, want) != NULL, "%s: %s", vl_pack_algo_name(o.algo), err.msg);
        len[perm[500]] = keep[0];
        len[perm[900]] = keep[1];
    }
    free(len);
    free(items);
    free(perm);
}

Test(pack, subset_of_sample_indices)
{
    /* Items are sample indices into a larger length table, not 0..n-1. */
    uint32_t len[100], items[] = {97, 3, 50, 12, 64, 8, 33};
    for (int i = 0; i < 100; i++)
        len[i] = (uint32_t)(i % 9 + 1);
    for (size_t a = 0; a < NALGO; a++) {
        vl_pack_opts o = opts(all_algos[a], 10, 1);
        vl_bins b;
        cr_assert_eq(vl_pack(&b, items, 7, len, &o, NULL), VL_OK);
        check_bins(&b, items, 7, len, 10, 100);
        vl_bins_free(&b);
    }
}

Test(pack, seed_changes_shuffled_packers)
{
    size_t n = 2000;
    uint32_t *len = random_lengths(n, 1000, 3), *items = malloc(n * sizeof *items);
    for (size_t i = 0; i < n; i++)
        items[i] = (uint32_t)i;
    const vl_pack_algo shuffled[] = {VL_PACK_FFS, VL_PACK_BFS, VL_PACK_ISF};
    for (size_t a = 0; a < 3; a++) {
        vl_pack_opts o1 = opts(shuffled[a], 1000, 1), o2 = opts(shuffled[a], 1000, 2);
        vl_bins b1, b2;
        cr_assert_eq(vl_pack(&b1, items, n, len, &o1, NULL), VL_OK);
        cr_assert_eq(vl_pack(&b2, items, n, len, &o2, NULL), VL_OK);
        cr_assert_not(bins_equal(&b1, &b2));
        vl_bins_free(&b1);
        vl_bins_free(&b2);
    }
    free(len);
    free(items);
}

Test(pack, empty_input_and_errors)
{
    uint32_t len[] = {5, 11};
    uint32_t items[] = {0, 1};
    vl_bins b;
    vl_err err = {0};
    for (size_t a = 0; a < NALGO; a++) {
        vl_pack_opts o = opts(all_algos[a], 10, 0);
        cr_assert_eq(vl_pack(&b, items, 0, len, &o, &err), VL_OK);
        cr_assert_eq(b.n, 0);
        cr_assert_eq(b.start[0], 0);
        vl_bins_free(&b);
        cr_assert_eq(vl_pack(&b, items, 2, len, &o, &err), VL_EUSAGE);
        cr_assert(strstr(err.msg, "sample 1 has 11 tokens") != NULL, "%s", err.msg);
        o.cap = 0;
        cr_assert_eq(vl_pack(&b, items, 1, len, &o, &err), VL_EUSAGE);
    }
}

Test(pack, names_round_trip)
{
    for (size_t a = 0; a < NALGO; a++) {
        vl_pack_algo got;
        cr_assert_eq(vl_pack_algo_parse(vl_pack_algo_name(all_algos[a]), &got), 0);
        cr_assert_eq(got, all_algos[a]);
    }
    vl_pack_algo got;
    cr_assert_eq(vl_pack_algo_parse("FFD", &got), -1);
    cr_assert_eq(vl_pack_algo_parse("nfd", &got), -1);
    cr_assert_eq(vl_pack_algo_parse("nf", &got), 0);
    cr_assert_eq(got, VL_PACK_NF);
    cr_assert_str_eq(vl_pack_algo_name(VL_PACK_SPFHP), "spfhp");
    cr_assert_str_eq(vl_pack_algo_name(VL_PACK_WFD), "wfd");
    cr_assert_str_eq(vl_pack_algo_name(VL_PACK_NF), "nf");
}

/* ---- exact behaviour on hand examples --------------------------------------------- */

static void expect_bins(const vl_bins *b, const char *want)
{
    char got[256] = "", part[32];
    for (size_t k = 0; k < b->n; k++) {
        strcat(got, "[");
        for (size_t j = b->start[k]; j < b->start[k + 1]; j++) {
            snprintf(part, sizeof part, j > b->start[k] ? " %u" : "%u", b->items[j]);
            strcat(got, part);
        }
        strcat(got, "]");
    }
    cr_assert_str_eq(got, want);
}

Test(pack, ffd_bfd_spfhp_by_hand)
{
    /* sample:          0  1  2  3  4 */
    uint32_t len[] = {6, 5, 4, 3, 2}, items[] = {4, 2, 0, 3, 1};
    vl_bins b;
    vl_pack_opts o = opts(VL_PACK_FFD, 10, 0);
    /* FFD: 6 | 5 | 4 -> bin 0 | 3 -> bin 1 | 2 -> bin 1 */
    cr_assert_eq(vl_pack(&b, items, 5, len, &o, NULL), VL_OK);
    expect_bins(&b, "[0 2][1 3 4]");
    vl_bins_free(&b);
    /* BFD: the same here (4 fits bin 0 exactly, 3 and 2 only fit bin 1). */
    o.algo = VL_PACK_BFD;
    cr_assert_eq(vl_pack(&b, items, 5, len, &o, NULL), VL_OK);
    expect_bins(&b, "[0 2][1 3 4]");
    vl_bins_free(&b);
    /* WFD (and SPFHP, every length being distinct): 4 goes to the emptier bin 1 (5
     * free), 3 to bin 0 (4 free), and 2 fits nowhere (1 and 1 free): a third pack. */
    o.algo = VL_PACK_WFD;
    cr_assert_eq(vl_pack(&b, items, 5, len, &o, NULL), VL_OK);
    expect_bins(&b, "[0 3][1 2][4]");
    vl_bins_free(&b);
    o.algo = VL_PACK_SPFHP;
    cr_assert_eq(vl_pack(&b, items, 5, len, &o, NULL), VL_OK);
    expect_bins(&b, "[0 3][1 2][4]");
    vl_bins_free(&b);
}

/* Graphcore's spfhp.py: when no open pack fits a length, every sequence of that length
 * still unplaced opens a pack of its own. */
Test(pack, spfhp_one_length_per_new_pack)
{
    uint32_t len[] = {2, 2, 3, 3, 3, 3}, items[] = {0, 1, 2, 3, 4, 5};
    vl_bins b;
    vl_pack_opts o = opts(VL_PACK_SPFHP, 10, 0);
    cr_assert_eq(vl_pack(&b, items, 2, len, &o, NULL), VL_OK);
    expect_bins(&b, "[0][1]");   /* the example: 2 packs there, 1 in WFD */
    vl_bins_free(&b);
    o.algo = VL_PACK_WFD;
    cr_assert_eq(vl_pack(&b, items, 2, len, &o, NULL), VL_OK);
    expect_bins(&b, "[0 1]");
    vl_bins_free(&b);
    /* four 3s at capacity 10: four packs; then the 2s go to the roomiest (7 free each) */
    o.algo = VL_PACK_SPFHP;
    cr_assert_eq(vl_pack(&b, items, 6, len, &o, NULL), VL_OK);
    expect_bins(&b, "[2][3][4 1][5 0]");
    vl_bins_free(&b);
}

/* A trace of spfhp.py on the histogram {8: 1, 5: 2, 3: 2, 2: 1} at 10: [8] opens; the
 * two 5s open a group of two packs; the 3s join them (group (2, [5, 3]), 2 left); the 2
 * goes to key 2, whose list holds [8] then the group: pop() takes the group, so the
 * result is [8], [5, 3, 2], [5, 3] -- not [8, 2], which a FIFO tie would give. */
Test(pack, spfhp_trace_of_the_published_code)
{
    uint32_t len[] = {8, 5, 5, 3, 3, 2}, items[] = {5, 4, 3, 2, 1, 0};
    vl_bins b;
    vl_pack_opts o = opts(VL_PACK_SPFHP, 10, 0);
    cr_assert_eq(vl_pack(&b, items, 6, len, &o, NULL), VL_OK);
    expect_bins(&b, "[0][1 4 5][2 3]");
    vl_bins_free(&b);
    /* max_sequences_per_pack = 2: [5, 3] packs are final, the 2 opens its own */
    o.max_items = 2;
    cr_assert_eq(vl_pack(&b, items, 6, len, &o, NULL), VL_OK);
    expect_bins(&b, "[0 5][1 4][2 3]");
    vl_bins_free(&b);
}

Test(pack, max_items_caps_every_packer)
{
    size_t n = 2000;
    uint32_t cap = 4096, *len = random_lengths(n, 300, 11);
    uint32_t *items = malloc(n * sizeof *items);
    for (size_t i = 0; i < n; i++)
        items[i] = (uint32_t)i;
    for (size_t a = 0; a <= NALGO; a++) {
        for (uint32_t k = 1; k <= 9; k += 4) {
            vl_pack_opts o = opts(a < NALGO ? all_algos[a] : VL_PACK_NF, cap, 5);
            vl_bins b;
            o.max_items = k;
            cr_assert_eq(vl_pack(&b, items, n, len, &o, NULL), VL_OK);
            check_bins(&b, items, n, len, cap, n);
            for (size_t j = 0; j < b.n; j++)
                cr_assert_leq(b.start[j + 1] - b.start[j], k, "%s: %zu items in a bin, limit %u",
                              vl_pack_algo_name(o.algo), b.start[j + 1] - b.start[j], k);
            if (k == 1)
                cr_assert_eq(b.n, n);
            vl_bins_free(&b);
        }
    }
    free(len);
    free(items);
}

/* Next fit keeps the caller's order: bins are consecutive runs of it. */
Test(pack, next_fit_in_order)
{
    uint32_t len[] = {4, 4, 4, 9, 1, 1, 5}, items[] = {6, 5, 4, 3, 2, 1, 0};
    vl_bins b;
    vl_pack_opts o = opts(VL_PACK_NF, 10, 0);
    /* 5 | +1 +1 = 7 | 9 opens | 4 opens | +4 = 8 | 4 opens */
    cr_assert_eq(vl_pack(&b, items, 7, len, &o, NULL), VL_OK);
    expect_bins(&b, "[6 5 4][3][2 1][0]");
    vl_bins_free(&b);
    o.max_items = 2;
    cr_assert_eq(vl_pack(&b, items, 7, len, &o, NULL), VL_OK);
    expect_bins(&b, "[6 5][4 3][2 1][0]");
    vl_bins_free(&b);
}

Test(pack, ties_by_sample_index)
{
    uint32_t len[] = {3, 3, 3, 3, 3}, items[] = {4, 3, 2, 1, 0};
    vl_bins b;
    vl_pack_opts o = opts(VL_PACK_FFD, 7, 0);
    cr_assert_eq(vl_pack(&b, items, 5, len, &o, NULL), VL_OK);
    expect_bins(&b, "[0 1][2 3][4]");
    vl_bins_free(&b);
}

Test(pack, first_fit_versus_best_fit_on_a_fixed_order)
{
    /* Order 5, 7, 3 into 10: first fit puts 3 with 5 (first bin with room), best fit
     * with 7 (the tighter bin). */
    uint64_t p[] = {(uint64_t)5 << 32 | 0, (uint64_t)7 << 32 | 1, (uint64_t)3 << 32 | 2};
    vl_bins b;
    cr_assert_eq(vl__pk_first_fit(&b, p, 3, 10, 0, NULL), VL_OK);
    expect_bins(&b, "[0 2][1]");
    vl_bins_free(&b);
    cr_assert_eq(vl__pk_residual_fit(&b, p, 3, 10, 0, false, NULL), VL_OK);
    expect_bins(&b, "[0][1 2]");
    vl_bins_free(&b);
}

/* ---- naive references ------------------------------------------------------------- */

/* O(n*bins) packer over a fixed order.  mode 0 first fit; 1 best fit (tightest, ties
 * to the bin changed last); 2 worst fit (emptiest, ties to the bin changed last).
 * Writes bin numbers per position. */
static size_t naive_pack(const uint32_t *order, size_t n, const uint32_t *len,
                         uint32_t cap, int mode, uint32_t *bin)
{
    uint64_t *res = malloc(n * sizeof *res), *stamp = malloc(n * sizeof *stamp);
    size_t nb = 0;
    for (size_t i = 0; i < n; i++) {
        uint32_t l = len[order[i]];
        size_t pick = SIZE_MAX;
        for (size_t b = 0; b < nb; b++) {
            if (res[b] < l)
                continue;
            if (pick == SIZE_MAX) {
                pick = b;
                if (mode == 0)
                    break;
                continue;
            }
            int better = mode == 1 ? res[b] < res[pick] : res[b] > res[pick];
            if (better || (res[b] == res[pick] && stamp[b] > stamp[pick]))
                pick = b;
        }
        if (pick == SIZE_MAX) {
            pick = nb++;
            res[pick] = cap;
        }
        res[pick] -= l;
        stamp[pick] = i;
        bin[i] = (uint32_t)pick;
    }
    free(res);
    free(stamp);
    return nb;
}

static uint64_t *pairs_of(const uint32_t *order, size_t n, const uint32_t *len)
{
    uint64_t *p = malloc(n * sizeof *p);
    for (size_t i = 0; i < n; i++)
        p[i] = (uint64_t)len[order[i]] << 32 | order[i];
    return p;
}

/* The reference order is built independently: a comparison check of the radix sort,
 * or vl_rng_shuffle_u32 on sample indices (which vl__pk_shuffle must reproduce). */
static void check_against_naive(vl_pack_algo algo, int mode, uint64_t stream, size_t n,
                                uint32_t cap, uint64_t seed)
{
    uint32_t *len = random_lengths(n, cap, seed + 1000), *order = malloc(n * sizeof *order);
    uint32_t *bin = malloc(n * sizeof *bin);
    for (size_t i = 0; i < n; i++)
        order[i] = (uint32_t)i;
    if (stream == 0) {
        uint64_t *p = pairs_of(order, n, len);
        cr_assert_eq(vl__pk_sort_len_desc(p, n, NULL), VL_OK);
        for (size_t i = 0; i < n; i++)
            order[i] = VL_PK_ITEM(p[i]);
        for (size_t i = 1; i < n; i++) {
            uint32_t a = order[i - 1], b = order[i];
            cr_assert(len[a] > len[b] || (len[a] == len[b] && a < b));
            cr_assert_eq(VL_PK_LEN(p[i]), len[b]);
        }
        free(p);
    } else {
        vl_rng r;
        vl_rng_seed(&r, seed, stream);
        vl_rng_shuffle_u32(&r, order, n);
    }
    size_t nb = naive_pack(order, n, len, cap, mode, bin);
    uint64_t *p = pairs_of(order, n, len);
    vl_bins want, got;
    cr_assert_eq(vl__pk_assemble(&want, p, bin, n, nb, NULL), VL_OK);
    vl_pack_opts o = opts(algo, cap, seed);
    cr_assert_eq(vl_pack(&got, order, n, len, &o, NULL), VL_OK);
    cr_assert(bins_equal(&want, &got), "%s differs from the reference (%zu vs %zu bins)",
              vl_pack_algo_name(algo), want.n, got.n);
    vl_bins_free(&want);
    vl_bins_free(&got);
    free(p);
    free(len);
    free(order);
    free(bin);
}

Test(pack, matches_naive_references)
{
    const uint32_t caps[] = {10, 100, 1000, 5000};
    for (uint64_t s = 0; s < 4; s++) {
        uint32_t cap = caps[s];
        check_against_naive(VL_PACK_FFD, 0, 0, 2500, cap, s);
        check_against_naive(VL_PACK_BFD, 1, 0, 2500, cap, s);
        check_against_naive(VL_PACK_WFD, 2, 0, 2500, cap, s);
        check_against_naive(VL_PACK_FFS, 0, VL_PK_STREAM_FFS, 2500, cap, s);
        check_against_naive(VL_PACK_BFS, 1, VL_PK_STREAM_BFS, 2500, cap, s);
    }
}

Test(pack, radix_sorts_large_keys)
{
    /* Indices and lengths of 21+ bits: several digit passes in each half. */
    size_t n = 5000;
    uint64_t *p = malloc(n * sizeof *p);
    vl_rng r;
    vl_rng_seed(&r, 8, 8);
    for (size_t i = 0; i < n; i++) {
        uint32_t item = (uint32_t)vl_rng_below(&r, 3000000) * 1000u + (uint32_t)i % 1000;
        uint32_t l = 1 + (uint32_t)vl_rng_below(&r, i % 2 ? 2000000 : 50);
        p[i] = (uint64_t)l << 32 | item;
    }
    cr_assert_eq(vl__pk_sort_len_desc(p, n, NULL), VL_OK);
    for (size_t i = 1; i < n; i++)
        cr_assert(VL_PK_LEN(p[i - 1]) > VL_PK_LEN(p[i]) ||
                  (VL_PK_LEN(p[i - 1]) == VL_PK_LEN(p[i]) &&
                   VL_PK_ITEM(p[i - 1]) <= VL_PK_ITEM(p[i])));
    cr_assert_eq(vl__pk_sort_values(p, n, NULL), VL_OK);
    for (size_t i = 1; i < n; i++)
        cr_assert_leq(VL_PK_ITEM(p[i - 1]), VL_PK_ITEM(p[i]));
    free(p);
}

/* ---- quality: FFD/BFD against a brute-forced optimum ------------------------------ */

static void opt_dfs(const uint32_t *l, size_t n, size_t i, uint32_t *res, size_t nb,
                    uint32_t cap, size_t *best)
{
    if (nb >= *best)
        return;
    if (i == n) {
        *best = nb;
        return;
    }
    for (size_t b = 0; b < nb; b++) {
        if (res[b] < l[i])
            continue;
        res[b] -= l[i];
        opt_dfs(l, n, i + 1, res, nb, cap, best);
        res[b] += l[i];
    }
    res[nb] = cap - l[i];
    opt_dfs(l, n, i + 1, res, nb + 1, cap, best);
}

Test(pack, ffd_bfd_within_11_9_opt_plus_1)
{
    vl_rng r;
    vl_rng_seed(&r, 11, 9);
    for (int trial = 0; trial < 300; trial++) {
        uint32_t cap = 10 + (uint32_t)vl_rng_below(&r, 40), len[10], items[10], res[10];
        size_t n = 3 + (size_t)vl_rng_below(&r, 8), best = n;
        for (size_t i = 0; i < n; i++) {
            len[i] = 1 + (uint32_t)vl_rng_below(&r, cap);
            items[i] = (uint32_t)i;
        }
        /* Brute force over the items longest first (same optimum, faster pruning). */
        uint32_t l[10];
        memcpy(l, len, n * sizeof *l);
        for (size_t i = 1; i < n; i++)
            for (size_t j = i; j > 0 && l[j - 1] < l[j]; j--) {
                uint32_t t = l[j];
                l[j] = l[j - 1];
                l[j - 1] = t;
            }
        opt_dfs(l, n, 0, res, 0, cap, &best);
        for (int a = 0; a < 2; a++) {
            vl_pack_opts o = opts(a ? VL_PACK_BFD : VL_PACK_FFD, cap, 0);
            vl_bins b;
            cr_assert_eq(vl_pack(&b, items, n, len, &o, NULL), VL_OK);
            cr_assert_geq(b.n, best);
            cr_assert_leq(9 * b.n, 11 * best + 9, "%zu bins, optimum %zu", b.n, best);
            vl_bins_free(&b);
        }
    }
}

Test(pack, fill_is_high_on_long_tailed_lengths)
{
    size_t n = 20000;
    uint32_t cap = 4096, *len = random_lengths(n, cap / 4, 77);
    uint32_t *items = malloc(n * sizeof *items);
    uint64_t total = 0;
    for (size_t i = 0; i < n; i++) {
        items[i] = (uint32_t)i;
        total += len[i];
    }
    for (size_t a = 0; a < NALGO; a++) {
        vl_pack_opts o = opts(all_algos[a], cap, 3);
        vl_bins b;
        cr_assert_eq(vl_pack(&b, items, n, len, &o, NULL), VL_OK);
        double fill = (double)total / ((double)b.n * cap);
        /* SPFHP's one-length-per-new-pack rule costs it a point here (0.969) */
        double want = all_algos[a] == VL_PACK_SPFHP ? 0.96 : 0.97;
        cr_assert_gt(fill, want, "%s fill %.4f", vl_pack_algo_name(o.algo), fill);
        vl_bins_free(&b);
    }
    free(len);
    free(items);
}

/* ---- ISF -------------------------------------------------------------------------- */

Test(isf, tail_packs_are_emitted)
{
    /* No pack of 3-token items can reach 10 with slack 0, so every pass dissolves all
     * packs; the last pass must still emit everything. */
    uint32_t len[31], items[31];
    for (int i = 0; i < 31; i++) {
        len[i] = 3;
        items[i] = (uint32_t)i;
    }
    for (int iters = 1; iters <= 5; iters++) {
        vl_pack_opts o = {.algo = VL_PACK_ISF, .cap = 10, .seed = 9, .isf_iters = iters,
                          .isf_slack = 0};
        vl_bins b;
        cr_assert_eq(vl_pack(&b, items, 31, len, &o, NULL), VL_OK);
        check_bins(&b, items, 31, len, 10, 31);
        cr_assert_eq(b.n, 11);   /* next fit: 3 per pack, the tail holds 1 */
        vl_bins_free(&b);
    }
}

Test(isf, full_packs_accepted_in_first_pass)
{
    /* 5 + 5 = cap: every pack but a possible tail is accepted at once. */
    uint32_t len[20], items[20];
    for (int i = 0; i < 20; i++) {
        len[i] = 5;
        items[i] = (uint32_t)i;
    }
    vl_pack_opts o = {.algo = VL_PACK_ISF, .cap = 10, .seed = 1, .isf_iters = 50,
                      .isf_slack = 0};
    vl_bins b;
    cr_assert_eq(vl_pack(&b, items, 20, len, &o, NULL), VL_OK);
    cr_assert_eq(b.n, 10);
    for (size_t k = 0; k < b.n; k++)
        cr_assert_eq(b.load[k], 10);
    vl_bins_free(&b);
}

Test(isf, refinement_beats_one_pass)
{
    size_t n = 20000;
    uint32_t cap = 4096, *len = random_lengths(n, 2048, 5), *items = malloc(n * sizeof *items);
    for (size_t i = 0; i < n; i++)
        items[i] = (uint32_t)i;
    vl_pack_opts o1 = {.algo = VL_PACK_ISF, .cap = cap, .seed = 4, .isf_iters = 1,
                       .isf_slack = 128};
    vl_pack_opts o50 = o1;
    o50.isf_iters = 50;
    vl_bins b1, b50;
    cr_assert_eq(vl_pack(&b1, items, n, len, &o1, NULL), VL_OK);
    cr_assert_eq(vl_pack(&b50, items, n, len, &o50, NULL), VL_OK);
    check_bins(&b50, items, n, len, cap, n);
    cr_assert_lt(b50.n, b1.n);
    /* All but the packs of the last pass reach cap - slack. */
    size_t under = 0;
    for (size_t k = 0; k < b50.n; k++)
        under += b50.load[k] < cap - 128;
    cr_assert_lt(under, b50.n / 20, "%zu of %zu packs under threshold", under, b50.n);
    vl_bins_free(&b1);
    vl_bins_free(&b50);
    free(len);
    free(items);
}

/* ---- residual index --------------------------------------------------------------- */

Test(rbuck, successor_and_maximum)
{
    vl_pk_rbuck rb;
    uint32_t cap = 300000;
    cr_assert_eq(vl__pk_rbuck_init(&rb, cap, 8, NULL), VL_OK);
    cr_assert_eq(vl__pk_rbuck_succ(&rb, 0), VL_PK_NONE);
    cr_assert_eq(vl__pk_rbuck_max(&rb), VL_PK_NONE);
    vl__pk_rbuck_push(&rb, 0, 5);
    vl__pk_rbuck_push(&rb, 1, 262143);
    vl__pk_rbuck_push(&rb, 2, 262144);
    vl__pk_rbuck_push(&rb, 3, 5);
    cr_assert_eq(vl__pk_rbuck_succ(&rb, 0), 5);
    cr_assert_eq(vl__pk_rbuck_succ(&rb, 6), 262143);
    cr_assert_eq(vl__pk_rbuck_succ(&rb, 262144), 262144);
    cr_assert_eq(vl__pk_rbuck_succ(&rb, 262145), VL_PK_NONE);
    cr_assert_eq(vl__pk_rbuck_max(&rb), 262144);
    cr_assert_eq(vl__pk_rbuck_pop(&rb, 5), 3);   /* last in, first out */
    cr_assert_eq(vl__pk_rbuck_pop(&rb, 5), 0);
    cr_assert_eq(vl__pk_rbuck_succ(&rb, 0), 262143);
    cr_assert_eq(vl__pk_rbuck_pop(&rb, 262144), 2);
    cr_assert_eq(vl__pk_rbuck_max(&rb), 262143);
    vl__pk_rbuck_free(&rb);
}
