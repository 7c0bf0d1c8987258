/* lib/util/strbuf.c -- growable text (strbuf.h): geometric growth, sticky failure. */
#include "strbuf.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FIRST_CAP 4096

/* Room for n more bytes and the NUL. */
static bool reserve(vl_strbuf *b, size_t n)
{
    size_t nc = b->cap ? b->cap : FIRST_CAP;
    char *nb;

    if (b->failed)
        return false;
    if (b->buf != NULL && b->cap - b->len > n)
        return true;
    if (n >= SIZE_MAX / 2 - b->len) {
        b->failed = true;
        return false;
    }
    while (nc - b->len <= n)
        nc *= 2;
    if ((nb = realloc(b->buf, nc)) == NULL) {
        b->failed = true;
        return false;
    }
    b->buf = nb;
    b->cap = nc;
    return true;
}

void vl_strbuf_vprintf(vl_strbuf *b, const char *fmt, va_list ap)
{
    va_list again;
    int n;

    if (b->failed)
        return;
    va_copy(again, ap);
    /* Straight into the free space; only text that did not fit is formatted twice. */
    n = vsnprintf(b->buf ? b->buf + b->len : NULL, b->buf ? b->cap - b->len : 0, fmt, ap);
    if (n < 0)
        b->failed = true;
    else if ((b->buf == NULL || (size_t)n >= b->cap - b->len) && reserve(b, (size_t)n))
        vsnprintf(b->buf + b->len, b->cap - b->len, fmt, again);
    va_end(again);
    if (!b->failed)
        b->len += (size_t)n;
    else if (b->buf != NULL)
        b->buf[b->len] = '\0'; /* drop a truncated tail */
}

void vl_strbuf_printf(vl_strbuf *b, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vl_strbuf_vprintf(b, fmt, ap);
    va_end(ap);
}

void vl_strbuf_add(vl_strbuf *b, const char *s, size_t n)
{
    if (!reserve(b, n))
        return;
    memcpy(b->buf + b->len, s, n);
    b->len += n;
    b->buf[b->len] = '\0';
}

char *vl_strbuf_take(vl_strbuf *b)
{
    char *text = b->failed ? NULL : b->buf;

    if (b->failed)
        free(b->buf);
    memset(b, 0, sizeof *b);
    return text;
}

void vl_strbuf_free(vl_strbuf *b)
{
    free(b->buf);
    memset(b, 0, sizeof *b);
}
