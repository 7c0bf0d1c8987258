/* lib/pack/pack_util.c -- the helpers every packer shares (pack_impl.h): radix sorts
 * into the canonical orders, the seeded shuffle, the bin-count bound, assembling a
 * vl_bins, and freeing one.  A leaf: the entry point (pack.c) and the algorithms
 * (pack_fit.c, pack_isf.c, pack_spfhp.c) call it, it calls none of them. */
#include "pack_impl.h"

#include <stdlib.h>
#include <string.h>

#include "bigmem.h"
#include "rng.h"

void vl_bins_free(vl_bins *b)
{
    if (b == NULL)
        return;
    free(b->start);
    free(b->items);
    free(b->load);
    memset(b, 0, sizeof *b);
}

/* ---- radix sorts ------------------------------------------------------------------ */

#define RADIX_MAX 12
#define SMALL_SORT 48

static unsigned bit_width(uint64_t x)
{
    unsigned b = 0;
    while (x != 0) {
        b++;
        x >>= 1;
    }
    return b;
}

static void insertion_u64(uint64_t *k, size_t n)
{
    for (size_t i = 1; i < n; i++) {
        uint64_t v = k[i];
        size_t j = i;
        for (; j > 0 && k[j - 1] > v; j--)
            k[j] = k[j - 1];
        k[j] = v;
    }
}

/* One stable counting pass on the `bits`-wide digit at bit `sh`, src -> dst.
 * Returns 0 (and moves nothing) when every key has the same digit. */
static int radix_pass(const uint64_t *src, uint64_t *dst, size_t n, unsigned sh, unsigned bits)
{
    size_t cnt[1u << RADIX_MAX], size = (size_t)1 << bits, mask = size - 1;

    memset(cnt, 0, size * sizeof *cnt);
    for (size_t i = 0; i < n; i++)
        cnt[(src[i] >> sh) & mask]++;
    if (cnt[(src[0] >> sh) & mask] == n)
        return 0;
    for (size_t d = 0, sum = 0; d < size; d++) {
        size_t c = cnt[d];
        cnt[d] = sum;
        sum += c;
    }
    for (size_t i = 0; i < n; i++)
        dst[cnt[(src[i] >> sh) & mask]++] = src[i];
    return 1;
}

/* Digit width (8..12 bits) giving the fewest passes over both fields; ties go to the
 * narrower digit, whose counts stay in L1. */
static unsigned digit_bits(unsigned lo_bits, unsigned hi_bits)
{
    unsigned best = 8, best_passes = UINT32_MAX;

    for (unsigned d = 8; d <= RADIX_MAX; d++) {
        unsigned passes = (lo_bits + d - 1) / d + (hi_bits + d - 1) / d;
        if (passes < best_passes) {
            best = d;
            best_passes = passes;
        }
    }
    return best;
}

/* LSD radix sort of k[0..n-1] on bits [0, lo_bits) and [32, 32 + hi_bits), the only
 * bits that may be set: the two 32-bit halves are sorted as one key, high half major,
 * without passes over the zero bits between them. */
static vl_status sort_u64(uint64_t *k, size_t n, unsigned lo_bits, unsigned hi_bits,
                          vl_err *err)
{
    uint64_t *tmp, *src = k, *dst;

    if (n <= SMALL_SORT) {
        insertion_u64(k, n);
        return VL_OK;
    }
    if ((tmp = vl_big_malloc(n * sizeof *tmp)) == NULL)
        return vl_seterr(err, VL_ENOMEM, "out of memory sorting %zu items", n);
    dst = tmp;
    unsigned d = digit_bits(lo_bits, hi_bits);
    for (unsigned sh = 0; sh < 32 + hi_bits; sh += d) {
        if (sh >= lo_bits && sh < 32)
            sh = 32;
        if (sh >= 32 + hi_bits)
            break;
        if (radix_pass(src, dst, n, sh, d)) {
            uint64_t *t = src;
            src = dst;
            dst = t;
        }
    }
    if (src != k)
        memcpy(k, src, n * sizeof *k);
    free(tmp);
    return VL_OK;
}

vl_status vl__pk_sort_values(uint64_t *p, size_t n, vl_err *err)
{
    uint32_t maxv = 0;
    int sorted = 1;
    vl_status st;

    for (size_t i = 0; i < n; i++) {
        if (i > 0 && VL_PK_ITEM(p[i - 1]) > VL_PK_ITEM(p[i]))
            sorted = 0;
        if (VL_PK_ITEM(p[i]) > maxv)
            maxv = VL_PK_ITEM(p[i]);
    }
    if (sorted)
        return VL_OK;
    /* Swap the halves so the index is the major key; swap back after. */
    for (size_t i = 0; i < n; i++)
        p[i] = (p[i] << 32) | (p[i] >> 32);
    st = sort_u64(p, n, 0, bit_width(maxv), err);
    for (size_t i = 0; i < n; i++)
        p[i] = (p[i] << 32) | (p[i] >> 32);
    return st;
}

vl_status vl__pk_sort_len_desc(uint64_t *p, size_t n, vl_err *err)
{
    uint32_t maxlen = 0, maxv = 0;
    vl_status st;

    for (size_t i = 0; i < n; i++) {
        if (VL_PK_LEN(p[i]) > maxlen)
            maxlen = VL_PK_LEN(p[i]);
        if (VL_PK_ITEM(p[i]) > maxv)
            maxv = VL_PK_ITEM(p[i]);
    }
    /* Ascending (maxlen - len, index) is descending length, ascending index. */
    for (size_t i = 0; i < n; i++)
        p[i] = ((uint64_t)(maxlen - VL_PK_LEN(p[i])) << 32) | VL_PK_ITEM(p[i]);
    st = sort_u64(p, n, bit_width(maxv), bit_width(maxlen), err);
    for (size_t i = 0; i < n; i++)
        p[i] = ((uint64_t)(maxlen - VL_PK_LEN(p[i])) << 32) | VL_PK_ITEM(p[i]);
    return st;
}

void vl__pk_shuffle(uint64_t *p, size_t n, uint64_t seed, uint64_t stream)
{
    vl_rng r;

    vl_rng_seed(&r, seed, stream);
    vl_rng_shuffle_u64(&r, p, n);
}

/* ---- shared helpers --------------------------------------------------------------- */

size_t vl__pk_bin_bound(const uint64_t *p, size_t n, uint32_t cap, uint32_t max_items)
{
    uint64_t sum = 0;

    for (size_t i = 0; i < n; i++)
        sum += VL_PK_LEN(p[i]);
    uint64_t b = 2 * (sum / cap) + 2; /* 2*sum/cap + 1, rounded up, plus one */
    if (max_items > 0)
        b += n / max_items; /* bins closed for their count */
    return b < n ? (size_t)b : n;
}

vl_status vl__pk_assemble(vl_bins *out, const uint64_t *p, const uint32_t *bin, size_t n,
                          size_t nbins, vl_err *err)
{
    out->n = nbins;
    out->start = calloc(nbins + 1, sizeof *out->start);
    out->items = vl_big_malloc((n ? n : 1) * sizeof *out->items);
    out->load = calloc(nbins ? nbins : 1, sizeof *out->load);
    if (out->start == NULL || out->items == NULL || out->load == NULL) {
        vl_bins_free(out);
        return vl_seterr(err, VL_ENOMEM, "out of memory for %zu bins", nbins);
    }
    /* Counting sort by bin: start[b] first serves as the write cursor of bin b, after
     * which it holds the end of b; one shift turns ends into starts. */
    for (size_t i = 0; i < n; i++)
        out->start[bin[i] + 1]++;
    for (size_t b = 0; b < nbins; b++)
        out->start[b + 1] += out->start[b];
    for (size_t i = 0; i < n; i++) {
        out->items[out->start[bin[i]]++] = VL_PK_ITEM(p[i]);
        out->load[bin[i]] += VL_PK_LEN(p[i]);
    }
    memmove(out->start + 1, out->start, nbins * sizeof *out->start);
    out->start[0] = 0;
    return VL_OK;
}
