/* lib/pack/partition_impl.h -- what partition.c (items in weight order, LPT) shares with
 * partition_kk.c (Karmarkar-Karp). */
#ifndef VLPLAN_PARTITION_IMPL_H
#define VLPLAN_PARTITION_IMPL_H

#include <stdint.h>

#include "pack.h"

#define NONE UINT32_MAX

typedef struct witem {
    double w;
    uint32_t i;
} witem;

/* An item and its radix key, sorted together (the key computed once, not per pass). */
typedef struct kitem {
    uint64_t key;
    witem it;
} kitem;

/** Sort it[0..n) into weight order (weight descending, index ascending); tmp has room
 *  for 2n. */
void vl__pt_sort_items(witem *it, kitem *tmp, size_t n);
/** The arguments every partitioner refuses (fewer than 1 part, too many items, a weight
 *  not finite): VL_EUSAGE. */
vl_status vl__pt_check_items(const double *w, size_t n, int k, vl_err *err);
/** *out (malloc'd) the items in weight order: from order where it is that order (NULL:
 *  none given), else sorted.  VL_EUSAGE as vl__pt_check_items, VL_ENOMEM. */
vl_status vl__pt_sorted_items(witem **out, const double *w, const uint32_t *order, size_t n,
                              int k, vl_err *err);

#endif
