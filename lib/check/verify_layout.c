/* lib/check/verify_layout.c -- how a plan places its work (verify.h): the integer fields
 * within the ranges of the field table (lib/plan/planio_fields.c) and, with a config, within
 * what the cluster and model permit, Ulysses CP groups (a rank's sp, a shared pack's
 * members' together) splitting the heads evenly among them (I3); distinct data-parallel
 * indices and GPUs per iteration, within cluster.gpus and, with a config, every one of
 * them (I5); CP coordinates within the rank's sp group (I5); shared packs held
 * identically by every member and only by them (I5); and, for plans that state their
 * capabilities, nothing used that the header does not declare (I5). */
#include "verify_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "planio.h"
#include "sort.h"

/* ---- ranges ---- */

static void check_fields(const vl_vctx *v, vl_pf_level level, const void *elem,
                         const char *where)
{
    for (const vl_pfield *f = vl_plan_fields; f->key; f++) {
        int64_t x;
        if (f->level != level || (f->kind != VL_PF_I32 && f->kind != VL_PF_U32))
            continue;
        if (f->kind == VL_PF_I32)
            x = *(const int32_t *)((const char *)elem + f->off);
        else
            x = *(const uint32_t *)((const char *)elem + f->off);
        if ((f->omit_default && x == f->def) || (x >= f->min && x <= f->max))
            continue;
        vl__violation(v->rep, f->inv, "%s: \"%s\" is %lld, expected %lld..%lld", where, f->key,
                      (long long)x, (long long)f->min, (long long)f->max);
    }
}

/* Degrees the cluster and the model permit. */
static void check_limits(const vl_vctx *v, const vl_rank *rk, const char *where)
{
    const vl_config *cfg = v->cost->cfg;
    int L = cfg->model.layers, pp = rk->par.pp, sp = rk->par.sp, tp = rk->par.tp;

    if (tp < 1 || pp < 1 || sp < 1)
        return; /* reported by check_fields */
    if (vl_plan_rank_size64(rk) > (uint64_t)cfg->cluster.gpus)
        vl__violation(v->rep, 3,
                      "%s: tp %d x sp %d x pp %d needs more than the %d GPUs of the "
                      "cluster",
                      where, tp, sp, pp, cfg->cluster.gpus);
    if (pp > L)
        vl__violation(v->rep, 3, "%s: pp %d exceeds the %d model layers", where, pp, L);
    else if (rk->par.ckpt_layers > L / pp + (L % pp != 0))
        vl__violation(v->rep, 3,
                      "%s: ckpt_layers %d exceeds the %d layers of a pipeline "
                      "stage",
                      where, rk->par.ckpt_layers, L / pp + (L % pp != 0));
    if (cfg->model.heads % tp != 0)
        vl__violation(v->rep, 3, "%s: tp %d does not divide the %d attention heads", where, tp,
                      cfg->model.heads);
    else if (sp > 1 && cfg->training.sp_kind == VL_SP_ULYSSES &&
             (cfg->model.heads / tp) % sp != 0)
        vl__violation(v->rep, 3,
                      "%s: Ulysses sp %d does not divide the %d heads per TP shard "
                      "(%d heads, tp %d)",
                      where, sp, cfg->model.heads / tp, cfg->model.heads, tp);
    /* Ulysses scatters the KV heads over the sp group too (as training.sp requires) */
    if (sp > 1 && cfg->training.sp_kind == VL_SP_ULYSSES && cfg->model.kv_heads % sp != 0)
        vl__violation(v->rep, 3, "%s: Ulysses sp %d does not divide the %d KV heads", where,
                      sp, cfg->model.kv_heads);
}

/* ---- per iteration: dp indices and GPUs ---- */

static vl_status grow_u32(uint32_t **a, size_t *cap, size_t n, vl_err *err)
{
    uint32_t *na;

    if (n <= *cap)
        return VL_OK;
    if (!(na = realloc(*a, n * sizeof *na)))
        return vl_seterr(err, VL_ENOMEM, "out of memory verifying the plan");
    *a = na;
    *cap = n;
    return VL_OK;
}

/* Ascending ids; a million-GPU iteration lists a million, so many are radix sorted in
 * linear time (qsort was the largest single cost of planning at that scale) */
static vl_status sort_ids(vl_vctx *v, uint32_t *a, size_t n, vl_err *err)
{
    vl_status st;

    if (n < 4096) {
        vl_sort_u32(a, n);
        return VL_OK;
    }
    if ((st = grow_u32(&v->sort_tmp, &v->sort_tmp_cap, n, err)) != VL_OK)
        return st;
    vl_sort_u32_radix(a, v->sort_tmp, n);
    return VL_OK;
}

/* The first value repeated in sorted v[0..n-1], or -1. */
static int64_t first_repeat(const uint32_t *v, size_t n)
{
    for (size_t i = 1; i < n; i++)
        if (v[i] == v[i - 1])
            return v[i];
    return -1;
}

/* Every GPU joins every optimizer step: the config fixes dp x tp x pp x sp = cluster.gpus,
 * so a GPU no rank holds sits out a whole step -- its share of the batch silently
 * missing from the throughput the plan is judged by.  Only a strategy whose rules say
 * it idles (Hydraulis: a pipeline left without sequences) may; an unknown name may
 * not.  Called with the distinct, sorted, in-cluster ids v->gpus[0..total). */
static void check_every_gpu(const vl_vctx *v, uint64_t total)
{
    uint32_t gpus = (uint32_t)v->cost->cfg->cluster.gpus, idle = 0;

    if (total >= gpus || v->rules.idles)
        return;
    while (idle < total && v->gpus[idle] == idle) /* the first id missing from 0.. */
        idle++;
    vl__violation(v->rep, 5,
                  "iteration %zu: the ranks hold %llu of the cluster's %u GPUs; "
                  "GPU %u joins no rank, so it sits out the optimizer step",
                  v->num, (unsigned long long)total, gpus, idle);
}

static vl_status check_placement(vl_vctx *v, size_t it, vl_err *err)
{
    const vl_plan *p = v->p;
    const vl_iter *in = &p->iters[it];
    uint64_t total = 0;
    vl_gpu_walk w;
    int64_t dup;
    vl_status st;

    for (uint32_t r = 0; r < in->nranks; r++) {
        const vl_par *par = &p->ranks[in->rank0 + r].par;
        if (par->tp < 1 || par->sp < 1 || par->pp < 1)
            return VL_OK; /* no placement: the degree is reported by check_fields */
        uint64_t n = vl_plan_rank_size64(&p->ranks[in->rank0 + r]);
        total = n > UINT64_MAX - total ? UINT64_MAX : total + n; /* never wraps */
    }
    /* GPUs beyond the cluster (or any count too large to list) are not placed one by one */
    if (total > (v->cost ? (uint64_t)v->cost->cfg->cluster.gpus : UINT32_MAX)) {
        vl__violation(v->rep, 5, "iteration %zu places %llu GPUs%s", v->num,
                      (unsigned long long)total, v->cost ? ", more than the cluster has" : "");
        return VL_OK;
    }
    if ((st = grow_u32(&v->gpus, &v->gpus_cap, total + 1, err)) != VL_OK ||
        (st = grow_u32(&v->dps, &v->dps_cap, (size_t)in->nranks + 1, err)) != VL_OK)
        return st;
    total = 0;
    vl_gpu_walk_begin(&w, p, it);
    for (uint32_t r = 0; r < in->nranks; r++, vl_gpu_walk_next(&w)) {
        const vl_rank *rk = &p->ranks[in->rank0 + r];
        v->dps[r] = (uint32_t)rk->dp;
        for (uint32_t k = 0; k < vl_plan_rank_size(rk); k++)
            v->gpus[total++] = vl_gpu_walk_at(&w, k);
    }
    if ((st = sort_ids(v, v->dps, in->nranks, err)) != VL_OK)
        return st;
    if ((dup = first_repeat(v->dps, in->nranks)) >= 0)
        vl__violation(v->rep, 5, "iteration %zu: two ranks have dp %lld", v->num,
                      (long long)dup);
    if ((st = sort_ids(v, v->gpus, total, err)) != VL_OK)
        return st;
    if ((dup = first_repeat(v->gpus, total)) >= 0)
        vl__violation(v->rep, 5, "iteration %zu: GPU %lld belongs to two ranks", v->num,
                      (long long)dup);
    if (v->cost && total > 0 && v->gpus[total - 1] >= (uint32_t)v->cost->cfg->cluster.gpus)
        vl__violation(v->rep, 5, "iteration %zu: GPU %u is outside the cluster's %d GPUs",
                      v->num, v->gpus[total - 1], v->cost->cfg->cluster.gpus);
    else if (v->cost && dup < 0)
        check_every_gpu(v, total);
    return VL_OK;
}

/* ---- CP placement ---- */

static void check_cps(vl_vctx *v, uint32_t r, const vl_rank *rk)
{
    const vl_plan *p = v->p;

    if (!p->cps)
        return;
    for (uint32_t j = 0; j < rk->nmb + rk->nbwd; j++) {
        const vl_mb *mb = &p->mbs[rk->mb0 + j];
        for (uint32_t k = 0; k < mb->nseg; k++) {
            int cp = vl_plan_seg_cpi(p, mb->seg0 + k);
            if (cp == VL_CP_SHARDED)
                continue;
            v->used |= VL_CAP_SEG_CP;
            /* a coordinate names one GPU of a CP group: with sp 1 there is no group */
            if (cp < 0 || cp >= rk->par.sp || rk->par.sp == 1)
                vl__violation(v->rep, 5,
                              "iteration %zu, rank %u, %s %u, segment %u: CP "
                              "coordinate %d %s the rank's sp group of %d",
                              v->num, r, j < rk->nmb ? "micro-batch" : "backward pack",
                              j < rk->nmb ? j : j - rk->nmb, k, cp,
                              rk->par.sp == 1 ? "on a rank without a CP group: sp is 1,"
                                              : "outside",
                              rk->par.sp);
        }
    }
}

/* ---- shared packs ---- */

static const vl_rank *rank_of(const vl_plan *p, const vl_iter *in, int32_t dp)
{
    for (uint32_t r = 0; r < in->nranks; r++)
        if (p->ranks[in->rank0 + r].dp == dp)
            return &p->ranks[in->rank0 + r];
    return NULL;
}

static bool same_members(const vl_plan *p, const vl_mb *a, const vl_mb *b)
{
    uint32_t na, nb;
    const int32_t *ma = vl_plan_mb_members(p, a, &na), *mb = vl_plan_mb_members(p, b, &nb);

    return na == nb && (na == 0 || memcmp(ma, mb, na * sizeof *ma) == 0);
}

static bool same_pack(const vl_plan *p, const vl_mb *a, const vl_mb *b)
{
    const vl_seg *sa = vl_plan_mb_segs(p, a), *sb = vl_plan_mb_segs(p, b);

    if (a->nseg != b->nseg || a->cap != b->cap || !same_members(p, a, b))
        return false;
    for (uint32_t k = 0; k < a->nseg; k++)
        if (sa[k].sample != sb[k].sample || sa[k].off != sb[k].off || sa[k].len != sb[k].len ||
            vl_plan_seg_cpi(p, a->seg0 + k) != vl_plan_seg_cpi(p, b->seg0 + k))
            return false;
    return true;
}

/* The copy on rank `on` of the pack `mb` of `from`: the same member list and the same
 * ordinal among the rank's packs with that list, in the same direction. */
static const vl_mb *copy_on(const vl_plan *p, const vl_rank *from, const vl_rank *on,
                            uint32_t j, bool bwd)
{
    uint64_t base_f = from->mb0 + (bwd ? from->nmb : 0),
             base_o = on->mb0 + (bwd ? on->nmb : 0);
    const vl_mb *mb = &p->mbs[base_f + j];
    uint32_t n = bwd ? on->nbwd : on->nmb, ord = 0;

    for (uint32_t i = 0; i < j; i++)
        ord += same_members(p, &p->mbs[base_f + i], mb);
    for (uint32_t i = 0; i < n; i++) {
        const vl_mb *c = &p->mbs[base_o + i];
        if (same_members(p, c, mb) && ord-- == 0)
            return c;
    }
    return NULL;
}

/* The members of a shared pack as its strategy forms groups (vl_strategy.shares),
 * checked once, on the primary copy. */
static void check_group(const vl_vctx *v, uint32_t r, const char *what, uint32_t j,
                        const int32_t *mem, uint32_t n)
{
    bool run = true;

    if (v->rules.shares == VL_SHARES_ANY)
        return;
    for (uint32_t i = 1; i < n; i++)
        run = run && mem[i] == mem[0] + (int32_t)i;
    if (!run)
        vl__violation(v->rep, 5,
                      "iteration %zu, rank %u, %s %u: shared by ranks that are not "
                      "consecutive dp values in order (from dp %d), the only groups strategy "
                      "%s forms",
                      v->num, r, what, j, mem[0], v->p->strategy);
    else if (v->rules.shares == VL_SHARES_POW2 && (n & (n - 1)) != 0)
        vl__violation(v->rep, 5,
                      "iteration %zu, rank %u, %s %u: shared by %u ranks, but "
                      "strategy %s forms CP groups of a power of two",
                      v->num, r, what, j, n, v->p->strategy);
}

/* A shared pack runs with CP over its members' sp groups together (sp x members GPUs, as
 * the cost model runs it), and Ulysses scatters the heads over those GPUs: the group
 * must divide the KV heads and the heads of a TP shard, as a rank's own sp must
 * (check_limits).  An empty pack (mcore_cp's barrier) attends to nothing. */
static void check_group_heads(const vl_vctx *v, uint32_t r, const char *what, uint32_t j,
                              const vl_rank *rk, const vl_mb *mb, uint32_t n)
{
    const vl_config *cfg = v->cost ? v->cost->cfg : NULL;
    uint64_t cp = (uint64_t)n * (uint64_t)(rk->par.sp > 0 ? rk->par.sp : 0);
    int hq;

    if (!cfg || cfg->training.sp_kind != VL_SP_ULYSSES || mb->nseg == 0 || n < 2 ||
        rk->par.tp < 1 || cp < 2)
        return;
    hq = cfg->model.heads / rk->par.tp;
    if ((uint64_t)cfg->model.kv_heads % cp != 0 || (uint64_t)hq % cp != 0)
        vl__violation(
            v->rep, 3,
            "iteration %zu, rank %u, %s %u: shared by %u ranks of sp %d, "
            "a Ulysses CP group of %llu GPUs, which must divide both the %d KV heads "
            "and the %d heads per TP shard (training.sp_kind: ulysses)",
            v->num, r, what, j, n, rk->par.sp, (unsigned long long)cp, cfg->model.kv_heads,
            hq);
}

static void check_share(vl_vctx *v, size_t it, uint32_t r, const vl_rank *rk, uint32_t j,
                        bool bwd)
{
    const vl_plan *p = v->p;
    const vl_iter *in = &p->iters[it];
    const vl_mb *mb = &p->mbs[rk->mb0 + (bwd ? rk->nmb : 0) + j];
    const char *what = bwd ? "backward pack" : "micro-batch";
    uint32_t n;
    const int32_t *mem = vl_plan_mb_members(p, mb, &n);
    bool member = false;

    v->used |= VL_CAP_SHARED;
    for (uint32_t i = 0; i < n; i++) {
        const vl_rank *o = rank_of(p, in, mem[i]);
        const vl_mb *c;
        member = member || mem[i] == rk->dp;
        for (uint32_t q = 0; q < i; q++)
            if (mem[q] == mem[i])
                vl__violation(v->rep, 5,
                              "iteration %zu, rank %u, %s %u: dp %d listed twice "
                              "among the sharers",
                              v->num, r, what, j, mem[i]);
        if (!o)
            vl__violation(v->rep, 5,
                          "iteration %zu, rank %u, %s %u: shared with dp %d, which "
                          "the iteration does not have",
                          v->num, r, what, j, mem[i]);
        else if (o != rk && mem[0] == rk->dp && /* the primary compares its copies */
                 (!(c = copy_on(p, rk, o, j, bwd)) || !same_pack(p, mb, c)))
            vl__violation(v->rep, 5,
                          "iteration %zu, rank %u, %s %u: the copy of this shared "
                          "pack on dp %d is %s",
                          v->num, r, what, j, mem[i], c ? "different" : "missing");
        else if (i == 0 && o != rk &&
                 !copy_on(p, rk, o, j, bwd)) /* a copy beyond the primary's */
            vl__violation(v->rep, 5,
                          "iteration %zu, rank %u, %s %u: a copy of a shared pack "
                          "whose primary copy, on dp %d, is missing",
                          v->num, r, what, j, mem[0]);
    }
    if (!member)
        vl__violation(v->rep, 5,
                      "iteration %zu, rank %u, %s %u: shared by dp values that do "
                      "not include this rank's dp %d",
                      v->num, r, what, j, rk->dp);
    if (n > 0 && mem[0] == rk->dp) {
        check_group(v, r, what, j, mem, n);
        check_group_heads(v, r, what, j, rk, mb, n);
    }
}

/* ---- the order of shared packs ---- */

/* A rank's forward packs in the order it runs them: its schedule's F steps, else pack
 * order; out[0..*n) (cap: rk->nmb). */
static void run_order(const vl_plan *p, const vl_rank *rk, uint32_t *out, uint32_t *n)
{
    *n = 0;
    if (rk->nop == 0) {
        for (uint32_t j = 0; j < rk->nmb; j++)
            out[(*n)++] = j;
        return;
    }
    for (uint32_t i = 0; i < rk->nop && *n < rk->nmb; i++)
        if (p->ops[rk->op0 + i].kind == VL_OP_F && p->ops[rk->op0 + i].mb < rk->nmb)
            out[(*n)++] = p->ops[rk->op0 + i].mb;
}

static int cmp_edge(const void *a_, const void *b_)
{
    const uint32_t *a = a_, *b = b_;

    if (a[0] != b[0])
        return a[0] < b[0] ? -1 : 1;
    return (a[1] > b[1]) - (a[1] < b[1]);
}

/* Whether the graph of nn nodes and ne edges (pairs) has a cycle (Kahn's algorithm);
 * the edges are sorted in place.  scratch: 3·nn + 1 words. */
static bool has_cycle(uint32_t *edges, size_t ne, uint32_t nn, uint32_t *scratch)
{
    uint32_t *indeg = scratch, *start = scratch + nn, *queue = scratch + 2 * (size_t)nn + 1;
    size_t head = 0, tail = 0;

    qsort(edges, ne, 2 * sizeof *edges, cmp_edge);
    memset(scratch, 0, (2 * (size_t)nn + 1) * sizeof *scratch);
    for (size_t e = 0; e < ne; e++) {
        indeg[edges[2 * e + 1]]++;
        start[edges[2 * e] + 1]++;
    }
    for (uint32_t i = 0; i < nn; i++)
        start[i + 1] += start[i];
    for (uint32_t i = 0; i < nn; i++)
        if (indeg[i] == 0)
            queue[tail++] = i;
    while (head < tail) {
        uint32_t x = queue[head++];
        for (uint32_t e = start[x]; e < start[x + 1]; e++)
            if (--indeg[edges[2 * e + 1]] == 0)
                queue[tail++] = edges[2 * e + 1];
    }
    return tail < nn;
}

/* Every forward copy of a shared pack is named by a node, its primary's; then each rank
 * adds an edge between the shared packs it runs one after the other. */
static size_t share_edges(const vl_plan *p, const vl_iter *in, const uint64_t *off,
                          uint32_t *node, uint32_t *order, uint32_t *edges, uint32_t *nn)
{
    size_t ne = 0;

    *nn = 0;
    for (uint32_t r = 0; r < in->nranks; r++) {
        const vl_rank *rk = &p->ranks[in->rank0 + r];
        for (uint32_t j = 0; j < rk->nmb; j++) {
            uint32_t n;
            const int32_t *mem = vl_plan_mb_members(p, &p->mbs[rk->mb0 + j], &n);
            if (n == 0 || mem[0] != rk->dp)
                continue;
            node[off[r] + j] = *nn;
            for (uint32_t i = 1; i < n; i++) {
                const vl_rank *o = rank_of(p, in, mem[i]);
                const vl_mb *c = o ? copy_on(p, rk, o, j, false) : NULL;
                if (c)
                    node[off[o - &p->ranks[in->rank0]] + (uint64_t)(c - &p->mbs[o->mb0])] =
                        *nn;
            }
            (*nn)++;
        }
    }
    for (uint32_t r = 0; r < in->nranks; r++) {
        uint32_t n, prev = UINT32_MAX;
        run_order(p, &p->ranks[in->rank0 + r], order, &n);
        for (uint32_t i = 0; i < n; i++) {
            uint32_t x = node[off[r] + order[i]];
            if (x == UINT32_MAX)
                continue;
            if (prev != UINT32_MAX && prev != x) {
                edges[2 * ne] = prev;
                edges[2 * ne++ + 1] = x;
            }
            prev = x;
        }
    }
    return ne;
}

/* The members of a shared pack start it together, so ranks that run their shared
 * packs in orders that contradict each other (A before B on one, B before A on another,
 * or a longer cycle) wait for each other for ever.  The simulator refuses such an
 * iteration too, but only with a config; this needs none. */
static vl_status check_share_order(vl_vctx *v, size_t it, vl_err *err)
{
    const vl_plan *p = v->p;
    const vl_iter *in = &p->iters[it];
    uint64_t total = 0, *off = malloc(((size_t)in->nranks + 1) * sizeof *off);
    uint32_t *node = NULL, *edges = NULL, *scratch = NULL, maxmb = 0, nn;
    bool any = false;
    vl_status st = VL_OK;

    for (uint32_t r = 0; off && r < in->nranks; r++) {
        const vl_rank *rk = &p->ranks[in->rank0 + r];
        off[r] = total;
        total += rk->nmb;
        maxmb = rk->nmb > maxmb ? rk->nmb : maxmb;
        for (uint32_t j = 0; j < rk->nmb && !any; j++)
            any = p->mbs[rk->mb0 + j].share != 0;
    }
    if (off && !any)
        goto done;
    if (!off || !(node = malloc((total + 1) * sizeof *node)) ||
        !(edges = malloc((2 * total + maxmb + 2) * sizeof *edges)) ||
        !(scratch = malloc((3 * total + 2) * sizeof *scratch))) {
        st = vl_seterr(err, VL_ENOMEM, "out of memory verifying the plan");
        goto done;
    }
    for (uint64_t i = 0; i < total; i++)
        node[i] = UINT32_MAX;
    /* the run order of one rank lives after the edges (at most total - 1 of them) */
    size_t ne = share_edges(p, in, off, node, edges + 2 * total, edges, &nn);
    if (has_cycle(edges, ne, nn, scratch))
        vl__violation(v->rep, 5,
                      "iteration %zu: ranks run their shared packs in orders that "
                      "contradict each other, so they wait for each other for ever",
                      v->num);
done:
    free(off);
    free(node);
    free(edges);
    free(scratch);
    return st;
}

/* ---- capabilities ---- */

/* What using capability bit i looks like, NULL for one with no element of its own. */
static const char *const CAP_USE[VL_NCAPS] = {
    "uneven micro-batch counts", "backward packs", "per-segment CP placement",
    "an explicit schedule",      "shared packs",   NULL};

/* What the plan uses and does not declare, once each (plans that state their
 * capabilities: built by vlplan, in memory or read back). */
static void check_declared(const vl_vctx *v)
{
    for (unsigned i = 0; i < VL_NCAPS; i++)
        if (CAP_USE[i] && (v->used >> i & 1) && !(v->p->caps >> i & 1))
            vl__violation(v->rep, 5, "the plan uses %s but does not declare %s", CAP_USE[i],
                          vl_cap_name(i));
}

/* The capabilities against the strategy's rules (the caller's source, vl_verify_rules):
 * the header cannot grant what the strategy never writes (a plan relabelled from
 * another strategy), and, as the runner records exactly the strategy's (lib/run/run.c),
 * a plan of a known strategy that states its capabilities declares all of them -- a Hydraulis plan without
 * "optimizer_shard":"world" is modelled with memory it does not have. */
static void check_allowed(const vl_vctx *v)
{
    const char *s = v->p->strategy;

    for (unsigned i = 0; i < VL_NCAPS; i++) {
        bool allowed = v->rules.caps >> i & 1;
        bool declared = v->declared && (v->p->caps >> i & 1);
        if (!allowed && CAP_USE[i] && (v->used >> i & 1))
            vl__violation(v->rep, 5, "the plan uses %s, which strategy %s never writes",
                          CAP_USE[i], s);
        else if (!allowed && declared)
            vl__violation(v->rep, 5, "the header declares %s, which strategy %s never writes",
                          vl_cap_name(i), s);
        else if (allowed && v->rules.known && v->declared && !(v->p->caps >> i & 1))
            vl__violation(v->rep, 5, "the header lacks %s, which strategy %s always declares",
                          vl_cap_name(i), s);
    }
}

static void check_rank(vl_vctx *v, size_t it, uint32_t r, const vl_rank *rk)
{
    char where[64];

    snprintf(where, sizeof where, "iteration %zu, rank %u", v->num, r);
    check_fields(v, VL_PF_RANK, rk, where);
    if (v->cost)
        check_limits(v, rk, where);
    check_cps(v, r, rk);
    if (rk->nbwd > 0)
        v->used |= VL_CAP_BWD_PACKS;
    if (rk->nop > 0)
        v->used |= VL_CAP_SCHEDULE;
    for (uint32_t j = 0; j < rk->nmb + rk->nbwd; j++) {
        const vl_mb *mb = &v->p->mbs[rk->mb0 + j];
        if (mb->share)
            check_share(v, it, r, rk, j < rk->nmb ? j : j - rk->nmb, j >= rk->nmb);
    }
}

vl_status vl__layout_iter(vl_vctx *v, size_t it, vl_err *err)
{
    const vl_iter *in = &v->p->iters[it];
    char where[32];
    vl_status st;

    snprintf(where, sizeof where, "iteration %zu", v->num);
    check_fields(v, VL_PF_ITER, in, where);
    for (uint32_t r = 0; r < in->nranks; r++)
        check_rank(v, it, r, &v->p->ranks[in->rank0 + r]);
    if ((st = check_share_order(v, it, err)) != VL_OK)
        return st;
    return check_placement(v, it, err);
}

void vl__layout_finish(vl_vctx *v)
{
    if (v->declared)
        check_declared(v);
    check_allowed(v);
}
