/* lib/util/iheap.h -- a binary heap of indices into the caller's array, shared by lib/
 * and plans/: "take the fullest pack, split it, put both halves back" in O(log n) per
 * step instead of a scan of every pack (a scan per split made 1M ranks quadratic). */
#ifndef VLPLAN_IHEAP_H
#define VLPLAN_IHEAP_H

#include <stddef.h>

#include "err.h"

/** True when element a must leave the heap before element b.  A total order (end with a
 *  tie-break on the index) keeps the pops independent of the push order. */
typedef int (*vl_iheap_before)(const void *ctx, size_t a, size_t b);

typedef struct vl_iheap {
    size_t *h, n, cap;
    vl_iheap_before before;
    const void *ctx;
} vl_iheap;

/** An empty heap with room for cap indices (pushes past cap are the caller's error). */
vl_status vl_iheap_init(vl_iheap *q, size_t cap, vl_iheap_before before, const void *ctx,
                        vl_err *err);
void vl_iheap_push(vl_iheap *q, size_t i);
/** The first element by `before`; q->n > 0. */
size_t vl_iheap_pop(vl_iheap *q);
void vl_iheap_free(vl_iheap *q);

#endif
