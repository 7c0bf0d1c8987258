/* lib/util/sort.h -- ascending sorts of plain values, shared by lib/ and plans/.  Equal
 * values are indistinguishable, so the result never depends on qsort's algorithm;
 * records are sorted through one packed integer key (e.g. len << 32 | index). */
#ifndef VLPLAN_SORT_H
#define VLPLAN_SORT_H

#include <stddef.h>
#include <stdint.h>

void vl_sort_u64(uint64_t *v, size_t n);
/** The same without allocating (LSD radix for many values, a merge sort for few): tmp
 *  has room for n. */
void vl_sort_u64_with(uint64_t *v, uint64_t *tmp, size_t n);
void vl_sort_u32(uint32_t *v, size_t n);
/** The same in O(n) without allocating: LSD radix, 11 bits a pass, skipping digits every
 *  value shares (sample indices under 4M need two passes).  tmp has room for n. */
void vl_sort_u32_radix(uint32_t *v, uint32_t *tmp, size_t n);
/** NaNs are not ordered: callers pass finite values. */
void vl_sort_double(double *v, size_t n);

#endif
