/* lib/check/verify_cover.c -- I1, coverage (verify.h): every token of every sample exactly
 * once per epoch, or listed as dropped.  Iterations arrive one at a time (a plan read an
 * iteration at a time keeps none of them), so each epoch keeps what it has seen: a bitset
 * for whole samples and sorted intervals only for slices and partial drops -- O(n/8 +
 * slices) memory per epoch -- and every epoch is closed at the end, when the dropped
 * ranges (the footer's) are known.  A shared pack counts once, on its primary copy.
 * When an epoch closes, the slices of each sample are also held to causal order across
 * ranks and iterations, and to where the strategy slices (I5). */
#include "verify_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grow.h"
#include "prefetch.h"

/* Epoch numbers beyond this, in a plan that does not say how many it has, are counted
 * as epochs without iterations rather than given a bitset each. */
#define EPOCHS_TRACKED 65536

/* A slice or partial drop, with where a slice runs: the order of a sample's slices
 * across ranks and iterations is checked when its epoch closes. */
typedef struct part {
    uint32_t sample, off, len;
    int32_t dp;    /* the rank holding its primary copy; PART_DROP: a drop */
    uint64_t iter; /* plan iteration number */
} part;

#define PART_DROP INT32_MIN

typedef struct epoch_cover {
    uint64_t *whole;  /* bit s: one segment or drop covers all of sample s */
    uint64_t *sliced; /* bit s: sample s has entries in parts[] */
    part *parts;      /* slices and partial drops */
    size_t nparts, cap;
} epoch_cover;

struct vl__cover {
    const vl_manifest *m;
    epoch_cover *e; /* [ne], NULL bitsets for an epoch not seen yet */
    size_t ne, ecap;
};

typedef struct ctx {
    vl__cover *c;
    const vl_plan *p;
    vl_verify_report *rep;
    uint32_t epoch;
    int slices;     /* vl_slices, when the epoch closes */
    uint32_t piece; /* VL_SLICES_PIECES: training.max_seq_len, 0 unknown */
    int32_t dp;     /* where add_range's segment is: rank, PART_DROP for a drop */
    uint64_t iter;
} ctx;

static bool bit(const uint64_t *set, uint32_t s)
{
    return set[s / 64] >> (s % 64) & 1;
}

static void range_msg(const ctx *x, uint32_t s, uint64_t a, uint64_t b, const char *what)
{
    char name[160];

    if (x->rep->nmsgs >= VL_VERIFY_MAX_MSGS) { /* counted, not formatted */
        x->rep->violations++;
        x->rep->by_inv[0]++;
        return;
    }
    vl__sample_name(x->p, s, name, sizeof name);
    vl__violation(x->rep, 1, "%s: tokens [%llu, %llu) %s in epoch %u", name,
                  (unsigned long long)a, (unsigned long long)b, what, x->epoch);
}

static vl_status add_range(const ctx *x, epoch_cover *ec, uint32_t s, uint32_t off,
                           uint32_t len, vl_err *err)
{
    const vl_manifest *m = x->c->m;
    vl_status st;

    if (s == VL_SAMPLE_UNKNOWN || len == 0)
        return VL_OK; /* reported by the reader (unknown id) or by I2 (empty segment) */
    if (s >= m->n) {
        vl__violation(x->rep, 1,
                      "segment of sample index %u, the manifest has %zu samples, "
                      "in epoch %u",
                      s, m->n, x->epoch);
        return VL_OK;
    }
    if (off == 0 && len == m->len[s] && !bit(ec->whole, s)) {
        ec->whole[s / 64] |= 1ull << (s % 64);
        return VL_OK;
    }
    if ((st = vl_grow(&ec->parts, &ec->cap, ec->nparts + 1, sizeof *ec->parts, err)) != VL_OK)
        return st;
    ec->parts[ec->nparts++] = (part){s, off, len, x->dp, x->iter};
    ec->sliced[s / 64] |= 1ull << (s % 64);
    return VL_OK;
}

/* Total order, so the messages do not depend on qsort's algorithm. */
static int cmp_part(const void *a_, const void *b_)
{
    const part *a = a_, *b = b_;

    if (a->sample != b->sample)
        return a->sample < b->sample ? -1 : 1;
    if (a->off != b->off)
        return a->off < b->off ? -1 : 1;
    if (a->len != b->len)
        return a->len < b->len ? -1 : 1;
    if (a->iter != b->iter)
        return a->iter < b->iter ? -1 : 1;
    return (a->dp > b->dp) - (a->dp < b->dp);
}

/* Why slice b (later tokens) may not follow slice a of the same sample, or NULL.  A
 * slice attends to every earlier one: it runs after them -- in a later iteration, or on
 * the same rank of the same one (ranks of an iteration run at once) -- and only where
 * the strategy slices by design. */
static const char *slice_wrong(const part *a, const part *b, int slices)
{
    if (b->iter < a->iter)
        return "goes forward in an earlier iteration than the tokens before it";
    if (b->iter == a->iter && b->dp != a->dp)
        return "runs on another rank of the same iteration as the tokens before it";
    if (slices == VL_SLICES_NONE)
        return "is a slice, but the strategy never slices a sample";
    if (b->iter != a->iter && slices < VL_SLICES_ITERS)
        return "runs in a later iteration, but the strategy keeps a sample's slices in "
               "one iteration";
    return NULL;
}

static void slice_msg(const ctx *x, const part *b, const char *why, const part *a)
{
    char name[160];

    vl__sample_name(x->p, b->sample, name, sizeof name);
    vl__violation(x->rep, 5,
                  "%s: the slice from token %u (iteration %llu, dp %d) %s (from "
                  "token %u: iteration %llu, dp %d) in epoch %u",
                  name, b->off, (unsigned long long)b->iter, b->dp, why, a->off,
                  (unsigned long long)a->iter, a->dp, x->epoch);
}

static int cmp_place(const void *a_, const void *b_)
{
    const part *a = a_, *b = b_;

    if (a->iter != b->iter)
        return a->iter < b->iter ? -1 : 1;
    if (a->dp != b->dp)
        return a->dp < b->dp ? -1 : 1;
    return (a->off > b->off) - (a->off < b->off);
}

/* training.oversize=split: only a sample longer than a piece is cut, each piece is
 * [kC, kC + C) (the last one shorter), and no two share a rank of an iteration, where
 * they would read as one sequence's slices.  ps is sorted again, by place. */
static void check_pieces(const ctx *x, part *ps, size_t k)
{
    uint64_t L = x->c->m->len[ps[0].sample], C = x->piece;
    size_t n = 0;

    for (size_t i = 0; i < k; i++)
        if (ps[i].dp != PART_DROP)
            ps[n++] = ps[i]; /* the drops are no longer needed */
    if (n < 2 || C == 0)
        return;
    for (size_t i = 0; i < n; i++) {
        uint64_t want = L - ps[i].off < C ? L - ps[i].off : C;
        if (L <= C || ps[i].off % C != 0 || ps[i].len != want) {
            slice_msg(x, &ps[i],
                      L <= C ? "cuts a sample no longer than a piece "
                               "(training.max_seq_len)"
                             : "is not a piece [kC, kC + C) of "
                               "training.max_seq_len C",
                      &ps[i ? i - 1 : 1]);
            return;
        }
    }
    qsort(ps, n, sizeof *ps, cmp_place);
    for (size_t i = 1; i < n; i++)
        if (ps[i].iter == ps[i - 1].iter && ps[i].dp == ps[i - 1].dp) {
            slice_msg(x, &ps[i], "shares a rank of an iteration with another piece",
                      &ps[i - 1]);
            return;
        }
}

/* The slices of one sample (sorted by offset, drops skipped): in causal order and
 * where the strategy slices; one message per sample. */
static void check_slices(const ctx *x, part *ps, size_t k)
{
    const part *prev = NULL;

    if (x->slices == VL_SLICES_PIECES) {
        check_pieces(x, ps, k);
        return;
    }
    for (size_t i = 0; i < k; i++) {
        const char *why;
        if (ps[i].dp == PART_DROP)
            continue;
        if (prev && (why = slice_wrong(prev, &ps[i], x->slices))) {
            slice_msg(x, &ps[i], why, prev);
            return;
        }
        prev = &ps[i];
    }
}

/* The k entries of one sample, sorted by offset, must tile [0, L) with what the whole
 * bit already covers. */
static void walk_sample(const ctx *x, const epoch_cover *ec, part *ps, size_t k)
{
    uint32_t s = ps[0].sample;
    uint64_t L = x->c->m->len[s];
    uint64_t end = bit(ec->whole, s) ? L : 0;

    for (size_t i = 0; i < k; i++) {
        uint64_t a = ps[i].off, b = a + ps[i].len;
        if (a > end && end < L)
            range_msg(x, s, end, a < L ? a : L, "missing");
        if (a < end)
            range_msg(x, s, a, b < end ? b : end, "planned more than once");
        if (b > L)
            range_msg(x, s, a > L ? a : L, b, "beyond its length");
        if (b > end)
            end = b;
    }
    if (end < L)
        range_msg(x, s, end, L, "missing");
    check_slices(x, ps, k);
}

static void close_epoch(const ctx *x, epoch_cover *ec)
{
    size_t n = x->c->m->n;

    if (ec->nparts > 1)
        qsort(ec->parts, ec->nparts, sizeof *ec->parts, cmp_part);
    for (size_t i = 0, j; i < ec->nparts; i = j) {
        for (j = i + 1; j < ec->nparts && ec->parts[j].sample == ec->parts[i].sample; j++)
            ;
        walk_sample(x, ec, ec->parts + i, j - i);
    }
    for (size_t w = 0; w < (n + 63) / 64; w++) {
        uint64_t miss = ~(ec->whole[w] | ec->sliced[w]);
        if (w == n / 64)
            miss &= (1ull << (n % 64)) - 1;
        for (; miss; miss &= miss - 1) {
            uint32_t s = (uint32_t)(w * 64 + (size_t)__builtin_ctzll(miss));
            range_msg(x, s, 0, x->c->m->len[s], "missing");
        }
    }
}

static void free_epoch(epoch_cover *ec)
{
    free(ec->whole);
    free(ec->sliced);
    free(ec->parts);
    memset(ec, 0, sizeof *ec);
}

static vl_status open_epoch(const vl__cover *c, epoch_cover *ec, vl_err *err)
{
    size_t words = (c->m->n + 63) / 64 + 1;

    ec->whole = calloc(words, sizeof *ec->whole);
    ec->sliced = calloc(words, sizeof *ec->sliced);
    if (!ec->whole || !ec->sliced) {
        free_epoch(ec);
        return vl_seterr(err, VL_ENOMEM, "out of memory verifying the plan");
    }
    return VL_OK;
}

/* The state of epoch e, created on first use; NULL for an epoch not tracked. */
static epoch_cover *epoch_of(vl__cover *c, const vl_plan *p, uint32_t e, vl_status *st,
                             vl_err *err)
{
    size_t had = c->ne;

    *st = VL_OK;
    if ((p->epochs > 0 && e >= p->epochs) || e >= EPOCHS_TRACKED)
        return NULL; /* reported as I5 */
    if (e >= c->ne) {
        if ((*st = vl_grow(&c->e, &c->ecap, (size_t)e + 1, sizeof *c->e, err)) != VL_OK)
            return NULL;
        memset(c->e + had, 0, ((size_t)e + 1 - had) * sizeof *c->e);
        c->ne = (size_t)e + 1;
    }
    if (!c->e[e].whole && (*st = open_epoch(c, &c->e[e], err)) != VL_OK)
        return NULL;
    return &c->e[e];
}

vl_status vl__cover_new(vl__cover **out, const vl_manifest *m, vl_err *err)
{
    if (!(*out = calloc(1, sizeof **out)))
        return vl_seterr(err, VL_ENOMEM, "out of memory verifying the plan");
    (*out)->m = m;
    return VL_OK;
}

void vl__cover_free(vl__cover *c)
{
    if (!c)
        return;
    for (size_t e = 0; e < c->ne; e++)
        free_epoch(&c->e[e]);
    free(c->e);
    free(c);
}

/* Touches what add_range will read for the iteration's segments: samples of a shuffled
 * plan lie anywhere in the manifest's lengths, beyond the caches at millions of samples;
 * here the reads overlap, where add_range's checks would wait for each in turn. */
static void warm_iter(const vl__cover *c, const vl_plan *p, const vl_iter *in,
                      const epoch_cover *ec)
{
    for (uint64_t r = in->rank0; r < in->rank0 + in->nranks; r++)
        for (uint64_t b = p->ranks[r].mb0; b < p->ranks[r].mb0 + p->ranks[r].nmb; b++) {
            const vl_seg *sg = vl_plan_mb_segs(p, &p->mbs[b]);
            for (uint32_t k = 0; k < p->mbs[b].nseg; k++)
                if (sg[k].sample < c->m->n) {
                    VL_PREFETCH(c->m->len + sg[k].sample);
                    VL_PREFETCH(ec->whole + sg[k].sample / 64);
                }
        }
}

/* The primary copies of the iteration's forward packs (a shared pack counts once). */
vl_status vl__cover_iter(vl__cover *c, const vl_plan *p, size_t it, vl_verify_report *rep,
                         vl_err *err)
{
    const vl_iter *in = &p->iters[it];
    ctx x = {.c = c, .p = p, .rep = rep, .epoch = in->epoch, .iter = p->iter_base + it};
    vl_status st;
    epoch_cover *ec = epoch_of(c, p, in->epoch, &st, err);

    if (!ec)
        return st;
    warm_iter(c, p, in, ec);
    for (uint64_t r = in->rank0; r < in->rank0 + in->nranks; r++)
        for (uint64_t b = p->ranks[r].mb0; b < p->ranks[r].mb0 + p->ranks[r].nmb; b++) {
            const vl_mb *mb = &p->mbs[b];
            const vl_seg *sg = vl_plan_mb_segs(p, mb);
            if (mb->share && !vl_plan_mb_primary(p, &p->ranks[r], mb))
                continue;
            x.dp = p->ranks[r].dp;
            for (uint32_t k = 0; k < mb->nseg; k++)
                if ((st = add_range(&x, ec, sg[k].sample, sg[k].off, sg[k].len, err)) != VL_OK)
                    return st;
        }
    return VL_OK;
}

/* Add the dropped ranges to epoch state ec and close it. */
static vl_status close_with_drops(ctx *x, epoch_cover *ec, vl_err *err)
{
    vl_status st;

    x->dp = PART_DROP;
    for (size_t i = 0; i < x->p->ndrops; i++) {
        const vl_drop *d = &x->p->drops[i];
        if ((st = add_range(x, ec, d->sample, d->off, d->len, err)) != VL_OK)
            return st;
    }
    close_epoch(x, ec);
    return VL_OK;
}

/* Epochs without any iteration all miss the same tokens: cover the first, count the rest. */
static vl_status cover_empty_epochs(ctx *x, uint32_t first, uint64_t nempty, vl_err *err)
{
    size_t before = x->rep->violations, found;
    epoch_cover ec = {0};
    vl_status st = open_epoch(x->c, &ec, err);

    x->epoch = first;
    if (st == VL_OK)
        st = close_with_drops(x, &ec, err);
    free_epoch(&ec);
    found = x->rep->violations - before;
    if (st != VL_OK || found == 0 || nempty < 2)
        return st;
    x->rep->violations += found * (size_t)(nempty - 1);
    x->rep->by_inv[0] += found * (size_t)(nempty - 1);
    vl__note(x->rep, "I1: %llu more epochs without iterations miss the same tokens",
             (unsigned long long)(nempty - 1));
    return VL_OK;
}

vl_status vl__cover_finish(vl__cover *c, const vl_plan *p, int slices, uint32_t piece,
                           vl_verify_report *rep, vl_err *err)
{
    ctx x = {.c = c, .p = p, .rep = rep, .slices = slices, .piece = piece};
    uint64_t nempty = 0, first_empty = UINT64_MAX;
    vl_status st = VL_OK;

    for (uint32_t e = 0; e < p->epochs && st == VL_OK; e++) {
        if (e < c->ne && c->e[e].whole) {
            x.epoch = e;
            st = close_with_drops(&x, &c->e[e], err);
            free_epoch(&c->e[e]);
            continue;
        }
        if (first_empty == UINT64_MAX)
            first_empty = e;
        nempty++;
        if (e >= EPOCHS_TRACKED) { /* the rest are all empty */
            nempty += p->epochs - 1 - e;
            break;
        }
    }
    if (st == VL_OK && nempty > 0)
        st = cover_empty_epochs(&x, (uint32_t)first_empty, nempty, err);
    return st;
}
