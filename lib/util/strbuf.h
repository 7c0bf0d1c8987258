/* lib/util/strbuf.h -- growable NUL-terminated text with printf-style appends, shared by
 * the strategies' -v logs, the SVG writer and the YAML emitter's output. */
#ifndef VLPLAN_STRBUF_H
#define VLPLAN_STRBUF_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>

/* Zero-initialise ({0}) before use.  A failed allocation is sticky: later appends do
 * nothing, so a builder of many pieces checks `failed` once, at the end. */
typedef struct vl_strbuf {
    char *buf; /* NULL until the first append; NUL-terminated after it */
    size_t len, cap;
    bool failed;
} vl_strbuf;

/** Append printf-formatted text (sets failed on allocation or format errors). */
void vl_strbuf_printf(vl_strbuf *b, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
void vl_strbuf_vprintf(vl_strbuf *b, const char *fmt, va_list ap)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 0)))
#endif
    ;

/** Append n bytes of s. */
void vl_strbuf_add(vl_strbuf *b, const char *s, size_t n);

/** Hand the text over (malloc'd, caller frees): NULL when nothing was appended or an
 *  append failed (the memory is then released).  b is empty afterwards. */
char *vl_strbuf_take(vl_strbuf *b);

/** Release the text; b is empty afterwards. */
void vl_strbuf_free(vl_strbuf *b);

#endif
