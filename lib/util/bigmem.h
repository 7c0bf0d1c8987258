/* lib/util/bigmem.h -- allocating the per-sample arrays (millions of elements: lengths,
 * an epoch's order, a packer's pairs and sort buffers) on transparent huge pages. */
#ifndef VLPLAN_BIGMEM_H
#define VLPLAN_BIGMEM_H

#include <stddef.h>

/** malloc(bytes); a block of at least VL_BIG_MIN bytes starts on a 2 MiB boundary and
 *  is marked for transparent huge pages where the system gives them on request (Linux,
 *  THP in `madvise` mode), before anything touches it.  Free with free(); NULL when out
 *  of memory. */
void *vl_big_malloc(size_t bytes);

/** realloc(p, bytes) for a block of `old` bytes: the result is a vl_big_malloc block
 *  when it is large (the contents copied, p freed: realloc would copy them into pages
 *  it had not marked yet), else realloc's.  NULL (p untouched) when out of memory. */
void *vl_big_realloc(void *p, size_t old, size_t bytes);

/* Below this the block lies on at most one whole huge page: not worth a system call. */
#define VL_BIG_MIN ((size_t)4 << 20)

#endif
