/* plans/slimpack/slimpack_impl.h -- internals of the SlimPack strategy shared by its units:
 * slice work and the closed-form cut (slimpack_work.c), phase 1 and DP-Merge
 * (slimpack_dp.c), phase 2 forward and backward packs (slimpack_pack.c), the schedule and
 * a rank's emission (slimpack_sched.c), the candidate search (slimpack_search.c), the MILP
 * refinement (slimpack_milp.c), which ranks it refines and the batch's emission
 * (slimpack_refine.c) and the driver (slimpack.c).  Not API; tests include it
 * to check each step against docs/slimpack.md's hand examples. */
#ifndef VLPLAN_SLIMPACK_INT_H
#define VLPLAN_SLIMPACK_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cost.h"
#include "vlplan_strategy.h"

enum { SP_ASYM_ON = 0, SP_ASYM_OFF = 1, SP_ASYM_AUTO = 2 };
enum { SP_MILP_AUTO = 0, SP_MILP_ON = 1, SP_MILP_OFF = 2 };
enum { SP_MEM_BASELINE = 0, SP_MEM_DEVICE = 1 };
enum { SP_REFINE_CRITICAL = 0, SP_REFINE_ALL = 1 };
#define SP_MAX_FACTORS 32

/* Options bound from the `slimpack:` section. */
typedef struct sp_opts {
    uint32_t micropacks;       /* M per rank; 0 = auto (candidates over factors) */
    char factors[VL_NAME_MAX]; /* comma list of f: M = round(pp * f) */
    uint32_t min_pack_tokens;  /* candidates whose packs average fewer are dropped */
    double slim_threshold;     /* theta: slimmable when W_F > theta * tau */
    uint32_t slice_align;      /* cuts at multiples of this many tokens */
    uint32_t min_slice_tokens; /* no slice shorter than this */
    int asymmetric;            /* SP_ASYM_* */
    bool dp_merge;
    int milp;            /* SP_MILP_* */
    uint32_t milp_nodes; /* branch-and-bound node cap (determinism) */
    double mem_cap_gib;  /* plan within this much per GPU; 0 = mem_budget's */
    int mem_budget;      /* SP_MEM_*: without a cap, the baseline's memory or the device's */
    int refine;          /* SP_REFINE_*: which ranks the MILP refines */
} sp_opts;

/* Work of a token slice [a, b): alpha * pairs + beta * tokens, forward and backward. */
typedef struct sp_coef {
    double af, bf; /* forward */
    double ab, bb; /* backward */
} sp_coef;

/* Packs of segments: pack p is segs[start[p], start[p + 1]). */
typedef struct sp_packing {
    vl_seg *segs;
    size_t nsegs, segs_cap;
    uint32_t *start;
    size_t npacks, start_cap; /* npacks + 1 entries used */
} sp_packing;

/* A DP-Merge group: ranks [dp0, dp0 + k) run the packs of the outlier in batch slot
 * `slot` with context parallelism of degree k across them. */
typedef struct sp_group {
    int dp0, k;
    uint32_t slot;
    double wf; /* its forward work */
} sp_group;

/* What one rank runs for one candidate. */
typedef struct sp_rankplan {
    sp_packing fwd, bwd;           /* bwd.npacks = 0: symmetric (B names forward packs) */
    uint32_t nshared_f, nshared_b; /* leading packs shared with the merge group */
    vl_op *ops;
    size_t nops, ops_cap;
} sp_rankplan;

/* Settings of one batch's planning. */
typedef struct sp_setting {
    const sp_opts *o;
    const vl_cost *cost; /* NULL: no memory budget (the simulator's capacity) */
    uint32_t ctx;        /* training.max_seq_len */
    sp_coef coef;
    int dp;
    int merge_most;   /* the most ranks a DP-Merge group may join (Ulysses splits
                                * the heads over them: vl_config_cp_ranks_most); 0: dp */
    vl_par par;       /* every rank's (tp, pp, sp); ckpt per rank */
    int stage_layers; /* layers of the largest stage */
    int ckpt_mode;    /* training.recompute */
    bool common_m;    /* the runtime needs one M for every rank (ZeRO-3) */
    uint32_t factors_n;
    double factors[SP_MAX_FACTORS];
} sp_setting;

/* One rank under one candidate (M, asymmetric or not), after the simulation. */
typedef struct sp_res {
    double ms;       /* its makespan */
    double over;     /* bytes above the batch's room on its fullest GPU (<= 0 fits) */
    double dev_over; /* bytes above the device's usable memory (<= 0 fits) */
    int ckpt;        /* checkpointed layers per stage it needed */
} sp_res;

/* One candidate: M packs per rank, asymmetric backward packs or not. */
typedef struct sp_cand {
    uint32_t M;
    bool asym;
} sp_cand;

/* A unit of the refinement (a merge group, or a rank alone): ranks [r0, r1) and the
 * greedy (chosen candidate's) makespan of its slowest member. */
typedef struct sp_unit {
    int r0, r1;
    double ms;
} sp_unit;

/* Reusable buffers and statistics (grown, never shrunk). */
typedef struct sp_work {
    /* the batch */
    double room; /* bytes per GPU (slimpack_mem.c) */
    uint32_t *samples;
    size_t nsamples, samples_cap; /* manifest indices */
    uint32_t *slen;
    size_t slen_cap; /* their lengths (phase 1 copies
                                                          them: the manifest's len[] read
                                                          at random misses the cache) */
    double *wf;
    size_t wf_cap; /* forward work per batch slot */
    int *rank_of;
    size_t rank_of_cap; /* dp of each batch slot, -1 merged */
    sp_group groups[64];
    size_t ngroups;
    int *group_of;
    size_t group_of_cap; /* per dp: group index or -1 */
    /* per rank: its own samples (batch slots, LPT order) */
    uint32_t *own;
    size_t own_cap;
    uint32_t *own0;
    size_t own0_cap; /* [dp + 1] */
    /* phase 2 scratch */
    uint32_t *order;
    size_t order_cap;
    double *load;
    size_t load_cap;
    uint32_t *tag;
    size_t tag_cap; /* pack index per placed segment */
    vl_seg *tmp;
    size_t tmp_cap;
    uint32_t *cnt;
    size_t cnt_cap;
    uint32_t *heap;
    size_t heap_cap; /* packs by (load, index) */
    struct sp_done_at *done_at;
    size_t done_at_cap; /* backward: samples in forward-completion order */
    sp_rankplan rp;     /* one rank at a time */
    /* schedule scratch (slimpack_sched.c) */
    struct sp_slot *slots;
    size_t slots_cap;
    uint32_t slots_gen; /* the slots of the last find_deps */
    struct sp_entry *multi;
    size_t multi_cap;
    uint32_t *need_f;
    size_t need_f_cap;
    uint32_t *next;
    size_t next_cap;
    uint32_t *seg_slot;
    size_t seg_slot_cap; /* per backward segment: its sample's slot */
    uint32_t *pend;
    size_t pend_cap; /* per unit: its segments waiting on a unit not done */
    uint32_t *wait0;
    size_t wait0_cap; /* per unit: where its waiters start in waiter[] */
    uint32_t *waiter;
    size_t waiter_cap; /* the units with a segment waiting on it, by unit */
    bool *done;
    size_t done_cap;
    bool *look;
    size_t look_cap;
    uint32_t *look_pend;
    size_t look_pend_cap; /* done and pend as ready_count looks ahead */
    /* search */
    vl_cost cost; /* the job's, memoised (vl_cost_memoized): the bounds and the
                         * simulator share one memo of the samples' attention */
    vl_cost_memo *memo;
    vl_plan scratch;
    bool scratch_ready;
    void *sim;   /* vl_sim_scratch */
    void *trace; /* vl_sim_trace */
    struct sp_res *res;
    size_t res_cap; /* per candidate and rank */
    struct sp_res *res_now;
    size_t res_now_cap; /* per rank: the simulation just run */
    uint8_t *pair;
    size_t pair_cap; /* per candidate and rank: open, lost to its unit, or done */
    long *target;
    size_t target_cap; /* per rank: its candidate of least bound */
    bool *emit;
    size_t emit_cap; /* per rank: simulated in this candidate's run */
    uint8_t *elig;
    size_t elig_cap; /* per rank: its eligible M count (vl__sp_candidates) */
    vl_seg *lbtmp;
    size_t lbtmp_cap; /* cost model scratch (bounds) */
    double *states;
    size_t states_cap; /* per rank: model-state bytes of its (one) stage in the last
                        * simulation, which no candidate changes (the bounds) */
    double capacity;   /* the device's usable bytes there; 0 before one */
    int *choice;
    size_t choice_cap; /* per rank: candidate index */
    size_t hint;       /* 1 + the candidate most ranks chose
                                                          in the last batch, 0 none: the
                                                          search simulates it first */
    sp_packing *refined;
    size_t refined_cap; /* per rank: its MILP-refined own
                                                          forward packs, solved once a batch */
    bool *keep;
    size_t keep_cap; /* per rank: keeps the refinement */
    uint8_t *mark;
    size_t mark_cap; /* per rank: refinement state */
    double *fin;
    size_t fin_cap; /* per rank: makespan after it */
    sp_unit *units;
    size_t units_cap; /* refine critical: slowest first */
    /* statistics over everything planned */
    uint64_t stat_iters, stat_packs, stat_bwd_packs, stat_slices, stat_merges;
    uint64_t stat_asym_ranks, stat_milp_runs, stat_milp_skipped, stat_milp_better;
    uint64_t stat_refined, stat_not_refined; /* rank plans (refine critical) */
    uint64_t stat_m_hist[8];  /* chosen M / pp: <=1, <=2, <=4, <=8, <=16, <=32, more */
    uint64_t stat_ckpt_ranks; /* rank plans that checkpoint layers */
    int stat_ckpt_max;        /* the most layers per stage one checkpoints */
} sp_work;

void vl__sp_work_free(sp_work *w);
void vl__sp_packing_free(sp_packing *p);
void vl__sp_packing_reset(sp_packing *p);
/** Open pack p (they are opened in order).  VL_ENOMEM. */
vl_status vl__sp_packing_add(sp_packing *pk, const vl_seg *s, vl_err *err);
vl_status vl__sp_packing_close(sp_packing *pk, vl_err *err);
/** Keep only the first p0 packs. */
void vl__sp_packing_truncate(sp_packing *pk, size_t p0);
/** Append src's packs [p0, npacks) to dst.  VL_ENOMEM. */
vl_status vl__sp_packing_append(sp_packing *dst, const sp_packing *src, size_t p0,
                                vl_err *err);

/* slimpack_work.c */
/** Work coefficients from the cost model: cost.schemes for par, cost.fit (a, b per
 *  layer, backward bwd_attn * a, bwd_linear * b), else the analytic FLOPs over the
 *  efficiencies at `ref_len` tokens. */
sp_coef vl__sp_coef(const vl_cost *c, const vl_par *par, uint32_t ref_len);
/** Work of [a, b) with coefficients (alpha, beta).  Inline: phase 2 takes it millions
 *  of times a batch; the signed conversions give the same doubles (vl_cost_pairs_i64). */
static inline double vl__sp_work(double alpha, double beta, uint64_t a, uint64_t b)
{
    if (a < b && b <= INT64_MAX)
        return alpha * vl_cost_pairs_i64((int64_t)a, (int64_t)b) +
               beta * (double)(int64_t)(b - a);
    return alpha * vl_cost_pairs(a, b) + beta * (double)(b - a);
}
/** The token x in [a, end] where the work of [a, x) is nearest `target`, x a multiple
 *  of align (or end), by the closed-form root of the quadratic. */
uint32_t vl__sp_cut_fwd(double alpha, double beta, uint32_t a, uint32_t end, double target,
                        uint32_t align);
/** The token x in [lo, b] where the work of [x, b) is nearest target (backward, last
 *  token first), x a multiple of align (or lo). */
uint32_t vl__sp_cut_bwd(double alpha, double beta, uint32_t lo, uint32_t b, double target,
                        uint32_t align);
/** Parse the factors list into s->factors.  VL_ECONFIG. */
vl_status vl__sp_parse_factors(const char *text, double *out, uint32_t *n, vl_err *err);

/* slimpack_mem.c */
/** Bytes per GPU a batch of `tokens` tokens must be planned within: mem_cap_gib, else
 *  the baseline's memory (mem_budget baseline), at most the device's; 0 without a cost
 *  model (the simulator's capacity). */
double vl__sp_batch_room(const sp_setting *s, uint64_t tokens);

/** The checkpointed layers per stage packing whole samples to the context needs (pp
 *  micro-batches of training.max_seq_len tokens in flight under training.recompute);
 *  -1 when nothing fits. */
int vl__sp_baseline_ckpt(const sp_setting *s);
/** The smallest power of two k such that a sample of n tokens, every slice in flight
 *  and the most checkpointing the rank may use, fits `room` on one rank with 1/k of
 *  its tokens (DP-Merge by memory); 1 when it fits alone or room <= 0. */
int vl__sp_mem_ranks(const sp_setting *s, uint32_t n, double room);

/* slimpack_dp.c */
/** Phase 1 (+ DP-Merge) over the batch in w->samples with lengths len: fills wf,
 *  groups, group_of, own/own0.  VL_ENOMEM. */
vl_status vl__sp_phase1(sp_work *w, const sp_setting *s, const uint32_t *len, vl_err *err);

/* slimpack_pack.c */
/** Forward packs of rank dp for M packs (merge-group members: the outlier's shared
 *  packs first) and, when asym, its backward packs; into w->rp.  M >= 1.  VL_ENOMEM. */
vl_status vl__sp_rank_packs(sp_work *w, const sp_setting *s, const uint32_t *len, int dp,
                            uint32_t M, bool asym, vl_err *err);
/** Forward packs of the given items (batch slots) into pk, appended after its current
 *  packs: slimmable ones cut at multiples of tau, the rest by LPT.  VL_ENOMEM. */
vl_status vl__sp_forward(sp_work *w, const sp_setting *s, const uint32_t *len,
                         const uint32_t *items, size_t n, uint32_t M, sp_packing *pk,
                         vl_err *err);
/** Backward packs (asymmetric) of forward packs fwd[p0, fwd->npacks) into bwd, M of them
 *  at most (empty ones left out): samples in forward-completion order, each last token
 *  first, cut at multiples of sigma.  VL_ENOMEM. */
vl_status vl__sp_backward(sp_work *w, const sp_setting *s, const uint32_t *len,
                          const sp_packing *fwd, size_t p0, uint32_t M, sp_packing *bwd,
                          vl_err *err);
/** Largest |pack work - mean| / mean of packs [p0, npacks) (fwd: forward work). */
double vl__sp_deviation(const sp_packing *pk, size_t p0, const sp_setting *s, bool fwd);

/* slimpack_sched.c */
/** The readiness-driven last-stage list of w->rp into w->rp.ops (bursts of 2·pp ready
 *  backward packs drain at once).  VL_ENOMEM. */
vl_status vl__sp_schedule(sp_work *w, const sp_setting *s, vl_err *err);
/** Emit w->rp as rank dp (with ckpt layers) into out's current iteration.  VL_ENOMEM. */
vl_status vl__sp_emit_rank(sp_work *w, const sp_setting *s, int dp, int ckpt, vl_plan *out,
                           vl_err *err);

/* slimpack_search.c */
/** Plan one global batch (samples[0..n-1], lengths len) as iteration `epoch` of out:
 *  phase 1, candidates over M (and asymmetric on/off), checkpointing per M, the MILP
 *  refinement, emission.  VL_ENOMEM, VL_EDATA from the simulator. */
vl_status vl__sp_plan_batch(sp_work *w, const sp_setting *s, const vl_job *job, vl_manifest *m,
                            const uint32_t *samples, size_t n, const uint32_t *len,
                            uint32_t epoch, vl_plan *out, vl_err *err);
/** The M candidates of a rank of `tokens` tokens (ascending, distinct).  Returns count. */
size_t vl__sp_candidates(const sp_setting *s, uint64_t tokens, uint32_t *out, size_t cap);

/** Every candidate of a batch into cs (M values into Ms[0..*nM), each asymmetric,
 *  symmetric or both as slimpack.asymmetric says); the count. */
size_t vl__sp_list_candidates(const sp_setting *s, uint32_t *Ms, size_t *nM, sp_cand *cs);

/** Bytes a GPU may hold in this batch: w->room, the device's capacity without one. */
double vl__sp_room(const sp_work *w, double capacity);

/* slimpack_bound.c */
struct vl_sim_trace; /* sim.h */
/** The fewest checkpointed layers that bring a lane's activation peak from act (at c of
 *  `layers`) within room, by the linear activation model; at least c + 1, at most most. */
int vl__sp_more_ckpt(const vl_cost *cost, int layers, int c, double act, double room,
                     int most);
/** The sum of the tasks of w->rp's packs (built and scheduled) on one stage at ckpt
 *  checkpointed layers, as the simulator times them, lowered past its rounding: a lower
 *  bound on the rank's makespan.  VL_ENOMEM. */
vl_status vl__sp_rank_busy(sp_work *w, const sp_setting *s, const vl_cost *cost, int ckpt,
                           double *busy, vl_err *err);
/** The fewest checkpointed layers, from ckpt up, rank r may end with when it runs w->rp's
 *  list on one stage under recompute auto (w->states and w->capacity from the last
 *  simulation); ckpt otherwise. */
int vl__sp_least_ckpt(const sp_work *w, const sp_setting *s, const vl_cost *cost, int r,
                      int ckpt);
/** Keep each rank's stage-0 model states and the device's capacity from trace t (the
 *  simulation just run) for vl__sp_least_ckpt.  VL_ENOMEM. */
vl_status vl__sp_keep_states(sp_work *w, const sp_setting *s, const struct vl_sim_trace *t,
                             vl_err *err);
/** vl__sp_rank_busy of rank r as the scratch iteration holds it, at its checkpointing
 *  now.  VL_ENOMEM. */
vl_status vl__sp_plan_rank_busy(sp_work *w, const vl_cost *cost, int r, double *busy,
                                vl_err *err);

/* slimpack_refine.c */
/** The chosen candidate of every rank (w->choice into cs, results in w->res), its forward
 *  packs refined by the MILP where that helps (slimpack.refine: every rank, or only the
 *  ranks that can set the iteration time), as iteration `epoch` of out.  VL_ENOMEM,
 *  VL_EDATA from the simulator. */
vl_status vl__sp_emit_batch(sp_work *w, const sp_setting *s, const vl_cost *cost,
                            const uint32_t *len, const sp_cand *cs, uint32_t epoch,
                            vl_plan *out, vl_err *err);

/* slimpack_milp.c */
/** Refine the forward packs [p0, npacks) of w->rp by the MILP when their deviation is
 *  above 1% (milp auto) or always (on); keeps the greedy when the MILP is not better.
 *  *improved says whether it changed them.  VL_ENOMEM. */
vl_status vl__sp_milp_refine(sp_work *w, const sp_setting *s, const uint32_t *len,
                             const uint32_t *items, size_t n, size_t p0, bool *improved,
                             vl_err *err);

#endif
