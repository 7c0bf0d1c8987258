/* lib/util/grow.h -- growing arrays geometrically, shared by lib/ and plans/. */
#ifndef VLPLAN_GROW_H
#define VLPLAN_GROW_H

#include <stddef.h>

#include "err.h"

/** Make the array at *(T **)buf hold at least n elements of elem bytes, doubling its
 *  capacity *cap (from 16) as needed; contents are kept.  VL_ENOMEM (array untouched)
 *  when the size overflows or realloc fails. */
vl_status vl_grow(void *buf, size_t *cap, size_t n, size_t elem, vl_err *err);

#endif
