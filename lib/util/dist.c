/* lib/util/dist.c -- distributions over iterations (dist.h).  Percentiles are
 * nearest-rank: the ceil(q·n/100)-th smallest value. */
#include "dist.h"

#include <stdlib.h>
#include <string.h>

#include "sort.h"

/* 1-based nearest rank ceil(q·n/100), as a 0-based index. */
static size_t rank_index(size_t n, unsigned q)
{
    size_t r = (n * q + 99) / 100;

    return r > 0 ? r - 1 : 0;
}

/* Mean in iteration order (before sorting, so it does not depend on the sort). */
void vl_dist_of(double *v, size_t n, vl_dist *d)
{
    double sum = 0;

    memset(d, 0, sizeof *d);
    if (n == 0)
        return;
    for (size_t i = 0; i < n; i++)
        sum += v[i];
    vl_sort_double(v, n);
    d->mean = sum / (double)n;
    d->p50 = v[rank_index(n, 50)];
    d->p99 = v[rank_index(n, 99)];
    d->max = v[n - 1];
}

vl_status vl_series_push(vl_series *s, const double *row, vl_err *err)
{
    if (s->n == s->cap) {
        size_t nc = s->cap ? 2 * s->cap : 256;
        for (size_t k = 0; k < s->ncol; k++) {
            double *c = realloc(s->col[k], nc * sizeof *c);
            if (!c)
                return vl_seterr(err, VL_ENOMEM, "out of memory for per-iteration figures");
            s->col[k] = c;
        }
        s->cap = nc;
    }
    for (size_t k = 0; k < s->ncol; k++)
        s->col[k][s->n] = row[k];
    s->n++;
    return VL_OK;
}

void vl_series_dist(vl_series *s, size_t k, vl_dist *d)
{
    vl_dist_of(s->col[k], s->n, d);
}

void vl_series_free(vl_series *s)
{
    for (size_t k = 0; k < VL_SERIES_MAX; k++)
        free(s->col[k]);
    memset(s, 0, sizeof *s);
}
