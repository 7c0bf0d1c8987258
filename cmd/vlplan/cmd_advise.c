/* cmd/vlplan/cmd_advise.c -- `vlplan advise`: search parallel layouts x strategies x
 * their tuning for the fastest plan of a data set on a cluster.
 *
 * Stages, each cheaper than the next and each counted in the output:
 *  1. layouts: tp, pp, sp, ZeRO stage and recompute over the cluster's GPUs (keys the
 *     user gave are pinned unless --free names them); the configuration refuses what the
 *     model cannot run (invalid);
 *  2. memory: a layout whose model states alone exceed the device is pruned;
 *  3. bound: candidates in order of a lower bound of their time (the compute of every
 *     token at the best efficiency, no imbalance); once --top candidates that fit are
 *     judged, one whose bound cannot beat the --top-th best is pruned, and so is every
 *     later one;
 *  4. sample: the others are planned and simulated on a deterministic sample of global
 *     batches (--batches), scaled to the data's tokens; a strategy's refusal is kept
 *     with its reason;
 *  5. full: the --top best that fit are planned on the whole data and simulated.
 * The configuration's own layout at each strategy's defaults (what `compare` plans) is a
 * reference: never pruned by the bound, always sampled, and planned whole when its
 * sampled time is within ADV_REF_MARGIN of the best, so that advise's answer is never
 * slower than the best `compare` row for lack of looking.
 * The table holds stage 5: same-work marks as `compare` gives them, the Pareto front of
 * (epoch time, peak memory, dropped tokens), and the `vlplan plan` command of each row.
 * Deterministic; --budget trades that for a deadline and says what it skipped.  What it
 * prints is advise_out.c; judging one candidate, advise_eval.c; the space, advise_space.c. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "advise.h"
#include "report.h"
#include "vlplan.h"

#define CMD "advise"
#define MAX_STRATEGIES 32

static const char *const USAGE =
    "[-c CONFIG] [--set KEY=VALUE]... [--free KEY]... [-s S1,S2,...] [--batches N] "
    "[--top N] [--budget SECONDS] [--no-prune] [--format table|json] [--export-json FILE] "
    "[--write-plan FILE] [--write-metrics FILE] [-q] MANIFEST...";

enum {
    OPT_FREE = 512,
    OPT_BATCHES,
    OPT_TOP,
    OPT_BUDGET,
    OPT_NO_PRUNE,
    OPT_EXPORT_JSON,
    OPT_WRITE_PLAN,
    OPT_WRITE_METRICS
};

static const cli_opt options[] = {
    {"config", 'c', "FILE", "cluster/model YAML (repeatable; later files win)"},
    {"set", OPT_SET, "KEY=VALUE", "override a config key and pin it"},
    {"seed", OPT_SEED, "N", "seed of the plans and of the sample"},
    {"free", OPT_FREE, "KEY",
     "search KEY although a config file sets it (training.tp, pp, "
     "sp, zero, recompute; 'layout' for all)"},
    {"strategies", 's', "LIST", "strategies to search (default: all)"},
    {"batches", OPT_BATCHES, "N",
     "global batches of the sample candidates are judged on "
     "(default 8)"},
    {"top", OPT_TOP, "N", "candidates planned on the whole data (default 3)"},
    {"budget", OPT_BUDGET, "SECONDS",
     "stop judging samples after this long (not "
     "deterministic: says what it skipped)"},
    {"no-prune", OPT_NO_PRUNE, NULL, "judge every candidate's sample (no bound pruning)"},
    {"format", OPT_FORMAT, "FMT", "table (default) or json"},
    {"export-json", OPT_EXPORT_JSON, "FILE", "the result as JSON, beside the table"},
    {"write-plan", OPT_WRITE_PLAN, "FILE", "plan the winner into FILE"},
    {"write-metrics", OPT_WRITE_METRICS, "FILE", "with --write-plan: its metrics JSON"},
    {"quiet", 'q', NULL, "no progress line, no warnings"},
    CLI_MANIFEST_OPTIONS,
    {"help", 'h', NULL, "show this help"},
    {NULL, 0, NULL, NULL},
};

static int take_free(advise_args *a, const char *key)
{
    if (strcmp(key, "layout") == 0) {
        a->free_all = true;
        return 0;
    }
    for (int k = 0; k < ADV_NKEYS; k++)
        if (strcmp(key, adv_key_paths[k]) == 0) {
            if (a->nfree < ADV_NKEYS)
                a->free_keys[a->nfree++] = adv_key_paths[k];
            return 0;
        }
    cli_error(CMD,
              "--free '%s': not a searched key (training.tp, training.pp, training.sp, "
              "training.zero, training.recompute, or layout)",
              key);
    return EX_USAGE_;
}

static int parse_seconds(const char *arg, double *out)
{
    char *end = NULL;
    double v = strtod(arg, &end);

    if (!end || *end || !(v > 0) || v > 86400.0) {
        cli_error(CMD, "invalid value '%s' for --budget (expected seconds in (0, 86400])",
                  arg);
        return EX_USAGE_;
    }
    *out = v;
    return 0;
}

static int on_option(int key, const char *arg, void *ud)
{
    advise_args *a = ud;
    int rc;

    if ((rc = cli_config_option(CMD, &a->cfg, key, arg)) != 1)
        return rc;
    if ((rc = cli_manifest_option(CMD, &a->man, key, arg)) != 1)
        return rc;
    switch (key) {
    case OPT_FREE: return take_free(a, arg);
    case 's': a->list = arg; return 0;
    case OPT_BATCHES: return cli_parse_u64(CMD, "--batches", arg, 1, 1000000, &a->batches);
    case OPT_TOP: return cli_parse_u64(CMD, "--top", arg, 1, 100, &a->top);
    case OPT_BUDGET: return parse_seconds(arg, &a->budget);
    case OPT_NO_PRUNE: a->no_prune = true; return 0;
    case OPT_FORMAT:
        return report_parse_format(CMD, arg, 1u << FMT_TABLE | 1u << FMT_JSON, &a->fmt);
    case OPT_EXPORT_JSON: a->export_json = arg; return 0;
    case OPT_WRITE_PLAN: a->write_plan = arg; return 0;
    case OPT_WRITE_METRICS: a->write_metrics = arg; return 0;
    case 'q': a->log.quiet = 1; return 0;
    }
    return EX_USAGE_;
}

/* ---- what is searched ---- */

static int pick_strategies(const advise_args *a, const char **out, size_t *n, char *buf,
                           size_t cap)
{
    *n = 0;
    if (!a->list) {
        for (size_t i = 0; i < vl_strategy_count() && *n < MAX_STRATEGIES; i++)
            out[(*n)++] = vl_strategy_at(i)->name;
        return 0;
    }
    snprintf(buf, cap, "%s", a->list);
    for (char *save = NULL, *s = strtok_r(buf, ",", &save); s;
         s = strtok_r(NULL, ",", &save)) {
        if (!vl_strategy_find(s)) {
            cli_error(CMD, "unknown strategy '%s' (see 'vlplan strategies')", s);
            return EX_USAGE_;
        }
        if (*n == MAX_STRATEGIES) {
            cli_error(CMD, "-s: at most %d strategies", MAX_STRATEGIES);
            return EX_USAGE_;
        }
        out[(*n)++] = s;
    }
    return 0;
}

/* A key the user gave is pinned, unless freed. */
static void pinned_keys(const advise_args *a, const vl_config *base, bool pinned[ADV_NKEYS])
{
    for (int k = 0; k < ADV_NKEYS; k++) {
        bool freed = a->free_all;
        for (int i = 0; i < a->nfree; i++)
            freed = freed || strcmp(a->free_keys[i], adv_key_paths[k]) == 0;
        const char *src = vl_config_key_source(base, adv_key_paths[k]);
        bool by_set = src && strncmp(src, "--set", 5) == 0;
        pinned[k] = src && (by_set || !freed);
    }
}

/* ---- stages 1-4: bound, screen, sample ---- */

typedef adv_search search;

static bool same_layout(const adv_layout *x, const adv_layout *y)
{
    return memcmp(x, y, sizeof *x) == 0;
}

/* Each candidate's configuration, then its bound on the screen (a layout the
 * configuration refuses is refused for all its candidates, which are contiguous). */
static int bound_all(search *s)
{
    char why[VL_ERRMSG_MAX];

    for (size_t i = 0; i < s->sp.n; i++) {
        adv_cand *c = &s->sp.c[i], *prev = i ? &s->sp.c[i - 1] : NULL;
        bool same = prev && same_layout(&prev->lay, &c->lay);
        vl_config cfg;
        int rc;

        if (same && prev->stage == ADV_INVALID) {
            c->stage = ADV_INVALID;
            memcpy(c->why, prev->why, sizeof c->why);
            continue;
        }
        c->stage = ADV_SAMPLED; /* to be judged, unless memory or a refusal says no */
        rc = adv_cand_config(CMD, &s->a->cfg, c, &cfg, true, why, sizeof why);
        if (rc > 0)
            return rc;
        if (rc < 0) {
            c->stage = same ? ADV_REFUSED : ADV_INVALID;
            snprintf(c->why, sizeof c->why, "%s", why);
            continue;
        }
        rc = adv_bound(CMD, c, &cfg, s->screen, &s->cache);
        c->bound_s *= s->scale_screen;
        vl_config_free(&cfg);
        if (rc)
            return rc;
    }
    return 0;
}

/* The tokens of the screen a plan at training.max_seq_len processes: the work every
 * candidate is held to from the start, so that one that drops more never sets the bar. */
static uint64_t full_work(const vl_manifest *m, const vl_config *base)
{
    uint32_t limit = base->training.max_seq_len;
    vl_oversize policy = base->training.oversize;
    uint64_t tok = 0;

    for (size_t i = 0; i < m->n; i++)
        if (m->len[i] <= limit || policy == VL_OVERSIZE_TRUNCATE)
            tok += m->len[i] <= limit ? m->len[i] : limit;
        else if (policy != VL_OVERSIZE_DROP)
            tok += m->len[i]; /* split keeps every token; error refuses the plan */
    return tok;
}

/* A strategy that picks its own layout is bounded by the best layout any candidate
 * could have at the context length, scaled by the work its own limit leaves. */
static void bound_self(search *s, const vl_config *base)
{
    double best = INFINITY;

    for (size_t i = 0; i < s->sp.n; i++) {
        const adv_cand *c = &s->sp.c[i];
        if (c->stage == ADV_SAMPLED && !adv_self_layout(c->strategy) &&
            c->limit >= base->training.max_seq_len && c->bound_s < best)
            best = c->bound_s;
    }
    for (size_t i = 0; i < s->sp.n; i++) {
        adv_cand *c = &s->sp.c[i];
        if (c->stage != ADV_SAMPLED || !adv_self_layout(c->strategy))
            continue;
        c->bound_s = isinf(best) ? 0
                     : c->limit >= base->training.max_seq_len
                         ? best
                         : best * adv_flops_ratio(base, s->screen, c->limit);
    }
}

static double bound_key(const adv_cand *c)
{
    return c->bound_s;
}

static double screen_key(const adv_cand *c)
{
    return adv_work_key(c, c->screen_s);
}

static double sample_key(const adv_cand *c)
{
    return adv_work_key(c, c->sample_s);
}

static uint64_t tokens_at(const adv_cand *c, bool sample)
{
    return sample ? c->sample_tok : c->screen_tok;
}

/* Marks the candidates at stage st whose tokens on the screen (or the sample) fall 0.1%
 * short of the most any of them planned. */
static void mark_less_work(search *s, adv_stage st, bool sample)
{
    uint64_t most = 0;

    for (size_t i = 0; i < s->sp.n; i++)
        if (s->sp.c[i].stage == st && tokens_at(&s->sp.c[i], sample) > most)
            most = tokens_at(&s->sp.c[i], sample);
    for (size_t i = 0; i < s->sp.n; i++)
        if (s->sp.c[i].stage == st)
            s->sp.c[i].less_work =
                (double)tokens_at(&s->sp.c[i], sample) < 0.999 * (double)most;
}

/* Candidates promoted from the screen to the sample: enough that the best few are not
 * lost to one batch's noise. */
static size_t keep_of(const advise_args *a)
{
    size_t k = 4 * (size_t)a->top;
    return k < 16 ? 16 : k > 100 ? 100 : k;
}

/* The k-th best screened time among candidates that fit, +inf while fewer (k <= 100). */
static double kth_best(const search *s, size_t k)
{
    double best[100];
    size_t n = 0;

    for (size_t i = 0; i < s->sp.n; i++) {
        const adv_cand *c = &s->sp.c[i];
        double v = c->screen_s;
        bool dup = false;
        if (c->stage != ADV_SCREENED || !c->screen_fits || !(v > 0) ||
            (double)c->screen_tok < 0.999 * (double)s->most_screen)
            continue;
        for (size_t j = 0; j < n && !dup; j++)
            dup = best[j] == v; /* a layout key the strategy ignores: the same plan */
        if (dup || (n == k && v >= best[k - 1]))
            continue;
        size_t j = n < k ? n++ : k - 1; /* the slot of the worst kept */
        for (; j > 0 && best[j - 1] > v; j--)
            best[j] = best[j - 1];
        best[j] = v;
    }
    return n < k ? INFINITY : best[k - 1];
}

/* Plan c on m and simulate it: its time scaled to the data's tokens, and whether it
 * fits; a refusal marks c. */
static int judge_on(search *s, adv_cand *c, vl_manifest *m, double scale, double *t,
                    bool *fits, uint64_t *tok)
{
    vl_config cfg;
    eval_result r;
    bool refused = false;
    char why[VL_ERRMSG_MAX];
    int rc = adv_cand_config(CMD, &s->a->cfg, c, &cfg, true, why, sizeof why);

    *fits = false;
    *t = INFINITY;
    *tok = 0;
    if (rc > 0)
        return rc;
    if (rc < 0) {
        c->stage = ADV_REFUSED;
        snprintf(c->why, sizeof c->why, "%s", why);
        return 0;
    }
    rc = adv_judge(CMD, c, &cfg, m, &r, &refused, c->why, sizeof c->why);
    vl_config_free(&cfg);
    if (rc == 0 && refused)
        c->stage = ADV_REFUSED;
    if (rc == 0 && !refused) {
        *fits = eval_fits(&r);
        *t = r.ev.sim.epoch_time_s * scale;
        *tok = r.ev.mt.tokens;
    }
    return rc;
}

/* Stage 4a: candidates in bound order on one global batch; once keep_of() of them fit,
 * one whose bound cannot beat the worst of those is pruned, and so is every later one. */
static int screen_all(search *s, const size_t *order, size_t n)
{
    double t0 = cli_now_s();
    size_t keep = keep_of(s->a);
    int rc;

    cli_meter_start(&s->meter, &s->a->log, (int64_t)n, "advise: screening candidates");
    for (size_t k = 0; k < n; k++) {
        adv_cand *c = &s->sp.c[order[k]];
        if (s->a->budget > 0 && cli_now_s() - t0 > s->a->budget) {
            c->stage = ADV_SKIPPED;
            continue;
        }
        if (!s->a->no_prune && !c->reference && c->bound_s >= kth_best(s, keep)) {
            c->stage = ADV_PRUNED_BOUND;
            continue;
        }
        c->stage = ADV_SCREENED;
        rc = judge_on(s, c, s->screen, s->scale_screen, &c->screen_s, &c->screen_fits,
                      &c->screen_tok);
        if (c->screen_tok > s->most_screen)
            s->most_screen = c->screen_tok;
        if (rc)
            return rc;
        cli_meter_step(&s->meter, k + 1);
    }
    return 0;
}

/* A layout key the strategy ignores gives the same plan: the same strategy and tuning
 * with the same time is the same candidate, judged further once. */
static bool duplicate(const search *s, const size_t *idx, size_t k,
                      double (*key)(const adv_cand *))
{
    const adv_cand *c = &s->sp.c[idx[k]];

    for (size_t j = 0; j < k; j++) {
        const adv_cand *d = &s->sp.c[idx[j]];
        if (key(d) == key(c) && strcmp(d->strategy, c->strategy) == 0 &&
            strcmp(d->tune, c->tune) == 0)
            return true;
    }
    return false;
}

/* idx[0..n) sorted by key, duplicates left out; the count kept. */
static int distinct_best(search *s, size_t *idx, size_t n, double (*key)(const adv_cand *),
                         size_t *m)
{
    int rc = adv_sort_by(idx, n, s->sp.c, key);

    *m = 0;
    for (size_t k = 0; rc == 0 && k < n; k++)
        if (!duplicate(s, idx, k, key))
            idx[(*m)++] = idx[k];
    return rc;
}

static int sample_one(search *s, adv_cand *c)
{
    c->stage = ADV_SAMPLED;
    return judge_on(s, c, s->sample, s->scale, &c->sample_s, &c->sample_fits, &c->sample_tok);
}

/* Stage 4b: the keep_of() best screened that fit, and the references, on the whole
 * sample. */
static int sample_best(search *s, size_t *idx)
{
    size_t n = 0, keep = keep_of(s->a);
    int rc;

    mark_less_work(s, ADV_SCREENED, false);
    for (size_t i = 0; i < s->sp.n; i++)
        if (s->sp.c[i].stage == ADV_SCREENED && s->sp.c[i].screen_fits)
            idx[n++] = i;
    if ((rc = distinct_best(s, idx, n, screen_key, &n)) != 0)
        return rc;
    for (size_t k = 0; k < n && k < keep; k++) {
        cli_progress(&s->a->log, false,
                     "advise: judging the best %zu on %zu samples (%zu/%zu)",
                     n < keep ? n : keep, s->sample->n, k + 1, n < keep ? n : keep);
        if ((rc = sample_one(s, &s->sp.c[idx[k]])) != 0)
            return rc;
    }
    for (size_t i = 0; i < s->sp.n; i++) { /* the references not among them */
        adv_cand *c = &s->sp.c[i];
        if (c->reference && c->stage == ADV_SCREENED && c->screen_fits &&
            (rc = sample_one(s, c)) != 0)
            return rc;
    }
    return 0;
}

/* ---- stage 5: the best planned whole ---- */

static int plan_full(search *s, adv_cand *c)
{
    vl_config cfg;
    bool refused = false;
    char why[VL_ERRMSG_MAX];
    int rc = adv_cand_config(CMD, &s->a->cfg, c, &cfg, false, why, sizeof why);

    if (rc)
        return rc > 0 ? rc : EX_CONFIG_;
    cli_progress(&s->a->log, false, "advise: planning %s on the whole data...", c->strategy);
    rc = adv_judge(CMD, c, &cfg, s->m, &c->full, &refused, c->why, sizeof c->why);
    vl_config_free(&cfg);
    if (rc == 0)
        c->stage = refused ? ADV_REFUSED : ADV_PLANNED;
    return rc;
}

static int full_top(search *s, size_t *idx, size_t *nplanned)
{
    size_t n = 0, m = 0;
    int rc;

    mark_less_work(s, ADV_SAMPLED, true);
    for (size_t i = 0; i < s->sp.n; i++)
        if (s->sp.c[i].stage == ADV_SAMPLED && s->sp.c[i].sample_fits)
            idx[n++] = i;
    if ((rc = distinct_best(s, idx, n, sample_key, &m)) != 0)
        return rc;
    *nplanned = m < s->a->top ? m : (size_t)s->a->top;
    for (size_t k = 0; k < *nplanned; k++)
        if ((rc = plan_full(s, &s->sp.c[idx[k]])) != 0)
            return rc;
    /* the references the sample cannot tell from the best, unless one of the same time
     * was planned (a layout key the strategy ignores) */
    double bar = m ? sample_key(&s->sp.c[idx[0]]) * (1 + ADV_REF_MARGIN) : 0;
    for (size_t k = *nplanned; k < m; k++) {
        adv_cand *c = &s->sp.c[idx[k]];
        if (!c->reference || sample_key(c) > bar)
            continue;
        if ((rc = plan_full(s, c)) != 0)
            return rc;
        (*nplanned)++;
    }
    cli_progress(&s->a->log, true, " ");
    return 0;
}

/* ---- the command ---- */

static int search_run(search *s, const vl_config *base)
{
    size_t *order = malloc((s->sp.n ? s->sp.n : 1) * sizeof *order), n = 0, nplanned = 0;
    int rc;

    if (!order) {
        cli_error(CMD, "out of memory");
        return EX_OSERR_;
    }
    rc = adv_sample(CMD, s->m, base, 1, &s->screen);
    if (rc == 0)
        rc = adv_sample(CMD, s->m, base, (size_t)s->a->batches, &s->sample);
    if (rc == 0) {
        s->scale_screen =
            s->screen->tokens ? (double)s->m->tokens / (double)s->screen->tokens : 1.0;
        s->scale = s->sample->tokens ? (double)s->m->tokens / (double)s->sample->tokens : 1.0;
        rc = bound_all(s);
    }
    if (rc == 0)
        bound_self(s, base);
    if (rc == 0)
        s->most_screen = full_work(s->screen, base);
    for (size_t i = 0; rc == 0 && i < s->sp.n; i++)
        if (s->sp.c[i].stage == ADV_SAMPLED)
            order[n++] = i;
    if (rc == 0)
        rc = adv_sort_by(order, n, s->sp.c, bound_key);
    if (rc == 0)
        rc = screen_all(s, order, n);
    if (rc == 0)
        rc = sample_best(s, order);
    if (rc == 0)
        rc = full_top(s, order, &nplanned);
    cli_progress(&s->a->log, true, " ");
    if (rc == 0)
        rc = adv_report(s, order, nplanned);
    free(order);
    return rc;
}

static int run(advise_args *a)
{
    const char *strategies[MAX_STRATEGIES];
    char listbuf[1024];
    bool pinned[ADV_NKEYS];
    size_t ns = 0;
    vl_config base;
    search s;
    int rc;

    memset(&s, 0, sizeof s);
    s.a = a;
    if ((rc = pick_strategies(a, strategies, &ns, listbuf, sizeof listbuf)) != 0)
        return rc;
    if (a->write_plan)
        for (int i = 0; i < a->nmanifests; i++)
            if (strcmp(a->manifests[i], "-") == 0) {
                cli_error(CMD, "--write-plan plans again: give manifest files, not '-'");
                return EX_USAGE_;
            }
    if ((rc = cli_config_load(CMD, &a->cfg, &base)) != 0)
        return rc;
    pinned_keys(a, &base, pinned);
    s.gpus = base.cluster.gpus;
    rc = adv_space_build(&s.sp, &base, pinned, strategies, ns);
    if (rc == 0)
        rc = cli_manifest_load(CMD, &a->man, a->manifests, a->nmanifests, &s.m);
    if (rc == 0)
        rc = search_run(&s, &base);
    vl_manifest_free(s.screen);
    vl_manifest_free(s.sample);
    vl_manifest_free(s.m);
    adv_space_free(&s.sp);
    vl_config_free(&base);
    return rc;
}

int cmd_advise(int argc, char **argv)
{
    advise_args a;
    int first = 0, rc;

    memset(&a, 0, sizeof a);
    cli_log_init(&a.log);
    a.batches = 8;
    a.top = 3;
    rc = cli_parse(argc, argv, CMD, USAGE, options, on_option, &a, &first);
    if (rc)
        return rc < 0 ? 0 : rc;
    if (a.write_metrics && !a.write_plan) {
        cli_error(CMD, "--write-metrics goes with --write-plan");
        return EX_USAGE_;
    }
    a.manifests = argv + first;
    a.nmanifests = argc - first;
    return run(&a);
}
