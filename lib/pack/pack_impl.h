/* lib/pack/pack_impl.h -- internals shared by the packer units (pack.c, pack_fit.c,
 * pack_isf.c, pack_spfhp.c): canonical orders, the residual-bucket index, and the
 * assembly of a vl_bins from per-item bin numbers.  Not API: only the lib/pack units. */
#ifndef VLPLAN_PACK_IMPL_H
#define VLPLAN_PACK_IMPL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "err.h"
#include "pack.h"

#define VL_PK_NONE UINT32_MAX

/* Stream tags: each use of the pack seed draws from its own stream, so two packers
 * (or ISF passes) never replay one another's random numbers. */
#define VL_PK_STREAM_FFS 0x4646530000000000ull /* "FFS" */
#define VL_PK_STREAM_BFS 0x4246530000000000ull /* "BFS" */
#define VL_PK_STREAM_ISF 0x4953460000000000ull /* "ISF" + pass */

/* Work items carry their length: pair = len << 32 | sample index.  Reading len[] once,
 * up front, matters at 10M items, where every later random lookup is a cache miss. */
#define VL_PK_LEN(p) ((uint32_t)((p) >> 32))
#define VL_PK_ITEM(p) ((uint32_t)(p))

/** Sort pairs by sample index ascending (LSD radix).  VL_ENOMEM. */
vl_status vl__pk_sort_values(uint64_t *p, size_t n, vl_err *err);

/** Sort pairs by length descending, ties by sample index ascending (a total order,
 *  LSD radix).  VL_ENOMEM. */
vl_status vl__pk_sort_len_desc(uint64_t *p, size_t n, vl_err *err);

/** Fisher-Yates with vl_rng_seed(seed, stream): the same permutation that
 *  vl_rng_shuffle_u32 makes of an array of the same length. */
void vl__pk_shuffle(uint64_t *p, size_t n, uint64_t seed, uint64_t stream);

/** An upper bound on the bins any any-fit packer (next/first/best/worst fit) opens:
 *  no two bins it never closed for their item count are both at most half full, so
 *  B <= 2*sum/cap + 1 + n/max_items (max_items 0: no such closing). */
size_t vl__pk_bin_bound(const uint64_t *p, size_t n, uint32_t cap, uint32_t max_items);

/** Build out from a placement: p[i] went into bin bin[i] (bins numbered 0..nbins-1 in
 *  opening order).  Items keep their placement order within a bin.  VL_ENOMEM. */
vl_status vl__pk_assemble(vl_bins *out, const uint64_t *p, const uint32_t *bin, size_t n,
                          size_t nbins, vl_err *err);

/* Residual-bucket index: bins keyed by free space 0..cap.  A 64-ary bitset tree marks
 * the non-empty values (successor / maximum in O(log64 cap)); each value holds a stack
 * of bins linked through next[], so ties go to the bin that reached that value last. */
#define VL_PK_LEVELS 7
typedef struct vl_pk_rbuck {
    uint64_t *bits;           /* all levels, level 0 first */
    size_t off[VL_PK_LEVELS]; /* word offset of each level */
    size_t words[VL_PK_LEVELS];
    int levels;
    uint32_t *head; /* [cap + 1] top of each stack; valid only when marked */
    uint32_t *next; /* [max bins] */
} vl_pk_rbuck;

vl_status vl__pk_rbuck_init(vl_pk_rbuck *rb, uint32_t cap, size_t max_bins, vl_err *err);
void vl__pk_rbuck_free(vl_pk_rbuck *rb);
void vl__pk_rbuck_push(vl_pk_rbuck *rb, uint32_t bin, uint32_t residual);
uint32_t vl__pk_rbuck_pop(vl_pk_rbuck *rb, uint32_t residual);
/** Smallest marked residual >= x, or VL_PK_NONE. */
uint32_t vl__pk_rbuck_succ(const vl_pk_rbuck *rb, uint32_t x);
/* Best fit (roomiest = false) or worst fit (true) of sorted items (pack_fit.c); a bin
 * holding max_items items (0: no limit) takes no more. */
vl_status vl__pk_residual_fit(vl_bins *out, const uint64_t *p, size_t n, uint32_t cap,
                              uint32_t max_items, bool roomiest, vl_err *err);
/** Largest marked residual, or VL_PK_NONE. */
uint32_t vl__pk_rbuck_max(const vl_pk_rbuck *rb);

/* The packers, over pairs already checked against cap and put in the order the
 * algorithm wants (pack.c); they may reorder p. */
vl_status vl__pk_first_fit(vl_bins *out, const uint64_t *p, size_t n, uint32_t cap,
                           uint32_t max_items, vl_err *err);
vl_status vl__pk_isf(vl_bins *out, uint64_t *p, size_t n, const vl_pack_opts *o, vl_err *err);
vl_status vl__pk_spfhp(vl_bins *out, const uint64_t *p, size_t n, uint32_t cap,
                       uint32_t max_items, vl_err *err);
vl_status vl__pk_next_fit(vl_bins *out, const uint64_t *p, size_t n, uint32_t cap,
                          uint32_t max_items, vl_err *err);

#endif
