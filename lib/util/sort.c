/* lib/util/sort.c -- ascending value sorts (sort.h): qsort, and a radix sort for hot paths. */
#include "sort.h"

#include <stdlib.h>
#include <string.h>

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Below this many values qsort is as quick and needs no buffer. */
#define RADIX_MIN 256

/* LSD radix through tmp, 11 bits a pass, only over the digits where the values differ
 * (their AND and OR disagree): packed (length, index) keys take three or four passes. */
static void radix_u64(uint64_t *v, uint64_t *tmp, size_t n)
{
    uint64_t all = ~0ull, any = 0, *src = v, *dst = tmp;

    for (size_t i = 0; i < n; i++) {
        all &= v[i];
        any |= v[i];
    }
    for (int shift = 0; shift < 64; shift += 11) {
        if ((((all ^ any) >> shift) & 2047) == 0)
            continue;
        size_t cnt[2048] = {0}, pos = 0;
        for (size_t i = 0; i < n; i++)
            cnt[(src[i] >> shift) & 2047]++;
        for (size_t d = 0; d < 2048; d++) {
            size_t c = cnt[d];
            cnt[d] = pos;
            pos += c;
        }
        for (size_t i = 0; i < n; i++)
            dst[cnt[(src[i] >> shift) & 2047]++] = src[i];
        uint64_t *t = src;
        src = dst;
        dst = t;
    }
    if (src != v)
        memcpy(v, src, n * sizeof *v);
}

/* Equal values are indistinguishable, so radix and qsort give the same array; qsort
 * stays for short arrays and where the buffer cannot be had. */
void vl_sort_u64(uint64_t *v, size_t n)
{
    uint64_t *tmp = n >= RADIX_MIN ? malloc(n * sizeof *tmp) : NULL;

    if (tmp != NULL)
        radix_u64(v, tmp, n);
    else if (n > 1)
        qsort(v, n, sizeof *v, cmp_u64);
    free(tmp);
}

void vl_sort_u32(uint32_t *v, size_t n)
{
    if (n > 1)
        qsort(v, n, sizeof *v, cmp_u32);
}

void vl_sort_double(double *v, size_t n)
{
    if (n > 1)
        qsort(v, n, sizeof *v, cmp_double);
}

void vl_sort_u32_radix(uint32_t *v, uint32_t *tmp, size_t n)
{
    uint32_t *src = v, *dst = tmp;

    for (int shift = 0; shift < 32 && n > 1; shift += 11) {
        size_t cnt[2048] = {0}, pos = 0;
        for (size_t i = 0; i < n; i++)
            cnt[(src[i] >> shift) & 2047]++;
        if (cnt[(src[0] >> shift) & 2047] == n)
            continue;
        for (size_t d = 0; d < 2048; d++) {
            size_t c = cnt[d];
            cnt[d] = pos;
            pos += c;
        }
        for (size_t i = 0; i < n; i++)
            dst[cnt[(src[i] >> shift) & 2047]++] = src[i];
        uint32_t *t = src;
        src = dst;
        dst = t;
    }
    if (src != v)
        memcpy(v, src, n * sizeof *v);
}
