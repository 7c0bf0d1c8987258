/* lib/model/sim_impl.h -- simulator internals shared by sim.c (driver, memory, results),
 * sim_rank.c (one rank: layers, task weights, dependencies between token intervals),
 * sim_sched.c (execution orders) and sim_dag.c (the joint longest path over every lane
 * of an iteration).  Not API.
 *
 * One iteration at a time.  Every rank r gets a `vl_sim_rank` record and slices of the
 * iteration-wide arrays below (offsets in the record); the arrays grow once and are
 * reused across iterations.  A lane is one (rank, stage) device; a node one operation of
 * a lane's order.  Forward packs are "f" (0..nf-1), the packs B operations name "b"
 * (0..nb-1: the backward packs, or the forward ones when the rank has none). */
#ifndef VLPLAN_SIM_IMPL_H
#define VLPLAN_SIM_IMPL_H

#include "grow.h"
#include "sim.h"

/* Stage classes: stages with the same layer count and last-stage flag cost the same,
 * so times are computed once per class (at most three distinct ones). */
#define VL_SIM_MAXCLS 4

/* An edge found from token intervals: pack `row` waits for pack `from`; a rank's edges are
 * collected, then sorted into CSR rows (sim_rank.c). */
typedef struct vl_sim_pending {
    uint32_t row, from;
} vl_sim_pending;

/* The edges of the rank being prepared: F <- F, B <- F, B <- B. */
typedef struct vl_sim_edges {
    vl_sim_pending *fp, *bf, *bb;
    size_t nfp, nbf, nbb, cfp, cbf, cbb;
} vl_sim_edges;

typedef struct vl_sim_rank {
    const vl_rank *rk;
    uint32_t nf, nb; /* forward packs; packs the B operations name */
    bool asym;       /* backward packs of its own (nb counts them) */
    uint32_t pp, n;  /* stages; operations per stage */
    uint32_t npk;    /* max(nf, nb): the stride of pos[] */
    int ncls;
    int cls_layers[VL_SIM_MAXCLS], cls_last[VL_SIM_MAXCLS];
    uint64_t lane0;    /* first lane in lane arrays */
    uint64_t node0;    /* first node: lane (lane0 + s) has nodes node0 + s·n .. + n */
    uint64_t pos0;     /* pos[pos0 + (s·3 + kind)·npk + pack] */
    uint64_t wf0, wb0; /* forward weights [wf0 + cls·nf + f], backward [wb0 + cls·nb + b] */
    uint64_t pk0;      /* per-pack arrays: p2p_f[pk0 + f], p2p_b[pk0 + b], has_r[pk0 + f] */
    uint64_t fp0, bf0, bb0;         /* dependency CSR rows (fp_off / bf_off / bb_off) */
    uint64_t list0;                 /* the last stage's list [list0, + n) */
    double cls_busy[VL_SIM_MAXCLS]; /* seconds of work on one stage of the class */
    double makespan;
    vl_par weighed; /* the degrees its task weights were computed at (vl_sim_iter_again) */
} vl_sim_rank;

struct vl_sim_scratch {
    /* the iteration being simulated */
    const vl_plan *p;
    const vl_cost *c;    /* c_in when it has a memo, else &cm: c_in with the scratch's */
    const vl_cost *c_in; /* the caller's (same_shapes) */
    vl_cost cm;
    vl_cost_memo *memo; /* the attention of whole samples by length, across iterations */
    const vl_sim_opts *o;
    size_t it;
    uint32_t nranks;
    bool prepared; /* every rank prepared for (p, it, c, o) and simulated without error */
    vl_sim_rank *rk;
    size_t rk_cap;
    uint64_t nlanes, nnodes;

    /* per lane */
    uint32_t *lrank;
    size_t lrank_cap; /* its rank */
    uint32_t *lstage;
    size_t lstage_cap; /* its stage */
    int *lcls;
    size_t lcls_cap; /* its stage class */
    int *llayers;
    size_t llayers_cap;
    uint32_t *ptr;
    size_t ptr_cap; /* next operation */
    double *avail;
    size_t avail_cap; /* when free */
    uint32_t *bdone;
    size_t bdone_cap; /* backwards finished (micro-step barriers) */
    uint64_t *stack;
    size_t stack_cap; /* lanes to examine */
    uint8_t *inq;
    size_t inq_cap;

    /* per node */
    vl_op *ord;
    size_t ord_cap;
    double *start;
    size_t start_cap;
    double *end;
    size_t end_cap;
    double *dur;
    size_t dur_cap;

    /* per rank slices */
    int32_t *pos;
    size_t pos_cap; /* node index within its lane, -1 = absent */
    double *tf;
    size_t tf_cap; /* forward (also a recompute-forward) */
    double *cf;
    size_t cf_cap; /* exposed comm inside tf */
    double *af;
    size_t af_cap; /* bytes the forward keeps until its backward */
    double *sf;
    size_t sf_cap; /* K/V state store kept when an R follows */
    double *tb;
    size_t tb_cap; /* backward */
    double *rc;
    size_t rc_cap; /* recompute inside tb */
    double *cb;
    size_t cb_cap; /* exposed comm inside tb */
    double *ab;
    size_t ab_cap; /* bytes the backward frees */
    double *p2pf;
    size_t p2pf_cap; /* send/receive between stages */
    double *p2pb;
    size_t p2pb_cap;
    uint8_t *has_r;
    size_t has_r_cap;
    int32_t *sharef;
    size_t sharef_cap; /* shared-pack instance of a forward pack, -1 */
    int32_t *shareb;
    size_t shareb_cap; /* ... of a B pack */
    vl_op *list;
    size_t list_cap;

    /* dependencies (CSR per rank, rows at the rank's fp0 / bf0 / bb0, + 1 sentinel);
     * nfp_rows / nb_rows: rows used by the ranks prepared so far */
    size_t nfp_rows, nb_rows;
    uint32_t *fp_off;
    size_t fp_off_cap;
    uint32_t *fp;
    size_t fp_cap, nfp; /* F <- F */
    uint32_t *bf_off;
    size_t bf_off_cap;
    uint32_t *bf;
    size_t bf_cap, nbf; /* B <- F */
    uint32_t *bb_off;
    size_t bb_off_cap;
    uint32_t *bb;
    size_t bb_cap, nbb; /* B <- B */
    uint32_t *rbf_off;
    size_t rbf_off_cap;
    uint32_t *rbf;
    size_t rbf_cap; /* transposed, */
    uint32_t *rbb_off;
    size_t rbb_off_cap;
    uint32_t *rbb;
    size_t rbb_cap; /* one rank */
    uint32_t *heap;
    size_t heap_cap; /* 1F1B ready queue */
    uint32_t *pend;
    size_t pend_cap; /* per B pack: dependencies not yet met */

    /* token intervals of the rank being prepared (sim_rank.c) */
    vl_interval *iv;
    size_t iv_cap, niv;
    uint32_t *ivtab;
    size_t ivtab_cap;   /* their grouping's table (vl_plan_rank_intervals_grouped) */
    vl_sim_edges edges; /* their edges before the CSR rows, reused from rank to rank */
    vl_seg *tmp;
    size_t tmp_cap; /* cost model scratch */

    /* shared packs: instance i has copies inst_m[inst_off[i] .. inst_off[i+1]) as node
     * keys (rank, kind, pack) packed in 64 bits */
    uint64_t *inst;
    size_t inst_cap;
    uint32_t *inst_off;
    size_t inst_off_cap;
    size_t ninst;

    /* micro-step barriers (training.dp_sync = micro_step): per k, ranks still to finish
     * their k-th backward on stage 0, and when the last did */
    uint32_t *bar_left;
    size_t bar_left_cap;
    double *bar_time;
    size_t bar_time_cap;
    uint32_t nbar;
    double step_grad; /* gradient reduction per micro-step, unhidden */

    /* results per rank */
    double *tbusy;
    size_t tbusy_cap;
};

/* sim_rank.c: rank r of w->it, whose record has its rank, pack counts and offsets */
/** Layer split and stage classes of its lanes.  VL_EDATA when pp exceeds the layers. */
vl_status vl__sim_layers(vl_sim_scratch *w, uint32_t r, vl_err *err);
/** Dependencies between its packs (token intervals).  VL_ENOMEM. */
vl_status vl__sim_deps(vl_sim_scratch *w, uint32_t r, vl_err *err);
/** Task weights, memory and transfers (after vl__sim_order, which marks recomputes).
 *  VL_EDATA for bad degrees, VL_ENOMEM. */
vl_status vl__sim_weights(vl_sim_scratch *w, uint32_t r, vl_err *err);

/* sim_sched.c */
/** The last stage's list of rank r (1F1B, GPipe or the plan's), then every stage's
 *  order and the positions.  VL_EDATA for a malformed explicit schedule. */
vl_status vl__sim_order(vl_sim_scratch *w, uint32_t r, vl_err *err);

/* sim_dag.c */
/** Shared-pack instances of the iteration (copies matched across member ranks). */
vl_status vl__sim_shares(vl_sim_scratch *w, vl_err *err);
/** Longest path over every lane of the iteration: start/end of every node, the ranks'
 *  makespans.  VL_EDATA on deadlock. */
vl_status vl__sim_eval(vl_sim_scratch *w, vl_err *err);
/** Every node's duration from the task weights (before vl__sim_eval). */
void vl__sim_durations(vl_sim_scratch *w);

/* Positions: index in lane (r, s)'s order of operation (kind, pack), or -1. */
static inline int32_t *vl__sim_pos(const vl_sim_scratch *w, const vl_sim_rank *R, uint32_t s,
                                   int kind, uint32_t pack)
{
    return &w->pos[R->pos0 + ((uint64_t)s * 3 + (uint64_t)kind) * R->npk + pack];
}

#endif
