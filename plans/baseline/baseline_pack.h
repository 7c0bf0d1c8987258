/* plans/baseline/baseline_pack.h -- what the files of the `pack` baseline share
 * (baseline_pack.c: the strategy; baseline_pack_deal.c: costing packs and dealing them
 * to ranks; baseline_pack_batch.c: batch scope; baseline_pack_epoch.c: epoch scope).
 * Not API. */
#ifndef VLPLAN_BASELINE_PACK_H
#define VLPLAN_BASELINE_PACK_H

#include "baseline_impl.h"
#include "baseline_pieces.h"

#define STREAM_PACK 0x5041434B00000000ull  /* "PACK": the packer's seed */
#define STREAM_ORDER 0x504B4F5200000000ull /* "PKOR": the packs' order in a window */

/* What every pack function reads besides bl: item lengths and, under
 * training.oversize=split, the pieces (items >= pieces.base).  Passed as bl.opts. */
typedef struct pack_ctx {
    const uint32_t *len;
    vl__bl_pieces pieces;
} pack_ctx;

static inline const pack_ctx *pk_ctx(const bl *c)
{
    return c->opts;
}

/* Packs as ranges of one item array, so a split only reorders inside a range. */
typedef struct packs {
    uint32_t *items; /* the packer's output, reordered by splits */
    size_t *off, *cnt;
    double *load;   /* tokens */
    double *weight; /* [n] each pack's vl__pk_weight, kept where known; NULL: none */
    size_t n;
} packs;

/* Dealing scratch: what one iteration's packs cost, and who runs them. */
typedef struct dealer {
    size_t *ids; /* the packs of the iteration, in order */
    double *w;
    int *part;
    size_t *by, *cur;
    vl_seg *segs;
    size_t nsegs_cap;
    size_t cap; /* packs ids, w, part and by have room for */
} dealer;

vl_status vl__pk_dealer_init(dealer *d, size_t packs_max, size_t dp, vl_err *err);
void vl__pk_dealer_free(dealer *d);
/** Room for `packs` packs in d (kept on failure).  VL_ENOMEM. */
vl_status vl__pk_dealer_reserve(dealer *d, size_t want, vl_err *err);
/** The weight pack.balance deals by (time, tokens or attention); an empty pack: 0.
 *  Under pack.balance=time it equals vl__pk_time to the bit. */
vl_status vl__pk_weight(bl *c, dealer *d, const uint32_t *it, size_t k, double *out,
                        vl_err *err);
/** A micro-batch of cap slots holding items[0..k): whole samples and pieces. */
vl_status vl__pk_emit(bl *c, uint32_t cap, const uint32_t *items, size_t k, vl_err *err);
/** Weigh packs pk[ids[0 .. np)] (d->w; from pk->weight where kept) and deal them to
 *  ranks by equal-count KK (d->part), pieces of a sample kept apart where a swap
 *  allows. */
vl_status vl__pk_partition(bl *c, dealer *d, const packs *pk, const size_t *ids, size_t np,
                           vl_err *err);
/** Emit the packs as d->part deals them, rank r running its packs in the order of ids. */
vl_status vl__pk_emit_dealt(bl *c, dealer *d, const packs *pk, const size_t *ids, size_t np,
                            uint32_t empty_cap, vl_err *err);
/** Deal packs pk[ids[0 .. np)] (np a multiple of dp; empty ones get empty_cap slots)
 *  to the ranks of the current iteration and emit them. */
vl_status vl__pk_deal(bl *c, dealer *d, const packs *pk, const size_t *ids, size_t np,
                      uint32_t empty_cap, vl_err *err);
/** Epoch scope: deal one iteration's packs (vl__pk_deal), or under pack.deal=samples
 *  their samples where that balances better (baseline_pack_samples.c). */
vl_status vl__pk_deal_iter(bl *c, dealer *d, const packs *pk, const size_t *ids, size_t np,
                           vl_err *err);
/* What each of n packs weighs: modelled time (the pack.balance weight), tokens, and
 * attention (causal pairs). */
typedef struct vl__pk_weights {
    size_t n;
    double *time, *tok, *att;
} vl__pk_weights;

/* The measures, in the order of vl__pk_weights; VL__PK_ALL: a mask of all three. */
enum { VL__PK_TIME = 0, VL__PK_TOK = 1, VL__PK_ATT = 2, VL__PK_ALL = 7 };

/** The measure pack.balance names (VL__PK_TIME, _TOK or _ATT). */
int vl__pk_primary(const bl *c);
/** Swap packs between ranks (part[p] of pack p, dp ranks, equal counts kept).  primary
 *  VL__PK_TIME: lower the busiest rank's tokens, then its attention work, without
 *  raising the busiest rank's time or the other measure.  VL__PK_TOK or _ATT: lower
 *  that measure's busiest rank, then the other one's without raising the first or
 *  time (baseline_pack_refine.c).  VL_ENOMEM. */
vl_status vl__pk_refine(const vl__pk_weights *w, int *part, size_t dp, int primary,
                        vl_err *err);
/** Build pk[ids[0 .. np)]'s weights (modelled time, tokens, attention) and refine the
 *  dealing d->part by vl__pk_refine under pack.balance's measure.  d->w[p] must be pack
 *  ids[p]'s vl__pk_weight: under pack.balance=time that is its modelled time, not
 *  computed again. */
vl_status vl__pk_refine_dealt(bl *c, dealer *d, const packs *pk, const size_t *ids, size_t np,
                              vl_err *err);
/** A pack's modelled time (forward + backward on the first stage; tokens without a
 *  cost model); an empty pack: 0. */
vl_status vl__pk_time(bl *c, dealer *d, const uint32_t *it, size_t k, double *out,
                      vl_err *err);
/** The cost model's time as a*len + b*pairs per sample, linearised at a full pack
 *  (a = 1, b = 0 without a cost model). */
void vl__pk_linear_time(const bl *c, double *a, double *b);
/* What the sample-level refinement needs besides the packs. */
typedef struct vl__pk_shift_in {
    const uint32_t *len;     /* item lengths */
    uint32_t cap, max_items; /* per pack: tokens, samples (0: no limit) */
    size_t dp;
    double a, b; /* the modelled time linearised per sample: a*len + b*pairs */
    int primary; /* vl__pk_primary */
    /* a pack's exact modelled time */
    vl_status (*time)(void *ctx, const uint32_t *items, size_t k, double *out, vl_err *err);
    void *ctx;
    const double *times; /* [packs] each one's time where known up front; NULL: none */
} vl__pk_shift_in;

/** Move or swap single samples between packs of different ranks (pack p of pk->n on
 *  rank part[p]; ranks keep their packs, an empty one may fill) to lower the busiest
 *  rank's load as vl__pk_refine does by packs (baseline_pack_shift.c); pk is rewritten
 *  with the same items regrouped (pk->load is not read).  VL_ENOMEM. */
vl_status vl__pk_shift(const vl__pk_shift_in *in, packs *pk, const int *part, vl_err *err);
/** Sample-level refinement of one iteration (pk[ids[p]] on rank d->part[p], np = dp*m
 *  slots; d->w[p] its vl__pk_weight, as vl__pk_refine_dealt needs), then emit it
 *  (baseline_pack_shift.c). */
vl_status vl__pk_shift_emit(bl *c, dealer *d, const packs *pk, const size_t *ids, size_t np,
                            vl_err *err);
/* One dealing of an iteration's samples: each rank's packs, the busiest rank's load. */
typedef struct share {
    vl_bins *bins; /* [dp] */
    size_t m;      /* slots per rank: its packs, then empty ones */
    bool verl;     /* veRL's dealing (baseline_verl.c), not packed shares */
    double worst;  /* the busiest rank's pack.balance weight */
    double time;   /* the largest modelled time of any rank (= worst under time) */
    bool fits;     /* every rank's packs within its m slots */
    bool beaten;   /* a rank's load above the limit it was weighed against */
} share;

void vl__pk_share_free(share *sh, size_t dp);
/** sh->worst: the largest rank's Σ vl__pk_weight over its packs; sh->time: the largest
 *  rank modelled time, which need not be that rank's (the tie-break under
 *  pack.balance=tokens or attention).  Stops at a rank whose load passes limit and sets
 *  sh->beaten (INFINITY: never). */
vl_status vl__pk_share_weigh(bl *c, dealer *d, share *sh, double limit, vl_err *err);
/** pack.balance as a per-sample weight a*len + b*pairs (time: the cost model
 *  linearised at a full pack). */
void vl__pk_linear(const bl *c, double *a, double *b);
/** Bits that hold every index below n (at most 32): a key len << that | index sorts as
 *  len << 32 | index does, in fewer radix passes (vl_sort_u64 skips the digits every key
 *  shares; the gap between the two fields is not one). */
static inline unsigned vl__pk_index_bits(size_t n)
{
    unsigned b = 0;

    while (b < 32 && ((uint64_t)1 << b) < n)
        b++;
    return b;
}

/** The packer's options, seeded from the stream `stream`. */
vl_pack_opts vl__pk_opts(const bl *c, uint64_t stream);
/** Batch scope: one global batch (vl__bl_batch_fn). */
vl_status vl__pk_batch(bl *c, const uint32_t *samples, size_t ns, vl_err *err);
/** Epoch scope: every epoch (vl__bl_epochs_fn). */
vl_status vl__pk_epochs(bl *c, vl_err *err);

#endif
