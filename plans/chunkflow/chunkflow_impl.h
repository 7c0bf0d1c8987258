/* plans/chunkflow/chunkflow_impl.h -- internals of the ChunkFlow strategy shared by its units:
 * chunk construction and rank assignment (chunkflow_chunks.c), the state-aware
 * schedule and plan emission (chunkflow_sched.c), the grid search (chunkflow_search.c)
 * and the driver (chunkflow.c).  Not API; tests include it to check each step. */
#ifndef VLPLAN_CHUNKFLOW_INT_H
#define VLPLAN_CHUNKFLOW_INT_H

/* The largest chunk size of the grid search (chunkflow_search.c): the capacity limit of
 * a plan searched with chunk_size auto. */
/* The smallest one: the finest pieces a plan searched with chunk_size auto may cut. */
#define VL_CF_GRID_CHUNK_MIN 2048u
#define VL_CF_GRID_CHUNK_MAX 32768u
/* Ranks short of chunks cut theirs to feed idle ranks (equal micro-batch counts); a
 * global batch must bring a chunk for every this many ranks, else the plan is mostly
 * empty micro-batches (iterations x ranks of them). */
#define VL_CF_RANKS_PER_PIECE 4u

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "vlplan_strategy.h"
#include "grow.h"
#include "sim.h"

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
    uint32_t key; /* smallest sample index in it: the final tie-break */
    bool dependent;
    int rank;    /* data-parallel rank it was assigned to */
    double cost; /* seconds on one pipeline stage, F + R + B */
} vl_cf_group;

/* Reusable buffers for one global batch at a time (grown, never shrunk). */
typedef struct vl_cf_work {
    vl_seg *segs;
    size_t nsegs, segs_cap;
    vl_cf_chunk *chunks;
    size_t nchunks, chunks_cap;
    vl_cf_group *groups;
    size_t ngroups, groups_cap;
    uint32_t *shorts;
    size_t shorts_cap; /* samples packed into standalone chunks */
    uint32_t *slen;
    size_t slen_cap; /* their lengths, then 0..n-1 (FFD's items) */
    double *w;
    size_t w_cap; /* partition weights */
    int *part;
    size_t part_cap; /* partition result */
    uint32_t *order;
    size_t order_cap; /* group indices in emission order */
    uint64_t *load;
    size_t load_cap; /* per-bin tokens */
    vl_op *ops;
    size_t ops_cap; /* one group's schedule */
    uint32_t *pieces;
    size_t pieces_cap; /* per chunk: micro-batches it is cut into */
    uint64_t *keys;
    size_t keys_cap; /* short samples by length, descending */
    uint32_t *heap;
    size_t heap_cap; /* LPT's bins, lightest on top */
    /* statistics over everything planned with this work */
    uint64_t stat_chunks, stat_dependent, stat_samples_split, stat_recompute;
    uint64_t stat_cuts, stat_empty; /* equal counts: extra cuts, empty fillers */
} vl_cf_work;

/* One resolved setting: what a global batch is planned with. */
typedef struct vl_cf_setting {
    uint32_t chunk;   /* ChunkSize, tokens */
    uint32_t k;       /* K */
    int dp;           /* data-parallel ranks */
    vl_par par;       /* every rank's parallel layout */
    int stage_layers; /* layers of the stage the DP balance is costed on */
} vl_cf_setting;

void vl__cf_work_free(vl_cf_work *w);

/* chunkflow_chunks.c */
/** Algorithm 1 on samples[0..n-1] (manifest indices, effective lengths len[]): samples
 *  longer than chunk become consecutive chunk-sized dependent chunks (the tail its own
 *  chunk); the others are packed into the fewest balanced chunks found from
 *  ceil(sum / chunk) upwards, but at least one group per rank of `ranks` (dependent
 *  groups count) and, when no sample is split, a multiple of `ranks`, so that no
 *  data-parallel rank goes without work while there are samples to give it.  Fills
 *  w->segs, chunks and groups (dependent groups first, in sample order, then standalone
 *  chunks).  VL_ENOMEM. */
vl_status vl__cf_build(vl_cf_work *w, const uint32_t *samples, size_t n, const uint32_t *len,
                       uint32_t chunk, int ranks, vl_err *err);

/** Cost every group with the cost model and assign groups to ranks (Karmarkar-Karp on
 *  cost; a sample's chunks never leave their rank).  Fills group cost and rank and
 *  w->order (groups by rank; within a rank standalone chunks, then dependent groups,
 *  each by smallest sample index).  VL_ENOMEM. */
vl_status vl__cf_assign(vl_cf_work *w, const vl_cf_setting *s, const vl_cost *c, vl_err *err);

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

/* chunkflow_fit.c */
/* What planning batches within device memory needs: a scratch plan one batch is tried
 * in, the simulator's buffers, and how many batches needed a lesser setting. */
typedef struct vl_cf_fit {
    const vl_job *job;
    vl_plan scratch;
    vl_sim_scratch *ss;
    uint64_t fallbacks;
} vl_cf_fit;

extern const uint32_t vl__cf_grid_k[]; /* 1, 2, 3, 4, 6, 8, 12, 16 */
extern const size_t vl__cf_ngrid_k;

/** A scratch plan over m and simulator buffers.  VL_ENOMEM. */
vl_status vl__cf_fit_init(vl_cf_fit *f, const vl_job *job, vl_manifest *m, vl_err *err);
void vl__cf_fit_free(vl_cf_fit *f);

/** Plan samples[0..n-1] with s into the scratch plan alone and simulate it into *r (the
 *  work's counters are left as they were).  Statuses of vl__cf_plan_batch and
 *  vl_sim_iter. */
vl_status vl__cf_try(vl_cf_fit *f, vl_cf_work *w, const vl_cf_setting *s,
                     const uint32_t *samples, size_t n, vl_sim_iter_result *r, vl_err *err);

/** Plan global batch `batch` of epoch `epoch` into out with s when its simulated peak
 *  memory fits the device, else with the first setting of the fallback ladder that
 *  does (smaller K, then halved chunks down to 1024 at K = 1, then under
 *  training.recompute=auto every layer checkpointed), logged with -v.  VL_EINFEASIBLE
 *  naming the batch, its longest sample, the least demanding try and, when one does,
 *  the training.sp that would fit; statuses of vl__cf_try. */
vl_status vl__cf_plan_fit(vl_cf_fit *f, vl_cf_work *w, const vl_cf_setting *s,
                          const uint32_t *samples, size_t n, uint32_t epoch, size_t batch,
                          vl_plan *out, vl_err *err);

/** The smallest wider sequence-parallel degree (doubling, one the layout allows) with
 *  which the batch fits with t, re-planned over the fewer data-parallel ranks it
 *  leaves; 0 when none does. */
int vl__cf_wider_sp(vl_cf_fit *f, vl_cf_work *w, const vl_cf_setting *t,
                    const uint32_t *samples, size_t n);

/* chunkflow_search.c */
/** The grid search (paper §5): for each (ChunkSize, K) candidate of {2K..32K} x
 *  {1, 2, 3, 4, 6, 8, 12, 16} (the fixed value when opts pins one), plan and simulate
 *  the first epoch's worst batches -- the one holding the longest sample, the one with
 *  the most tokens -- and evenly spaced others up to search_iters; a candidate out of
 *  memory on any is skipped, the lowest mean iteration time wins.  K beyond the most
 *  chunks any sample splits into plans the same as that count and is not tried.  When
 *  nothing fits and training.recompute is auto, the grid is tried again with every layer
 *  checkpointed.  Logs the table (vl_job_log).  VL_EINFEASIBLE when nothing fits,
 *  naming the least demanding candidate and, when one does, the training.sp that fits. */
vl_status vl__cf_search(const vl_cf_opts *o, const vl_job *job, const vl_cf_setting *base,
                        const uint32_t *order, const vl_batches *b, vl_cf_fit *fit,
                        vl_cf_setting *best, vl_err *err);

#endif
