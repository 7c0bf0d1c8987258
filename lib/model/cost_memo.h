/* lib/model/cost_memo.h -- internals of the attention memo (cost_memo.c) shared with cost.c,
 * whose analytic time reads and fills it.  Not API: callers use vl_cost_memoized and
 * vl_cost_memo_free (cost.h).
 *
 * A plane holds, for one (g, rdiv) -- the GPUs a pack is spread over and what divides
 * its equal-work length -- the forward and backward attention seconds per layer of a
 * whole sample of each length (a segment at offset 0), computed by cost.c's attn_terms
 * on first use: a cached value is the one computed again, bit for bit.  An entry whose
 * forward is 0 is empty (a real term of a non-empty segment is above 0; one that is not
 * is computed every time). */
#ifndef VLPLAN_COST_MEMO_H
#define VLPLAN_COST_MEMO_H

#include <stdbool.h>
#include <stdint.h>

#include "cost.h"

#define VL_COST_MEMO_PLANES 4 /* (g, rdiv) pairs held; others are not memoised */
/* Segments of this many tokens or more are not memoised: a 128K context's are, and a
 * plane stays within 2 MiB (a plane of DP-Merge outliers holds few lengths, all long) */
#define VL_COST_MEMO_LEN (131072u + 1)

typedef struct vl_cost_memo_plane {
    double g;
    int rdiv;
    double (*fb)[2]; /* [len]: forward, backward seconds per layer; 0, 0 empty */
    uint32_t cap;    /* lengths below it have an entry */
} vl_cost_memo_plane;

/* What the terms depend on besides the segment and the plane: the memo is emptied when
 * vl_cost_memoized finds any of it changed (memcmp: zero-filled, then set). */
typedef struct vl_cost_memo_key {
    double acoef, peak, bwd_attn;
    vl_curve fwd, bwd;
    double lx_fwd[VL_CURVE_MAX], lx_bwd[VL_CURVE_MAX];
    double below_fwd, below_bwd;
    int same_x;
} vl_cost_memo_key;

struct vl_cost_memo {
    vl_cost_memo_key key;
    int nplanes;
    vl_cost_memo_plane planes[VL_COST_MEMO_PLANES];
};

/** The plane of (g, rdiv), opened when there is room; NULL when all are taken. */
vl_cost_memo_plane *vl__cost_memo_plane(vl_cost_memo *m, double g, int rdiv);

/** Make room for length len (lengths below cap afterwards); false when it cannot (too
 *  long, out of memory): the caller computes without the memo. */
bool vl__cost_memo_reserve(vl_cost_memo_plane *pl, uint32_t len);

#endif
