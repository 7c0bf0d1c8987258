/* plans/baseline/baseline_impl.h -- what the baseline strategies share (baseline.c: the
 * hooks, random and sorted; baseline_pack*.c: pack; baseline_verl.c: verl): one planning
 * run's state, the runner's hooks over it (lib/run/run_epochs.c owns the epoch loop) and
 * the micro-batch emitter.  Not API. */
#ifndef VLPLAN_BASELINE_IMPL_H
#define VLPLAN_BASELINE_IMPL_H

#include "vlplan_strategy.h"

typedef struct bl bl;
/* Plan one global batch (items in the epoch order) as the current iteration. */
typedef vl_status (*vl__bl_batch_fn)(bl *c, const uint32_t *items, size_t n, vl_err *err);
/* Plan every epoch (a strategy that does not work batch by batch). */
typedef vl_status (*vl__bl_epochs_fn)(bl *c, vl_err *err);

/* One planning run: what every batch needs, and counters for the -v log.  Batch by
 * batch it is the runner's state for the strategy (vl_strategy.state_size). */
struct bl {
    const vl_job *job;
    const char *name;   /* the strategy's, for the -v log */
    vl__bl_batch_fn fn; /* plans one global batch (batch by batch) */
    const void *opts;   /* the strategy's bound params (NULL: none) */
    const vl_training_cfg *t;
    vl_plan *out;
    vl_par par;
    size_t dp;
    uint32_t epoch;
    size_t batch;
    uint64_t iters, mbs, splits, empty, slots, tokens;
    uint64_t dealt_samples; /* iterations whose samples were dealt, not whole packs */
    uint64_t dealt_verl;    /* of those, dealt as veRL deals (more slots, balanced) */
};

uint32_t vl__bl_max_len(const void *opts, const vl_config *cfg);
/** training.dp and training.max_seq_len at least 1 (VL_ECONFIG naming `who`). */
vl_status vl__bl_check_dp(const vl_config *cfg, const char *who, vl_err *err);
/** The random stream of (tag, epoch, batch). */
uint64_t vl__bl_stream(const bl *c, uint64_t tag);
/** A micro-batch of cap slots holding whole samples items[0..n). */
vl_status vl__bl_emit_mb(bl *c, uint32_t cap, const uint32_t *items, size_t n, vl_err *err);
/** Set c up for a run: layout from training (ckpt_layers for micro-batches of
 *  max_seq_len tokens, times micro_batch when padded); fn plans a batch (NULL: none). */
void vl__bl_open(bl *c, const vl_job *job, vl_plan *out, const void *opts, const char *name,
                 bool padded, vl__bl_batch_fn fn);
/* The runner's hooks over a bl state (vlplan_strategy.h): every rank holds a sample;
 * a batch is one iteration through c->fn; the -v log at the end. */
vl_cover vl__bl_cover(const void *state);
vl_status vl__bl_plan_batch(void *state, const vl_batch *b, vl_plan *out, vl_err *err);
void vl__bl_close(void *state, bool planned);
/** The entry fields of a baseline planned batch by batch, set up by `open` (a state
 *  starting with bl). */
#define VL__BL_BY_BATCH(state_type, open_fn)                                                  \
    .state_size = sizeof(state_type), .open = (open_fn), .cover = vl__bl_cover,               \
    .plan_batch = vl__bl_plan_batch
/** A whole run planned by epochs (pack.scope=epoch): vl__bl_open, epochs, the -v log. */
vl_status vl__bl_run(const vl_job *job, vl_plan *out, vl__bl_epochs_fn epochs,
                     const void *opts, const char *name, vl_err *err);

/* veRL's workload coefficient (baseline_verl.c: verl.linear's default). */
#define VL__VERL_LINEAR_STR "24576"
#define VL__VERL_LINEAR 24576.0
/** veRL's dealing of items[0..n) (baseline_verl.c steps 1 and 2): bins[r] (dp of them,
 *  zeroed by the caller) receives rank r's *m micro-batches, empty ones included.
 *  order: NULL, or 0 .. n-1 by the items' length descending, then index -- KK's order
 *  of the workloads, so its sorts are skipped (the same dealing either way). */
vl_status vl__verl_deal(bl *c, const uint32_t *items, const uint32_t *order, size_t n,
                        double linear, vl_bins *bins, size_t *m, vl_err *err);

#endif
