/* lib/data/sampler.c -- which samples get planned (the oversize policy, its removals
 * returned as dropped ranges so nothing disappears silently), their seeded order per epoch, and the cut of that
 * order into global batches by sample count or token budget. */
#include "sampler.h"

#include <stdlib.h>
#include <string.h>

#include "bigmem.h"
#include "prefetch.h"
#include "rng.h"

/* Epoch orders draw from their own stream family, apart from the packers' streams. */
#define STREAM_EPOCH 0x45504F4348000000ull /* "EPOCH" */

void vl_selection_free(vl_selection *sel)
{
    if (sel == NULL)
        return;
    free(sel->idx);
    free(sel->own);
    free(sel->drops);
    memset(sel, 0, sizeof *sel);
}

static vl_status oversize_error(const vl_manifest *m, uint32_t limit, const char *why,
                                size_t count, size_t first, vl_err *err)
{
    char id[128];

    vl_manifest_id_json(m, first, id, sizeof id);
    return vl_seterr(err, VL_EDATA,
                     "%zu samples exceed %u tokens, the length limit (%s; first: id %s, "
                     "length %u); set training.oversize=truncate or drop",
                     count, limit, why ? why : "training.max_seq_len", id, m->len[first]);
}

/* Record what the policy removes (over of them) and, for truncation, shorten the
 * effective length. */
static vl_status apply_oversize(vl_selection *sel, const vl_manifest *m, uint32_t limit,
                                vl_oversize policy, size_t over, vl_err *err)
{
    if (!(sel->drops = malloc(over * sizeof *sel->drops)))
        return vl_seterr(err, VL_ENOMEM, "out of memory recording %zu dropped samples", over);
    for (size_t i = 0; i < m->n; i++) {
        uint32_t l = m->len[i];
        if (l <= limit)
            continue;
        if (policy == VL_OVERSIZE_TRUNCATE) {
            sel->own[i] = limit;
            sel->drops[sel->ndrops++] =
                (vl_drop){(uint32_t)i, limit, l - limit, VL_DROP_TRUNCATED};
        } else {
            sel->drops[sel->ndrops++] = (vl_drop){(uint32_t)i, 0, l, VL_DROP_OVERSIZE};
        }
    }
    return VL_OK;
}

static vl_status select_alloc(vl_selection *sel, const vl_manifest *m, size_t keep,
                              int truncating, vl_err *err)
{
    sel->idx = vl_big_malloc((keep ? keep : 1) * sizeof *sel->idx);
    if (truncating)
        sel->own = vl_big_malloc((m->n ? m->n : 1) * sizeof *sel->own);
    if (sel->idx == NULL || (truncating && sel->own == NULL)) {
        vl_selection_free(sel);
        return vl_seterr(err, VL_ENOMEM, "out of memory selecting %zu samples", m->n);
    }
    if (truncating)
        memcpy(sel->own, m->len, m->n * sizeof *sel->own);
    return VL_OK;
}

vl_status vl_select(vl_selection *sel, const vl_manifest *m, uint32_t limit,
                    vl_oversize policy, vl_err *err)
{
    return vl_select_why(sel, m, limit, NULL, policy, err);
}

vl_status vl_select_why(vl_selection *sel, const vl_manifest *m, uint32_t limit,
                        const char *why, vl_oversize policy, vl_err *err)
{
    size_t over = 0, first = 0;
    vl_status st;

    memset(sel, 0, sizeof *sel);
    if (limit == 0)
        return vl_seterr(err, VL_EUSAGE, "select: the length limit must be positive");
    for (size_t i = m->n; i-- > 0;)
        if (m->len[i] > limit) {
            over++;
            first = i;
        }
    if (over > 0 && policy == VL_OVERSIZE_ERROR)
        return oversize_error(m, limit, why, over, first, err);
    if (over > 0 && policy == VL_OVERSIZE_SPLIT) /* a splitting strategy sets no limit */
        return vl_seterr(err, VL_ECONFIG,
                         "training.oversize=split: %zu samples exceed %u tokens (%s) and "
                         "this strategy cannot split them (only pack does); use truncate or "
                         "drop",
                         over, limit, why ? why : "training.max_seq_len");

    int truncating = over > 0 && policy == VL_OVERSIZE_TRUNCATE;
    size_t keep = policy == VL_OVERSIZE_DROP ? m->n - over : m->n;
    if ((st = select_alloc(sel, m, keep, truncating, err)) != VL_OK)
        return st;
    if (over > 0 && (st = apply_oversize(sel, m, limit, policy, over, err)) != VL_OK) {
        vl_selection_free(sel);
        return st;
    }
    sel->len = truncating ? sel->own : m->len;
    for (size_t i = 0; i < m->n; i++) {
        if (policy == VL_OVERSIZE_DROP && m->len[i] > limit)
            continue;
        sel->idx[sel->n++] = (uint32_t)i;
        sel->tokens += sel->len[i];
    }
    return VL_OK;
}

void vl_epoch_order(const vl_selection *sel, uint64_t seed, uint32_t epoch, uint32_t *order)
{
    vl_rng r;

    if (sel->n == 0)
        return;
    memcpy(order, sel->idx, sel->n * sizeof *order);
    vl_rng_seed(&r, seed, STREAM_EPOCH + epoch);
    vl_rng_shuffle_u32(&r, order, sel->n);
}

void vl_batches_free(vl_batches *b)
{
    if (b == NULL)
        return;
    free(b->start);
    memset(b, 0, sizeof *b);
}

/* Lengths are read this many samples ahead of the token cut: an epoch's order visits
 * them at random, and at millions of samples they lie beyond the caches; 64, as the
 * shuffles in rng.c: 16 kept too few misses in flight at 10M samples. */
#define CUT_AHEAD 64

/* End of the batch starting at i: at least one sample, then while the budget holds. */
static size_t token_batch_end(const uint32_t *order, size_t n, size_t i, const uint32_t *len,
                              uint64_t budget)
{
    uint64_t sum = len[order[i]];

    for (i++; i < n && sum + len[order[i]] <= budget; i++) {
        if (i + CUT_AHEAD < n)
            VL_PREFETCH(len + order[i + CUT_AHEAD]);
        sum += len[order[i]];
    }
    return i;
}

vl_status vl_make_batches(vl_batches *out, const uint32_t *order, size_t n,
                          const uint32_t *len, const vl_training_cfg *t, vl_err *err)
{
    size_t nb = 0;

    memset(out, 0, sizeof *out);
    if (t->global_batch == 0 && t->global_tokens == 0)
        return vl_seterr(err, VL_ECONFIG,
                         "training: set global_batch (samples) or global_tokens");
    if (t->global_batch > 0)
        nb = (n + t->global_batch - 1) / t->global_batch;
    else
        for (size_t i = 0; i < n; nb++)
            i = token_batch_end(order, n, i, len, t->global_tokens);
    if ((out->start = malloc((nb + 1) * sizeof *out->start)) == NULL)
        return vl_seterr(err, VL_ENOMEM, "out of memory for %zu global batches", nb);
    out->n = nb;
    out->start[0] = 0;
    for (size_t b = 0; b < nb; b++) {
        size_t s = out->start[b];
        out->start[b + 1] = t->global_batch > 0
                                ? (n - s < t->global_batch ? n : s + t->global_batch)
                                : token_batch_end(order, n, s, len, t->global_tokens);
    }
    return VL_OK;
}

static uint64_t batch_pieces(const uint32_t *order, size_t a, size_t z, const uint32_t *len,
                             uint32_t piece)
{
    uint64_t k = 0;

    for (size_t i = a; i < z; i++)
        k += len[order[i]] / piece + (len[order[i]] % piece != 0);
    return k;
}

vl_status vl_batches_cover_ranks(const vl_batches *b, const uint32_t *order,
                                 const uint32_t *len, uint32_t piece, size_t share,
                                 size_t ranks, const char *who, vl_err *err)
{
    share = share ? share : 1;
    for (size_t i = 0; i + 1 < b->n; i++) {
        size_t a = b->start[i], z = b->start[i + 1];
        if ((z - a) * share >= ranks)
            continue;
        if (piece == 0)
            return vl_seterr(err, VL_ECONFIG,
                             "%sglobal batch %zu has %zu samples, fewer than the %zu "
                             "data-parallel ranks: raise training.global_batch or "
                             "training.global_tokens, or use fewer GPUs",
                             who, i, z - a, ranks);
        uint64_t k = batch_pieces(order, a, z, len, piece);
        if (k * share < ranks)
            return vl_seterr(err, VL_ECONFIG,
                             "%sglobal batch %zu has %zu samples, %llu pieces of at most %u "
                             "tokens, fewer than one for every %zu of the %zu data-parallel "
                             "ranks: raise training.global_batch or training.global_tokens, "
                             "or use fewer GPUs",
                             who, i, z - a, (unsigned long long)k, piece, share, ranks);
    }
    return VL_OK;
}
