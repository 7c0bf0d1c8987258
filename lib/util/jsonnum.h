/* lib/util/jsonnum.h -- decimal integers exactly as jansson dumps a json_integer ("%lld"),
 * without going through vfprintf: the plan writer prints hundreds of millions of them
 * and the stdio machinery was a tenth of its time.  Inline because each call is a few
 * nanoseconds of work and vlplan is built without LTO. */
#ifndef VLPLAN_JSONNUM_H
#define VLPLAN_JSONNUM_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* Longest output: "-9223372036854775808" and "18446744073709551615" are 20 characters. */
#define VL_JSONNUM_MAX 20

/** Decimal digits of v at dst (no NUL, no sign); returns how many, 1..20. */
static inline size_t vl_jsonnum_u64(char *dst, uint64_t v)
{
    /* Two digits per division: half the divisions of the digit-at-a-time loop. */
    static const char pairs[201] =
        "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
        "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
        "8081828384858687888990919293949596979899";
    size_t n = 1;
    char *p;

    for (uint64_t t = v;; t /= 10000, n += 4) {
        if (t < 10)
            break;
        if (t < 100) {
            n += 1;
            break;
        }
        if (t < 1000) {
            n += 2;
            break;
        }
        if (t < 10000) {
            n += 3;
            break;
        }
    }
    p = dst + n;
    while (v >= 100) {
        unsigned r = (unsigned)(v % 100);
        v /= 100;
        p -= 2;
        memcpy(p, pairs + 2 * r, 2);
    }
    if (v >= 10)
        memcpy(p - 2, pairs + 2 * v, 2);
    else
        p[-1] = (char)('0' + v);
    return n;
}

/** Signed decimal of v at dst (no NUL); returns how many characters, 1..20. */
static inline size_t vl_jsonnum_i64(char *dst, int64_t v)
{
    if (v < 0) {
        *dst = '-';
        return 1 + vl_jsonnum_u64(dst + 1, 0 - (uint64_t)v);
    }
    return vl_jsonnum_u64(dst, (uint64_t)v);
}

#endif
