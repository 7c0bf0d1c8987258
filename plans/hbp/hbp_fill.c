/* plans/hbp/hbp_fill.c -- HBP's GreedyFill (paper Alg. 6, appendix E): a pack of a longer
 * group takes, in stored order, every sample of the shorter groups that still fits its
 * residual space.  Each shorter group is a pool that answers "first sample at or after
 * position p with length <= room" in O(64 log64 n), so filling costs O((packs + fillers)
 * log n) instead of the literal O(packs x samples) scan. */
#include <stdlib.h>

#include "bigmem.h"
#include "hbp_impl.h"
#include "prefetch.h"

#define FAN_BITS 6
#define FAN (1u << FAN_BITS)
#define POOL_LEVELS 8 /* 64^8 > 2^32 items */
#define NONE SIZE_MAX
#define TAKEN UINT32_MAX
#define AHEAD 64 /* items whose lengths are read ahead (16 was too few at 10M) */

/* A 64-ary min tree over the pool's lengths in stored order: level 0 holds each item's
 * length (TAKEN once GreedyFill moved it), level k+1 the minimum of 64 entries of level
 * k.  A plain binary segment tree would need 8 bytes per item; this needs ~4. */
struct hbp_pool {
    const uint32_t *item; /* [n] sample indices, stored order (the caller's) */
    const uint32_t *len;
    size_t n;
    int levels;
    uint32_t *lv[POOL_LEVELS];
    size_t nl[POOL_LEVELS];
};

void vl__hbp_pool_free(hbp_pool *p)
{
    if (p == NULL)
        return;
    for (int k = 0; k < p->levels; k++)
        free(p->lv[k]);
    free(p);
}

static uint32_t block_min(const uint32_t *v, size_t from, size_t to)
{
    uint32_t m = TAKEN;

    for (size_t i = from; i < to; i++)
        if (v[i] < m)
            m = v[i];
    return m;
}

vl_status vl__hbp_pool_new(hbp_pool **out, const uint32_t *items, size_t n,
                           const uint32_t *len, vl_err *err)
{
    hbp_pool *p = calloc(1, sizeof *p);

    *out = NULL;
    if (p == NULL)
        goto oom;
    p->item = items;
    p->len = len;
    p->n = n;
    for (size_t cnt = n; cnt > 0 && p->levels < POOL_LEVELS; cnt = (cnt + FAN - 1) / FAN) {
        int k = p->levels;
        if ((p->lv[k] = vl_big_malloc(cnt * sizeof *p->lv[k])) == NULL)
            goto oom;
        p->nl[k] = cnt;
        p->levels++;
        for (size_t i = 0; k == 0 && i < cnt; i++) {
            if (i + AHEAD < cnt) /* the items' lengths lie at random */
                VL_PREFETCH(len + items[i + AHEAD]);
            p->lv[0][i] = len[items[i]];
        }
        for (size_t i = 0; k > 0 && i < cnt; i++)
            p->lv[k][i] =
                block_min(p->lv[k - 1], i * FAN,
                          i * FAN + FAN < p->nl[k - 1] ? i * FAN + FAN : p->nl[k - 1]);
        if (cnt <= FAN)
            break;
    }
    *out = p;
    return VL_OK;
oom:
    vl__hbp_pool_free(p);
    return vl_seterr(err, VL_ENOMEM, "out of memory for a filler pool of %zu samples", n);
}

/* Leftmost position ≥ from whose length is ≤ room, or NONE: finish the current block at
 * each level going up until some block minimum qualifies, then descend to its leftmost
 * qualifying leaf. */
static size_t pool_find(const hbp_pool *p, size_t from, uint32_t room)
{
    size_t i = from;
    int k = 0;

    if (from >= p->n)
        return NONE;
    for (;;) {
        size_t end = (i | (FAN - 1)) + 1;
        if (end > p->nl[k])
            end = p->nl[k];
        for (; i < end; i++)
            if (p->lv[k][i] <= room)
                goto down;
        if (end == p->nl[k] || k + 1 == p->levels)
            return NONE;
        i = end >> FAN_BITS;
        k++;
    }
down:
    while (k > 0) {
        k--;
        i <<= FAN_BITS;
        while (p->lv[k][i] > room)
            i++;
    }
    return i;
}

static void pool_take(hbp_pool *p, size_t pos)
{
    p->lv[0][pos] = TAKEN;
    for (int k = 1; k < p->levels; k++) {
        size_t b = pos >> (FAN_BITS * k), from = b * FAN, to = from + FAN;
        uint32_t m;
        if (to > p->nl[k - 1])
            to = p->nl[k - 1];
        m = block_min(p->lv[k - 1], from, to);
        if (p->lv[k][b] == m)
            break; /* nothing above changes either */
        p->lv[k][b] = m;
    }
}

size_t vl__hbp_pool_left(const hbp_pool *p, uint32_t *out)
{
    size_t k = 0;

    for (size_t i = 0; i < p->n; i++)
        if (p->lv[0][i] != TAKEN)
            out[k++] = p->item[i];
    return k;
}

size_t vl__hbp_fill(hbp_pool *const *src, size_t nsrc, uint32_t cap, uint64_t *load,
                    uint64_t *attn, uint32_t *out)
{
    size_t k = 0;

    for (size_t j = 0; j < nsrc; j++) {
        hbp_pool *p = src[j];
        /* The room only shrinks, so an item skipped once never fits later: the scan
         * resumes after the last taken item, as Algorithm 6's single pass does. */
        for (size_t pos = 0; *load < cap; pos++) {
            pos = pool_find(p, pos, (uint32_t)(cap - *load));
            if (pos == NONE)
                break;
            uint32_t s = p->item[pos];
            uint64_t l = p->len[s];
            pool_take(p, pos);
            out[k++] = s;
            *load += l;
            *attn += l * l;
        }
    }
    return k;
}
