/* cmd/vlplan/advise_eval.c -- judging one `vlplan advise` candidate: the sample of
 * global batches it is judged on, its lower bound, and a plan evaluated as `compare`
 * evaluates a row. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "advise.h"
#include "vlplan.h"

int adv_sample(const char *cmd, const vl_manifest *m, const vl_config *cfg, size_t batches,
               vl_manifest **out)
{
    vl_selection sel;
    vl_batches b = {0};
    uint32_t *order = NULL, *len = NULL;
    vl_err err = {0};
    vl_status st = vl_select(&sel, m, UINT32_MAX, VL_OVERSIZE_DROP, &err);
    size_t n = 0;

    if (st == VL_OK && !(order = malloc((sel.n ? sel.n : 1) * sizeof *order)))
        st = vl_seterr(&err, VL_ENOMEM, "out of memory sampling %zu samples", sel.n);
    if (st == VL_OK) {
        vl_epoch_order(&sel, cfg->training.seed, 0, order);
        st = vl_make_batches(&b, order, sel.n, sel.len, &cfg->training, &err);
    }
    if (st == VL_OK) {
        n = b.start[batches < b.n ? batches : b.n];
        if (!(len = malloc((n ? n : 1) * sizeof *len)))
            st = vl_seterr(&err, VL_ENOMEM, "out of memory sampling %zu samples", n);
    }
    for (size_t i = 0; st == VL_OK && i < n; i++)
        len[i] = sel.len[order[i]];
    if (st == VL_OK)
        st = vl_manifest_from_lengths(out, len, n, &err);
    free(len);
    free(order);
    vl_batches_free(&b);
    vl_selection_free(&sel);
    return st == VL_OK ? 0 : cli_fail(cmd, &err);
}

/* Model states of the first stage (the largest: it holds the embedding) against the
 * device: a layout whose states alone do not fit cannot run anything. */
static bool states_fit(const vl_cost *c, const vl_config *cfg, char *why, size_t n)
{
    vl_par par = {cfg->training.tp, cfg->training.pp, cfg->training.sp, 0};
    int layers = vl_cost_stage_layers(c, par.pp, 0);
    double states = vl_cost_state_bytes(c, &par, cfg->training.dp, layers, 1, par.pp == 1);
    double cap = vl_cost_mem_capacity(c);

    if (states < cap)
        return true;
    snprintf(why, n, "model states alone need %.2f GiB of %.2f GiB usable",
             states / 1073741824.0, cap / 1073741824.0);
    return false;
}

/* The planned segments of sample under limit and the oversize policy, into segs; their
 * count, or 0 when the plan would be refused (error, split). */
static size_t planned_segs(const vl_manifest *sample, uint32_t limit, vl_oversize policy,
                           vl_seg *segs)
{
    size_t n = 0;

    for (size_t i = 0; i < sample->n; i++) {
        uint32_t l = sample->len[i];
        if (l > limit && policy != VL_OVERSIZE_TRUNCATE && policy != VL_OVERSIZE_DROP)
            return 0;
        if (l > limit && policy == VL_OVERSIZE_DROP)
            continue;
        segs[n++] = (vl_seg){(uint32_t)i, 0, l > limit ? limit : l};
    }
    return n;
}

/* The busiest stage's time for all of segs, shared by the data-parallel ranks. */
static double layout_time(const vl_cost *cost, const vl_config *cfg, const vl_seg *segs,
                          size_t n)
{
    const vl_training_cfg *t = &cfg->training;
    double worst = 0;

    for (int stage = 0; stage < t->pp; stage += (t->pp > 1 ? t->pp - 1 : 1)) {
        int layers = vl_cost_stage_layers(cost, t->pp, stage);
        vl_par par = {t->tp, t->pp, t->sp, t->recompute == VL_RECOMPUTE_FULL ? layers : 0};
        vl_mb_time mt = vl_cost_mb_time(cost, segs, n, &par, layers, stage == t->pp - 1);
        worst = mt.fwd + mt.bwd > worst ? mt.fwd + mt.bwd : worst;
    }
    return worst / (t->dp > 0 ? t->dp : 1) * (t->epochs > 0 ? t->epochs : 1);
}

static double bound_of(const vl_cost *cost, const vl_config *cfg, const vl_manifest *sample,
                       uint32_t limit, vl_seg *segs)
{
    size_t n = planned_segs(sample, limit, cfg->training.oversize, segs);

    return n ? layout_time(cost, cfg, segs, n) : 0;
}

static bool cached(adv_bound_cache *cache, const adv_layout *lay, uint32_t limit, double *b)
{
    if (memcmp(&cache->lay, lay, sizeof *lay) != 0) {
        cache->lay = *lay;
        cache->n = 0;
        return false;
    }
    for (size_t i = 0; i < cache->n; i++)
        if (cache->limit[i] == limit) {
            *b = cache->bound[i];
            return true;
        }
    return false;
}

bool adv_self_layout(const char *strategy)
{
    static const char *const self[] = {"hbp", "hydraulis", "mcore_cp", "skrull"};

    for (size_t i = 0; i < sizeof self / sizeof self[0]; i++)
        if (strcmp(strategy, self[i]) == 0)
            return true;
    return false;
}

static double flops_under(const vl_cost *c, const vl_manifest *m, uint32_t limit,
                          vl_oversize policy)
{
    double f = 0;

    for (size_t i = 0; i < m->n; i++) {
        vl_seg seg = {(uint32_t)i, 0, m->len[i]};
        if (m->len[i] > limit && policy == VL_OVERSIZE_DROP)
            continue;
        seg.len = m->len[i] > limit ? limit : m->len[i];
        f += vl_cost_model_flops(c, &seg, 1);
    }
    return f;
}

double adv_flops_ratio(const vl_config *cfg, const vl_manifest *sample, uint32_t limit)
{
    vl_cost c;
    vl_err err = {0};
    double all;

    if (vl_cost_init(&c, cfg, &err) != VL_OK)
        return 0;
    all = flops_under(&c, sample, cfg->training.max_seq_len, cfg->training.oversize);
    return all > 0 ? flops_under(&c, sample, limit, cfg->training.oversize) / all : 0;
}

int adv_bound(const char *cmd, adv_cand *c, const vl_config *cfg, const vl_manifest *sample,
              adv_bound_cache *cache)
{
    const vl_strategy *s = vl_strategy_find(c->strategy);
    vl_cost cost;
    vl_err err = {0};
    uint32_t limit = 0;
    vl_seg *segs;

    if (vl_cost_init(&cost, cfg, &err) != VL_OK) {
        c->stage = ADV_INVALID;
        snprintf(c->why, sizeof c->why, "%s", err.msg);
        return 0;
    }
    if (!states_fit(&cost, cfg, c->why, sizeof c->why)) {
        c->stage = ADV_PRUNED_MEMORY;
        return 0;
    }
    if (vl_run_max_len(s, cfg, &limit, &err) != VL_OK) {
        c->stage = ADV_REFUSED;
        snprintf(c->why, sizeof c->why, "%s", err.msg);
        return 0;
    }
    c->limit = limit;
    c->bound_s = 0;
    if (adv_self_layout(c->strategy))
        return 0;
    if (cached(cache, &c->lay, limit, &c->bound_s))
        return 0;
    if (!(segs = malloc((sample->n ? sample->n : 1) * sizeof *segs))) {
        cli_error(cmd, "out of memory bounding a candidate");
        return EX_OSERR_;
    }
    c->bound_s = bound_of(&cost, cfg, sample, limit, segs);
    free(segs);
    if (cache->n < ADV_BOUND_CACHE) {
        cache->limit[cache->n] = limit;
        cache->bound[cache->n++] = c->bound_s;
    }
    return 0;
}

int adv_judge(const char *cmd, const adv_cand *c, const vl_config *cfg, vl_manifest *m,
              eval_result *out, bool *refused, char *why, size_t whylen)
{
    const vl_strategy *s = vl_strategy_find(c->strategy);
    vl_run_opts ro = {.seed = cfg->training.seed, .allow_oom = true};
    vl_sim_opts so = VL_SIM_OPTS_INIT;
    vl_err err = {0};
    vl_plan p;
    vl_cost cost;
    int rc;

    *refused = false;
    if (vl_run_plan(&p, s, m, cfg, &ro, NULL, &err) != VL_OK) {
        if (err.code == VL_EINTERNAL || err.code == VL_ENOMEM)
            return cli_fail(cmd, &err);
        *refused = true;
        snprintf(why, whylen, "%s", err.msg);
        return 0;
    }
    if (vl_cost_init(&cost, cfg, &err) != VL_OK)
        rc = cli_fail(cmd, &err);
    else
        rc = eval_plan(cmd, &p, &cost, &so, out);
    vl_plan_free(&p);
    snprintf(out->label, sizeof out->label, "%s", c->strategy);
    return rc;
}
