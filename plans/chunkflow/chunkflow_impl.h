/* plans/chunkflow/chunkflow_impl.h -- internals of the ChunkFlow strategy shared by its units:
 * chunk construction and rank assignment (chunkflow_chunks.c), the state-aware
 * schedule and plan emission (chunkflow_sched.c), the grid search (chunkflow_search.c)
 * and the driver (chunkflow.c).  Not API; tests include it to check each step. */
#ifndef VLPLAN_CHUNKFLOW_INT_H
#define VLPLAN_CHUNKFLOW_INT_H

/* The largest chunk size of the grid search (chunkflow_search.c): the capacity limit of
 * a plan searched with chunk_size auto. */
#define VL_CF_GRID_CHUNK_MAX 32768u

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "vlplan_strategy.h"
#include "grow.h"

/* Options bound from the `chunkflow:` section (0 = "auto" for the two AUTO keys). */
typedef struct vl_cf_opts {
    uint32_t chunk_size;   /* tokens per chunk; 0 = grid search */
    uint32_t k;            /* activations kept per dependent sample; 0 = grid search */
    uint32_t search_iters; /* iterations the grid search simulates */
} vl_cf_opts;

/* One chunk (a micro-batch): segments [seg0, seg0 + nseg) of the work's segs. */
typedef struct vl_cf_chunk {
    uint32_t seg0, nseg;
    uint64_t tokens;
} vl_cf_chunk;

/* What one rank schedules as a unit: a standalone chunk (nchunk = 1, !dependent) or the
 * nchunk dependent chunks of one long sample, consecutive in the chunk array. */
typedef struct vl_cf_group {
    uint32_t chunk0, nchunk;
    uint32_t key;          /* smallest sample index in it: the final tie-break */
    bool dependent;
    int rank;              /* data-parallel rank it was assigned to */
    double cost;           /* seconds on one pipeline stage, F + R + B */
} vl_cf_group;

/* Reusable buffers for one global batch at a time (grown, never shrunk). */
typedef struct vl_cf_work {
    vl_seg *segs; size_t nsegs, segs_cap;
    vl_cf_chunk *chunks; size_t nchunks, chunks_cap;
    vl_cf_group *groups; size_t ngroups, groups_cap;
    uint32_t *shorts; size_t shorts_cap;   /* samples packed into standalone chunks */
    uint32_t *slen; size_t slen_cap;       /* their lengths, then 0..n-1 (FFD's items) */
    double *w; size_t w_cap;               /* partition weights */
    int *part; size_t part_cap;            /* partition result */
    uint32_t *order; size_t order_cap;     /* group indices in emission order */
    uint64_t *load; size_t load_cap;       /* per-bin tokens */
    vl_op *ops; size_t ops_cap;            /* one group's schedule */
    uint32_t *pieces; size_t pieces_cap;   /* per chunk: micro-batches it is cut into */
    /* statistics over everything planned with this work */
    uint64_t stat_chunks, stat_dependent, stat_samples_split, stat_recompute;
    uint64_t stat_cuts, stat_empty;        /* equal counts: extra cuts, empty fillers */
} vl_cf_work;

/* One resolved setting: what a global batch is planned with. */
typedef struct vl_cf_setting {
    uint32_t chunk;        /* ChunkSize, tokens */
    uint32_t k;            /* K */
    int dp;                /* data-parallel ranks */
    vl_par par;            /* every rank's parallel layout */
    int stage_layers;      /* layers of the stage the DP balance is costed on */
} vl_cf_setting;

void vl__cf_work_free(vl_cf_work *w);


/* chunkflow_chunks.c */
/** Algorithm 1 on samples[0..n-1] (manifest indices, effective lengths len[]): samples
 *  longer than chunk become consecutive chunk-sized dependent chunks (the tail its own
 *  chunk); the others are packed into the fewest balanced chunks found, trying bin
 *  counts from ceil(sum / chunk) upwards.  Fills w->segs, chunks and groups (dependent
 *  groups first, in sample order, then standalone chunks).  VL_ENOMEM. */
vl_status vl__cf_build(vl_cf_work *w, const uint32_t *samples, size_t n,
                       const uint32_t *len, uint32_t chunk, vl_err *err);

/** Cost every group with the cost model and assign groups to ranks (Karmarkar-Karp on
 *  cost; a sample's chunks never leave their rank).  Fills group cost and rank and
 *  w->order (groups by rank; within a rank standalone chunks, then dependent groups,
 *  each by smallest sample index).  VL_ENOMEM. */
vl_status vl__cf_assign(vl_cf_work *w, const vl_cf_setting *s, const vl_cost *c,
                        vl_err *err);

/* chunkflow_sched.c */
/** Algorithm 2 for one group of n chunks at micro-batch indices m0 .. m0+n-1 whose last
 *  `keep` chunks keep their activations (K, or fewer when n < K): write its operations
 *  to ops (room for 3n) and return how many.  F ascending; B of the kept chunks
 *  descending; then R and B of each other chunk, descending (causality: chunkflow.c).
 *  keep >= n is the N <= K case: F ascending, B descending, no recompute. */
size_t vl__cf_group_ops(vl_op *ops, uint32_t m0, uint32_t n, uint32_t keep);

/** Emit one iteration (epoch) from w after vl__cf_assign: every rank, its chunks as
 *  micro-batches of capacity s->chunk, and its explicit schedule.  Ranks with fewer
 *  chunks than the busiest cut their largest chunks (then add empty micro-batches) so
 *  that every rank runs the same number of micro-batches.  VL_ENOMEM. */
vl_status vl__cf_emit(vl_cf_work *w, const vl_cf_setting *s, uint32_t epoch, vl_plan *out,
                      vl_err *err);

/** Construction, assignment and emission of one global batch. */
vl_status vl__cf_plan_batch(vl_cf_work *w, const vl_cf_setting *s, const vl_cost *c,
                            const uint32_t *samples, size_t n, const uint32_t *len,
                            uint32_t epoch, vl_plan *out, vl_err *err);

/* chunkflow_search.c */
/** The grid search: for each (ChunkSize, K) candidate (the fixed ones when opts pins
 *  them), plan and simulate the sampled batches, skip candidates out of memory, and
 *  return the fastest in *best.  Logs the candidate table (vl_job_log).  VL_EINFEASIBLE when every candidate is out of memory. */
vl_status vl__cf_search(const vl_cf_opts *o, const vl_job *job, const vl_cf_setting *base,
                        const uint32_t *order, const vl_batches *b, vl_manifest *m,
                        vl_cf_setting *best, vl_err *err);


#endif
