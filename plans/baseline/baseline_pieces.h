/* plans/baseline/baseline_pieces.h -- training.oversize=split for the pack baseline: a
 * sample longer than the capacity becomes independent pieces of at most `cap` tokens
 * (TRL's bfd_split), each packed as an item of its own.  Items below `base` (the
 * manifest's sample count) are samples; item base + j is piece j.  Not API. */
#ifndef VLPLAN_BASELINE_PIECES_H
#define VLPLAN_BASELINE_PIECES_H

#include "vlplan_strategy.h"

typedef struct vl__bl_pieces {
    uint32_t base;    /* first piece id: the manifest's sample count */
    uint32_t *len;    /* [base + n] item lengths: the samples', then the pieces' */
    uint32_t *sample; /* [n] the sample piece j comes from */
    uint32_t *off;    /* [n] its first token in that sample */
    uint32_t *first;  /* [base] first piece of a split sample, UINT32_MAX if whole */
    size_t n;
} vl__bl_pieces;

/** Pieces of every selected sample over cap (none: pc->n = 0, pc->len still valid);
 *  a table with n = 0 and NULL arrays (base: UINT32_MAX) means nothing is split.
 *  VL_ENOMEM, VL_ECONFIG when the item ids would not fit 32 bits. */
vl_status vl__bl_pieces_build(vl__bl_pieces *pc, const vl_selection *sel, uint32_t base,
                              uint32_t cap, vl_err *err);
void vl__bl_pieces_free(vl__bl_pieces *pc);

/** out[0..*nout) = items with each split sample replaced by its pieces in token order
 *  (out has room for n + pc->n). */
void vl__bl_pieces_expand(const vl__bl_pieces *pc, const uint32_t *items, size_t n,
                          uint32_t *out, size_t *nout);

/** The segment of item it: a whole sample, or a piece. */
vl_seg vl__bl_item_seg(const vl__bl_pieces *pc, const uint32_t *len, uint32_t it);

#endif
