/* lib/plan/plan.h -- the in-memory plan (flat arrays) and the builder API every strategy
 * calls.  Iterations hold ranks (data-parallel replicas), ranks hold forward micro-batches
 * ("packs") and optionally backward packs, packs hold segments [off, off + len) of
 * samples (docs/decisions.md §7).
 *
 * The vocabulary, shared by all five strategies:
 *  - a rank runs under (tp, pp, sp, ckpt_layers) on tp·sp·pp GPUs, given explicitly
 *    (vl_plan_rank_gpus) or by the default placement (vl_plan_rank_gpu);
 *  - a segment is sharded over the rank's sp group (VL_CP_SHARDED, the default) or local
 *    to one of its CP coordinates (Skrull's DACP);
 *  - a rank may carry backward packs distinct from its forward packs (SlimPack's
 *    asymmetric partition), named by the B operations of its schedule;
 *  - a pack may be shared by several ranks of its iteration, each holding an identical
 *    copy (SlimPack's DP-Merge): member i of the list is CP rank i of the merged group;
 *  - ranks of one iteration may differ in tp, pp, sp and micro-batch count (HBP,
 *    Hydraulis, Skrull), as the plan's capabilities (VL_CAP_*) allow.
 * A shared pack's tokens count once per iteration: the copy on its first member is the
 * primary one (coverage, totals); metrics give every member 1/k of its load. */
#ifndef VLPLAN_PLAN_H
#define VLPLAN_PLAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "drop.h"
#include "err.h"
#include "manifest.h"

/* ---- plan types: what a micro-batch holds and how a rank runs it ---- */

/* A slice [off, off + len) of sample `sample` (index into the manifest). */
typedef struct vl_seg {
    uint32_t sample;
    uint32_t off;
    uint32_t len;
} vl_seg;

/* Parallel layout one micro-batch runs under. */
typedef struct vl_par {
    int tp, pp, sp;  /* sp = sequence/context-parallel degree (kind from the config) */
    int ckpt_layers; /* layers (per pipeline stage) that recompute activations */
} vl_par;

/* One operation of an explicit per-rank schedule (ChunkFlow, SlimPack). */
typedef enum { VL_OP_F = 0, VL_OP_R = 1, VL_OP_B = 2 } vl_op_kind;
typedef struct vl_op {
    uint32_t mb;  /* F, R: forward pack index; B: backward pack index when the rank
                           * has backward packs, else forward pack index (0-based) */
    uint8_t kind; /* vl_op_kind: forward, recompute-forward, backward */
} vl_op;

/* Per-segment CP placement: sharded over the rank's sp group, or local to coordinate c. */
#define VL_CP_SHARDED (-1)
/* A strategy's name in a plan, with its NUL. */
#define VL_STRATEGY_NAME_MAX 48

/* What a plan may use beyond the HBP/ChunkFlow core; a strategy declares them
 * (vl_strategy.caps), the header records them ("caps"), verify holds plans to them. */
enum {
    VL_CAP_UNEVEN_MBS = 1u << 0,  /* ranks of an iteration may differ in micro-batch count */
    VL_CAP_BWD_PACKS = 1u << 1,   /* backward packs distinct from forward packs */
    VL_CAP_SEG_CP = 1u << 2,      /* per-segment CP placement */
    VL_CAP_SCHEDULE = 1u << 3,    /* explicit per-rank schedules */
    VL_CAP_SHARED = 1u << 4,      /* packs shared by several ranks */
    VL_CAP_WORLD_OPTIM = 1u << 5, /* optimizer states sharded over every GPU */
    VL_NCAPS = 6
};
/** The header name of capability bit i ("uneven_mbs", ...), NULL past the last. */
const char *vl_cap_name(unsigned i);

/* seg.sample of a plan read back from a file whose id is not in the manifest. */
#define VL_SAMPLE_UNKNOWN UINT32_MAX
/* vl_rank.gpu0 of a rank without explicit placement. */
#define VL_GPUS_DEFAULT UINT64_MAX

typedef struct vl_mb {
    uint64_t seg0; /* first segment in plan->segs */
    uint32_t nseg;
    uint32_t cap;    /* token slots: packing capacity, or B·t_max for a padded batch */
    uint64_t tokens; /* Σ seg.len (kept by the builder) */
    uint32_t share;  /* 0: own pack; else 1 + index of its member list in plan->shares */
} vl_mb;

/* The members (dp values, in CP order) of a shared pack: plan->members[m0, m0 + n). */
typedef struct vl_share {
    uint64_t m0;
    uint32_t n;
} vl_share;

typedef struct vl_rank {
    uint64_t mb0; /* forward packs plan->mbs[mb0, mb0 + nmb), then its backward
                           * packs [mb0 + nmb, mb0 + nmb + nbwd) */
    uint32_t nmb, nbwd;
    int32_t dp;    /* data-parallel index within the iteration */
    vl_par par;    /* tp, pp, sp, ckpt_layers */
    int32_t group; /* strategy group (HBP), -1 = none (not written) */
    uint32_t k;    /* ChunkFlow's K (chunks keeping activations), 0 = not written */
    uint64_t op0;  /* explicit schedule in plan->ops, nop = 0: default order */
    uint32_t nop;
    uint64_t gpu0; /* explicit placement plan->gpus[gpu0, + tp·sp·pp), or
                           * VL_GPUS_DEFAULT */
} vl_rank;

typedef struct vl_iter {
    uint64_t rank0; /* first rank in plan->ranks */
    uint32_t nranks;
    uint32_t epoch;
    int32_t candidate; /* the layout candidate it runs (Hydraulis), -1 = none */
    /* kept by the builder as segments arrive (vl_plan_iter_totals): tokens, loss tokens
     * and samples started of its forward packs, a shared pack once */
    uint64_t tokens, loss, samples;
} vl_iter;

typedef struct vl_plan vl_plan;
/* Where finished iterations go while a plan is built (vl_plan_set_flush): it gets the
 * plan holding them as iters[0, niters) (numbered from iter_base); afterwards they are
 * forgotten.  A status other than VL_OK stops the build with that status. */
typedef vl_status (*vl_plan_flush_fn)(void *ud, vl_plan *p, vl_err *err);

struct vl_plan {
    vl_manifest *m; /* borrowed: ids, lengths, loss tokens; NULL for a plan read
                           * without one (sample = the id's order of first appearance in
                           * its iteration) */
    /* header */
    char strategy[VL_STRATEGY_NAME_MAX];
    uint64_t seed;
    uint32_t epochs;
    uint32_t caps;     /* VL_CAP_* */
    char *params_json; /* owned; strategy knobs actually used ("{}" if none) */
    char *config_json; /* owned; effective config, NULL when the plan has none */
    /* body, flat arrays with capacities */
    vl_seg *segs;
    size_t nsegs, segs_cap;
    int16_t *cps;
    size_t cps_cap; /* [nsegs] CP placement, NULL: all sharded */
    vl_mb *mbs;
    size_t nmbs, mbs_cap;
    vl_rank *ranks;
    size_t nranks, ranks_cap;
    vl_iter *iters;
    size_t niters, iters_cap;
    vl_op *ops;
    size_t nops, ops_cap;
    uint32_t *gpus;
    size_t ngpus, gpus_cap;
    vl_share *shares;
    size_t nshares, shares_cap;
    int32_t *members;
    size_t nmembers, members_cap;
    vl_drop *drops;
    size_t ndrops, drops_cap;
    /* iters[0] is iteration number iter_base of the plan: 0 for a plan held whole, the
     * running number for one read an iteration at a time (vl_plan_read_each); messages
     * name iteration iter_base + it */
    uint64_t iter_base;
    vl_plan_flush_fn flush; /* NULL: the plan is held whole */
    void *flush_ud;
    /* told the iterations begun so far, at every new one (vl_plan_set_progress) */
    void (*progress)(void *ud, uint64_t begun);
    void *progress_ud;
};

/** Start an empty plan over manifest m (borrowed, must outlive p; may be NULL). */
vl_status vl_plan_init(vl_plan *p, vl_manifest *m, const char *strategy, uint64_t seed,
                       vl_err *err);
void vl_plan_free(vl_plan *p);

/* Builder: calls nest iteration > rank > pack > segment; each begin closes the previous
 * element of its level.  A rank's backward packs follow all of its forward packs.  All
 * return VL_OK, VL_ENOMEM, or VL_EINTERNAL for a call outside its element. */
vl_status vl_plan_iter_begin(vl_plan *p, uint32_t epoch, vl_err *err);
vl_status vl_plan_rank_begin(vl_plan *p, int dp, const vl_par *par, vl_err *err);
/** A forward pack of the current rank. */
vl_status vl_plan_mb_begin(vl_plan *p, uint32_t cap, vl_err *err);
/** A backward pack of the current rank (after its forward packs). */
vl_status vl_plan_bwd_begin(vl_plan *p, uint32_t cap, vl_err *err);
vl_status vl_plan_seg(vl_plan *p, uint32_t sample, uint32_t off, uint32_t len, vl_err *err);
/** A segment local to CP coordinate cp (>= 0), or VL_CP_SHARDED. */
vl_status vl_plan_seg_cp(vl_plan *p, uint32_t sample, uint32_t off, uint32_t len, int cp,
                         vl_err *err);
vl_status vl_plan_op(vl_plan *p, uint32_t mb, vl_op_kind kind, vl_err *err);
/** The current rank runs on gpus[0..n-1] (n = tp·sp·pp, index t + tp·(c + sp·p)). */
vl_status vl_plan_rank_gpus(vl_plan *p, const uint32_t *gpus, size_t n, vl_err *err);
/** The current pack is shared by the ranks dp[0..n-1] of the iteration (n >= 2, CP
 *  order); every member holds an identical copy. */
vl_status vl_plan_mb_share(vl_plan *p, const int32_t *dp, size_t n, vl_err *err);
vl_status vl_plan_drop(vl_plan *p, uint32_t sample, uint32_t off, uint32_t len,
                       vl_drop_reason reason, vl_err *err);
/** Append n dropped ranges (the sampler's, vl_selection.drops).  VL_ENOMEM. */
vl_status vl_plan_add_drops(vl_plan *p, const vl_drop *d, size_t n, vl_err *err);
/** Set the group of the current rank. */
void vl_plan_rank_group(vl_plan *p, int32_t group);
/** Set ChunkFlow's K of the current rank (written as "k" when non-zero). */
void vl_plan_rank_k(vl_plan *p, uint32_t k);
/** Set the layout candidate of the current iteration (written when >= 0). */
void vl_plan_iter_candidate(vl_plan *p, int32_t candidate);
/** Forget every iteration (keeping the arrays' capacity, the header and the dropped
 *  ranges); the next one is numbered iter_base.  For readers that go through a plan an
 *  iteration at a time. */
void vl_plan_clear_iters(vl_plan *p, uint64_t iter_base);
/** Exchange the iterations of a and b (every body array with its count and capacity, and
 *  iter_base); headers, dropped ranges and manifests stay.  O(1): a reading thread
 *  builds an iteration in its own plan and the reader takes it over. */
void vl_plan_swap_iters(vl_plan *a, vl_plan *b);
/** From now on hand every finished iteration to fn and forget it: vl_plan_iter_begin
 *  flushes the iterations before it starts a new one, vl_plan_flush the rest.  For
 *  strategies that never look back (vl_strategy.streams), so memory holds one
 *  iteration however long the epoch. */
void vl_plan_set_flush(vl_plan *p, vl_plan_flush_fn fn, void *ud);
/** fn(ud, n) at the start of every iteration a strategy builds, n the iterations before
 *  it: how far a plan is, also for strategies that hand the plan over whole. */
void vl_plan_set_progress(vl_plan *p, void (*fn)(void *ud, uint64_t begun), void *ud);
/** Hand the iterations held to the flush function (none set: nothing). */
vl_status vl_plan_flush(vl_plan *p, vl_err *err);
/** Take ownership of malloc'd JSON texts for the header (either may be NULL). */
void vl_plan_set_meta(vl_plan *p, uint32_t epochs, char *params_json, char *config_json);

/* ---- accessors ---- */

static inline const vl_seg *vl_plan_mb_segs(const vl_plan *p, const vl_mb *mb)
{
    return p->segs ? p->segs + mb->seg0 : NULL; /* no arithmetic on a NULL array */
}
/** The packs of rank rk, forward then backward (NULL when the plan has none). */
static inline const vl_mb *vl_plan_rank_mbs(const vl_plan *p, const vl_rank *rk)
{
    return p->mbs ? p->mbs + rk->mb0 : NULL; /* no arithmetic on a NULL array */
}
/** CP placement of segment i of plan->segs (VL_CP_SHARDED unless local). */
static inline int vl_plan_seg_cpi(const vl_plan *p, uint64_t i)
{
    return p->cps ? p->cps[i] : VL_CP_SHARDED;
}
/** Backward pack j of rk (j < rk->nbwd). */
static inline const vl_mb *vl_plan_bwd(const vl_plan *p, const vl_rank *rk, uint32_t j)
{
    return &p->mbs[rk->mb0 + rk->nmb + j];
}
/** The packs B operations name: the backward packs, or the forward ones without. */
static inline uint32_t vl_plan_nbpacks(const vl_rank *rk)
{
    return rk->nbwd ? rk->nbwd : rk->nmb;
}
static inline const vl_mb *vl_plan_bpack(const vl_plan *p, const vl_rank *rk, uint32_t j)
{
    return &p->mbs[rk->mb0 + (rk->nbwd ? rk->nmb : 0) + j];
}
/** Members (dp values) of a shared pack: *n of them, NULL and 0 for an own pack. */
const int32_t *vl_plan_mb_members(const vl_plan *p, const vl_mb *mb, uint32_t *n);
/** Whether rk holds the primary copy of mb (an own pack, or rk is its first member):
 *  the copy that counts for coverage and totals. */
bool vl_plan_mb_primary(const vl_plan *p, const vl_rank *rk, const vl_mb *mb);
/** GPUs of a rank: tp·sp·pp. */
static inline uint32_t vl_plan_rank_size(const vl_rank *rk)
{
    return (uint32_t)rk->par.tp * (uint32_t)rk->par.sp * (uint32_t)rk->par.pp;
}
/** tp·sp·pp in 64 bits, saturating at UINT64_MAX: a plan's degrees are read from a file
 *  (each up to INT32_MAX), and their 32-bit product can wrap to a small number. */
static inline uint64_t vl_plan_rank_size64(const vl_rank *rk)
{
    uint64_t d[3] = {(uint64_t)(uint32_t)rk->par.tp, (uint64_t)(uint32_t)rk->par.sp,
                     (uint64_t)(uint32_t)rk->par.pp},
             n = 1;

    for (int i = 0; i < 3; i++) {
        if (d[i] != 0 && n > UINT64_MAX / d[i])
            return UINT64_MAX;
        n *= d[i];
    }
    return n;
}
/** Global GPU of coordinate index k = t + tp·(c + sp·p) of rank r of iteration it: the
 *  explicit placement, or the default one -- Megatron's order (tp, cp, dp, pp) when
 *  every rank of the iteration has the same (tp, sp, pp), else consecutive blocks in
 *  rank order. */
uint32_t vl_plan_rank_gpu(const vl_plan *p, size_t it, uint32_t r, uint32_t k);

/* The same, rank after rank in O(1) each (vl_plan_rank_gpu costs O(ranks) per call):
 * vl_gpu_walk_begin, then for every rank in order vl_gpu_walk_at (its GPUs) and
 * vl_gpu_walk_next. */
typedef struct vl_gpu_walk {
    const vl_plan *p;
    const vl_iter *in;
    uint32_t r;    /* current rank of the iteration */
    bool uniform;  /* every rank has the first one's (tp, sp, pp) */
    uint64_t base; /* blocks: first GPU of the current rank */
} vl_gpu_walk;
void vl_gpu_walk_begin(vl_gpu_walk *w, const vl_plan *p, size_t it);
uint32_t vl_gpu_walk_at(const vl_gpu_walk *w, uint32_t k);
void vl_gpu_walk_next(vl_gpu_walk *w);
/* A segment of a rank as a token interval [off, end) of its sample in pack `pack` of the
 * forward (bwd 0) or backward (bwd 1) list. */
typedef struct vl_interval {
    uint32_t sample, off, end;
    uint32_t pack;
    uint8_t bwd;
} vl_interval;
/** Whether a forward segment of rk continues a sample (an offset above 0). */
bool vl_plan_rank_sliced(const vl_plan *p, const vl_rank *rk);
/** Every non-empty segment of a known sample in rk's packs, sorted by (sample, bwd,
 *  off, pack) into *iv (grown as needed, capacity *cap; *n of them).  VL_ENOMEM. */
vl_status vl_plan_rank_intervals(const vl_plan *p, const vl_rank *rk, vl_interval **iv,
                                 size_t *cap, size_t *n, vl_err *err);
/** The same intervals grouped by sample, the samples in the order their first segment
 *  appears in rk's packs (not by id), each sample's sorted by (bwd, off, pack): for a
 *  reader that takes one sample at a time, in linear time.  *tab (capacity *tab_cap):
 *  the caller's scratch, grown as needed and reused across calls.  VL_ENOMEM. */
vl_status vl_plan_rank_intervals_grouped(const vl_plan *p, const vl_rank *rk, vl_interval **iv,
                                         size_t *cap, size_t *n, uint32_t **tab,
                                         size_t *tab_cap, vl_err *err);

/** Loss-carrying tokens of a segment: a sample's loss tokens are taken to be its last
 *  `loss` tokens (prompt first, response last), so slices split them exactly. */
uint32_t vl_plan_seg_loss(const vl_plan *p, const vl_seg *s);
/** Tokens, loss tokens and samples started (segments with off = 0) of iteration it, over
 *  the primary copies of its forward packs. */
void vl_plan_iter_totals(const vl_plan *p, size_t it, uint64_t *tokens, uint64_t *loss,
                         uint64_t *samples);

#endif
