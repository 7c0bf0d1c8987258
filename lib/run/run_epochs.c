/* lib/run/run_epochs.c -- the epoch loop of a batch-by-batch strategy (vlplan_strategy.h):
 * per epoch the seeded order and its cut into global batches, made once each; the
 * rank-cover check; resolve on the first epoch; plan_batch on every batch.
 *
 * The header announces the iteration count before the first iteration.  By sample count
 * (training.global_batch) that is epochs x ceil(n / global_batch), whatever the order,
 * so each epoch is shuffled when its turn comes into one buffer.  By token budget
 * (training.global_tokens) the count is each epoch's cut, so every epoch is shuffled and
 * cut ahead and its order kept until it is planned: epochs x n sample indices at the
 * start (40 MB an epoch at 10M samples) instead of a second shuffle of each. */
#include "vlplan_strategy.h"

#include <stdlib.h>
#include <string.h>

typedef struct epoch_run {
    const vl_strategy *s;
    void *state;
    const vl_job *job;
    uint32_t nepochs;
    bool ahead;       /* every epoch cut before the first is planned */
    uint32_t **order; /* [nepochs] each epoch's order while it is held */
    vl_batches *cut;  /* [nepochs] its global batches */
} epoch_run;

/* Epoch e's order (in the buffer the last epoch handed on, or a new one) and its cut. */
static vl_status cut_epoch(epoch_run *r, uint32_t e, vl_err *err)
{
    const vl_selection *sel = r->job->sel;

    if (!r->order[e] && !(r->order[e] = malloc((sel->n ? sel->n : 1) * sizeof **r->order)))
        return vl_seterr(err, VL_ENOMEM, "out of memory ordering %zu samples", sel->n);
    vl_epoch_order(sel, r->job->seed, e, r->order[e]);
    return vl_make_batches(&r->cut[e], r->order[e], sel->n, sel->len, &r->job->cfg->training,
                           err);
}

/* The iterations of every epoch, one a global batch; by token budget, every epoch cut. */
static vl_status count_iterations(epoch_run *r, uint64_t *count, vl_err *err)
{
    const vl_training_cfg *t = &r->job->cfg->training;
    size_t n = r->job->sel->n;
    vl_status st = VL_OK;

    *count = 0;
    if (!r->ahead) {
        *count = (uint64_t)r->nepochs * ((n + t->global_batch - 1) / t->global_batch);
        return VL_OK;
    }
    for (uint32_t e = 0; e < r->nepochs && st == VL_OK; e++)
        if ((st = cut_epoch(r, e, err)) == VL_OK)
            *count += r->cut[e].n;
    return st;
}

static vl_status check_cover(const epoch_run *r, uint32_t e, vl_err *err)
{
    vl_cover c;

    if (!r->s->cover)
        return VL_OK;
    c = r->s->cover(r->state);
    if (c.ranks == 0)
        return VL_OK;
    return vl_batches_cover_ranks(&r->cut[e], r->order[e], r->job->sel->len, c.piece, c.share,
                                  c.ranks, c.who ? c.who : "", err);
}

/* Epoch e: cut (unless ahead), checked, resolved when first, planned batch by batch;
 * then its cut is freed and its order buffer handed to the next epoch or freed. */
static vl_status plan_epoch(epoch_run *r, uint32_t e, vl_plan *out, vl_err *err)
{
    const vl_batches *b = &r->cut[e];
    vl_status st = r->ahead ? VL_OK : cut_epoch(r, e, err);

    if (st == VL_OK)
        st = check_cover(r, e, err);
    if (st == VL_OK && e == 0 && r->s->resolve)
        st = r->s->resolve(r->state, &(vl_epoch_cut){e, r->order[e], b}, err);
    for (size_t i = 0; i < b->n && st == VL_OK; i++) {
        vl_batch one = {r->order[e] + b->start[i], b->start[i + 1] - b->start[i], e, i};
        st = r->s->plan_batch(r->state, &one, out, err);
    }
    vl_batches_free(&r->cut[e]);
    if (!r->ahead && e + 1 < r->nepochs)
        r->order[e + 1] = r->order[e];
    else
        free(r->order[e]);
    r->order[e] = NULL;
    return st;
}

static void epoch_run_free(epoch_run *r)
{
    for (uint32_t e = 0; r->cut && e < r->nepochs; e++) {
        vl_batches_free(&r->cut[e]);
        free(r->order[e]);
    }
    free(r->cut);
    free(r->order);
}

static vl_status run_epochs(epoch_run *r, vl_plan *out, vl_err *err)
{
    uint64_t count = 0;
    vl_status st = count_iterations(r, &count, err);

    if (st != VL_OK)
        return st;
    vl_job_iterations(r->job, count);
    for (uint32_t e = 0; e < r->nepochs && st == VL_OK; e++)
        st = plan_epoch(r, e, out, err);
    return st;
}

static vl_status plan_by_batch(const vl_strategy *s, const void *opts, const vl_job *job,
                               vl_plan *out, vl_err *err)
{
    const vl_training_cfg *t = &job->cfg->training;
    epoch_run r = {.s = s,
                   .job = job,
                   .nepochs = t->epochs > 0 ? (uint32_t)t->epochs : 0,
                   .ahead = t->global_batch == 0};
    size_t k = r.nepochs ? r.nepochs : 1;
    vl_status st = VL_OK;

    r.state = calloc(1, s->state_size ? s->state_size : 1);
    r.order = calloc(k, sizeof *r.order);
    r.cut = calloc(k, sizeof *r.cut);
    if (!r.state || !r.order || !r.cut)
        st = vl_seterr(err, VL_ENOMEM, "%s: out of memory", s->name);
    else if (s->open)
        st = s->open(r.state, opts, job, out, err);
    bool opened = r.state && r.order && r.cut;
    if (st == VL_OK)
        st = run_epochs(&r, out, err);
    if (opened && s->close)
        s->close(r.state, st == VL_OK);
    epoch_run_free(&r);
    free(r.state);
    return st;
}

vl_status vl_strategy_plan(const vl_strategy *s, const void *opts, const vl_job *job,
                           vl_plan *out, vl_err *err)
{
    if (s->plan_batch && !(s->epoch_scope && s->epoch_scope(job->cfg)))
        return plan_by_batch(s, opts, job, out, err);
    return s->plan(opts, job, out, err);
}
