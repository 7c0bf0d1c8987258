/* lib/plan/verify.c -- the plan checker's driver (verify.h; design §7, reliability notes
 * §2.3): the report, I2 sums, I3 capacities and memory, I4 lockstep, I5 epochs and what a
 * file claimed.  Coverage (verify_cover.c), slice and schedule order (verify_order.c) and
 * placement (verify_layout.c) are checked apart.  Every violation is counted; the first
 * VL_VERIFY_MAX_MSGS are kept, each naming its invariant and its place. */
#include "verify_impl.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim.h"

#define GIB (1024.0 * 1024.0 * 1024.0)

static void add_msg(vl_verify_report *rep, const char *msg)
{
    if (rep->nmsgs < VL_VERIFY_MAX_MSGS)
        snprintf(rep->msgs[rep->nmsgs++], sizeof rep->msgs[0], "%s", msg);
}

void vl__violation(vl_verify_report *rep, int inv, const char *fmt, ...)
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

void vl__note(vl_verify_report *rep, const char *fmt, ...)
{
    char msg[sizeof rep->msgs[0]];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    add_msg(rep, msg);
}

void vl__sample_name(const vl_plan *p, uint32_t s, char *buf, size_t cap)
{
    char id[80];

    if (!p->m || s >= p->m->n) {
        snprintf(buf, cap, "sample %u", s);
        return;
    }
    if (vl_manifest_id_json(p->m, s, id, sizeof id) >= sizeof id)
        memcpy(id + sizeof id - 4, "...", 4);
    snprintf(buf, cap, "sample %u (id %s)", s, id);
}

/* ---- I2-I4 per pack and rank ---- */

typedef struct walk {
    const vl_vctx *v;
    uint64_t samples, tokens;   /* over primary forward copies, for the footer claims */
} walk;

static void check_pack(walk *w, size_t it, uint32_t r, bool bwd, uint32_t j, const vl_mb *mb,
                       bool primary)
{
    const vl_seg *sg = vl_plan_mb_segs(w->v->p, mb);
    vl_verify_report *rep = w->v->rep;
    const char *what = bwd ? "backward pack" : "micro-batch";
    uint64_t sum = 0;

    for (uint32_t k = 0; k < mb->nseg; k++) {
        sum += sg[k].len;
        w->samples += !bwd && primary && sg[k].off == 0;
        if (sg[k].len == 0)
            vl__violation(rep, 2, "iteration %zu, rank %u, %s %u: segment %u is empty", it, r,
                          what, j, k);
    }
    if (!bwd && primary)
        w->tokens += sum;
    if (sum != mb->tokens)
        vl__violation(rep, 2, "iteration %zu, rank %u, %s %u: tokens %llu, but its segments "
                      "sum to %llu", it, r, what, j, (unsigned long long)mb->tokens,
                      (unsigned long long)sum);
    if (mb->tokens > mb->cap)
        vl__violation(rep, 3, "iteration %zu, rank %u, %s %u: %llu tokens exceed its capacity "
                      "%u", it, r, what, j, (unsigned long long)mb->tokens, mb->cap);
}

static void check_rank(walk *w, size_t it, uint32_t r, const vl_rank *rk, uint32_t nmb0)
{
    const vl_plan *p = w->v->p;

    if (rk->nmb != nmb0 && !(p->caps & VL_CAP_UNEVEN_MBS))
        vl__violation(w->v->rep, 4, "iteration %zu: rank %u has %u micro-batches, rank 0 has "
                      "%u, and the plan does not declare uneven counts (uneven_mbs)", it, r,
                      rk->nmb, nmb0);
    for (uint32_t j = 0; j < rk->nmb; j++) {
        const vl_mb *mb = &p->mbs[rk->mb0 + j];
        check_pack(w, it, r, false, j, mb, vl_plan_mb_primary(p, rk, mb));
    }
    for (uint32_t j = 0; j < rk->nbwd; j++)
        check_pack(w, it, r, true, j, vl_plan_bwd(p, rk, j), false);
}

/* A dropped range is a real range: an empty one hides a mistake. */
static void check_drops(const vl_vctx *v)
{
    for (size_t i = 0; i < v->p->ndrops; i++)
        if (v->p->drops[i].len == 0)
            vl__violation(v->rep, 2, "dropped range %zu (sample %u, offset %u) is empty", i,
                          v->p->drops[i].sample, v->p->drops[i].off);
}

static void check_iters(walk *w)
{
    const vl_plan *p = w->v->p;
    vl_verify_report *rep = w->v->rep;

    if (p->epochs == 0)
        vl__violation(rep, 5, "the plan declares 0 epochs");
    for (size_t it = 0; it < p->niters; it++) {
        const vl_iter *in = &p->iters[it];
        if (in->epoch >= p->epochs)
            vl__violation(rep, 5, "iteration %zu: epoch %u, but the plan has %u epochs", it,
                          in->epoch, p->epochs);
        if (it > 0 && in->epoch < p->iters[it - 1].epoch)
            vl__violation(rep, 5, "iteration %zu: epoch %u follows epoch %u", it, in->epoch,
                          p->iters[it - 1].epoch);
        if (in->nranks == 0)
            vl__violation(rep, 5, "iteration %zu has no ranks", it);
        for (uint32_t r = 0; r < in->nranks; r++)
            check_rank(w, it, r, &p->ranks[in->rank0 + r], p->ranks[in->rank0].nmb);
    }
    check_drops(w->v);
}

/* ---- I5: what a plan file claimed, and what its reader found ---- */

static void check_file(const walk *w)
{
    const vl_plan *p = w->v->p;
    const vl_plan_file *f = w->v->file;
    vl_verify_report *rep = w->v->rep;

    if (!f)
        return;
    if (!f->has_footer && f->by_vlplan)
        vl__violation(rep, 5, "no footer: the plan file is truncated or incomplete");
    if (f->has_footer && f->by_vlplan) {   /* vlplan writes every claim; none may go */
        const char *lacks = f->iterations < 0 ? "iterations" : f->samples < 0 ? "samples"
                            : f->tokens < 0 ? "tokens" : f->sha < 0 ? "sha256" : NULL;
        if (lacks)
            vl__violation(rep, 5, "the footer lacks \"%s\"", lacks);
    }
    if (f->sha == 0)
        vl__violation(rep, 5, "the footer's sha256 does not match the content (file modified "
                      "or corrupt)");
    if (f->iterations >= 0 && (uint64_t)f->iterations != p->niters)
        vl__violation(rep, 5, "the footer says %lld iterations, the file has %zu",
                      (long long)f->iterations, p->niters);
    if (f->samples >= 0 && (uint64_t)f->samples != w->samples)
        vl__violation(rep, 5, "the footer says %lld samples, the iterations start %llu",
                      (long long)f->samples, (unsigned long long)w->samples);
    if (f->tokens >= 0 && (uint64_t)f->tokens != w->tokens)
        vl__violation(rep, 5, "the footer says %lld tokens, the iterations hold %llu",
                      (long long)f->tokens, (unsigned long long)w->tokens);
    if (f->header_iterations >= 0 && (uint64_t)f->header_iterations != p->niters)
        vl__violation(rep, 5, "the header says %lld iterations, the file has %zu",
                      (long long)f->header_iterations, p->niters);
    for (int i = 0; i < 5; i++) {
        rep->by_inv[i] += f->by_inv[i];
        rep->violations += f->by_inv[i];
    }
    for (size_t i = 0; i < f->findings.n; i++)
        add_msg(rep, f->findings.msg[i]);
}

/* ---- I3 memory ---- */

/* The simulator's memory timeline (lib/model/sim.h) is the one model of what a device
 * holds, so verify, `simulate` and the metrics can never disagree. */
static vl_status check_memory(const vl_vctx *v, vl_err *err)
{
    vl_sim_scratch *s = NULL;
    vl_sim_iter_result r;
    vl_err simerr = {0};
    vl_status st = vl_sim_scratch_new(&s, err);
    double cap = vl_cost_mem_capacity(v->cost);

    for (size_t it = 0; st == VL_OK && it < v->p->niters; it++) {
        st = vl_sim_iter(v->p, it, v->cost, NULL, &r, s, NULL, &simerr);
        if (st == VL_EDATA) {
            /* a malformed schedule or degree, reported by the structure passes */
            st = VL_OK;
            continue;
        }
        if (st == VL_OK && r.oom)
            vl__violation(v->rep, 3, "iteration %zu, rank %u, stage %u: modelled memory %.2f "
                          "GiB exceeds the usable %.2f GiB", it, r.peak_rank, r.peak_stage,
                          r.peak_mem_gib, cap / GIB);
    }
    if (st != VL_OK && st != VL_EDATA)
        vl_seterr(err, st, "%s", simerr.msg);
    vl_sim_scratch_free(s);
    return st;
}

static vl_status run(const vl_vctx *v, vl_err *err)
{
    walk w = {.v = v};
    vl_status st;

    memset(v->rep, 0, sizeof *v->rep);
    check_iters(&w);
    check_file(&w);
    if ((st = vl__check_layout(v, err)) != VL_OK || (st = vl__check_order(v, err)) != VL_OK)
        return st;
    if (v->p->m && (st = vl__check_coverage(v, err)) != VL_OK)
        return st;
    if (v->cost && (st = check_memory(v, err)) != VL_OK)
        return st;
    if (v->rep->violations == 0)
        return VL_OK;
    return vl_seterr(err, VL_EVERIFY, "the plan violates %zu invariant(s); first: %s",
                     v->rep->violations, v->rep->nmsgs ? v->rep->msgs[0] : "?");
}

vl_status vl_plan_verify(const vl_plan *p, const vl_cost *cost, vl_verify_report *rep,
                         vl_err *err)
{
    vl_vctx v = {.p = p, .file = NULL, .cost = cost, .rep = rep, .declared = true};

    return run(&v, err);
}

vl_status vl_plan_verify_read(const vl_plan *p, const vl_plan_file *file, const vl_cost *cost,
                              vl_verify_report *rep, vl_err *err)
{
    vl_vctx v = {.p = p, .file = file, .cost = cost, .rep = rep,
                 .declared = !file || file->by_vlplan};

    return run(&v, err);
}
