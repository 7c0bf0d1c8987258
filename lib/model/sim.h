/* lib/model/sim.h -- the DAG pipeline simulator and memory timeline (docs/decisions.md §6): step time,
 * bubble ratio, TBR, peak memory and MFU of a plan, from the cost model alone.
 *
 * Model, per iteration and per rank (data-parallel replica) of pp = rank.par.pp stages:
 *  - Layers: stage s holds L/pp layers, the first L % pp stages one more (Megatron's
 *    uneven split puts extra layers early too); the LM head is on the last stage, the
 *    embedding on the first.  pp > L is an error.
 *  - Tasks (stage, action, micro-batch): forward F, recompute-forward R (explicit
 *    schedules only), backward B, weighted by vl_cost_mb_time (exposed SP/CP/TP
 *    communication is part of a task's duration); pipeline send/receive between
 *    neighbouring stages is a latency on the edge (it occupies no compute stage).
 *  - Edges: F(s-1,m) -> F(s,m), B(s+1,m) -> B(s,m), F(s,m) -> R(s,m) -> B(s,m); slices of
 *    one sample (a segment with off > 0 continues the sample whose slice ending at off
 *    sits in an earlier micro-batch m' of the same rank, the latest such m'):
 *    F(s,m') -> F(s,m) and B(s,m) -> B(s,m'); plus each stage's execution order from
 *    the schedule.  Slices are told apart by sample id; a plan read without its
 *    manifest has every id 0 (VL_SAMPLE_UNKNOWN for ids the manifest lacks), so its
 *    slice edges are a guess: a rank with such ids and an explicit schedule gets none
 *    (the schedule orders its slices, see below), other ranks keep the guess.
 *  - Start times by longest path (ASAP) over the DAG, linear in tasks + edges; a
 *    schedule whose order contradicts the data dependencies is VL_EDATA (deadlock).
 *  - Ranks meet at the end of the iteration for the gradient reduction and parameter
 *    gather (worst rank and stage), the reduction hidden behind what the stage computes
 *    from the start of its last backward (vl_cost_dp_grad_exposed).
 *
 * Schedules.  Every stage's order derives from one per-rank list, the order of the
 * LAST stage (where a forward is followed by its backward without waiting): stage s
 * moves each forward earlier, right after the first max(0, b - (pp-1-s)) backwards of
 * the list, b = backwards before it in the list (1F1B warm-up; before any recompute
 * that follows that backward); backwards and recomputes keep their list order.  Every
 * valid list (one that stage pp-1 could run alone: F < R < B per micro-batch, slices
 * forwarded in order and backwarded in reverse) gives deadlock-free stage orders:
 * forwards, and backwards with recomputes, keep their relative order on every stage,
 * a forward only moves earlier, and before the k-th backward stage s has run every
 * forward that stage s+1 runs before its own k-th backward (the 1F1B invariant).  So
 * on an explicit list the slice edges only confirm its order; a list that breaks
 * them deadlocks (VL_EDATA).  The list is
 *  - 1F1B: F0, then after each forward every backward that is ready, oldest first
 *    (ready = forwarded, and every later slice of the same sample already backwarded),
 *    so it is F0 B0 F1 B1 ... without slices and state-aware with them;
 *  - GPipe: all forwards in order, then all backwards in reverse order;
 *  - explicit: rank->nop operations of the plan (F/R/B on micro-batch indices), each
 *    micro-batch exactly one F and one B, at most one R, in the order F < R < B.
 *
 * Memory, per stage, in execution order: the end of F(s,m) allocates its activations
 * (vl_cost_act_bytes; only the K/V state store, vl_cost_state_store_bytes, when m has
 * an R), the end of R(s,m) allocates the full activations, the end of B(s,m) frees
 * both.  Peak = model states (vl_cost_state_bytes, dp = ranks of the iteration) +
 * largest live activation sum; out of memory when above vl_cost_mem_capacity.  The
 * verifier's memory invariant (I3) is this same timeline.
 *
 * Definitions of the results:
 *  - makespan_r: end of rank r's last task (time 0 = iteration start);
 *    iter_time = max_r makespan_r + worst exposed sync.
 *  - bubble: per rank idle_r = sum over its pp stages of (makespan_r - busy), bubble_r =
 *    idle_r / (makespan_r * pp); the iteration's bubble is the device-time-weighted mean
 *    sum_r idle_r / sum_r (makespan_r * pp_r).  Waiting for slower ranks is not bubble
 *    (that is what TBR measures).
 *  - tbr: the DBR formula over T_r = busy time of rank r per device (sum over stages
 *    of busy / pp): sum_r (T_max - T_r) / (T_max * N).
 *  - mfu: sum of vl_cost_model_flops / (iter_time * gpus * peak), gpus = sum_r tp*pp*sp.
 *  - epoch_time: total of all iteration times / number of epochs in the plan (largest
 *    iteration epoch + 1), so a partial last epoch is averaged in. */
#ifndef VLPLAN_SIM_H
#define VLPLAN_SIM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cost.h"
#include "dist.h"
#include "err.h"
#include "plan.h"

typedef enum { VL_SCHED_1F1B = 0, VL_SCHED_GPIPE = 1 } vl_sched;

typedef struct vl_sim_opts {
    vl_sched sched;   /* order of ranks without an explicit schedule */
    bool ignore_ops;  /* use sched even where the plan has explicit operations */
    bool memory_only; /* only the memory figures (peak_mem_gib, peak_rank, peak_stage, oom)
                       * and what simulate refuses are wanted: the cost model's times and
                       * FLOPs are skipped, and every time, ratio and FLOP figure is 0 --
                       * the memory a lane holds depends on its order, not on durations */
} vl_sim_opts;

/* Defaults: 1F1B, explicit schedules honoured, every figure. */
#define VL_SIM_OPTS_INIT                                                                      \
    {                                                                                         \
        VL_SCHED_1F1B, false, false                                                           \
    }

typedef struct vl_sim_iter_result {
    double iter_time_ms; /* end to end: slowest rank's makespan (propagation) + exposed
                           * synchronisation + the optimizer step */
    double makespan_ms;  /* slowest rank's makespan: forward and backward propagation */
    double rank_gap;     /* (slowest - fastest rank makespan) / slowest; 0 for one rank */
    double sync_ms;      /* exposed gradient reduction and parameter gather at the end */
    double optimizer_ms; /* the optimizer step of the slowest device */
    double bubble;       /* see the file comment */
    double tbr;
    double mfu;
    double tokens_per_s;
    double peak_mem_gib;            /* worst device: model states + live activations */
    uint32_t peak_rank, peak_stage; /* where (rank index within the iteration) */
    bool oom;                       /* some device above vl_cost_mem_capacity */
    uint64_t tokens;
    double flops; /* model FLOPs (vl_cost_model_flops), no recompute */
    int gpus;
} vl_sim_iter_result;

typedef struct vl_sim_summary {
    size_t iterations;
    uint32_t epochs; /* largest iteration epoch + 1 */
    vl_dist iter_time_ms, bubble, tbr, peak_mem_gib, mfu, rank_gap; /* over iterations */
    double total_time_s;        /* sum of iteration times */
    double epoch_time_s;        /* total_time_s / epochs: end to end */
    double epoch_propagation_s; /* the makespans alone, per epoch */
    double epoch_sync_s;      /* exposed synchronisation at the iterations' ends, per epoch */
    double epoch_optimizer_s; /* optimizer steps, per epoch */
    double tokens_per_s;      /* all tokens / total_time_s */
    double mfu_overall;       /* all model FLOPs / sum of iter_time * gpus * peak */
    bool oom;
    size_t oom_iters;      /* iterations with a device out of memory */
    size_t first_oom_iter; /* meaningful when oom */
} vl_sim_summary;

/* Optional trace of one iteration, for the Gantt chart and tests. */
typedef enum {
    VL_TASK_F = 0,
    VL_TASK_R = 1,
    VL_TASK_B = 2,
    VL_TASK_P2P = 3,
    VL_TASK_SYNC = 4
} vl_task_kind;

typedef struct vl_sim_task {
    uint32_t rank, stage; /* rank index within the iteration; P2P: receiving stage */
    uint32_t mb;          /* micro-batch index within the rank (SYNC: 0) */
    uint8_t kind;         /* vl_task_kind */
    double start, end;    /* seconds from the iteration start */
    double comm;          /* exposed communication inside the task, at its end */
    double recompute;     /* recompute forward inside a B, at its start */
} vl_sim_task;

typedef struct vl_sim_lane { /* one device: (rank, stage) */
    uint32_t rank, stage;
    int layers;
    double busy;     /* seconds of F, R, B */
    double makespan; /* the rank's makespan, seconds */
    double act_peak; /* bytes: largest live activation sum */
    double states;   /* bytes: model states */
} vl_sim_lane;

typedef struct vl_sim_trace {
    vl_sim_task *tasks;
    size_t ntasks, tasks_cap;
    vl_sim_lane *lanes;
    size_t nlanes, lanes_cap;
    double iter_time; /* seconds */
    double capacity;  /* bytes per device */
    bool lanes_only;  /* set by the caller: fill lanes, leave tasks empty (a search
                             that reads only the lanes saves recording every task) */
} vl_sim_trace;

/* Reusable buffers: pass the same scratch to consecutive vl_sim_iter calls. */
typedef struct vl_sim_scratch vl_sim_scratch;

/** New scratch (caller frees with vl_sim_scratch_free).  VL_ENOMEM. */
vl_status vl_sim_scratch_new(vl_sim_scratch **out, vl_err *err);
void vl_sim_scratch_free(vl_sim_scratch *s); /* NULL: no-op */

/** Simulate iteration it of p.  o NULL = VL_SIM_OPTS_INIT; s NULL = temporary buffers;
 *  trace NULL = none, else it is reset and filled (free with vl_sim_trace_free; a
 *  zeroed struct is a valid empty trace).
 *  @return VL_OK; VL_EDATA (explicit schedule malformed or deadlocking, pp > layers,
 *  bad degrees); VL_EUSAGE (it out of range); VL_ENOMEM. */
vl_status vl_sim_iter(const vl_plan *p, size_t it, const vl_cost *c, const vl_sim_opts *o,
                      vl_sim_iter_result *out, vl_sim_scratch *s, vl_sim_trace *trace,
                      vl_err *err);

/** vl_sim_iter again on the iteration s last simulated without error (same p, it, c, o),
 *  after a change to nothing but some ranks' par.ckpt_layers: the other ranks keep the
 *  dependencies, orders and task weights prepared then (none of them reads the
 *  checkpointing), the changed ones are weighed again, so the results are vl_sim_iter's
 *  to the bit (a search that raises the checkpointing of the ranks out of memory
 *  re-simulates a candidate).  When s last simulated anything else, or its ranks' shapes
 *  differ, this is vl_sim_iter.  s must not be NULL.  Statuses of vl_sim_iter. */
vl_status vl_sim_iter_again(const vl_plan *p, size_t it, const vl_cost *c,
                            const vl_sim_opts *o, vl_sim_iter_result *out, vl_sim_scratch *s,
                            vl_sim_trace *trace, vl_err *err);

/** Simulate every iteration and aggregate (see the file comment).  Same statuses. */
vl_status vl_sim_plan(const vl_plan *p, const vl_cost *c, const vl_sim_opts *o,
                      vl_sim_summary *out, vl_err *err);

/* vl_sim_plan an iteration at a time (vl_plan_read_each): _iter after every iteration,
 * _finish for the summary.  Memory: six doubles per iteration and one iteration's
 * scratch.  o may be NULL (defaults); c and o must outlive the accumulator. */
typedef struct vl_sim_acc vl_sim_acc;
vl_status vl_sim_acc_new(vl_sim_acc **out, const vl_cost *c, const vl_sim_opts *o,
                         vl_err *err);
/** Simulate iteration it of p (numbered p->iter_base + it); its result also in *r when r
 *  is non-NULL.  Statuses of vl_sim_iter. */
vl_status vl_sim_acc_iter(vl_sim_acc *a, const vl_plan *p, size_t it, vl_sim_iter_result *r,
                          vl_err *err);
void vl_sim_acc_finish(vl_sim_acc *a, vl_sim_summary *out);
void vl_sim_acc_free(vl_sim_acc *a); /* NULL: no-op */

void vl_sim_trace_free(vl_sim_trace *t); /* frees the arrays, leaves an empty trace */

/** SVG Gantt chart of iteration it (malloc'd NUL-terminated text, caller frees):
 *  one lane per (rank, stage), forward / backward / recompute / communication in
 *  distinct colours, idle visible, legend and time axis.  Statuses of vl_sim_iter. */
vl_status vl_sim_svg(const vl_plan *p, size_t it, const vl_cost *c, const vl_sim_opts *o,
                     char **svg, vl_err *err);

#endif
