/* lib/config/config.h -- the effective configuration: built-in presets, YAML (libyaml),
 * --set overrides, validation, and dumps (YAML for `vlplan config --dump`, JSON for
 * the plan header).  Every key has a documented default (man/vlplan.1, CONFIGURATION).
 * Units: tokens, bytes, GiB (2^30 B) for memory sizes, GB/s (1e9 B/s) for bandwidths,
 * microseconds for latencies, TFLOP/s for peak compute. */
#ifndef VLPLAN_CONFIG_H
#define VLPLAN_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "err.h"

#define VL_NAME_MAX 48
#define VL_TEXT_MAX 256      /* VL_P_TEXT parameters: up to 255 characters */
#define VL_TABLE_COLS_MAX 32 /* columns of a table-valued parameter */
#define VL_CURVE_MAX 12

/* Efficiency as a function of a length (tokens): points sorted by x, interpolated
 * linearly in log2(x), clamped outside. */
/* The largest seed: training.seed is written into plan headers, and every JSON reader
 * must read it back exactly (2^53 - 1). */
#define VL_SEED_MAX 9007199254740991ull

typedef struct vl_curve {
    int n;
    double x[VL_CURVE_MAX];
    double y[VL_CURVE_MAX];
} vl_curve;

typedef struct vl_model_cfg {
    char preset[VL_NAME_MAX]; /* name of the built-in shape it came from, or "custom" */
    int layers, hidden, ffn, ffn_mats, heads, kv_heads, head_dim;
    int vocab;
    bool tied_embeddings;
    /* MoE (experts = 0: dense) */
    int moe_experts, moe_top_k, moe_shared, moe_ffn, moe_first_dense;
    /* MLA (kv_lora = 0: standard attention) */
    int mla_q_lora, mla_kv_lora, mla_qk_nope, mla_qk_rope, mla_v_head;
} vl_model_cfg;

typedef struct vl_net_cfg {
    double intra_coll_busbw, intra_ar_busbw, intra_p2p_bw; /* GB/s */
    double intra_alpha_us, intra_p2p_alpha_us;
    double inter_nic_bw; /* GB/s per NIC */
    int inter_nics_per_node;
    double inter_alpha_us, inter_p2p_alpha_us;
} vl_net_cfg;

typedef struct vl_cluster_cfg {
    int gpus, gpus_per_node;
    char gpu[VL_NAME_MAX]; /* GPU preset name, or "custom" */
    double peak_tflops;    /* dense bf16 */
    double mem_gib, mem_reserve_gib;
    double hbm_gbs;
    vl_curve gemm_eff, attn_fwd_eff, attn_bwd_eff;
    double elementwise_overhead;
    double layer_fixed_us_fwd, layer_fixed_us_bwd;
    vl_net_cfg net;
} vl_cluster_cfg;

/* SPLIT: cut into independent pieces of at most the limit (strategies that can: pack). */
typedef enum {
    VL_OVERSIZE_ERROR,
    VL_OVERSIZE_TRUNCATE,
    VL_OVERSIZE_DROP,
    VL_OVERSIZE_SPLIT
} vl_oversize;
/* AUTO: the strategy checkpoints the fewest layers that fit memory (vl_cost_fewest_ckpt). */
typedef enum {
    VL_RECOMPUTE_NONE,
    VL_RECOMPUTE_SELECTIVE,
    VL_RECOMPUTE_FULL,
    VL_RECOMPUTE_AUTO
} vl_recompute;
typedef enum { VL_ZERO_0, VL_ZERO_1, VL_ZERO_2, VL_ZERO_3, VL_ZERO_MDO } vl_zero;
typedef enum { VL_SP_ULYSSES, VL_SP_RING } vl_sp_kind;
/* When data-parallel ranks synchronise gradients: once per iteration (Megatron), or
 * after every micro-step (DeepSpeed ZeRO-2 and others that reduce as they go). */
typedef enum { VL_DP_SYNC_ITERATION, VL_DP_SYNC_MICRO_STEP } vl_dp_sync;

typedef struct vl_training_cfg {
    int dp, tp, pp, sp; /* dp = 0 in YAML means gpus / (tp·pp·sp) */
    vl_sp_kind sp_kind;
    uint32_t max_seq_len;   /* tokens per packed micro-batch (capacity) */
    uint32_t global_batch;  /* samples per iteration (0 = use global_tokens) */
    uint64_t global_tokens; /* token budget per iteration (0 = use global_batch) */
    uint32_t micro_batch;   /* samples per micro-batch for padded (unpacked) batching */
    vl_oversize oversize;
    uint64_t seed;
    int epochs;
    vl_zero zero;
    vl_recompute recompute;
    double act_mem_factor;
    int grad_bytes;
    double overlap_cp, overlap_tp, overlap_dp; /* fraction of comm hidden under compute */
    vl_dp_sync dp_sync;
} vl_training_cfg;

/* One measured parallel scheme (Hydraulis appendix B.2): the forward+backward time of
 * one sequence of l tokens on one pipeline stage is T(l) = a·l² + b·l + c milliseconds;
 * a micro-batch of sequences l_i costs Σ (a·l_i² + b·l_i) + c. */
#define VL_SCHEMES_MAX 64
typedef struct vl_scheme {
    int tp, pp, sp;
    double a, b, c;     /* ms per token², ms per token, ms per micro-batch */
    bool comm_analytic; /* comm: analytic -- a, b, c time one GPU's compute alone and the
                           * cost model adds the scheme's analytic communication (a row
                           * without it is the scheme's whole time) */
} vl_scheme;

typedef struct vl_cost_cfg {
    bool fit_set;               /* a, b, c given: T_layer(l) = a·pairs + b·tokens + c */
    double fit_a, fit_b, fit_c; /* seconds per (pair, token, micro-batch) per layer */
    bool comm;                  /* model communication */
    double bwd_linear, bwd_attn;
    double act_bytes;          /* bytes/token/layer; 0 = derived from the model shape */
    double logits_bytes;       /* bytes/token/vocab entry held for the loss (last stage) */
    double optimizer_fixed_ms; /* the optimizer step's fixed cost (launches) per iteration */
    double compute_scale;      /* factor of the analytic compute of schemes without a
                                 * cost.schemes row (`vlplan calibrate` writes it) */
    double head_scale;         /* factor of the analytic LM head; 0: compute_scale */
    bool schemes_with_head;    /* cost.schemes rows time the LM head too (off: the
                                 * last stage adds the analytic head) */
    int nschemes;              /* cost.schemes: fitted times per <tp, pp, sp> */
    vl_scheme schemes[VL_SCHEMES_MAX];
} vl_cost_cfg;

/* SPFHP is Graphcore's algorithm as published; WFD is the worst-fit-decreasing variant
 * vlplan called spfhp before; NF is next fit in the sampler's order (no reordering). */
typedef enum {
    VL_PACK_FFD,
    VL_PACK_BFD,
    VL_PACK_FFS,
    VL_PACK_BFS,
    VL_PACK_ISF,
    VL_PACK_SPFHP,
    VL_PACK_WFD,
    VL_PACK_NF
} vl_pack_algo;
/* What `pack` packs at once: the whole epoch (or pack.window samples of it), or each
 * global batch on its own (the behaviour before epoch packing). */
typedef enum { VL_PACK_SCOPE_EPOCH, VL_PACK_SCOPE_BATCH } vl_pack_scope;
/* What `pack` balances when it deals packs to ranks. */
typedef enum { VL_BALANCE_TIME, VL_BALANCE_TOKENS, VL_BALANCE_ATTENTION } vl_pack_balance;
/* What `pack` deals to ranks in epoch scope: whole packs, or an iteration's samples
 * (packed again on each rank) where that balances better in the same slots. */
typedef enum { VL_DEAL_PACKS, VL_DEAL_SAMPLES } vl_pack_deal;

typedef struct vl_pack_cfg {
    vl_pack_algo algo;
    int isf_iters;           /* ISF refinement passes C (default 50) */
    uint32_t isf_slack;      /* ISF accepts a pack with ≥ cap − slack tokens (128) */
    uint32_t max_samples;    /* samples per pack at most (0: no limit) */
    vl_pack_scope scope;     /* epoch (default) or batch */
    uint64_t window;         /* epoch scope: samples packed together (0: the epoch) */
    vl_pack_balance balance; /* dealing objective (default time) */
    vl_pack_deal deal;       /* epoch scope: whole packs or samples to ranks */
} vl_pack_cfg;

typedef struct vl_config vl_config; /* full struct below; opaque parts in config.c */

/* Per-strategy parameters are declared by each strategy as a vl_param table; the
 * config keeps the raw YAML node of each strategy section and binds it on request. */
/*  VL_P_AUTO_UINT: a uint, or "auto" stored as 0.
 *  VL_P_TEXT:  a string of up to VL_TEXT_MAX - 1 characters into char[VL_TEXT_MAX].
 *  VL_P_TABLE: a list of mappings of numbers, e.g. [{len: 16384, time_s: 1.2}, ...];
 *              nothing is stored in opts (offset and def unused): bind checks its shape
 *              (choices = the column names) and that every cell is a number in
 *              [min, max] (both 0: any finite number); read it with vl_config_table. */
typedef enum {
    VL_P_INT,
    VL_P_UINT,
    VL_P_DOUBLE,
    VL_P_BOOL,
    VL_P_ENUM,
    VL_P_STRING,
    VL_P_AUTO_UINT,
    VL_P_TEXT,
    VL_P_TABLE
} vl_ptype;

typedef struct vl_param {
    const char *key; /* key inside the section; NULL ends a table */
    vl_ptype type;
    size_t offset;              /* offsetof(opts struct, field): int, uint32_t, double, bool,
                                 * int (enum index), char[VL_NAME_MAX] or char[VL_TEXT_MAX] */
    double min, max;            /* inclusive range for numbers (VL_P_TABLE: every cell) */
    const char *const *choices; /* NULL-terminated: VL_P_ENUM names (also allowed for
                                 * VL_P_STRING), VL_P_TABLE column names */
    const char *def;            /* default, as YAML text */
    const char *help;           /* one line for --help, the man page and dumps */
} vl_param;

struct vl_config {
    vl_model_cfg model;
    vl_cluster_cfg cluster;
    vl_training_cfg training;
    vl_cost_cfg cost;
    vl_pack_cfg pack;
    char source[256]; /* file it came from, or "<built-in>" */
    void *raw;        /* parsed sections kept for strategy binding (config.c) */
};

/** Fill cfg with the built-in default preset (documented in the man page):
 *  llama3.1-8b on 32 h100-80gb.  Free with vl_config_free. */
vl_status vl_config_init_default(vl_config *cfg, vl_err *err);

/** Overlay a YAML file on cfg.  Unknown keys, wrong types, out-of-range values and YAML
 *  syntax errors are VL_ECONFIG with "FILE:LINE:COL: ..."; a missing file VL_ENOINPUT. */
vl_status vl_config_load_file(vl_config *cfg, const char *path, vl_err *err);

/** Overlay YAML text (tests, presets); name is used in messages. */
vl_status vl_config_load_string(vl_config *cfg, const char *yaml, const char *name,
                                vl_err *err);

/** Apply one "a.b.c=value" override (value parsed as a YAML scalar or flow node),
 *  the same key paths as the YAML.  Errors name the key: "--set training.pp=x: ...". */
vl_status vl_config_set(vl_config *cfg, const char *assignment, vl_err *err);

/** Derive what depends on other fields (dp from gpus, model/gpu presets) and check
 *  cross-field constraints (degrees divide gpus, sp divides kv_heads, ...).  Call once
 *  after all overlays and before use. */
vl_status vl_config_finalize(vl_config *cfg, vl_err *err);

/** The most ranks of sp GPUs each that may run one sequence with context parallelism
 *  together (a shared pack: a DP-Merge or hybrid-CP group): under
 *  training.sp_kind=ulysses, which scatters the heads over the group, the largest power
 *  of two k with sp x k dividing both model.kv_heads and the heads of a TP shard (0 when
 *  sp alone does not); under ring, INT_MAX. */
int vl_config_cp_ranks_most(const vl_config *cfg, int sp);

/** Bind section `section` (e.g. "hbp") into opts using params: defaults first, then the
 *  YAML/--set values.  Unknown keys in the section are VL_ECONFIG with line:col, and so
 *  is a bad value, including a VL_P_TABLE that vl_config_table would refuse or with a
 *  cell outside the entry's [min, max]. */
vl_status vl_config_bind(const vl_config *cfg, const char *section, const vl_param *params,
                         void *opts, vl_err *err);

/** Table-valued parameter section.key (a VL_P_TABLE entry, or any key read this way):
 *  a YAML list of mappings, each with exactly the columns cols[0..ncols-1] (1 ≤ ncols ≤
 *  VL_TABLE_COLS_MAX), every value a plain number.  *rows receives nrows x ncols doubles,
 *  row-major in list order and cols order (malloc'd, caller frees); *rows = NULL and
 *  *nrows = 0 when the key is absent, null or an empty list.  The last overlay that
 *  gives the key wins whole: rows are never merged.  Types and shape only; ranges are
 *  the caller's (or the vl_param's, checked by vl_config_bind).  VL_ECONFIG
 *  "FILE:LINE:COL: section.key[i].col: ..." for a value that is not a list, an item that
 *  is not a mapping, a missing or unknown column (with a suggestion) or a non-number;
 *  VL_ENOMEM; VL_EINTERNAL for a bad cols list. */
vl_status vl_config_table(const vl_config *cfg, const char *section, const char *key,
                          const char *const *cols, size_t ncols, double **rows, size_t *nrows,
                          vl_err *err);

/** Check that every top-level section name is known: the built-in ones plus
 *  strategy_sections[0..n-1]. */
vl_status vl_config_check_sections(const vl_config *cfg, const char *const *strategy_sections,
                                   size_t n, vl_err *err);

/** The effective config as YAML text (malloc'd, caller frees) / compact JSON text with
 *  keys in a fixed order.  Strategy sections appear as the user wrote them (their
 *  effective values go in the plan header's "params"). */
vl_status vl_config_dump_yaml(const vl_config *cfg, char **out, vl_err *err);
vl_status vl_config_dump_json(const vl_config *cfg, char **out, vl_err *err);
/** vl_config_dump_json with strategy section `section`'s scalar parameters (params)
 *  written as their binding reads them: a bool as a JSON bool whatever YAML spelling
 *  (on, yes, True) the user chose, a number as a JSON number -- so that the JSON, read
 *  back (the plan header's config), binds to the same values.  section NULL: none. */
vl_status vl_config_dump_json_params(const vl_config *cfg, const char *section,
                                     const vl_param *params, char **out, vl_err *err);

/** Strategy params (opts bound with the table) as compact JSON text, keys in table order.
 *  VL_P_TABLE parameters are left out (opts does not hold them); the plan header's
 *  "config" has them, since it carries strategy sections as written. */
vl_status vl_params_dump_json(const vl_param *params, const void *opts, char **out,
                              vl_err *err);

/** Compare the effective configs a and b, every key of the table (training.seed aside:
 *  it orders the samples, it does not decide what fits) and the strategy sections as
 *  written: *ndiff keys differ, the first few described in buf ("cluster.mem_gib 800.0
 *  vs 80.0, ...", cap bytes, NUL-terminated).  VL_OK or VL_ENOMEM. */
vl_status vl_config_diff(const vl_config *a, const vl_config *b, char *buf, size_t cap,
                         size_t *ndiff, vl_err *err);

void vl_config_free(vl_config *cfg);

/** Where key (a path such as "training.tp") got its value: the name of the file, YAML
 *  string or "--set KEY=VALUE" that last set it, or NULL when it holds its built-in
 *  default (or path names no key). */
const char *vl_config_key_source(const vl_config *cfg, const char *path);

/* One built-in key, for listings (`vlplan strategies -v`, generated man text). */
typedef struct vl_key_info {
    const char *path;           /* "pack.algo" */
    const char *type;           /* "int", "number", "bool", "enum", "name", ... */
    const char *const *choices; /* an enum's names, NULL-terminated, or NULL */
    const char *def;            /* default as YAML text, NULL: from a preset */
    const char *unit;
    const char *help;
} vl_key_info;

/** Built-in key i (0-based, in the order of the key table): true and *info filled, or
 *  false past the last. */
bool vl_config_key_at(size_t i, vl_key_info *info);

/** Names of built-in presets, NULL-terminated: model shapes and GPUs. */
extern const char *const vl_model_presets[];
extern const char *const vl_gpu_presets[];

#endif
