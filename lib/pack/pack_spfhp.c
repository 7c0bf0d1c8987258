/* lib/pack/pack_spfhp.c -- Graphcore's shortest-pack-first histogram packing (SPFHP; Krell
 * et al., arXiv 2107.02027; graphcore/examples tutorials/blogs_code/packedBERT/spfhp.py),
 * as published.
 *
 * Reading of the published code: the histogram is walked from the longest length down.
 * Open packs are keyed by the space they have left; for a length L the search starts at
 * the largest key and walks down to key L, so a sequence goes into the pack with the
 * MOST space left that can hold it -- the "shortest pack".  When even that pack is too
 * small, every sequence of length L still unplaced opens a pack of its own: one length
 * per new pack, even where two of them would fit together (lengths [2, 2] at capacity
 * 10 give two packs).  A pack with no space left, or holding max_sequences_per_pack
 * sequences, is final and takes nothing more.  Equal-count runs move as one (count,
 * pack) strategy; placing the sequences one by one gives the same packs.
 *
 * Here: items sorted by length descending, ties by sample index (pack.c); one run per
 * distinct length.  The pack with the most space left is the residual-bucket index's
 * maximum, O(log64 cap) per item instead of the original's O(cap) key scan; among packs
 * with the same space left the one that got there last is used, as the original's
 * list.pop().  pack.max_samples is max_sequences_per_pack (0: no limit).  Not carried
 * over: the strategy/repeat-count output form (we return packs of sample indices).
 * Without the one-length rule this is worst fit decreasing (pack.algo=wfd,
 * vl__pk_residual_fit). */
#include "pack_impl.h"

#include <stdlib.h>

typedef struct spfhp {
    vl_pk_rbuck rb;
    uint32_t *bin;   /* [n] pack of each item */
    uint32_t *count; /* [n] items per pack */
    size_t nbins;
    uint32_t cap, max_items;
} spfhp;

/* Pack b now has `room` left: open again unless full or at the item limit. */
static void reopen(spfhp *s, uint32_t b, uint32_t room)
{
    if (room > 0 && (s->max_items == 0 || s->count[b] < s->max_items))
        vl__pk_rbuck_push(&s->rb, b, room);
}

/* Items p[i..j) all have length l: each into the roomiest open pack while one fits,
 * then the rest one per new pack. */
static void place_run(spfhp *s, size_t i, size_t j, uint32_t l)
{
    for (; i < j; i++) {
        uint32_t r = vl__pk_rbuck_max(&s->rb);
        if (r == VL_PK_NONE || r < l)
            break;
        uint32_t b = vl__pk_rbuck_pop(&s->rb, r);
        s->bin[i] = b;
        s->count[b]++;
        reopen(s, b, r - l);
    }
    for (; i < j; i++) {
        uint32_t b = (uint32_t)s->nbins++;
        s->bin[i] = b;
        s->count[b] = 1;
        reopen(s, b, s->cap - l);
    }
}

vl_status vl__pk_spfhp(vl_bins *out, const uint64_t *p, size_t n, uint32_t cap,
                       uint32_t max_items, vl_err *err)
{
    spfhp s = {.cap = cap, .max_items = max_items};
    vl_status st;

    s.bin = malloc((n ? n : 1) * sizeof *s.bin);
    s.count = malloc((n ? n : 1) * sizeof *s.count);
    if (s.bin == NULL || s.count == NULL) {
        st = vl_seterr(err, VL_ENOMEM, "out of memory packing %zu items", n);
        goto done;
    }
    /* every item may open its own pack (the one-length rule), so the bound is n */
    if ((st = vl__pk_rbuck_init(&s.rb, cap, n, err)) != VL_OK)
        goto done;
    for (size_t i = 0, j; i < n; i = j) {
        uint32_t l = VL_PK_LEN(p[i]);
        for (j = i + 1; j < n && VL_PK_LEN(p[j]) == l; j++)
            ;
        place_run(&s, i, j, l);
    }
    st = vl__pk_assemble(out, p, s.bin, n, s.nbins, err);
    vl__pk_rbuck_free(&s.rb);
done:
    free(s.bin);
    free(s.count);
    return st;
}
