/* lib/pack/partition.c -- balanced k-way number partitioning: the items in weight order
 * (shared with partition_kk.c) and LPT (greedy, heaviest item onto the lightest part).
 * Karmarkar-Karp largest differencing, plain and with equal part sizes (veRL's
 * seqlen_balancing `equal_size` variant), is in partition_kk.c; its design below.
 *
 * KK keeps a max-heap of partial solutions ("states"), each k subsets sorted by sum
 * descending; it repeatedly merges the two states of largest spread (max - min sum),
 * pairing the heaviest subset of one with the lightest of the other, until one state is
 * left.  The plain variant's initial states are the n items alone; the equal variant
 * starts from n/k states of k consecutive items (weight order), one per subset, so
 * every subset keeps n/k items.  A state stores only its non-empty subsets and a merge
 * re-sorts only the absorbed state's m subsets, O(m log k) plus moving the others'
 * array slots: O(n log n) for most inputs, O(n min(n, k)) slot moves at worst, and
 * O(n + k) memory.  (Storing all k subsets of every state cost O(n k log k) time and
 * O(n k) memory: 60 ms for 2,700 items into 256 parts.)  The initial states wait in a
 * queue sorted once (O(n) by radix), only merged states in a heap; without negative
 * weights a merge absorbing one subset is O(k) and one of two full states O(k log k)
 * (merge()): 3.0e9 -> 2.1e9 instructions for KK of 1M Mooncake lengths into 8 parts,
 * three weightings, plain and equal.  Ties anywhere break on the lower index, so
 * results are deterministic (any order of equal work gives the same parts: the orders
 * are total). */
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "partition_impl.h"

/* Radix key: ascending keys are heaviest first, -0 and +0 alike. */
static uint64_t weight_key(double w)
{
    uint64_t u;

    if (w == 0)
        w = 0.0;
    memcpy(&u, &w, sizeof u);
    u = (u >> 63) ? ~u : u | (UINT64_C(1) << 63); /* now ascending in w */
    return ~u;
}

/* An LSD radix sort of src[0..n) (in index order: stable, so equal keys keep it),
 * skipping the bytes every key shares (integer lengths vary in two or three of the
 * eight); dst has room for n.  Returns the array holding the result. */
static kitem *radix_keys(kitem *src, kitem *dst, size_t n)
{
    size_t cnt[8][256] = {{0}};

    for (size_t i = 0; i < n; i++)
        for (int b = 0; b < 8; b++)
            cnt[b][(src[i].key >> (8 * b)) & 0xff]++;
    for (int b = 0; b < 8; b++) {
        size_t pos = 0;
        if (cnt[b][(src[0].key >> (8 * b)) & 0xff] == n)
            continue; /* one value everywhere: the pass would change nothing */
        for (int v = 0; v < 256; v++) {
            size_t c = cnt[b][v];
            cnt[b][v] = pos;
            pos += c;
        }
        for (size_t i = 0; i < n; i++)
            dst[cnt[b][(src[i].key >> (8 * b)) & 0xff]++] = src[i];
        kitem *t = src;
        src = dst;
        dst = t;
    }
    return src;
}

/* Below this many items a merge sort on the keys beats the radix sort, whose counts
 * (8 x 256 a pass, cleared and summed) outweigh the items (veRL's split of a rank's
 * ~100 samples into micro-batches: one KK call per rank per iteration). */
#define RADIX_FROM 256

/* Sort src[0..n) by key ascending, ties by item index (the radix sort's stable order
 * of index-ordered input, written out), through dst (room for n). */
static void merge_keys(kitem *src, kitem *dst, size_t n)
{
    size_t h = n / 2, i = 0, j = h, o = 0;

    if (n < 2)
        return;
    merge_keys(src, dst, h);
    merge_keys(src + h, dst, n - h);
    while (i < h && j < n) {
        bool right =
            src[j].key < src[i].key || (src[j].key == src[i].key && src[j].it.i < src[i].it.i);
        dst[o++] = right ? src[j++] : src[i++];
    }
    while (i < h)
        dst[o++] = src[i++];
    memcpy(src, dst, o * sizeof *src); /* src[j .. n) is in place already */
}

/* Heaviest first, then lower index (a total order), the key of each computed once.
 * tmp has room for 2n kitems. */
void vl__pt_sort_items(witem *it, kitem *tmp, size_t n)
{
    kitem *src = tmp;

    for (size_t i = 0; i < n; i++)
        src[i] = (kitem){weight_key(it[i].w), it[i]};
    if (n < RADIX_FROM)
        merge_keys(src, tmp + n, n);
    else
        src = radix_keys(src, tmp + n, n);
    for (size_t i = 0; i < n; i++)
        it[i] = src[i].it;
}

/* The arguments every partitioner refuses: VL_EUSAGE. */
vl_status vl__pt_check_items(const double *w, size_t n, int k, vl_err *err)
{
    if (k < 1)
        return vl_seterr(err, VL_EUSAGE, "partition: %d parts, need at least 1", k);
    if (n >= NONE)
        return vl_seterr(err, VL_EUSAGE, "partition: %zu items, too many", n);
    for (size_t i = 0; i < n; i++)
        if (!isfinite(w[i]))
            return vl_seterr(err, VL_EUSAGE, "partition: weight %zu is not finite, got %g", i,
                             w[i]);
    return VL_OK;
}

/* Is order[0..n) the items in weight order (weight desc, index asc)?  Each consecutive
 * pair strictly in that order, every entry below n: then it lists every item once. */
static bool in_weight_order(const double *w, const uint32_t *order, size_t n)
{
    for (size_t o = 0; o < n; o++) {
        uint32_t a = order[o], b = o + 1 < n ? order[o + 1] : 0;
        if (a >= n || (o + 1 < n && (b >= n || !(w[a] > w[b] || (w[a] == w[b] && a < b)))))
            return false;
    }
    return true;
}

/* The items in weight order: from order where it is that order (NULL: none given),
 * else sorted. */
vl_status vl__pt_sorted_items(witem **out, const double *w, const uint32_t *order, size_t n,
                              int k, vl_err *err)
{
    kitem *tmp;
    vl_status st = vl__pt_check_items(w, n, k, err);

    if (st != VL_OK)
        return st;
    *out = malloc((n ? n : 1) * sizeof **out);
    if (*out != NULL && order != NULL && in_weight_order(w, order, n)) {
        for (size_t o = 0; o < n; o++)
            (*out)[o] = (witem){w[order[o]], order[o]};
        return VL_OK;
    }
    tmp = malloc((n ? 2 * n : 1) * sizeof *tmp);
    if (*out == NULL || tmp == NULL) {
        free(*out);
        free(tmp);
        *out = NULL;
        return vl_seterr(err, VL_ENOMEM, "out of memory partitioning %zu items", n);
    }
    for (size_t i = 0; i < n; i++)
        (*out)[i] = (witem){w[i], (uint32_t)i};
    if (n > 1)
        vl__pt_sort_items(*out, tmp, n);
    free(tmp);
    return VL_OK;
}

/* ---- LPT -------------------------------------------------------------------------- */

/* A part in LPT's min-heap, ordered by (load, part index): a total order, so the part
 * on top is always the one the greedy rule names. */
typedef struct lpart {
    double load;
    int p;
} lpart;

static bool lpart_less(const lpart *a, const lpart *b)
{
    /* bitwise, not short-circuit: no branch to mispredict in the sift below */
    return (a->load < b->load) | ((a->load == b->load) & (a->p < b->p));
}

/* h[0] grew: move it down to its place (children rise into the hole). */
static void lpart_sift_down(lpart *h, size_t k)
{
    lpart v = h[0];
    size_t pos = 0;

    for (;;) {
        size_t c = 2 * pos + 1;
        if (c >= k)
            break;
        if (c + 1 < k)
            c += lpart_less(&h[c + 1], &h[c]);
        if (!lpart_less(&h[c], &v))
            break;
        h[pos] = h[c];
        pos = c;
    }
    h[pos] = v;
}

vl_status vl_partition_lpt(int *part, const double *w, size_t n, int k, vl_err *err)
{
    witem *it = NULL;
    vl_status st = vl__pt_sorted_items(&it, w, NULL, n, k, err);
    lpart *heap;

    if (st != VL_OK)
        return st;
    if ((heap = malloc((size_t)k * sizeof *heap)) == NULL) {
        free(it);
        return vl_seterr(err, VL_ENOMEM, "out of memory partitioning into %d parts", k);
    }
    for (int p = 0; p < k; p++)
        heap[p] = (lpart){0.0, p}; /* all loads 0: index order is already a heap */
    for (size_t j = 0; j < n; j++) {
        part[it[j].i] = heap[0].p;
        heap[0].load += it[j].w;
        lpart_sift_down(heap, (size_t)k);
    }
    free(it);
    free(heap);
    return VL_OK;
}
