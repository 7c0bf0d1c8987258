/* cmd/vlplan/compare_work.c -- same work or marked (compare_work.h): a comparison holds
 * only between plans of the same tokens, optimizer steps and batch scope, so every row
 * that differs is named on stderr and its speedup is n/a where the work differs. */
#include "compare_work.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vlplan.h"

#define LESS_WORK 0.999  /* a row planning under 99.9% of the most tokens did less */
#define OTHER_STEPS 0.01 /* iteration counts further apart than 1% */

void compare_ctx_describe(compare_ctx *ctx, const vl_manifest *m, const vl_config *cfg)
{
    const vl_training_cfg *t = &cfg->training;
    vl_stats st;
    vl_err err = {0};
    char batch[64];

    ctx->samples = m->n;
    ctx->tokens = m->tokens;
    ctx->lengths = m->len;
    ctx->nlengths = m->n;
    if (vl_stats_compute(&st, m->len, m->n, &err) == VL_OK) {
        ctx->p50 = st.p50;
        ctx->p90 = st.p90;
        ctx->p99 = st.p99;
        ctx->longest = st.max;
    }
    if (t->global_batch)
        snprintf(batch, sizeof batch, "%u samples", t->global_batch);
    else
        snprintf(batch, sizeof batch, "%llu tokens", (unsigned long long)t->global_tokens);
    snprintf(ctx->config, sizeof ctx->config,
             "%s on %d %s GPUs, tp %d, pp %d, sp %d, dp %d, context %u, global batch %s",
             cfg->model.preset, cfg->cluster.gpus, cfg->cluster.gpu, t->tp, t->pp, t->sp,
             t->dp, t->max_seq_len, batch);
}

bool compare_epoch_scope(const char *strategy, const vl_config *cfg)
{
    const vl_strategy *s = vl_strategy_find(strategy);

    return s && s->epoch_scope && s->epoch_scope(cfg);
}

static size_t find_baseline(const eval_result *res, size_t n, const char *baseline)
{
    for (size_t i = 0; baseline && i < n; i++)
        if (strcmp(res[i].label, baseline) == 0)
            return i;
    return 0;
}

/* Token shares and the less-work mark; the row planning the most is the reference. */
static void mark_tokens(eval_result *res, size_t n, bool quiet)
{
    uint64_t most = 0;
    size_t who = 0;
    char c[2][32];

    for (size_t i = 0; i < n; i++)
        if (!res[i].refused && res[i].ev.mt.tokens > most) {
            most = res[i].ev.mt.tokens;
            who = i;
        }
    for (size_t i = 0; i < n; i++) {
        eval_result *r = &res[i];
        r->token_share = most && !r->refused ? (double)r->ev.mt.tokens / (double)most : 0;
        r->less_work = !r->refused && r->token_share < LESS_WORK;
        if (r->less_work && !quiet)
            fprintf(stderr,
                    "vlplan compare: warning: %s planned %.1f%% of the tokens %s "
                    "planned (%s of %s): it did less work; its speedup is n/a\n",
                    r->label, 100.0 * r->token_share, res[who].label,
                    cli_count(r->ev.mt.tokens, c[0], 32), cli_count(most, c[1], 32));
    }
}

static void mark_steps(eval_result *res, size_t n, size_t b, bool quiet)
{
    double base = (double)res[b].ev.mt.iterations;

    for (size_t i = 0; i < n; i++) {
        eval_result *r = &res[i];
        r->other_steps = !r->refused && !res[b].refused &&
                         fabs((double)r->ev.mt.iterations - base) > OTHER_STEPS * base;
        if (r->other_steps && !quiet)
            fprintf(stderr,
                    "vlplan compare: warning: %s makes %zu optimizer steps, the "
                    "baseline %s %zu: its epoch time counts other steps\n",
                    r->label, r->ev.mt.iterations, res[b].label, res[b].ev.mt.iterations);
    }
}

static void warn_scopes(const eval_result *res, size_t n, size_t b, bool quiet)
{
    for (size_t i = 0; i < n && !quiet; i++)
        if (!res[i].refused && !res[b].refused && res[i].epoch_scope != res[b].epoch_scope) {
            fprintf(stderr,
                    "vlplan compare: warning: rows of different scope: %s regroups "
                    "samples across the epoch (epoch), %s keeps each sampled global "
                    "batch (batch); the papers' baselines are batch scope "
                    "(pack.scope=batch)\n",
                    res[i].epoch_scope ? res[i].label : res[b].label,
                    res[i].epoch_scope ? res[b].label : res[i].label);
            return;
        }
}

/* Speedups only between rows that fit and planned the same tokens. */
static void speedups(eval_result *res, size_t n, size_t b, bool quiet)
{
    bool base_ok = !res[b].refused && eval_fits(&res[b]) && !res[b].less_work;

    for (size_t i = 0; i < n; i++) {
        eval_result *r = &res[i];
        bool ok = base_ok && !r->refused && eval_fits(r) && !r->less_work;
        r->speedup = ok && r->ev.sim.epoch_time_s > 0
                         ? res[b].ev.sim.epoch_time_s / r->ev.sim.epoch_time_s
                         : NAN;
        if (r->refused && !quiet)
            fprintf(stderr, "vlplan compare: warning: %s refused: %s\n", r->label, r->why);
        else if (!r->refused && !eval_fits(r) && !quiet)
            fprintf(stderr,
                    "vlplan compare: warning: %s does not fit device memory: %zu of "
                    "%zu iterations over, worst %.2f GiB; its speedup is n/a%s\n",
                    r->label, r->ev.sim.oom_iters, r->ev.sim.iterations,
                    r->ev.sim.peak_mem_gib.max,
                    i == b ? ", and so is every row's against it" : "");
    }
}

void compare_annotate(eval_result *res, size_t n, const char *baseline, bool quiet)
{
    size_t b = find_baseline(res, n, baseline);

    mark_tokens(res, n, quiet);
    mark_steps(res, n, b, quiet);
    warn_scopes(res, n, b, quiet);
    speedups(res, n, b, quiet);
}

/* ---- --same-tokens ---- */

static int row_limit(const compare_row_view *r, const cli_config_args *args, uint32_t *limit,
                     char *why, size_t whylen)
{
    cli_config_args c = *args;
    vl_config cfg;
    vl_err err = {0};
    int rc;

    for (int i = 0; i < r->nsets; i++)
        if ((rc = cli_config_add_set("compare", &c, r->sets[i])) != 0)
            return rc;
    if ((rc = cli_config_load("compare", &c, &cfg)) != 0)
        return rc;
    if (vl_run_limit(vl_strategy_find(r->strategy), &cfg, limit, why, whylen, &err) != VL_OK) {
        *limit = UINT32_MAX; /* it refuses anyway: its row will say why */
        snprintf(why, whylen, "refused");
    }
    vl_config_free(&cfg);
    return 0;
}

/* The manifest cut at limit under policy, as a new manifest of lengths. */
static int cut_manifest(const vl_manifest *m, uint32_t limit, vl_oversize policy,
                        vl_manifest **out, size_t *cut, uint64_t *cut_tokens)
{
    vl_selection sel;
    vl_err err = {0};
    uint32_t *len = NULL;
    vl_status st = vl_select(&sel, m, limit, policy, &err);

    if (st == VL_OK && !(len = malloc((sel.n ? sel.n : 1) * sizeof *len)))
        st = vl_seterr(&err, VL_ENOMEM, "out of memory cutting the manifest");
    for (size_t i = 0; st == VL_OK && i < sel.n; i++)
        len[i] = sel.len[sel.idx[i]];
    if (st == VL_OK)
        st = vl_manifest_from_lengths(out, len, sel.n, &err);
    *cut = sel.ndrops;
    *cut_tokens = 0;
    for (size_t i = 0; i < sel.ndrops; i++)
        *cut_tokens += sel.drops[i].len;
    free(len);
    vl_selection_free(&sel);
    return st == VL_OK ? 0 : cli_fail("compare", &err);
}

int compare_same_tokens(const compare_row_view *rows, size_t n, const cli_config_args *args,
                        const vl_config *shared, vl_manifest **m, compare_ctx *ctx, bool quiet)
{
    uint32_t least = UINT32_MAX, limit;
    char why[160], least_why[160] = "", lim[32], c[2][32];
    size_t who = 0, cut = 0;
    uint64_t cut_tokens = 0;
    vl_oversize policy = shared->training.oversize;
    vl_manifest *cutm = NULL;
    int rc;

    for (size_t i = 0; i < n; i++) {
        if ((rc = row_limit(&rows[i], args, &limit, why, sizeof why)) != 0)
            return rc;
        if (limit < least) {
            least = limit;
            who = i;
            snprintf(least_why, sizeof least_why, "%s", why);
        }
    }
    bool over = false;
    for (size_t i = 0; i < (*m)->n && !over; i++)
        over = (*m)->len[i] > least;
    if (over && policy != VL_OVERSIZE_TRUNCATE && policy != VL_OVERSIZE_DROP) {
        cli_error("compare",
                  "--same-tokens: samples exceed %u tokens (%s's limit: %s); set "
                  "training.oversize=truncate or drop to cut them for every row",
                  least, rows[who].label, least_why);
        return EX_USAGE_;
    }
    if (over && (rc = cut_manifest(*m, least, policy, &cutm, &cut, &cut_tokens)) != 0)
        return rc;
    cli_count(least, lim, sizeof lim);
    snprintf(ctx->same_tokens, sizeof ctx->same_tokens,
             "--same-tokens: every row planned samples of at most %s tokens, the limit of %s "
             "(%s); training.oversize=%s %s %s samples (%s tokens) for every row",
             lim, rows[who].label, least_why, policy == VL_OVERSIZE_DROP ? "drop" : "truncate",
             policy == VL_OVERSIZE_DROP ? "left out" : "cut", cli_count(cut, c[0], 32),
             cli_count(cut_tokens, c[1], 32));
    if (!quiet)
        fprintf(stderr, "vlplan compare: %s\n", ctx->same_tokens);
    if (cutm) {
        vl_manifest_free(*m);
        *m = cutm;
        ctx->lengths = cutm->len;
        ctx->nlengths = cutm->n;
    }
    return 0;
}
