/* lib/plan/plan.h -- the in-memory plan (flat arrays) and the builder API every strategy
 * calls.  Iterations hold ranks (data-parallel replicas), ranks hold micro-batches,
 * micro-batches hold segments [off, off + len) of samples (design §7). */
#ifndef VLPLAN_PLAN_H
#define VLPLAN_PLAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

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
    int tp, pp, sp;       /* sp = sequence/context-parallel degree (kind from the config) */
    int ckpt_layers;      /* layers (per pipeline stage) that recompute activations */
} vl_par;

/* seg.sample of a plan read back from a file whose id is not in the manifest. */
#define VL_SAMPLE_UNKNOWN UINT32_MAX

typedef struct vl_mb {
    uint64_t seg0;        /* first segment in plan->segs */
    uint32_t nseg;
    uint32_t cap;         /* token slots: packing capacity, or B·t_max for a padded batch */
    uint64_t tokens;      /* Σ seg.len (kept by the builder) */
} vl_mb;

/* One operation of an explicit per-rank schedule (ChunkFlow, SlimPack). */
typedef enum { VL_OP_F = 0, VL_OP_R = 1, VL_OP_B = 2 } vl_op_kind;
typedef struct vl_op {
    uint32_t mb;          /* index of the micro-batch within its rank (0-based) */
    uint8_t kind;         /* vl_op_kind: forward, recompute-forward, backward */
} vl_op;

typedef struct vl_rank {
    uint64_t mb0;         /* first micro-batch in plan->mbs */
    uint32_t nmb;
    int32_t dp;           /* data-parallel index within the iteration */
    vl_par par;           /* tp, pp, sp, ckpt_layers */
    int32_t group;        /* strategy group (HBP), -1 = none (not written) */
    uint32_t k;           /* ChunkFlow's K (chunks keeping activations), 0 = not written */
    uint64_t op0;         /* explicit schedule in plan->ops, nop = 0: default order */
    uint32_t nop;
} vl_rank;

typedef struct vl_iter {
    uint64_t rank0;       /* first rank in plan->ranks */
    uint32_t nranks;
    uint32_t epoch;
} vl_iter;

typedef enum { VL_DROP_OVERSIZE = 0, VL_DROP_TRUNCATED = 1 } vl_drop_reason;
typedef struct vl_drop {
    uint32_t sample, off, len; /* tokens [off, off+len) of sample never planned, any epoch */
    uint8_t reason;            /* vl_drop_reason */
} vl_drop;

typedef struct vl_plan {
    vl_manifest *m;       /* borrowed: ids, lengths, loss tokens */
    /* header */
    char strategy[48];
    uint64_t seed;
    uint32_t epochs;
    char *params_json;    /* owned; strategy knobs actually used ("{}" if none) */
    char *config_json;    /* owned; effective config */
    /* body, flat arrays with capacities */
    vl_seg *segs;   size_t nsegs, segs_cap;
    vl_mb *mbs;     size_t nmbs, mbs_cap;
    vl_rank *ranks; size_t nranks, ranks_cap;
    vl_iter *iters; size_t niters, iters_cap;
    vl_op *ops;     size_t nops, ops_cap;
    vl_drop *drops; size_t ndrops, drops_cap;
    /* filled by the reader (vl_plan_read) for verify: what the file claimed */
    struct {
        bool from_file;       /* set by the reader: verify checks the claims below */
        bool has_footer, sha_ok;
        uint64_t iterations, samples, tokens;  /* footer claims */
        uint64_t header_iterations;            /* header "iterations" claim */
        size_t unknown_ids;   /* segments and drops whose id is not in the manifest */
        size_t nproblems[5];  /* problems the reader found, per invariant I1..I5
                               * (unknown ids, claimed sums, ...); verify counts them */
        char problem[256];    /* first structural problem found, "" if none */
    } file;
} vl_plan;

/** Start an empty plan over manifest m (borrowed, must outlive p). */
vl_status vl_plan_init(vl_plan *p, vl_manifest *m, const char *strategy, uint64_t seed,
                       vl_err *err);
void vl_plan_free(vl_plan *p);

/* Builder: calls nest iteration > rank > micro-batch > segment; each begin closes the
 * previous element of its level.  All return VL_OK or VL_ENOMEM. */
vl_status vl_plan_iter_begin(vl_plan *p, uint32_t epoch, vl_err *err);
vl_status vl_plan_rank_begin(vl_plan *p, int dp, const vl_par *par, vl_err *err);
vl_status vl_plan_mb_begin(vl_plan *p, uint32_t cap, vl_err *err);
vl_status vl_plan_seg(vl_plan *p, uint32_t sample, uint32_t off, uint32_t len, vl_err *err);
vl_status vl_plan_op(vl_plan *p, uint32_t mb, vl_op_kind kind, vl_err *err);
vl_status vl_plan_drop(vl_plan *p, uint32_t sample, uint32_t off, uint32_t len,
                       vl_drop_reason reason, vl_err *err);
/** Append n dropped ranges (the sampler's, vl_selection.drops).  VL_ENOMEM. */
vl_status vl_plan_add_drops(vl_plan *p, const vl_drop *d, size_t n, vl_err *err);
/** Set the group of the current rank. */
void vl_plan_rank_group(vl_plan *p, int32_t group);
/** Set ChunkFlow's K of the current rank (written as "k" when non-zero). */
void vl_plan_rank_k(vl_plan *p, uint32_t k);
/** Take ownership of malloc'd JSON texts for the header (either may be NULL). */
void vl_plan_set_meta(vl_plan *p, uint32_t epochs, char *params_json, char *config_json);

/* Accessors. */
static inline const vl_seg *vl_plan_mb_segs(const vl_plan *p, const vl_mb *mb)
{
    return p->segs + mb->seg0;
}
/** Loss-carrying tokens of a segment: a sample's loss tokens are taken to be its last
 *  `loss` tokens (prompt first, response last), so slices split them exactly. */
uint32_t vl_plan_seg_loss(const vl_plan *p, const vl_seg *s);
/** Tokens, loss tokens and samples started (segments with off = 0) of iteration it. */
void vl_plan_iter_totals(const vl_plan *p, size_t it, uint64_t *tokens, uint64_t *loss,
                         uint64_t *samples);

#endif
