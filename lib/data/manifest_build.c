/* lib/data/manifest_build.c -- appends parsed records to the sample table: arrays grown
 * geometrically and created only when first needed (ids, loss, sources), duplicate
 * ids caught through the id index, and where each sample came from, for messages. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bigmem.h"
#include "manifest_impl.h"

/* The keys a length may go by, in every format (CSV header, JSONL record), by rank. */
const char *const vl__len_names[VL__NLEN_NAMES] = {"length", "len", "num_tokens"};

#define MB_CAP0 (64u << 10)
#define MB_MAX_SAMPLES ((size_t)UINT32_MAX - 1) /* index + 1 must fit the id index */
#define MB_MAX_SOURCES 65535u

vl_status vl__mb_err(vl__mb *b, long col, const char *fmt, ...)
{
    char msg[VL_ERRMSG_MAX], at[32] = "";
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (col > 0)
        snprintf(at, sizeof at, ":%ld", col);
    return vl_seterr(b->err, VL_EDATA, "%s:%llu%s: %s", b->names[b->file],
                     (unsigned long long)b->line, at, msg);
}

static vl_status oom(vl__mb *b, const char *what)
{
    return vl_seterr(b->err, VL_ENOMEM, "out of memory (%s, %zu samples read)", what, b->m->n);
}

vl_status vl__mb_init(vl__mb *b, vl_manifest *m, const vl_manifest_opts *opts, vl_err *err)
{
    memset(b, 0, sizeof *b);
    b->m = m;
    b->opts = opts;
    b->err = err;
    b->cap = MB_CAP0;
    if ((m->len = vl_big_malloc(b->cap * sizeof *m->len)) == NULL)
        return oom(b, "sample table");
    return VL_OK;
}

void vl__mb_fini(vl__mb *b)
{
    free(b->runs);
    free(b->src_slot);
    b->runs = NULL;
    b->src_slot = NULL;
}

/* realloc from old to n elements that leaves *p alone on failure. */
static bool grow_array(void *pp, size_t old, size_t n, size_t size)
{
    void **p = pp;
    void *q;

    if (*p == NULL)
        return true; /* arrays not created yet stay absent */
    if ((q = vl_big_realloc(*p, old * size, n * size)) == NULL)
        return false;
    *p = q;
    return true;
}

static vl_status grow(vl__mb *b)
{
    vl_manifest *m = b->m;
    size_t nc = b->cap * 2;

    if (m->n >= MB_MAX_SAMPLES)
        return vl__mb_err(b, 0, "too many samples (max %zu)", MB_MAX_SAMPLES);
    if (nc > MB_MAX_SAMPLES)
        nc = MB_MAX_SAMPLES;
    if (!grow_array(&m->len, b->cap, nc, sizeof *m->len) ||
        !grow_array(&m->loss, b->cap, nc, sizeof *m->loss) ||
        !grow_array(&m->source, b->cap, nc, sizeof *m->source) ||
        !grow_array(&m->id_kind, b->cap, nc, sizeof *m->id_kind) ||
        !grow_array(&m->id_val, b->cap, nc, sizeof *m->id_val))
        return oom(b, "sample table");
    b->cap = nc;
    return VL_OK;
}

/* Sample m->n is at b->file:b->line; start a new run unless it extends the last one. */
static vl_status note_run(vl__mb *b)
{
    const vl__run *last = b->nruns ? &b->runs[b->nruns - 1] : NULL;

    if (last && last->file == b->file && last->line + (b->m->n - last->sample) == b->line)
        return VL_OK;
    if (b->nruns == b->runcap) {
        size_t nc = b->runcap ? b->runcap * 2 : 16;
        vl__run *r = realloc(b->runs, nc * sizeof *r);
        if (r == NULL)
            return oom(b, "line table");
        b->runs = r;
        b->runcap = nc;
    }
    b->runs[b->nruns++] = (vl__run){b->m->n, b->line, b->file};
    return VL_OK;
}

/* File and line of an earlier sample i. */
static void where(const vl__mb *b, size_t i, const char **file, unsigned long long *line)
{
    size_t lo = 0, hi = b->nruns;

    while (hi - lo > 1) { /* last run starting at or before i */
        size_t mid = lo + (hi - lo) / 2;
        if (b->runs[mid].sample <= i)
            lo = mid;
        else
            hi = mid;
    }
    *file = b->names[b->runs[lo].file];
    *line = b->runs[lo].line + (i - b->runs[lo].sample);
}

/* ---- ids ---- */

static vl_status pool_add(vl__mb *b, const char *s, size_t n, uint64_t *off)
{
    vl_manifest *m = b->m;

    if (m->id_pool_cap - m->id_pool_len < n + 1) {
        size_t nc = m->id_pool_cap ? m->id_pool_cap : 1u << 16;
        while (nc - m->id_pool_len < n + 1)
            nc *= 2;
        char *p = realloc(m->id_pool, nc);
        if (p == NULL)
            return oom(b, "sample ids");
        m->id_pool = p;
        m->id_pool_cap = nc;
    }
    memcpy(m->id_pool + m->id_pool_len, s, n);
    m->id_pool[m->id_pool_len + n] = '\0';
    *off = m->id_pool_len;
    m->id_pool_len += n + 1;
    return VL_OK;
}

/* The first explicit id: earlier samples had implicit ids, which become integers. */
static vl_status ids_start(vl__mb *b)
{
    vl_manifest *m = b->m;

    m->id_kind = malloc(b->cap * sizeof *m->id_kind);
    m->id_val = malloc(b->cap * sizeof *m->id_val);
    if (m->id_kind == NULL || m->id_val == NULL)
        return oom(b, "sample ids");
    for (size_t i = 0; i < m->n; i++) {
        m->id_kind[i] = VL_ID_INT;
        m->id_val[i] = i;
    }
    b->last_id = (int64_t)m->n - 1;
    return VL_OK;
}

/* Increasing integer ids (the common case) cannot repeat, so they need no index;
 * the first id out of order indexes every earlier sample and hashing takes over. */
static vl_status start_index(vl__mb *b)
{
    size_t dup;
    vl_status st;

    b->unsorted = true;
    for (size_t i = 0; i < b->m->n; i++)
        if ((st = vl__index_insert(b->m, i, &dup, b->err)) != VL_OK)
            return st;
    return VL_OK;
}

static vl_status dup_err(vl__mb *b, size_t first)
{
    char id[128];
    const char *file;
    unsigned long long line;
    size_t need = vl_manifest_id_json(b->m, b->m->n, id, sizeof id);

    if (need >= sizeof id)
        memcpy(id + sizeof id - 4, "...", 4);
    where(b, first, &file, &line);
    return vl__mb_err(b, 0, "duplicate sample id %s (first at %s:%llu)", id, file, line);
}

static vl_status set_id(vl__mb *b, const vl__rec *r)
{
    vl_manifest *m = b->m;
    size_t i = m->n, dup;
    vl_status st;

    if (r->id_kind == VL_ID_STR) {
        if ((st = pool_add(b, r->id_str, r->id_len, &m->id_val[i])) != VL_OK)
            return st;
        m->id_kind[i] = VL_ID_STR;
    } else {
        m->id_kind[i] = VL_ID_INT;
        m->id_val[i] = r->id_kind == VL_ID_INT ? (uint64_t)r->id_int : (uint64_t)i;
    }
    if (!b->unsorted && m->id_kind[i] == VL_ID_INT &&
        (i == 0 || (int64_t)m->id_val[i] > b->last_id)) {
        b->last_id = (int64_t)m->id_val[i];
        return VL_OK;
    }
    if (!b->unsorted && (st = start_index(b)) != VL_OK)
        return st;
    if ((st = vl__index_insert(m, i, &dup, b->err)) != VL_OK)
        return st;
    return dup == SIZE_MAX ? VL_OK : dup_err(b, dup);
}

/* ---- sources ---- */

static vl_status src_rehash(vl__mb *b, size_t nc)
{
    uint32_t *slot = calloc(nc, sizeof *slot);

    if (slot == NULL)
        return oom(b, "source names");
    for (size_t k = 0; k < b->m->nsources; k++) {
        const char *s = b->m->sources[k];
        size_t h = (size_t)vl__hash_str(s, strlen(s)) & (nc - 1);
        while (slot[h] != 0)
            h = (h + 1) & (nc - 1);
        slot[h] = (uint32_t)k + 1;
    }
    free(b->src_slot);
    b->src_slot = slot;
    b->src_cap = nc;
    return VL_OK;
}

static vl_status src_new(vl__mb *b, const char *s, size_t n, uint16_t *idx)
{
    vl_manifest *m = b->m;
    char *copy;
    vl_status st;

    if (m->nsources >= MB_MAX_SOURCES)
        return vl__mb_err(b, 0, "too many distinct sources (max %u)", MB_MAX_SOURCES);
    if (m->nsources == b->sources_cap) {
        size_t nc = b->sources_cap ? b->sources_cap * 2 : 8;
        char **ns = realloc(m->sources, nc * sizeof *ns);
        if (ns == NULL)
            return oom(b, "source names");
        m->sources = ns;
        b->sources_cap = nc;
    }
    if ((copy = malloc(n + 1)) == NULL)
        return oom(b, "source names");
    memcpy(copy, s, n);
    copy[n] = '\0';
    *idx = (uint16_t)m->nsources;
    m->sources[m->nsources++] = copy;
    if (m->nsources * 2 > b->src_cap) /* keep the table at most half full */
        if ((st = src_rehash(b, b->src_cap ? b->src_cap * 2 : 64)) != VL_OK)
            return st;
    return VL_OK;
}

static vl_status intern_source(vl__mb *b, const char *s, size_t n, uint16_t *idx)
{
    char **src = b->m->sources;
    size_t h;

    if (b->m->nsources > 0 && strncmp(src[b->last_src], s, n) == 0 &&
        src[b->last_src][n] == '\0') {
        *idx = b->last_src;
        return VL_OK;
    }
    if (b->src_cap > 0)
        for (h = (size_t)vl__hash_str(s, n) & (b->src_cap - 1); b->src_slot[h] != 0;
             h = (h + 1) & (b->src_cap - 1)) {
            const char *t = src[b->src_slot[h] - 1];
            if (strncmp(t, s, n) == 0 && t[n] == '\0') {
                *idx = b->last_src = (uint16_t)(b->src_slot[h] - 1);
                return VL_OK;
            }
        }
    vl_status st = src_new(b, s, n, idx);
    b->last_src = *idx;
    return st;
}

/* The first source: earlier samples had none, recorded as the empty name. */
static vl_status sources_start(vl__mb *b)
{
    vl_manifest *m = b->m;
    uint16_t none = 0;
    vl_status st;

    if ((m->source = malloc(b->cap * sizeof *m->source)) == NULL)
        return oom(b, "source table");
    if (m->n > 0 && (st = intern_source(b, "", 0, &none)) != VL_OK)
        return st;
    for (size_t i = 0; i < m->n; i++)
        m->source[i] = none;
    return VL_OK;
}

/* ---- records ---- */

static vl_status loss_start(vl__mb *b)
{
    vl_manifest *m = b->m;

    if ((m->loss = malloc(b->cap * sizeof *m->loss)) == NULL)
        return oom(b, "loss table");
    memcpy(m->loss, m->len, m->n * sizeof *m->loss);
    return VL_OK;
}

static vl_status add_full(vl__mb *b, const vl__rec *r)
{
    vl_manifest *m = b->m;
    uint32_t loss = r->has_loss ? r->loss : r->len;
    vl_status st;

    if (r->id_kind != 0 && m->id_kind == NULL && (st = ids_start(b)) != VL_OK)
        return st;
    if (m->id_kind != NULL && (st = set_id(b, r)) != VL_OK)
        return st;
    if (loss != r->len && m->loss == NULL && (st = loss_start(b)) != VL_OK)
        return st;
    if (r->src != NULL && m->source == NULL && (st = sources_start(b)) != VL_OK)
        return st;
    if (m->source != NULL &&
        (st = intern_source(b, r->src ? r->src : "", r->src ? r->src_len : 0,
                            &m->source[m->n])) != VL_OK)
        return st;
    if (m->loss != NULL)
        m->loss[m->n] = loss;
    m->loss_tokens += loss;
    return VL_OK;
}

vl_status vl__mb_add(vl__mb *b, const vl__rec *rec)
{
    vl_manifest *m = b->m;
    vl__rec lengths;
    const vl__rec *r = rec;
    vl_status st;

    if (b->opts->lengths_only && rec->id_kind != 0) {
        lengths = *rec;
        lengths.id_kind = 0;
        r = &lengths;
    }
    if (m->n == b->cap && (st = grow(b)) != VL_OK)
        return st;
    if ((st = note_run(b)) != VL_OK)
        return st;
    if (r->id_kind == 0 && !r->has_loss && r->src == NULL && m->id_kind == NULL &&
        m->loss == NULL && m->source == NULL)
        m->loss_tokens += r->len; /* the common case: nothing but a length */
    else if ((st = add_full(b, r)) != VL_OK)
        return st;
    m->len[m->n++] = r->len;
    m->tokens += r->len;
    return VL_OK;
}

/* Give back the unused tail of every array; failure to shrink is harmless. */
static void shrink(void *pp, size_t n, size_t size)
{
    void **p = pp;
    void *q;

    if (*p != NULL && n > 0 && (q = realloc(*p, n * size)) != NULL)
        *p = q;
}

vl_status vl__mb_finish(vl__mb *b)
{
    vl_manifest *m = b->m;

    shrink(&m->len, m->n, sizeof *m->len);
    shrink(&m->loss, m->n, sizeof *m->loss);
    shrink(&m->source, m->n, sizeof *m->source);
    shrink(&m->id_kind, m->n, sizeof *m->id_kind);
    shrink(&m->id_val, m->n, sizeof *m->id_val);
    shrink(&m->sources, m->nsources, sizeof *m->sources);
    if (m->id_pool != NULL) {
        shrink(&m->id_pool, m->id_pool_len, 1);
        m->id_pool_cap = m->id_pool_len;
    }
    vl__mb_fini(b);
    if (m->id_kind != NULL && !b->unsorted)
        return vl__index_sorted(m, b->err);
    return VL_OK;
}
