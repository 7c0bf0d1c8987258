/* lib/util/sort.c -- ascending value sorts (sort.h): qsort, and a radix sort for hot paths. */
#include "sort.h"

#include <stdlib.h>
#include <string.h>

#include "bigmem.h"

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

/* LSD radix sort of v[0..n) (unsigned type T of `bits` bits) through tmp (room for n),
 * 11 bits a pass, only over the digits where the values differ (their AND and OR
 * disagree; a pass over one digit value changes nothing): packed (length, index) keys
 * take three or four passes.  One body for both widths. */
#define RADIX_SORT(T, bits, v, tmp, n)                                                        \
    do {                                                                                      \
        T all_ = (T) ~(T)0, any_ = 0, *src_ = (v), *dst_ = (tmp);                             \
        for (size_t i_ = 0; i_ < (n); i_++) {                                                 \
            all_ &= src_[i_];                                                                 \
            any_ |= src_[i_];                                                                 \
        }                                                                                     \
        for (int sh_ = 0; sh_ < (bits); sh_ += 11) {                                          \
            size_t cnt_[2048] = {0}, pos_ = 0;                                                \
            if ((((all_ ^ any_) >> sh_) & 2047) == 0)                                         \
                continue;                                                                     \
            for (size_t i_ = 0; i_ < (n); i_++)                                               \
                cnt_[(src_[i_] >> sh_) & 2047]++;                                             \
            for (size_t d_ = 0; d_ < 2048; d_++) {                                            \
                size_t c_ = cnt_[d_];                                                         \
                cnt_[d_] = pos_;                                                              \
                pos_ += c_;                                                                   \
            }                                                                                 \
            for (size_t i_ = 0; i_ < (n); i_++)                                               \
                dst_[cnt_[(src_[i_] >> sh_) & 2047]++] = src_[i_];                            \
            T *t_ = src_;                                                                     \
            src_ = dst_;                                                                      \
            dst_ = t_;                                                                        \
        }                                                                                     \
        if (src_ != (v))                                                                      \
            memcpy((v), src_, (n) * sizeof *src_);                                            \
    } while (0)

/* Equal values are indistinguishable, so radix and qsort give the same array; qsort
 * stays for short arrays and where the buffer cannot be had. */
void vl_sort_u64(uint64_t *v, size_t n)
{
    uint64_t *tmp = n >= RADIX_MIN ? vl_big_malloc(n * sizeof *tmp) : NULL;

    if (tmp != NULL)
        RADIX_SORT(uint64_t, 64, v, tmp, n);
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
    if (n > 1)
        RADIX_SORT(uint32_t, 32, v, tmp, n);
}

/* Below RADIX_MIN a merge sort (insertion under 32): a radix pass's counts cost more
 * than the values. */
static void merge_u64(uint64_t *v, uint64_t *tmp, size_t n)
{
    if (n < 32) {
        for (size_t i = 1; i < n; i++) {
            uint64_t x = v[i];
            size_t j = i;
            for (; j > 0 && x < v[j - 1]; j--)
                v[j] = v[j - 1];
            v[j] = x;
        }
        return;
    }
    size_t h = n / 2;
    merge_u64(v, tmp, h);
    merge_u64(v + h, tmp, n - h);
    for (size_t i = 0, j = h, q = 0; q < n; q++)
        tmp[q] = (j >= n || (i < h && v[i] <= v[j])) ? v[i++] : v[j++];
    memcpy(v, tmp, n * sizeof *v);
}

void vl_sort_u64_with(uint64_t *v, uint64_t *tmp, size_t n)
{
    if (n >= RADIX_MIN)
        RADIX_SORT(uint64_t, 64, v, tmp, n);
    else
        merge_u64(v, tmp, n);
}
