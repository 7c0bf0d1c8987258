/* lib/io/planio_write.c -- the plan file writer (planio.h, design §7): one JSON record per
 * line, keys in the schema's fixed order, a running SHA-256 of the uncompressed bytes for
 * the footer, out through zio (zstd for ".zst") and outfile.
 *
 * The header (params and config hold reals and arbitrary nesting) is built and dumped
 * with jansson.  Iteration records and the footer hold only fixed keys, integers and ids,
 * and are nearly all of the file: they are printed by hand into the line buffer, token
 * for token what jansson's compact dump gives (tests/test_planio_json.c re-dumps every line
 * through jansson to hold that).  A json_t per integer used to cost more than planning. */
#include "planio.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jsonnum.h"
#include "jsonw.h"
#include "outfile.h"
#include "sha256.h"
#include "utf8.h"
#include "zio.h"

#ifndef VLPLAN_VERSION
#define VLPLAN_VERSION "0.0.0"
#endif

/* Reals in params/config with 15 significant digits, as the config dump writes them:
 * any such decimal survives a trip through a double, so read -> write is byte-exact. */
#define DUMP_FLAGS (JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(15))

#define LINE_FIRST ((size_t)1 << 16)
/* One reservation covers a whole range: ",[", a numeric id, offset and length with their
 * commas, and the longest closing (",\"truncated\"]"). */
#define RANGE_MAX (2 + 3 * (VL_JSONNUM_MAX + 1) + sizeof ",\"truncated\"]")

typedef struct line_buf {
    char *data;           /* allocated before the first record, so never NULL */
    size_t len, cap;
    bool oom;             /* ran out of memory (vs. an id that is not valid UTF-8) */
} line_buf;

/* ,"key": for every row of the table, built once per writer. */
#define KEY_MAX 24
#define KEYS_MAX 64
typedef struct keyset {
    char text[KEYS_MAX][KEY_MAX];
    size_t len[KEYS_MAX];
} keyset;

typedef struct writer {
    const vl_plan *p;
    vl_zwriter *zw;
    vl_sha256 sha;
    line_buf line;        /* reused for every record: the largest line is allocated once */
    uint64_t samples, tokens; /* footer totals */
    uint64_t iterations;  /* records written */
    int64_t header_iters; /* the header's "iterations", -1: left out (streamed plan
                           * whose strategy did not announce a count) */
    keyset keys;
} writer;

static const char *const OP_NAMES[] = {"F", "R", "B"};
static const char *const DROP_NAMES[] = {"oversize", "truncated"};

/* ---- the line buffer ---- */

/* Room for n more bytes.  The buffer only grows, so once the longest record has been
 * seen this is one comparison; the emitters below reserve once per element and then
 * store without checks. */
static bool room(line_buf *b, size_t n)
{
    size_t nc = b->cap;
    char *nd;

    if (b->cap - b->len >= n)
        return true;
    while (nc - b->len < n) {
        if (nc > SIZE_MAX / 2) {
            b->oom = true;
            return false;
        }
        nc *= 2;
    }
    if (!(nd = realloc(b->data, nc))) {
        b->oom = true;
        return false;
    }
    b->data = nd;
    b->cap = nc;
    return true;
}

static bool put(line_buf *b, const char *s, size_t n)
{
    if (!room(b, n))
        return false;
    memcpy(b->data + b->len, s, n);
    b->len += n;
    return true;
}

#define PUT_LIT(b, s) put((b), (s), sizeof(s) - 1)

/* An integer as json_integer((json_int_t)v) dumps it.  Counts here are unsigned and
 * jansson would show one above INT64_MAX as negative; the cast keeps even that. */
static char *jint(char *d, uint64_t v)
{
    return d + vl_jsonnum_i64(d, (int64_t)v);
}

/* key (a literal with its leading comma or brace) and a signed integer. */
static bool put_kv(line_buf *b, const char *key, size_t klen, int64_t v)
{
    if (!room(b, klen + VL_JSONNUM_MAX))
        return false;
    memcpy(b->data + b->len, key, klen);
    b->len += klen;
    b->len += vl_jsonnum_i64(b->data + b->len, v);
    return true;
}

#define PUT_KV(b, key, v) put_kv((b), (key), sizeof(key) - 1, (int64_t)(v))

/* ---- ids ---- */

/* A string id as the manifest renders it, which escapes exactly as jansson does
 * (tests/test_planio_json.c compares the two on control characters and non-ASCII text). */
static bool put_str_id(line_buf *b, const vl_manifest *m, uint32_t i)
{
    const char *id = m->id_pool + m->id_val[i];
    size_t need;

    /* The manifest reader refuses such ids; a hand-built manifest may not. */
    if (!vl_utf8_valid(id, strlen(id)))
        return false;  /* oom stays false: reported as a bad id */
    need = vl_manifest_id_json(m, i, b->data + b->len, b->cap - b->len);
    if (need >= b->cap - b->len) {  /* did not fit with its NUL: grow and render again */
        if (!room(b, need + 1))
            return false;
        vl_manifest_id_json(m, i, b->data + b->len, b->cap - b->len);
    }
    b->len += need;
    return true;
}

/* "[id,off,len" after a comma unless first, the id exactly as the manifest has it
 * (implicit ids are the index).  The caller closes the array without a check: at least
 * the bytes of ",\"truncated\"]" are left reserved. */
static bool put_range(line_buf *b, const vl_manifest *m, uint32_t sample, uint32_t off,
                      uint32_t len, bool first)
{
    char *d;

    if (!room(b, RANGE_MAX))
        return false;
    d = b->data + b->len;
    if (!first)
        *d++ = ',';
    *d++ = '[';
    if (!m->id_kind) {
        d = jint(d, sample);
    } else if (m->id_kind[sample] == VL_ID_INT) {
        d += vl_jsonnum_i64(d, (int64_t)m->id_val[sample]);
    } else {
        b->len = (size_t)(d - b->data);
        if (!put_str_id(b, m, sample) || !room(b, RANGE_MAX))
            return false;
        d = b->data + b->len;
    }
    *d++ = ',';
    d = jint(d, off);
    *d++ = ',';
    d = jint(d, len);
    b->len = (size_t)(d - b->data);
    return true;
}

/* ---- iteration records, key by key from the field table (planio_fields.c) ---- */

static void keys_init(keyset *k)
{
    for (size_t i = 0; vl_plan_fields[i].key; i++)
        k->len[i] = (size_t)snprintf(k->text[i], KEY_MAX, ",\"%s\":", vl_plan_fields[i].key);
}

/* The key of row i, without its comma when it opens an object. */
static bool put_key(writer *w, size_t i, bool first)
{
    return put(&w->line, w->keys.text[i] + first, w->keys.len[i] - first);
}

static int64_t scalar_of(const vl_pfield *f, const void *elem)
{
    const char *at = (const char *)elem + f->off;

    if (f->kind == VL_PF_I32)
        return *(const int32_t *)at;
    return *(const uint32_t *)at;
}

/* An integer row: written unless it is an omitted default; *first: it would open the
 * object (cleared once something is written). */
static bool put_scalar(writer *w, size_t i, const void *elem, bool *first)
{
    const vl_pfield *f = &vl_plan_fields[i];
    int64_t v = scalar_of(f, elem);
    bool open = *first;

    if (f->omit_default && v == f->def)
        return true;
    *first = false;
    return put_key(w, i, open) && room(&w->line, VL_JSONNUM_MAX) &&
           (w->line.len += vl_jsonnum_i64(w->line.data + w->line.len, v), true);
}

static bool put_segs(writer *w, const vl_mb *mb)
{
    line_buf *b = &w->line;
    const vl_plan *p = w->p;
    const vl_seg *s = vl_plan_mb_segs(p, mb);

    if (!PUT_LIT(b, "["))
        return false;
    for (uint32_t k = 0; k < mb->nseg; k++) {
        int cp = vl_plan_seg_cpi(p, mb->seg0 + k);
        if (!put_range(b, p->m, s[k].sample, s[k].off, s[k].len, k == 0))
            return false;
        if (cp != VL_CP_SHARDED) {   /* a local segment: its CP coordinate */
            b->data[b->len++] = ',';
            b->len += vl_jsonnum_i64(b->data + b->len, cp);
        }
        b->data[b->len++] = ']';
    }
    return PUT_LIT(b, "]");
}

static bool put_cu(writer *w, const vl_mb *mb)
{
    line_buf *b = &w->line;
    const vl_seg *s = vl_plan_mb_segs(w->p, mb);
    uint64_t cum = 0;
    char *d;

    if (!PUT_LIT(b, "[0") || !room(b, (size_t)mb->nseg * (VL_JSONNUM_MAX + 1) + 1))
        return false;
    d = b->data + b->len;
    for (uint32_t k = 0; k < mb->nseg; k++) {
        cum += s[k].len;
        *d++ = ',';
        d = jint(d, cum);
    }
    *d++ = ']';
    b->len = (size_t)(d - b->data);
    return true;
}

static bool put_int_list(line_buf *b, const int32_t *v, size_t n)
{
    if (!PUT_LIT(b, "[") || !room(b, n * (VL_JSONNUM_MAX + 1) + 1))
        return false;
    for (size_t i = 0; i < n; i++) {
        if (i > 0)
            b->data[b->len++] = ',';
        b->len += vl_jsonnum_i64(b->data + b->len, v[i]);
    }
    b->data[b->len++] = ']';
    return true;
}

static bool put_mb(writer *w, const vl_mb *mb, bool first)
{
    bool ok = first ? PUT_LIT(&w->line, "{") : PUT_LIT(&w->line, ",{"), open = false;
    uint32_t n;

    for (size_t i = 0; ok && vl_plan_fields[i].key; i++) {
        const vl_pfield *f = &vl_plan_fields[i];
        const int32_t *mem;
        if (f->level != VL_PF_MB)
            continue;
        switch (f->kind) {
        case VL_PF_SEG:
            ok = put_key(w, i, true) && put_segs(w, mb);
            break;
        case VL_PF_CU:
            ok = put_key(w, i, false) && put_cu(w, mb);
            break;
        case VL_PF_TOKENS:
            ok = put_key(w, i, false) && room(&w->line, VL_JSONNUM_MAX) &&
                 (w->line.len += vl_jsonnum_i64(w->line.data + w->line.len,
                                                (int64_t)mb->tokens), true);
            break;
        case VL_PF_SHARED:
            mem = vl_plan_mb_members(w->p, mb, &n);
            ok = n == 0 || (put_key(w, i, false) && put_int_list(&w->line, mem, n));
            break;
        default:
            ok = put_scalar(w, i, mb, &open);
        }
    }
    return ok && PUT_LIT(&w->line, "}");
}

static bool put_packs(writer *w, size_t i, uint64_t from, uint32_t n)
{
    bool ok = put_key(w, i, false) && PUT_LIT(&w->line, "[");

    for (uint32_t j = 0; ok && j < n; j++)
        ok = put_mb(w, &w->p->mbs[from + j], j == 0);
    return ok && PUT_LIT(&w->line, "]");
}

static bool put_schedule(writer *w, size_t i, const vl_rank *rk)
{
    line_buf *b = &w->line;

    if (!put_key(w, i, false) || !PUT_LIT(b, "["))
        return false;
    for (uint64_t k = rk->op0; k < rk->op0 + rk->nop; k++) {
        const vl_op *op = &w->p->ops[k];
        char *d;
        if (!room(b, 8 + VL_JSONNUM_MAX))
            return false;
        d = b->data + b->len;
        if (k > rk->op0)
            *d++ = ',';
        *d++ = '[';
        *d++ = '"';
        *d++ = OP_NAMES[op->kind <= VL_OP_B ? op->kind : 0][0]; /* one letter each */
        *d++ = '"';
        *d++ = ',';
        d = jint(d, op->mb);
        *d++ = ']';
        b->len = (size_t)(d - b->data);
    }
    return PUT_LIT(b, "]");
}

/* "gpus": the explicit placement or the default one (plan.h). */
static bool put_gpus(writer *w, size_t i, const vl_rank *rk, const vl_gpu_walk *gw)
{
    line_buf *b = &w->line;
    uint32_t n = vl_plan_rank_size(rk);

    if (!put_key(w, i, false) || !PUT_LIT(b, "[") || !room(b, (size_t)n * (VL_JSONNUM_MAX + 1) + 1))
        return false;
    for (uint32_t k = 0; k < n; k++) {
        if (k > 0)
            b->data[b->len++] = ',';
        b->len += vl_jsonnum_i64(b->data + b->len, vl_gpu_walk_at(gw, k));
    }
    b->data[b->len++] = ']';
    return true;
}

static bool put_rank(writer *w, const vl_rank *rk, const vl_gpu_walk *gw, bool first)
{
    bool ok = first ? PUT_LIT(&w->line, "{") : PUT_LIT(&w->line, ",{"), open = true;

    for (size_t i = 0; ok && vl_plan_fields[i].key; i++) {
        const vl_pfield *f = &vl_plan_fields[i];
        if (f->level != VL_PF_RANK)
            continue;
        switch (f->kind) {
        case VL_PF_GPUS:
            ok = put_gpus(w, i, rk, gw);
            break;
        case VL_PF_MBS:
            ok = put_packs(w, i, rk->mb0, rk->nmb);
            break;
        case VL_PF_BWD:
            ok = rk->nbwd == 0 || put_packs(w, i, rk->mb0 + rk->nmb, rk->nbwd);
            break;
        case VL_PF_SCHEDULE:
            ok = rk->nop == 0 || put_schedule(w, i, rk);
            break;
        default:
            ok = put_scalar(w, i, rk, &open);
        }
    }
    return ok && PUT_LIT(&w->line, "}");
}

static bool put_total(writer *w, size_t i, uint64_t v)
{
    return put_key(w, i, false) && room(&w->line, VL_JSONNUM_MAX) &&
           (w->line.len += vl_jsonnum_i64(w->line.data + w->line.len, (int64_t)v), true);
}

static bool put_ranks(writer *w, size_t i, size_t it)
{
    const vl_iter *in = &w->p->iters[it];
    vl_gpu_walk gw;
    bool ok = put_key(w, i, false) && PUT_LIT(&w->line, "[");

    vl_gpu_walk_begin(&gw, w->p, it);
    for (uint32_t r = 0; ok && r < in->nranks; r++, vl_gpu_walk_next(&gw))
        ok = put_rank(w, &w->p->ranks[in->rank0 + r], &gw, r == 0);
    return ok && PUT_LIT(&w->line, "]");
}

static bool put_iter(writer *w, size_t it)
{
    const vl_iter *in = &w->p->iters[it];
    uint64_t tokens, loss, samples;
    bool ok = PUT_LIT(&w->line, "{\"type\":\"iter\"");

    vl_plan_iter_totals(w->p, it, &tokens, &loss, &samples);
    w->tokens += tokens;
    w->samples += samples;
    for (size_t i = 0; ok && vl_plan_fields[i].key; i++) {
        const vl_pfield *f = &vl_plan_fields[i];
        if (f->level != VL_PF_ITER)
            continue;
        switch (f->kind) {
        case VL_PF_IT:
            ok = put_total(w, i, w->p->iter_base + it);
            break;
        case VL_PF_TOKENS:
            ok = put_total(w, i, tokens);
            break;
        case VL_PF_LOSS:
            ok = put_total(w, i, loss);
            break;
        case VL_PF_SAMPLES:
            ok = put_total(w, i, samples);
            break;
        case VL_PF_RANKS:
            ok = put_ranks(w, i, it);
            break;
        default:
            ok = put_scalar(w, i, in, &(bool){false});
        }
    }
    return ok && PUT_LIT(&w->line, "}");
}

/* The footer's checksum covers every line before it, so the hash ends here. */
static bool put_footer(writer *w)
{
    const vl_plan *p = w->p;
    line_buf *b = &w->line;
    unsigned char digest[32];
    char hex[65];

    if (!PUT_KV(b, "{\"type\":\"footer\",\"iterations\":", w->iterations) ||
        !PUT_KV(b, ",\"samples\":", w->samples) || !PUT_KV(b, ",\"tokens\":", w->tokens) ||
        !PUT_LIT(b, ",\"dropped\":["))
        return false;
    for (size_t i = 0; i < p->ndrops; i++) {
        const vl_drop *dr = &p->drops[i];
        const char *why = DROP_NAMES[dr->reason == VL_DROP_TRUNCATED];
        if (!put_range(b, p->m, dr->sample, dr->off, dr->len, i == 0))
            return false;
        b->data[b->len++] = ',';  /* put_range left RANGE_MAX bytes for this closing */
        b->data[b->len++] = '"';
        memcpy(b->data + b->len, why, strlen(why));
        b->len += strlen(why);
        b->data[b->len++] = '"';
        b->data[b->len++] = ']';
    }
    vl_sha256_final(&w->sha, digest);
    vl_sha256_hex(digest, hex);
    return PUT_LIT(b, "],\"sha256\":\"") && put(b, hex, 64) && PUT_LIT(b, "\"}");
}

/* ---- the header, through jansson ---- */

/* jansson reports allocation failures as NULL or -1, and the _new setters release the
 * value they could not store.  Failures are collected in *ok and checked once. */
static void set(json_t *o, const char *key, json_t *v, bool *ok)
{
    if (json_object_set_new_nocheck(o, key, v) != 0)
        *ok = false;
}

static json_t *jinteger(uint64_t v)
{
    return json_integer((json_int_t)v);
}

/* params and config are kept as JSON text; the header embeds them as objects. */
static vl_status meta_json(const char *text, const char *what, json_t **out, vl_err *err)
{
    json_error_t je;
    unsigned long failed;

    vl_json_watch();
    failed = vl_json_failures();
    *out = json_loads(text ? text : "{}", JSON_REJECT_DUPLICATES, &je);
    if (vl_json_failures() != failed) {   /* a syntax error to jansson, or a string cut */
        json_decref(*out);
        *out = NULL;
        return vl_seterr(err, VL_ENOMEM, "out of memory formatting the plan header");
    }
    if (!*out || !json_is_object(*out)) {
        json_decref(*out);
        *out = NULL;
        return vl_seterr(err, VL_EINTERNAL, "plan header: %s is not a JSON object: %s", what,
                         text ? je.text : "?");
    }
    return VL_OK;
}

/* "caps": the names of the capabilities the plan uses (the optimizer's sharding has a
 * key of its own, "optimizer_shard"). */
static json_t *caps_json(uint32_t caps)
{
    json_t *a = json_array();

    for (unsigned i = 0; a && i < VL_NCAPS; i++)
        if ((caps >> i & 1) && (1u << i) != VL_CAP_WORLD_OPTIM &&
            json_array_append_new(a, json_string_nocheck(vl_cap_name(i))) != 0) {
            json_decref(a);
            return NULL;
        }
    return a;
}

static vl_status header_json(const vl_plan *p, int64_t iters, json_t **out, vl_err *err)
{
    json_t *o, *params = NULL, *config = NULL, *man;
    char hex[65];
    bool ok = true;
    vl_status st;

    *out = NULL;
    if (p->seed > INT64_MAX)
        return vl_seterr(err, VL_EUSAGE, "seed %llu does not fit a JSON integer (max 2^63-1)",
                         (unsigned long long)p->seed);
    if ((st = meta_json(p->params_json, "params", &params, err)) != VL_OK ||
        (st = meta_json(p->config_json, "config", &config, err)) != VL_OK) {
        json_decref(params);
        return st;
    }
    vl_sha256_hex(p->m->sha256, hex);
    o = json_object();
    man = json_object();
    set(o, "type", json_string_nocheck("header"), &ok);
    set(o, "schema", json_string_nocheck(VL_PLAN_SCHEMA), &ok);
    set(o, "vlplan", json_string(VLPLAN_VERSION), &ok);
    set(o, "strategy", json_string(p->strategy), &ok);
    set(o, "seed", jinteger(p->seed), &ok);
    set(o, "params", params, &ok);
    set(o, "config", config, &ok);
    set(man, "samples", jinteger(p->m->n), &ok);
    set(man, "tokens", jinteger(p->m->tokens), &ok);
    set(man, "sha256", json_string_nocheck(hex), &ok);
    set(o, "manifest", man, &ok);
    set(o, "epochs", jinteger(p->epochs), &ok);
    if (iters >= 0)
        set(o, "iterations", jinteger((uint64_t)iters), &ok);
    if (p->caps & ~(uint32_t)VL_CAP_WORLD_OPTIM)
        set(o, "caps", caps_json(p->caps), &ok);
    if (p->caps & VL_CAP_WORLD_OPTIM)
        set(o, "optimizer_shard", json_string_nocheck("world"), &ok);
    if (!ok) {
        json_decref(o);
        return vl_seterr(err, VL_ENOMEM, "out of memory formatting the plan header");
    }
    *out = o;
    return VL_OK;
}

static int line_put(const char *s, size_t n, void *ud)
{
    return put(ud, s, n) ? 0 : -1;
}

/* ---- records out ---- */

/* End the record in the line buffer (ok: it was formatted), hash it unless it is the
 * footer, write it, and empty the buffer for the next one. */
static vl_status finish(writer *w, bool ok, bool hash, vl_err *err)
{
    line_buf *b = &w->line;
    vl_status st;

    if (ok)
        ok = PUT_LIT(b, "\n");
    if (!ok && !b->oom)
        return vl_seterr(err, VL_EDATA, "cannot write the plan: a sample id is not valid "
                                        "UTF-8");
    if (!ok)
        return vl_seterr(err, VL_ENOMEM, "out of memory formatting the plan");
    if (hash)
        vl_sha256_update(&w->sha, b->data, b->len);
    st = vl_zwriter_write(w->zw, b->data, b->len, err);
    b->len = 0;
    return st;
}

static vl_status write_header(writer *w, vl_err *err)
{
    json_t *rec;
    vl_status st;
    unsigned long failed;
    int rc;

    if ((st = header_json(w->p, w->header_iters, &rec, err)) != VL_OK)
        return st;
    vl_json_watch();
    failed = vl_json_failures();
    rc = json_dump_callback(rec, line_put, &w->line, DUMP_FLAGS);
    json_decref(rec);
    /* strategy and version were checked by json_string, so a failure is memory; jansson
     * may also drop a member and succeed when an inner allocation fails (jsonw.h) */
    if ((rc != 0 && !w->line.oom) || (rc == 0 && vl_json_failures() != failed))
        return vl_seterr(err, VL_ENOMEM, "out of memory formatting the plan header");
    return finish(w, rc == 0, true, err);
}

/* Every id written must come from the manifest; a phantom would make an unreadable plan. */
static vl_status check_segs(const vl_plan *p, vl_err *err)
{
    if (!p->m)
        return vl_seterr(err, VL_EUSAGE, "cannot write a plan without its manifest");
    for (size_t i = 0; i < p->nsegs; i++)
        if (p->segs[i].sample >= p->m->n)
            return vl_seterr(err, VL_EDATA, "cannot write the plan: segment %zu refers to "
                             "sample %u, the manifest has %zu", i, p->segs[i].sample, p->m->n);
    return VL_OK;
}

static vl_status check_drops(const vl_plan *p, vl_err *err)
{
    for (size_t i = 0; i < p->ndrops; i++)
        if (p->drops[i].sample >= p->m->n)
            return vl_seterr(err, VL_EDATA, "cannot write the plan: dropped range %zu refers "
                             "to sample %u, the manifest has %zu", i, p->drops[i].sample,
                             p->m->n);
    return VL_OK;
}

struct vl_plan_writer {
    writer w;
};

static void writer_free(vl_plan_writer *pw)
{
    free(pw->w.line.data);
    free(pw);
}

vl_status vl_plan_writer_open(vl_plan_writer **out, const vl_plan *p, int64_t iterations,
                              int fd, bool zstd, const char *name, vl_err *err)
{
    vl_plan_writer *pw = calloc(1, sizeof *pw);
    writer *w = pw ? &pw->w : NULL;
    vl_status st;

    *out = NULL;
    if (!pw || !(w->line.data = malloc(LINE_FIRST))) {
        free(pw);
        return vl_seterr(err, VL_ENOMEM, "out of memory formatting the plan");
    }
    if (!p->m) {
        writer_free(pw);
        return vl_seterr(err, VL_EUSAGE, "cannot write a plan without its manifest");
    }
    w->line.cap = LINE_FIRST;
    w->p = p;
    w->header_iters = iterations;
    vl_sha256_init(&w->sha);
    keys_init(&w->keys);
    if ((st = vl_zwriter_fd(&w->zw, fd, zstd, name, err)) != VL_OK) {
        writer_free(pw);
        return st;
    }
    if ((st = write_header(w, err)) != VL_OK) {
        vl_plan_writer_abort(pw);
        return st;
    }
    *out = pw;
    return VL_OK;
}

vl_status vl_plan_writer_iters(vl_plan_writer *pw, const vl_plan *p, vl_err *err)
{
    writer *w = &pw->w;
    vl_status st;

    w->p = p;
    if ((st = check_segs(p, err)) != VL_OK)
        return st;
    for (size_t it = 0; it < p->niters; it++, w->iterations++)
        if ((st = finish(w, put_iter(w, it), true, err)) != VL_OK)
            return st;
    return VL_OK;
}

vl_status vl_plan_writer_close(vl_plan_writer *pw, const vl_plan *p, vl_err *err)
{
    writer *w = &pw->w;
    vl_status st;

    w->p = p;
    if (w->header_iters >= 0 && (uint64_t)w->header_iters != w->iterations)
        st = vl_seterr(err, VL_EINTERNAL, "the plan header announced %lld iterations, %llu "
                       "were written", (long long)w->header_iters,
                       (unsigned long long)w->iterations);
    else if ((st = check_drops(p, err)) == VL_OK)
        st = finish(w, put_footer(w), false, err);
    if (st != VL_OK) {
        vl_plan_writer_abort(pw);
        return st;
    }
    st = vl_zwriter_close(w->zw, err);
    writer_free(pw);
    return st;
}

void vl_plan_writer_abort(vl_plan_writer *pw)
{
    if (!pw)
        return;
    vl_zwriter_close(pw->w.zw, NULL); /* frees; the first error is the one to report */
    writer_free(pw);
}

static vl_status write_plan(const vl_plan *p, int fd, bool zstd, const char *name,
                            vl_err *err)
{
    vl_plan_writer *w = NULL;
    vl_status st;

    if (p->m && ((st = check_segs(p, err)) != VL_OK || (st = check_drops(p, err)) != VL_OK))
        return st;
    if ((st = vl_plan_writer_open(&w, p, (int64_t)p->niters, fd, zstd, name, err)) != VL_OK)
        return st;
    if ((st = vl_plan_writer_iters(w, p, err)) != VL_OK) {
        vl_plan_writer_abort(w);
        return st;
    }
    return vl_plan_writer_close(w, p, err);
}

bool vl_plan_name_zstd(const char *path)
{
    size_t n = strlen(path), k = strlen(".zst");
    return n >= k && strcmp(path + n - k, ".zst") == 0;
}

vl_status vl_plan_write_file(const vl_plan *p, const char *path, vl_err *err)
{
    vl_outfile *o;
    vl_status st;

    if (strcmp(path, "-") == 0)
        return vl_seterr(err, VL_EUSAGE, "vl_plan_write_file: \"-\" is standard output, "
                                         "use vl_plan_write_fd");
    if ((st = vl_outfile_open(&o, path, err)) != VL_OK)
        return st;
    st = vl_plan_write_to(p, o, path, err);
    if (st != VL_OK) {
        vl_outfile_abort(o);
        return st;
    }
    return vl_outfile_commit(o, err);
}

vl_status vl_plan_write_to(const vl_plan *p, vl_outfile *o, const char *path, vl_err *err)
{
    return write_plan(p, vl_outfile_fd(o), vl_plan_name_zstd(path), path, err);
}

vl_status vl_plan_write_fd(const vl_plan *p, int fd, bool zstd, vl_err *err)
{
    char name[32];

    if (fd == 1)
        snprintf(name, sizeof name, "<stdout>");
    else
        snprintf(name, sizeof name, "<fd %d>", fd);
    return write_plan(p, fd, zstd, name, err);
}
