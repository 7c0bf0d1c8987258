/* lib/data/manifest_jsonl_fast.c -- the common JSONL manifest line without jansson: a
 * flat object whose values are integers, strings without escapes, or null, such as
 * {"id":42,"len":311}.  A line is taken only when it is such an object AND makes a
 * valid record (the keys the record needs have the right types and ranges, no key
 * repeats, no two length keys); anything else -- nesting, escapes, reals, booleans, a
 * wrong type, an error of any kind -- is left to jansson (manifest_jsonl.c), which then
 * reads it and words its error.  So the two paths cannot disagree on what a line means
 * or on a message; tests/data/test_manifest_fast.c and fuzz/fuzz_manifestline.c hold them
 * to it. */
#include <string.h>

#include "manifest_impl.h"
#include "utf8.h"

#define MAX_KEYS 16
/* 18 digits always fit int64; longer integers are jansson's to range-check */
#define MAX_DIGITS 18

typedef enum { V_INT, V_STR, V_NULL } vkind;

typedef struct member {
    const char *key;
    size_t klen;
    vkind kind;
    int64_t i;     /* V_INT */
    const char *s; /* V_STR: the bytes between the quotes */
    size_t slen;
} member;

typedef struct cur {
    const char *p, *end;
} cur;

static void ws(cur *c)
{
    while (c->p < c->end && (*c->p == ' ' || *c->p == '\t' || *c->p == '\n' || *c->p == '\r'))
        c->p++;
}

/* A string without escapes or control characters, valid UTF-8: its bytes. */
static bool str(cur *c, const char **s, size_t *n)
{
    const char *q = ++c->p;
    bool ascii = true;

    while (q < c->end && *q != '"') {
        unsigned char u = (unsigned char)*q;
        if (u < 0x20 || u == '\\')
            return false;
        ascii &= u < 0x80;
        q++;
    }
    if (q == c->end || (!ascii && !vl_utf8_valid(c->p, (size_t)(q - c->p))))
        return false;
    *s = c->p;
    *n = (size_t)(q - c->p);
    c->p = q + 1;
    return true;
}

/* -?(0|[1-9][0-9]*) not followed by a fraction or an exponent. */
static bool integer(cur *c, int64_t *out)
{
    bool neg = c->p < c->end && *c->p == '-';
    const char *d = c->p + neg, *q = d;
    uint64_t v = 0;

    while (q < c->end && *q >= '0' && *q <= '9')
        v = v * 10 + (uint64_t)(*q++ - '0');
    if (q == d || q - d > MAX_DIGITS || (*d == '0' && q - d > 1) || (neg && v == 0))
        return false; /* -0 too: jansson reads it as 0, whatever that should mean */
    if (q < c->end && (*q == '.' || *q == 'e' || *q == 'E'))
        return false;
    *out = neg ? -(int64_t)v : (int64_t)v;
    c->p = q;
    return true;
}

static bool value(cur *c, member *m)
{
    if (c->p == c->end)
        return false;
    if (*c->p == '"') {
        m->kind = V_STR;
        return str(c, &m->s, &m->slen);
    }
    if (*c->p == 'n') {
        m->kind = V_NULL;
        if (c->end - c->p < 4 || memcmp(c->p, "null", 4) != 0)
            return false;
        c->p += 4;
        return true;
    }
    m->kind = V_INT;
    return integer(c, &m->i);
}

/* The whole line as a flat object with distinct keys. */
static bool object(const char *p, size_t n, member *ms, size_t *nm)
{
    cur c = {p, p + n};

    *nm = 0;
    ws(&c);
    if (c.p == c.end || *c.p++ != '{')
        return false;
    for (;;) {
        member *m = &ms[*nm];
        ws(&c);
        if (*nm == MAX_KEYS || c.p == c.end || *c.p != '"' || !str(&c, &m->key, &m->klen))
            return false;
        for (size_t k = 0; k < *nm; k++)
            if (ms[k].klen == m->klen && memcmp(ms[k].key, m->key, m->klen) == 0)
                return false;
        ws(&c);
        if (c.p == c.end || *c.p++ != ':')
            return false;
        ws(&c);
        if (!value(&c, m))
            return false;
        ++*nm;
        ws(&c);
        if (c.p == c.end)
            return false;
        if (*c.p == '}')
            break;
        if (*c.p++ != ',')
            return false;
    }
    c.p++;
    ws(&c);
    return c.p == c.end;
}

static const member *get(const member *ms, size_t nm, const char *key)
{
    size_t n = strlen(key);

    for (size_t k = 0; k < nm; k++)
        if (ms[k].klen == n && memcmp(ms[k].key, key, n) == 0)
            return &ms[k];
    return NULL;
}

static bool count(const member *v, bool zero_ok, uint32_t *out)
{
    if (!v || v->kind != V_INT || v->i < (zero_ok ? 0 : 1) ||
        v->i > (int64_t)VL_MAX_SAMPLE_LEN)
        return false;
    *out = (uint32_t)v->i;
    return true;
}

/* The length: the chosen key, else exactly one of the default names. */
static bool length(const vl__mb *b, const member *ms, size_t nm, uint32_t *len)
{
    const member *v = NULL;

    if (b->opts->len_col)
        return count(get(ms, nm, b->opts->len_col), false, len);
    for (size_t k = 0; k < VL__NLEN_NAMES; k++) {
        const member *w = get(ms, nm, vl__len_names[k]);
        if (w && v)
            return false; /* two length keys: jansson's path says so */
        v = w ? w : v;
    }
    return count(v, false, len);
}

static bool record(const vl__mb *b, const member *ms, size_t nm, vl__rec *r)
{
    const member *id = get(ms, nm, b->opts->id_col ? b->opts->id_col : "id");
    const member *loss = get(ms, nm, "loss_tokens"), *src = get(ms, nm, "source");

    if (!id || (id->kind == V_STR && id->slen == 0) || id->kind == V_NULL ||
        !length(b, ms, nm, &r->len))
        return false;
    if (id->kind == V_INT) {
        r->id_kind = VL_ID_INT;
        r->id_int = id->i;
    } else {
        r->id_kind = VL_ID_STR;
        r->id_str = id->s;
        r->id_len = id->slen;
    }
    if (loss && loss->kind != V_NULL) {
        if (!count(loss, true, &r->loss) || r->loss > r->len)
            return false;
        r->has_loss = true;
    }
    if (src && src->kind != V_NULL) {
        if (src->kind != V_STR)
            return false;
        r->src = src->s;
        r->src_len = src->slen;
    }
    return true;
}

bool vl__jsonl_fast(vl__mb *b, const char *p, size_t n, vl_status *st)
{
    member ms[MAX_KEYS];
    size_t nm;
    vl__rec r = {0};

    if (!object(p, n, ms, &nm) || !record(b, ms, nm, &r))
        return false;
    *st = vl__mb_add(b, &r);
    return true;
}
