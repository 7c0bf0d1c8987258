/* lib/util/grow.h -- growing arrays geometrically, shared by lib/ and plans/. */
#ifndef VLPLAN_GROW_H
#define VLPLAN_GROW_H

#include <stddef.h>

#include "err.h"

/** Make the array at *(T **)buf hold at least n elements of elem bytes, doubling its
 *  capacity *cap (from 16) as needed; contents are kept.  VL_ENOMEM (array untouched)
 *  when the size overflows or realloc fails. */
vl_status vl__grow_to(void *buf, size_t *cap, size_t n, size_t elem, vl_err *err);

/* Inline: most calls find the room there already (an append per element in hot loops). */
static inline vl_status vl_grow(void *buf, size_t *cap, size_t n, size_t elem, vl_err *err)
{
    return n <= *cap ? VL_OK : vl__grow_to(buf, cap, n, elem, err);
}

#endif
