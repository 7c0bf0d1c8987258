/* lib/pack/pack_fit.c -- first fit, best fit and worst fit in O(n log n) and next fit in
 * O(n), over whatever order pack.c hands them (length-descending for FFD/BFD/WFD, seeded
 * shuffle for FFS/BFS, the caller's order for NF), and the residual-bucket index that
 * best fit, worst fit and SPFHP share.
 *
 * First fit: a 16-ary max tree over the free space of bins 0..B-1, where B bounds the
 *   bins any any-fit packer opens; an untouched leaf is an empty bin.  The leftmost bin
 *   with free space >= len is one root-to-leaf walk (O(log B)); so is the update.
 * Best fit: bins bucketed by free space 0..cap (pack_impl.h).  The tightest bin that
 *   fits is the successor of len in a 64-ary bitset tree, O(log64 cap); among bins with
 *   equal free space the one that reached it last wins (stack order, deterministic). */
#include "pack_impl.h"

#include <stdlib.h>
#include <string.h>

/* ---- residual-bucket index -------------------------------------------------------- */

static unsigned ctz64(uint64_t x)
{
#if defined(__GNUC__)
    return (unsigned)__builtin_ctzll(x);
#else
    unsigned n = 0;
    while (!(x & 1)) {
        x >>= 1;
        n++;
    }
    return n;
#endif
}

static unsigned top64(uint64_t x)
{
#if defined(__GNUC__)
    return 63u - (unsigned)__builtin_clzll(x);
#else
    unsigned n = 0;
    while (x >>= 1)
        n++;
    return n;
#endif
}

vl_status vl__pk_rbuck_init(vl_pk_rbuck *rb, uint32_t cap, size_t max_bins, vl_err *err)
{
    size_t total = 0, w = ((size_t)cap + 1 + 63) / 64;

    memset(rb, 0, sizeof *rb);
    for (;;) {
        rb->off[rb->levels] = total;
        rb->words[rb->levels] = w;
        total += w;
        rb->levels++;
        if (w == 1)
            break;
        w = (w + 63) / 64;
    }
    rb->bits = calloc(total, sizeof *rb->bits);
    /* head[] is read only for marked values, so it needs no initialisation: this keeps
     * a call with few items and a large capacity cheap. */
    rb->head = malloc(((size_t)cap + 1) * sizeof *rb->head);
    rb->next = malloc((max_bins ? max_bins : 1) * sizeof *rb->next);
    if (rb->bits == NULL || rb->head == NULL || rb->next == NULL) {
        vl__pk_rbuck_free(rb);
        return vl_seterr(err, VL_ENOMEM, "out of memory for a packing index");
    }
    return VL_OK;
}

void vl__pk_rbuck_free(vl_pk_rbuck *rb)
{
    free(rb->bits);
    free(rb->head);
    free(rb->next);
    memset(rb, 0, sizeof *rb);
}

static void mark(vl_pk_rbuck *rb, uint64_t i)
{
    for (int l = 0; l < rb->levels; l++, i >>= 6) {
        uint64_t *w = &rb->bits[rb->off[l] + (i >> 6)];
        int was_empty = (*w == 0);
        *w |= (uint64_t)1 << (i & 63);
        if (!was_empty)
            break;
    }
}

static void unmark(vl_pk_rbuck *rb, uint64_t i)
{
    for (int l = 0; l < rb->levels; l++, i >>= 6) {
        uint64_t *w = &rb->bits[rb->off[l] + (i >> 6)];
        *w &= ~((uint64_t)1 << (i & 63));
        if (*w != 0)
            break;
    }
}

static int marked(const vl_pk_rbuck *rb, uint32_t i)
{
    return (int)((rb->bits[i >> 6] >> (i & 63)) & 1);
}

void vl__pk_rbuck_push(vl_pk_rbuck *rb, uint32_t bin, uint32_t residual)
{
    if (marked(rb, residual)) {
        rb->next[bin] = rb->head[residual];
    } else {
        rb->next[bin] = VL_PK_NONE;
        mark(rb, residual);
    }
    rb->head[residual] = bin;
}

uint32_t vl__pk_rbuck_pop(vl_pk_rbuck *rb, uint32_t residual)
{
    uint32_t b = rb->head[residual];

    rb->head[residual] = rb->next[b];
    if (rb->next[b] == VL_PK_NONE)
        unmark(rb, residual);
    return b;
}

uint32_t vl__pk_rbuck_succ(const vl_pk_rbuck *rb, uint32_t x)
{
    uint64_t i = x;
    int l = 0;

    for (;;) {
        uint64_t w = i >> 6;
        if (w >= rb->words[l])
            return VL_PK_NONE;
        uint64_t m = rb->bits[rb->off[l] + w] & (~(uint64_t)0 << (i & 63));
        if (m != 0) {
            i = (w << 6) | ctz64(m);
            break;
        }
        if (l + 1 == rb->levels)
            return VL_PK_NONE;
        i = w + 1; /* first candidate word after w, as a bit of the level above */
        l++;
    }
    while (l-- > 0)
        i = (i << 6) | ctz64(rb->bits[rb->off[l] + i]);
    return (uint32_t)i;
}

uint32_t vl__pk_rbuck_max(const vl_pk_rbuck *rb)
{
    int l = rb->levels - 1;
    uint64_t top = rb->bits[rb->off[l]];

    if (top == 0)
        return VL_PK_NONE;
    uint64_t i = top64(top);
    while (l-- > 0)
        i = (i << 6) | top64(rb->bits[rb->off[l] + i]);
    return (uint32_t)i;
}

/* ---- first fit -------------------------------------------------------------------- */

/* A 16-ary max tree: level 0 holds each bin's free space, level l+1 the maximum of
 * each group of 16 entries of level l, up to one group at the top.  A group of 16
 * uint32 is one 64-byte cache line, so a walk touches ~log16(B) lines instead of the
 * ~log2(B) of a binary tree: that is what keeps 10M items fast once the tree no longer
 * fits in cache.  Every level is padded to whole groups with 0 (never chosen). */
#define FAN 16
#define MAXLV 9

typedef struct ftree {
    uint32_t *lv[MAXLV];
    size_t n[MAXLV]; /* entries per level, a multiple of FAN */
    int h;
} ftree;

static void ftree_free(ftree *t)
{
    for (int l = 0; l < t->h; l++)
        free(t->lv[l]);
}

static vl_status ftree_init(ftree *t, size_t bins, uint32_t cap, vl_err *err)
{
    size_t want = bins ? bins : 1;

    memset(t, 0, sizeof *t);
    for (;;) {
        size_t n = (want + FAN - 1) / FAN * FAN;
        if (t->h == MAXLV || (t->lv[t->h] = calloc(n, sizeof(uint32_t))) == NULL) {
            ftree_free(t);
            return vl_seterr(err, VL_ENOMEM, "out of memory for %zu bins", bins);
        }
        for (size_t i = 0; i < want; i++)
            t->lv[t->h][i] = cap; /* empty bins, and maxima over empty bins */
        t->n[t->h++] = n;
        if (n == FAN)
            return VL_OK;
        want = n / FAN;
    }
}

static size_t first_ge(const uint32_t *g, uint32_t x)
{
    size_t j = 0;
    while (g[j] < x)
        j++;
    return j;
}

/* Leaf pos changed: restore the maxima above it, stopping where one does not change. */
static void ftree_update(ftree *t, size_t pos)
{
    for (int l = 1; l < t->h; l++) {
        const uint32_t *g = t->lv[l - 1] + pos / FAN * FAN;
        uint32_t m = 0;
        for (size_t j = 0; j < FAN; j++)
            m = g[j] > m ? g[j] : m;
        pos /= FAN;
        if (t->lv[l][pos] == m)
            break;
        t->lv[l][pos] = m;
    }
}

/* Put len into the leftmost bin with room (the caller checked one exists). */
static uint32_t ftree_place(ftree *t, uint32_t len)
{
    size_t pos = first_ge(t->lv[t->h - 1], len);

    for (int l = t->h - 2; l >= 0; l--)
        pos = pos * FAN + first_ge(t->lv[l] + pos * FAN, len);
    t->lv[0][pos] -= len;
    ftree_update(t, pos);
    return (uint32_t)pos;
}

/* A bin that reached its item limit: no room left for anything (lengths are >= 1). */
static void ftree_close(ftree *t, uint32_t leaf)
{
    t->lv[0][leaf] = 0;
    ftree_update(t, leaf);
}

static uint32_t ftree_max(const ftree *t)
{
    const uint32_t *g = t->lv[t->h - 1];
    uint32_t m = 0;
    for (size_t j = 0; j < FAN; j++)
        m = g[j] > m ? g[j] : m;
    return m;
}

vl_status vl__pk_first_fit(vl_bins *out, const uint64_t *p, size_t n, uint32_t cap,
                           uint32_t max_items, vl_err *err)
{
    size_t bound = vl__pk_bin_bound(p, n, cap, max_items), nbins = 0;
    uint32_t *bin = malloc((n ? n : 1) * sizeof *bin);
    uint32_t *count = max_items ? calloc(bound ? bound : 1, sizeof *count) : NULL;
    ftree t;
    vl_status st;

    if (bin == NULL || (max_items && count == NULL)) {
        free(bin);
        free(count);
        return vl_seterr(err, VL_ENOMEM, "out of memory packing %zu items", n);
    }
    if ((st = ftree_init(&t, bound, cap, err)) != VL_OK) {
        free(bin);
        free(count);
        return st;
    }
    for (size_t i = 0; i < n; i++) {
        uint32_t l = VL_PK_LEN(p[i]);
        /* The bound guarantees an empty bin whenever no open bin fits. */
        if (ftree_max(&t) < l) {
            st = vl_seterr(err, VL_EINTERNAL, "first fit: bin bound %zu exceeded", bound);
            break;
        }
        uint32_t b = ftree_place(&t, l);
        bin[i] = b;
        if (b >= nbins)
            nbins = (size_t)b + 1;
        if (max_items && ++count[b] == max_items)
            ftree_close(&t, b);
    }
    if (st == VL_OK)
        st = vl__pk_assemble(out, p, bin, n, nbins, err);
    ftree_free(&t);
    free(bin);
    free(count);
    return st;
}

/* ---- best fit and worst fit over the residual-bucket index ------------------------ */

/* One pass placing each item into an open bin chosen by its space left: the tightest
 * that fits (best fit), or the roomiest when it fits (worst fit); a new bin when none
 * does.  A bin that reaches max_items leaves the index. */
vl_status vl__pk_residual_fit(vl_bins *out, const uint64_t *p, size_t n, uint32_t cap,
                              uint32_t max_items, bool roomiest, vl_err *err)
{
    size_t bound = vl__pk_bin_bound(p, n, cap, max_items), nbins = 0;
    uint32_t *bin = malloc((n ? n : 1) * sizeof *bin);
    uint32_t *count = calloc(bound ? bound : 1, sizeof *count);
    vl_pk_rbuck rb;
    vl_status st;

    if (bin == NULL || count == NULL) {
        free(bin);
        free(count);
        return vl_seterr(err, VL_ENOMEM, "out of memory packing %zu items", n);
    }
    if ((st = vl__pk_rbuck_init(&rb, cap, bound, err)) != VL_OK) {
        free(bin);
        free(count);
        return st;
    }
    for (size_t i = 0; i < n; i++) {
        uint32_t l = VL_PK_LEN(p[i]), b;
        uint32_t r = roomiest ? vl__pk_rbuck_max(&rb) : vl__pk_rbuck_succ(&rb, l);
        if (r == VL_PK_NONE || r < l) {
            if (nbins == bound) {
                st = vl_seterr(err, VL_EINTERNAL, "%s fit: bin bound %zu exceeded",
                               roomiest ? "worst" : "best", bound);
                break;
            }
            b = (uint32_t)nbins++;
            r = cap;
        } else {
            b = vl__pk_rbuck_pop(&rb, r);
        }
        if (!max_items || ++count[b] < max_items)
            vl__pk_rbuck_push(&rb, b, r - l);
        bin[i] = b;
    }
    if (st == VL_OK)
        st = vl__pk_assemble(out, p, bin, n, nbins, err);
    vl__pk_rbuck_free(&rb);
    free(bin);
    free(count);
    return st;
}

/* ---- next fit --------------------------------------------------------------------- */

/* Items in the order given: append to the open bin; open a new one when the item would
 * pass cap or the open bin holds max_items (axolotl's sample_packing_sequentially,
 * Megatron's dp_balanced first pass, LongAlign's packing). */
vl_status vl__pk_next_fit(vl_bins *out, const uint64_t *p, size_t n, uint32_t cap,
                          uint32_t max_items, vl_err *err)
{
    uint32_t *bin = malloc((n ? n : 1) * sizeof *bin), b = 0, k = 0;
    uint64_t load = 0;
    vl_status st;

    if (bin == NULL)
        return vl_seterr(err, VL_ENOMEM, "out of memory packing %zu items", n);
    for (size_t i = 0; i < n; i++) {
        uint32_t l = VL_PK_LEN(p[i]);
        if (k > 0 && (load + l > cap || (max_items && k == max_items))) {
            b++;
            k = 0;
            load = 0;
        }
        bin[i] = b;
        load += l;
        k++;
    }
    st = vl__pk_assemble(out, p, bin, n, n ? (size_t)b + 1 : 0, err);
    free(bin);
    return st;
}
