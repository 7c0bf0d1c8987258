/* lib/model/cost_mem.c -- the cost model's memory (docs/costmodel.md §7): activation and
 * model-state bytes of a rank and a stage, the usable device memory, and the fewest
 * checkpointed layers that fit.  Times are in cost.c. */
#include <math.h>

#include "cost.h"

#define BF16 VL_COST_BF16

/* ---- memory ---- */

double vl_cost_act_bytes(const vl_cost *c, uint64_t tokens, const vl_par *par, int layers,
                         int last_stage)
{
    const vl_config *cfg = c->cfg;
    double g = (double)(par->tp > 1 ? par->tp : 1) * (par->sp > 1 ? par->sp : 1);
    double per_tok = (double)tokens / g, h = cfg->model.hidden, V = cfg->model.vocab;
    double A = c->act_bytes, bytes;
    int ckpt = vl__cost_ckpt(par, layers);

    /* checkpointed layers keep their bf16 input only, plus one full layer while the
     * backward recomputes it */
    bytes = (layers - ckpt) * A + ckpt * 2 * h + (ckpt > 0 ? A : 0);
    bytes *= per_tok * cfg->training.act_mem_factor;
    /* the loss at its peak: cost.logits_bytes per vocabulary entry (6, also for 0 as a
     * config built in code leaves it: the bf16 logits and the fp32 copy the
     * cross-entropy turns into its softmax, both alive while it runs) and the head's
     * input */
    double lb = cfg->cost.logits_bytes > 0 ? cfg->cost.logits_bytes : 6;
    if (last_stage)
        bytes += (lb * V + 4 * h) * per_tok;
    return bytes;
}

double vl_cost_state_store_bytes(const vl_cost *c, uint64_t tokens, const vl_par *par,
                                 int layers)
{
    const vl_model_cfg *m = &c->cfg->model;
    double tp = par->tp > 1 ? par->tp : 1, sp = par->sp > 1 ? par->sp : 1;
    double heads = m->kv_heads, dk = m->head_dim, dv = m->head_dim, kvh, per_tok;

    if (m->mla_kv_lora > 0) { /* the expanded keys and values, as attn_shape counts */
        heads = m->heads;
        dk = (double)m->mla_qk_nope + m->mla_qk_rope;
        dv = m->mla_v_head;
    }
    kvh = heads > tp ? heads / tp : 1.0;
    per_tok = layers * BF16 * kvh * (dk + dv) + BF16 * m->hidden / tp;
    return per_tok * (double)tokens / sp;
}

/* Parameters held by one GPU of a stage: its layers and embedding share, split by TP. */
static double stage_params(const vl_cost *c, const vl_par *par, int layers, int first,
                           int last)
{
    const vl_model_cfg *m = &c->cfg->model;
    double vh = (double)m->vocab * m->hidden, psi = layers * c->params_layer;

    if (first)
        psi += vh;
    if (last) /* untied: the LM head; tied across stages: a copy of the embedding */
        psi += (!m->tied_embeddings || !first ? vh : 0) + m->hidden;
    return psi / (par->tp > 1 ? par->tp : 1);
}

double vl_cost_stage_params(const vl_cost *c, const vl_par *par, int layers, int first_stage,
                            int last_stage)
{
    return stage_params(c, par, layers, first_stage, last_stage);
}

double vl_cost_state_bytes(const vl_cost *c, const vl_par *par, int dp, int layers,
                           int first_stage, int last_stage)
{
    const vl_training_cfg *tr = &c->cfg->training;
    double d = (double)(dp > 1 ? dp : 1) * (par->sp > 1 ? par->sp : 1), per_param;

    /* bytes per parameter: ZeRO paper (bf16 params/grads + 12 B Adam) and Megatron's
     * distributed optimizer (bf16 params, grad_bytes gradients) */
    switch (tr->zero) {
    case VL_ZERO_0: per_param = 16; break;
    case VL_ZERO_1: per_param = 4 + 12 / d; break;
    case VL_ZERO_2: per_param = 2 + 14 / d; break;
    case VL_ZERO_3: per_param = 16 / d; break;
    default: per_param = 2 + tr->grad_bytes + 12 / d; break;
    }
    return per_param * stage_params(c, par, layers, first_stage, last_stage);
}

double vl_cost_mem_capacity(const vl_cost *c)
{
    const vl_cluster_cfg *cl = &c->cfg->cluster;

    return (cl->mem_gib - cl->mem_reserve_gib) * 1073741824.0;
}

/* ---- memory of a rank, and the fewest checkpointed layers that fit ---- */

int vl_cost_stage_layers(const vl_cost *c, int pp, int stage)
{
    int L = c->cfg->model.layers;
    return pp < 1 ? L : L / pp + (stage < L % pp);
}

double vl_cost_rank_peak_bytes(const vl_cost *c, uint64_t tokens, const vl_par *par, int ranks,
                               uint32_t mbs)
{
    int pp = par->pp < 1 ? 1 : par->pp;
    int first = vl_cost_stage_layers(c, pp, 0), last = vl_cost_stage_layers(c, pp, pp - 1);
    double inflight = (uint32_t)pp < mbs ? (double)pp : (double)(mbs ? mbs : 1);
    double m0 = vl_cost_state_bytes(c, par, ranks, first, 1, pp == 1) +
                inflight * vl_cost_act_bytes(c, tokens, par, first, pp == 1);

    if (pp > 1) {
        double ml = vl_cost_state_bytes(c, par, ranks, last, 0, 1) +
                    vl_cost_act_bytes(c, tokens, par, last, 1);
        if (ml > m0)
            m0 = ml;
    }
    return m0;
}

/* Memory falls as layers are checkpointed, so the first count that fits is the
 * fewest; a linear scan over at most L/pp + 1 counts is cheap next to planning. */
int vl_cost_fewest_ckpt(const vl_cost *c, uint64_t tokens, const vl_par *par, int ranks,
                        uint32_t mbs)
{
    vl_par q = *par;
    int pp = par->pp < 1 ? 1 : par->pp, most = vl_cost_stage_layers(c, pp, 0);
    double cap = vl_cost_mem_capacity(c);

    for (int k = 0; k <= most; k++) {
        q.ckpt_layers = k;
        if (vl_cost_rank_peak_bytes(c, tokens, &q, ranks, mbs) <= cap)
            return k;
    }
    return -1;
}
