/* lib/model/cost.h -- the cost model, the single source of every estimate (docs/decisions.md §5,
 * docs/costmodel.md §7): FLOPs, compute time, activation and model-state memory,
 * and alpha-beta communication, for a micro-batch given as segments [a, b) of samples. */
#ifndef VLPLAN_COST_H
#define VLPLAN_COST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "plan.h"

typedef struct vl_cost_memo vl_cost_memo;

/* Derived per-model constants, computed once from the config. */
typedef struct vl_cost {
    const vl_config *cfg;
    double lin;          /* linear fwd FLOPs per token per layer */
    double acoef;        /* attention fwd FLOPs per query-key pair per layer (4·h_q) */
    double head;         /* LM-head fwd FLOPs per token (2·h·V) */
    double act_bytes;    /* activation bytes per token per layer (bf16, FlashAttention) */
    double params_layer; /* parameters per transformer layer */
    double params_embed; /* embedding (+ untied LM head) parameters */
    double peak;         /* FLOP/s */
    /* log2 of the x points of cluster.gemm_eff, attn_fwd_eff and attn_bwd_eff: the
     * simulator evaluates the curves for every micro-batch and segment, and with these
     * a lookup takes one log2 (of its argument) instead of three */
    double lx_gemm[VL_CURVE_MAX], lx_attn_fwd[VL_CURVE_MAX], lx_attn_bwd[VL_CURVE_MAX];
    /* the launch-bound model's alpha below each curve's first point (gemm_eff linear in
     * its argument, the attention curves quadratic): a property of the curve, not of
     * the lookup, which the simulator makes for most short segments */
    double below_gemm, below_attn_fwd, below_attn_bwd;
    bool attn_same_x; /* the attention curves share their x points: one piece lookup */
    /* NULL (vl_cost_init), or the attention memo of a copy from vl_cost_memoized */
    vl_cost_memo *memo;
} vl_cost;

/* One collective/p2p operation kind for vl_cost_comm_time. */
typedef enum { VL_COMM_AR, VL_COMM_AG, VL_COMM_RS, VL_COMM_A2A, VL_COMM_P2P } vl_comm_op;

/** Derive the constants from cfg (which must outlive c).  VL_ECONFIG if the shape is
 *  unusable (zero layers, ...). */
vl_status vl_cost_init(vl_cost *c, const vl_config *cfg, vl_err *err);

/** A copy of c that memoises the attention of whole samples by length in *m (allocated
 *  on first use; none when that fails): the simulator and SlimPack cost the same samples
 *  in pack after pack, and the attention's square root, curve lookups and log2 were
 *  more than half of the analytic time.  Every value is the one c computes, bit for
 *  bit.  Call it again whenever c or its configuration may have changed: it empties *m
 *  when what the memoised terms depend on differs.  The copy and *m serve one thread. */
vl_cost vl_cost_memoized(const vl_cost *c, vl_cost_memo **m);

/** Free a memo of vl_cost_memoized (NULL is fine). */
void vl_cost_memo_free(vl_cost_memo *m);

/** Causal query-key pairs of the slice [a, b): (b(b+1) − a(a+1)) / 2. */
double vl_cost_pairs(uint64_t a, uint64_t b);

/** vl_cost_pairs of 0 <= a, b <= INT64_MAX, inline for the loops over segments: the same
 *  arithmetic on the same doubles (a signed conversion of a value is the unsigned one's,
 *  and takes one instruction on x86-64 where the unsigned takes a branch and several). */
static inline double vl_cost_pairs_i64(int64_t a, int64_t b)
{
    if (b <= a)
        return 0;
    /* (b(b+1) - a(a+1))/2 = (b-a)(a+b+1)/2, in doubles: b(b+1) overflows 64 bits */
    return (double)(b - a) * ((double)a + (double)b + 1) / 2;
}

/** Whole-model forward FLOPs of a micro-batch (all layers + LM head), no recompute. */
double vl_cost_fwd_flops(const vl_cost *c, const vl_seg *segs, size_t n);

/** Model FLOPs (fwd + bwd, 3× forward, no recompute): the MFU numerator. */
double vl_cost_model_flops(const vl_cost *c, const vl_seg *segs, size_t n);

/* Times of one micro-batch on one pipeline stage of `layers` layers. */
typedef struct vl_mb_time {
    double fwd, bwd;           /* seconds, compute + exposed communication */
    double recompute;          /* seconds of recompute forward included in bwd */
    double comm_fwd, comm_bwd; /* seconds of exposed communication included above */
} vl_mb_time;

/** Time of a micro-batch on one stage holding `layers` layers, with the LM head when
 *  last_stage.  Uses the measured cost.schemes row of par's (tp, pp, sp) when there is
 *  one (its whole time, or with comm: analytic its compute plus vl_cost_scheme_comm),
 *  else the fitted curve when cost.fit is set (then no communication), else the
 *  analytic model. */
vl_mb_time vl_cost_mb_time(const vl_cost *c, const vl_seg *segs, size_t n, const vl_par *par,
                           int layers, int last_stage);

/** Activation bytes held per device between the forward and backward of this micro-batch
 *  on a stage of `layers` layers (ckpt_layers of them recomputed). */
double vl_cost_act_bytes(const vl_cost *c, uint64_t tokens, const vl_par *par, int layers,
                         int last_stage);

/** State-store bytes held per device for a micro-batch whose activations are dropped
 *  after its forward and rebuilt by a recompute before its backward (ChunkFlow,
 *  Algorithm 2, chunks with N > K), on a stage of `layers` layers:
 *
 *      tokens/sp · (layers · 2 · kvh · (dk + dv) + 2 · h/tp)      bytes (bf16)
 *
 *  kvh = max(1, kv_heads/tp) key/value heads per TP rank (GQA replicates a head when
 *  tp > kv_heads), dk = dv = head_dim; MLA stores the expanded keys and values its
 *  attention reads: kvh = max(1, heads/tp), dk = qk_nope + qk_rope, dv = v_head.
 *  Why this and nothing more: the later chunks of the sample attend to this chunk's
 *  keys and values at every layer, in forwards and in backwards that all run before
 *  its recompute, so they stay until its backward; everything else is rebuilt by the
 *  recompute from the stage input (2h bytes per token, split by sequence-parallel
 *  TP).  No act_mem_factor: these are a few whole tensors the forward produces
 *  anyway, not the many temporaries the factor covers.  Not counted: the dK/dV that
 *  later chunks' backwards accumulate for the chunk before its own backward (at most
 *  the same size, and only during the sample's backward phase). */
double vl_cost_state_store_bytes(const vl_cost *c, uint64_t tokens, const vl_par *par,
                                 int layers);

/** Model-state bytes (params, grads, optimizer) per device for a stage of `layers`
 *  layers, sharded over dp·sp ranks according to training.zero. */
double vl_cost_state_bytes(const vl_cost *c, const vl_par *par, int dp, int layers,
                           int first_stage, int last_stage);

/** Layers on pipeline stage `stage` of `pp`: L/pp, the first L % pp stages one more
 *  (the simulator's split). */
int vl_cost_stage_layers(const vl_cost *c, int pp, int stage);

/** Modelled memory (bytes) of the fullest device of a rank running micro-batches of
 *  `tokens` tokens under 1F1B: model states plus the activations of min(pp, mbs)
 *  micro-batches in flight on the first stage, or one micro-batch plus the LM head on
 *  the last, whichever is larger.  `ranks` shard the model states. */
double vl_cost_rank_peak_bytes(const vl_cost *c, uint64_t tokens, const vl_par *par, int ranks,
                               uint32_t mbs);

/** The fewest checkpointed layers per stage (par->ckpt_layers is ignored) with which
 *  vl_cost_rank_peak_bytes fits vl_cost_mem_capacity, or -1 when even recomputing every
 *  layer does not fit. */
int vl_cost_fewest_ckpt(const vl_cost *c, uint64_t tokens, const vl_par *par, int ranks,
                        uint32_t mbs);

/** Usable device memory in bytes (mem_gib − mem_reserve_gib). */
double vl_cost_mem_capacity(const vl_cost *c);

/** Alpha-beta time of one collective of `bytes` total over `n` ranks laid out
 *  contiguously (spanning nodes when n > gpus_per_node). */
double vl_cost_comm_time(const vl_cost *c, vl_comm_op op, double bytes, int n);

/** Exposed DP synchronisation of one iteration over dp·sp ranks: a gradient reduction
 *  and a parameter gather (vl_cost_dp_grad_time, vl_cost_dp_param_time), each with
 *  training.overlap.dp hidden. */
double vl_cost_dp_sync_time(const vl_cost *c, const vl_par *par, int dp, int layers);

/** Gradient reduction of the heaviest stage of par over dp·sp replicas, unhidden:
 *  all-reduce (ZeRO-0) or reduce-scatter (ZeRO-1, 2, 3, mdo) of training.grad_bytes per
 *  parameter; once per iteration, or per micro-step under training.dp_sync=micro_step. */
double vl_cost_dp_grad_time(const vl_cost *c, const vl_par *par, int dp, int layers);
/** Parameter all-gather after the optimizer step, unhidden: once per iteration under
 *  ZeRO-1, 2 and mdo; 0 under ZeRO-0 (nothing sharded) and ZeRO-3 (gathered per
 *  micro-step instead: vl_cost_z3_gather_time). */
double vl_cost_dp_param_time(const vl_cost *c, const vl_par *par, int dp, int layers);
/** ZeRO-3's exposed parameter gather of one stage, paid by every micro-batch's forward
 *  and again by its backward (0 under the other stages). */
double vl_cost_z3_gather_time(const vl_cost *c, const vl_par *par, int layers);
/** Exposed sync: grad and param with training.overlap.dp of them hidden. */
double vl_cost_dp_exposed(const vl_cost *c, double grad, double param);
/** The exposed part of a gradient reduction of `grad` seconds that may overlap `hide`
 *  seconds of backward: training.overlap.dp of it hides, never more than `hide`. */
double vl_cost_dp_grad_exposed(const vl_cost *c, double grad, double hide);
/** The optimizer step of a device holding state_bytes of model states: each read and
 *  written once at cluster.hbm_gbs, plus cost.optimizer_fixed_ms. */
double vl_cost_optimizer_time(const vl_cost *c, double state_bytes);

/** Forward + backward seconds of the LM head and loss on a last stage running `tokens`
 *  tokens under par's tp and sp: the analytic GEMM at the efficiency of its tokens per GPU,
 *  scaled by cost.head_scale (else cost.compute_scale). */
double vl_cost_head_time(const vl_cost *c, double tokens, const vl_par *par);

/** Parameters one GPU of a stage of `layers` layers holds (its layers, the embedding on
 *  the first stage, the LM head on the last), split by TP. */
double vl_cost_stage_params(const vl_cost *c, const vl_par *par, int layers, int first_stage,
                            int last_stage);

/* ---- a pack as a plan states it (cost_pack.c) ---- */

/* A pack: its segments, their CP placement (NULL: every one sharded over the rank's sp
 * group), and how many ranks share it (1: its own). */
typedef struct vl_pack_view {
    const vl_seg *segs;
    const int16_t *cps;
    size_t n;
    int share;
} vl_pack_view;

/** Time of a pack on one stage: Skrull's overlap of sharded communication with local
 *  compute when some segments are local to a CP coordinate, a rank of sp·share for a
 *  shared pack, else vl_cost_mb_time.  tmp: room for pk->n segments. */
vl_mb_time vl_cost_pack_time(const vl_cost *c, const vl_pack_view *pk, const vl_par *par,
                             int layers, int last_stage, vl_seg *tmp);
/** Activation bytes of the pack on the fullest GPU of the rank (vl_cost_act_bytes of the
 *  tokens that GPU holds: its local segments and 1/N of the sharded ones). */
double vl_cost_pack_act(const vl_cost *c, const vl_pack_view *pk, const vl_par *par,
                        int layers, int last_stage);

/** The cost.schemes row of par's (tp, pp, sp), or NULL. */
const vl_scheme *vl_cost_scheme(const vl_cost *c, const vl_par *par);
/** Time of segs on one stage of `layers` layers from a measured row (see cost_pack.c):
 *  the row's a, b, c alone, without the communication a comm-analytic row leaves out. */
vl_mb_time vl_cost_scheme_time(const vl_cost *c, const vl_scheme *s, const vl_seg *segs,
                               size_t n, const vl_par *par, int layers);
/** The exposed communication the analytic model charges par's scheme for segs on a stage
 *  of `layers` layers (ring or Ulysses steps of training.sp_kind, sequence-parallel TP;
 *  the ring's overlap against the analytic attention): comm_fwd, comm_bwd, the
 *  recomputed forward's share in recompute, and fwd, bwd their sums.  What a
 *  comm-analytic cost.schemes row adds to its compute.  0 with cost.comm off or cost.fit. */
vl_mb_time vl_cost_scheme_comm(const vl_cost *c, const vl_seg *segs, size_t n,
                               const vl_par *par, int layers);

/* A scheme's analytic communication in a cost.schemes row's terms: milliseconds of a stage
 * of model.layers/pp layers per token (bf, bb) and per micro-batch (cf, cb), forward and
 * backward. */
typedef struct vl_comm_line {
    double bf, bb, cf, cb;
} vl_comm_line;
/** vl_cost_scheme_comm of one sequence as b·l + c, through l = ref and l = ref/2 (at
 *  least 2 tokens): exact where the communication is affine in the tokens (TP, Ulysses);
 *  the ring's, partly hidden behind attention, is its chord there.  Zero unless par's
 *  row has comm: analytic -- a whole-time row's a, b, c hold their communication already
 *  -- so a strategy reading rows adds it unconditionally. */
vl_comm_line vl_cost_scheme_comm_line(const vl_cost *c, const vl_par *par, uint32_t ref);

/** Model-state bytes per GPU when the optimizer states are sharded over all `world` GPUs
 *  (Hydraulis): bf16 parameters and gradients of the stage's share under TP, plus 12
 *  bytes of fp32 state per model parameter / world. */
double vl_cost_state_bytes_world(const vl_cost *c, const vl_par *par, int layers, int first,
                                 int last, int world);

/* How the work behind an efficiency curve grows with its argument: GEMMs with their
 * tokens, causal attention with the square of its length. */
typedef enum { VL_WORK_LINEAR = 1, VL_WORK_QUADRATIC = 2 } vl_work_growth;

/** Efficiency curve lookup: log2-linear interpolation between the points, held at the
 *  last point above them, and below the first the launch-bound model of cost.c (time
 *  affine in the work, from the first piece; g says how the work grows).  Computes the
 *  log2 of the two x points it interpolates between on each call; the cost model itself
 *  uses the tables in vl_cost instead, with bit-identical results. */
double vl_curve_eval(const vl_curve *cv, double x, vl_work_growth g);

/* Shared by cost.c and cost_mem.c. */
#define VL_COST_BF16 2.0 /* bytes per activation/parameter element on the wire */
/** The layers of a stage of `layers` that par checkpoints (its ckpt_layers, within
 *  0..layers): the plan says what is recomputed, whatever config scores it. */
int vl__cost_ckpt(const vl_par *par, int layers);

#endif
