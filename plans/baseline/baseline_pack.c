/* plans/baseline/baseline_pack.c -- the `pack` baseline: plain packing with pack.algo
 * (lib/pack/pack.c) into micro-batches of training.max_seq_len tokens, dealt to the
 * training.dp ranks.
 *
 * pack.scope: epoch (default).  The epoch's seeded order (vl_epoch_order) is cut into
 *   windows of pack.window samples (0: one window, the whole epoch); each window is
 *   packed on its own and its packs are shuffled with the seed, so a window keeps the
 *   randomness of its place in the order.  The epoch's T packs then go to I iterations
 *   as whole packs, dp x m_i of them per iteration: I is the number of global batches
 *   the sampler cuts the epoch into (training.global_batch or global_tokens), at most
 *   R = ceil(T / dp) rounds of dp packs; the R rounds are spread over the I iterations
 *   as evenly as they go (the first R mod I get one more).  With windows the packs fill
 *   the iterations in order; packing the whole epoch leaves no order to keep, so there
 *   they are stratified by cost (heaviest first, each iteration the same share of every
 *   stratum: layout()).  No pack is split: the R*dp - T missing packs are empty
 *   micro-batches of capacity 0 (no token slots; the rank idles, which the balance
 *   figures show), spread over the iterations.  So iterations hold about equal tokens,
 *   not exactly training.global_batch samples.  O(n log n) per epoch plus the packer.
 * pack.scope: batch (the behaviour before epoch packing).  Each global batch is packed
 *   on its own.  Equal micro-batch counts: while the pack count is not a multiple of dp,
 *   the fullest pack holding two or more samples (lowest index on ties; a max-heap, so
 *   O(P log P) however many splits) is split in two (its samples, longest first, onto
 *   the lighter half) -- whole samples only, never slices.  Only when every pack holds
 *   a single sample and the count is still short (a batch smaller than dp) are empty
 *   micro-batches added (0 tokens, their cap of max_seq_len counts as padding).
 * Dealing (both scopes): the packs of an iteration go to ranks by equal-count
 *   Karmarkar-Karp (lib/pack/partition.c, veRL's equal_size) on each pack's cost under
 *   pack.balance: time (default: the cost model's forward + backward time of the pack
 *   on the first pipeline stage, attention included; tokens when no cost model),
 *   tokens (Σ len), or attention (causal query-key pairs Σ len(len+1)/2).  A rank runs
 *   its packs in pack order.  That is all under pack.deal=packs and in batch scope.
 * pack.deal: samples (default; epoch scope).  An iteration's samples may instead be
 *   dealt to ranks by KK and packed again on each rank within the same slots, where
 *   that makes the busiest rank lighter under pack.balance (baseline_pack_samples.c),
 *   and the dealing kept is refined by pack swaps (baseline_pack_refine.c) and then by
 *   moving single samples between packs of different ranks (baseline_pack_shift.c):
 *   under pack.balance=time lowering the busiest rank's tokens, then attention,
 *   without raising its time; under tokens or attention that measure first.  Only
 *   empty slots become packs: fewer than dp more packs per epoch.
 * Seeds: every random step draws from (seed, tag ^ epoch<<32 ^ batch-or-window), except
 * the per-rank packers of a sample dealing: (seed, vl_rng_mix(tag ^ epoch) + (batch<<32 |
 * rank)), distinct for every batch and rank of an epoch. */
#include "baseline_pack.h"

static bool splits(const vl_config *cfg)
{
    return cfg->training.oversize == VL_OVERSIZE_SPLIT;
}

/* Under training.oversize=split nothing is too long: longer samples become pieces. */
static uint32_t pack_max_len(const void *opts, const vl_config *cfg)
{
    (void)opts;
    return splits(cfg) ? UINT32_MAX : cfg->training.max_seq_len;
}

/* Under training.oversize=split the pieces of a longer sample are independent
 * sequences, dealt like samples (baseline_pieces.c). */
static vl_slices pack_slicing(const void *opts, const vl_config *cfg)
{
    (void)opts;
    return splits(cfg) ? VL_SLICES_PIECES : VL_SLICES_NONE;
}

/* Whole-epoch packing regroups the epoch; pack.scope=batch keeps each global batch. */
static bool pack_epoch_scope(const vl_config *cfg)
{
    return cfg->pack.scope == VL_PACK_SCOPE_EPOCH;
}

/* A pack holds up to max_seq_len tokens (a split sample's pieces too). */
static uint64_t pack_max_cap(const void *opts, const vl_config *cfg)
{
    (void)opts;
    return cfg->training.max_seq_len;
}

static vl_status pack_validate(const void *opts, const vl_config *cfg, vl_err *err)
{
    (void)opts;
    return vl__bl_check_dp(cfg, "pack", err);
}

/* Items to pack: the samples, and under training.oversize=split the pieces of the longer
 * ones (baseline_pieces.c). */
static vl_status ctx_init(pack_ctx *x, const vl_job *job, vl_err *err)
{
    *x = (pack_ctx){.len = job->sel->len};
    if (!splits(job->cfg)) {
        x->pieces.base = UINT32_MAX; /* every item a whole sample */
        return VL_OK;
    }
    vl_status st = vl__bl_pieces_build(&x->pieces, job->sel, (uint32_t)job->m->n,
                                       job->cfg->training.max_seq_len, err);
    if (st == VL_OK)
        x->len = x->pieces.len;
    return st;
}

/* pack.scope=epoch: every epoch packed whole (baseline_pack_epoch.c). */
static vl_status pack_plan(const void *opts, const vl_job *job, vl_plan *out, vl_err *err)
{
    pack_ctx x;
    vl_status st = ctx_init(&x, job, err);

    (void)opts;
    if (st == VL_OK)
        st = vl__bl_run(job, out, vl__pk_epochs, &x, "pack", err);
    vl__bl_pieces_free(&x.pieces);
    return st;
}

/* pack.scope=batch: the runner's state, batch by batch (baseline_pack_batch.c). */
typedef struct pack_run {
    bl c; /* first: the baseline hooks take the state as a bl */
    pack_ctx x;
} pack_run;

static vl_status pack_open(void *state, const void *opts, const vl_job *job, vl_plan *out,
                           vl_err *err)
{
    pack_run *r = state;

    (void)opts;
    vl__bl_open(&r->c, job, out, &r->x, "pack", false, vl__pk_batch);
    return ctx_init(&r->x, job, err);
}

static void pack_close(void *state, bool planned)
{
    pack_run *r = state;

    vl__bl_close(&r->c, planned);
    vl__bl_pieces_free(&r->x.pieces);
}

const vl_strategy vl_strategy_pack = {
    .name = "pack",
    .summary = "packing with pack.algo into max_seq_len bins, dealt to ranks by cost",
    .section = NULL,
    .builtin = "pack",
    .params = NULL,
    .opts_size = 0,
    .max_len = pack_max_len,
    .epoch_scope = pack_epoch_scope,
    .max_cap = pack_max_cap,
    .slicing = pack_slicing,
    .validate = pack_validate,
    .plan = pack_plan,
    VL__BL_BY_BATCH(pack_run, pack_open),
    .close = pack_close,
};
