/* tests/util/test_bigmem.c -- vl_big_malloc and vl_big_realloc: large blocks start on a
 * 2 MiB boundary (Linux) and hold what is written to them, small ones are plain malloc;
 * realloc keeps the contents across the small/large boundary both ways. */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "bigmem.h"

static void fill(uint32_t *p, size_t n, uint32_t salt)
{
    for (size_t i = 0; i < n; i++)
        p[i] = (uint32_t)i * 2654435761u ^ salt;
}

static void check(const uint32_t *p, size_t n, uint32_t salt)
{
    for (size_t i = 0; i < n; i++)
        cr_assert_eq(p[i], (uint32_t)i * 2654435761u ^ salt, "at %zu of %zu", i, n);
}

Test(bigmem, large_blocks_are_aligned_and_usable)
{
    size_t n = VL_BIG_MIN / sizeof(uint32_t) + 12345; /* not a whole number of pages */
    uint32_t *p = vl_big_malloc(n * sizeof *p);

    cr_assert_not_null(p);
#if defined(__linux__)
    cr_expect_eq((uintptr_t)p % ((uintptr_t)2 << 20), 0,
                 "large block not on a 2 MiB boundary");
#endif
    fill(p, n, 7);
    check(p, n, 7);
    free(p);
}

Test(bigmem, small_blocks_are_usable)
{
    uint32_t *p = vl_big_malloc(1000 * sizeof *p);

    cr_assert_not_null(p);
    fill(p, 1000, 3);
    check(p, 1000, 3);
    free(p);
}

Test(bigmem, realloc_keeps_contents_growing_and_shrinking)
{
    size_t small = 1000, big = 3 * VL_BIG_MIN / sizeof(uint32_t), bigger = 2 * big;
    uint32_t *p = vl_big_realloc(NULL, 0, small * sizeof *p);

    cr_assert_not_null(p);
    fill(p, small, 11);
    p = vl_big_realloc(p, small * sizeof *p, big * sizeof *p); /* small to large */
    cr_assert_not_null(p);
    check(p, small, 11);
    fill(p, big, 13);
    p = vl_big_realloc(p, big * sizeof *p, bigger * sizeof *p); /* large to larger */
    cr_assert_not_null(p);
    check(p, big, 13);
    p = vl_big_realloc(p, bigger * sizeof *p, small * sizeof *p); /* back to small */
    cr_assert_not_null(p);
    check(p, small, 13);
    free(p);
}
