/* lib/plan/planio_ids.c -- sample ids of a plan read without its manifest, interned: every
 * distinct id (an integer, or a string: 5 and "5" differ) gets the next index in order of
 * first appearance, so the simulator and the metrics can tell samples apart exactly.
 * The reader starts afresh at every iteration (and at the footer's dropped ranges):
 * nothing needs a sample's identity across iterations -- a slice continuing one from
 * another iteration makes no dependency -- so the table stays the size of one
 * iteration.  Open addressing on a 64-bit hash; strings are kept in one pool. */
#include "planio_impl.h"

#include <stdlib.h>
#include <string.h>

#include "grow.h"

struct vl_idtab {
    uint64_t *hash; /* [cap] hash | 1 (0 = empty slot) */
    uint32_t *idx;  /* [cap] interned index */
    size_t cap, n;
    /* per interned index: integer value, or offset of the string in pool + its length */
    int64_t *ival;
    size_t ival_cap;
    uint64_t *soff;
    size_t soff_cap; /* UINT64_MAX: an integer id */
    uint32_t *slen;
    size_t slen_cap;
    char *pool;
    size_t npool, pool_cap;
};

vl_status vl__ids_new(vl_idtab **out, vl_err *err)
{
    *out = calloc(1, sizeof **out);
    return *out ? VL_OK : vl_seterr(err, VL_ENOMEM, "out of memory interning sample ids");
}

void vl__ids_free(vl_idtab *t)
{
    if (!t)
        return;
    free(t->hash);
    free(t->idx);
    free(t->ival);
    free(t->soff);
    free(t->slen);
    free(t->pool);
    free(t);
}

static uint64_t mix(uint64_t h)
{
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdull;
    h ^= h >> 33;
    h *= 0xc4ceb9fe1a85ec53ull;
    return h ^ (h >> 33);
}

static uint64_t hash_of(bool str, int64_t v, const char *s, size_t len)
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a, then mixed */

    if (!str)
        return mix((uint64_t)v * 2 + 1) | 1;
    for (size_t i = 0; i < len; i++)
        h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
    return mix(h * 2) | 1;
}

static bool same(const vl_idtab *t, uint32_t i, bool str, int64_t v, const char *s, size_t len)
{
    if (t->soff[i] == UINT64_MAX)
        return !str && t->ival[i] == v;
    return str && t->slen[i] == len && memcmp(t->pool + t->soff[i], s, len) == 0;
}

static vl_status rehash(vl_idtab *t, vl_err *err)
{
    size_t cap = t->cap ? t->cap * 2 : 1024;
    uint64_t *h = calloc(cap, sizeof *h);
    uint32_t *x = malloc(cap * sizeof *x);

    if (!h || !x) {
        free(h);
        free(x);
        return vl_seterr(err, VL_ENOMEM, "out of memory interning sample ids");
    }
    for (size_t i = 0; i < t->cap; i++) {
        size_t j;
        if (!t->hash[i])
            continue;
        for (j = t->hash[i] & (cap - 1); h[j]; j = (j + 1) & (cap - 1))
            ;
        h[j] = t->hash[i];
        x[j] = t->idx[i];
    }
    free(t->hash);
    free(t->idx);
    t->hash = h;
    t->idx = x;
    t->cap = cap;
    return VL_OK;
}

/* Record id number t->n. */
static vl_status store(vl_idtab *t, bool str, int64_t v, const char *s, size_t len,
                       vl_err *err)
{
    size_t n = t->n;
    vl_status st;

    if ((st = vl_grow(&t->ival, &t->ival_cap, n + 1, sizeof *t->ival, err)) ||
        (st = vl_grow(&t->soff, &t->soff_cap, n + 1, sizeof *t->soff, err)) ||
        (st = vl_grow(&t->slen, &t->slen_cap, n + 1, sizeof *t->slen, err)))
        return st;
    t->ival[n] = v;
    t->soff[n] = UINT64_MAX;
    t->slen[n] = 0;
    if (!str)
        return VL_OK;
    if (len > UINT32_MAX)
        return vl_seterr(err, VL_EDATA, "a sample id of %zu bytes", len);
    if ((st = vl_grow(&t->pool, &t->pool_cap, t->npool + len + 1, 1, err)) != VL_OK)
        return st;
    memcpy(t->pool + t->npool, s, len);
    t->soff[n] = t->npool;
    t->slen[n] = (uint32_t)len;
    t->npool += len;
    return VL_OK;
}

vl_status vl__ids_intern(vl_idtab *t, bool str, int64_t v, const char *s, size_t len,
                         uint32_t *out, vl_err *err)
{
    uint64_t h = hash_of(str, v, s, len);
    size_t j;
    vl_status st;

    if (2 * (t->n + 1) > t->cap && (st = rehash(t, err)) != VL_OK)
        return st;
    for (j = h & (t->cap - 1); t->hash[j]; j = (j + 1) & (t->cap - 1))
        if (t->hash[j] == h && same(t, t->idx[j], str, v, s, len)) {
            *out = t->idx[j];
            return VL_OK;
        }
    if (t->n >= VL_SAMPLE_UNKNOWN)
        return vl_seterr(err, VL_EDATA, "more than %u distinct sample ids", VL_SAMPLE_UNKNOWN);
    if ((st = store(t, str, v, s, len, err)) != VL_OK)
        return st;
    t->hash[j] = h;
    t->idx[j] = (uint32_t)t->n;
    *out = (uint32_t)t->n++;
    return VL_OK;
}

size_t vl__ids_count(const vl_idtab *t)
{
    return t->n;
}

void vl__ids_undo(vl_idtab *t, size_t n)
{
    if (n >= t->n)
        return;
    /* rebuild the table over ids [0, n): removing the newer slots alone could break a
     * probe chain laid down by a rehash after them */
    t->n = n;
    if (t->cap > 0)
        memset(t->hash, 0, t->cap * sizeof *t->hash);
    for (size_t i = 0; i < n; i++) {
        bool str = t->soff[i] != UINT64_MAX;
        uint64_t h = hash_of(str, t->ival[i], str ? t->pool + t->soff[i] : NULL, t->slen[i]);
        size_t j;
        for (j = h & (t->cap - 1); t->hash[j]; j = (j + 1) & (t->cap - 1))
            ;
        t->hash[j] = h;
        t->idx[j] = (uint32_t)i;
    }
    t->npool = 0;
    for (size_t i = n; i-- > 0;)
        if (t->soff[i] != UINT64_MAX) {
            t->npool = t->soff[i] + t->slen[i];
            break;
        }
}

void vl__ids_reset(vl_idtab *t)
{
    vl__ids_undo(t, 0);
}
