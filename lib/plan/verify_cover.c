/* lib/plan/verify_cover.c -- I1, coverage (verify.h): every token of every sample exactly
 * once per epoch, or listed as dropped.  One epoch at a time with a bitset for whole
 * samples and sorted intervals only for slices and dropped ranges: O(n/8 + slices)
 * memory.  A shared pack counts once, on its primary copy. */
#include "verify_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sort.h"

typedef struct cover {
    const vl_plan *p;
    vl_verify_report *rep;
    uint32_t epoch;
    uint64_t *whole;      /* bit s: one segment or drop covers all of sample s */
    uint64_t *sliced;     /* bit s: sample s has entries in parts[] */
    vl_seg *parts;        /* slices and partial drops of this epoch */
    size_t nparts, cap;
} cover;

static bool bit(const uint64_t *set, uint32_t s)
{
    return set[s / 64] >> (s % 64) & 1;
}

static void range_msg(cover *c, uint32_t s, uint64_t a, uint64_t b, const char *what)
{
    char name[160];

    if (c->rep->nmsgs >= VL_VERIFY_MAX_MSGS) { /* counted, not formatted */
        c->rep->violations++;
        c->rep->by_inv[0]++;
        return;
    }
    vl__sample_name(c->p, s, name, sizeof name);
    vl__violation(c->rep, 1, "%s: tokens [%llu, %llu) %s in epoch %u", name,
              (unsigned long long)a, (unsigned long long)b, what, c->epoch);
}

static vl_status add_range(cover *c, uint32_t s, uint32_t off, uint32_t len, vl_err *err)
{
    const vl_manifest *m = c->p->m;

    if (s == VL_SAMPLE_UNKNOWN || len == 0)
        return VL_OK; /* reported by the reader (unknown id) or by I2 (empty segment) */
    if (s >= m->n) {
        vl__violation(c->rep, 1, "segment of sample index %u, the manifest has %zu samples, in "
                             "epoch %u", s, m->n, c->epoch);
        return VL_OK;
    }
    if (off == 0 && len == m->len[s] && !bit(c->whole, s)) {
        c->whole[s / 64] |= 1ull << (s % 64);
        return VL_OK;
    }
    if (c->nparts == c->cap) {
        size_t nc = c->cap ? c->cap * 2 : 1024;
        vl_seg *np = nc > c->cap ? realloc(c->parts, nc * sizeof *np) : NULL;
        if (!np)
            return vl_seterr(err, VL_ENOMEM, "out of memory verifying the plan");
        c->parts = np;
        c->cap = nc;
    }
    c->parts[c->nparts++] = (vl_seg){s, off, len};
    c->sliced[s / 64] |= 1ull << (s % 64);
    return VL_OK;
}

/* Total order, so the messages do not depend on qsort's algorithm. */
static int cmp_part(const void *x, const void *y)
{
    const vl_seg *a = x, *b = y;

    if (a->sample != b->sample)
        return a->sample < b->sample ? -1 : 1;
    if (a->off != b->off)
        return a->off < b->off ? -1 : 1;
    return (a->len > b->len) - (a->len < b->len);
}

/* The k entries of one sample, sorted by offset, must tile [0, L) with what the whole
 * bit already covers. */
static void walk_sample(cover *c, const vl_seg *ps, size_t k)
{
    uint32_t s = ps[0].sample;
    uint64_t L = c->p->m->len[s];
    uint64_t end = bit(c->whole, s) ? L : 0;

    for (size_t i = 0; i < k; i++) {
        uint64_t a = ps[i].off, b = a + ps[i].len;
        if (a > end && end < L)
            range_msg(c, s, end, a < L ? a : L, "missing");
        if (a < end)
            range_msg(c, s, a, b < end ? b : end, "planned more than once");
        if (b > L)
            range_msg(c, s, a > L ? a : L, b, "beyond its length");
        if (b > end)
            end = b;
    }
    if (end < L)
        range_msg(c, s, end, L, "missing");
}

static void close_epoch(cover *c)
{
    size_t n = c->p->m->n;

    if (c->nparts > 1)
        qsort(c->parts, c->nparts, sizeof *c->parts, cmp_part);
    for (size_t i = 0, j; i < c->nparts; i = j) {
        for (j = i + 1; j < c->nparts && c->parts[j].sample == c->parts[i].sample; j++)
            ;
        walk_sample(c, c->parts + i, j - i);
    }
    for (size_t w = 0; w < (n + 63) / 64; w++) {
        uint64_t miss = ~(c->whole[w] | c->sliced[w]);
        if (w == n / 64)
            miss &= (1ull << (n % 64)) - 1;
        for (; miss; miss &= miss - 1) {
            uint32_t s = (uint32_t)(w * 64 + (size_t)__builtin_ctzll(miss));
            range_msg(c, s, 0, c->p->m->len[s], "missing");
        }
    }
}

/* The primary copies of the iteration's forward packs (a shared pack counts once). */
static vl_status add_iter(cover *c, const vl_iter *in, vl_err *err)
{
    const vl_plan *p = c->p;
    vl_status st;

    for (uint64_t r = in->rank0; r < in->rank0 + in->nranks; r++)
        for (uint64_t b = p->ranks[r].mb0; b < p->ranks[r].mb0 + p->ranks[r].nmb; b++) {
            const vl_mb *mb = &p->mbs[b];
            const vl_seg *sg = vl_plan_mb_segs(p, mb);
            if (mb->share && !vl_plan_mb_primary(p, &p->ranks[r], mb))
                continue;
            for (uint32_t k = 0; k < mb->nseg; k++)
                if ((st = add_range(c, sg[k].sample, sg[k].off, sg[k].len, err)) != VL_OK)
                    return st;
        }
    return VL_OK;
}

/* Cover epoch e with iterations order[0..k-1] (all of that epoch) and the drops. */
static vl_status cover_epoch(cover *c, uint32_t e, const uint32_t *order, size_t k,
                             vl_err *err)
{
    size_t words = (c->p->m->n + 63) / 64;
    vl_status st;

    c->epoch = e;
    c->nparts = 0;
    memset(c->whole, 0, words * sizeof *c->whole);
    memset(c->sliced, 0, words * sizeof *c->sliced);
    for (size_t i = 0; i < c->p->ndrops; i++) {
        const vl_drop *d = &c->p->drops[i];
        if ((st = add_range(c, d->sample, d->off, d->len, err)) != VL_OK)
            return st;
    }
    for (size_t i = 0; i < k; i++)
        if ((st = add_iter(c, &c->p->iters[order[i]], err)) != VL_OK)
            return st;
    close_epoch(c);
    return VL_OK;
}

/* Epochs without any iteration all miss the same tokens: cover the first, count the rest. */
static vl_status cover_empty_epochs(cover *c, uint32_t first, uint64_t nempty, vl_err *err)
{
    size_t before = c->rep->violations;
    vl_status st = cover_epoch(c, first, NULL, 0, err);
    size_t found = c->rep->violations - before;

    if (st != VL_OK || found == 0 || nempty < 2)
        return st;
    c->rep->violations += found * (size_t)(nempty - 1);
    c->rep->by_inv[0] += found * (size_t)(nempty - 1);
    vl__note(c->rep, "I1: %llu more epochs without iterations miss the same tokens",
             (unsigned long long)(nempty - 1));
    return VL_OK;
}

static vl_status cover_all(cover *c, const uint64_t *keys, vl_err *err)
{
    const vl_plan *p = c->p;
    uint32_t *order = malloc((p->niters ? p->niters : 1) * sizeof *order);
    uint64_t nempty = p->epochs, first_empty = UINT64_MAX, next = 0;
    vl_status st = VL_OK;

    if (!order)
        return vl_seterr(err, VL_ENOMEM, "out of memory verifying the plan");
    for (size_t i = 0; i < p->niters; i++)
        order[i] = (uint32_t)keys[i];
    for (size_t i = 0, j; i < p->niters && st == VL_OK; i = j) {
        uint32_t e = (uint32_t)(keys[i] >> 32);
        for (j = i + 1; j < p->niters && keys[j] >> 32 == e; j++)
            ;
        if (e >= p->epochs)
            break; /* reported as I5 */
        if (e > next && first_empty == UINT64_MAX)
            first_empty = next;
        next = (uint64_t)e + 1;
        nempty--;
        st = cover_epoch(c, e, order + i, j - i, err);
    }
    if (first_empty == UINT64_MAX && next < p->epochs)
        first_empty = next;
    if (st == VL_OK && nempty > 0)
        st = cover_empty_epochs(c, (uint32_t)first_empty, nempty, err);
    free(order);
    return st;
}

vl_status vl__check_coverage(const vl_vctx *v, vl_err *err)
{
    const vl_plan *p = v->p;
    cover c = {.p = p, .rep = v->rep};
    size_t words = (p->m->n + 63) / 64 + 1;
    uint64_t *keys = malloc((p->niters ? p->niters : 1) * sizeof *keys);
    vl_status st = VL_OK;

    c.whole = calloc(words, sizeof *c.whole);
    c.sliced = calloc(words, sizeof *c.sliced);
    if (!keys || !c.whole || !c.sliced) {
        st = vl_seterr(err, VL_ENOMEM, "out of memory verifying the plan");
        goto done;
    }
    /* (epoch, index) in one integer: sorting groups each epoch's iterations in order */
    for (size_t i = 0; i < p->niters; i++)
        keys[i] = (uint64_t)p->iters[i].epoch << 32 | (uint32_t)i;
    vl_sort_u64(keys, p->niters);
    st = cover_all(&c, keys, err);
done:
    free(keys);
    free(c.whole);
    free(c.sliced);
    free(c.parts);
    return st;
}

