/* lib/config/config_keys.c -- the key table: every config key with its type, range, default,
 * unit and help, in dump order.  Loading, --set, the dumps, vl_config_init_default and
 * man/config-section.mdoc all follow this one table; "did you mean" lives here too. */
#include <stdio.h>
#include <string.h>

#include "config_impl.h"

#define OFF(f) offsetof(vl_config, f)
/* number / bool / string keys: path, type, field, min, max, default, unit, help */
#define K(p, t, f, lo, hi, d, u, h)                                                           \
    {                                                                                         \
        p, t, OFF(f), lo, hi, NULL, 0, d, u, h                                                \
    }
#define KENUM(p, f, ch, d, h)                                                                 \
    {                                                                                         \
        p, VL_K_ENUM, OFF(f), 0, 0, ch, 0, d, "", h                                           \
    }
#define KCURVE(p, f, role, h)                                                                 \
    {                                                                                         \
        p, VL_K_CURVE, OFF(f), 0, 0, NULL, role, NULL, "", h                                  \
    }
#define KFIT(p, f, bit, h)                                                                    \
    {                                                                                         \
        p, VL_K_FIT, OFF(f), -1e9, 1e9, NULL, bit, NULL, "s", h                               \
    }

#define U32MAX 4294967295.0
#define SAFEINT 9007199254740991.0 /* 2^53 - 1: exact in a double and in any JSON reader */

static const char *const oversize_names[] = {"error", "truncate", "drop", "split", NULL};
static const char *const recompute_names[] = {"none", "selective", "full", "auto", NULL};
static const char *const zero_names[] = {"0", "1", "2", "3", "mdo", NULL};
static const char *const sp_kind_names[] = {"ulysses", "ring", NULL};
static const char *const dp_sync_names[] = {"iteration", "micro_step", NULL};
static const char *const pack_names[] = {"ffd",   "bfd", "ffs", "bfs", "isf",
                                         "spfhp", "wfd", "nf",  NULL};
static const char *const scope_names[] = {"epoch", "batch", NULL};
static const char *const balance_names[] = {"time", "tokens", "attention", NULL};
static const char *const deal_names[] = {"packs", "samples", NULL};

/* The enum fields are written through an int. */
_Static_assert(sizeof(vl_zero) == sizeof(int) && sizeof(vl_pack_algo) == sizeof(int) &&
                   sizeof(vl_oversize) == sizeof(int) && sizeof(vl_sp_kind) == sizeof(int) &&
                   sizeof(vl_recompute) == sizeof(int) && sizeof(vl_dp_sync) == sizeof(int) &&
                   sizeof(vl_pack_scope) == sizeof(int) &&
                   sizeof(vl_pack_balance) == sizeof(int) &&
                   sizeof(vl_pack_deal) == sizeof(int),
               "enums are int-sized");

const vl_key vl__keys[] = {
    /* model: model.preset first, so that explicit keys override the shape it loads */
    {"model.preset", VL_K_MODEL, OFF(model.preset), 0, 0, NULL, 0, "llama3.1-8b", "name",
     "Built-in model shape (see Presets).  Explicit model keys override it; custom keeps "
     "the current numbers."},
    K("model.layers", VL_K_INT, model.layers, 1, 1024, NULL, "", "Transformer layers L."),
    K("model.hidden", VL_K_INT, model.hidden, 1, 1048576, NULL, "", "Hidden size h."),
    K("model.ffn", VL_K_INT, model.ffn, 1, 4194304, NULL, "",
      "FFN intermediate width f of the dense layers."),
    K("model.ffn_mats", VL_K_INT, model.ffn_mats, 2, 3, NULL, "",
      "Weight matrices per FFN: 3 for SwiGLU, 2 for a GELU MLP."),
    K("model.heads", VL_K_INT, model.heads, 1, 4096, NULL, "", "Query heads a."),
    K("model.kv_heads", VL_K_INT, model.kv_heads, 1, 4096, NULL, "",
      "Key/value heads (GQA); equal to heads for multi-head attention."),
    K("model.head_dim", VL_K_INT, model.head_dim, 1, 4096, NULL, "",
      "Head dimension d; the attention width is h_q = heads * head_dim."),
    K("model.vocab", VL_K_INT, model.vocab, 1, 16777216, NULL, "", "Vocabulary size V."),
    K("model.tied_embeddings", VL_K_BOOL, model.tied_embeddings, 0, 0, NULL, "",
      "The input embedding and the LM head share one matrix."),
    K("model.moe.experts", VL_K_INT, model.moe_experts, 0, 65536, NULL, "",
      "Routed experts per MoE layer; 0 = dense model."),
    K("model.moe.top_k", VL_K_INT, model.moe_top_k, 0, 1024, NULL, "",
      "Routed experts each token visits."),
    K("model.moe.shared", VL_K_INT, model.moe_shared, 0, 1024, NULL, "",
      "Shared (always active) experts per MoE layer."),
    K("model.moe.ffn", VL_K_INT, model.moe_ffn, 0, 4194304, NULL, "",
      "Intermediate width of one expert."),
    K("model.moe.first_dense", VL_K_INT, model.moe_first_dense, 0, 1024, NULL, "",
      "Leading dense layers before the MoE layers."),
    K("model.mla.q_lora", VL_K_INT, model.mla_q_lora, 0, 1048576, NULL, "",
      "MLA query compression rank; 0 = queries projected directly."),
    K("model.mla.kv_lora", VL_K_INT, model.mla_kv_lora, 0, 1048576, NULL, "",
      "MLA key/value compression rank; 0 = standard attention (no MLA)."),
    K("model.mla.qk_nope", VL_K_INT, model.mla_qk_nope, 0, 4096, NULL, "",
      "MLA per-head query/key width without rotary embedding."),
    K("model.mla.qk_rope", VL_K_INT, model.mla_qk_rope, 0, 4096, NULL, "",
      "MLA per-head rotary query/key width."),
    K("model.mla.v_head", VL_K_INT, model.mla_v_head, 0, 4096, NULL, "",
      "MLA per-head value width."),

    /* cluster: cluster.gpu first, for the same reason as model.preset */
    K("cluster.gpus", VL_K_INT, cluster.gpus, 1, 1048576, "32", "GPUs", "GPUs in the job."),
    K("cluster.gpus_per_node", VL_K_INT, cluster.gpus_per_node, 1, 1024, "8", "GPUs",
      "GPUs per node (one NVLink domain); larger groups cross the network."),
    {"cluster.gpu", VL_K_GPU, OFF(cluster.gpu), 0, 0, NULL, 0, "h100-80gb", "name",
     "GPU preset (see Presets): loads every cluster key below.  Explicit keys override "
     "it; custom keeps the current numbers."},
    K("cluster.peak_tflops", VL_K_DOUBLE, cluster.peak_tflops, 1e-3, 1e6, NULL, "TFLOP/s",
      "Dense BF16 peak per GPU."),
    K("cluster.mem_gib", VL_K_DOUBLE, cluster.mem_gib, 1e-3, 1e6, NULL, "GiB",
      "Device memory per GPU."),
    K("cluster.mem_reserve_gib", VL_K_DOUBLE, cluster.mem_reserve_gib, 0, 1e6, NULL, "GiB",
      "Memory held back for the CUDA context, NCCL buffers and fragmentation."),
    K("cluster.hbm_gbs", VL_K_DOUBLE, cluster.hbm_gbs, 1e-3, 1e7, NULL, "GB/s",
      "Device memory bandwidth."),
    KCURVE("cluster.gemm_eff", cluster.gemm_eff, VL_CURVE_GEMM,
           "GEMM efficiency (fraction of peak) against tokens per GPU in the micro-batch."),
    KCURVE("cluster.attn_fwd_eff", cluster.attn_fwd_eff, VL_CURVE_FWD,
           "Causal attention forward efficiency against the sequence length a GPU sees."),
    KCURVE("cluster.attn_bwd_eff", cluster.attn_bwd_eff, VL_CURVE_BWD,
           "Causal attention backward efficiency, same axis."),
    K("cluster.elementwise_overhead", VL_K_DOUBLE, cluster.elementwise_overhead, 0, 10, NULL,
      "fraction", "Added to the linear time for norms, RoPE, activations and the loss."),
    K("cluster.layer_fixed_us.fwd", VL_K_DOUBLE, cluster.layer_fixed_us_fwd, 0, 1e6, NULL,
      "us", "Fixed forward time per layer and micro-batch (launches, small kernels)."),
    K("cluster.layer_fixed_us.bwd", VL_K_DOUBLE, cluster.layer_fixed_us_bwd, 0, 1e6, NULL,
      "us", "Fixed backward time per layer and micro-batch."),
    K("cluster.net.intra.coll_busbw", VL_K_DOUBLE, cluster.net.intra_coll_busbw, 1e-3, 1e6,
      NULL, "GB/s", "Bus bandwidth of all-gather, reduce-scatter and all-to-all in a node."),
    K("cluster.net.intra.ar_busbw", VL_K_DOUBLE, cluster.net.intra_ar_busbw, 1e-3, 1e6, NULL,
      "GB/s", "All-reduce bus bandwidth in a node."),
    K("cluster.net.intra.p2p_bw", VL_K_DOUBLE, cluster.net.intra_p2p_bw, 1e-3, 1e6, NULL,
      "GB/s", "Point-to-point bandwidth in a node."),
    K("cluster.net.intra.alpha_us", VL_K_DOUBLE, cluster.net.intra_alpha_us, 0, 1e6, NULL,
      "us", "Latency of a collective in a node."),
    K("cluster.net.intra.p2p_alpha_us", VL_K_DOUBLE, cluster.net.intra_p2p_alpha_us, 0, 1e6,
      NULL, "us", "Latency of a point-to-point transfer in a node."),
    K("cluster.net.inter.nic_bw", VL_K_DOUBLE, cluster.net.inter_nic_bw, 1e-3, 1e6, NULL,
      "GB/s", "Bandwidth of one network adapter."),
    K("cluster.net.inter.nics_per_node", VL_K_INT, cluster.net.inter_nics_per_node, 1, 64,
      NULL, "", "Network adapters per node."),
    K("cluster.net.inter.alpha_us", VL_K_DOUBLE, cluster.net.inter_alpha_us, 0, 1e6, NULL,
      "us", "Latency of a collective across nodes."),
    K("cluster.net.inter.p2p_alpha_us", VL_K_DOUBLE, cluster.net.inter_p2p_alpha_us, 0, 1e6,
      NULL, "us", "Latency of a point-to-point transfer across nodes."),

    /* training */
    K("training.dp", VL_K_INT, training.dp, 0, 1048576, "0", "",
      "Data-parallel degree; 0 = cluster.gpus / (tp * pp * sp)."),
    K("training.tp", VL_K_INT, training.tp, 1, 1024, "1", "", "Tensor-parallel degree."),
    K("training.pp", VL_K_INT, training.pp, 1, 1024, "1", "", "Pipeline-parallel degree."),
    K("training.sp", VL_K_INT, training.sp, 1, 1024, "1", "",
      "Sequence/context-parallel degree (1 = off); its kind is training.sp_kind."),
    KENUM("training.sp_kind", training.sp_kind, sp_kind_names, "ulysses",
          "ulysses (all-to-all over heads; sp must divide kv_heads) or ring (KV ring "
          "passing)."),
    K("training.max_seq_len", VL_K_U32, training.max_seq_len, 1, U32MAX, "8192", "tokens",
      "Capacity of one packed micro-batch."),
    K("training.global_batch", VL_K_U32, training.global_batch, 0, U32MAX, "0", "samples",
      "Samples per iteration; setting it non-zero sets global_tokens to 0."),
    K("training.global_tokens", VL_K_U64, training.global_tokens, 0, SAFEINT, "2097152",
      "tokens", "Token budget per iteration; setting it non-zero sets global_batch to 0."),
    K("training.micro_batch", VL_K_U32, training.micro_batch, 1, 1048576, "1", "samples",
      "Samples per micro-batch for padded (unpacked) batching."),
    KENUM("training.oversize", training.oversize, oversize_names, "error",
          "A sample longer than a strategy can place: error, truncate, drop (counted in "
          "the metrics) or split (pack only)."),
    K("training.seed", VL_K_U64, training.seed, 0, SAFEINT, "0", "",
      "Seed of every random choice (epoch order, shuffles)."),
    K("training.epochs", VL_K_INT, training.epochs, 1, 1000000, "1", "", "Epochs to plan."),
    KENUM("training.zero", training.zero, zero_names, "2",
          "Optimizer-state sharding: DeepSpeed ZeRO stage 0..3, or mdo (Megatron "
          "distributed optimizer)."),
    KENUM("training.recompute", training.recompute, recompute_names, "auto",
          "Activation recomputation: none, selective (FlashAttention: same memory as none), "
          "full (keep only layer inputs) or auto (the fewest checkpointed layers that fit)."),
    K("training.act_mem_factor", VL_K_DOUBLE, training.act_mem_factor, 0.01, 100, "1.1", "",
      "Multiplier on activation bytes (fp32 statistics, RoPE caches, fragmentation)."),
    K("training.grad_bytes", VL_K_INT, training.grad_bytes, 2, 4, "4", "bytes",
      "Bytes per gradient element (2 or 4) for zero: mdo and the gradient reduce-scatter."),
    K("training.overlap.cp", VL_K_DOUBLE, training.overlap_cp, 0, 1, "1.0", "fraction",
      "Share of ring context-parallel traffic hidden under attention."),
    K("training.overlap.tp", VL_K_DOUBLE, training.overlap_tp, 0, 1, "0.0", "fraction",
      "Share of tensor-parallel traffic hidden under compute."),
    K("training.overlap.dp", VL_K_DOUBLE, training.overlap_dp, 0, 1, "0.8", "fraction",
      "Share of the gradient synchronisation hidden under the backward (never more than "
      "the backward lasts)."),
    KENUM("training.dp_sync", training.dp_sync, dp_sync_names, "iteration",
          "When data-parallel ranks synchronise gradients: once per iteration, or after every "
          "micro-step (every rank then waits for the slowest one's micro-step)."),

    /* cost */
    {"cost.fit", VL_K_FITNULL, OFF(cost.fit_set), 0, 0, NULL, 0, "null", "",
     "Fitted per-layer time a, b, c replacing the analytic model; null = analytic."},
    KFIT("cost.fit.a", cost.fit_a, 1, "Seconds per causal query-key pair per layer."),
    KFIT("cost.fit.b", cost.fit_b, 2, "Seconds per token per layer."),
    KFIT("cost.fit.c", cost.fit_c, 4, "Seconds per micro-batch per layer."),
    {"cost.schemes", VL_K_SCHEMES, OFF(cost), 0, 0, NULL, 0, "null", "ms",
     "Measured times per parallel scheme, [{tp, pp, sp, a, b, c}, ...]: one sequence of l "
     "tokens takes a*l^2 + b*l + c ms forward+backward on one pipeline stage; replaces the "
     "analytic time of ranks with that <tp, pp, sp> (`vlplan calibrate` writes them).  A row "
     "with comm: analytic times one GPU's compute alone and the scheme's analytic "
     "communication is added to it."},
    K("cost.comm", VL_K_BOOL, cost.comm, 0, 0, "on", "", "Model communication time."),
    K("cost.bwd_linear", VL_K_DOUBLE, cost.bwd_linear, 0, 100, "2.0", "",
      "Backward/forward ratio of the token-linear work."),
    K("cost.bwd_attn", VL_K_DOUBLE, cost.bwd_attn, 0, 100, "2.5", "",
      "Backward/forward ratio of the attention work (FlashAttention recomputes scores)."),
    K("cost.act_bytes", VL_K_DOUBLE, cost.act_bytes, 0, 1e12, "0", "bytes",
      "Activation bytes per token per layer; 0 = derived from the shape."),
    K("cost.optimizer_fixed_ms", VL_K_DOUBLE, cost.optimizer_fixed_ms, 0, 1e6, "1", "ms",
      "Fixed cost of one optimizer step (kernel launches of a fused multi-tensor Adam), "
      "beside its state bytes read and written at cluster.hbm_gbs."),
    K("cost.compute_scale", VL_K_DOUBLE, cost.compute_scale, 1e-6, 1e6, "1", "",
      "Factor of the analytic compute time (GEMMs, attention, fixed layer time; not "
      "communication) of ranks whose <tp, pp, sp> has no cost.schemes row: `vlplan "
      "calibrate` sets it to what the measured schemes say of the analytic model, so "
      "unmeasured schemes are corrected alike."),
    K("cost.head_scale", VL_K_DOUBLE, cost.head_scale, 0, 1e6, "0", "",
      "Factor of the analytic LM head and loss time (measured / analytic, what `vlplan "
      "calibrate` writes from rows with head = 1); 0: cost.compute_scale."),
    K("cost.schemes_with_head", VL_K_BOOL, cost.schemes_with_head, 0, 0, "on", "",
      "Whether a cost.schemes row's time includes the LM head and loss of a last stage (as "
      "measured whole stages do); off: the rows time decoder layers only, as `vlplan "
      "calibrate` measures them, and the last stage adds the analytic head."),
    K("cost.logits_bytes", VL_K_DOUBLE, cost.logits_bytes, 0.5, 64, "6", "bytes",
      "Bytes per token per vocabulary entry the loss holds at its peak on the last stage: "
      "6 = bf16 logits + their fp32 copy (Megatron's cross-entropy), 4 = the fp32 logits "
      "alone (Megatron's estimator), 12 = an unfused HF transformers loss."),

    /* pack */
    KENUM("pack.algo", pack.algo, pack_names, "ffd", "Bin-packing algorithm of the packers."),
    K("pack.isf_iters", VL_K_INT, pack.isf_iters, 0, 1000000, "50", "",
      "ISF refinement passes."),
    K("pack.isf_slack", VL_K_U32, pack.isf_slack, 0, U32MAX, "128", "tokens",
      "ISF accepts a bin holding at least capacity minus this many tokens."),
    K("pack.max_samples", VL_K_U32, pack.max_samples, 0, U32MAX, "0", "samples",
      "Most samples in one pack (axolotl's bin_size, Graphcore's max_sequences_per_pack); "
      "0 = no limit."),
    KENUM("pack.scope", pack.scope, scope_names, "epoch",
          "What the pack strategy packs at once: the epoch (or pack.window of it), then "
          "whole packs into iterations; or each global batch on its own."),
    K("pack.window", VL_K_U64, pack.window, 0, SAFEINT, "0", "samples",
      "Epoch scope: samples of the epoch order packed together; 0 = the whole epoch."),
    KENUM("pack.balance", pack.balance, balance_names, "time",
          "What the pack strategy balances when it deals packs to ranks: modelled time "
          "(attention included), tokens, or attention pairs (sum of squared lengths)."),
    KENUM("pack.deal", pack.deal, deal_names, "samples",
          "Epoch scope: deal whole packs to ranks, or an iteration's samples (each rank "
          "packing its own in the same micro-batch slots) where that balances better."),
    {NULL, VL_K_INT, 0, 0, 0, NULL, 0, NULL, NULL, NULL},
};

size_t vl__nkeys(void)
{
    return sizeof vl__keys / sizeof vl__keys[0] - 1;
}

int vl__key_find(const char *path)
{
    for (size_t i = 0; vl__keys[i].path != NULL; i++)
        if (strcmp(vl__keys[i].path, path) == 0)
            return (int)i;
    return -1;
}

bool vl__key_is_section(const char *path)
{
    size_t n = strlen(path);

    for (size_t i = 0; vl__keys[i].path != NULL; i++)
        if (strncmp(vl__keys[i].path, path, n) == 0 && vl__keys[i].path[n] == '.')
            return true;
    return false;
}

/* Levenshtein distance of two short words; long words count as far apart. */
static size_t distance(const char *a, size_t na, const char *b, size_t nb)
{
    size_t row[65], prev, tmp;

    if (na > 64 || nb > 64)
        return 99;
    for (size_t j = 0; j <= nb; j++)
        row[j] = j;
    for (size_t i = 1; i <= na; i++) {
        prev = row[0];
        row[0] = i;
        for (size_t j = 1; j <= nb; j++) {
            size_t best = prev + (a[i - 1] != b[j - 1]);
            if (row[j] + 1 < best)
                best = row[j] + 1;
            if (row[j - 1] + 1 < best)
                best = row[j - 1] + 1;
            tmp = row[j];
            row[j] = best;
            prev = tmp;
        }
    }
    return row[nb];
}

/* Close enough to suggest: at most 2 edits, 1 for short words, never all of it. */
static bool close_enough(size_t d, size_t len)
{
    return d < len && d <= (len <= 3 ? 1u : 2u);
}

const char *vl__suggest(const char *word, const char *const *names, size_t n)
{
    size_t best = 99, len = strlen(word);
    const char *pick = NULL;

    for (size_t i = 0; i < n; i++) {
        size_t d = distance(word, len, names[i], strlen(names[i]));
        if (d < best) {
            best = d;
            pick = names[i];
        }
    }
    return pick != NULL && close_enough(best, len) ? pick : NULL;
}

/* Siblings first ("training.ppp" -> "training.pp", "training.overlp" ->
 * "training.overlap"), then the same leaf name in another section ("cluster.zero" ->
 * "training.zero"). */
bool vl__key_suggest(const char *path, char *out, size_t n)
{
    const char *dot = strrchr(path, '.'), *leaf = dot ? dot + 1 : path;
    size_t plen = dot ? (size_t)(dot - path) + 1 : 0, llen = strlen(leaf);
    size_t best = 99, blen = 0;
    const char *pick = NULL;

    for (size_t i = 0; vl__keys[i].path != NULL; i++) {
        const char *k = vl__keys[i].path, *comp = k + plen, *end;
        size_t clen, d;
        if (strncmp(k, path, plen) != 0)
            continue;
        end = strchr(comp, '.');
        clen = end ? (size_t)(end - comp) : strlen(comp);
        d = distance(leaf, llen, comp, clen);
        if (d < best) {
            best = d;
            pick = k;
            blen = plen + clen;
        }
    }
    if (pick != NULL && close_enough(best, llen)) {
        snprintf(out, n, "%.*s", (int)blen, pick);
        return true;
    }
    for (size_t i = 0; vl__keys[i].path != NULL; i++) {
        const char *k = strrchr(vl__keys[i].path, '.');
        if (k != NULL && strcmp(k + 1, leaf) == 0 && strcmp(vl__keys[i].path, path) != 0) {
            snprintf(out, n, "%s", vl__keys[i].path);
            return true;
        }
    }
    return false;
}

bool vl_config_key_at(size_t i, vl_key_info *info)
{
    static const char *const types[] = {
        [VL_K_INT] = "int",       [VL_K_U32] = "uint",        [VL_K_U64] = "uint",
        [VL_K_DOUBLE] = "number", [VL_K_BOOL] = "bool",       [VL_K_ENUM] = "enum",
        [VL_K_MODEL] = "name",    [VL_K_GPU] = "name",        [VL_K_CURVE] = "curve",
        [VL_K_FIT] = "number",    [VL_K_FITNULL] = "mapping", [VL_K_SCHEMES] = "list",
    };
    const vl_key *k;

    if (i >= vl__nkeys())
        return false;
    k = &vl__keys[i];
    *info = (vl_key_info){k->path, types[k->type], k->choices, k->def, k->unit, k->help};
    return true;
}
