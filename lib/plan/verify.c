/* lib/plan/verify.c -- the plan checker (verify.h; design §7, reliability notes §2.3): I1
 * coverage, I2 token sums, I3 capacity and memory, I4 lockstep, I5 structure and file
 * claims.  Coverage runs one epoch at a time with a bitset for whole samples and
 * sorted intervals only for slices and dropped ranges: O(n/8 + slices) memory. */
#include "verify.h"

#include "sim.h"
#include "sort.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(__GNUC__)
#define PRINTF_LIKE(f, a) __attribute__((format(printf, f, a)))
#else
#define PRINTF_LIKE(f, a)
#endif

#define GIB (1024.0 * 1024.0 * 1024.0)

static void add_msg(vl_verify_report *rep, const char *msg)
{
    if (rep->nmsgs < VL_VERIFY_MAX_MSGS)
        snprintf(rep->msgs[rep->nmsgs++], sizeof rep->msgs[0], "%s", msg);
}

/* Count a violation of invariant inv (1..5); only the first few are formatted. */
static void violation(vl_verify_report *rep, int inv, const char *fmt, ...) PRINTF_LIKE(3, 4);
static void violation(vl_verify_report *rep, int inv, const char *fmt, ...)
{
    char msg[sizeof rep->msgs[0]];
    va_list ap;
    int n;

    rep->violations++;
    rep->by_inv[inv - 1]++;
    if (rep->nmsgs >= VL_VERIFY_MAX_MSGS)
        return;
    n = snprintf(msg, sizeof msg, "I%d: ", inv);
    va_start(ap, fmt);
    vsnprintf(msg + n, sizeof msg - (size_t)n, fmt, ap);
    va_end(ap);
    add_msg(rep, msg);
}

/* "sample 42 (id "abc")", the id shortened if long. */
static void sample_name(const vl_plan *p, uint32_t s, char *buf, size_t cap)
{
    char id[80];

    if (vl_manifest_id_json(p->m, s, id, sizeof id) >= sizeof id)
        memcpy(id + sizeof id - 4, "...", 4);
    snprintf(buf, cap, "sample %u (id %s)", s, id);
}

/* ---- I1: coverage ---- */

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
    sample_name(c->p, s, name, sizeof name);
    violation(c->rep, 1, "%s: tokens [%llu, %llu) %s in epoch %u", name,
              (unsigned long long)a, (unsigned long long)b, what, c->epoch);
}

static vl_status add_range(cover *c, uint32_t s, uint32_t off, uint32_t len, vl_err *err)
{
    const vl_manifest *m = c->p->m;

    if (s == VL_SAMPLE_UNKNOWN || len == 0)
        return VL_OK; /* reported by the reader (unknown id) or by I2 (empty segment) */
    if (s >= m->n) {
        violation(c->rep, 1, "segment of sample index %u, the manifest has %zu samples, in "
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

static vl_status add_iter(cover *c, const vl_iter *in, vl_err *err)
{
    const vl_plan *p = c->p;
    vl_status st;

    for (uint64_t r = in->rank0; r < in->rank0 + in->nranks; r++)
        for (uint64_t b = p->ranks[r].mb0; b < p->ranks[r].mb0 + p->ranks[r].nmb; b++) {
            const vl_mb *mb = &p->mbs[b];
            const vl_seg *sg = vl_plan_mb_segs(p, mb);
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
    char msg[160];
    snprintf(msg, sizeof msg, "I1: %llu more epochs without iterations miss the same tokens",
             (unsigned long long)(nempty - 1));
    add_msg(c->rep, msg);
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

static vl_status check_coverage(const vl_plan *p, vl_verify_report *rep, vl_err *err)
{
    cover c = {.p = p, .rep = rep};
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

/* ---- I2-I5: structure ---- */

typedef struct walk {
    const vl_plan *p;
    vl_verify_report *rep;
    uint8_t *state;       /* per micro-batch schedule state, sized for the largest rank */
    uint64_t samples, tokens;
} walk;

enum { OP_NONE, OP_FWD, OP_BWD };

/* An explicit schedule runs each micro-batch of its rank forward once, then backward
 * once; recompute sits between the two. */
static void check_schedule(walk *w, size_t it, uint32_t r, const vl_rank *rk)
{
    memset(w->state, OP_NONE, rk->nmb);
    for (uint64_t i = rk->op0; i < rk->op0 + rk->nop; i++) {
        const vl_op *op = &w->p->ops[i];
        uint8_t *s = op->mb < rk->nmb ? &w->state[op->mb] : NULL;
        bool ok = s && (op->kind == VL_OP_F ? *s == OP_NONE : *s == OP_FWD);
        if (!ok) {
            violation(w->rep, 5, "iteration %zu, rank %u: schedule step %llu (%c %u) is out "
                      "of order or names no micro-batch of the rank", it, r,
                      (unsigned long long)(i - rk->op0), "FRB"[op->kind % 3], op->mb);
            continue;
        }
        if (op->kind == VL_OP_F)
            *s = OP_FWD;
        else if (op->kind == VL_OP_B)
            *s = OP_BWD;
    }
    for (uint32_t b = 0; b < rk->nmb; b++)
        if (w->state[b] != OP_BWD)
            violation(w->rep, 5, "iteration %zu, rank %u: the schedule never runs micro-batch "
                      "%u %s", it, r, b, w->state[b] == OP_NONE ? "forward" : "backward");
}

static void check_mb(walk *w, size_t it, uint32_t r, uint32_t j, const vl_mb *mb)
{
    const vl_seg *sg = vl_plan_mb_segs(w->p, mb);
    uint64_t sum = 0;

    for (uint32_t k = 0; k < mb->nseg; k++) {
        sum += sg[k].len;
        w->samples += sg[k].off == 0;
        if (sg[k].len == 0)
            violation(w->rep, 2, "iteration %zu, rank %u, micro-batch %u: segment %u is "
                      "empty", it, r, j, k);
    }
    w->tokens += sum;
    if (sum != mb->tokens)
        violation(w->rep, 2, "iteration %zu, rank %u, micro-batch %u: tokens %llu, but its "
                  "segments sum to %llu", it, r, j, (unsigned long long)mb->tokens,
                  (unsigned long long)sum);
    if (mb->tokens > mb->cap)
        violation(w->rep, 3, "iteration %zu, rank %u, micro-batch %u: %llu tokens exceed its "
                  "capacity %u", it, r, j, (unsigned long long)mb->tokens, mb->cap);
}

static void check_rank(walk *w, size_t it, uint32_t r, const vl_rank *rk, uint32_t nmb0)
{
    const vl_par *q = &rk->par;

    if (rk->nmb != nmb0)
        violation(w->rep, 4, "iteration %zu: rank %u has %u micro-batches, rank 0 has %u", it,
                  r, rk->nmb, nmb0);
    if (q->tp < 1 || q->pp < 1 || q->sp < 1 || q->ckpt_layers < 0)
        violation(w->rep, 3, "iteration %zu, rank %u: invalid parallel layout tp %d pp %d "
                  "sp %d ckpt_layers %d", it, r, q->tp, q->pp, q->sp, q->ckpt_layers);
    for (uint32_t j = 0; j < rk->nmb; j++)
        check_mb(w, it, r, j, &w->p->mbs[rk->mb0 + j]);
    if (rk->nop > 0)
        check_schedule(w, it, r, rk);
}

/* A dropped range is a real range: an empty one hides a mistake. */
static void check_drops(walk *w)
{
    for (size_t i = 0; i < w->p->ndrops; i++)
        if (w->p->drops[i].len == 0)
            violation(w->rep, 2, "dropped range %zu (sample %u, offset %u) is empty", i,
                      w->p->drops[i].sample, w->p->drops[i].off);
}

static void check_iter(walk *w, size_t it)
{
    const vl_plan *p = w->p;
    const vl_iter *in = &p->iters[it];

    if (in->epoch >= p->epochs)
        violation(w->rep, 5, "iteration %zu: epoch %u, but the plan has %u epochs", it,
                  in->epoch, p->epochs);
    if (it > 0 && in->epoch < p->iters[it - 1].epoch)
        violation(w->rep, 5, "iteration %zu: epoch %u follows epoch %u", it, in->epoch,
                  p->iters[it - 1].epoch);
    if (in->nranks == 0)
        violation(w->rep, 5, "iteration %zu has no ranks", it);
    for (uint32_t r = 0; r < in->nranks; r++)
        check_rank(w, it, r, &p->ranks[in->rank0 + r],
                   p->ranks[in->rank0].nmb);
}

static vl_status check_structure(walk *w, vl_err *err)
{
    const vl_plan *p = w->p;
    uint32_t most = 1;

    for (size_t r = 0; r < p->nranks; r++)
        if (p->ranks[r].nop > 0 && p->ranks[r].nmb > most)
            most = p->ranks[r].nmb;
    if (!(w->state = malloc(most)))
        return vl_seterr(err, VL_ENOMEM, "out of memory verifying the plan");
    for (size_t it = 0; it < p->niters; it++)
        check_iter(w, it);
    check_drops(w);
    free(w->state);
    w->state = NULL;
    return VL_OK;
}

/* I5 for plans read from a file: the footer and header claims, and what the reader
 * recorded (unknown ids, sums that disagree with their segments). */
static void check_file(const walk *w)
{
    const vl_plan *p = w->p;
    vl_verify_report *rep = w->rep;
    size_t nprob = 0;

    if (!p->file.from_file)
        return;
    if (!p->file.has_footer)
        violation(rep, 5, "no footer: the plan file is truncated or incomplete");
    else if (!p->file.sha_ok)
        violation(rep, 5, "the footer's sha256 does not match the content (file modified or "
                          "corrupt)");
    if (p->file.has_footer && p->file.iterations != p->niters)
        violation(rep, 5, "the footer says %llu iterations, the file has %zu",
                  (unsigned long long)p->file.iterations, p->niters);
    if (p->file.has_footer && p->file.samples != w->samples)
        violation(rep, 5, "the footer says %llu samples, the iterations start %llu",
                  (unsigned long long)p->file.samples, (unsigned long long)w->samples);
    if (p->file.has_footer && p->file.tokens != w->tokens)
        violation(rep, 5, "the footer says %llu tokens, the iterations hold %llu",
                  (unsigned long long)p->file.tokens, (unsigned long long)w->tokens);
    if (p->file.header_iterations != p->niters)
        violation(rep, 5, "the header says %llu iterations, the file has %zu",
                  (unsigned long long)p->file.header_iterations, p->niters);
    for (int i = 0; i < 5; i++) {
        rep->by_inv[i] += p->file.nproblems[i];
        nprob += p->file.nproblems[i];
    }
    rep->violations += nprob;
    if (nprob > 0)
        add_msg(rep, p->file.problem);
}

/* I3 memory: the simulator's memory timeline (lib/model/sim.h) is the one model of what a
 * device holds, so verify, `simulate` and the metrics can never disagree. */
static vl_status check_memory(const vl_plan *p, const vl_cost *c, vl_verify_report *rep,
                              vl_err *err)
{
    vl_sim_scratch *s = NULL;
    vl_sim_iter_result r;
    vl_err simerr = {0};
    vl_status st = vl_sim_scratch_new(&s, err);
    double cap = vl_cost_mem_capacity(c);

    for (size_t it = 0; st == VL_OK && it < p->niters; it++) {
        st = vl_sim_iter(p, it, c, NULL, &r, s, NULL, &simerr);
        if (st == VL_EDATA) {
            /* a malformed schedule or degree, reported as I3/I5 by the structure pass */
            st = VL_OK;
            continue;
        }
        if (st == VL_OK && r.oom)
            violation(rep, 3, "iteration %zu, rank %u, stage %u: modelled memory %.2f GiB "
                      "exceeds the usable %.2f GiB", it, r.peak_rank, r.peak_stage,
                      r.peak_mem_gib, cap / GIB);
    }
    if (st != VL_OK && st != VL_EDATA)
        vl_seterr(err, st, "%s", simerr.msg);
    vl_sim_scratch_free(s);
    return st;
}

vl_status vl_plan_verify(const vl_plan *p, const vl_cost *cost, vl_verify_report *rep,
                         vl_err *err)
{
    walk w = {.p = p, .rep = rep};
    vl_status st;

    memset(rep, 0, sizeof *rep);
    if ((st = check_structure(&w, err)) != VL_OK)
        return st;
    check_file(&w);
    if (p->m && (st = check_coverage(p, rep, err)) != VL_OK)
        return st;
    if (cost && (st = check_memory(p, cost, rep, err)) != VL_OK)
        return st;
    if (rep->violations == 0)
        return VL_OK;
    return vl_seterr(err, VL_EVERIFY, "the plan violates %zu invariant(s); first: %s",
                     rep->violations, rep->nmsgs ? rep->msgs[0] : "?");
}
