/* lib/check/verify.c -- the plan checker's driver (verify.h; docs/decisions.md §7): the
 * report, I2 sums, I3 capacities and memory, I4 lockstep, I5 epochs, what a file
 * claimed and what simulate refuses.  Coverage (verify_cover.c), slice and schedule
 * order (verify_order.c), placement (verify_layout.c) and what the config and strategy
 * permit (verify_config.c) are checked apart.  Every violation is counted; the first
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

static void check_pack(vl_vctx *v, uint32_t r, bool bwd, uint32_t j, const vl_mb *mb,
                       bool primary)
{
    const vl_seg *sg = vl_plan_mb_segs(v->p, mb);
    vl_verify_report *rep = v->rep;
    const char *what = bwd ? "backward pack" : "micro-batch";
    uint64_t sum = 0;

    for (uint32_t k = 0; k < mb->nseg; k++) {
        sum += sg[k].len;
        v->samples += !bwd && primary && sg[k].off == 0;
        if (sg[k].len == 0)
            vl__violation(rep, 2, "iteration %zu, rank %u, %s %u: segment %u is empty", v->num,
                          r, what, j, k);
    }
    if (!bwd && primary)
        v->tokens += sum;
    if (sum != mb->tokens)
        vl__violation(rep, 2,
                      "iteration %zu, rank %u, %s %u: tokens %llu, but its segments "
                      "sum to %llu",
                      v->num, r, what, j, (unsigned long long)mb->tokens,
                      (unsigned long long)sum);
    if (mb->tokens > mb->cap)
        vl__violation(rep, 3,
                      "iteration %zu, rank %u, %s %u: %llu tokens exceed its capacity "
                      "%u",
                      v->num, r, what, j, (unsigned long long)mb->tokens, mb->cap);
    vl__check_cap(v, r, what, j, mb);
}

static void check_rank(vl_vctx *v, uint32_t r, const vl_rank *rk, uint32_t nmb0)
{
    const vl_plan *p = v->p;

    if (rk->nmb != nmb0 && !(p->caps & VL_CAP_UNEVEN_MBS))
        vl__violation(v->rep, 4,
                      "iteration %zu: rank %u has %u micro-batches, rank 0 has "
                      "%u, and the plan does not declare uneven counts (uneven_mbs)",
                      v->num, r, rk->nmb, nmb0);
    for (uint32_t j = 0; j < rk->nmb; j++) {
        const vl_mb *mb = &p->mbs[rk->mb0 + j];
        check_pack(v, r, false, j, mb, vl_plan_mb_primary(p, rk, mb));
    }
    for (uint32_t j = 0; j < rk->nbwd; j++)
        check_pack(v, r, true, j, vl_plan_bwd(p, rk, j), false);
}

/* The iteration's tokens, loss tokens and samples started are its primary forward
 * copies' (the builder keeps them; a plan edited in memory may not). */
static void check_totals(vl_vctx *v, size_t it)
{
    const vl_plan *p = v->p;
    const vl_iter *in = &p->iters[it];
    uint64_t tokens = 0, loss = 0, samples = 0;

    for (uint64_t r = in->rank0; r < in->rank0 + in->nranks; r++)
        for (uint32_t j = 0; j < p->ranks[r].nmb; j++) {
            const vl_mb *mb = &p->mbs[p->ranks[r].mb0 + j];
            const vl_seg *sg = vl_plan_mb_segs(p, mb);
            if (!vl_plan_mb_primary(p, &p->ranks[r], mb))
                continue;
            for (uint32_t k = 0; k < mb->nseg; k++) {
                tokens += sg[k].len;
                loss += vl_plan_seg_loss(p, &sg[k]);
                samples += sg[k].off == 0;
            }
        }
    if (tokens != in->tokens || loss != in->loss || samples != in->samples)
        vl__violation(v->rep, 2,
                      "iteration %zu: totals of %llu tokens, %llu loss tokens, %llu "
                      "samples, but its micro-batches hold %llu, %llu, %llu",
                      v->num, (unsigned long long)in->tokens, (unsigned long long)in->loss,
                      (unsigned long long)in->samples, (unsigned long long)tokens,
                      (unsigned long long)loss, (unsigned long long)samples);
}

/* Epochs never go back nor skip one, each iteration has ranks, and the packs add up. */
static void check_iter(vl_vctx *v, size_t it)
{
    const vl_plan *p = v->p;
    const vl_iter *in = &p->iters[it];
    uint32_t next = v->any ? v->last_epoch + 1 : 0; /* the latest epoch it may be in */

    if (p->epochs > 0 && in->epoch >= p->epochs)
        vl__violation(v->rep, 5, "iteration %zu: epoch %u, but the plan has %u epochs", v->num,
                      in->epoch, p->epochs);
    if (v->any && in->epoch < v->last_epoch)
        vl__violation(v->rep, 5, "iteration %zu: epoch %u follows epoch %u", v->num, in->epoch,
                      v->last_epoch);
    else if (in->epoch > next && (p->epochs == 0 || in->epoch < p->epochs))
        vl__violation(v->rep, 5, "iteration %zu: epoch %u, but epoch %u has no iterations",
                      v->num, in->epoch, next);
    check_totals(v, it);
    if (in->nranks == 0)
        vl__violation(v->rep, 5, "iteration %zu has no ranks", v->num);
    for (uint32_t r = 0; r < in->nranks; r++)
        check_rank(v, r, &p->ranks[in->rank0 + r], p->ranks[in->rank0].nmb);
    v->any = true;
    v->last_epoch = in->epoch;
    if (in->epoch + 1 > v->epochs_seen)
        v->epochs_seen = in->epoch + 1;
}

/* A dropped range is a real range: an empty one hides a mistake. */
static void check_drops(const vl_vctx *v)
{
    for (size_t i = 0; i < v->p->ndrops; i++)
        if (v->p->drops[i].len == 0)
            vl__violation(v->rep, 2, "dropped range %zu (sample %u, offset %u) is empty", i,
                          v->p->drops[i].sample, v->p->drops[i].off);
}

/* ---- I5: what a plan file claimed, and what its reader found ---- */

static void check_footer_claims(const vl_vctx *v, const vl_plan_file *f)
{
    vl_verify_report *rep = v->rep;

    if (!f->has_footer && f->by_vlplan)
        vl__violation(rep, 5, "no footer: the plan file is truncated or incomplete");
    if (f->has_footer && f->by_vlplan) { /* vlplan writes every claim; none may go */
        const char *lacks = f->iterations < 0 ? "iterations"
                            : f->samples < 0  ? "samples"
                            : f->tokens < 0   ? "tokens"
                            : f->sha < 0      ? "sha256"
                                              : NULL;
        if (lacks)
            vl__violation(rep, 5, "the footer lacks \"%s\"", lacks);
    }
    if (f->sha == 0)
        vl__violation(rep, 5,
                      "the footer's sha256 does not match the content (file modified "
                      "or corrupt)");
    if (f->iterations >= 0 && (uint64_t)f->iterations != v->iterations)
        vl__violation(rep, 5, "the footer says %lld iterations, the file has %llu",
                      (long long)f->iterations, (unsigned long long)v->iterations);
    if (f->samples >= 0 && (uint64_t)f->samples != v->samples)
        vl__violation(rep, 5, "the footer says %lld samples, the iterations start %llu",
                      (long long)f->samples, (unsigned long long)v->samples);
    if (f->tokens >= 0 && (uint64_t)f->tokens != v->tokens)
        vl__violation(rep, 5, "the footer says %lld tokens, the iterations hold %llu",
                      (long long)f->tokens, (unsigned long long)v->tokens);
    if (f->header_iterations >= 0 && (uint64_t)f->header_iterations != v->iterations)
        vl__violation(rep, 5, "the header says %lld iterations, the file has %llu",
                      (long long)f->header_iterations, (unsigned long long)v->iterations);
}

static void check_file(const vl_vctx *v, const vl_plan_file *f)
{
    vl_verify_report *rep = v->rep;

    check_footer_claims(v, f);
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
static vl_status check_memory(vl_vctx *v, size_t it, vl_err *err)
{
    /* the default schedule, memory alone: the times would cost the most and decide
     * nothing here */
    static const vl_sim_opts mem = {.sched = VL_SCHED_1F1B, .memory_only = true};
    vl_sim_iter_result r;
    vl_err simerr = {0};
    vl_status st = vl_sim_iter(v->p, it, v->cost, &mem, &r, v->sim, NULL, &simerr);

    /* what simulate refuses -- a malformed schedule or degree, a deadlock between
     * ranks -- is a violation, unless the other passes already reported this iteration */
    if (st == VL_EDATA) {
        if (v->rep->violations == v->iter_violations)
            vl__violation(v->rep, 5, "iteration %zu: simulate refuses it: %s", v->num,
                          simerr.msg);
        return VL_OK;
    }
    if (st != VL_OK)
        return vl_seterr(err, st, "%s", simerr.msg);
    if (!r.oom)
        return VL_OK;
    double usable = vl_cost_mem_capacity(v->cost) / GIB;
    if (v->rep->oom_iters++ == 0)
        v->rep->first_oom = (vl_verify_oom){.iter = v->num,
                                            .rank = r.peak_rank,
                                            .stage = r.peak_stage,
                                            .gib = r.peak_mem_gib,
                                            .usable_gib = usable};
    size_t before = v->rep->nmsgs;
    vl__violation(v->rep, 3,
                  "iteration %zu, rank %u, stage %u: modelled memory %.2f GiB "
                  "exceeds the usable %.2f GiB",
                  v->num, r.peak_rank, r.peak_stage, r.peak_mem_gib, usable);
    if (v->rep->nmsgs > before)
        v->rep->oom_msgs |= (uint64_t)1 << before;
    return VL_OK;
}

/* ---- the verifier ---- */

vl_status vl_verifier_new(vl_verifier **out, const vl_manifest *m, const vl_cost *cost,
                          const vl_rules_source *rules, vl_verify_report *rep, vl_err *err)
{
    vl_vctx *v = calloc(1, sizeof *v);
    vl_status st = v ? VL_OK : vl_seterr(err, VL_ENOMEM, "out of memory verifying the plan");

    *out = NULL;
    if (st != VL_OK)
        return st;
    memset(rep, 0, sizeof *rep);
    v->rep = rep;
    v->cost = cost;
    v->src = rules;
    if (m)
        st = vl__cover_new(&v->cover, m, err);
    if (st == VL_OK && cost)
        st = vl_sim_scratch_new(&v->sim, err);
    if (st != VL_OK) {
        vl_verifier_free(v);
        return st;
    }
    *out = v;
    return VL_OK;
}

void vl_verifier_free(vl_verifier *v)
{
    if (!v)
        return;
    vl__cover_free(v->cover);
    vl_sim_scratch_free(v->sim);
    free(v->gpus);
    free(v->dps);
    free(v->sort_tmp);
    free(v->fpos);
    free(v->bpos);
    free(v->iv);
    free(v);
}

void vl_verifier_violation(vl_verifier *v, const char *msg)
{
    vl__violation(v->rep, 5, "%s", msg);
}

vl_status vl_verifier_iter(vl_verifier *v, const vl_plan *p, size_t it, vl_err *err)
{
    vl_status st;

    v->p = p;
    v->num = (size_t)(p->iter_base + it);
    v->iterations++;
    v->iter_violations = v->rep->violations;
    if ((st = vl__limits_init(v, p, err)) != VL_OK)
        return st;
    check_iter(v, it);
    if ((st = vl__layout_iter(v, it, err)) != VL_OK ||
        (st = vl__order_iter(v, it, err)) != VL_OK)
        return st;
    if (v->cover && p->m && (st = vl__cover_iter(v->cover, p, it, v->rep, err)) != VL_OK)
        return st;
    return v->cost ? check_memory(v, it, err) : VL_OK;
}

/* The length of a piece under training.oversize=split, 0 without a config. */
static uint32_t piece_len(const vl_vctx *v)
{
    return v->cost ? v->cost->cfg->training.max_seq_len : 0;
}

vl_status vl_verifier_finish(vl_verifier *v, const vl_plan *p, const vl_plan_file *file,
                             vl_err *err)
{
    vl_verify_report *rep = v->rep;
    vl_status st;

    v->p = p;
    v->declared = !file || file->by_vlplan;
    if (file)
        check_file(v, file);
    check_drops(v);
    if ((st = vl__config_finish(v, err)) != VL_OK)
        return st;
    vl__layout_finish(v);
    if (v->cover && p->m &&
        (st = vl__cover_finish(v->cover, p, v->rules.slices, piece_len(v), rep, err)) != VL_OK)
        return st;
    if (rep->violations == 0)
        return VL_OK;
    return vl_seterr(err, VL_EVERIFY, "the plan violates %zu invariant(s); first: %s",
                     rep->violations, rep->nmsgs ? rep->msgs[0] : "?");
}

/* A plan held whole: every iteration, then the end. */
static vl_status verify_whole(const vl_plan *p, const vl_plan_file *file, const vl_cost *cost,
                              const vl_rules_source *rules, vl_verify_report *rep, vl_err *err)
{
    vl_verifier *v = NULL;
    vl_status st = vl_verifier_new(&v, p->m, cost, rules, rep, err);

    for (size_t it = 0; st == VL_OK && it < p->niters; it++)
        st = vl_verifier_iter(v, p, it, err);
    if (st == VL_OK)
        st = vl_verifier_finish(v, p, file, err);
    vl_verifier_free(v);
    return st;
}

vl_status vl_plan_verify(const vl_plan *p, const vl_cost *cost, const vl_rules_source *rules,
                         vl_verify_report *rep, vl_err *err)
{
    return verify_whole(p, NULL, cost, rules, rep, err);
}

vl_status vl_plan_verify_read(const vl_plan *p, const vl_plan_file *file, const vl_cost *cost,
                              const vl_rules_source *rules, vl_verify_report *rep, vl_err *err)
{
    return verify_whole(p, file, cost, rules, rep, err);
}
