/* lib/plan/plan.c -- the in-memory plan (plan.h): flat arrays grown geometrically and the
 * builder every strategy calls.  Micro-batch token totals are kept as segments arrive,
 * so writers, metrics and the verifier never re-sum what the builder already knows. */
#include "plan.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grow.h"

/* Room in *arr (n used of *cap) for one more element: one comparison in the common
 * case; vl_grow when full, without a message, since the caller's names the element. */
static bool room(void *arr, size_t n, size_t *cap, size_t elsize)
{
    return n < *cap || vl_grow(arr, cap, n + 1, elsize, NULL) == VL_OK;
}

static vl_status oom(vl_err *err, const char *what, size_t n)
{
    return vl_seterr(err, VL_ENOMEM, "out of memory: plan with %zu %s", n + 1, what);
}

/* A builder call outside its enclosing element is a strategy bug, not bad data. */
static vl_status misuse(vl_err *err, const char *call, const char *outside)
{
    return vl_seterr(err, VL_EINTERNAL, "plan builder: %s called outside %s", call, outside);
}

vl_status vl_plan_init(vl_plan *p, vl_manifest *m, const char *strategy, uint64_t seed,
                       vl_err *err)
{
    (void)err; /* nothing is allocated until the first element arrives */
    memset(p, 0, sizeof *p);
    p->m = m;
    snprintf(p->strategy, sizeof p->strategy, "%s", strategy ? strategy : "");
    p->seed = seed;
    p->epochs = 1;
    return VL_OK;
}

void vl_plan_free(vl_plan *p)
{
    if (!p)
        return;
    free(p->params_json);
    free(p->config_json);
    free(p->segs);
    free(p->mbs);
    free(p->ranks);
    free(p->iters);
    free(p->ops);
    free(p->drops);
    memset(p, 0, sizeof *p);
}

vl_status vl_plan_iter_begin(vl_plan *p, uint32_t epoch, vl_err *err)
{
    if (!room(&p->iters, p->niters, &p->iters_cap, sizeof *p->iters))
        return oom(err, "iterations", p->niters);
    p->iters[p->niters++] = (vl_iter){.rank0 = p->nranks, .nranks = 0, .epoch = epoch};
    return VL_OK;
}

vl_status vl_plan_rank_begin(vl_plan *p, int dp, const vl_par *par, vl_err *err)
{
    if (p->niters == 0)
        return misuse(err, "rank_begin", "an iteration");
    if (!room(&p->ranks, p->nranks, &p->ranks_cap, sizeof *p->ranks))
        return oom(err, "ranks", p->nranks);
    p->ranks[p->nranks++] = (vl_rank){.mb0 = p->nmbs, .nmb = 0, .dp = dp, .par = *par,
                                      .group = -1, .k = 0, .op0 = p->nops, .nop = 0};
    p->iters[p->niters - 1].nranks++;
    return VL_OK;
}

vl_status vl_plan_mb_begin(vl_plan *p, uint32_t cap, vl_err *err)
{
    if (p->nranks == 0)
        return misuse(err, "mb_begin", "a rank");
    if (!room(&p->mbs, p->nmbs, &p->mbs_cap, sizeof *p->mbs))
        return oom(err, "micro-batches", p->nmbs);
    p->mbs[p->nmbs++] = (vl_mb){.seg0 = p->nsegs, .nseg = 0, .cap = cap, .tokens = 0};
    p->ranks[p->nranks - 1].nmb++;
    return VL_OK;
}

vl_status vl_plan_seg(vl_plan *p, uint32_t sample, uint32_t off, uint32_t len, vl_err *err)
{
    vl_mb *mb;

    if (p->nmbs == 0)
        return misuse(err, "seg", "a micro-batch");
    if (!room(&p->segs, p->nsegs, &p->segs_cap, sizeof *p->segs))
        return oom(err, "segments", p->nsegs);
    p->segs[p->nsegs++] = (vl_seg){.sample = sample, .off = off, .len = len};
    mb = &p->mbs[p->nmbs - 1];
    mb->nseg++;
    mb->tokens += len;
    return VL_OK;
}

vl_status vl_plan_op(vl_plan *p, uint32_t mb, vl_op_kind kind, vl_err *err)
{
    if (p->nranks == 0)
        return misuse(err, "op", "a rank");
    if (!room(&p->ops, p->nops, &p->ops_cap, sizeof *p->ops))
        return oom(err, "schedule operations", p->nops);
    p->ops[p->nops++] = (vl_op){.mb = mb, .kind = (uint8_t)kind};
    p->ranks[p->nranks - 1].nop++;
    return VL_OK;
}

vl_status vl_plan_drop(vl_plan *p, uint32_t sample, uint32_t off, uint32_t len,
                       vl_drop_reason reason, vl_err *err)
{
    if (!room(&p->drops, p->ndrops, &p->drops_cap, sizeof *p->drops))
        return oom(err, "dropped ranges", p->ndrops);
    p->drops[p->ndrops++] = (vl_drop){.sample = sample, .off = off, .len = len,
                                      .reason = (uint8_t)reason};
    return VL_OK;
}

vl_status vl_plan_add_drops(vl_plan *p, const vl_drop *d, size_t n, vl_err *err)
{
    vl_status st = VL_OK;

    for (size_t i = 0; i < n && st == VL_OK; i++)
        st = vl_plan_drop(p, d[i].sample, d[i].off, d[i].len, (vl_drop_reason)d[i].reason, err);
    return st;
}

void vl_plan_rank_group(vl_plan *p, int32_t group)
{
    if (p->nranks > 0)
        p->ranks[p->nranks - 1].group = group;
}

void vl_plan_rank_k(vl_plan *p, uint32_t k)
{
    if (p->nranks > 0)
        p->ranks[p->nranks - 1].k = k;
}

void vl_plan_set_meta(vl_plan *p, uint32_t epochs, char *params_json, char *config_json)
{
    p->epochs = epochs;
    free(p->params_json);
    free(p->config_json);
    p->params_json = params_json;
    p->config_json = config_json;
}

uint32_t vl_plan_seg_loss(const vl_plan *p, const vl_seg *s)
{
    uint64_t L, lo, a, b;

    if (!p->m)
        return s->len; /* no manifest: every token counts, the manifest default */
    if (s->sample >= p->m->n)
        return 0;      /* a phantom sample carries no loss the trainer knows of */
    L = p->m->len[s->sample];
    lo = vl_manifest_loss(p->m, s->sample);
    lo = lo < L ? L - lo : 0;
    a = s->off > lo ? s->off : lo;
    b = (uint64_t)s->off + s->len;
    if (b > L)
        b = L;
    return b > a ? (uint32_t)(b - a) : 0;
}

void vl_plan_iter_totals(const vl_plan *p, size_t it, uint64_t *tokens, uint64_t *loss,
                         uint64_t *samples)
{
    const vl_iter *in = &p->iters[it];
    uint64_t t = 0, l = 0, s = 0;

    for (uint64_t r = in->rank0; r < in->rank0 + in->nranks; r++) {
        const vl_rank *rk = &p->ranks[r];
        for (uint64_t b = rk->mb0; b < rk->mb0 + rk->nmb; b++) {
            const vl_mb *mb = &p->mbs[b];
            const vl_seg *sg = vl_plan_mb_segs(p, mb);
            t += mb->tokens;
            for (uint32_t k = 0; k < mb->nseg; k++) {
                l += vl_plan_seg_loss(p, &sg[k]);
                s += sg[k].off == 0;
            }
        }
    }
    if (tokens)
        *tokens = t;
    if (loss)
        *loss = l;
    if (samples)
        *samples = s;
}
