/* lib/util/grow.c -- geometric array growth (grow.h). */
#include "grow.h"

#include <stdint.h>
#include <stdlib.h>

vl_status vl__grow_to(void *buf, size_t *cap, size_t n, size_t elem, vl_err *err)
{
    void **p = buf;
    size_t nc = *cap ? *cap : 16;
    void *np;

    if (n <= *cap)
        return VL_OK;
    while (nc < n) {
        if (nc > SIZE_MAX / 2)
            return vl_seterr(err, VL_ENOMEM, "out of memory (%zu elements)", n);
        nc *= 2;
    }
    if (nc > SIZE_MAX / elem || (np = realloc(*p, nc * elem)) == NULL)
        return vl_seterr(err, VL_ENOMEM, "out of memory (%zu elements of %zu bytes)", n, elem);
    *p = np;
    *cap = nc;
    return VL_OK;
}
