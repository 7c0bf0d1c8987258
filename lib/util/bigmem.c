/* lib/util/bigmem.c -- large arrays on transparent huge pages (bigmem.h).
 *
 * Why: a fresh 4 KiB page costs a page fault and its zeroing when first touched, and on
 * the virtual machines vlplan is measured on the fault itself costs microseconds; at
 * 10M samples, where every per-sample array is 40-80 MB, planning took over 120K faults.
 * A random access (a shuffle, a permutation, a lookup of a sample's length) into such an
 * array also misses the TLB at nearly every step.  A 2 MiB page is one fault instead of
 * 512, and one TLB entry.  The kernel gives them to ranges marked with MADV_HUGEPAGE when
 * THP is in `madvise` mode (a common default); in `always` mode the mark changes
 * nothing, in `never` it is ignored.  The block is aligned so that none of it lies on a
 * partial huge page, and marked before it is touched: a page touched first stays small. */
#define _DEFAULT_SOURCE /* madvise and MADV_HUGEPAGE are not in POSIX */
#include "bigmem.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#if defined(__linux__)
#include <sys/mman.h>
#endif

#if defined(__linux__) && defined(MADV_HUGEPAGE)
#define HUGE_PAGE ((size_t)2 << 20)

void *vl_big_malloc(size_t bytes)
{
    size_t whole = (bytes + HUGE_PAGE - 1) & ~(HUGE_PAGE - 1);
    void *p;

    if (bytes < VL_BIG_MIN || whole < bytes)
        return malloc(bytes);
    if (posix_memalign(&p, HUGE_PAGE, whole) != 0)
        return NULL;
    (void)madvise(p, whole, MADV_HUGEPAGE); /* a hint: small pages if refused */
    return p;
}
#else
void *vl_big_malloc(size_t bytes)
{
    return malloc(bytes);
}
#endif

void *vl_big_realloc(void *p, size_t old, size_t bytes)
{
    void *q;

    if (bytes < VL_BIG_MIN)
        return realloc(p, bytes ? bytes : 1);
    if ((q = vl_big_malloc(bytes)) == NULL)
        return NULL;
    if (p != NULL)
        memcpy(q, p, old < bytes ? old : bytes);
    free(p);
    return q;
}
