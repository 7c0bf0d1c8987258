/* lib/check/verify_order.c -- order within a rank (verify.h): an explicit schedule runs every
 * forward pack once (F), at most one recompute between its F and B (never on a rank with
 * backward packs), every pack that B names once (I5); a rank's backward packs hold
 * exactly the tokens of its forward packs (I1); the slices of a sample go forward in token
 * order (F positions rise with the offset) and, under an explicit schedule, backward in
 * reverse, each backward pack after the forward of every slice it touches (I5).
 *
 * Per rank only the segments of samples that are sliced there (an offset above 0, or
 * backward packs) are collected and sorted by (sample, offset): O(k log k) for k such
 * segments, nothing for ranks of whole samples under the default order. */
#include "verify_impl.h"

#include <stdlib.h>
#include <string.h>

#include "grow.h"

/* The rank being checked; the scratch lives in the verifier (fpos, bpos, iv). */
typedef struct order {
    vl_vctx *v;
    size_t it; /* the iteration's number, for messages */
    uint32_t r;
    const vl_rank *rk;
    int64_t *fpos, *bpos; /* schedule position of F / B per pack, -1 = none */
    vl_interval *e;
    size_t ne;
} order;

/* ---- schedule ---- */

static void bad_op(order *o, uint64_t i, const vl_op *op, const char *why)
{
    vl__violation(o->v->rep, 5, "iteration %zu, rank %u: schedule step %llu (%c %u) %s", o->it,
                  o->r, (unsigned long long)i, "FRB"[op->kind % 3], op -> mb, why);
}

/* Positions of every F and B, checking each pack's F < [R <] B once. */
static void check_schedule(order *o)
{
    const vl_rank *rk = o->rk;
    const vl_op *ops = o->v->p->ops + rk->op0;
    uint32_t nb = vl_plan_nbpacks(rk);
    int64_t *rpos = o->bpos + nb; /* recompute positions follow the B positions */

    for (uint32_t i = 0; i < rk->nmb; i++)
        o->fpos[i] = rpos[i] = -1;
    for (uint32_t i = 0; i < nb; i++)
        o->bpos[i] = -1;
    for (uint32_t i = 0; i < rk->nop; i++) {
        const vl_op *op = &ops[i];
        uint32_t lim = op->kind == VL_OP_B ? nb : rk->nmb;
        if (op->kind > VL_OP_B || op->mb >= lim) {
            bad_op(o, i, op, "names no pack of the rank");
            continue;
        }
        if (op->kind == VL_OP_F) {
            if (o->fpos[op->mb] >= 0)
                bad_op(o, i, op, "runs a forward twice");
            o->fpos[op->mb] = i;
        } else if (op->kind == VL_OP_R) {
            if (rk->nbwd > 0)
                bad_op(o, i, op, "recomputes on a rank with backward packs");
            else if (o->fpos[op->mb] < 0 || rpos[op->mb] >= 0 || o->bpos[op->mb] >= 0)
                bad_op(o, i, op, "is out of order (F, at most one R, then B)");
            rpos[op->mb] = i;
        } else {
            if (o->bpos[op->mb] >= 0)
                bad_op(o, i, op, "runs a backward twice");
            else if (rk->nbwd == 0 && o->fpos[op->mb] < 0)
                bad_op(o, i, op, "runs before its forward");
            o->bpos[op->mb] = i;
        }
    }
    for (uint32_t m = 0; m < rk->nmb; m++)
        if (o->fpos[m] < 0)
            vl__violation(o->v->rep, 5,
                          "iteration %zu, rank %u: the schedule never runs "
                          "micro-batch %u forward",
                          o->it, o->r, m);
    for (uint32_t m = 0; m < nb; m++)
        if (o->bpos[m] < 0)
            vl__violation(o->v->rep, 5,
                          "iteration %zu, rank %u: the schedule never runs %s %u "
                          "backward",
                          o->it, o->r, rk->nbwd ? "backward pack" : "micro-batch", m);
}

/* ---- slices ---- */

/* The backward entries b[0..nb) of one sample tile the union of its forward entries
 * f[0..nf) (both sorted by offset): end to end, nothing outside, nothing twice. */
static void check_tiling(order *o, const vl_interval *f, size_t nf, const vl_interval *b,
                         size_t nb)
{
    size_t i = 0, j = 0;
    uint64_t lo = 0, hi = 0; /* the rest [lo, hi) of the current forward range */
    bool ok = true;
    char name[160];

    while (ok && (i < nf || j < nb)) {
        if (lo == hi) { /* the next maximal forward range */
            if (i == nf) {
                ok = false;
                break;
            }
            lo = f[i].off;
            hi = f[i++].end;
            while (i < nf && f[i].off <= hi)
                hi = f[i].end > hi ? f[i].end : hi, i++;
        }
        if (j == nb || b[j].off != lo || b[j].end > hi)
            ok = false;
        else
            lo = b[j++].end;
    }
    if (ok && lo == hi)
        return;
    vl__sample_name(o->v->p, nf ? f[0].sample : b[0].sample, name, sizeof name);
    vl__violation(o->v->rep, 1,
                  "iteration %zu, rank %u: %s: its backward packs do not hold "
                  "exactly the tokens of its forward packs (from token %llu)",
                  o->it, o->r, name, (unsigned long long)lo);
}

/* Forward slices in token order: F positions rise with the offset. */
static void check_forward(order *o, const vl_interval *f, size_t nf)
{
    for (size_t i = 1; i < nf; i++) {
        int64_t a = o->rk->nop ? o->fpos[f[i - 1].pack] : f[i - 1].pack;
        int64_t b = o->rk->nop ? o->fpos[f[i].pack] : f[i].pack;
        char name[160];
        if (a <= b)
            continue;
        vl__sample_name(o->v->p, f[i].sample, name, sizeof name);
        vl__violation(o->v->rep, 5,
                      "iteration %zu, rank %u: %s: tokens from %u go forward "
                      "before tokens from %u",
                      o->it, o->r, name, f[i].off, f[i - 1].off);
    }
}

/* Under an explicit schedule: backward slices in reverse token order, and each backward
 * pack after the forward of every pack holding tokens it touches. */
static void check_backward(order *o, const vl_interval *f, size_t nf, const vl_interval *b,
                           size_t nb)
{
    char name[160];
    size_t i = 0;

    for (size_t j = 0; j < nb; j++) {
        int64_t pb = o->bpos[b[j].pack];
        if (j + 1 < nb && o->bpos[b[j + 1].pack] > pb) {
            vl__sample_name(o->v->p, b[j].sample, name, sizeof name);
            vl__violation(o->v->rep, 5,
                          "iteration %zu, rank %u: %s: tokens from %u go backward "
                          "before tokens from %u (backward runs last token first)",
                          o->it, o->r, name, b[j].off, b[j + 1].off);
        }
        while (i < nf && f[i].end <= b[j].off)
            i++;
        for (size_t q = i; q < nf && f[q].off < b[j].end; q++)
            if (o->fpos[f[q].pack] > pb) {
                vl__sample_name(o->v->p, b[j].sample, name, sizeof name);
                vl__violation(o->v->rep, 5,
                              "iteration %zu, rank %u: %s: tokens [%u, %u) go "
                              "backward before their forward",
                              o->it, o->r, name, b[j].off, b[j].end);
                break;
            }
    }
}

static void check_sample(order *o, const vl_interval *s, size_t n)
{
    size_t nf = 0;

    while (nf < n && !s[nf].bwd)
        nf++;
    if (o->rk->nbwd > 0)
        check_tiling(o, s, nf, s + nf, n - nf);
    if (nf > 1)
        check_forward(o, s, nf);
    if (o->rk->nop > 0)
        check_backward(o, s, nf, o->rk->nbwd ? s + nf : s, o->rk->nbwd ? n - nf : nf);
}

static vl_status check_rank(order *o, vl_err *err)
{
    const vl_rank *rk = o->rk;
    size_t nb = vl_plan_nbpacks(rk);
    vl_status st;

    vl_vctx *v = o->v;

    if (rk->nop > 0) {
        if ((st = vl_grow(&v->fpos, &v->fpos_cap, rk->nmb + 1, sizeof *v->fpos, err)) ||
            (st = vl_grow(&v->bpos, &v->bpos_cap, nb + rk->nmb + 1, sizeof *v->bpos, err)))
            return st;
        o->fpos = v->fpos;
        o->bpos = v->bpos;
        check_schedule(o);
    }
    if (rk->nbwd == 0 && !vl_plan_rank_sliced(v->p, rk))
        return VL_OK;
    if ((st = vl_plan_rank_intervals(v->p, rk, &v->iv, &v->iv_cap, &o->ne, err)) != VL_OK)
        return st;
    o->e = v->iv;
    for (size_t i = 0, j; i < o->ne; i = j) {
        for (j = i + 1; j < o->ne && o->e[j].sample == o->e[i].sample; j++)
            ;
        check_sample(o, o->e + i, j - i);
    }
    return VL_OK;
}

vl_status vl__order_iter(vl_vctx *v, size_t it, vl_err *err)
{
    const vl_iter *in = &v->p->iters[it];
    order o = {.v = v, .it = v->num};
    vl_status st = VL_OK;

    for (uint32_t r = 0; r < in->nranks && st == VL_OK; r++) {
        o.r = r;
        o.rk = &v->p->ranks[in->rank0 + r];
        st = check_rank(&o, err);
    }
    return st;
}
