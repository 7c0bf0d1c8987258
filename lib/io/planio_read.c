/* lib/io/planio_read.c -- the plan file reader (planio.h): plain or zstd through zio, one
 * jansson json_loadb per line, ids resolved through the manifest.  What the file claims
 * (sums, counts, checksum) is compared here and recorded in p->file, because only the
 * reader sees the claims; the verifier turns the records into violations. */
#include "planio.h"

#include <jansson.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sha256.h"
#include "zio.h"

#if defined(__GNUC__)
#define PRINTF_LIKE(f, a) __attribute__((format(printf, f, a)))
#else
#define PRINTF_LIKE(f, a)
#endif

#define FIRST_BUF (1u << 20)
/* Reals in params/config with 15 significant digits, as the config dump writes them:
 * any such decimal survives a trip through a double, so read -> write is byte-exact. */
#define DUMP_FLAGS (JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(15))

typedef struct reader {
    vl_plan *p;
    vl_manifest *m;
    vl_zreader *z;
    const char *name;
    char *buf;            /* unconsumed input is buf[start, end); no '\n' in [start, scan) */
    size_t cap, start, end, scan;
    bool eof;
    size_t lineno;
    long rank, mb, seg;   /* position inside the current record for messages, -1 = none */
    vl_sha256 sha;        /* of every line before the footer */
    bool have_header, have_footer;
    json_t *prev_drop;    /* without a manifest: last dropped id, to number distinct ids */
    uint32_t ndistinct;
} reader;

/* "rank 1, micro-batch 2, entry 3: " for the element being read, "" outside. */
static void where(const reader *r, char *buf, size_t cap)
{
    int n = 0;

    buf[0] = '\0';
    if (r->rank >= 0)
        n = snprintf(buf, cap, "rank %ld, ", r->rank);
    if (r->mb >= 0 && n >= 0 && (size_t)n < cap)
        n += snprintf(buf + n, cap - (size_t)n, "micro-batch %ld, ", r->mb);
    if (r->seg >= 0 && n >= 0 && (size_t)n < cap)
        snprintf(buf + n, cap - (size_t)n, "entry %ld, ", r->seg);
}

static vl_status edata(const reader *r, vl_err *err, const char *fmt, ...) PRINTF_LIKE(3, 4);
static vl_status edata(const reader *r, vl_err *err, const char *fmt, ...)
{
    char msg[256], loc[96];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    where(r, loc, sizeof loc);
    return vl_seterr(err, VL_EDATA, "%s:%zu: %s%s", r->name, r->lineno, loc, msg);
}

/* A claim that disagrees with the content: kept for verify, reading goes on. */
static void problem(reader *r, int inv, const char *fmt, ...) PRINTF_LIKE(3, 4);
static void problem(reader *r, int inv, const char *fmt, ...)
{
    char *out = r->p->file.problem, loc[96];
    size_t cap = sizeof r->p->file.problem;
    va_list ap;
    int n;

    r->p->file.nproblems[inv - 1]++;
    if (out[0] != '\0')
        return;
    where(r, loc, sizeof loc);
    n = snprintf(out, cap, "I%d: %s:%zu: %s", inv, r->name, r->lineno, loc);
    if (n < 0 || (size_t)n >= cap)
        return;
    va_start(ap, fmt);
    vsnprintf(out + n, cap - (size_t)n, fmt, ap);
    va_end(ap);
}

/* ---- input lines ---- */

static vl_status fill(reader *r, vl_err *err)
{
    size_t got;
    vl_status st;

    if (r->start > 0) {
        memmove(r->buf, r->buf + r->start, r->end - r->start);
        r->end -= r->start;
        r->scan -= r->start;
        r->start = 0;
    }
    if (r->end == r->cap) {
        size_t nc = r->cap ? r->cap * 2 : FIRST_BUF;
        char *nb = nc > r->cap ? realloc(r->buf, nc) : NULL;
        if (!nb)
            return vl_seterr(err, VL_ENOMEM, "%s:%zu: out of memory (line of %zu bytes)",
                             r->name, r->lineno + 1, r->end);
        r->buf = nb;
        r->cap = nc;
    }
    if ((st = vl_zreader_read(r->z, r->buf + r->end, r->cap - r->end, &got, err)) != VL_OK)
        return st;
    r->eof = got == 0;
    r->end += got;
    return VL_OK;
}

/* Next line without its '\n' (*nl tells whether it had one); *line = NULL at the end. */
static vl_status next_line(reader *r, char **line, size_t *len, bool *nl, vl_err *err)
{
    vl_status st;

    for (;;) {
        char *q = r->scan < r->end ? memchr(r->buf + r->scan, '\n', r->end - r->scan) : NULL;
        if (q || (r->eof && r->start < r->end)) {
            size_t stop = q ? (size_t)(q - r->buf) : r->end;
            *line = r->buf + r->start;
            *len = stop - r->start;
            *nl = q != NULL;
            r->start = r->scan = q ? stop + 1 : stop;
            return VL_OK;
        }
        r->scan = r->end;
        if (r->eof) {
            *line = NULL;
            return VL_OK;
        }
        if ((st = fill(r, err)) != VL_OK)
            return st;
    }
}

/* ---- typed fields ---- */

static vl_status get_uint(const reader *r, const json_t *o, const char *key, uint64_t max,
                          uint64_t *out, vl_err *err)
{
    const json_t *v = json_object_get(o, key);
    json_int_t x;

    *out = 0;
    if (!v)
        return edata(r, err, "missing \"%s\"", key);
    x = json_is_integer(v) ? json_integer_value(v) : -1;
    if (x < 0 || (uint64_t)x > max)
        return edata(r, err, "\"%s\": expected an integer 0..%llu", key,
                     (unsigned long long)max);
    *out = (uint64_t)x;
    return VL_OK;
}

static vl_status get_int(const reader *r, const json_t *o, const char *key, int *out,
                         vl_err *err)
{
    uint64_t v;
    vl_status st = get_uint(r, o, key, INT_MAX, &v, err);

    *out = (int)v;
    return st;
}

static vl_status get_typed(const reader *r, json_t *o, const char *key, json_type type,
                           json_t **out, vl_err *err)
{
    static const char *const names[] = {"an object", "an array", "a string"};
    json_t *v = json_object_get(o, key);

    *out = NULL;
    if (v && json_typeof(v) == type) {
        *out = v;
        return VL_OK;
    }
    return edata(r, err, "\"%s\": expected %s", key,
                 names[type == JSON_OBJECT ? 0 : type == JSON_ARRAY ? 1 : 2]);
}

static vl_status elem_uint(const reader *r, const json_t *a, size_t i, const char *what,
                           uint64_t max, uint64_t *out, vl_err *err)
{
    const json_t *v = json_array_get(a, i);
    json_int_t x = json_is_integer(v) ? json_integer_value(v) : -1;

    *out = 0;
    if (x < 0 || (uint64_t)x > max)
        return edata(r, err, "%s: expected an integer 0..%llu", what,
                     (unsigned long long)max);
    *out = (uint64_t)x;
    return VL_OK;
}

/* ---- sample ids ---- */

static void unknown_id(reader *r, const json_t *id)
{
    char *txt = NULL;

    r->p->file.unknown_ids++;
    if (r->p->file.problem[0] == '\0')
        txt = json_dumps(id, JSON_ENCODE_ANY);
    problem(r, 1, "sample id %s is not in the manifest", txt ? txt : "?");
    free(txt);
}

/* Manifest index of a segment or dropped id; VL_SAMPLE_UNKNOWN (recorded) when absent. */
static vl_status resolve(reader *r, const json_t *id, uint32_t *sample, vl_err *err)
{
    long long k;

    if (!json_is_integer(id) && !json_is_string(id))
        return edata(r, err, "sample id: expected an integer or a string");
    *sample = 0;
    if (!r->m)
        return VL_OK;
    if (json_is_integer(id))
        k = vl_manifest_find_int(r->m, (int64_t)json_integer_value(id), err);
    else if (strlen(json_string_value(id)) == json_string_length(id))
        k = vl_manifest_find_str(r->m, json_string_value(id), err);
    else
        k = -1; /* an embedded NUL: no manifest id has one */
    if (k == -2)
        return VL_ENOMEM;
    if (k < 0 || (unsigned long long)k >= VL_SAMPLE_UNKNOWN) {
        *sample = VL_SAMPLE_UNKNOWN;
        unknown_id(r, id);
    } else {
        *sample = (uint32_t)k;
    }
    return VL_OK;
}

/* ---- records ---- */

static vl_status read_seg(reader *r, const json_t *e, uint32_t *len, vl_err *err)
{
    uint64_t off, n;
    uint32_t sample;
    vl_status st;

    if (!json_is_array(e) || json_array_size(e) != 3)
        return edata(r, err, "\"seg\": expected [ID, OFFSET, LENGTH]");
    if ((st = resolve(r, json_array_get(e, 0), &sample, err)) != VL_OK ||
        (st = elem_uint(r, e, 1, "offset", UINT32_MAX, &off, err)) != VL_OK ||
        (st = elem_uint(r, e, 2, "length", UINT32_MAX, &n, err)) != VL_OK)
        return st;
    *len = (uint32_t)n;
    return vl_plan_seg(r->p, sample, (uint32_t)off, (uint32_t)n, err);
}

/* cu_seqlens must be 0 followed by the running sums of the segment lengths. */
static void check_cu(reader *r, const json_t *cu, const vl_mb *mb)
{
    const vl_seg *s = vl_plan_mb_segs(r->p, mb);
    uint64_t sum = 0;
    bool ok = json_array_size(cu) == (size_t)mb->nseg + 1;

    for (size_t k = 0; ok && k <= mb->nseg; k++) {
        const json_t *v = json_array_get(cu, k);
        ok = json_is_integer(v) && (uint64_t)json_integer_value(v) == sum;
        if (k < mb->nseg)
            sum += s[k].len;
    }
    if (!ok)
        problem(r, 2, "\"cu_seqlens\" is not 0 followed by the running sums of the "
                      "segment lengths");
}

static vl_status read_mb(reader *r, json_t *o, vl_err *err)
{
    json_t *seg, *cu;
    uint64_t tokens, cap;
    uint32_t len;
    const vl_mb *mb;
    vl_status st;

    if (!json_is_object(o))
        return edata(r, err, "expected a micro-batch object");
    if ((st = get_typed(r, o, "seg", JSON_ARRAY, &seg, err)) != VL_OK ||
        (st = get_typed(r, o, "cu_seqlens", JSON_ARRAY, &cu, err)) != VL_OK ||
        (st = get_uint(r, o, "tokens", UINT64_MAX / 2, &tokens, err)) != VL_OK ||
        (st = get_uint(r, o, "cap", UINT32_MAX, &cap, err)) != VL_OK ||
        (st = vl_plan_mb_begin(r->p, (uint32_t)cap, err)) != VL_OK)
        return st;
    for (size_t k = 0; k < json_array_size(seg); k++) {
        r->seg = (long)k;
        if ((st = read_seg(r, json_array_get(seg, k), &len, err)) != VL_OK)
            return st;
    }
    r->seg = -1;
    mb = &r->p->mbs[r->p->nmbs - 1];
    check_cu(r, cu, mb);
    if (tokens != mb->tokens)
        problem(r, 2, "\"tokens\" is %llu, the segments sum to %llu",
                (unsigned long long)tokens, (unsigned long long)mb->tokens);
    return VL_OK;
}

static vl_status read_op(reader *r, const json_t *e, vl_err *err)
{
    const char *k = json_string_value(json_array_get(e, 0));
    uint64_t mb;
    vl_op_kind kind;
    vl_status st;

    if (!json_is_array(e) || json_array_size(e) != 2 || !k)
        return edata(r, err, "\"schedule\": expected [\"F\"|\"R\"|\"B\", MICRO_BATCH]");
    if (strcmp(k, "F") == 0)
        kind = VL_OP_F;
    else if (strcmp(k, "R") == 0)
        kind = VL_OP_R;
    else if (strcmp(k, "B") == 0)
        kind = VL_OP_B;
    else
        return edata(r, err, "\"schedule\": unknown operation \"%s\" (F, R or B)", k);
    if ((st = elem_uint(r, e, 1, "schedule micro-batch", UINT32_MAX, &mb, err)) != VL_OK)
        return st;
    return vl_plan_op(r->p, (uint32_t)mb, kind, err);
}

static vl_status read_rank_body(reader *r, json_t *o, vl_err *err)
{
    json_t *mbs, *sched = json_object_get(o, "schedule");
    vl_status st;

    if ((st = get_typed(r, o, "mbs", JSON_ARRAY, &mbs, err)) != VL_OK)
        return st;
    for (size_t b = 0; b < json_array_size(mbs); b++) {
        r->mb = (long)b;
        if ((st = read_mb(r, json_array_get(mbs, b), err)) != VL_OK)
            return st;
    }
    r->mb = -1;
    if (!sched)
        return VL_OK;
    if (!json_is_array(sched))
        return edata(r, err, "\"schedule\": expected an array");
    for (size_t i = 0; i < json_array_size(sched); i++)
        if ((st = read_op(r, json_array_get(sched, i), err)) != VL_OK)
            return st;
    return VL_OK;
}

static vl_status read_rank(reader *r, json_t *o, vl_err *err)
{
    vl_par par;
    int dp, group = -1, k = 0;
    vl_status st;

    if (!json_is_object(o))
        return edata(r, err, "expected a rank object");
    if ((st = get_int(r, o, "dp", &dp, err)) != VL_OK ||
        (st = get_int(r, o, "tp", &par.tp, err)) != VL_OK ||
        (st = get_int(r, o, "pp", &par.pp, err)) != VL_OK ||
        (st = get_int(r, o, "sp", &par.sp, err)) != VL_OK ||
        (st = get_int(r, o, "ckpt_layers", &par.ckpt_layers, err)) != VL_OK)
        return st;
    if (json_object_get(o, "group") && (st = get_int(r, o, "group", &group, err)) != VL_OK)
        return st;
    if (json_object_get(o, "k") && (st = get_int(r, o, "k", &k, err)) != VL_OK)
        return st;
    if (k < 0)
        return edata(r, err, "\"k\" must be positive, got %d", k);
    if ((st = vl_plan_rank_begin(r->p, dp, &par, err)) != VL_OK)
        return st;
    vl_plan_rank_group(r->p, group);
    vl_plan_rank_k(r->p, (uint32_t)k);
    return read_rank_body(r, o, err);
}

/* The iteration's own claims against what its segments add up to. */
static void check_iter_claims(reader *r, uint64_t it, uint64_t tokens, uint64_t loss,
                              uint64_t samples, bool known)
{
    size_t i = r->p->niters - 1;
    uint64_t t, l, s;

    vl_plan_iter_totals(r->p, i, &t, &l, &s);
    if (it != i)
        problem(r, 5, "iteration numbered %llu, expected %zu", (unsigned long long)it, i);
    if (tokens != t)
        problem(r, 2, "iteration %zu: \"tokens\" is %llu, its segments sum to %llu", i,
                (unsigned long long)tokens, (unsigned long long)t);
    if (r->m && known && loss != l) /* an unknown id's loss is unknown, not wrong */
        problem(r, 2, "iteration %zu: \"loss_tokens\" is %llu, its segments carry %llu", i,
                (unsigned long long)loss, (unsigned long long)l);
    if (samples != s)
        problem(r, 2, "iteration %zu: \"samples\" is %llu, it starts %llu", i,
                (unsigned long long)samples, (unsigned long long)s);
}

static vl_status read_iter(reader *r, json_t *o, vl_err *err)
{
    uint64_t it, epoch, tokens, loss, samples;
    size_t unknown = r->p->file.unknown_ids;
    json_t *ranks;
    vl_status st;

    if ((st = get_uint(r, o, "it", UINT64_MAX / 2, &it, err)) != VL_OK ||
        (st = get_uint(r, o, "epoch", UINT32_MAX, &epoch, err)) != VL_OK ||
        (st = get_uint(r, o, "tokens", UINT64_MAX / 2, &tokens, err)) != VL_OK ||
        (st = get_uint(r, o, "loss_tokens", UINT64_MAX / 2, &loss, err)) != VL_OK ||
        (st = get_uint(r, o, "samples", UINT64_MAX / 2, &samples, err)) != VL_OK ||
        (st = get_typed(r, o, "ranks", JSON_ARRAY, &ranks, err)) != VL_OK ||
        (st = vl_plan_iter_begin(r->p, (uint32_t)epoch, err)) != VL_OK)
        return st;
    for (size_t k = 0; k < json_array_size(ranks); k++) {
        r->rank = (long)k;
        if ((st = read_rank(r, json_array_get(ranks, k), err)) != VL_OK)
            return st;
    }
    r->rank = -1;
    check_iter_claims(r, it, tokens, loss, samples, unknown == r->p->file.unknown_ids);
    return VL_OK;
}

static vl_status dump_meta(const reader *r, json_t *o, const char *key, char **out,
                           vl_err *err)
{
    json_t *v;
    vl_status st = get_typed(r, o, key, JSON_OBJECT, &v, err);

    if (st != VL_OK)
        return st;
    free(*out);
    if (!(*out = json_dumps(v, DUMP_FLAGS)))
        return vl_seterr(err, VL_ENOMEM, "out of memory");
    return VL_OK;
}

/* The header names the manifest the plan was made for; a different one is a finding. */
static vl_status check_manifest(reader *r, json_t *o, vl_err *err)
{
    json_t *man, *sha;
    uint64_t n, tokens;
    char hex[65];
    vl_status st;

    if ((st = get_typed(r, o, "manifest", JSON_OBJECT, &man, err)) != VL_OK ||
        (st = get_uint(r, man, "samples", UINT64_MAX / 2, &n, err)) != VL_OK ||
        (st = get_uint(r, man, "tokens", UINT64_MAX / 2, &tokens, err)) != VL_OK ||
        (st = get_typed(r, man, "sha256", JSON_STRING, &sha, err)) != VL_OK)
        return st;
    if (!r->m)
        return VL_OK;
    vl_sha256_hex(r->m->sha256, hex);
    if (n != r->m->n || tokens != r->m->tokens || strcmp(json_string_value(sha), hex) != 0)
        problem(r, 5, "the plan was made for another manifest (%llu samples, %llu tokens, "
                      "sha256 %.12s...), not this one (%zu samples, %llu tokens, sha256 "
                      "%.12s...)", (unsigned long long)n, (unsigned long long)tokens,
                json_string_value(sha), r->m->n, (unsigned long long)r->m->tokens, hex);
    return VL_OK;
}

static vl_status read_header(reader *r, json_t *o, vl_err *err)
{
    json_t *schema, *version, *strategy;
    uint64_t seed, epochs;
    vl_status st;

    if ((st = get_typed(r, o, "schema", JSON_STRING, &schema, err)) != VL_OK)
        return st;
    if (strcmp(json_string_value(schema), VL_PLAN_SCHEMA) != 0)
        return edata(r, err, "unsupported plan schema \"%s\" (expected \"%s\")",
                     json_string_value(schema), VL_PLAN_SCHEMA);
    if ((st = get_typed(r, o, "vlplan", JSON_STRING, &version, err)) != VL_OK ||
        (st = get_typed(r, o, "strategy", JSON_STRING, &strategy, err)) != VL_OK ||
        (st = get_uint(r, o, "seed", INT64_MAX, &seed, err)) != VL_OK ||
        (st = dump_meta(r, o, "params", &r->p->params_json, err)) != VL_OK ||
        (st = dump_meta(r, o, "config", &r->p->config_json, err)) != VL_OK ||
        (st = check_manifest(r, o, err)) != VL_OK ||
        (st = get_uint(r, o, "epochs", UINT32_MAX, &epochs, err)) != VL_OK ||
        (st = get_uint(r, o, "iterations", UINT64_MAX / 2, &r->p->file.header_iterations,
                       err)) != VL_OK)
        return st;
    if (json_string_length(strategy) >= sizeof r->p->strategy)
        return edata(r, err, "\"strategy\": name longer than %zu bytes",
                     sizeof r->p->strategy - 1);
    memcpy(r->p->strategy, json_string_value(strategy), json_string_length(strategy) + 1);
    r->p->seed = seed;
    r->p->epochs = (uint32_t)epochs;
    return VL_OK;
}

/* Without a manifest, dropped ids are numbered in order of appearance (repeats of the
 * previous id share its number), so metrics can still count distinct samples. */
static vl_status drop_sample(reader *r, json_t *id, uint32_t *sample, vl_err *err)
{
    if (r->m)
        return resolve(r, id, sample, err);
    if (!json_is_integer(id) && !json_is_string(id))
        return edata(r, err, "sample id: expected an integer or a string");
    if (!r->prev_drop || !json_equal(r->prev_drop, id))
        r->ndistinct++;
    json_decref(r->prev_drop);
    r->prev_drop = json_incref(id);
    *sample = r->ndistinct - 1;
    return VL_OK;
}

static vl_status read_drop(reader *r, json_t *e, vl_err *err)
{
    const char *why = json_string_value(json_array_get(e, 3));
    uint64_t off, len;
    uint32_t sample;
    vl_drop_reason reason;
    vl_status st;

    if (!json_is_array(e) || json_array_size(e) != 4 || !why)
        return edata(r, err, "\"dropped\": expected [ID, OFFSET, LENGTH, REASON]");
    if (strcmp(why, "oversize") == 0)
        reason = VL_DROP_OVERSIZE;
    else if (strcmp(why, "truncated") == 0)
        reason = VL_DROP_TRUNCATED;
    else
        return edata(r, err, "\"dropped\": unknown reason \"%s\" (oversize or truncated)",
                     why);
    if ((st = drop_sample(r, json_array_get(e, 0), &sample, err)) != VL_OK ||
        (st = elem_uint(r, e, 1, "offset", UINT32_MAX, &off, err)) != VL_OK ||
        (st = elem_uint(r, e, 2, "length", UINT32_MAX, &len, err)) != VL_OK)
        return st;
    return vl_plan_drop(r->p, sample, (uint32_t)off, (uint32_t)len, reason, err);
}

static vl_status read_footer(reader *r, json_t *o, vl_err *err)
{
    json_t *dropped, *sha;
    unsigned char digest[32];
    char hex[65];
    vl_status st;

    uint64_t *claim[3] = {&r->p->file.iterations, &r->p->file.samples, &r->p->file.tokens};
    static const char *const keys[3] = {"iterations", "samples", "tokens"};

    for (int i = 0; i < 3; i++)
        if ((st = get_uint(r, o, keys[i], UINT64_MAX / 2, claim[i], err)) != VL_OK)
            return st;
    if ((st = get_typed(r, o, "dropped", JSON_ARRAY, &dropped, err)) != VL_OK ||
        (st = get_typed(r, o, "sha256", JSON_STRING, &sha, err)) != VL_OK)
        return st;
    for (size_t i = 0; i < json_array_size(dropped); i++) {
        r->seg = (long)i;
        if ((st = read_drop(r, json_array_get(dropped, i), err)) != VL_OK)
            return st;
    }
    r->seg = -1;
    vl_sha256_final(&r->sha, digest);
    vl_sha256_hex(digest, hex);
    r->p->file.sha_ok = strcmp(hex, json_string_value(sha)) == 0;
    r->p->file.has_footer = true;
    r->have_footer = true;
    return VL_OK;
}

static vl_status read_record(reader *r, json_t *rec, const char *line, size_t len, bool nl,
                             vl_err *err)
{
    const char *type = json_string_value(json_object_get(rec, "type"));

    if (!type)
        return edata(r, err, "not a plan record (no \"type\")");
    if (!r->have_header && strcmp(type, "header") != 0)
        return edata(r, err, "expected the plan header first, got a \"%s\" record", type);
    if (strcmp(type, "footer") == 0)
        return read_footer(r, rec, err);
    vl_sha256_update(&r->sha, line, len);
    if (nl)
        vl_sha256_update(&r->sha, "\n", 1);
    if (strcmp(type, "header") == 0) {
        if (r->have_header)
            return edata(r, err, "a second header");
        r->have_header = true;
        return read_header(r, rec, err);
    }
    if (strcmp(type, "iter") == 0)
        return read_iter(r, rec, err);
    return edata(r, err, "unknown record type \"%s\"", type);
}

static vl_status read_lines(reader *r, vl_err *err)
{
    char *line = NULL;
    size_t len = 0;
    bool nl = false;
    json_error_t je;
    vl_status st;

    while ((st = next_line(r, &line, &len, &nl, err)) == VL_OK && line) {
        json_t *rec;
        r->lineno++;
        if (r->have_footer) {
            problem(r, 5, "data after the footer");
            return VL_OK;
        }
        if (!(rec = json_loadb(line, len, JSON_REJECT_DUPLICATES, &je))) {
            if (!nl && r->have_header) { /* cut short: verify reports the missing footer */
                problem(r, 5, "incomplete last line (file truncated?)");
                return VL_OK;
            }
            return edata(r, err, "invalid JSON at column %d: %s", je.column, je.text);
        }
        st = read_record(r, rec, line, len, nl, err);
        json_decref(rec);
        if (st != VL_OK)
            return st;
    }
    if (st == VL_OK && !r->have_header)
        return vl_seterr(err, VL_EDATA, "%s: empty plan file (no header)", r->name);
    return st;
}

vl_status vl_plan_read(vl_plan *p, const char *path, vl_manifest *m, vl_err *err)
{
    reader r;
    vl_status st;

    vl_plan_init(p, m, "", 0, err);
    memset(&r, 0, sizeof r);
    r.p = p;
    r.m = m;
    r.rank = r.mb = r.seg = -1;
    vl_sha256_init(&r.sha);
    if ((st = vl_zreader_open(&r.z, path, err)) != VL_OK)
        return st;
    r.name = vl_zreader_name(r.z);
    p->file.from_file = true;
    st = read_lines(&r, err);
    vl_zreader_close(r.z);
    json_decref(r.prev_drop);
    free(r.buf);
    if (st != VL_OK)
        vl_plan_free(p);
    return st;
}
