/* lib/pack/pack.c -- the packer entry point (vl_pack): input checks, the canonical item
 * order each algorithm starts from, and the dispatch to the algorithms in pack_fit.c,
 * pack_isf.c and pack_spfhp.c (the helpers they share are in pack_util.c).
 *
 * Every packer first puts the items in a canonical order that depends only on the
 * item set (value order, or length-descending with value ties), then shuffles with the
 * seed where the algorithm calls for it.  So a packing is a function of (item set,
 * lengths, options), not of the order the caller happened to pass the items in.
 *
 *   ffd / bfd   first / best fit, longest first (ties: lower sample index);
 *   ffs / bfs   first / best fit over a seeded shuffle.  HBP (Table 13) lists "First
 *               Fit Shuffle" and "Best Fit Shuffle" without defining them; we read them
 *               as NeMo's first_fit_shuffle (shuffle, then first fit) and its best-fit
 *               twin, the "shuffled order keeps randomness" alternative to sorting;
 *   isf         OmniBal's iterative sampling and filtering (pack_isf.c);
 *   spfhp       Graphcore's shortest-pack-first histogram packing, as published
 *               (pack_spfhp.c);
 *   wfd         worst fit decreasing: longest first, each into the pack with the most
 *               room that fits it -- SPFHP without its one-length-per-new-pack rule,
 *               which is what vlplan called spfhp before;
 *   nf          next fit in the order given (the one packer that keeps the caller's
 *               order: axolotl's sequential mode, Megatron's dp_balanced first pass).
 * pack.max_samples (o->max_items) closes a pack once it holds that many items, in
 * every algorithm. */
#include "pack_impl.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "bigmem.h"
#include "rng.h"
#include "sort.h"

static const char *const algo_names[] = {
    [VL_PACK_FFD] = "ffd", [VL_PACK_BFD] = "bfd", [VL_PACK_FFS] = "ffs",
    [VL_PACK_BFS] = "bfs", [VL_PACK_ISF] = "isf", [VL_PACK_SPFHP] = "spfhp",
    [VL_PACK_WFD] = "wfd", [VL_PACK_NF] = "nf",
};
#define NALGOS (sizeof algo_names / sizeof algo_names[0])

int vl_pack_algo_parse(const char *name, vl_pack_algo *algo)
{
    for (size_t i = 0; i < NALGOS; i++)
        if (name != NULL && strcmp(name, algo_names[i]) == 0) {
            *algo = (vl_pack_algo)i;
            return 0;
        }
    return -1;
}

const char *vl_pack_algo_name(vl_pack_algo algo)
{
    return (size_t)algo < NALGOS ? algo_names[algo] : "unknown";
}

/* ---- entry point ------------------------------------------------------------------ */

/* Pairs from items, checking each against the capacity on the way. */
static vl_status make_pairs(uint64_t *p, const uint32_t *items, size_t n, const uint32_t *len,
                            uint32_t cap, vl_err *err)
{
    if (cap == 0)
        return vl_seterr(err, VL_EUSAGE, "pack: bin capacity must be positive");
    for (size_t i = 0; i < n; i++) {
        uint32_t l = len[items[i]];
        if (l > cap)
            return vl_seterr(err, VL_EUSAGE,
                             "pack: sample %u has %u tokens, more than the capacity %u",
                             items[i], l, cap);
        p[i] = ((uint64_t)l << 32) | items[i];
    }
    return VL_OK;
}

/* From this many items, make_pairs_by_value pays: the lengths of a large shuffled item
 * list lie beyond the caches, read one miss per item. */
#define BY_VALUE_MIN 65536

/* The pairs of the algorithms that start from value order (ffs, bfs, isf), made in that
 * order: the 4-byte indices radix-sorted, then their lengths read in ascending index
 * order (a stream, not a miss per item), so that vl__pk_sort_values finds them sorted.
 * Where make_pairs gathered the lengths at random and sorted 8-byte pairs: at 10M items
 * the pairs and their sort grew 19 and 12 times from 1M (perf).  An item over cap: the
 * pairs are made again in the caller's order, for make_pairs' error (its first such
 * item).  VL_ENOMEM when the index buffers cannot be had. */
static vl_status make_pairs_by_value(uint64_t *p, const uint32_t *items, size_t n,
                                     const uint32_t *len, uint32_t cap, vl_err *err)
{
    uint32_t *idx = vl_big_malloc(2 * n * sizeof *idx);

    if (idx == NULL)
        return vl_seterr(err, VL_ENOMEM, "out of memory packing %zu items", n);
    memcpy(idx, items, n * sizeof *idx);
    vl_sort_u32_radix(idx, idx + n, n);
    for (size_t i = 0; i < n; i++) {
        uint32_t l = len[idx[i]];
        if (l > cap) {
            free(idx);
            return make_pairs(p, items, n, len, cap, err);
        }
        p[i] = ((uint64_t)l << 32) | idx[i];
    }
    free(idx);
    return VL_OK;
}

static bool by_value(vl_pack_algo algo, size_t n, uint32_t cap)
{
    return n >= BY_VALUE_MIN && cap > 0 && /* cap 0: make_pairs' error */
           (algo == VL_PACK_FFS || algo == VL_PACK_BFS || algo == VL_PACK_ISF);
}

static vl_status shuffled(uint64_t *p, size_t n, uint64_t seed, uint64_t stream, vl_err *err)
{
    vl_status st = vl__pk_sort_values(p, n, err);

    if (st == VL_OK)
        vl__pk_shuffle(p, n, seed, stream);
    return st;
}

static vl_status dispatch(vl_bins *out, uint64_t *p, size_t n, const vl_pack_opts *o,
                          vl_err *err)
{
    uint32_t cap = o->cap, k = o->max_items;
    vl_status st = VL_OK;

    switch (o->algo) {
    case VL_PACK_FFD:
    case VL_PACK_BFD:
    case VL_PACK_SPFHP:
    case VL_PACK_WFD: st = vl__pk_sort_len_desc(p, n, err); break;
    case VL_PACK_FFS:
    case VL_PACK_BFS:
        st = shuffled(p, n, o->seed,
                      o->algo == VL_PACK_FFS ? VL_PK_STREAM_FFS : VL_PK_STREAM_BFS, err);
        break;
    case VL_PACK_ISF: st = vl__pk_sort_values(p, n, err); break;
    case VL_PACK_NF: break;
    default: return vl_seterr(err, VL_EUSAGE, "pack: unknown algorithm %d", (int)o->algo);
    }
    if (st != VL_OK)
        return st;
    switch (o->algo) {
    case VL_PACK_FFD:
    case VL_PACK_FFS: return vl__pk_first_fit(out, p, n, cap, k, err);
    case VL_PACK_BFD:
    case VL_PACK_BFS: return vl__pk_residual_fit(out, p, n, cap, k, false, err);
    case VL_PACK_WFD: return vl__pk_residual_fit(out, p, n, cap, k, true, err);
    case VL_PACK_SPFHP: return vl__pk_spfhp(out, p, n, cap, k, err);
    case VL_PACK_ISF: return vl__pk_isf(out, p, n, o, err);
    case VL_PACK_NF: return vl__pk_next_fit(out, p, n, cap, k, err);
    }
    return vl_seterr(err, VL_EUSAGE, "pack: unknown algorithm %d", (int)o->algo);
}

vl_status vl_pack(vl_bins *out, const uint32_t *items, size_t n, const uint32_t *len,
                  const vl_pack_opts *o, vl_err *err)
{
    uint64_t *p;
    vl_status st;

    memset(out, 0, sizeof *out);
    if ((p = vl_big_malloc((n ? n : 1) * sizeof *p)) == NULL)
        return vl_seterr(err, VL_ENOMEM, "out of memory packing %zu items", n);
    if (by_value(o->algo, n, o->cap))
        st = make_pairs_by_value(p, items, n, len, o->cap, err);
    else
        st = make_pairs(p, items, n, len, o->cap, err);
    if (st == VL_OK)
        st = dispatch(out, p, n, o, err);
    free(p);
    return st;
}
