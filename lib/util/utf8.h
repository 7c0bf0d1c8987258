/* lib/util/utf8.h -- the one UTF-8 check: what the manifest reader accepts in ids and
 * sources and what the plan writer re-checks before printing an id as JSON. */
#ifndef VLPLAN_UTF8_H
#define VLPLAN_UTF8_H

#include <stdbool.h>
#include <stddef.h>

/** Whether s[0..n) is well-formed UTF-8 by jansson's rules (no stray continuation
 *  bytes, overlong forms, surrogates or code points above U+10FFFF) without a NUL. */
bool vl_utf8_valid(const char *s, size_t n);

#endif
