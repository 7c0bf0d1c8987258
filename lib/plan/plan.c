/* lib/plan/plan.c -- the in-memory plan (plan.h): flat arrays grown geometrically and the
 * builder every strategy calls.  Micro-batch token totals are kept as segments arrive,
 * so writers, metrics and the verifier never re-sum what the builder already knows.
 * Optional vocabulary costs nothing until used: the CP array is created by the first
 * local segment, GPU lists and share lists by the first call that gives one. */
#include "plan.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grow.h"

static const char *const CAP_NAMES[VL_NCAPS] = {
    "uneven_mbs", "bwd_packs", "seg_cp", "schedule", "shared_packs", "world_optimizer",
};

const char *vl_cap_name(unsigned i)
{
    return i < VL_NCAPS ? CAP_NAMES[i] : NULL;
}

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
    free(p->cps);
    free(p->mbs);
    free(p->ranks);
    free(p->iters);
    free(p->ops);
    free(p->gpus);
    free(p->shares);
    free(p->members);
    free(p->drops);
    memset(p, 0, sizeof *p);
}

vl_status vl_plan_iter_begin(vl_plan *p, uint32_t epoch, vl_err *err)
{
    vl_status st = vl_plan_flush(p, err);

    if (st != VL_OK)
        return st;
    if (p->progress)
        p->progress(p->progress_ud, p->iter_base + p->niters);
    if (!room(&p->iters, p->niters, &p->iters_cap, sizeof *p->iters))
        return oom(err, "iterations", p->niters);
    p->iters[p->niters++] =
        (vl_iter){.rank0 = p->nranks, .nranks = 0, .epoch = epoch, .candidate = -1};
    return VL_OK;
}

vl_status vl_plan_rank_begin(vl_plan *p, int dp, const vl_par *par, vl_err *err)
{
    if (p->niters == 0)
        return misuse(err, "rank_begin", "an iteration");
    if (!room(&p->ranks, p->nranks, &p->ranks_cap, sizeof *p->ranks))
        return oom(err, "ranks", p->nranks);
    p->ranks[p->nranks++] = (vl_rank){.mb0 = p->nmbs,
                                      .nmb = 0,
                                      .nbwd = 0,
                                      .dp = dp,
                                      .par = *par,
                                      .group = -1,
                                      .k = 0,
                                      .op0 = p->nops,
                                      .nop = 0,
                                      .gpu0 = VL_GPUS_DEFAULT};
    p->iters[p->niters - 1].nranks++;
    return VL_OK;
}

static vl_status pack_begin(vl_plan *p, uint32_t cap, bool bwd, vl_err *err)
{
    vl_rank *rk;

    if (p->nranks == 0)
        return misuse(err, bwd ? "bwd_begin" : "mb_begin", "a rank");
    rk = &p->ranks[p->nranks - 1];
    if (!bwd && rk->nbwd > 0)
        return misuse(err, "mb_begin", "the forward packs (a backward pack came first)");
    if (!room(&p->mbs, p->nmbs, &p->mbs_cap, sizeof *p->mbs))
        return oom(err, "micro-batches", p->nmbs);
    /* zeroed first: a struct assignment may leave its tail padding as it was, and plans
     * are compared and hashed byte for byte */
    memset(&p->mbs[p->nmbs], 0, sizeof *p->mbs);
    p->mbs[p->nmbs].seg0 = p->nsegs;
    p->mbs[p->nmbs++].cap = cap;
    if (bwd)
        rk->nbwd++;
    else
        rk->nmb++;
    return VL_OK;
}

vl_status vl_plan_mb_begin(vl_plan *p, uint32_t cap, vl_err *err)
{
    return pack_begin(p, cap, false, err);
}

vl_status vl_plan_bwd_begin(vl_plan *p, uint32_t cap, vl_err *err)
{
    return pack_begin(p, cap, true, err);
}

/* The CP array, created on the first local segment with every earlier one sharded. */
static bool cps_room(vl_plan *p, size_t n)
{
    size_t had = p->cps ? p->cps_cap : 0;

    if (n <= had)
        return true;
    if (vl_grow(&p->cps, &p->cps_cap, n, sizeof *p->cps, NULL) != VL_OK)
        return false;
    for (size_t i = had; i < p->cps_cap; i++)
        p->cps[i] = VL_CP_SHARDED;
    return true;
}

/* The pack being built counts in its iteration's totals: a forward pack (backward
 * packs repeat forward tokens), and of a shared pack only its first member's copy. */
static bool counted(const vl_plan *p)
{
    const vl_rank *rk = &p->ranks[p->nranks - 1];
    const vl_mb *mb = &p->mbs[p->nmbs - 1];

    return rk->nbwd == 0 && (!mb->share || vl_plan_mb_primary(p, rk, mb));
}

static void add_totals(vl_plan *p, const vl_seg *s, int sign)
{
    vl_iter *in = &p->iters[p->niters - 1];
    uint64_t loss = vl_plan_seg_loss(p, s);

    in->tokens += sign > 0 ? s->len : -(uint64_t)s->len;
    in->loss += sign > 0 ? loss : -loss;
    in->samples += sign > 0 ? (s->off == 0) : -(uint64_t)(s->off == 0);
}

vl_status vl_plan_seg_cp(vl_plan *p, uint32_t sample, uint32_t off, uint32_t len, int cp,
                         vl_err *err)
{
    vl_mb *mb;

    if (p->nmbs == 0)
        return misuse(err, "seg", "a micro-batch");
    if (cp < VL_CP_SHARDED || cp > INT16_MAX)
        return vl_seterr(err, VL_EINTERNAL, "plan builder: CP coordinate %d out of range", cp);
    if (!room(&p->segs, p->nsegs, &p->segs_cap, sizeof *p->segs) ||
        ((p->cps || cp != VL_CP_SHARDED) && !cps_room(p, p->nsegs + 1)))
        return oom(err, "segments", p->nsegs);
    if (p->cps)
        p->cps[p->nsegs] = (int16_t)cp;
    p->segs[p->nsegs++] = (vl_seg){.sample = sample, .off = off, .len = len};
    mb = &p->mbs[p->nmbs - 1];
    mb->nseg++;
    mb->tokens += len;
    if (counted(p))
        add_totals(p, &p->segs[p->nsegs - 1], +1);
    return VL_OK;
}

vl_status vl_plan_seg(vl_plan *p, uint32_t sample, uint32_t off, uint32_t len, vl_err *err)
{
    return vl_plan_seg_cp(p, sample, off, len, VL_CP_SHARDED, err);
}

vl_status vl_plan_rank_gpus(vl_plan *p, const uint32_t *gpus, size_t n, vl_err *err)
{
    vl_rank *rk;

    if (p->nranks == 0)
        return misuse(err, "rank_gpus", "a rank");
    rk = &p->ranks[p->nranks - 1];
    if (n != vl_plan_rank_size(rk))
        return vl_seterr(err, VL_EINTERNAL,
                         "plan builder: %zu GPUs for a rank of tp %d x sp "
                         "%d x pp %d",
                         n, rk->par.tp, rk->par.sp, rk->par.pp);
    if (vl_grow(&p->gpus, &p->gpus_cap, p->ngpus + n, sizeof *p->gpus, NULL) != VL_OK)
        return oom(err, "GPU placements", p->ngpus + n - 1);
    memcpy(p->gpus + p->ngpus, gpus, n * sizeof *gpus);
    rk->gpu0 = p->ngpus;
    p->ngpus += n;
    return VL_OK;
}

vl_status vl_plan_mb_share(vl_plan *p, const int32_t *dp, size_t n, vl_err *err)
{
    if (p->nmbs == 0)
        return misuse(err, "mb_share", "a micro-batch");
    if (n < 2 || n > UINT32_MAX)
        return vl_seterr(err, VL_EINTERNAL,
                         "plan builder: a shared pack needs 2 or more "
                         "members, got %zu",
                         n);
    if (!room(&p->shares, p->nshares, &p->shares_cap, sizeof *p->shares) ||
        vl_grow(&p->members, &p->members_cap, p->nmembers + n, sizeof *p->members, NULL))
        return oom(err, "shared packs", p->nshares);
    bool was = counted(p);
    vl_mb *mb = &p->mbs[p->nmbs - 1];
    memcpy(p->members + p->nmembers, dp, n * sizeof *dp);
    p->shares[p->nshares++] = (vl_share){.m0 = p->nmembers, .n = (uint32_t)n};
    p->nmembers += n;
    mb->share = (uint32_t)p->nshares;
    if (was && !counted(p)) /* another member's copy is the one counted */
        for (uint32_t k = 0; k < mb->nseg; k++)
            add_totals(p, &p->segs[mb->seg0 + k], -1);
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
    p->drops[p->ndrops++] =
        (vl_drop){.sample = sample, .off = off, .len = len, .reason = (uint8_t)reason};
    return VL_OK;
}

vl_status vl_plan_add_drops(vl_plan *p, const vl_drop *d, size_t n, vl_err *err)
{
    vl_status st = VL_OK;

    for (size_t i = 0; i < n && st == VL_OK; i++)
        st =
            vl_plan_drop(p, d[i].sample, d[i].off, d[i].len, (vl_drop_reason)d[i].reason, err);
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

void vl_plan_clear_iters(vl_plan *p, uint64_t iter_base)
{
    p->nsegs = p->nmbs = p->nranks = p->niters = p->nops = 0;
    p->ngpus = p->nshares = p->nmembers = 0;
    p->iter_base = iter_base;
}

#define SWAP(T, x, y)                                                                         \
    do {                                                                                      \
        T t_ = (x);                                                                           \
        (x) = (y);                                                                            \
        (y) = t_;                                                                             \
    } while (0)
void vl_plan_swap_iters(vl_plan *a, vl_plan *b)
{
    SWAP(vl_seg *, a->segs, b->segs);
    SWAP(size_t, a->nsegs, b->nsegs);
    SWAP(size_t, a->segs_cap, b->segs_cap);
    SWAP(int16_t *, a->cps, b->cps);
    SWAP(size_t, a->cps_cap, b->cps_cap);
    SWAP(vl_mb *, a->mbs, b->mbs);
    SWAP(size_t, a->nmbs, b->nmbs);
    SWAP(size_t, a->mbs_cap, b->mbs_cap);
    SWAP(vl_rank *, a->ranks, b->ranks);
    SWAP(size_t, a->nranks, b->nranks);
    SWAP(size_t, a->ranks_cap, b->ranks_cap);
    SWAP(vl_iter *, a->iters, b->iters);
    SWAP(size_t, a->niters, b->niters);
    SWAP(size_t, a->iters_cap, b->iters_cap);
    SWAP(vl_op *, a->ops, b->ops);
    SWAP(size_t, a->nops, b->nops);
    SWAP(size_t, a->ops_cap, b->ops_cap);
    SWAP(uint32_t *, a->gpus, b->gpus);
    SWAP(size_t, a->ngpus, b->ngpus);
    SWAP(size_t, a->gpus_cap, b->gpus_cap);
    SWAP(vl_share *, a->shares, b->shares);
    SWAP(size_t, a->nshares, b->nshares);
    SWAP(size_t, a->shares_cap, b->shares_cap);
    SWAP(int32_t *, a->members, b->members);
    SWAP(size_t, a->nmembers, b->nmembers);
    SWAP(size_t, a->members_cap, b->members_cap);
    SWAP(uint64_t, a->iter_base, b->iter_base);
}
#undef SWAP

void vl_plan_set_progress(vl_plan *p, void (*fn)(void *ud, uint64_t begun), void *ud)
{
    p->progress = fn;
    p->progress_ud = ud;
}

void vl_plan_set_flush(vl_plan *p, vl_plan_flush_fn fn, void *ud)
{
    p->flush = fn;
    p->flush_ud = ud;
}

vl_status vl_plan_flush(vl_plan *p, vl_err *err)
{
    vl_status st;

    if (!p->flush || p->niters == 0)
        return VL_OK;
    if ((st = p->flush(p->flush_ud, p, err)) != VL_OK)
        return st;
    vl_plan_clear_iters(p, p->iter_base + p->niters);
    return VL_OK;
}

void vl_plan_iter_candidate(vl_plan *p, int32_t candidate)
{
    if (p->niters > 0)
        p->iters[p->niters - 1].candidate = candidate;
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
        return 0; /* a phantom sample carries no loss the trainer knows of */
    if (!p->m->loss)
        return s->len; /* every token counts; not reading the length spares a cache miss
                        * per segment (a segment past its sample is verify's to report) */
    L = p->m->len[s->sample];
    lo = vl_manifest_loss(p->m, s->sample);
    lo = lo < L ? L - lo : 0;
    a = s->off > lo ? s->off : lo;
    b = (uint64_t)s->off + s->len;
    if (b > L)
        b = L;
    return b > a ? (uint32_t)(b - a) : 0;
}

const int32_t *vl_plan_mb_members(const vl_plan *p, const vl_mb *mb, uint32_t *n)
{
    const vl_share *sh;

    if (mb->share == 0 || mb->share > p->nshares) {
        *n = 0;
        return NULL;
    }
    sh = &p->shares[mb->share - 1];
    *n = sh->n;
    return p->members + sh->m0;
}

bool vl_plan_mb_primary(const vl_plan *p, const vl_rank *rk, const vl_mb *mb)
{
    uint32_t n;
    const int32_t *mem = vl_plan_mb_members(p, mb, &n);

    return n == 0 || mem[0] == rk->dp;
}

/* Every rank of iteration `in` has the layout of its first. */
static bool uniform(const vl_plan *p, const vl_iter *in)
{
    const vl_par *a = &p->ranks[in->rank0].par;

    for (uint32_t r = 1; r < in->nranks; r++) {
        const vl_par *b = &p->ranks[in->rank0 + r].par;
        if (a->tp != b->tp || a->sp != b->sp || a->pp != b->pp)
            return false;
    }
    return true;
}

void vl_gpu_walk_begin(vl_gpu_walk *w, const vl_plan *p, size_t it)
{
    const vl_iter *in = &p->iters[it];

    *w = (vl_gpu_walk){.p = p, .in = in, .r = 0, .base = 0};
    w->uniform = in->nranks == 0 || uniform(p, in);
}

uint32_t vl_gpu_walk_at(const vl_gpu_walk *w, uint32_t k)
{
    const vl_rank *rk = &w->p->ranks[w->in->rank0 + w->r];
    uint64_t inner = (uint64_t)rk->par.tp * (uint64_t)rk->par.sp;

    if (rk->gpu0 != VL_GPUS_DEFAULT)
        return w->p->gpus[rk->gpu0 + k];
    if (!w->uniform || inner == 0)
        return (uint32_t)(w->base + k);
    /* Megatron: t + tp·(c + sp·(d + D·p)), k = t + tp·(c + sp·p) */
    return (uint32_t)(k % inner + inner * (w->r + (uint64_t)w->in->nranks * (k / inner)));
}

void vl_gpu_walk_next(vl_gpu_walk *w)
{
    w->base += vl_plan_rank_size(&w->p->ranks[w->in->rank0 + w->r]);
    w->r++;
}

uint32_t vl_plan_rank_gpu(const vl_plan *p, size_t it, uint32_t r, uint32_t k)
{
    vl_gpu_walk w;

    vl_gpu_walk_begin(&w, p, it);
    if (!w.uniform)
        while (w.r < r)
            vl_gpu_walk_next(&w);
    w.r = r;
    return vl_gpu_walk_at(&w, k);
}

void vl_plan_iter_totals(const vl_plan *p, size_t it, uint64_t *tokens, uint64_t *loss,
                         uint64_t *samples)
{
    const vl_iter *in = &p->iters[it];

    if (tokens)
        *tokens = in->tokens;
    if (loss)
        *loss = in->loss;
    if (samples)
        *samples = in->samples;
}
