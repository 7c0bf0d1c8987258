/* plans/hbp/hbp.c -- Hierarchical Balance Packing (Yao et al., NeurIPS'25, arXiv 2503.07680):
 * parameters, the per-epoch driver and the plan it emits.  Helpers: hbp_groups.c
 * (auto-selection), hbp_pack.c (balance packing), hbp_fill.c (GreedyFill), hbp_parse.c
 * (list parameters), hbp_impl.h.
 *
 * Objective: pack short and long samples apart, each group at its own length l_i with
 * its own SP degree and checkpointed layers, so short data pays no SP communication
 * (CR) and the ranks of one iteration get equal attention work (ABR).
 *  1. Groups (Alg. 1, 3, 4): hbp.groups, or stage 1 over hbp.candidates x hbp.sp_degrees
 *     (fewest checkpointed layers that fit memory, cluster seconds per token from the
 *     cost model on one common content), stage 2 l1 = l_best/sp_best, l2 = l_max/sp_max.
 *  2. Balance packing (Alg. 2, 5-7): samples in (l_{i-1}, l_i] packed to l_i by
 *     hbp.packer, longest group first, each pack topped up from shorter groups
 *     (GreedyFill); packs sorted by Σ len² and cut consecutively into iterations of
 *     budget/l_i packs over gpus/(sp·tp·pp) ranks (several per rank: equal-count KK).
 *  3. Order: hbp.curriculum_iters short-group iterations first (epoch 0), at most half
 *     of the shorter groups' iterations, then every group's iterations shuffled and
 *     spread evenly (stratified proportional mix).
 * Units: lengths in tokens ("K" = 1024), budget = training.global_tokens, or
 * training.global_batch x mean sample length.  Complexity per epoch: O(n) grouping,
 * the packer (ISF: C·O(n)), GreedyFill O((packs + fillers)·64·log64 n), O(P log P)
 * sorting of P packs.
 * Deviations (the paper is silent or vague; man page, HBP): the time comparison of
 * stage 1 is per token on a common content; l1 and l2 run at SP 1 and l_best, l_max at
 * stage 1's degrees, as the paper (hbp.stage2_sp=free instead gives each final group
 * the degree fastest for its own content); checkpointing is the fewest that fits; a
 * group's packs are spread evenly over its fewest iterations of at most one budget
 * (halving the heaviest splittable packs of a short iteration so ranks keep equal
 * micro-batch counts; else empty micro-batches); the curriculum takes at most half of
 * the shorter groups' iterations;
 * Ave-Token loss needs nothing here: each iteration is exactly one global batch, whose
 * loss_tokens the plan writer sums.  hbp.profile (measured iteration times, a table
 * parameter) replaces the cost model in the selection when given. */
#include <ctype.h>
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bigmem.h"
#include "hbp_impl.h"
#include "prefetch.h"

const char *const vl__hbp_packers[] = {"isf", "ffd", "bfd", "ffs", "bfs", "spfhp", NULL};
const char *const vl__hbp_profile_cols[] = {"len", "sp", "ckpt_layers", "time_s", NULL};
const char *const vl__hbp_stage2_sp[] = {"one", "free", NULL};

static const vl_param hbp_params[] = {
    {"groups", VL_P_TEXT, offsetof(hbp_opts, groups), 0, 0, NULL, "auto",
     "packing groups: auto, or ascending LEN[:SP[:CKPT]] entries (K = 1024)"},
    {"candidates", VL_P_STRING, offsetof(hbp_opts, candidates), 0, 0, NULL,
     "8K,16K,32K,64K,128K", "stage-1 packing lengths, capped at training.max_seq_len"},
    {"sp_degrees", VL_P_STRING, offsetof(hbp_opts, sp_degrees), 0, 0, NULL, "1,2,4,8,16",
     "SP degrees to try; those not dividing the GPUs or the KV heads are skipped"},
    {"packer", VL_P_ENUM, offsetof(hbp_opts, packer), 0, 0, vl__hbp_packers, "isf",
     "packer of each group (ISF iterations and slack from pack.*)"},
    {"curriculum_iters", VL_P_UINT, offsetof(hbp_opts, curriculum_iters), 0, 100000000, NULL,
     "500", "first iterations from the shorter groups only; 0 = off"},
    {"balance", VL_P_BOOL, offsetof(hbp_opts, balance), 0, 0, NULL, "true",
     "Attention Balance Sort of the packs (off: packer order)"},
    {"greedy_fill", VL_P_BOOL, offsetof(hbp_opts, greedy_fill), 0, 0, NULL, "true",
     "top up packs with samples of shorter groups"},
    {"stage2_sp", VL_P_ENUM, offsetof(hbp_opts, stage2_sp), 0, 0, vl__hbp_stage2_sp, "one",
     "SP of the groups stage 2 derives (l1, l2): one = 1 as the paper; free = fastest"},
    /* every cell non-negative here; vl__hbp_profile_rows checks each column's range */
    {"profile", VL_P_TABLE, 0, 0, 1e12, vl__hbp_profile_cols, NULL,
     "measured rows {len, sp, ckpt_layers, time_s} replacing the cost model in auto"},
    {NULL, VL_P_INT, 0, 0, 0, NULL, NULL, NULL},
};

/* ---- validate / max_len -------------------------------------------------------------- */

static vl_status check_group(const hbp_spec *g, const hbp_spec *prev, const vl_config *cfg,
                             vl_err *err)
{
    int pp = cfg->training.pp, layers0 = (cfg->model.layers + pp - 1) / pp;

    if (prev != NULL && g->len <= prev->len)
        return vl_seterr(err, VL_ECONFIG, "hbp.groups: lengths must ascend, got %u after %u",
                         g->len, prev->len);
    if (g->len > cfg->training.max_seq_len)
        return vl_seterr(err, VL_ECONFIG, "hbp.groups: %u exceeds training.max_seq_len %u",
                         g->len, cfg->training.max_seq_len);
    if (g->sp != HBP_AUTO && !vl__hbp_sp_ok(cfg, g->sp))
        return vl_seterr(err, VL_ECONFIG,
                         "hbp.groups: sp %d of group %u is not usable with %d GPUs, tp %d, "
                         "pp %d and %d KV heads",
                         g->sp, g->len, cfg->cluster.gpus, cfg->training.tp, pp,
                         cfg->model.kv_heads);
    if (g->ckpt != HBP_AUTO && g->ckpt > layers0)
        return vl_seterr(err, VL_ECONFIG,
                         "hbp.groups: ckpt_layers %d of group %u exceeds the %d layers of "
                         "a pipeline stage",
                         g->ckpt, g->len, layers0);
    return VL_OK;
}

static vl_status check_lists(const hbp_opts *o, const vl_config *cfg, vl_err *err)
{
    hbp_spec v[HBP_MAX_GROUPS];
    size_t n;
    char why[128];
    bool usable = false;

    if (vl__hbp_parse_list(o->candidates, false, v, HBP_MAX_GROUPS, &n, why, sizeof why))
        return vl_seterr(err, VL_ECONFIG, "hbp.candidates: %s", why);
    if (vl__hbp_parse_list(o->sp_degrees, false, v, HBP_MAX_GROUPS, &n, why, sizeof why))
        return vl_seterr(err, VL_ECONFIG, "hbp.sp_degrees: %s", why);
    for (size_t i = 0; i < n; i++)
        usable = usable || (v[i].len <= 1024 && vl__hbp_sp_ok(cfg, (int)v[i].len));
    if (!usable)
        return vl_seterr(err, VL_ECONFIG,
                         "hbp.sp_degrees: none of '%s' divides %d GPUs / (tp %d x pp %d)%s",
                         o->sp_degrees, cfg->cluster.gpus, cfg->training.tp, cfg->training.pp,
                         cfg->training.sp_kind == VL_SP_ULYSSES ? " and the KV heads" : "");
    return VL_OK;
}

static vl_status hbp_validate(const void *opts, const vl_config *cfg, vl_err *err)
{
    const hbp_opts *o = opts;
    hbp_spec g[HBP_MAX_GROUPS];
    size_t n;
    char why[128];
    vl_status st;

    if ((st = check_lists(o, cfg, err)) != VL_OK || strcmp(o->groups, "auto") == 0)
        return st;
    if (vl__hbp_parse_list(o->groups, true, g, HBP_MAX_GROUPS, &n, why, sizeof why) != 0)
        return vl_seterr(err, VL_ECONFIG, "hbp.groups: %s (or 'auto')", why);
    for (size_t i = 0; i < n; i++)
        if ((st = check_group(&g[i], i ? &g[i - 1] : NULL, cfg, err)) != VL_OK)
            return st;
    return VL_OK;
}

static uint32_t hbp_max_len(const void *opts, const vl_config *cfg)
{
    const hbp_opts *o = opts;
    hbp_spec g[HBP_MAX_GROUPS];
    size_t n;
    char why[8];

    if (strcmp(o->groups, "auto") == 0 ||
        vl__hbp_parse_list(o->groups, true, g, HBP_MAX_GROUPS, &n, why, sizeof why) != 0)
        return cfg->training.max_seq_len;
    return g[n - 1].len; /* validated: ascending */
}

static void hbp_describe_max_len(const void *opts, const vl_config *cfg, char *buf, size_t n)
{
    snprintf(buf, n, "hbp's longest group, %u; set by hbp.groups", hbp_max_len(opts, cfg));
}

/* HBP groups the whole epoch by length before it cuts iterations. */
static bool hbp_epoch_scope(const vl_config *cfg)
{
    (void)cfg;
    return true;
}

/* A pack is one group's length: the longest group at most. */
static uint64_t hbp_max_cap(const void *opts, const vl_config *cfg)
{
    return hbp_max_len(opts, cfg);
}

/* ---- the plan ------------------------------------------------------------------------ */

/* Global tokens per iteration: training.global_tokens, or global_batch samples of the
 * mean length, so the user's batch size keeps its meaning on average. */
static uint64_t budget_of(const vl_training_cfg *t, const vl_selection *sel)
{
    if (t->global_tokens > 0)
        return t->global_tokens;
    if (sel->n == 0)
        return 0;
    return (uint64_t)t->global_batch * ((sel->tokens + sel->n - 1) / sel->n);
}

/* Touches the iteration's samples before it is emitted: its packs lie anywhere in
 * ep->items and their samples anywhere in len, arrays beyond the caches at millions of
 * samples; here the reads overlap, where the emitting loop (a call per sample) would
 * wait for each in turn. */
static void warm_iter(const hbp_epoch *ep, const hbp_iter *it, size_t nslots,
                      const uint32_t *len)
{
    const uint32_t *slot = ep->slots + it->s0;

    for (size_t k = 0; k < nslots; k++)
        if (slot[k] != HBP_EMPTY)
            VL_PREFETCH(ep->items + ep->packs[slot[k]].start);
    for (size_t k = 0; k < nslots; k++) {
        if (slot[k] == HBP_EMPTY)
            continue;
        const hbp_pack *pk = &ep->packs[slot[k]];
        for (uint32_t i = 0; i < pk->count; i++)
            VL_PREFETCH(len + ep->items[pk->start + i]);
    }
}

static vl_status emit_iter(vl_plan *out, const hbp_groups *gs, const hbp_epoch *ep,
                           const hbp_iter *it, const uint32_t *len, uint32_t epoch,
                           vl_err *err)
{
    const hbp_group *g = &gs->g[it->group];
    vl_status st = vl_plan_iter_begin(out, epoch, err);

    warm_iter(ep, it, (size_t)g->ranks * it->mbs, len);
    for (int r = 0; r < g->ranks && st == VL_OK; r++) {
        if ((st = vl_plan_rank_begin(out, r, &g->par, err)) != VL_OK)
            break;
        vl_plan_rank_group(out, (int32_t)it->group);
        const uint32_t *slot = ep->slots + it->s0 + (size_t)r * it->mbs;
        for (uint32_t m = 0; m < it->mbs && st == VL_OK; m++) {
            if ((st = vl_plan_mb_begin(out, g->len, err)) != VL_OK || slot[m] == HBP_EMPTY)
                continue; /* empty: a short group whose packs could not be split */
            const hbp_pack *pk = &ep->packs[slot[m]];
            for (uint32_t i = 0; i < pk->count && st == VL_OK; i++) {
                uint32_t s = ep->items[pk->start + i];
                st = vl_plan_seg(out, s, 0, len[s], err);
            }
        }
    }
    return st;
}

/* Iterations over the global token budget: only a group whose ranks·len exceeds it (one
 * pack per rank is the least an iteration can hold) makes them; plan says so. */
typedef struct over_budget {
    uint64_t budget;
    size_t n, total, group;
    double worst; /* the largest tokens / budget */
} over_budget;

static void count_over(over_budget *ob, const hbp_epoch *ep, const hbp_iter *it,
                       const hbp_group *g)
{
    const uint32_t *slot = ep->slots + it->s0;
    uint64_t tokens = 0;

    ob->total++;
    for (size_t k = 0; k < (size_t)g->ranks * it->mbs; k++)
        if (slot[k] != HBP_EMPTY)
            tokens += ep->packs[slot[k]].load;
    if (ob->budget == 0 || tokens <= ob->budget)
        return;
    double r = (double)tokens / (double)ob->budget;
    if (ob->n++ == 0 || r > ob->worst) {
        ob->worst = r;
        ob->group = it->group;
    }
}

static void warn_over(const vl_job *job, const over_budget *ob, const hbp_groups *gs)
{
    if (ob->n == 0)
        return;
    const hbp_group *g = &gs->g[ob->group];
    vl_job_warn(job,
                "hbp: %zu of %zu iterations exceed the global token budget of %llu "
                "tokens, by up to %.2fx (group %zu: %d ranks x packs of up to %u "
                "tokens = %llu, and one pack per rank is the least an iteration "
                "holds); raise training.global_tokens (or global_batch) or give the "
                "long groups more sequence parallelism (hbp.groups, hbp.sp_degrees)",
                ob->n, ob->total, (unsigned long long)ob->budget, ob->worst, ob->group,
                g->ranks, g->len, (unsigned long long)g->ranks * g->len);
}

static void log_epoch(hbp_log *lg, const hbp_groups *gs, const hbp_epoch *ep, uint32_t e,
                      uint32_t asked)
{
    if (asked > 0 && ep->busy_groups < 2)
        vl__hbp_logf(lg,
                     "hbp: epoch %u curriculum: none (%zu of %zu groups have "
                     "iterations, nothing shorter to lead with)\n",
                     e, ep->busy_groups, gs->n);
    else if (asked > 0)
        vl__hbp_logf(lg,
                     "hbp: epoch %u curriculum: %zu short-only iterations first (%u "
                     "asked, at most half of the shorter groups' %zu), then the %zu "
                     "groups with iterations (of %zu) interleave over the remaining "
                     "%zu iterations\n",
                     e, ep->curriculum, asked, ep->short_iters, ep->busy_groups, gs->n,
                     ep->niters - ep->curriculum);
    for (size_t g = 0; g < gs->n; g++)
        vl__hbp_logf(lg,
                     "hbp: epoch %u group %zu (%u): %zu samples + %zu filled in, "
                     "%zu iterations, %zu pack splits, %zu empty micro-batches\n",
                     e, g, gs->g[g].len, ep->samples[g], ep->fillers[g], ep->giters[g],
                     ep->splits[g], ep->empty[g]);
}

/* Token-equivalents of one unit of Σ len² in a pack's cost: a causal sample of length l
 * has l²/2 pairs at acoef FLOPs each, against lin FLOPs per token (per layer). */
static double attn_weight(const vl_cost *c)
{
    return c->lin > 0 ? c->acoef / (2.0 * c->lin) : 0.0;
}

/* Every epoch packed: the plan header announces the iteration count before the first
 * iteration streams out, and an epoch's count is known only once it is packed.  The
 * packed epochs (4 bytes per sample, plus packs and slots) are what is held, not the
 * plan (12 bytes per segment, plus packs and ranks).  *eps: epochs entries, each freed
 * by the caller, also on failure. */
static vl_status pack_epochs(const vl_job *job, hbp_pack_in *pin, hbp_epoch *eps,
                             uint32_t epochs, uint32_t curriculum, uint64_t *total,
                             vl_err *err)
{
    const vl_selection *sel = job->sel;
    vl_status st = VL_OK;

    *total = 0;
    for (uint32_t e = 0; e < epochs && st == VL_OK; e++) {
        /* the order becomes the epoch's item array: no second array of n */
        if ((pin->order = vl_big_malloc((sel->n ? sel->n : 1) * sizeof *pin->order)) != NULL)
            vl_epoch_order(sel, job->seed, e, pin->order);
        pin->epoch = e;
        pin->curriculum = e == 0 ? curriculum : 0; /* training starts once */
        if ((st = vl__hbp_pack_epoch(&eps[e], pin, err)) == VL_OK)
            *total += eps[e].niters;
    }
    pin->order = NULL;
    return st;
}

static vl_status run_epochs(const hbp_opts *o, const vl_job *job, const hbp_groups *gs,
                            vl_plan *out, hbp_log *lg, vl_err *err)
{
    const vl_selection *sel = job->sel;
    const vl_config *cfg = job->cfg;
    uint32_t epochs = (uint32_t)cfg->training.epochs;
    hbp_epoch *eps = calloc(epochs ? epochs : 1, sizeof *eps);
    hbp_pack_in pin = {.gs = gs,
                       .len = sel->len,
                       .n = sel->n,
                       .isf_iters = cfg->pack.isf_iters,
                       .isf_slack = cfg->pack.isf_slack,
                       .balance = o->balance,
                       .greedy_fill = o->greedy_fill,
                       .attn_weight = attn_weight(job->cost),
                       .seed = job->seed};
    over_budget ob = {.budget = budget_of(&cfg->training, sel)};
    uint64_t total = 0;
    vl_status st;

    if (eps == NULL)
        return vl_seterr(err, VL_ENOMEM, "out of memory for %u epochs", epochs);
    if (vl_pack_algo_parse(vl__hbp_packers[o->packer], &pin.algo) != 0)
        st = vl_seterr(err, VL_EINTERNAL, "hbp: unknown packer %d", o->packer); /* a bug */
    else
        st = pack_epochs(job, &pin, eps, epochs, o->curriculum_iters, &total, err);
    if (st == VL_OK)
        vl_job_iterations(job, total);
    for (uint32_t e = 0; e < epochs && st == VL_OK; e++) {
        const hbp_epoch *ep = &eps[e];
        for (size_t i = 0; i < ep->niters && st == VL_OK; i++) {
            st = emit_iter(out, gs, ep, &ep->iters[i], sel->len, e, err);
            count_over(&ob, ep, &ep->iters[i], &gs->g[ep->iters[i].group]);
        }
        log_epoch(lg, gs, ep, e, e == 0 ? o->curriculum_iters : 0);
        vl__hbp_epoch_free(&eps[e]);
    }
    for (uint32_t e = 0; e < epochs; e++)
        vl__hbp_epoch_free(&eps[e]);
    free(eps);
    if (st == VL_OK)
        warn_over(job, &ob, gs);
    return st;
}

/* One group as a hbp.groups entry, lengths in K when exact. */
static int spec_text(char *buf, size_t cap, const hbp_group *g)
{
    if (g->len % 1024 == 0)
        return snprintf(buf, cap, "%uK:%d:%d", g->len / 1024, g->par.sp, g->par.ckpt_layers);
    return snprintf(buf, cap, "%u:%d:%d", g->len, g->par.sp, g->par.ckpt_layers);
}

/* The header's "params" with hbp.groups as chosen, in the form hbp.groups accepts, so
 * the plan can be reproduced without the selection (or the profile).  Left to the bound
 * opts when the list does not fit the parameter's 255 characters (the -v log still has
 * it); the selection makes at most 4 groups, which always fit. */
static vl_status resolved_params(const hbp_opts *o, const hbp_groups *gs, const vl_job *job,
                                 vl_err *err)
{
    hbp_opts r = *o;
    size_t used = 0;

    for (size_t i = 0; i < gs->n; i++) {
        int k = spec_text(r.groups + used, sizeof r.groups - used, &gs->g[i]);
        if (k < 0 || used + (size_t)k + (i + 1 < gs->n) >= sizeof r.groups)
            return VL_OK;
        used += (size_t)k;
        if (i + 1 < gs->n)
            r.groups[used++] = ',';
    }
    r.groups[used] = '\0';
    return vl_job_params(job, hbp_params, &r, err);
}

/* hbp.profile as checked rows into *out (NULL and *n = 0 when not given). */
static vl_status read_profile(const vl_config *cfg, hbp_prof **out, size_t *n, vl_err *err)
{
    double *v = NULL;
    vl_status st = vl_config_table(cfg, "hbp", "profile", vl__hbp_profile_cols, 4, &v, n, err);

    *out = NULL;
    if (st == VL_OK && *n > 0)
        st = vl__hbp_profile_rows(out, v, *n, cfg, err);
    free(v);
    return st;
}

static vl_status hbp_plan(const void *opts, const vl_job *job, vl_plan *out, vl_err *err)
{
    const hbp_opts *o = opts;
    hbp_log lg = {.job = job};
    hbp_groups gs;
    hbp_prof *prof = NULL;
    hbp_sel_in in = {.cfg = job->cfg,
                     .cost = job->cost,
                     .len = job->sel->len,
                     .idx = job->sel->idx,
                     .n = job->sel->n,
                     .budget = budget_of(&job->cfg->training, job->sel)};
    vl_status st;

    vl__hbp_logf(&lg, "hbp: %zu samples, %llu global tokens per iteration\n", in.n,
                 (unsigned long long)in.budget);
    st = read_profile(job->cfg, &prof, &in.nprof, err);
    in.prof = prof;
    if (st == VL_OK && in.nprof > 0)
        vl__hbp_logf(&lg, "hbp: %zu measured rows (hbp.profile)%s\n", in.nprof,
                     strcmp(o->groups, "auto") == 0 ? "" : ", unused: hbp.groups is given");
    if (st == VL_OK)
        st = vl__hbp_select(&gs, o, &in, &lg, err);
    free(prof);
    /* recorded before the first iteration: the streamed header carries them */
    if (st == VL_OK && strcmp(o->groups, "auto") == 0)
        st = resolved_params(o, &gs, job, err);
    if (st == VL_OK)
        st = run_epochs(o, job, &gs, out, &lg, err);
    return st;
}

const vl_strategy vl_strategy_hbp = {
    .name = "hbp",
    .summary = "hierarchical balance packing: length groups, own SP and ckpt, balanced",
    .section = "hbp",
    .params = hbp_params,
    .opts_size = sizeof(hbp_opts),
    .max_len = hbp_max_len,
    .epoch_scope = hbp_epoch_scope,
    .describe_max_len = hbp_describe_max_len,
    .max_cap = hbp_max_cap,
    .validate = hbp_validate,
    .plan = hbp_plan,
    .streams = true,
};
