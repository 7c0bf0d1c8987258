/* plans/mcore_cp/mcore_cp_impl.h -- internals of the mcore_cp strategy shared by its
 * units: Megatron-Core's BalancedCPScheduler on lengths alone (mcore_cp_sched.c) and the
 * driver with options and emission (mcore_cp.c).  Not API; tests include it to check
 * each step on hand examples. */
#ifndef VLPLAN_MCORE_CP_INT_H
#define VLPLAN_MCORE_CP_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "vlplan_strategy.h"

/* The largest DP x CP pool planned: every rank writes each shared pack with its member
 * list, so a set of k GPUs costs k^2 entries and a barrier pool^2 (4 iterations of 256
 * samples: 0.1 s at 1,024 GPUs, 1.1 s at 4,096, 59 s at 16,384). */
#define MC_MAX_POOL 1024

/* Options bound from the `mcore_cp:` section. */
typedef struct vl_mc_opts {
    uint32_t per_rank;    /* max_seqlen_per_rank; 0 = auto from the memory model */
    double delta;         /* balance slack of next_hdp_group and trim_overload */
    double bucket_factor; /* make_buckets_equal closes a bucket above factor · target */
    bool barrier;         /* an all-rank empty shared pack between groups */
} vl_mc_opts;

/* A sample of the global batch: its manifest index and length. */
typedef struct vl_mc_item {
    uint32_t sample, len;
} vl_mc_item;

/* A GPU set of one group: GPUs [gpu0, gpu0 + size) run items [i0, i0 + n) of the
 * schedule's out[] one after another, each sample with CP over the whole set. */
typedef struct vl_mc_set {
    uint32_t gpu0, size;
    size_t i0, n;
} vl_mc_set;

/* One placement of next_hdp_group: an item on a set, newest last (trim pops it). */
typedef struct vl_mc_rec {
    vl_mc_item it;
    uint32_t set;
    int64_t prev; /* the set's previous placement, -1 = none */
    bool alive;
} vl_mc_rec;

/* The scheduler and its result for one global batch: group g (a "micro-batch group" of
 * Megatron, ended by a barrier over all DP×CP GPUs) is sets[gstart[g] .. gstart[g+1]),
 * in GPU order, covering every GPU. */
typedef struct vl_mc_sched {
    uint32_t per_rank; /* max_seqlen_per_rank */
    uint32_t gpus;     /* DP×CP GPUs (the hdp group); a power of two */
    uint32_t cp_most;  /* the largest set, a power of two (Ulysses: what the heads
                           * split over); 0: gpus, Megatron's own limit */
    double delta, bucket_factor;
    /* result */
    vl_mc_item *out;
    size_t nout, out_cap;
    vl_mc_set *sets;
    size_t nsets, sets_cap;
    size_t *gstart;
    size_t ngroups, gstart_cap;
    /* scratch */
    vl_mc_item *list, *next;
    size_t list_cap, next_cap; /* samples left, in order */
    size_t *bstart, *bhead;
    size_t bstart_cap, bhead_cap; /* buckets: list ranges */
    vl_mc_rec *rec;
    size_t nrec, rec_cap;
    uint32_t *sgpu0, *ssize;
    double *sload;
    int64_t *slast;
    size_t *scount;
    size_t sgpu0_cap, ssize_cap, sload_cap, slast_cap, scount_cap;
    /* statistics over every batch scheduled */
    uint64_t stat_groups, stat_trimmed, stat_expanded;
} vl_mc_sched;

void vl__mc_sched_free(vl_mc_sched *s);

/** gpus_needed: the smallest power of two c with c · per_rank >= len (1 at least). */
uint32_t vl__mc_gpus_needed(uint32_t len, uint32_t per_rank);

/** get_total_workload: len² / cp. */
double vl__mc_workload(uint32_t len, uint32_t cp);

/** make_buckets_equal on it[0..n-1]: bucket b is it[start[b] .. start[b+1]); returns the
 *  bucket count (start needs room for n + 1 entries). */
size_t vl__mc_buckets(const vl_mc_item *it, size_t n, uint32_t per_rank, double factor,
                      size_t *start);

/** get_groups_and_subsamples on one global batch it[0..n-1] (every len <= per_rank ·
 *  gpus): sorts by length descending (stable: batch order among equals), then
 *  next_hdp_group until no sample is left.  Result in s (out, sets, gstart).
 *  VL_ENOMEM. */
vl_status vl__mc_schedule(vl_mc_sched *s, const vl_mc_item *it, size_t n, vl_err *err);

/* mcore_cp.c */
/** Seconds of the scheduled batch as Megatron runs it, group barriers included: over
 *  the groups, the slowest set's samples (forward + backward, each with CP over its
 *  set, the shared cost model's vl_cost_pack_time), plus the exposed gradient reduction
 *  (hidden behind what each set of the last group still runs from the start of its last
 *  backward, vl_cost_dp_grad_exposed) and parameter gather, as the simulator charges
 *  them.  The plan's simulation synchronises only the GPUs that share a sample; this
 *  bounds it. */
double vl__mc_barrier_s(const vl_mc_sched *s, const vl_cost *c, const vl_par *par);

/** max_seqlen_per_rank auto: tokens one GPU holds, (usable memory − model states sharded
 *  over the pool) / activation bytes per token; 0 when the states alone do not fit. */
uint32_t vl__mc_auto_per_rank(const vl_cost *c, const vl_par *par, int pool);

#endif
