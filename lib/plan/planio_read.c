/* lib/plan/planio_read.c -- the plan file reader (planio.h): plain or zstd through zio, one
 * jansson json_loadb per line; the header, the footer, sample ids and messages here, the
 * iteration records in planio_read_iter.c.
 *
 * Two kinds of trouble, kept apart.  A structural error (malformed JSON, a wrong type, a
 * missing "seg") means the plan cannot be read as written: every one is collected with
 * its place, reading goes on, and the read fails at the end naming the first and how
 * many.  A finding (a claimed sum that disagrees with its segments, an unknown id, a bad
 * checksum) is a property of a readable plan: it is recorded for verify, which reports it
 * beside the invariants it checks itself. */
#include "planio_impl.h"
#include "jsonw.h"

#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FIRST_BUF (1u << 20)
/* Reals in params/config with 15 significant digits, as the config dump writes them:
 * any such decimal survives a trip through a double, so read -> write is byte-exact. */
#define DUMP_FLAGS (JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(15))

/* ---- messages ---- */

/* "iteration 3, rank 1, micro-batch 2, entry 0: " for the element being read. */
static void where(const vl_reader *r, char *buf, size_t cap)
{
    size_t n = 0;

    buf[0] = '\0';
#define ADD(...)                                                                              \
    do {                                                                                      \
        int k = snprintf(buf + n, cap - n, __VA_ARGS__);                                      \
        if (k > 0)                                                                            \
            n = (size_t)k < cap - n ? n + (size_t)k : cap - 1;                                \
    } while (0)
    if (r->it >= 0)
        ADD("iteration %ld, ", r->it);
    if (r->rank >= 0)
        ADD("rank %ld, ", r->rank);
    if (r->mb >= 0)
        ADD("%s %ld, ", r->bwd ? "backward pack" : "micro-batch", r->mb);
    if (r->seg >= 0)
        ADD("entry %ld, ", r->seg);
#undef ADD
}

static void add_msg(vl_msgs *ms, const char *prefix, const vl_reader *r, const char *fmt,
                    va_list ap) VL_PRINTF_LIKE(4, 0);
static void add_msg(vl_msgs *ms, const char *prefix, const vl_reader *r, const char *fmt,
                    va_list ap)
{
    char loc[128], *out;
    int n;

    ms->total++;
    if (ms->n >= VL_PLAN_FILE_MSGS)
        return;
    out = ms->msg[ms->n++];
    where(r, loc, sizeof loc);
    n = snprintf(out, VL_PLAN_MSG_LEN, "%s%s:%zu: %s", prefix, r->name, r->lineno, loc);
    if (n >= 0 && n < VL_PLAN_MSG_LEN)
        vsnprintf(out + n, VL_PLAN_MSG_LEN - (size_t)n, fmt, ap);
}

void vl__rd_error(vl_reader *r, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    add_msg(&r->file->errors, "", r, fmt, ap);
    va_end(ap);
}

void vl__rd_problem(vl_reader *r, int inv, const char *fmt, ...)
{
    static const char *const tag[5] = {"I1: ", "I2: ", "I3: ", "I4: ", "I5: "};
    va_list ap;

    r->file->by_inv[inv - 1]++;
    va_start(ap, fmt);
    add_msg(&r->file->findings, tag[inv - 1], r, fmt, ap);
    va_end(ap);
}

/* ---- typed members ---- */

bool vl__rd_uint(vl_reader *r, const json_t *o, const char *key, uint64_t max, uint64_t *out,
                 bool *bad)
{
    const json_t *v = json_object_get(o, key);
    json_int_t x;

    if (!v)
        return false;
    x = json_is_integer(v) ? json_integer_value(v) : -1;
    if (x < 0 || (uint64_t)x > max) {
        vl__rd_error(r, "\"%s\": expected an integer 0..%llu", key, (unsigned long long)max);
        *bad = true;
        return false;
    }
    *out = (uint64_t)x;
    return true;
}

/* A count of the header or footer (record "header", "header.manifest" or "footer"), in
 * the range the schema's table gives it (planio_fields.c vl_plan_meta): what the Python
 * reader holds it to as well.  false when absent or refused. */
static bool meta_count(vl_reader *r, const json_t *o, const char *record, const char *key,
                       uint64_t *out)
{
    const json_t *v = json_object_get(o, key);
    const vl_pmeta *m = vl_plan_meta;

    while (m->key && (strcmp(m->record, record) != 0 || strcmp(m->key, key) != 0))
        m++;
    if (!v || !m->key)
        return false;
    if (!json_is_integer(v) || json_integer_value(v) < m->min ||
        json_integer_value(v) > m->max) {
        vl__rd_error(r, "\"%s\": expected an integer %lld..%lld", key, (long long)m->min,
                     (long long)m->max);
        return false;
    }
    *out = (uint64_t)json_integer_value(v);
    return true;
}

/* An optional member of the given type: NULL when absent; a wrong type is an error. */
static json_t *opt_typed(vl_reader *r, json_t *o, const char *key, json_type type)
{
    static const char *const names[] = {"an object", "an array", "a string"};
    json_t *v = json_object_get(o, key);

    if (!v || json_typeof(v) == type)
        return v;
    vl__rd_error(r, "\"%s\": expected %s", key,
                 names[type == JSON_OBJECT  ? 0
                       : type == JSON_ARRAY ? 1
                                            : 2]);
    return NULL;
}

/* ---- sample ids ---- */

static void unknown_id(vl_reader *r, const json_t *id)
{
    char *txt = json_dumps(id, JSON_ENCODE_ANY);

    r->file->unknown_ids++;
    vl__rd_problem(r, 1, "sample id %s is not in the manifest", txt ? txt : "?");
    free(txt);
}

vl_status vl__rd_sample(vl_reader *r, const json_t *id, uint32_t *sample, bool *ok,
                        vl_err *err)
{
    bool str = json_is_string(id);
    long long k;

    *ok = json_is_integer(id) ||
          (str && strlen(json_string_value(id)) == json_string_length(id));
    *sample = VL_SAMPLE_UNKNOWN;
    if (!*ok) {
        vl__rd_error(r, "sample id: expected an integer or a string without NUL");
        return VL_OK;
    }
    if (!r->m)
        return vl__ids_intern(r->ids, str, str ? 0 : (int64_t)json_integer_value(id),
                              str ? json_string_value(id) : NULL,
                              str ? json_string_length(id) : 0, sample, err);
    if (str)
        k = vl_manifest_find_str(r->m, json_string_value(id), err);
    else
        k = vl_manifest_find_int(r->m, (int64_t)json_integer_value(id), err);
    if (k == -2)
        return VL_ENOMEM;
    if (k < 0 || (unsigned long long)k >= VL_SAMPLE_UNKNOWN)
        unknown_id(r, id);
    else
        *sample = (uint32_t)k;
    return VL_OK;
}

/* ---- input lines ---- */

static vl_status fill(vl_reader *r, vl_err *err)
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
static vl_status next_line(vl_reader *r, char **line, size_t *len, bool *nl, vl_err *err)
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

/* ---- header ---- */

static vl_status dump_meta(vl_reader *r, json_t *o, const char *key, char **out, vl_err *err)
{
    json_t *v = opt_typed(r, o, key, JSON_OBJECT);

    if (!v)
        return VL_OK;
    free(*out);
    if (!(*out = vl_json_dumps(v, DUMP_FLAGS)))
        return vl_seterr(err, VL_ENOMEM, "out of memory");
    return VL_OK;
}

/* The header names the manifest the plan was made for; a different one is a finding. */
static void check_manifest(vl_reader *r, json_t *o)
{
    json_t *man = opt_typed(r, o, "manifest", JSON_OBJECT), *sha;
    uint64_t n = 0, tokens = 0;
    bool has_n, has_t;
    char hex[65];

    if (!man)
        return;
    has_n = meta_count(r, man, "header.manifest", "samples", &n);
    has_t = meta_count(r, man, "header.manifest", "tokens", &tokens);
    sha = opt_typed(r, man, "sha256", JSON_STRING);
    if (!r->m)
        return;
    vl_sha256_hex(r->m->sha256, hex);
    if ((has_n && n != r->m->n) || (has_t && tokens != r->m->tokens) ||
        (sha && strcmp(json_string_value(sha), hex) != 0))
        vl__rd_problem(r, 5,
                       "the plan was made for another manifest (%llu samples, %llu "
                       "tokens, sha256 %.12s...), not this one (%zu samples, %llu tokens, "
                       "sha256 %.12s...)",
                       (unsigned long long)n, (unsigned long long)tokens,
                       sha ? json_string_value(sha) : "?", r->m->n,
                       (unsigned long long)r->m->tokens, hex);
}

/* "caps": names of vl_cap_name; "optimizer_shard": "replicas" or "world". */
static void read_caps(vl_reader *r, json_t *o)
{
    json_t *caps = opt_typed(r, o, "caps", JSON_ARRAY), *sh;

    for (size_t i = 0; caps && i < json_array_size(caps); i++) {
        const char *c = json_string_value(json_array_get(caps, i));
        unsigned k = 0;
        while (c && vl_cap_name(k) && strcmp(vl_cap_name(k), c) != 0)
            k++;
        if (!c || !vl_cap_name(k) || (1u << k) == VL_CAP_WORLD_OPTIM)
            vl__rd_error(r,
                         "\"caps\": unknown capability %s%s%s (expected uneven_mbs, "
                         "bwd_packs, seg_cp, schedule or shared_packs)",
                         c ? "\"" : "", c ? c : "(not a string)", c ? "\"" : "");
        else
            r->p->caps |= 1u << k;
    }
    if (!(sh = opt_typed(r, o, "optimizer_shard", JSON_STRING)))
        return;
    if (strcmp(json_string_value(sh), "world") == 0)
        r->p->caps |= VL_CAP_WORLD_OPTIM;
    else if (strcmp(json_string_value(sh), "replicas") != 0)
        vl__rd_error(r, "\"optimizer_shard\": expected \"replicas\" or \"world\", got \"%s\"",
                     json_string_value(sh));
}

static vl_status read_header(vl_reader *r, json_t *o, vl_err *err)
{
    json_t *schema = opt_typed(r, o, "schema", JSON_STRING), *strategy;
    uint64_t v;
    vl_status st;

    if (!schema)
        return vl_seterr(err, VL_EDATA,
                         "%s:%zu: the header has no \"schema\" (expected "
                         "\"%s\")",
                         r->name, r->lineno, VL_PLAN_SCHEMA);
    if (strcmp(json_string_value(schema), VL_PLAN_SCHEMA) != 0)
        return vl_seterr(err, VL_EDATA,
                         "%s:%zu: unsupported plan schema \"%s\" (expected "
                         "\"%s\")",
                         r->name, r->lineno, json_string_value(schema), VL_PLAN_SCHEMA);
    r->file->by_vlplan = opt_typed(r, o, "vlplan", JSON_STRING) != NULL;
    if ((strategy = opt_typed(r, o, "strategy", JSON_STRING))) {
        if (json_string_length(strategy) >= sizeof r->p->strategy)
            vl__rd_error(r, "\"strategy\": name longer than %zu bytes",
                         sizeof r->p->strategy - 1);
        else
            memcpy(r->p->strategy, json_string_value(strategy),
                   json_string_length(strategy) + 1);
    }
    if (meta_count(r, o, "header", "seed", &v))
        r->p->seed = v;
    if ((st = dump_meta(r, o, "params", &r->p->params_json, err)) != VL_OK ||
        (st = dump_meta(r, o, "config", &r->p->config_json, err)) != VL_OK)
        return st;
    check_manifest(r, o);
    /* verify checks each iteration as it is read: the header's epochs, or 0 (unknown
     * until the iterations have shown them) */
    r->p->epochs = 0;
    if (meta_count(r, o, "header", "epochs", &v)) {
        r->file->header_epochs = (int64_t)v;
        r->p->epochs = (uint32_t)v;
    }
    if (meta_count(r, o, "header", "iterations", &v))
        r->file->header_iterations = (int64_t)v;
    read_caps(r, o);
    return VL_OK;
}

/* ---- footer ---- */

/* The index of name in the NULL-terminated names, or -1. */
static int name_index(const char *const *names, const char *name)
{
    for (int i = 0; name && names[i]; i++)
        if (strcmp(names[i], name) == 0)
            return i;
    return -1;
}

/* Position i of a tuple of vl_pf_dropped: an integer in its range. */
static bool drop_int(const json_t *e, size_t i)
{
    const json_t *v = json_array_get(e, i);
    const vl_pitem *it = &vl_pf_dropped.items[i];

    return json_is_integer(v) && json_integer_value(v) >= it->min &&
           json_integer_value(v) <= it->max;
}

static vl_status read_drop(vl_reader *r, json_t *e, vl_err *err)
{
    const char *why = json_string_value(json_array_get(e, 3));
    int reason = name_index(vl_pf_dropped.items[3].values, why); /* vl_drop_reason order */
    uint32_t sample;
    bool ok;
    vl_status st;

    if (!json_is_array(e) || json_array_size(e) != vl_pf_dropped.arity_max || !why ||
        !drop_int(e, 1) || !drop_int(e, 2)) {
        vl__rd_error(r, "\"dropped\": expected [ID, OFFSET, LENGTH, REASON]");
        return VL_OK;
    }
    if (reason < 0) {
        vl__rd_error(r, "\"dropped\": unknown reason \"%s\" (oversize or truncated)", why);
        return VL_OK;
    }
    if ((st = vl__rd_sample(r, json_array_get(e, 0), &sample, &ok, err)) != VL_OK || !ok)
        return st;
    return vl_plan_drop(r->p, sample, (uint32_t)json_integer_value(json_array_get(e, 1)),
                        (uint32_t)json_integer_value(json_array_get(e, 2)),
                        (vl_drop_reason)reason, err);
}

static vl_status read_footer(vl_reader *r, json_t *o, vl_err *err)
{
    json_t *dropped = opt_typed(r, o, "dropped", JSON_ARRAY);
    json_t *sha = opt_typed(r, o, "sha256", JSON_STRING);
    int64_t *claim[3] = {&r->file->iterations, &r->file->samples, &r->file->tokens};
    static const char *const keys[3] = {"iterations", "samples", "tokens"};
    unsigned char digest[32];
    char hex[65];
    uint64_t v;
    vl_status st;

    for (int i = 0; i < 3; i++)
        if (meta_count(r, o, "footer", keys[i], &v))
            *claim[i] = (int64_t)v;
    for (size_t i = 0; dropped && i < json_array_size(dropped); i++) {
        r->seg = (long)i;
        if ((st = read_drop(r, json_array_get(dropped, i), err)) != VL_OK)
            return st;
    }
    r->seg = -1;
    vl_sha256_final(&r->sha, digest);
    vl_sha256_hex(digest, hex);
    if (sha)
        r->file->sha = strcmp(hex, json_string_value(sha)) == 0;
    r->file->has_footer = true;
    r->have_footer = true;
    return VL_OK;
}

/* ---- records ---- */

static void hash_line(vl_reader *r, const char *line, size_t len, bool nl)
{
    vl_sha256_update(&r->sha, line, len);
    if (nl)
        vl_sha256_update(&r->sha, "\n", 1);
}

static vl_status read_record(vl_reader *r, json_t *rec, const char *line, size_t len, bool nl,
                             vl_err *err)
{
    const char *type = json_string_value(json_object_get(rec, "type"));

    if (!json_is_object(rec) || !type) {
        if (!r->have_header) /* not a plan at all */
            return vl_seterr(err, VL_EDATA, "%s:%zu: not a plan record (no \"type\")", r->name,
                             r->lineno);
        vl__rd_error(r, "not a plan record (no \"type\")");
        return VL_OK;
    }
    if (!r->have_header && strcmp(type, "header") != 0)
        return vl_seterr(err, VL_EDATA,
                         "%s:%zu: expected the plan header first, got a \"%s\" "
                         "record",
                         r->name, r->lineno, type);
    if (strcmp(type, "footer") == 0)
        return read_footer(r, rec, err);
    hash_line(r, line, len, nl);
    if (strcmp(type, "header") == 0) {
        if (r->have_header) {
            vl__rd_error(r, "a second header");
            return VL_OK;
        }
        r->have_header = true;
        return read_header(r, rec, err);
    }
    if (strcmp(type, "iter") == 0)
        return vl__rd_iter(r, rec, err);
    vl__rd_error(r, "unknown record type \"%s\"", type);
    return VL_OK;
}

/* An iteration record was read: note its epoch; reading one at a time, hand it to the
 * visitor (unless the plan already has structural errors) and forget it. */
vl_status vl__rd_iteration_done(vl_reader *r, vl_err *err)
{
    vl_plan *p = r->p;
    vl_status st = VL_OK;

    if (p->niters == 0)
        return VL_OK;
    if (p->iters[p->niters - 1].epoch + 1 > r->epochs_seen)
        r->epochs_seen = p->iters[p->niters - 1].epoch + 1;
    if (!r->visit)
        return VL_OK;
    if (r->file->errors.total == 0)
        st = r->visit(r->ud, p, err);
    vl_plan_clear_iters(p, p->iter_base + p->niters);
    return st;
}

bool vl__rd_is_iter(const vl_reader *r, const char *line, size_t len)
{
    return r->have_header && len > 14 && memcmp(line, "{\"type\":\"iter\"", 14) == 0;
}

/* json_loadb of one record; NULL and *oom when jansson ran out of memory (it words
 * that as a syntax error, or cuts a string short). */
static json_t *rd_parse(const char *line, size_t len, json_error_t *je, bool *oom)
{
    unsigned long failed;
    json_t *rec;

    vl_json_watch();
    failed = vl_json_failures();
    rec = json_loadb(line, len, JSON_REJECT_DUPLICATES, je);
    /* a failed allocation may also cut a string short and still return a record */
    *oom = vl_json_failures() != failed;
    if (*oom) {
        json_decref(rec);
        rec = NULL;
    }
    return rec;
}

vl_status vl__rd_iter_line(vl_reader *r, const char *line, size_t len, vl_err *err)
{
    const char *type;
    json_error_t je;
    json_t *rec;
    vl_status st;
    bool taken = false, is_iter, oom;

    if (r->ids) /* ids are numbered within each record (planio_ids.c) */
        vl__ids_reset(r->ids);
    if (!r->no_fast && (st = vl__rd_fast_iter(r, line, len, &taken, err)) != VL_OK)
        return st;
    if (taken)
        return VL_OK;
    if (!(rec = rd_parse(line, len, &je, &oom))) {
        if (oom)
            return vl_seterr(err, VL_ENOMEM, "out of memory (reading a plan record)");
        vl__rd_error(r, "invalid JSON at column %d: %s", je.column, je.text);
        return VL_OK;
    }
    type = json_string_value(json_object_get(rec, "type"));
    is_iter = type && strcmp(type, "iter") == 0; /* type dies with rec */
    if (is_iter)
        st = vl__rd_iter(r, rec, err);
    else
        vl__rd_error(r, "unknown record type \"%s\"", type ? type : "?");
    json_decref(rec);
    return is_iter ? st : VL_OK;
}

/* Any line, in order: *stop when reading ends here (data after the footer, a cut-off
 * last line). */
vl_status vl__rd_line(vl_reader *r, const char *line, size_t len, bool nl, bool *stop,
                      vl_err *err)
{
    json_error_t je;
    bool oom;
    json_t *rec;
    vl_status st;

    *stop = false;
    if (r->have_footer) {
        vl__rd_problem(r, 5, "data after the footer");
        *stop = true;
        return VL_OK;
    }
    if (r->ids) /* ids are numbered within each record (planio_ids.c) */
        vl__ids_reset(r->ids);
    if (vl__rd_is_iter(r, line, len) && !r->no_fast) {
        bool taken;
        if ((st = vl__rd_fast_iter(r, line, len, &taken, err)) != VL_OK)
            return st;
        if (taken) {
            hash_line(r, line, len, nl);
            return vl__rd_iteration_done(r, err);
        }
    }
    if (!(rec = rd_parse(line, len, &je, &oom))) {
        if (oom)
            return vl_seterr(err, VL_ENOMEM, "out of memory (reading a plan record)");
        if (!nl && r->have_header) { /* cut short: verify reports the missing footer */
            vl__rd_problem(r, 5, "incomplete last line (file truncated?)");
            *stop = true;
            return VL_OK;
        }
        if (!r->have_header)
            return vl_seterr(err, VL_EDATA, "%s:%zu: invalid JSON at column %d: %s", r->name,
                             r->lineno, je.column, je.text);
        vl__rd_error(r, "invalid JSON at column %d: %s", je.column, je.text);
        return VL_OK;
    }
    st = read_record(r, rec, line, len, nl, err);
    json_decref(rec);
    return st == VL_OK ? vl__rd_iteration_done(r, err) : st;
}

vl_status vl__rd_next_line(vl_reader *r, char **line, size_t *len, bool *nl, vl_err *err)
{
    vl_status st = next_line(r, line, len, nl, err);

    if (st == VL_OK && *line)
        r->lineno++;
    return st;
}

static vl_status read_lines(vl_reader *r, vl_err *err)
{
    char *line = NULL;
    size_t len = 0;
    bool nl = false, stop = false;
    vl_status st = VL_OK;

    while (!stop && (st = vl__rd_next_line(r, &line, &len, &nl, err)) == VL_OK && line)
        if ((st = vl__rd_line(r, line, len, nl, &stop, err)) != VL_OK)
            return st;
    if (st == VL_OK && !r->have_header)
        return vl_seterr(err, VL_EDATA, "%s: empty plan file (no header)", r->name);
    return st;
}

static vl_status finish(vl_reader *r, vl_status st, vl_err *err)
{
    const vl_msgs *e = &r->file->errors;

    if (st != VL_OK)
        return st;
    /* epochs: the header's claim, or what the iterations show */
    r->p->epochs = r->file->header_epochs >= 0 ? (uint32_t)r->file->header_epochs
                                               : (r->epochs_seen ? r->epochs_seen : 1);
    if (e->total == 0)
        return VL_OK;
    return vl_seterr(err, VL_EDATA, "%s%s", e->msg[0],
                     e->total > 1 ? " (and more structural errors, listed apart)" : "");
}

vl_status vl_plan_read(vl_plan *p, vl_plan_file *file, const char *path, vl_manifest *m,
                       vl_err *err)
{
    return vl__plan_read_with(p, file, path, m, true, 1, NULL, NULL, err);
}

vl_status vl_plan_read_each(vl_plan *p, vl_plan_file *file, const char *path, vl_manifest *m,
                            int threads, vl_plan_visit visit, void *ud, vl_err *err)
{
    return vl__plan_read_with(p, file, path, m, true, threads, visit, ud, err);
}

vl_status vl__plan_read_with(vl_plan *p, vl_plan_file *file, const char *path, vl_manifest *m,
                             bool fast, int threads, vl_plan_visit visit, void *ud,
                             vl_err *err)
{
    vl_plan_file scratch;
    vl_reader r;
    vl_status st;

    if (!file)
        file = &scratch;
    memset(file, 0, sizeof *file);
    file->sha = -1;
    file->iterations = file->samples = file->tokens = -1;
    file->header_iterations = file->header_epochs = -1;
    vl_plan_init(p, m, "", 0, err);
    memset(&r, 0, sizeof r);
    r.p = p;
    r.file = file;
    r.m = m;
    r.it = r.rank = r.mb = r.seg = -1;
    r.no_fast = !fast;
    r.visit = visit;
    r.ud = ud;
    vl_sha256_init(&r.sha);
    if (!m && (st = vl__ids_new(&r.ids, err)) != VL_OK)
        return st;
    if (m && !(r.batch = calloc(1, sizeof *r.batch))) {
        vl__ids_free(r.ids);
        return vl_seterr(err, VL_ENOMEM, "out of memory");
    }
    if ((st = vl_zreader_open(&r.z, path, err)) == VL_OK) {
        r.name = vl_zreader_name(r.z);
        /* threads only with a visitor: they hand over one iteration at a time */
        st = finish(&r,
                    visit && threads > 1 ? vl__rd_lines_par(&r, threads, err)
                                         : read_lines(&r, err),
                    err);
        vl_zreader_close(r.z);
    }
    vl__ids_free(r.ids);
    vl__idbatch_free(r.batch);
    free(r.buf);
    if (st != VL_OK)
        vl_plan_free(p); /* the messages stay in *file */
    return st;
}
