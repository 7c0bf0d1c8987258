/* lib/util/iheap.c -- binary heap of indices ordered by the caller's `before`. */
#include <stdlib.h>

#include "iheap.h"

vl_status vl_iheap_init(vl_iheap *q, size_t cap, vl_iheap_before before, const void *ctx,
                        vl_err *err)
{
    *q = (vl_iheap){
        .h = malloc((cap ? cap : 1) * sizeof *q->h), .cap = cap, .before = before, .ctx = ctx};
    if (q->h == NULL)
        return vl_seterr(err, VL_ENOMEM, "out of memory for a heap of %zu", cap);
    return VL_OK;
}

static void swap(size_t *h, size_t i, size_t j)
{
    size_t t = h[i];

    h[i] = h[j];
    h[j] = t;
}

void vl_iheap_push(vl_iheap *q, size_t i)
{
    size_t k = q->n++;

    q->h[k] = i;
    while (k > 0 && q->before(q->ctx, q->h[k], q->h[(k - 1) / 2])) {
        swap(q->h, k, (k - 1) / 2);
        k = (k - 1) / 2;
    }
}

size_t vl_iheap_pop(vl_iheap *q)
{
    size_t top = q->h[0], k = 0;

    q->h[0] = q->h[--q->n];
    for (;;) {
        size_t l = 2 * k + 1, m = k;
        if (l < q->n && q->before(q->ctx, q->h[l], q->h[m]))
            m = l;
        if (l + 1 < q->n && q->before(q->ctx, q->h[l + 1], q->h[m]))
            m = l + 1;
        if (m == k)
            return top;
        swap(q->h, k, m);
        k = m;
    }
}

void vl_iheap_free(vl_iheap *q)
{
    free(q->h);
    q->h = NULL;
    q->n = q->cap = 0;
}
