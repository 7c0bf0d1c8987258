/* lib/data/manifest_id.c -- what is derived from a finished sample table: ids as JSON
 * text (escaped as jansson escapes) and the manifest's sha256.  A leaf: the reader
 * (manifest.c) and the builder (manifest_build.c) both call it, it calls neither. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jsonnum.h"
#include "manifest_impl.h"
#include "sha256.h"

/* Where text goes: a bounded buffer (snprintf rules: total counts what did not fit),
 * or, with sha set, a staging buffer hashed whenever it fills. */
typedef struct sink {
    char *buf;
    size_t cap, len, total;
    vl_sha256 *sha;
} sink;

static void put(sink *s, const char *p, size_t n)
{
    s->total += n;
    if (s->sha == NULL) {
        size_t room = s->cap > s->len + 1 ? s->cap - 1 - s->len : 0;
        size_t k = n < room ? n : room;
        if (k > 0) /* buf may be NULL when cap is 0 */
            memcpy(s->buf + s->len, p, k);
        s->len += k;
        return;
    }
    if (s->cap - s->len < n) {
        vl_sha256_update(s->sha, s->buf, s->len);
        s->len = 0;
        if (n > s->cap) {
            vl_sha256_update(s->sha, p, n);
            return;
        }
    }
    memcpy(s->buf + s->len, p, n);
    s->len += n;
}

static void put_i64(sink *s, int64_t v)
{
    char tmp[VL_JSONNUM_MAX];

    put(s, tmp, vl_jsonnum_i64(tmp, v));
}

/* JSON string, escaped as jansson does (control characters, '"' and '\\'). */
static void put_json_str(sink *s, const char *str)
{
    static const char hex[] = "0123456789ABCDEF";
    const char *run = str;

    put(s, "\"", 1);
    for (const char *p = str; *p; p++) {
        unsigned char c = (unsigned char)*p;
        char esc[6] = {'\\', 0, '0', '0', 0, 0};
        size_t n = 2;
        if (c >= 0x20 && c != '"' && c != '\\')
            continue;
        put(s, run, (size_t)(p - run));
        run = p + 1;
        switch (c) {
        case '"':
        case '\\': esc[1] = (char)c; break;
        case '\b': esc[1] = 'b'; break;
        case '\f': esc[1] = 'f'; break;
        case '\n': esc[1] = 'n'; break;
        case '\r': esc[1] = 'r'; break;
        case '\t': esc[1] = 't'; break;
        default: esc[1] = 'u', esc[4] = hex[c >> 4], esc[5] = hex[c & 15], n = 6;
        }
        put(s, esc, n);
    }
    put(s, run, strlen(run));
    put(s, "\"", 1);
}

static void put_id(sink *s, const vl_manifest *m, size_t i)
{
    if (m->id_kind == NULL)
        put_i64(s, (int64_t)i);
    else if (m->id_kind[i] == VL_ID_INT)
        put_i64(s, (int64_t)m->id_val[i]);
    else
        put_json_str(s, m->id_pool + m->id_val[i]);
}

size_t vl_manifest_id_json(const vl_manifest *m, size_t i, char *buf, size_t cap)
{
    sink s = {buf, cap, 0, 0, NULL};

    put_id(&s, m, i);
    if (cap > 0)
        buf[s.len] = '\0';
    return s.total;
}

/* Flush the staging buffer to the hash unless need bytes fit. */
static void room(sink *s, size_t need)
{
    if (s->cap - s->len < need) {
        vl_sha256_update(s->sha, s->buf, s->len);
        s->len = 0;
    }
}

/* sha256 of "<id json>\t<len>\t<loss>\n" for every sample, in order. */
void vl__manifest_sha(vl_manifest *m)
{
    char buf[1u << 16];
    vl_sha256 sha;
    sink s = {buf, sizeof buf, 0, 0, &sha};

    vl_sha256_init(&sha);
    for (size_t i = 0; i < m->n; i++) {
        char *d;
        room(&s, 64); /* a numeric record: 20 + 1 + 10 + 1 + 10 + 1 */
        if (m->id_kind != NULL && m->id_kind[i] == VL_ID_STR) {
            put_json_str(&s, m->id_pool + m->id_val[i]);
            room(&s, 32);
            d = buf + s.len;
        } else {
            int64_t id = m->id_kind != NULL ? (int64_t)m->id_val[i] : (int64_t)i;
            d = buf + s.len;
            d += vl_jsonnum_i64(d, id);
        }
        *d++ = '\t';
        d += vl_jsonnum_u64(d, m->len[i]);
        *d++ = '\t';
        d += vl_jsonnum_u64(d, vl_manifest_loss(m, i));
        *d++ = '\n';
        s.len = (size_t)(d - buf);
    }
    vl_sha256_update(&sha, buf, s.len);
    vl_sha256_final(&sha, m->sha256);
}

void vl_manifest_sha256_hex(const vl_manifest *m, char hex[65])
{
    vl_sha256_hex(m->sha256, hex);
}
