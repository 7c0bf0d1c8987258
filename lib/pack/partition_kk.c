/* lib/pack/partition_kk.c -- Karmarkar-Karp largest differencing, plain and with equal
 * part sizes (vl_partition_kk*): the design is described at the top of partition.c. */
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "partition_impl.h"

/* ---- Karmarkar-Karp --------------------------------------------------------------- */

typedef struct kset {
    double sum;
    uint32_t head, tail; /* item list through next[] */
} kset;

/* A state stands for k subsets in cmp_kset order, the empty ones (sum 0, no items)
 * where that order puts them: after the non-empty subsets of sum >= 0, before the
 * negative ones.  Only its m non-empty subsets are stored, in that order, so a state of
 * few items costs O(items), not O(k).  A subset's "position" is its index among all k,
 * which is the part its items end in. */
typedef struct kstate {
    kset *set; /* [cap]: a slice of the seed block (cap = per), or malloc'd (cap > per) */
    uint32_t m, cap;
} kstate; /* 16 bytes: at 1M states, 8 MB fewer to fault in than with an own flag */

typedef struct kk {
    uint32_t k, per; /* parts; items a seed state holds */
    kstate *st;      /* [nstates] */
    kset *seed;      /* [nstates * per] the initial states' subsets */
    kset *add;       /* [min(n, k)] the subsets one merge brings into a state */
    kset *tmp;       /* [min(n, k)] sort_sets' scratch */
    double *spread;  /* [nstates] */
    /* states with their spread (w) and id (i), so that comparing two needs no lookup */
    witem *heap;            /* max-heap of merged states by (spread desc, id asc) */
    size_t nheap, heap_cap; /* grown by doubling: it rarely holds many */
    witem *queue;           /* [nstates] the initial states in that order; NULL: 0, 1, ... */
    uint32_t qnext, nq;     /* initial states queue[qnext .. nq) */
    uint32_t held;          /* a merged state that is the next to merge (NONE: none) */
    bool neg;               /* some weight is negative */
    uint32_t *next;         /* [n] item lists */
} kk;

/* Sum descending, then first item: a total order on non-empty subsets ("cmp_kset
 * order"). */
static bool kset_before(const kset *x, const kset *y)
{
    return x->sum > y->sum || (x->sum == y->sum && x->head < y->head);
}

/* State a goes before state b: (spread desc, id asc), a total order. */
static bool hent_before(witem a, witem b)
{
    return a.w > b.w || (a.w == b.w && a.i < b.i);
}

/* VL_ENOMEM. */
static vl_status heap_push(kk *c, witem e, vl_err *err)
{
    size_t i = c->nheap++;

    if (c->nheap > c->heap_cap) {
        size_t cap = c->heap_cap ? 2 * c->heap_cap : 256;
        witem *h = realloc(c->heap, cap * sizeof *h);
        if (h == NULL) {
            c->nheap--;
            return vl_seterr(err, VL_ENOMEM, "out of memory partitioning into %u parts", c->k);
        }
        c->heap = h;
        c->heap_cap = cap;
    }
    for (; i > 0 && hent_before(e, c->heap[(i - 1) / 2]); i = (i - 1) / 2)
        c->heap[i] = c->heap[(i - 1) / 2];
    c->heap[i] = e;
    return VL_OK;
}

/* The top leaves: its hole goes down to a leaf along the better children, and the last
 * entry, taken from the bottom, rises from there -- rarely far (one comparison a level
 * on the way down, not two). */
static uint32_t heap_pop(kk *c)
{
    uint32_t top = c->heap[0].i;
    witem v = c->heap[--c->nheap];
    size_t i = 0, n = c->nheap;

    for (size_t l = 1; l < n; l = 2 * i + 1) {
        l += l + 1 < n && hent_before(c->heap[l + 1], c->heap[l]);
        c->heap[i] = c->heap[l];
        i = l;
    }
    for (; i > 0 && hent_before(v, c->heap[(i - 1) / 2]); i = (i - 1) / 2)
        c->heap[i] = c->heap[(i - 1) / 2];
    c->heap[i] = v;
    return top;
}

/* The queue's head (qnext < nq). */
static witem qhead(const kk *c)
{
    uint32_t q = c->qnext;

    return c->queue != NULL ? c->queue[q] : (witem){c->spread[q], q};
}

/* The next state to merge: the better of the queue's head (initial states, sorted once)
 * and the heap's top (merged states only: a state absorbing lighter ones usually keeps
 * the lead, and the merged states below it are few). */
static uint32_t kk_pop(kk *c)
{
    uint32_t h = c->held;

    if (h != NONE) {
        c->held = NONE;
        return h;
    }
    if (c->qnext < c->nq && (c->nheap == 0 || hent_before(qhead(c), c->heap[0]))) {
        uint32_t q = qhead(c).i;
        c->qnext++;
        return q;
    }
    return heap_pop(c);
}

/* Merged state s goes back: held where it would be the next popped, ahead of the heap's
 * top and the queue's head (a state absorbing lighter items keeps its largest subset,
 * so its spread stays on top for k merges), else into the heap.  The same state comes
 * next either way, without sifting it up through the heap and the hole back down. */
static vl_status kk_put(kk *c, uint32_t s, vl_err *err)
{
    witem e = {c->spread[s], s};

    if ((c->nheap == 0 || hent_before(e, c->heap[0])) &&
        (c->qnext == c->nq || hent_before(e, qhead(c)))) {
        c->held = s;
        return VL_OK;
    }
    return heap_push(c, e, err);
}

/* States left to merge. */
static size_t kk_left(const kk *c)
{
    return c->nq - c->qnext + c->nheap + (c->held != NONE);
}

/* How many of the sorted subsets x[0..m) have sum >= 0: the empty ones follow them. */
static uint32_t nonneg(const kk *c, const kset *x, uint32_t m)
{
    uint32_t lo = 0, hi = m;

    if (!c->neg)
        return m;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (x[mid].sum >= 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* Position of stored subset i when nonneg of them come before gap empty ones. */
static uint32_t position(uint32_t i, uint32_t nonneg_, uint32_t gap)
{
    return i < nonneg_ ? i : i + gap;
}

/* Largest minus smallest sum over all k subsets, an empty one counting 0. */
static double state_spread(const kk *c, const kstate *s)
{
    uint32_t m = s->m, p = nonneg(c, s->set, m);
    bool full = m == c->k;

    if (m == 0)
        return 0.0;
    return ((p > 0 || full) ? s->set[0].sum : 0.0) -
           ((p < m || full) ? s->set[m - 1].sum : 0.0);
}

/* Room for need subsets in s, contents kept; the capacity doubles from MIN_CAP, up to
 * k (a state outgrows its seed slice of 1 or k subsets: no steps through 2 .. 16, each
 * a realloc -- a state of fewer than k subsets spreads its largest sum, so it nearly
 * always stays on top, absorbing items, until it holds k; at 32 parts those steps were
 * 5% of KK's instructions).  A malloc per state, not slabs of them: freed as states
 * die, malloc's pages stay for the next call, where slabs freed at the end were trimmed
 * and faulted in again (1M items: twice the page faults, slower).  VL_ENOMEM. */
#define MIN_CAP 32
static vl_status reserve(const kk *c, kstate *s, uint32_t need, vl_err *err)
{
    size_t cap = 2 * (size_t)s->cap > MIN_CAP ? 2 * (size_t)s->cap : MIN_CAP;
    kset *p;

    if (need <= s->cap)
        return VL_OK;
    cap = cap < c->k ? cap : c->k;
    cap = cap > need ? cap : need;
    if (s->cap > c->per) {
        p = realloc(s->set, cap * sizeof *p);
    } else if ((p = malloc(cap * sizeof *p)) != NULL && s->m > 0) {
        memcpy(p, s->set, s->m * sizeof *p);
    }
    if (p == NULL)
        return vl_seterr(err, VL_ENOMEM, "out of memory partitioning into %u parts", c->k);
    s->set = p;
    s->cap = (uint32_t)cap;
    return VL_OK;
}

static void release(const kk *c, kstate *s)
{
    if (s->cap > c->per) /* malloc'd by reserve() */
        free(s->set);
    *s = (kstate){0};
}

/* Sort x[0..n) in cmp_kset order (a total order: any sort gives the same result); a merge
 * usually brings in one or two subsets, up to k: insertion below 16, else a merge sort
 * through tmp (room for n) with the comparison inline, not qsort's call per pair. */
static void sort_sets(kset *x, kset *tmp, uint32_t n)
{
    uint32_t h = n / 2, i = 0, j = h, o = 0;

    if (n <= 16) {
        for (uint32_t a = 1; a < n; a++) {
            kset v = x[a];
            uint32_t b = a;
            for (; b > 0 && kset_before(&v, &x[b - 1]); b--)
                x[b] = x[b - 1];
            x[b] = v;
        }
        return;
    }
    sort_sets(x, tmp, h);
    sort_sets(x + h, tmp, n - h);
    while (i < h && j < n)
        tmp[o++] = kset_before(&x[j], &x[i]) ? x[j++] : x[i++];
    while (i < h)
        tmp[o++] = x[i++];
    memcpy(x, tmp, o * sizeof *x); /* x[j .. n) is in place already */
}

/* Merge the sorted add[0..na) into the sorted x[0..nx), which has room for both: from
 * the back, each added subset's place found by bisection. */
static void merge_sorted(kset *x, uint32_t nx, const kset *add, uint32_t na)
{
    uint32_t hi = nx;

    for (uint32_t i = na; i-- > 0;) {
        uint32_t lo = 0, h = hi;
        while (lo < h) {
            uint32_t mid = lo + (h - lo) / 2;
            if (kset_before(&x[mid], &add[i]))
                lo = mid + 1;
            else
                h = mid;
        }
        memmove(x + lo + i + 1, x + lo, (hi - lo) * sizeof *x);
        x[lo + i] = add[i];
        hi = lo;
    }
}

/* x[at] moved up (its sum grew) or is new at the end: insert it into x[0 .. at) by
 * stepping down from at, as merge_sorted places a subset (the order is total). */
static void sift_in(kset *x, uint32_t at)
{
    kset v = x[at];

    for (; at > 0 && kset_before(&v, &x[at - 1]); at--)
        x[at] = x[at - 1];
    x[at] = v;
}

/* merge() where no weight is negative and b is one subset t: it joins a's lightest
 * subset, an empty one while a has fewer than k (then it is a new subset).  O(k). */
static vl_status absorb_one(kk *c, kstate *x, kset t, vl_err *err)
{
    vl_status st;

    if (x->m == c->k) {
        kset *s = &x->set[x->m - 1];
        c->next[s->tail] = t.head;
        *s = (kset){s->sum + t.sum, s->head, t.tail};
        sift_in(x->set, x->m - 1);
        return VL_OK;
    }
    if ((st = reserve(c, x, x->m + 1, err)) != VL_OK)
        return st;
    x->set[x->m] = t;
    sift_in(x->set, x->m++);
    return VL_OK;
}

/* merge() where no weight is negative and both states hold k subsets: subset j of a
 * takes subset k-1-j of b, and the k sums are sorted afresh.  O(k log k). */
static void pair_full(kk *c, kstate *x, const kstate *y)
{
    uint32_t k = c->k;

    for (uint32_t i = 0; i < k; i++) {
        const kset *s = &x->set[k - 1 - i], *t = &y->set[i];
        c->next[s->tail] = t->head;
        c->add[i] = (kset){s->sum + t->sum, s->head, t->tail};
    }
    sort_sets(c->add, c->tmp, k);
    memcpy(x->set, c->add, k * sizeof *x->set);
}

/* State a absorbs state b: the subset at position j of a takes the one at k-1-j of b,
 * heaviest with lightest.  Only b's subsets move: each joins a subset of a (which
 * leaves a's list) or an empty one, and the results are sorted and merged back into
 * what is left of a's list.  Without negative weights, b of one subset and both of k
 * subsets (every merge of sorted lengths) take the shorter ways above.  VL_ENOMEM. */
static vl_status merge(kk *c, uint32_t a, uint32_t b, vl_err *err)
{
    kstate *x = &c->st[a], *y = &c->st[b];
    uint32_t px = nonneg(c, x->set, x->m), py = nonneg(c, y->set, y->m);
    uint32_t gx = c->k - x->m, gy = c->k - y->m, na = y->m, first = x->m, r, w;
    vl_status st = VL_OK;

    if (!c->neg && (na == 1 || (na == c->k && x->m == c->k))) {
        if (na == 1)
            st = absorb_one(c, x, y->set[0], err);
        else
            pair_full(c, x, y);
        release(c, y);
        c->spread[a] = state_spread(c, x);
        return st;
    }
    for (uint32_t i = 0; i < na; i++) {
        kset t = y->set[i];
        uint32_t j = c->k - 1 - position(i, py, gy);
        if (j < px || j >= px + gx) {
            kset *s = &x->set[j < px ? j : j - gx];
            c->next[s->tail] = t.head;
            t = (kset){s->sum + t.sum, s->head, t.tail};
            s->head = NONE; /* now in t */
            first = (uint32_t)(s - x->set) < first ? (uint32_t)(s - x->set) : first;
        }
        c->add[i] = t;
    }
    release(c, y);
    for (r = w = first; r < x->m; r++)
        if (x->set[r].head != NONE)
            x->set[w++] = x->set[r];
    x->m = w;
    if ((st = reserve(c, x, w + na, err)) != VL_OK)
        return st;
    sort_sets(c->add, c->tmp, na);
    merge_sorted(x->set, w, c->add, na);
    x->m = w + na;
    c->spread[a] = state_spread(c, x);
    return VL_OK;
}

_Static_assert(sizeof(kset) == sizeof(witem), "a seed takes its item's slot");

/* Initial states: items (weight order) `per` at a time, one per subset, each written
 * over its item (c->seed is it: no fresh pages to fault in).  Weight order is (weight
 * desc, index asc), which is cmp_kset's order of the one-item subsets.  The queue takes
 * them in merge order: as they come where their spreads do not grow (the plain
 * variant's, spread = weight), else sorted (O(n) by radix).  VL_ENOMEM. */
static vl_status kk_seed(kk *c, const witem *it, size_t nstates, size_t per, vl_err *err)
{
    bool in_order = true;
    kitem *tmp;

    for (size_t s = 0; s < nstates; s++) {
        kset *x = c->seed + s * per;
        for (size_t j = 0; j < per; j++) {
            uint32_t i = it[s * per + j].i;
            x[j] = (kset){it[s * per + j].w, i, i};
            c->next[i] = NONE;
        }
        c->st[s] = (kstate){.set = x, .m = (uint32_t)per, .cap = (uint32_t)per};
        c->spread[s] = state_spread(c, &c->st[s]);
        in_order = in_order && (s == 0 || c->spread[s - 1] >= c->spread[s]);
    }
    c->nq = (uint32_t)nstates;
    if (in_order || nstates < 2)
        return VL_OK; /* the queue is the ids in order: not written out */
    c->queue = malloc(nstates * sizeof *c->queue);
    tmp = malloc(2 * nstates * sizeof *tmp);
    if (c->queue == NULL || tmp == NULL) {
        free(tmp);
        return vl_seterr(err, VL_ENOMEM, "out of memory partitioning %zu items", nstates);
    }
    for (size_t s = 0; s < nstates; s++)
        c->queue[s] = (witem){c->spread[s], (uint32_t)s};
    vl__pt_sort_items(c->queue, tmp, nstates);
    free(tmp);
    return VL_OK;
}

/* Every item of the last state gets its subset's position. */
static void kk_parts(int *part, kk *c, uint32_t s)
{
    const kstate *x = &c->st[s];
    uint32_t p = nonneg(c, x->set, x->m), live = x->m;

    /* The lists are walked side by side, one item of each in turn (c->add holds each
     * one's next item, its part in sum): every step of a list is a cache miss, and the
     * m walks' misses overlap where one list's would wait on each other. */
    for (uint32_t j = 0; j < live; j++)
        c->add[j] = (kset){position(j, p, c->k - x->m), x->set[j].head, x->set[j].tail};
    while (live > 0)
        for (uint32_t a = 0; a < live;) {
            kset *t = &c->add[a];
            part[t->head] = (int)t->sum;
            if (t->head == t->tail) {
                *t = c->add[--live]; /* done: the last walk takes its place */
                continue;
            }
            t->head = c->next[t->head];
            a++;
        }
}

static vl_status kk_run(int *part, const double *w, const uint32_t *order, size_t n, int k,
                        size_t per, vl_err *err)
{
    witem *it = NULL;
    vl_status st;
    size_t nstates = n / per, nadd = n < (size_t)k ? n : (size_t)k;
    kk c = {.k = (uint32_t)k, .per = (uint32_t)per, .held = NONE};

    /* One part takes every item, as the merges below would end: no sort, no states
     * (one GPU packing a whole data set in one iteration). */
    if (k == 1 && (st = vl__pt_check_items(w, n, k, err)) == VL_OK) {
        for (size_t i = 0; i < n; i++)
            part[i] = 0;
        return VL_OK;
    }
    if ((st = vl__pt_sorted_items(&it, w, order, n, k, err)) != VL_OK)
        return st;
    c.st = calloc(nstates ? nstates : 1, sizeof *c.st);
    c.seed = (kset *)it; /* the seeds overwrite the items they are made of, slot for slot */
    c.add = malloc((nadd ? nadd : 1) * sizeof *c.add);
    c.tmp = malloc((nadd ? nadd : 1) * sizeof *c.tmp);
    c.spread = malloc((nstates ? nstates : 1) * sizeof *c.spread);
    c.next = malloc((n ? n : 1) * sizeof *c.next);
    if (c.st == NULL || c.seed == NULL || c.add == NULL || c.tmp == NULL || c.spread == NULL ||
        c.next == NULL) {
        st = vl_seterr(err, VL_ENOMEM, "out of memory partitioning %zu items", n);
        goto done;
    }
    c.neg = n > 0 && it[n - 1].w < 0; /* the lightest comes last */
    if ((st = kk_seed(&c, it, nstates, per, err)) != VL_OK)
        goto done;
    while (kk_left(&c) > 1) {
        uint32_t a = kk_pop(&c), b = kk_pop(&c);
        if ((st = merge(&c, a, b, err)) != VL_OK || (st = kk_put(&c, a, err)) != VL_OK)
            goto done;
    }
    if (kk_left(&c) == 1)
        kk_parts(part, &c, kk_pop(&c));
done:
    for (size_t s = 0; c.st != NULL && s < nstates; s++)
        release(&c, &c.st[s]);
    free(it);
    free(c.st);
    free(c.add);
    free(c.tmp);
    free(c.spread);
    free(c.heap);
    free(c.queue);
    free(c.next);
    return st;
}

vl_status vl_partition_kk(int *part, const double *w, size_t n, int k, vl_err *err)
{
    return kk_run(part, w, NULL, n, k, 1, err);
}

vl_status vl_partition_kk_ordered(int *part, const double *w, const uint32_t *order, size_t n,
                                  int k, vl_err *err)
{
    return kk_run(part, w, order, n, k, 1, err);
}

vl_status vl_partition_kk_equal_ordered(int *part, const double *w, const uint32_t *order,
                                        size_t n, int k, vl_err *err)
{
    if (k < 1)
        return vl_seterr(err, VL_EUSAGE, "partition: %d parts, need at least 1", k);
    if (n % (size_t)k != 0)
        return vl_seterr(err, VL_EUSAGE,
                         "partition: %zu items do not split equally into %d parts", n, k);
    return kk_run(part, w, order, n, k, (size_t)k, err);
}

vl_status vl_partition_kk_equal(int *part, const double *w, size_t n, int k, vl_err *err)
{
    return vl_partition_kk_equal_ordered(part, w, NULL, n, k, err);
}
