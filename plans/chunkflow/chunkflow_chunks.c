/* plans/chunkflow/chunkflow_chunks.c -- ChunkFlow's chunk construction (Algorithm 1) and the
 * assignment of chunk groups to data-parallel ranks by modelled cost. */
#include <stdlib.h>
#include <string.h>

#include "chunkflow_impl.h"
#include "sort.h"

void vl__cf_work_free(vl_cf_work *w)
{
    if (w == NULL)
        return;
    free(w->segs);
    free(w->chunks);
    free(w->groups);
    free(w->shorts);
    free(w->slen);
    free(w->w);
    free(w->part);
    free(w->order);
    free(w->load);
    free(w->ops);
    free(w->pieces);
    free(w->keys);
    free(w->heap);
    memset(w, 0, sizeof *w);
}

/* ---- Algorithm 1 ---------------------------------------------------------------- */

static vl_status reserve_batch(vl_cf_work *w, const uint32_t *samples, size_t n,
                               const uint32_t *len, uint32_t chunk, vl_err *err)
{
    size_t nseg = 0;
    vl_status st;

    for (size_t i = 0; i < n; i++)
        nseg += len[samples[i]] > chunk ? (len[samples[i]] - 1) / chunk + 1 : 1;
    /* a chunk holds at least one segment and a group at least one chunk */
    if ((st = vl_grow(&w->segs, &w->segs_cap, nseg, sizeof *w->segs, err)) ||
        (st = vl_grow(&w->chunks, &w->chunks_cap, nseg, sizeof *w->chunks, err)) ||
        (st = vl_grow(&w->groups, &w->groups_cap, nseg, sizeof *w->groups, err)) ||
        (st = vl_grow(&w->shorts, &w->shorts_cap, n, sizeof *w->shorts, err)) ||
        (st = vl_grow(&w->slen, &w->slen_cap, 2 * n, sizeof *w->slen, err)) ||
        (st = vl_grow(&w->w, &w->w_cap, n, sizeof *w->w, err)) ||
        (st = vl_grow(&w->part, &w->part_cap, n, sizeof *w->part, err)) ||
        (st = vl_grow(&w->order, &w->order_cap, nseg, sizeof *w->order, err)) ||
        (st = vl_grow(&w->load, &w->load_cap, n + 1, sizeof *w->load, err)) ||
        (st = vl_grow(&w->keys, &w->keys_cap, n, sizeof *w->keys, err)) ||
        (st = vl_grow(&w->heap, &w->heap_cap, n, sizeof *w->heap, err)))
        return st;
    w->nsegs = w->nchunks = w->ngroups = 0;
    return VL_OK;
}

static void add_chunk(vl_cf_work *w, uint64_t tokens)
{
    w->chunks[w->nchunks++] =
        (vl_cf_chunk){.seg0 = (uint32_t)w->nsegs, .nseg = 0, .tokens = tokens};
}

static void add_seg(vl_cf_work *w, uint32_t sample, uint32_t off, uint32_t len)
{
    w->segs[w->nsegs++] = (vl_seg){.sample = sample, .off = off, .len = len};
    w->chunks[w->nchunks - 1].nseg++;
}

/* A long sample: consecutive chunk-sized slices, the shorter tail kept on its own (it
 * is not topped up with short samples: Figure 4 keeps it separate, and a tail shared
 * with other samples would tie their schedule to this sample's). */
static void split_long(vl_cf_work *w, uint32_t sample, uint32_t len, uint32_t chunk)
{
    vl_cf_group *g = &w->groups[w->ngroups++];

    *g = (vl_cf_group){.chunk0 = (uint32_t)w->nchunks,
                       .nchunk = 0,
                       .key = sample,
                       .dependent = true,
                       .rank = 0,
                       .cost = 0.0};
    for (uint32_t off = 0; off < len; off += chunk) {
        uint32_t l = len - off < chunk ? len - off : chunk;
        add_chunk(w, l);
        add_seg(w, sample, off, l);
        g->nchunk++;
    }
}

/* ---- the fewest balanced bins ------------------------------------------------------- */

/* The short samples' items sorted once, heaviest first (ties: lower position, which is
 * the lower sample index), so every bin-count trial is a single O(n log b) pass. */
static void sort_desc(vl_cf_work *w, size_t n)
{
    uint64_t *key = w->keys;

    for (size_t i = 0; i < n; i++)
        key[i] = (uint64_t)(UINT32_MAX - w->slen[i]) << 32 | (uint32_t)i;
    vl_sort_u64(key, n);
}

/* Bin heap entry order: lighter first, then lower bin index (a total order). */
static bool bin_less(uint64_t la, uint32_t a, uint64_t lb, uint32_t b)
{
    return la != lb ? la < lb : a < b;
}

static void heap_down(uint32_t *h, const uint64_t *load, size_t nb, size_t i)
{
    for (;;) {
        size_t l = 2 * i + 1, m = i;
        if (l < nb && bin_less(load[h[l]], h[l], load[h[m]], h[m]))
            m = l;
        if (l + 1 < nb && bin_less(load[h[l + 1]], h[l + 1], load[h[m]], h[m]))
            m = l + 1;
        if (m == i)
            return;
        uint32_t t = h[i];
        h[i] = h[m];
        h[m] = t;
        i = m;
    }
}

/* LPT into exactly nb bins: each item, heaviest first, onto the lightest bin.  False as
 * soon as one overflows chunk (part[] is then partial).  O(n log nb). */
static bool lpt_fits(vl_cf_work *w, size_t n, size_t nb, uint32_t chunk)
{
    uint32_t *h = w->heap;
    uint64_t *load = w->load;

    for (size_t b = 0; b < nb; b++) {
        h[b] = (uint32_t)b;
        load[b] = 0;
    }
    for (size_t j = 0; j < n; j++) {
        uint32_t i = (uint32_t)w->keys[j], b = h[0];
        if (load[b] + w->slen[i] > chunk)
            return false;
        load[b] += w->slen[i];
        w->part[i] = (int)b;
        heap_down(h, load, nb, 0);
    }
    return true;
}

/* First-fit decreasing: its bins into part[], its count into *nffd.  The items are
 * positions in shorts[] (slen[n..2n) holds 0..n-1), in the samples' order, so FFD's
 * ties break as they would on the samples. */
static vl_status ffd(vl_cf_work *w, size_t n, uint32_t chunk, size_t *nffd, vl_err *err)
{
    vl_pack_opts po = {.algo = VL_PACK_FFD, .cap = chunk};
    vl_bins bins = {0};
    vl_status st = vl_pack(&bins, w->slen + n, n, w->slen, &po, err);

    if (st != VL_OK)
        return st;
    *nffd = bins.n;
    for (size_t b = 0; b < bins.n; b++)
        for (size_t j = bins.start[b]; j < bins.start[b + 1]; j++)
            w->part[bins.items[j]] = (int)b;
    vl_bins_free(&bins);
    return VL_OK;
}

/* The fewest balanced bins of capacity chunk, at least `least` and a multiple of `step`
 * (the ranks, when no sample is split: every rank then gets as many chunks).  LPT at
 * the lower bound usually fits; otherwise FFD's count bounds a bisection over LPT
 * counts (LPT fits more easily with more bins), and FFD's own bins are taken when LPT
 * needs more.  *nb receives the count, part[] the bins.  O(n log n) for the sort and
 * FFD, plus O(n log b) per trial, O(log n) trials. */
static vl_status partition_shorts(vl_cf_work *w, size_t n, const uint32_t *len, uint32_t chunk,
                                  size_t least, size_t step, size_t *nb, vl_err *err)
{
    uint64_t sum = 0;
    size_t nffd = 0, lo, hi, found = 0;
    vl_status st;

    for (size_t i = 0; i < n; i++) {
        w->slen[i] = len[w->shorts[i]];
        w->slen[n + i] = (uint32_t)i;
        sum += w->slen[i];
    }
    lo = (size_t)((sum + chunk - 1) / chunk);
    lo = lo > least ? lo : least;
    lo = (lo + step - 1) / step * step;
    lo = lo < n ? lo : n; /* never more bins than samples */
    lo = lo > 0 ? lo : 1;
    sort_desc(w, n);
    if (lpt_fits(w, n, lo, chunk)) {
        *nb = lo;
        return VL_OK;
    }
    if ((st = ffd(w, n, chunk, &nffd, err)) != VL_OK)
        return st;
    /* Bisection over multiples of step in (lo, hi]: lo fails; LPT always fits n bins
     * (no item exceeds chunk).  Up to FFD's count when that is not below the floor. */
    hi = nffd >= lo ? nffd : n;
    for (size_t a = lo / step, b = (hi + step - 1) / step; b > a + 1;) {
        size_t mid = a + (b - a) / 2, cnt = mid * step < n ? mid * step : n;
        if (lpt_fits(w, n, cnt, chunk)) {
            b = mid;
            found = cnt;
        } else {
            a = mid;
        }
    }
    if (found == 0 && nffd < lo)
        found = n;
    if (found == 0 || (nffd >= lo && found >= nffd)) /* FFD's bins are no more */
        return ffd(w, n, chunk, nb, err);
    hi = found;
    *nb = hi;
    return lpt_fits(w, n, hi, chunk)
               ? VL_OK
               : vl_seterr(err, VL_EINTERNAL, "chunkflow: LPT into %zu bins changed", hi);
}

/* One standalone chunk per non-empty bin, its samples in index order (shorts[] is
 * sorted, and a counting pass keeps that order within each bin). */
static void emit_bins(vl_cf_work *w, size_t n, const uint32_t *len, size_t nb)
{
    uint32_t *pos = w->order; /* free until vl__cf_assign */

    memset(w->load, 0, (nb + 1) * sizeof *w->load);
    for (size_t i = 0; i < n; i++)
        w->load[w->part[i] + 1]++;
    for (size_t b = 0; b < nb; b++)
        w->load[b + 1] += w->load[b];
    for (size_t i = 0; i < n; i++)
        pos[w->load[w->part[i]]++] = (uint32_t)i;
    for (size_t i = 0, b = 0; i < n; b++) {
        vl_cf_group *g = &w->groups[w->ngroups++];
        *g = (vl_cf_group){.chunk0 = (uint32_t)w->nchunks,
                           .nchunk = 1,
                           .key = w->shorts[pos[i]],
                           .dependent = false};
        add_chunk(w, 0);
        for (; i < n && (size_t)w->part[pos[i]] == b; i++) {
            uint32_t s = w->shorts[pos[i]];
            add_seg(w, s, 0, len[s]);
            w->chunks[w->nchunks - 1].tokens += len[s];
        }
        if (w->chunks[w->nchunks - 1].nseg == 0) { /* an empty bin: drop it */
            w->nchunks--;
            w->ngroups--;
        }
    }
}

vl_status vl__cf_build(vl_cf_work *w, const uint32_t *samples, size_t n, const uint32_t *len,
                       uint32_t chunk, int ranks, vl_err *err)
{
    size_t nshort = 0, nb = 0;
    vl_status st;

    if (chunk == 0)
        return vl_seterr(err, VL_EUSAGE, "chunkflow: chunk size 0");
    if ((st = reserve_batch(w, samples, n, len, chunk, err)) != VL_OK)
        return st;
    for (size_t i = 0; i < n; i++) {
        uint32_t s = samples[i];
        if (len[s] > chunk) {
            split_long(w, s, len[s], chunk);
            w->stat_samples_split++;
        } else if (len[s] > 0) {
            w->shorts[nshort++] = s;
        }
    }
    if (nshort == 0)
        return VL_OK;
    vl_sort_u32_radix(w->shorts, w->slen, nshort); /* slen is free until partition_shorts */
    /* Keep every rank busy: at least one group per rank, and with no split sample as
     * many standalone chunks on every rank (a multiple of the ranks). */
    size_t ndep = w->ngroups, step = ndep == 0 && ranks > 1 ? (size_t)ranks : 1;
    size_t least = (size_t)ranks > ndep ? (size_t)ranks - ndep : 1;
    if ((st = partition_shorts(w, nshort, len, chunk, least, step, &nb, err)) != VL_OK)
        return st;
    emit_bins(w, nshort, len, nb);
    return VL_OK;
}

/* ---- ranks ---------------------------------------------------------------------- */

/* Seconds of one group on one pipeline stage: every chunk's F and B, plus one more F for
 * each chunk Algorithm 2 recomputes (all but the last k of a dependent group).  The
 * stage is a representative one (not the last, whose LM head every rank pays alike). */
static double group_cost(const vl_cf_work *w, const vl_cf_group *g, const vl_cf_setting *s,
                         const vl_cost *c)
{
    double t = 0.0;

    for (uint32_t j = 0; j < g->nchunk; j++) {
        const vl_cf_chunk *ch = &w->chunks[g->chunk0 + j];
        vl_mb_time mt =
            vl_cost_mb_time(c, w->segs + ch->seg0, ch->nseg, &s->par, s->stage_layers, 0);
        t += mt.fwd + mt.bwd;
        if (g->dependent && j + s->k < g->nchunk)
            t += mt.fwd;
    }
    return t;
}

typedef struct gkey {
    int rank, cls;
    uint32_t key, g;
} gkey;

/* Rank, then standalone chunks before dependent groups, then smallest sample index
 * (unique per group, so this is a total order).  Standalone first: the 1F1B warm-up
 * then fills with short F/B pairs instead of waiting on a chain of dependent forwards
 * (figure 6 case: makespan 44 instead of 46 units; ~1-3 % on chunkflow-eval). */
static int cmp_gkey(const void *a, const void *b)
{
    const gkey *x = a, *y = b;

    if (x->rank != y->rank)
        return x->rank < y->rank ? -1 : 1;
    if (x->cls != y->cls)
        return x->cls < y->cls ? -1 : 1;
    return (x->key > y->key) - (x->key < y->key);
}

static vl_status order_groups(vl_cf_work *w, vl_err *err)
{
    gkey *k = malloc((w->ngroups ? w->ngroups : 1) * sizeof *k);

    if (k == NULL)
        return vl_seterr(err, VL_ENOMEM, "chunkflow: out of memory ordering %zu groups",
                         w->ngroups);
    for (size_t i = 0; i < w->ngroups; i++)
        k[i] = (gkey){w->groups[i].rank, w->groups[i].dependent ? 1 : 0, w->groups[i].key,
                      (uint32_t)i};
    qsort(k, w->ngroups, sizeof *k, cmp_gkey);
    for (size_t i = 0; i < w->ngroups; i++)
        w->order[i] = k[i].g;
    free(k);
    return VL_OK;
}

vl_status vl__cf_assign(vl_cf_work *w, const vl_cf_setting *s, const vl_cost *c, vl_err *err)
{
    vl_status st;

    if ((st = vl_grow(&w->w, &w->w_cap, w->ngroups, sizeof *w->w, err)) ||
        (st = vl_grow(&w->part, &w->part_cap, w->ngroups, sizeof *w->part, err)))
        return st;
    for (size_t i = 0; i < w->ngroups; i++) {
        w->groups[i].cost = group_cost(w, &w->groups[i], s, c);
        w->w[i] = w->groups[i].cost;
        w->part[i] = 0;
    }
    /* Balance modelled time, not tokens: a dependent chunk late in a long sample costs
     * far more than a packed chunk of the same size (attention over its prefix). */
    if (s->dp > 1 && (st = vl_partition_kk(w->part, w->w, w->ngroups, s->dp, err)) != VL_OK)
        return st;
    for (size_t i = 0; i < w->ngroups; i++)
        w->groups[i].rank = w->part[i];
    return order_groups(w, err);
}
