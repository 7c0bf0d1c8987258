/* lib/model/sim_impl.h -- simulator internals shared by sim.c (driver, memory, results),
 * sim_sched.c (execution orders) and sim_dag.c (task weights, slice edges, longest
 * path).  Not API: the working state of the rank being simulated lives in the scratch,
 * whose buffers grow once and are reused across ranks and iterations. */
#ifndef VLPLAN_SIM_INT_H
#define VLPLAN_SIM_INT_H

#include "sim.h"
#include "grow.h"

/* Stage classes: stages with the same layer count and last-stage flag cost the same,
 * so times are computed once per class (at most three distinct ones). */
#define VL_SIM_MAXCLS 4

struct vl_sim_scratch {
    /* the rank being simulated */
    const vl_plan *p;
    const vl_rank *rk;
    const vl_cost *c;
    size_t it, r;         /* for messages */
    int dp;               /* ranks in the iteration */
    uint32_t nmb;         /* micro-batches */
    uint32_t pp;          /* stages */
    uint32_t n;           /* operations per stage (2·nmb + recomputes) */
    uint32_t nslice;      /* slice edges (pred entries) */
    bool expl;            /* the rank's explicit operations give the order */
    int ncls;
    int cls_layers[VL_SIM_MAXCLS];
    int cls_last[VL_SIM_MAXCLS];
    double cls_busy[VL_SIM_MAXCLS];  /* seconds of F, R, B on one stage of the class */

    /* per stage [pp] */
    int *layers; size_t layers_cap;
    int *cls; size_t cls_cap;
    uint32_t *ptr; size_t ptr_cap;       /* next operation to run */
    double *avail; size_t avail_cap;     /* when the stage is free */
    uint32_t *stack; size_t stack_cap;   /* stages to examine */
    uint8_t *inq; size_t inq_cap;

    /* per class and micro-batch [ncls·nmb], seconds / bytes */
    double *tf; size_t tf_cap;           /* forward (also a recompute-forward) */
    double *tb; size_t tb_cap;           /* backward */
    double *rc; size_t rc_cap;           /* recompute included in tb */
    double *cf; size_t cf_cap;           /* exposed comm included in tf */
    double *cb; size_t cb_cap;           /* exposed comm included in tb */
    double *act; size_t act_cap;         /* activations held F -> B, or R -> B */
    double *store; size_t store_cap;     /* held F -> B when an R follows: the state
                                            store (vl_cost_state_store_bytes), else 0 */
    double *p2p; size_t p2p_cap;         /* [nmb] send/receive between stages */

    /* slices: CSR predecessors / successors per micro-batch */
    uint32_t *pred_off; size_t pred_off_cap;  /* [nmb+1] */
    uint32_t *pred; size_t pred_cap;
    uint32_t *succ_off; size_t succ_off_cap;  /* [nmb+1] */
    uint32_t *succ; size_t succ_cap;
    uint64_t *hkey; size_t hkey_cap;     /* (sample, end) -> latest micro-batch */
    uint32_t *hval; size_t hval_cap;

    /* schedule */
    vl_op *list; size_t list_cap;        /* [n] last stage's order */
    vl_op *ord; size_t ord_cap;          /* [pp·n] per-stage orders */
    int32_t *pos; size_t pos_cap;        /* [pp·3·nmb] index in its stage's order, -1 */
    uint8_t *has_r; size_t has_r_cap;    /* [nmb] */
    uint32_t *heap; size_t heap_cap;     /* 1F1B ready queue */
    uint32_t *pend; size_t pend_cap;     /* successors not yet backwarded */

    /* longest path [pp·n] */
    double *start; size_t start_cap;
    double *end; size_t end_cap;

    /* per rank of the iteration: busy time per device, for TBR */
    double *tbusy; size_t tbusy_cap;
};


/* sim_dag.c */
/** Layer split, stage classes, task times, activation bytes and P2P times of w->rk. */
vl_status vl__sim_weights(vl_sim_scratch *w, vl_err *err);
/** Slice edges between micro-batches of w->rk (none when its sample ids are unresolved
 *  and w->expl: the explicit order then stands for them, see sim.h). */
vl_status vl__sim_slices(vl_sim_scratch *w, vl_err *err);
/** Longest path over the per-stage orders: fills start/end.  VL_EDATA on deadlock. */
vl_status vl__sim_eval(vl_sim_scratch *w, vl_err *err);
/** Duration of operation op on stage s. */
double vl__sim_dur(const vl_sim_scratch *w, uint32_t s, vl_op op);

/* sim_sched.c */
/** The last stage's list (1F1B, GPipe or the plan's), then every stage's order and
 *  positions.  VL_EDATA for a malformed explicit schedule. */
vl_status vl__sim_order(vl_sim_scratch *w, const vl_sim_opts *o, vl_err *err);

#endif
