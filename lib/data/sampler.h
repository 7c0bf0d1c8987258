/* lib/data/sampler.h -- which samples a strategy plans and in what order: the oversize
 * policy (error / truncate / drop, returned as dropped ranges for the plan), the deterministic epoch
 * order from the seed, and global batches by sample count or token budget. */
#ifndef VLPLAN_SAMPLER_H
#define VLPLAN_SAMPLER_H

#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "manifest.h"
#include "drop.h"

/* The samples left to plan after the oversize policy, with their effective lengths. */
typedef struct vl_selection {
    uint32_t *idx; /* [n] manifest indices, ascending */
    size_t n;
    const uint32_t *len; /* [manifest n] effective length per manifest index: the
                           * manifest's own array, or `own` when something was truncated */
    uint32_t *own;
    uint64_t tokens; /* Σ effective len over idx */
    vl_drop *drops;  /* [ndrops] what the policy removed, by ascending sample: the
                           * runner records them in the plan's footer */
    size_t ndrops;
} vl_selection;

/** Apply `policy` for samples longer than `limit` tokens: VL_OVERSIZE_ERROR fails with
 *  VL_EDATA naming the count and the first offender; DROP leaves them out; TRUNCATE keeps
 *  their first `limit` tokens.  The dropped or truncated ranges are returned in
 *  sel->drops.  Free with vl_selection_free. */
vl_status vl_select(vl_selection *sel, const vl_manifest *m, uint32_t limit,
                    vl_oversize policy, vl_err *err);
/** vl_select naming where the limit comes from in its error ("skrull's BucketSize 10527
 *  x CP 8"; NULL: training.max_seq_len). */
vl_status vl_select_why(vl_selection *sel, const vl_manifest *m, uint32_t limit,
                        const char *why, vl_oversize policy, vl_err *err);
void vl_selection_free(vl_selection *sel);

/** order[0..n-1] = sel->idx permuted for epoch `epoch` (seeded shuffle; the same seed and
 *  epoch always give the same order).  A batch-by-batch strategy gets each epoch's order
 *  and global batches from the runner (lib/run/run_epochs.c), made once. */
void vl_epoch_order(const vl_selection *sel, uint64_t seed, uint32_t epoch, uint32_t *order);

/* Global batches: batch b is order[start[b] .. start[b+1]). */
typedef struct vl_batches {
    size_t n;
    size_t *start; /* [n + 1] */
} vl_batches;

/** Cut order[0..n-1] into global batches: training.global_batch samples each when set,
 *  else consecutive samples until adding one would pass training.global_tokens.  The
 *  last batch may be short (kept, never dropped). */
vl_status vl_make_batches(vl_batches *out, const uint32_t *order, size_t n,
                          const uint32_t *len, const vl_training_cfg *t, vl_err *err);
void vl_batches_free(vl_batches *b);

/** Every full global batch (all but the last, which may be short) must give each of
 *  `ranks` data-parallel ranks something to hold: else nearly every micro-batch of the
 *  plan is empty, iterations x ranks of them (at a million ranks, billions: hours to plan
 *  and simulate).  What a rank holds is a sample, or with piece > 0 a piece of at most
 *  piece tokens, which a strategy that cuts pieces further to feed idle ranks (ChunkFlow)
 *  may spread over `share` ranks (1: none); either way the plan stays linear in samples
 *  plus ranks.  VL_ECONFIG naming the first batch short of that, with what to change;
 *  who prefixes the message.  The runner checks every epoch of a batch-by-batch strategy
 *  with the arguments its cover hook gives (vlplan_strategy.h). */
vl_status vl_batches_cover_ranks(const vl_batches *b, const uint32_t *order,
                                 const uint32_t *len, uint32_t piece, size_t share,
                                 size_t ranks, const char *who, vl_err *err);

#endif
