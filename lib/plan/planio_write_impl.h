/* lib/plan/planio_write_impl.h -- private to the plan writer: the line buffer every record
 * is printed into, and the writer's state, shared by planio_write.c (the writer's life,
 * records out), planio_write_iter.c (iteration records and the footer) and
 * planio_write_header.c (the header, through jansson).  Not API.
 *
 * The buffer's primitives are inline: they run for every integer of every record, and
 * the writer used to be one file whose compiler saw them all. */
#ifndef VLPLAN_PLANIO_WRITE_IMPL_H
#define VLPLAN_PLANIO_WRITE_IMPL_H

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "jsonnum.h"
#include "planio.h"
#include "sha256.h"
#include "zio.h"

/* ---- the line buffer ---- */

typedef struct line_buf {
    char *data; /* allocated before the first record, so never NULL */
    size_t len, cap;
    bool oom; /* ran out of memory (vs. an id that is not valid UTF-8) */
} line_buf;

/** Grow b until n more bytes fit; false (and b->oom) when memory runs out. */
bool vl__line_grow(line_buf *b, size_t n);

/* Room for n more bytes.  The buffer only grows, so once the longest record has been
 * seen this is one comparison; the emitters reserve once per element and then store
 * without checks. */
static inline bool room(line_buf *b, size_t n)
{
    return b->cap - b->len >= n || vl__line_grow(b, n);
}

static inline bool put(line_buf *b, const char *s, size_t n)
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
static inline char *jint(char *d, uint64_t v)
{
    return d + vl_jsonnum_i64(d, (int64_t)v);
}

/* key (a literal with its leading comma or brace) and a signed integer. */
static inline bool put_kv(line_buf *b, const char *key, size_t klen, int64_t v)
{
    if (!room(b, klen + VL_JSONNUM_MAX))
        return false;
    memcpy(b->data + b->len, key, klen);
    b->len += klen;
    b->len += vl_jsonnum_i64(b->data + b->len, v);
    return true;
}

#define PUT_KV(b, key, v) put_kv((b), (key), sizeof(key) - 1, (int64_t)(v))

/* ---- the writer ---- */

/* ,"key": for every row of the field table, built once per writer. */
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
    line_buf line;            /* reused for every record: the largest line is allocated once */
    uint64_t samples, tokens; /* footer totals */
    uint64_t iterations;      /* records written */
    int64_t header_iters;     /* the header's "iterations", -1: left out (streamed plan
                           * whose strategy did not announce a count) */
    keyset keys;
} writer;

/* ---- the records (planio_write_iter.c, planio_write_header.c) ---- */

/** The keys of the field table, with their commas. */
void vl__write_keys_init(keyset *k);
/** Iteration it of w->p into the line buffer, its totals added to the footer's; false:
 *  out of memory (w->line.oom) or a sample id that is not valid UTF-8. */
bool vl__put_iter(writer *w, size_t it);
/** The footer, with the checksum of every line before it. */
bool vl__put_footer(writer *w);
/** The header of p (iters < 0: no "iterations" key) into b; *formatted false when the
 *  dump stopped for lack of memory in b.  VL_EUSAGE (a seed JSON cannot hold),
 *  VL_EINTERNAL (params or config not a JSON object), VL_ENOMEM. */
vl_status vl__put_header(line_buf *b, const vl_plan *p, int64_t iters, bool *formatted,
                         vl_err *err);

#endif
