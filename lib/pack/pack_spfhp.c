/* lib/pack/pack_spfhp.c -- Graphcore's shortest-pack-first histogram packing (SPFHP; Krell
 * et al., arXiv 2107.02027; graphcore/examples tutorials/blogs_code/packedBERT/spfhp.py).
 *
 * Reading of the published code: lengths are taken from the histogram longest first.
 * Open packs are keyed by the space they have left; for a length L the search starts at
 * the largest key and walks down to key L, so a sequence goes into the pack with the MOST
 * space left that can hold it -- the "shortest pack" -- and a new pack is opened when
 * even that one is too small.  Equal-count runs move as one (count, pack) strategy, which
 * is the same as placing the sequences one by one.  That is worst-fit decreasing.  (The
 * peers survey words it as "smallest fitting remainder"; the code does the opposite, and
 * we follow the code.)
 *
 * Here: items sorted by length descending, ties by sample index (pack.c); the pack with
 * the most space left comes from the residual-bucket index's maximum, O(log64 cap) per
 * item instead of the original's O(cap) key scan (its O(N + S^2)).  Among packs with the
 * same space left the one that got there last is used, as the original's list.pop().
 * Not carried over: max_sequences_per_pack (unlimited here; vl_pack_opts has no such
 * knob) and the strategy/repeat-count output form (we return packs of sample indices). */
#include "pack_impl.h"

vl_status vl__pk_spfhp(vl_bins *out, const uint64_t *p, size_t n, uint32_t cap,
                       vl_err *err)
{
    return vl__pk_residual_fit(out, p, n, cap, true, err);
}
