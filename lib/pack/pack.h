/* lib/pack/pack.h -- bin-packing primitives shared by strategies: FFD, BFD, FFS, BFS, ISF
 * (OmniBal's iterative sampling and filtering), SPFHP (Graphcore's shortest-pack-first
 * histogram packing), WFD (worst fit decreasing), NF (next fit in the given order), and
 * KK/LPT number partitioning. */
#ifndef VLPLAN_PACK_H
#define VLPLAN_PACK_H

#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "err.h"

/* Result of packing: bin b holds items[start[b] .. start[b+1]) (sample indices). */
typedef struct vl_bins {
    size_t n;
    size_t *start;   /* [n + 1] */
    uint32_t *items; /* [number of items packed] */
    uint64_t *load;  /* [n] Σ len of the bin */
} vl_bins;

typedef struct vl_pack_opts {
    vl_pack_algo algo;
    uint32_t cap;       /* bin capacity in tokens */
    uint64_t seed;      /* FFS, BFS, ISF shuffles */
    int isf_iters;      /* ISF refinement passes C */
    uint32_t isf_slack; /* ISF accepts bins with load ≥ cap − slack */
    uint32_t max_items; /* items per bin at most; 0 = no limit */
} vl_pack_opts;

/** Pack items[0..n-1] (sample indices, lengths len[item] ≤ cap) into bins.  The result is
 *  deterministic for the same inputs (ties broken by item value) and, except for NF,
 *  independent of the order items come in; NF packs them in the order given.  Every
 *  item is placed exactly once.  VL_EUSAGE if an item exceeds cap, VL_ENOMEM. */
vl_status vl_pack(vl_bins *out, const uint32_t *items, size_t n, const uint32_t *len,
                  const vl_pack_opts *o, vl_err *err);
void vl_bins_free(vl_bins *b);

/** Balanced k-way partition of weights w[0..n-1] (LPT: heaviest first onto the lightest
 *  part; ties by index).  part[i] receives the part of item i.  VL_ENOMEM. */
vl_status vl_partition_lpt(int *part, const double *w, size_t n, int k, vl_err *err);

/** Karmarkar-Karp largest differencing k-way partition (better balance than LPT). */
vl_status vl_partition_kk(int *part, const double *w, size_t n, int k, vl_err *err);

/** KK with equal part sizes: every part receives exactly n/k items (veRL's equal_size:
 *  items taken k at a time in weight order, one per part, before differencing).
 *  VL_EUSAGE unless k divides n; VL_ENOMEM. */
vl_status vl_partition_kk_equal(int *part, const double *w, size_t n, int k, vl_err *err);

/** vl_partition_kk and vl_partition_kk_equal with a hint: order[0..n) the items in the
 *  order they sort in (weight descending, then lower index) -- e.g. by length, for
 *  weights that grow with it, computed once for several weightings.  Checked in O(n);
 *  where it is not that order the items are sorted as without it.  Same results. */
vl_status vl_partition_kk_ordered(int *part, const double *w, const uint32_t *order, size_t n,
                                  int k, vl_err *err);
vl_status vl_partition_kk_equal_ordered(int *part, const double *w, const uint32_t *order,
                                        size_t n, int k, vl_err *err);

/** Parse a packer name ("ffd", ...) into *algo; returns 0 on success, -1 if unknown. */
int vl_pack_algo_parse(const char *name, vl_pack_algo *algo);
const char *vl_pack_algo_name(vl_pack_algo algo);

#endif
