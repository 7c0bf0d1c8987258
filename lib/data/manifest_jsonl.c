/* lib/data/manifest_jsonl.c -- one JSONL manifest line into a record, with jansson: a
 * json_loadb per line, then the keys checked for type and range one by one. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jsonw.h"
#include "manifest_impl.h"

/* A JSON value for a message: strings as `string "12"`, others as written. */
static const char *show_json(char out[64], const json_t *v)
{
    char *d = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);
    const char *pre = json_is_string(v) ? "string " : "";

    if (json_is_object(v) || json_is_array(v) || d == NULL)
        snprintf(out, 64, "%s",
                 json_is_object(v)  ? "an object"
                 : json_is_array(v) ? "an array"
                                    : "a value");
    else if (strlen(d) > 50)
        snprintf(out, 64, "%s%.47s...", pre, d);
    else
        snprintf(out, 64, "%s%s", pre, d);
    free(d);
    return out;
}

static vl_status json_count(vl__mb *b, const json_t *v, const char *key, bool zero_ok,
                            uint32_t *out)
{
    char sh[64];
    json_int_t x;

    if (!json_is_integer(v))
        return vl__mb_err(b, 0, "\"%s\" must be an integer, got %s", key, show_json(sh, v));
    x = json_integer_value(v);
    if (x < (zero_ok ? 0 : 1))
        return vl__mb_err(b, 0, "\"%s\" must be a %s integer, got %lld", key,
                          zero_ok ? "non-negative" : "positive", (long long)x);
    if (x > (json_int_t)VL_MAX_SAMPLE_LEN)
        return vl__mb_err(b, 0, "\"%s\" %lld out of range (max %u)", key, (long long)x,
                          VL_MAX_SAMPLE_LEN);
    *out = (uint32_t)x;
    return VL_OK;
}

/* ---- the raw text of one member (jansson reads -0 as 0 and keeps no text) ---- */

static const char *skip_ws(const char *p, const char *e)
{
    while (p < e && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r'))
        p++;
    return p;
}

/* p at '"': just past the closing quote. */
static const char *skip_string(const char *p, const char *e)
{
    for (p++; p < e && *p != '"'; p++)
        if (*p == '\\')
            p++;
    return p < e ? p + 1 : e;
}

static const char *skip_value(const char *p, const char *e)
{
    int depth = 0;

    if (p < e && *p == '"')
        return skip_string(p, e);
    for (; p < e; p++) {
        if (*p == '"')
            p = skip_string(p, e) - 1;
        else if (*p == '{' || *p == '[')
            depth++;
        else if (*p == '}' || *p == ']') {
            if (depth-- == 0)
                return p;
        } else if (depth == 0 && (*p == ',' || *p == ' ' || *p == '\t' || *p == '\r'))
            return p;
    }
    return e;
}

/* Key token [k, ke) (quotes included) names key; escapes decoded by jansson. */
static bool key_is(const char *k, const char *ke, const char *key)
{
    size_t n = strlen(key);
    json_t *s;
    bool eq;

    if (!memchr(k, '\\', (size_t)(ke - k)))
        return (size_t)(ke - k) == n + 2 && memcmp(k + 1, key, n) == 0;
    if ((s = json_loadb(k, (size_t)(ke - k), JSON_DECODE_ANY, NULL)) == NULL)
        return false;
    eq = json_is_string(s) && json_string_length(s) == n &&
         memcmp(json_string_value(s), key, n) == 0;
    json_decref(s);
    return eq;
}

/* The line (a valid JSON object) gives key the value -0, written so. */
static bool raw_neg_zero(const char *p, size_t n, const char *key)
{
    const char *e = p + n, *k, *ke, *v, *ve;

    p = skip_ws(p, e);
    if (p == e || *p++ != '{')
        return false;
    while ((p = skip_ws(p, e)) < e && *p == '"') {
        k = p;
        ke = skip_string(p, e);
        p = skip_ws(ke, e);
        if (p == e || *p++ != ':')
            return false;
        v = skip_ws(p, e);
        ve = skip_value(v, e);
        if (key_is(k, ke, key))
            return ve - v == 2 && memcmp(v, "-0", 2) == 0;
        p = skip_ws(ve, e);
        if (p == e || *p++ != ',')
            return false;
    }
    return false;
}

static vl_status json_id(vl__mb *b, vl__rec *r, const json_t *o, const char *p, size_t n)
{
    const char *key = b->opts->id_col ? b->opts->id_col : "id";
    const json_t *v = json_object_get(o, key);
    char sh[64];

    if (v == NULL)
        return vl__mb_err(b, 0, "missing key \"%s\"", key);
    if (json_is_integer(v) && json_integer_value(v) == 0 && raw_neg_zero(p, n, key)) {
        /* not the canonical integer 0: an id kept verbatim, as a text format keeps it */
        r->id_kind = VL_ID_STR;
        r->id_str = "-0";
        r->id_len = 2;
    } else if (json_is_integer(v)) {
        r->id_kind = VL_ID_INT;
        r->id_int = json_integer_value(v);
    } else if (json_is_string(v) && json_string_length(v) > 0) {
        r->id_kind = VL_ID_STR;
        r->id_str = json_string_value(v);
        r->id_len = json_string_length(v);
    } else {
        return vl__mb_err(b, 0, "\"%s\" must be an integer or a non-empty string, got %s", key,
                          show_json(sh, v));
    }
    return VL_OK;
}

static vl_status json_len(vl__mb *b, vl__rec *r, const json_t *o)
{
    const char *key = b->opts->len_col;
    const json_t *v = key ? json_object_get(o, key) : NULL;

    for (size_t k = 0; b->opts->len_col == NULL && k < VL__NLEN_NAMES; k++) {
        const json_t *w = json_object_get(o, vl__len_names[k]);
        if (w && v) /* which one is meant?  Not ours to guess */
            return vl__mb_err(b, 0,
                              "both \"%s\" and \"%s\" are given; keep one, or name "
                              "the length key with --len-col",
                              key, vl__len_names[k]);
        if (w) {
            v = w;
            key = vl__len_names[k];
        }
    }
    if (v == NULL && b->opts->len_col)
        return vl__mb_err(b, 0, "missing key \"%s\"", b->opts->len_col);
    if (v == NULL)
        return vl__mb_err(b, 0, "missing key \"length\" (or \"len\", \"num_tokens\")");
    return json_count(b, v, key, false, &r->len);
}

/* Optional keys: absent and null both mean "not given". */
static vl_status json_extras(vl__mb *b, vl__rec *r, const json_t *o)
{
    const json_t *loss = json_object_get(o, "loss_tokens");
    const json_t *src = json_object_get(o, "source");
    char sh[64];
    vl_status st;

    if (loss != NULL && !json_is_null(loss)) {
        if ((st = json_count(b, loss, "loss_tokens", true, &r->loss)) != VL_OK)
            return st;
        if (r->loss > r->len)
            return vl__mb_err(b, 0, "\"loss_tokens\" %u exceeds the sample length %u", r->loss,
                              r->len);
        r->has_loss = true;
    }
    if (src != NULL && !json_is_null(src)) {
        if (!json_is_string(src))
            return vl__mb_err(b, 0, "\"source\" must be a string, got %s", show_json(sh, src));
        r->src = json_string_value(src);
        r->src_len = json_string_length(src);
    }
    return VL_OK;
}

vl_status vl__jsonl_line(vl__mb *b, const char *p, size_t n)
{
    json_error_t je;
    json_t *o;
    unsigned long failed;
    vl__rec r = {0};
    char sh[64];
    vl_status st;

    if (!b->no_fast && vl__jsonl_fast(b, p, n, &st))
        return st;
    vl_json_watch();
    failed = vl_json_failures();
    o = json_loadb(p, n, JSON_REJECT_DUPLICATES | JSON_DECODE_ANY, &je);
    if (vl_json_failures() != failed) { /* a syntax error to jansson, or a string cut */
        json_decref(o);
        return vl_seterr(b->err, VL_ENOMEM, "out of memory (reading a JSONL record)");
    }
    if (o == NULL)
        return vl__mb_err(b, je.column > 0 ? je.column : 1, "invalid JSON: %s", je.text);
    if (!json_is_object(o))
        st = vl__mb_err(b, 0, "expected a JSON object, got %s", show_json(sh, o));
    else if ((st = json_id(b, &r, o, p, n)) == VL_OK && (st = json_len(b, &r, o)) == VL_OK &&
             (st = json_extras(b, &r, o)) == VL_OK)
        st = vl__mb_add(b, &r); /* before decref: r points into o */
    json_decref(o);
    return st;
}
