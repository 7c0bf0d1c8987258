/* plans/slimpack/slimpack_cands.c -- the candidates a batch is searched over
 * (docs/slimpack.md §2.8): M = round(pp·f) for the factors of slimpack.factors,
 * duplicates dropped, each with the asymmetric partition, the symmetric one or both;
 * the search itself is slimpack_search.c. */
#include <math.h>
#include <string.h>

#include "slimpack_impl.h"

size_t vl__sp_candidates(const sp_setting *s, uint64_t tokens, uint32_t *out, size_t cap)
{
    size_t n = 0;
    int pp = s->par.pp > 1 ? s->par.pp : 1;

    if (s->o->micropacks > 0) {
        out[0] = s->o->micropacks;
        return 1;
    }
    for (uint32_t i = 0; i < s->factors_n && n < cap; i++) {
        long M = lround(pp * s->factors[i]);
        uint32_t m = M < 1 ? 1 : M > 65536 ? 65536 : (uint32_t)M;
        size_t j = 0;
        while (j < n && out[j] < m)
            j++;
        if (j < n && out[j] == m)
            continue;
        memmove(out + j + 1, out + j, (n - j) * sizeof *out);
        out[j] = m;
        n++;
    }
    /* packs of fewer than min_pack_tokens on average: kept only as the smallest M */
    size_t keep = 1;
    while (keep < n && tokens / out[keep] >= s->o->min_pack_tokens)
        keep++;
    return n ? keep : 0;
}

size_t vl__sp_list_candidates(const sp_setting *s, uint32_t *Ms, size_t *nM, sp_cand *cs)
{
    size_t nc = 0;

    *nM = vl__sp_candidates(s, UINT64_MAX, Ms, SP_MAX_FACTORS);
    for (size_t i = 0; i < *nM; i++) {
        if (s->o->asymmetric != SP_ASYM_OFF)
            cs[nc++] = (sp_cand){Ms[i], true};
        if (s->o->asymmetric != SP_ASYM_ON)
            cs[nc++] = (sp_cand){Ms[i], false};
    }
    return nc;
}
