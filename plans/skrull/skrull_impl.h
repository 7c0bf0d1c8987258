/* plans/skrull/skrull_impl.h -- internals of the Skrull strategy shared by its units:
 * DACP, the per-micro-batch placement (skrull_dacp.c), GDS, the per-global-batch
 * micro-batching (skrull_gds.c), and the driver with BucketSize and emission
 * (skrull.c).  Not API; tests include it to check each step on hand examples. */
#ifndef VLPLAN_SKRULL_INT_H
#define VLPLAN_SKRULL_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "vlplan_strategy.h"

/* Which local sequence a roll-back shards: the paper's shortest, or the longest (frees
 * the most memory per roll-back). */
typedef enum { VL_SK_SHORTEST = 0, VL_SK_LONGEST = 1 } vl_sk_rollback;

/* How DACP places a micro-batch: the paper's Algorithm 1 (shortest first, shard only for
 * memory), or longest first sharding also a sequence that would otherwise raise the
 * slowest CP rank (skrull_dacp.c). */
typedef enum { VL_SK_PAPER = 0, VL_SK_BALANCED = 1 } vl_sk_placement;

/* skrull.equal_mbs: off, on, or on exactly when training.dp_sync is micro_step. */
typedef enum { VL_SK_EQUAL_OFF = 0, VL_SK_EQUAL_ON = 1, VL_SK_EQUAL_AUTO = 2 } vl_sk_equal;

/* Options bound from the `skrull:` section. */
typedef struct vl_sk_opts {
    uint32_t bucket_size; /* C, tokens per GPU; 0 = auto from the memory model */
    int rollback;         /* vl_sk_rollback */
    int placement;        /* vl_sk_placement */
    double balance_slack;
    bool dacp;     /* false: every sequence sharded over the CP group */
    bool gds;      /* false: contiguous DP split, next-fit micro-batches */
    int equal_mbs; /* vl_sk_equal */
} vl_sk_opts;

/* One resolved setting: what every global batch is planned with. */
typedef struct vl_sk_setting {
    uint32_t bucket; /* C */
    int cp;          /* N, the CP degree (training.sp) */
    int dp;          /* DP ranks */
    vl_sk_rollback rollback;
    vl_sk_placement placement;
    double slack;
    bool dacp, gds, equal_mbs;
    vl_par par; /* every rank's layout */
} vl_sk_setting;

/* DACP state over the N CP ranks.  Remaining bucket is kept in units of 1/N token, so a
 * sharded sequence costs every rank exactly its length and nothing is rounded. */
typedef struct vl_sk_dacp {
    uint32_t bucket; /* C */
    int n;           /* N */
    vl_sk_rollback mode;
    vl_sk_placement place;
    double slack;       /* balanced: the gain sharding must bring (skrull.balance_slack) */
    int64_t *rb;        /* [n] RemainBucket · N */
    double *load;       /* [n] forward FLOPs placed on each rank */
    uint64_t rollbacks; /* roll-backs done (accumulates across calls) */
    bool sharded;       /* this micro-batch has a sharded sequence */
} vl_sk_dacp;

/** Algorithm 1 (fixed; d->place: the paper's order and rule, or balanced) on one
 *  micro-batch: len[0..k-1] ascending (ties by sample), f[i] = F(len[i]).  Every
 *  sequence local to one CP rank (ret[i] = rank) or sharded over all N (ret[i] =
 *  VL_CP_SHARDED) with every rank's tokens ≤ C.  false when a roll-back finds no local
 *  sequence to shard (then ret, rb and load are undefined). */
bool vl__sk_dacp(vl_sk_dacp *d, const uint32_t *len, const double *f, size_t k, int16_t *ret);

/* Forward FLOPs of a whole sequence of len tokens (the cost model's; tests use len²). */
typedef double (*vl_sk_flops_fn)(const void *ud, uint32_t len);

/* One global batch scheduled: rank d runs micro-batches [rmb[d], rmb[d+1]); micro-batch
 * j holds seq[mstart[j] .. mstart[j+1]) (manifest indices, ascending by length), placed
 * per ret[] (grown, never shrunk). */
typedef struct vl_sk_work {
    uint64_t *key;
    size_t key_cap; /* (len << 32 | sample) of every item */
    double *w;
    size_t w_cap; /* LPT weights */
    int *part;
    size_t part_cap; /* DP rank of every item */
    uint64_t *byrank;
    size_t byrank_cap; /* keys grouped by rank */
    size_t *rstart;
    size_t rstart_cap; /* [dp + 1] into byrank */
    uint32_t *seq, *slen;
    double *sf;
    int16_t *ret;
    size_t nseq;
    size_t seq_cap, slen_cap, sf_cap, ret_cap;
    size_t *mstart;
    size_t mstart_cap, nmb; /* [nmb + 1] */
    double *mload;
    size_t mload_cap; /* [nmb] estimated time: slowest CP rank's F */
    double *mlold;
    size_t *mord, *mold; /* scratch of the heaviest-first reordering */
    size_t mlold_cap, mord_cap, mold_cap;
    size_t *rmb;
    size_t rmb_cap; /* [dp + 1] */
    int64_t *rb;
    double *load;
    size_t rb_cap, load_cap;
    /* statistics over everything planned with this work */
    uint64_t stat_mbs, stat_local, stat_dist, stat_local_tok, stat_dist_tok;
    uint64_t stat_rollbacks, stat_retries, stat_empty;
} vl_sk_work;

void vl__sk_work_free(vl_sk_work *w);

/** GDS (Algorithm 2, fixed) on samples[0..n-1] (lengths len[sample], each ≤ C·N): LPT
 *  over the DP ranks by F, then per rank the fewest strided micro-batches that hold ≤ C·N
 *  tokens and that DACP accepts.  s->gds false: contiguous DP split and next-fit
 *  micro-batches; s->dacp false: every sequence sharded; s->equal_mbs: GDS searches one
 *  count for every rank (without GDS: ranks short of the busiest's count get empty
 *  micro-batches).  VL_ENOMEM; VL_EINTERNAL when a
 *  sequence cannot be placed (longer than C·N). */
vl_status vl__sk_gds(vl_sk_work *w, const vl_sk_setting *s, const uint32_t *samples, size_t n,
                     const uint32_t *len, vl_sk_flops_fn F, const void *ud, vl_err *err);

/* skrull.c */
/** BucketSize C from the memory model: (usable memory − model states) / activation
 *  bytes per token held on one GPU.  0 when the states alone do not fit. */
uint32_t vl__sk_auto_bucket(const vl_cost *c, const vl_par *par, int dp);
/** The same for the layout cfg gives Skrull's ranks; 0 also when cfg is unusable. */
uint32_t vl__sk_auto_bucket_of(const vl_config *cfg);

#endif
