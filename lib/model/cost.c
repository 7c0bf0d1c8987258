/* lib/model/cost.c -- the cost model (docs/decisions.md §5; docs/costmodel.md §7 is the spec):
 * FLOPs of causal slices, compute time through efficiency curves, alpha-beta
 * communication, gradient synchronisation and the optimizer step; memory in cost_mem.c.
 *
 * Conventions and deliberate choices:
 *  - A segment [off, off + len) attends to every earlier token of its sample, so it
 *    holds (b(b+1) - a(a+1))/2 query-key pairs (b = off + len, a = off).
 *  - Layers are all alike: MoE models (dense first layers, then MoE) use the average
 *    layer for FLOPs, activations and parameters.
 *  - TP always comes with Megatron sequence parallelism (activations and GEMMs split by
 *    tp, all-gather + reduce-scatter instead of all-reduce).  Ranks are laid out
 *    tp-innermost, then sp, then dp, then pp.
 *  - Recomputation: training.recompute = full recomputes every layer; otherwise
 *    par->ckpt_layers layers of the stage do.  `selective` with FlashAttention keeps
 *    nothing quadratic, so it costs the same as none.
 *  - cost.fit replaces the analytic model entirely: per layer fwd = (a·P + b·T)/(tp·sp)
 *    + c and bwd = (bwd_attn·a·P + bwd_linear·b·T)/(tp·sp) + bwd_linear·c, with no LM
 *    head, no layer_fixed_us, no efficiency curves and no communication anywhere
 *    (vl_cost_comm_time and vl_cost_dp_sync_time return 0).  With a = c = 0, b = 1 the
 *    backward is exactly twice the forward, which the simulator tests rely on.
 *  - cost.comm = off makes every communication time 0 as well.
 *  - Efficiency curves are linear in log2 of their argument; vl_cost_init keeps the
 *    log2 of every curve point, so the simulator's lookups (one per segment and curve)
 *    each take a single log2, bit-identical to vl_curve_eval.  A copy made by
 *    vl_cost_memoized (cost_memo.c) keeps a whole sample's attention terms by length:
 *    the value stored is the one attn_terms computes, so memoised sums are the same.
 *  - vl_cost_comm_time(VL_COMM_P2P, bytes, n): n is the number of ranks the pair spans
 *    (the transfer crosses nodes when n > gpus_per_node), e.g. gpus / pp + 1 for
 *    neighbouring pipeline stages.  Pipeline P2P is not part of vl_cost_mb_time: it is
 *    an edge of the simulator's DAG. */
#include <math.h>
#include <string.h>

#include "cost.h"
#include "cost_memo.h"

#define BF16 VL_COST_BF16

/* ---- per-model constants ---- */

/* Per-token multiply-adds and activation bytes of the attention block. */
static void attn_shape(const vl_model_cfg *m, double *macs, double *act, double *acoef)
{
    double h = m->hidden, a = m->heads;

    if (m->mla_kv_lora > 0) {
        double qdim = a * (m->mla_qk_nope + m->mla_qk_rope), vdim = a * m->mla_v_head;
        double q =
            m->mla_q_lora > 0 ? h * m->mla_q_lora + (double)m->mla_q_lora * qdim : h * qdim;
        *macs = q + h * (m->mla_kv_lora + m->mla_qk_rope) +
                (double)m->mla_kv_lora * a * (m->mla_qk_nope + m->mla_v_head) + vdim * h;
        *act = 4 * qdim + 4 * vdim; /* Q, K (qk width), V, O (v width), bf16 */
        *acoef = 2 * a * (m->mla_qk_nope + m->mla_qk_rope + m->mla_v_head);
        return;
    }
    double hq = a * m->head_dim, hkv = (double)m->kv_heads * m->head_dim;
    *macs = h * (hq + 2 * hkv) + hq * h;
    *act = 4 * hq + 4 * hkv;
    *acoef = 4 * hq; /* QK^T and AV, 2 FLOPs per multiply-add */
}

/* FFN of the average layer: active multiply-adds, stored parameters, activation bytes. */
static void ffn_shape(const vl_model_cfg *m, double *macs, double *params, double *act)
{
    double h = m->hidden, mats = m->ffn_mats, L = m->layers;
    double dense = m->moe_experts > 0 ? m->moe_first_dense : L, moe = L - dense;
    double active = m->moe_ffn * (double)(m->moe_top_k + m->moe_shared);
    double stored = m->moe_ffn * (double)(m->moe_experts + m->moe_shared);
    double router = h * m->moe_experts;

    *macs = (dense * mats * h * m->ffn + moe * (mats * h * active + router)) / L;
    *params = (dense * mats * h * m->ffn + moe * (mats * h * stored + router)) / L;
    *act = (dense * 2 * mats * m->ffn + moe * 2 * mats * active) / L;
}

static double below_alpha(const vl_curve *cv, vl_work_growth g);

static void curve_logs(const vl_curve *cv, double *lx)
{
    for (int i = 0; i < cv->n && i < VL_CURVE_MAX; i++)
        lx[i] = log2(cv->x[i]);
}

vl_status vl_cost_init(vl_cost *c, const vl_config *cfg, vl_err *err)
{
    const vl_model_cfg *m = &cfg->model;
    double amacs, aact, fmacs, fparams, fact, h = m->hidden;

    memset(c, 0, sizeof *c);
    if (m->layers < 1 || m->hidden < 1 || m->heads < 1 || m->kv_heads < 1 || m->head_dim < 1 ||
        m->vocab < 1 || m->ffn_mats < 1)
        return vl_seterr(err, VL_ECONFIG,
                         "model: expected layers, hidden, heads, kv_heads, "
                         "head_dim, vocab and ffn_mats of at least 1");
    if (cfg->cluster.gpus_per_node < 1)
        return vl_seterr(err, VL_ECONFIG, "cluster.gpus_per_node: expected at least 1, got %d",
                         cfg->cluster.gpus_per_node);
    if (cfg->cluster.peak_tflops <= 0)
        return vl_seterr(err, VL_ECONFIG,
                         "cluster.peak_tflops: expected a positive number, "
                         "got %g",
                         cfg->cluster.peak_tflops);
    attn_shape(m, &amacs, &aact, &c->acoef);
    ffn_shape(m, &fmacs, &fparams, &fact);
    c->cfg = cfg;
    c->lin = 2 * (amacs + fmacs);
    c->head = 2 * h * m->vocab;
    c->act_bytes = cfg->cost.act_bytes > 0 ? cfg->cost.act_bytes : 8 * h + aact + fact;
    c->params_layer = amacs + fparams + 2 * h; /* + two RMSNorm weights */
    c->params_embed = h * m->vocab * (m->tied_embeddings ? 1 : 2) + h; /* + final norm */
    c->peak = cfg->cluster.peak_tflops * 1e12;
    curve_logs(&cfg->cluster.gemm_eff, c->lx_gemm);
    curve_logs(&cfg->cluster.attn_fwd_eff, c->lx_attn_fwd);
    curve_logs(&cfg->cluster.attn_bwd_eff, c->lx_attn_bwd);
    c->below_gemm = below_alpha(&cfg->cluster.gemm_eff, VL_WORK_LINEAR);
    c->below_attn_fwd = below_alpha(&cfg->cluster.attn_fwd_eff, VL_WORK_QUADRATIC);
    c->below_attn_bwd = below_alpha(&cfg->cluster.attn_bwd_eff, VL_WORK_QUADRATIC);
    c->attn_same_x = cfg->cluster.attn_fwd_eff.n == cfg->cluster.attn_bwd_eff.n;
    for (int i = 0; c->attn_same_x && i < cfg->cluster.attn_fwd_eff.n; i++)
        c->attn_same_x = cfg->cluster.attn_fwd_eff.x[i] == cfg->cluster.attn_bwd_eff.x[i];
    return VL_OK;
}

/* ---- FLOPs ---- */

double vl_cost_pairs(uint64_t a, uint64_t b)
{
    if (b <= a)
        return 0;
    if (b <= INT64_MAX)
        return vl_cost_pairs_i64((int64_t)a, (int64_t)b);
    return (double)(b - a) * ((double)a + (double)b + 1) / 2;
}

static double seg_pairs(const vl_seg *s)
{
    return vl_cost_pairs_i64(s->off, (int64_t)s->off + s->len);
}

double vl_cost_fwd_flops(const vl_cost *c, const vl_seg *segs, size_t n)
{
    double T = 0, P = 0;

    for (size_t i = 0; i < n; i++) {
        T += segs[i].len;
        P += seg_pairs(&segs[i]);
    }
    return c->cfg->model.layers * (c->lin * T + c->acoef * P) + c->head * T;
}

double vl_cost_model_flops(const vl_cost *c, const vl_seg *segs, size_t n)
{
    return 3 * vl_cost_fwd_flops(c, segs, n);
}

/* ---- efficiency curves ---- */

/* Below the first point of a curve, time is affine in the work: a fixed part (launches,
 * tile prologues, the weights a skinny GEMM reads whatever its rows) plus a part
 * proportional to the work (bandwidth-bound rows, keys and values), so a short shard is
 * never free.  Both come from the curve's first piece read as time against work: with
 * r = W(x1)/W(x0) the work ratio of its two ends, the fixed share of the time at x0 is
 *
 *      alpha = r (1 - y0/y1) / (r - 1),         clamped to [0, 1]
 *
 * and at u = W(x)/W(x0) < 1 the efficiency is y0 u / (alpha + (1 - alpha) u): the time
 * falls toward alpha times the time at x0, never to zero (docs/costmodel.md).  A curve of
 * one point, or one whose first piece falls, has alpha = 0 there: a plain clamp. */
static double below_alpha(const vl_curve *cv, vl_work_growth g)
{
    double x0 = cv->x[0], y0 = cv->y[0], r, alpha;

    if (cv->n < 2)
        return 0;
    r = g == VL_WORK_QUADRATIC ? (cv->x[1] / x0) * (cv->x[1] / x0) : cv->x[1] / x0;
    alpha = r * (1 - y0 / cv->y[1]) / (r - 1);
    return fmin(1.0, fmax(0.0, alpha));
}

/* The efficiency below the first point, alpha = below_alpha(cv, g). */
static double below_range(const vl_curve *cv, double x, vl_work_growth g, double alpha)
{
    double x0 = cv->x[0], y0 = cv->y[0], u;

    if (cv->n < 2 || x <= 0)
        return y0;
    u = g == VL_WORK_QUADRATIC ? (x / x0) * (x / x0) : x / x0;
    return y0 * u / (alpha + (1 - alpha) * u);
}

/* Where x lies on cv: the piece [x[i], x[i+1]) holding it (i >= 0), or one of these. */
#define PIECE_NONE (-1)  /* an empty curve: efficiency 1 */
#define PIECE_BELOW (-2) /* below the first point: the launch-bound model */
#define PIECE_ABOVE (-3) /* at or above the last point: held there */

static int piece_of(const vl_curve *cv, double x)
{
    int i = 0;

    if (cv->n < 1)
        return PIECE_NONE;
    if (x < cv->x[0])
        return PIECE_BELOW;
    if (x >= cv->x[cv->n - 1])
        return PIECE_ABOVE;
    while (x >= cv->x[i + 1])
        i++;
    return i;
}

/* Linear in log2 x on piece i; lg = log2 x, l0 and l1 the log2 of its ends.  The one
 * formula behind both lookups, so cached and uncached results are bit-identical. */
static double curve_lerp(const vl_curve *cv, int i, double lg, double l0, double l1)
{
    double t = (lg - l0) / (l1 - l0);
    return cv->y[i] + t * (cv->y[i + 1] - cv->y[i]);
}

/* cv at x, where piece_of puts it (i), with lx[] = log2 of cv's points (vl_cost) and
 * alpha = below_alpha(cv, g).  *lg caches log2 x: NaN until needed, so lookups outside
 * the points take none and the two attention curves, evaluated at the same length,
 * share one. */
static double value_on(const vl_curve *cv, const double *lx, double alpha, int i, double x,
                       vl_work_growth g, double *lg)
{
    if (i == PIECE_NONE)
        return 1.0;
    if (i == PIECE_BELOW)
        return below_range(cv, x, g, alpha);
    if (i == PIECE_ABOVE)
        return cv->y[cv->n - 1];
    if (isnan(*lg))
        *lg = log2(x);
    return curve_lerp(cv, i, *lg, lx[i], lx[i + 1]);
}

double vl_curve_eval(const vl_curve *cv, double x, vl_work_growth g)
{
    int i = piece_of(cv, x);
    double lg = NAN;

    if (i < 0)
        return value_on(cv, NULL, below_alpha(cv, g), i, x, g, &lg);
    return curve_lerp(cv, i, log2(x), log2(cv->x[i]), log2(cv->x[i + 1]));
}

/* vl_curve_eval through vl_cost's logs and alpha (value_on). */
static double curve_eval_lx(const vl_curve *cv, const double *lx, double alpha, double x,
                            vl_work_growth g, double *lg)
{
    return value_on(cv, lx, alpha, piece_of(cv, x), x, g, lg);
}

/* ---- communication ---- */

static bool comm_on(const vl_cost *c)
{
    return c->cfg->cost.comm && !c->cfg->cost.fit_set;
}

/* Alpha-beta time of op over n ranks `stride` apart (t = alpha + k(op,n)·S/busbw,
 * S the whole buffer, nccl-tests convention). */
static double coll_time(const vl_cost *c, vl_comm_op op, double S, int n, int stride)
{
    const vl_net_cfg *net = &c->cfg->cluster.net;
    int gpn = c->cfg->cluster.gpus_per_node, span = n * stride, m;
    double k, nic_gpu, bw;

    if (n <= 1 || S <= 0)
        return 0;
    if (op == VL_COMM_P2P)
        return span > gpn ? net->inter_p2p_alpha_us * 1e-6 + S / (net->inter_nic_bw * 1e9)
                          : net->intra_p2p_alpha_us * 1e-6 + S / (net->intra_p2p_bw * 1e9);
    k = (op == VL_COMM_AR ? 2.0 : 1.0) * (n - 1) / n;
    if (span <= gpn)
        return net->intra_alpha_us * 1e-6 +
               k * S /
                   ((op == VL_COMM_AR ? net->intra_ar_busbw : net->intra_coll_busbw) * 1e9);
    m = stride >= gpn ? 1 : gpn / stride; /* group members per node */
    if (m > n)
        m = n;
    nic_gpu = net->inter_nic_bw * net->inter_nics_per_node / gpn;
    if (op == VL_COMM_A2A) /* all-to-all cannot pool NICs: one share per GPU */
        return net->inter_alpha_us * 1e-6 + S * (n - m) / n / (nic_gpu * 1e9) +
               S * (m - 1) / n / (net->intra_coll_busbw * 1e9);
    bw = fmin(net->intra_coll_busbw, m * nic_gpu);
    return net->inter_alpha_us * 1e-6 + k * S / (bw * 1e9);
}

double vl_cost_comm_time(const vl_cost *c, vl_comm_op op, double bytes, int n)
{
    return comm_on(c) ? coll_time(c, op, bytes, n, 1) : 0;
}

/* Ulysses, one layer one way, for `rows` local tokens of one TP shard: an all-to-all
 * each for Q, K, V before attention and O after it (DeepSpeed's _SeqAllToAll, one call
 * per tensor, so one latency each), none hidden behind compute.  Each call also
 * rearranges its tensor on both sides (a transpose made contiguous before sending, its
 * inverse after receiving): two memory-bound passes that read and write the buffer,
 * 4 S bytes of device-memory traffic -- at SP 2 as long as the transfer itself, and
 * what the bare collective misses against measured Ulysses overheads (HBP Table 11). */
static double ulysses_layer_time(const vl_cost *c, double rows, double hq, double hkv, int sp,
                                 int tp)
{
    const double width[4] = {hq, hkv, hkv, hq};
    double hbm = c->cfg->cluster.hbm_gbs * 1e9, t = 0;

    for (int i = 0; i < 4; i++) {
        double S = rows * width[i] * BF16;
        t += coll_time(c, VL_COMM_A2A, S, sp, tp) + (hbm > 0 ? 4 * S / hbm : 0);
    }
    return t;
}

/* Exposed communication of one layer for one micro-batch of T tokens. */
typedef struct layer_comm {
    double fwd, bwd;
} layer_comm;

static layer_comm comm_per_layer(const vl_cost *c, double T, int tp, int sp, double att_f,
                                 double att_b)
{
    const vl_config *cfg = c->cfg;
    const vl_training_cfg *tr = &cfg->training;
    double hq = (double)cfg->model.heads * cfg->model.head_dim;
    double hkv = (double)cfg->model.kv_heads * cfg->model.head_dim, local = T / sp;
    layer_comm lc = {0, 0};

    if (!comm_on(c))
        return lc;
    if (sp > 1 && tr->sp_kind == VL_SP_ULYSSES) {
        double t = ulysses_layer_time(c, local / tp, hq, hkv, sp, tp);
        lc.fwd += t;
        lc.bwd += t;
    } else if (sp > 1) {
        /* ring: sp - 1 steps, KV forward and KV + dKV backward, each overlapped with
         * the attention block of its step (1/sp of the attention) up to overlap.cp, so
         * each step pays what its block does not cover, its latency included */
        double step = local * 2 * hkv * BF16 / tp;
        double f = coll_time(c, VL_COMM_P2P, step, sp, tp);
        double b = coll_time(c, VL_COMM_P2P, 2 * step, sp, tp);
        lc.fwd += (sp - 1) * fmax((1 - tr->overlap_cp) * f, f - att_f / sp);
        lc.bwd += (sp - 1) * fmax((1 - tr->overlap_cp) * b, b - att_b / sp);
    }
    if (tp > 1) {
        /* sequence-parallel TP: 2 all-gathers + 2 reduce-scatters each way */
        double S = local * cfg->model.hidden * BF16;
        double t =
            2 * (coll_time(c, VL_COMM_AG, S, tp, 1) + coll_time(c, VL_COMM_RS, S, tp, 1));
        lc.fwd += (1 - tr->overlap_tp) * t;
        lc.bwd += (1 - tr->overlap_tp) * t;
    }
    return lc;
}

/* ---- time of a micro-batch ---- */

/* Seconds of the token-linear work of one layer on x full-width tokens per GPU, its GEMMs
 * at efficiency eff.  cluster.elementwise_overhead stands for the norms, activations and
 * rotary embedding beside them: work in the tokens, bandwidth-bound, so below the GEMM
 * curve's first point it shrinks with the tokens (at the efficiency held there) instead
 * of growing with the GEMMs' launch-bound time.  From the first point up, (1 + overhead)
 * times the GEMMs, as calibrated. */
static double linear_time(const vl_cost *c, double x, double eff)
{
    const vl_cluster_cfg *cl = &c->cfg->cluster;
    double gemm = c->lin * x / (c->peak * eff);

    if (cl->gemm_eff.n < 1 || x >= cl->gemm_eff.x[0])
        return gemm * (1 + cl->elementwise_overhead);
    return gemm + c->lin * x / (c->peak * cl->gemm_eff.y[0]) * cl->elementwise_overhead;
}

/* The plan says what is checkpointed (its strategy turned training.recompute into
 * ckpt_layers), so a plan is costed as it would run, whatever config scores it. */
int vl__cost_ckpt(const vl_par *par, int layers)
{
    if (par->ckpt_layers < 0)
        return 0;
    return par->ckpt_layers < layers ? par->ckpt_layers : layers;
}

static vl_mb_time fitted_time(const vl_cost *c, double T, double P, double g, int layers,
                              int ckpt)
{
    const vl_cost_cfg *k = &c->cfg->cost;
    double f = (k->fit_a * P + k->fit_b * T) / g + k->fit_c;
    double b = (k->bwd_attn * k->fit_a * P + k->bwd_linear * k->fit_b * T) / g +
               k->bwd_linear * k->fit_c;
    vl_mb_time t = {0, 0, 0, 0, 0};

    t.recompute = ckpt * f;
    t.fwd = layers * f;
    t.bwd = layers * b + t.recompute;
    return t;
}

static vl_mb_time mb_time(const vl_cost *c, const vl_seg *segs, size_t n, const vl_par *par,
                          int layers, int last_stage);
static vl_mb_time analytic_time(const vl_cost *c, const vl_seg *segs, size_t n,
                                const vl_par *par, int layers, int last_stage, layer_comm *lc);

/* The LM head's forward on a GPU of g = tp·sp GPUs running T tokens at GEMM efficiency
 * eff, with cost.compute_scale. */
static double head_fwd(const vl_cost *c, double T, double g, double eff)
{
    const vl_cost_cfg *k = &c->cfg->cost;
    double s = k->head_scale > 0      ? k->head_scale
               : k->compute_scale > 0 ? k->compute_scale
                                      : 1.0;

    return c->head * T / g / (c->peak * eff) * s;
}

/* Under cost.schemes_with_head off a cost.schemes row times the decoder layers alone, as
 * calibrate's rows do (tools/profile_step.py profiles no head; vl_calib_predict_model): the
 * last stage adds the analytic head with calibration's correction, as an analytic rank
 * does.  Without it a measured rank skipped a head its analytic neighbour paid (27.6% of
 * the 0.5B model's linear work), and a calibrated configuration favoured the measured
 * scheme. */
/* The LM head's forward of `tokens` tokens on a rank of par, at the GEMM efficiency of
 * its tokens per GPU (0 for none). */
static double head_fwd_of(const vl_cost *c, double tokens, const vl_par *par)
{
    double lgT = NAN, g = (double)(par->tp > 1 ? par->tp : 1) * (par->sp > 1 ? par->sp : 1);

    if (!(tokens > 0))
        return 0;
    double eff = curve_eval_lx(&c->cfg->cluster.gemm_eff, c->lx_gemm, c->below_gemm,
                               tokens / g, VL_WORK_LINEAR, &lgT);
    return head_fwd(c, tokens, g, eff);
}

double vl_cost_head_time(const vl_cost *c, double tokens, const vl_par *par)
{
    return head_fwd_of(c, tokens, par) * (1 + c->cfg->cost.bwd_linear);
}

static vl_mb_time with_head(const vl_cost *c, vl_mb_time t, const vl_seg *segs, size_t n,
                            const vl_par *par, int last_stage)
{
    double T = 0;

    for (size_t i = 0; i < n && last_stage; i++)
        T += segs[i].len;
    double head = head_fwd_of(c, T, par);
    t.fwd += head;
    t.bwd += c->cfg->cost.bwd_linear * head;
    return t;
}

/* ZeRO-3 gathers the stage's parameters for every micro-batch's forward and again for
 * its backward: exposed communication of the micro-batch itself. */
vl_mb_time vl_cost_mb_time(const vl_cost *c, const vl_seg *segs, size_t n, const vl_par *par,
                           int layers, int last_stage)
{
    vl_mb_time t = mb_time(c, segs, n, par, layers, last_stage);
    double z3 = t.fwd > 0 ? vl_cost_z3_gather_time(c, par, layers) : 0;

    t.fwd += z3;
    t.bwd += z3;
    t.comm_fwd += z3;
    t.comm_bwd += z3;
    return t;
}

vl_mb_time vl_cost_scheme_comm(const vl_cost *c, const vl_seg *segs, size_t n,
                               const vl_par *par, int layers)
{
    layer_comm lc = {0, 0};
    vl_mb_time t = {0, 0, 0, 0, 0};

    analytic_time(c, segs, n, par, layers, 0, &lc);
    /* the same products the analytic time forms, so a comm-analytic row adds exactly
     * what the scheme is charged without a row */
    t.comm_fwd = layers * lc.fwd;
    t.comm_bwd = layers * lc.bwd;
    t.recompute = vl__cost_ckpt(par, layers) * lc.fwd;
    t.fwd = t.comm_fwd;
    t.bwd = t.comm_bwd + t.recompute;
    return t;
}

/* A measured row's compute plus the scheme's analytic communication (comm: analytic). */
static vl_mb_time with_comm(const vl_cost *c, vl_mb_time t, const vl_seg *segs, size_t n,
                            const vl_par *par, int layers)
{
    vl_mb_time m = vl_cost_scheme_comm(c, segs, n, par, layers);

    t.fwd += m.fwd;
    t.bwd += m.bwd;
    t.recompute += m.recompute;
    t.comm_fwd += m.comm_fwd;
    t.comm_bwd += m.comm_bwd;
    return t;
}

static vl_mb_time mb_time(const vl_cost *c, const vl_seg *segs, size_t n, const vl_par *par,
                          int layers, int last_stage)
{
    const vl_scheme *measured = vl_cost_scheme(c, par); /* cost.schemes (cost_pack.c) */
    if (measured) {
        vl_mb_time t = vl_cost_scheme_time(c, measured, segs, n, par, layers);
        if (!c->cfg->cost.schemes_with_head)
            t = with_head(c, t, segs, n, par, last_stage);
        return measured->comm_analytic ? with_comm(c, t, segs, n, par, layers) : t;
    }
    return analytic_time(c, segs, n, par, layers, last_stage, NULL);
}

/* The attention of one segment of p > 0 causal pairs on a GPU of g = tp·sp GPUs, its
 * equal-work length divided by rdiv (ring attention: sp): forward and backward seconds
 * per layer, before cost.compute_scale.  The memo (cost_memo.c) stores what this returns. */
static void attn_terms(const vl_cost *c, double p, double g, int rdiv, double *f, double *b)
{
    const vl_cluster_cfg *cl = &c->cfg->cluster;
    double len = sqrt(2 * p) / rdiv; /* equal-work length a GPU sees */
    double lg = NAN;
    int pf = piece_of(&cl->attn_fwd_eff, len);
    int pb = c->attn_same_x ? pf : piece_of(&cl->attn_bwd_eff, len);

    *f = c->acoef * p / g /
         (c->peak * value_on(&cl->attn_fwd_eff, c->lx_attn_fwd, c->below_attn_fwd, pf, len,
                             VL_WORK_QUADRATIC, &lg));
    *b = c->cfg->cost.bwd_attn * c->acoef * p / g /
         (c->peak * value_on(&cl->attn_bwd_eff, c->lx_attn_bwd, c->below_attn_bwd, pb, len,
                             VL_WORK_QUADRATIC, &lg));
}

/* attn_terms of segment s, from the plane pl (NULL: none) when s starts its sample. */
static void seg_terms(const vl_cost *c, vl_cost_memo_plane *pl, const vl_seg *s, double p,
                      double g, int rdiv, double *f, double *b)
{
    bool whole = pl && s->off == 0;

    if (whole && s->len < pl->cap && pl->fb[s->len][0] != 0) {
        *f = pl->fb[s->len][0];
        *b = pl->fb[s->len][1];
        return;
    }
    attn_terms(c, p, g, rdiv, f, b);
    if (whole && vl__cost_memo_reserve(pl, s->len)) {
        pl->fb[s->len][0] = *f;
        pl->fb[s->len][1] = *b;
    }
}

/* Tokens, causal pairs and the attention terms summed over the segments, in their
 * order (the sums are the same with or without c's memo). */
static void attn_sums(const vl_cost *c, const vl_seg *segs, size_t n, double g, int rdiv,
                      double *T, double *P, double *att_f, double *att_b)
{
    bool fit = c->cfg->cost.fit_set;
    vl_cost_memo_plane *pl = c->memo && !fit ? vl__cost_memo_plane(c->memo, g, rdiv) : NULL;
    double t = 0, pairs = 0, af = 0, ab = 0;

    for (size_t i = 0; i < n; i++) {
        double p = seg_pairs(&segs[i]), f, b;
        t += segs[i].len;
        pairs += p;
        if (p > 0 && !fit) {
            seg_terms(c, pl, &segs[i], p, g, rdiv, &f, &b);
            af += f;
            ab += b;
        }
    }
    *T = t;
    *P = pairs;
    *att_f = af;
    *att_b = ab;
}

/* The analytic time; *lc (when given) gets the exposed communication of one layer. */
static vl_mb_time analytic_time(const vl_cost *c, const vl_seg *segs, size_t n,
                                const vl_par *par, int layers, int last_stage, layer_comm *lc)
{
    const vl_config *cfg = c->cfg;
    const vl_cluster_cfg *cl = &cfg->cluster;
    int tp = par->tp > 1 ? par->tp : 1, sp = par->sp > 1 ? par->sp : 1;
    int ckpt = vl__cost_ckpt(par, layers);
    bool ring = sp > 1 && cfg->training.sp_kind == VL_SP_RING;
    double g = (double)tp * sp, T = 0, P = 0, att_f = 0, att_b = 0;
    double eff, lin, head, fix_f = cl->layer_fixed_us_fwd * 1e-6, lgT = NAN;
    vl_mb_time t = {0, 0, 0, 0, 0};
    layer_comm mine, *l = lc ? lc : &mine;

    attn_sums(c, segs, n, g, ring ? sp : 1, &T, &P, &att_f, &att_b);
    if (T == 0)
        return t;
    if (cfg->cost.fit_set)
        return fitted_time(c, T, P, g, layers, ckpt);
    /* each GPU's GEMMs are (T/sp) x (width/tp): as efficient as a full-width GEMM of the
     * same work, T/(sp tp) tokens, so small chunks under TP are not flattered */
    eff = curve_eval_lx(&cl->gemm_eff, c->lx_gemm, c->below_gemm, T / g, VL_WORK_LINEAR, &lgT);
    /* cost.compute_scale: calibration's correction of the analytic compute, so a scheme
     * it did not measure is not favoured or penalised beside one it did */
    double s = cfg->cost.compute_scale > 0 ? cfg->cost.compute_scale : 1.0;
    double fix_b = cl->layer_fixed_us_bwd * 1e-6 * s;
    lin = linear_time(c, T / g, eff) * s;
    head = last_stage ? head_fwd(c, T, g, eff) : 0;
    att_f *= s;
    att_b *= s;
    fix_f *= s;
    *l = comm_per_layer(c, T, tp, sp, att_f, att_b);
    t.comm_fwd = layers * l->fwd;
    t.comm_bwd = layers * l->bwd;
    t.recompute = ckpt * (lin + att_f + fix_f + l->fwd);
    t.fwd = layers * (lin + att_f + fix_f) + head + t.comm_fwd;
    t.bwd = layers * (cfg->cost.bwd_linear * lin + att_b + fix_b) +
            cfg->cost.bwd_linear * head + t.comm_bwd + t.recompute;
    return t;
}

/* The replicas a stage's states are sharded over, its parameters (the heaviest stage:
 * with pp = 1 it holds everything, else one embedding matrix), and the tp stride. */
static int sync_group(const vl_cost *c, const vl_par *par, int dp, int layers, double *psi,
                      int *tp)
{
    *tp = par->tp > 1 ? par->tp : 1;
    *psi = vl_cost_stage_params(c, par, layers, 1, par->pp <= 1);
    return comm_on(c) ? (dp > 1 ? dp : 1) * (par->sp > 1 ? par->sp : 1) : 1;
}

double vl_cost_dp_grad_time(const vl_cost *c, const vl_par *par, int dp, int layers)
{
    const vl_training_cfg *tr = &c->cfg->training;
    double psi;
    int tp, n = sync_group(c, par, dp, layers, &psi, &tp);

    if (n <= 1)
        return 0;
    /* DDP all-reduces the gradients; every sharded optimizer reduce-scatters them */
    return coll_time(c, tr->zero == VL_ZERO_0 ? VL_COMM_AR : VL_COMM_RS, tr->grad_bytes * psi,
                     n, tp);
}

double vl_cost_dp_param_time(const vl_cost *c, const vl_par *par, int dp, int layers)
{
    const vl_training_cfg *tr = &c->cfg->training;
    double psi;
    int tp, n = sync_group(c, par, dp, layers, &psi, &tp);

    /* ZeRO-0 keeps whole parameters; ZeRO-3 gathers them per micro-step (in the
     * micro-batch's own time, vl_cost_z3_gather_time) */
    if (n <= 1 || tr->zero == VL_ZERO_0 || tr->zero == VL_ZERO_3)
        return 0;
    return coll_time(c, VL_COMM_AG, BF16 * psi, n, tp);
}

double vl_cost_z3_gather_time(const vl_cost *c, const vl_par *par, int layers)
{
    const vl_training_cfg *tr = &c->cfg->training;
    double psi;
    int tp, n;

    if (tr->zero != VL_ZERO_3) /* before the stage's parameters: every micro-batch asks */
        return 0;
    n = sync_group(c, par, tr->dp, layers, &psi, &tp);
    if (n <= 1)
        return 0;
    return (1 - tr->overlap_dp) * coll_time(c, VL_COMM_AG, BF16 * psi, n, tp);
}

double vl_cost_dp_exposed(const vl_cost *c, double grad, double param)
{
    /* the reduction hides behind the backward, the parameter gather behind the next
     * forward, each by the configured fraction */
    return (1 - c->cfg->training.overlap_dp) * (grad + param);
}

double vl_cost_dp_grad_exposed(const vl_cost *c, double grad, double hide)
{
    /* the buckets are reduced while the backward that fills them runs: overlap.dp of the
     * reduction hides, but never more than that backward lasts -- a 40 ms reduce-scatter
     * behind a 15 ms backward leaves at least 25 ms (DeepSpeed ZeRO-2 with one short
     * sequence a micro-step) */
    return fmax((1 - c->cfg->training.overlap_dp) * grad, grad - fmax(hide, 0.0));
}

double vl_cost_dp_sync_time(const vl_cost *c, const vl_par *par, int dp, int layers)
{
    return vl_cost_dp_exposed(c, vl_cost_dp_grad_time(c, par, dp, layers),
                              vl_cost_dp_param_time(c, par, dp, layers));
}

double vl_cost_optimizer_time(const vl_cost *c, double state_bytes)
{
    const vl_cluster_cfg *cl = &c->cfg->cluster;
    double hbm = cl->hbm_gbs * 1e9;

    /* the step reads and writes every state byte of its shard once (Adam: master
     * weights, moments, the gradient in, the parameter out), plus its fixed cost */
    return c->cfg->cost.optimizer_fixed_ms * 1e-3 + (hbm > 0 ? 2 * state_bytes / hbm : 0);
}
