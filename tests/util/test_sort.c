/* tests/util/test_sort.c -- vl_sort_u64 (a radix sort from 256 values, qsort below),
 * vl_sort_u64_with (the radix sort, a merge sort below) and
 * vl_sort_u32_radix against a plain qsort of the same values: random values, packed
 * (length << 32 | index) keys, values that differ in one digit only, and all equal. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "rng.h"
#include "sort.h"

static int cmp(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* Sort v with qsort, vl_sort_u64 and vl_sort_u64_with, and compare. */
static void check(uint64_t *v, size_t n)
{
    size_t bytes = (n ? n : 1) * sizeof *v;
    uint64_t *want = malloc(bytes), *w = malloc(bytes), *tmp = malloc(bytes);

    cr_assert(want && w && tmp);
    memcpy(want, v, n * sizeof *v);
    memcpy(w, v, n * sizeof *v);
    qsort(want, n, sizeof *want, cmp);
    vl_sort_u64(v, n);
    vl_sort_u64_with(w, tmp, n);
    for (size_t i = 0; i < n; i++) {
        cr_assert_eq(v[i], want[i], "n %zu: at %zu %llx, want %llx", n, i,
                     (unsigned long long)v[i], (unsigned long long)want[i]);
        cr_assert_eq(w[i], want[i], "with: n %zu: at %zu %llx, want %llx", n, i,
                     (unsigned long long)w[i], (unsigned long long)want[i]);
    }
    free(want);
    free(w);
    free(tmp);
}

static const size_t sizes[] = {0, 1, 2, 31, 32, 33, 255, 256, 257, 1000, 100000};

Test(sort, u64_random)
{
    vl_rng r;
    vl_rng_seed(&r, 1, 0);
    for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++) {
        uint64_t *v = malloc((sizes[s] ? sizes[s] : 1) * sizeof *v);
        for (size_t i = 0; i < sizes[s]; i++)
            v[i] = vl_rng_next(&r);
        check(v, sizes[s]);
        free(v);
    }
}

Test(sort, u64_packed_keys)
{
    vl_rng r;
    vl_rng_seed(&r, 2, 0);
    for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++) {
        uint64_t *v = malloc((sizes[s] ? sizes[s] : 1) * sizeof *v);
        for (size_t i = 0; i < sizes[s]; i++) /* few lengths: many equal high halves */
            v[i] = (uint64_t)(UINT32_MAX - vl_rng_below(&r, 50)) << 32 | i;
        check(v, sizes[s]);
        free(v);
    }
}

Test(sort, u64_one_digit_and_equal)
{
    size_t n = 5000;
    uint64_t *v = malloc(n * sizeof *v);

    for (size_t i = 0; i < n; i++) /* only bits 55..63 differ: the top pass alone */
        v[i] = (uint64_t)((i * 7919) % 512) << 55 | 0x1234;
    check(v, n);
    for (size_t i = 0; i < n; i++)
        v[i] = 42;
    check(v, n);
    free(v);
}

static int cmp32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

Test(sort, u32_radix)
{
    vl_rng r;
    vl_rng_seed(&r, 3, 0);
    for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++) {
        size_t n = sizes[s];
        uint32_t *v = malloc((n ? n : 1) * sizeof *v), *want = malloc((n ? n : 1) * sizeof *v),
                 *tmp = malloc((n ? n : 1) * sizeof *v);
        for (size_t i = 0; i < n; i++) /* small values in half: digits every value shares */
            v[i] = s % 2 ? (uint32_t)vl_rng_next(&r) : (uint32_t)vl_rng_below(&r, 3000);
        memcpy(want, v, n * sizeof *v);
        qsort(want, n, sizeof *want, cmp32);
        vl_sort_u32_radix(v, tmp, n);
        for (size_t i = 0; i < n; i++)
            cr_assert_eq(v[i], want[i], "n %zu: at %zu", n, i);
        free(v);
        free(want);
        free(tmp);
    }
}
