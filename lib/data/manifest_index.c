/* lib/data/manifest_index.c -- id -> sample lookup: open addressing, built while reading to
 * catch duplicates, or lazily on first find.  A slot holds the sample index and 32 bits
 * of its hash, so probing and rehashing rarely touch the ids themselves. */
#include <stdlib.h>
#include <string.h>

#include "manifest_impl.h"

typedef struct idindex {
    bool sorted;    /* integer ids in increasing order: binary search, no table */
    uint64_t *slot; /* hash tag << 32 | (sample index + 1); 0 = empty */
    size_t cap;     /* power of two */
    size_t count;
} idindex;

/* The key being looked up: an integer or a string of n bytes. */
typedef struct key {
    uint8_t kind;
    uint64_t ival;
    const char *s;
    size_t n;
} key;

static uint64_t mix(uint64_t x)
{
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ull;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

uint64_t vl__hash_str(const char *s, size_t n)
{
    uint64_t h = 0xcbf29ce484222325ull; /* FNV-1a, then mixed for the low bits */

    for (size_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)s[i]) * 0x100000001b3ull;
    return mix(h);
}

/* The high half of the hash: the slot tag, and the home position. */
static uint64_t key_tag(const key *k)
{
    return (k->kind == VL_ID_STR ? vl__hash_str(k->s, k->n) : mix(k->ival)) >> 32;
}

static key sample_key(const vl_manifest *m, size_t i)
{
    key k = {m->id_kind[i], m->id_val[i], NULL, 0};

    if (k.kind == VL_ID_STR) {
        k.s = m->id_pool + m->id_val[i];
        k.n = strlen(k.s);
    }
    return k;
}

static bool matches(const vl_manifest *m, size_t i, const key *k)
{
    if (m->id_kind[i] != k->kind)
        return false;
    if (k->kind == VL_ID_INT)
        return m->id_val[i] == k->ival;
    const char *s = m->id_pool + m->id_val[i];
    return memcmp(s, k->s, k->n) == 0 && s[k->n] == '\0';
}

#define SLOT_SAMPLE(v) ((size_t)((v)&0xffffffffu) - 1)

/* Slot holding k, or the empty slot where it would go. */
static size_t probe(const idindex *x, const vl_manifest *m, const key *k, uint64_t tag)
{
    size_t mask = x->cap - 1, h = (size_t)tag & mask;

    while (x->slot[h] != 0 &&
           (x->slot[h] >> 32 != tag || !matches(m, SLOT_SAMPLE(x->slot[h]), k)))
        h = (h + 1) & mask;
    return h;
}

static vl_status rehash(idindex *x, size_t nc, vl_err *err)
{
    uint64_t *slot = calloc(nc, sizeof *slot);

    if (slot == NULL)
        return vl_seterr(err, VL_ENOMEM, "out of memory (id index for %zu samples)", x->count);
    for (size_t j = 0; j < x->cap; j++) {
        if (x->slot[j] == 0)
            continue;
        size_t h = (size_t)(x->slot[j] >> 32) & (nc - 1);
        while (slot[h] != 0) /* keys are distinct: no compare needed */
            h = (h + 1) & (nc - 1);
        slot[h] = x->slot[j];
    }
    free(x->slot);
    x->slot = slot;
    x->cap = nc;
    return VL_OK;
}

static vl_status index_new(vl_manifest *m, vl_err *err)
{
    idindex *x = calloc(1, sizeof *x);

    if (x == NULL || (x->slot = calloc(1024, sizeof *x->slot)) == NULL) {
        free(x);
        return vl_seterr(err, VL_ENOMEM, "out of memory (id index)");
    }
    x->cap = 1024;
    m->index = x;
    return VL_OK;
}

vl_status vl__index_insert(vl_manifest *m, size_t i, size_t *dup, vl_err *err)
{
    idindex *x;
    vl_status st;
    size_t h;

    *dup = SIZE_MAX;
    if (m->index == NULL && (st = index_new(m, err)) != VL_OK)
        return st;
    x = m->index;
    if ((x->count + 1) * 4 > x->cap * 3 && (st = rehash(x, x->cap * 2, err)) != VL_OK)
        return st; /* load at most 3/4: probes stay within a cache line or two */
    key k = sample_key(m, i);
    uint64_t tag = key_tag(&k);
    h = probe(x, m, &k, tag);
    if (x->slot[h] != 0) {
        *dup = SLOT_SAMPLE(x->slot[h]);
        return VL_OK;
    }
    x->slot[h] = tag << 32 | (uint64_t)(i + 1);
    x->count++;
    return VL_OK;
}

vl_status vl__index_sorted(vl_manifest *m, vl_err *err)
{
    idindex *x = calloc(1, sizeof *x);

    if (x == NULL)
        return vl_seterr(err, VL_ENOMEM, "out of memory (id index)");
    x->sorted = true;
    m->index = x;
    return VL_OK;
}

static long long bsearch_int(const vl_manifest *m, int64_t id)
{
    size_t lo = 0, hi = m->n;

    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if ((int64_t)m->id_val[mid] < id)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < m->n && (int64_t)m->id_val[lo] == id ? (long long)lo : -1;
}

void vl__index_free(void *index)
{
    idindex *x = index;

    if (x != NULL)
        free(x->slot);
    free(x);
}

/* Index every sample, for manifests built without one (by hand, say). */
static vl_status index_build(vl_manifest *m, vl_err *err)
{
    size_t dup, i = 0;
    vl_status st;

    while (i < m->n && m->id_kind[i] == VL_ID_INT &&
           (i == 0 || (int64_t)m->id_val[i] > (int64_t)m->id_val[i - 1]))
        i++;
    if (i == m->n)
        return vl__index_sorted(m, err);
    for (i = 0; i < m->n; i++)
        if ((st = vl__index_insert(m, i, &dup, err)) != VL_OK)
            return st;
    return VL_OK;
}

static long long find(vl_manifest *m, const key *k, vl_err *err)
{
    const idindex *x;
    size_t h;

    if (m->index == NULL && m->n > 0 && index_build(m, err) != VL_OK) {
        vl__index_free(m->index); /* half built: try again next time */
        m->index = NULL;
        return -2;
    }
    if ((x = m->index) == NULL)
        return -1;
    if (x->sorted)
        return k->kind == VL_ID_INT ? bsearch_int(m, (int64_t)k->ival) : -1;
    h = probe(x, m, k, key_tag(k));
    return x->slot[h] != 0 ? (long long)SLOT_SAMPLE(x->slot[h]) : -1;
}

#if defined(__GNUC__)
#define PREFETCH(a) __builtin_prefetch(a)
#else
#define PREFETCH(a) ((void)(a))
#endif
#define BATCH 64

/* One batch: each stage touches what the next will read, for every id before any
 * waits -- the slot, then the candidate's kind and value, then its string. */
static void find_batch(const vl_manifest *m, const idindex *x, const char *const *ids,
                       const size_t *lens, size_t n, long long *out)
{
    size_t mask = x->cap - 1;
    uint64_t tag[BATCH];

    for (size_t i = 0; i < n; i++) {
        key k = {VL_ID_STR, 0, ids[i], lens[i]};
        tag[i] = key_tag(&k);
        PREFETCH(&x->slot[tag[i] & mask]);
    }
    for (size_t i = 0; i < n; i++) {
        uint64_t v = x->slot[tag[i] & mask];
        if (v != 0) {
            PREFETCH(&m->id_kind[SLOT_SAMPLE(v)]);
            PREFETCH(&m->id_val[SLOT_SAMPLE(v)]);
        }
    }
    for (size_t i = 0; i < n; i++) {
        uint64_t v = x->slot[tag[i] & mask];
        if (v != 0 && v >> 32 == tag[i] && m->id_kind[SLOT_SAMPLE(v)] == VL_ID_STR)
            PREFETCH(m->id_pool + m->id_val[SLOT_SAMPLE(v)]);
    }
    for (size_t i = 0; i < n; i++) {
        key k = {VL_ID_STR, 0, ids[i], lens[i]};
        size_t h = probe(x, m, &k, tag[i]);
        out[i] = x->slot[h] != 0 ? (long long)SLOT_SAMPLE(x->slot[h]) : -1;
    }
}

vl_status vl_manifest_find_strs(vl_manifest *m, const char *const *ids, const size_t *lens,
                                size_t n, long long *out, vl_err *err)
{
    vl_status st;

    if (m->id_kind == NULL || m->n == 0 || (m->index && ((idindex *)m->index)->sorted)) {
        for (size_t i = 0; i < n; i++)
            out[i] = -1; /* implicit or integer ids only: no string matches */
        return VL_OK;
    }
    if ((st = vl_manifest_index(m, err)) != VL_OK)
        return st;
    for (size_t i = 0; i < n; i += BATCH)
        find_batch(m, m->index, ids + i, lens + i, n - i < BATCH ? n - i : BATCH, out + i);
    return VL_OK;
}

vl_status vl_manifest_index(vl_manifest *m, vl_err *err)
{
    vl_status st;

    if (m->id_kind == NULL || m->index != NULL || m->n == 0)
        return VL_OK;
    if ((st = index_build(m, err)) != VL_OK) {
        vl__index_free(m->index);
        m->index = NULL;
    }
    return st;
}

long long vl_manifest_find_int(vl_manifest *m, int64_t id, vl_err *err)
{
    key k = {VL_ID_INT, (uint64_t)id, NULL, 0};

    if (m->id_kind == NULL) /* implicit ids: the id is the index */
        return id >= 0 && (uint64_t)id < m->n ? (long long)id : -1;
    return find(m, &k, err);
}

long long vl_manifest_find_str(vl_manifest *m, const char *id, vl_err *err)
{
    key k = {VL_ID_STR, 0, id, strlen(id)};

    if (m->id_kind == NULL)
        return -1;
    return find(m, &k, err);
}
