/* plans/hbp/hbp_impl.h -- internals shared by the HBP strategy files: hbp.c (parameters,
 * driver, emission), hbp_groups.c (hierarchical group auto-selection) and hbp_pack.c
 * (balance packing).  Not API: only plans/hbp*.c and the HBP tests (tests/hbp_fixture.h) include it. */
#ifndef VLPLAN_HBP_IMPL_H
#define VLPLAN_HBP_IMPL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "vlplan_strategy.h"

#define HBP_MAX_GROUPS 16 /* entries of hbp.groups / hbp.candidates / hbp.sp_degrees */
#define HBP_AUTO (-1)     /* sp or ckpt_layers left to the cost model */

/* The bound `hbp:` section (vl_param table in hbp.c). */
typedef struct hbp_opts {
    char groups[VL_TEXT_MAX];     /* "auto" or "LEN[:SP[:CKPT]],..." */
    char candidates[VL_NAME_MAX]; /* stage-1 packing lengths, "8K,16K,..." */
    char sp_degrees[VL_NAME_MAX]; /* stage-1 SP degrees, "1,2,4,8,16" */
    int packer;                   /* index into vl__hbp_packers */
    uint32_t curriculum_iters;    /* short-only iterations at the start; 0 = off */
    bool balance;                 /* Attention Balance Sort (off: packer order) */
    bool greedy_fill;             /* GreedyFill from shorter groups */
    int stage2_sp;                /* index into vl__hbp_stage2_sp: HBP_STAGE2_* */
} hbp_opts;

extern const char *const vl__hbp_packers[];

/* hbp.stage2_sp: the degree of the groups stage 2 derives (l1, l2). */
enum { HBP_STAGE2_ONE = 0, HBP_STAGE2_FREE = 1 };
extern const char *const vl__hbp_stage2_sp[];

/* One entry of hbp.groups, or a length to configure. */
typedef struct hbp_spec {
    uint32_t len;
    int sp, ckpt; /* HBP_AUTO = choose */
} hbp_spec;

/** Parse a comma-separated list "8K,16K,131072" (K = 1024, M = 1048576) into
 *  out[0..*n-1].len; with specs, entries may be "LEN[:SP[:CKPT]]" (omitted = HBP_AUTO).
 *  0, or -1 with a one-line reason in why[0..cap). */
int vl__hbp_parse_list(const char *s, bool specs, hbp_spec *out, size_t max, size_t *n,
                       char *why, size_t cap);

/* A measured profile row (hbp.profile): seconds per iteration at the same global token
 * budget for every row, packing length len, that SP degree and checkpointed layers.
 * The YAML gives them as a list of mappings with the columns vl__hbp_profile_cols. */
typedef struct hbp_prof {
    uint32_t len;
    int sp, ckpt;
    double time_s;
} hbp_prof;

extern const char *const vl__hbp_profile_cols[]; /* len, sp, ckpt_layers, time_s */

/** Check measured rows against cfg: len ≥ 1, sp usable (vl__hbp_sp_ok), 0 ≤ ckpt ≤ the
 *  first stage's layers, time_s > 0.  VL_ECONFIG naming "hbp.profile[i]". */
vl_status vl__hbp_profile_check(const hbp_prof *rows, size_t n, const vl_config *cfg,
                                vl_err *err);

/** Rows of four doubles (len, sp, ckpt_layers, time_s), as a list-valued config key
 *  gives them, into *out (malloc'd, caller frees), checked as above.  VL_ECONFIG for a
 *  non-integer len/sp/ckpt_layers or a failed check; VL_ENOMEM. */
vl_status vl__hbp_profile_rows(hbp_prof **out, const double *v, size_t nrows,
                               const vl_config *cfg, vl_err *err);

/* One packing group of the final set, lengths strictly ascending. */
typedef struct hbp_group {
    uint32_t len;      /* l_i: packing length = micro-batch capacity, tokens */
    vl_par par;        /* tp, pp from training; sp and ckpt_layers of the group */
    int ranks;         /* data-parallel replicas per iteration: gpus / (sp·tp·pp) */
    uint32_t mbs;      /* micro-batches per rank in a full iteration */
    double s_per_mtok; /* estimated cluster seconds per million tokens (0: profile) */
} hbp_group;

typedef struct hbp_groups {
    size_t n;
    hbp_group g[HBP_MAX_GROUPS];
} hbp_groups;

/* The -v log; on allocation failure it is dropped silently, since the log is optional
 * and the plan does not depend on it. */
typedef struct hbp_log {
    const vl_job *job; /* the -v text goes through vl_job_log */
} hbp_log;

void vl__hbp_logf(hbp_log *lg, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* What group selection needs beyond the opts. */
typedef struct hbp_sel_in {
    const vl_config *cfg;
    const vl_cost *cost;
    const uint32_t *len; /* effective length per manifest index */
    const uint32_t *idx; /* the samples to plan */
    size_t n;
    uint64_t budget;      /* global tokens per iteration */
    const hbp_prof *prof; /* measured rows, or NULL: analytic cost model */
    size_t nprof;
} hbp_sel_in;

/** The final group set: hbp.groups when given, else Algorithms 1, 3 and 4 (stage 1 over
 *  candidates x sp_degrees, stage 2 l1 = l_best/sp_best, l2 = l_max/sp_max).  The
 *  candidate table goes to lg.  VL_EINFEASIBLE when some group has no sp/ckpt_layers that
 *  fits memory; VL_ECONFIG for a profile that misses training.max_seq_len; VL_ENOMEM. */
vl_status vl__hbp_select(hbp_groups *out, const hbp_opts *o, const hbp_sel_in *in, hbp_log *lg,
                         vl_err *err);

/** SP degrees usable under cfg: divide gpus/(tp·pp) and, for Ulysses, the KV heads. */
bool vl__hbp_sp_ok(const vl_config *cfg, int sp);

/* ---- balance packing (hbp_pack.c) ---- */

/* A pack: items[start .. start+count) of the epoch's item array.  32 bytes: an epoch
 * has fewer than 2^32 samples (they are uint32_t indices), and the packs are sorted
 * and copied whole. */
typedef struct hbp_pack {
    uint64_t attn;  /* Σ len² (HBP's attention complexity) */
    uint64_t load;  /* Σ len */
    uint32_t first; /* smallest sample index in the pack: the tie-break */
    uint32_t group;
    uint32_t start;
    uint32_t count;
} hbp_pack;

#define HBP_EMPTY UINT32_MAX /* a slot without a pack: an empty micro-batch */

/* An iteration of one group: rank r runs packs slots[s0 + r·mbs + j], j < mbs. */
typedef struct hbp_iter {
    uint32_t group;
    uint32_t mbs; /* micro-batches per rank */
    size_t s0;
} hbp_iter;

/* One epoch of balance packing. */
typedef struct hbp_epoch {
    uint32_t *items; /* [n] every sample once, pack by pack */
    hbp_pack *packs;
    size_t npacks, packs_cap;
    uint32_t *slots; /* pack index per (iteration, rank, micro-batch), or HBP_EMPTY */
    size_t nslots;
    hbp_iter *iters; /* in training order */
    size_t niters;
    /* counters for the log, per group */
    size_t samples[HBP_MAX_GROUPS], fillers[HBP_MAX_GROUPS], splits[HBP_MAX_GROUPS];
    size_t giters[HBP_MAX_GROUPS], empty[HBP_MAX_GROUPS];
    size_t short_iters; /* iterations of the groups shorter than the longest one that
                           * has iterations this epoch */
    size_t busy_groups; /* groups with iterations this epoch */
    size_t curriculum;  /* short-only iterations at the start: min(asked, short/2) */
} hbp_epoch;

typedef struct hbp_pack_in {
    const hbp_groups *gs;
    const uint32_t *len;
    uint32_t *order; /* the epoch's sample order (GroupData keeps it), malloc'd, n
                      * entries: taken over as the epoch's items, freed with them */
    size_t n;
    vl_pack_algo algo;
    int isf_iters;
    uint32_t isf_slack;
    bool balance, greedy_fill;
    double attn_weight;  /* token-equivalents per unit of Σ len² (cost model) */
    uint32_t curriculum; /* short-only iterations asked for at the start of this
                                   * epoch; at most half the shorter groups' are used */
    uint64_t seed, epoch;
} hbp_pack_in;

/** GroupData, packing, GreedyFill, Attention Balance Sort, the cut into iterations, the
 *  curriculum and the proportional interleave, for one epoch.  in->order becomes
 *  ep->items (freed here on failure; NULL: VL_ENOMEM).  VL_ENOMEM. */
vl_status vl__hbp_pack_epoch(hbp_epoch *ep, const hbp_pack_in *in, vl_err *err);
void vl__hbp_epoch_free(hbp_epoch *ep);

/** Group of a sample of length l: the first i with l ≤ len_i, i.e. l in (l_{i-1}, l_i];
 *  gs->n when it is longer than every group. */
uint32_t vl__hbp_group_of(const hbp_groups *gs, uint32_t l);

/* GreedyFill's sources: a shorter group's samples in stored order, as a pool over
 * items[0..n-1], which it reads and does not copy: they must stay until it is freed. */
typedef struct hbp_pool hbp_pool;
vl_status vl__hbp_pool_new(hbp_pool **out, const uint32_t *items, size_t n,
                           const uint32_t *len, vl_err *err);
void vl__hbp_pool_free(hbp_pool *p);
/** Items of the pool not taken yet, in stored order, into out; returns their count.
 *  out may be the pool's items themselves (moved forward in place); the pool is then
 *  spent: fill from it no more. */
size_t vl__hbp_pool_left(const hbp_pool *p, uint32_t *out);

/** GreedyFill (Algorithm 6) of one pack: scan the pools src[0..nsrc-1] in that order
 *  (next-shorter group first), each in its stored order, appending to out every sample
 *  that still fits cap - *load, taking it from its pool and adding to *load and *attn.
 *  Returns the count appended. */
size_t vl__hbp_fill(hbp_pool *const *src, size_t nsrc, uint32_t cap, uint64_t *load,
                    uint64_t *attn, uint32_t *out);

/** Sort packs[0..n-1] by attention descending, then load descending, then smallest
 *  sample index: a total order. */
void vl__hbp_sort_packs(hbp_pack *packs, size_t n);

/** Deal packs[0..np-1] of one iteration (sorted, heaviest first) to ranks x mbs slots,
 *  np ≤ ranks·mbs: with one micro-batch per rank, rank r takes pack r; with more, an
 *  equal-count Karmarkar-Karp partition of the weights load + attn_weight·attn (the
 *  cost model's FLOPs in token units).  slot[r·mbs + j] receives base + the pack's
 *  index, or HBP_EMPTY.  VL_ENOMEM. */
vl_status vl__hbp_deal(uint32_t *slot, const hbp_pack *packs, size_t np, uint32_t base,
                       int ranks, uint32_t mbs, double attn_weight, vl_err *err);

#endif
