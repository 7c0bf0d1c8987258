/* cmd/vlplan/advise_out.c -- what `vlplan advise` prints (advise.h): the planned rows by
 * epoch time, the same-work marks, the Pareto front of (epoch time, peak memory, dropped
 * tokens), each row's reproducing command, the JSON, and the winner's plan. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "advise.h"

#define CMD "advise"

typedef struct keyed {
    double key;
    size_t idx;
} keyed;

static int by_key(const void *x, const void *y)
{
    const keyed *a = x, *b = y;

    if (a->key != b->key)
        return a->key < b->key ? -1 : 1;
    return a->idx < b->idx ? -1 : a->idx > b->idx;
}

int adv_sort_by(size_t *idx, size_t n, const adv_cand *c, double (*key)(const adv_cand *))
{
    keyed *k = malloc((n ? n : 1) * sizeof *k);

    if (!k) {
        cli_error(CMD, "out of memory");
        return EX_OSERR_;
    }
    for (size_t i = 0; i < n; i++)
        k[i] = (keyed){key(&c[idx[i]]), idx[i]};
    qsort(k, n, sizeof *k, by_key);
    for (size_t i = 0; i < n; i++)
        idx[i] = k[i].idx;
    free(k);
    return 0;
}

/* Same work first: a candidate that planned fewer tokens than the most (training.
 * oversize at a shorter limit) ranks after every one that planned them all. */
double adv_work_key(const adv_cand *c, double t)
{
    return c->less_work ? 1e300 : t;
}

/* Fitting plans by epoch time first, the others after in candidate order. */
static double epoch_key(const adv_cand *c)
{
    bool fits = c->stage == ADV_PLANNED && eval_fits(&c->full);
    return fits ? adv_work_key(c, c->full.ev.sim.epoch_time_s) : INFINITY;
}

/* Not beaten in epoch time, peak memory and dropped tokens at once by another row. */
static void mark_pareto(adv_cand *c, const size_t *idx, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        adv_cand *x = &c[idx[i]];
        x->pareto = x->stage == ADV_PLANNED && eval_fits(&x->full);
        for (size_t j = 0; j < n && x->pareto; j++) {
            const adv_cand *y = &c[idx[j]];
            if (j == i || y->stage != ADV_PLANNED || !eval_fits(&y->full))
                continue;
            bool le = y->full.ev.sim.epoch_time_s <= x->full.ev.sim.epoch_time_s &&
                      y->full.ev.sim.peak_mem_gib.max <= x->full.ev.sim.peak_mem_gib.max &&
                      y->full.ev.mt.dropped_tokens <= x->full.ev.mt.dropped_tokens;
            bool lt = y->full.ev.sim.epoch_time_s < x->full.ev.sim.epoch_time_s ||
                      y->full.ev.sim.peak_mem_gib.max < x->full.ev.sim.peak_mem_gib.max ||
                      y->full.ev.mt.dropped_tokens < x->full.ev.mt.dropped_tokens;
            x->pareto = !(le && lt);
        }
    }
}

static void command_line(const advise_args *a, const adv_cand *c, char *buf, size_t n)
{
    size_t k = (size_t)snprintf(buf, n, "vlplan plan -s %s", c->strategy);

    for (int i = 0; i < a->cfg.npaths && k < n; i++)
        k += (size_t)snprintf(buf + k, n - k, " -c %s", a->cfg.paths[i]);
    for (int i = 0; i < a->cfg.nsets && k < n; i++)
        k += (size_t)snprintf(buf + k, n - k, " --set %s", a->cfg.sets[i]);
    for (int i = 0; i < c->nsets && k < n; i++)
        k += (size_t)snprintf(buf + k, n - k, " --set %s", c->sets[i]);
    for (int i = 0; i < a->nmanifests && k < n; i++)
        k += (size_t)snprintf(buf + k, n - k, " %s", a->manifests[i]);
}

static void count_stages(adv_search *s)
{
    memset(s->counts, 0, sizeof s->counts);
    for (size_t i = 0; i < s->sp.n; i++)
        s->counts[s->sp.c[i].stage]++;
}

static void print_summary(const adv_search *s, size_t nplanned)
{
    char c[2][32];

    printf("advise: %s samples, %s tokens on %d GPUs; %zu layouts x strategies x tunings = "
           "%zu candidates\n",
           cli_count(s->m->n, c[0], 32), cli_count(s->m->tokens, c[1], 32), s->gpus,
           s->sp.layouts, s->sp.n);
    printf("  invalid for the model %zu, model states over memory %zu, refused by the "
           "strategy %zu, pruned by the bound %zu, skipped by --budget %zu;\n"
           "  judged on one global batch (%zu samples) %zu, of them on %zu batches (%zu "
           "samples) %zu, planned whole %zu\n\n",
           s->counts[ADV_INVALID], s->counts[ADV_PRUNED_MEMORY], s->counts[ADV_REFUSED],
           s->counts[ADV_PRUNED_BOUND], s->counts[ADV_SKIPPED], s->screen->n,
           s->counts[ADV_SCREENED] + s->counts[ADV_SAMPLED] + s->counts[ADV_PLANNED],
           (size_t)s->a->batches, s->sample->n,
           s->counts[ADV_SAMPLED] + s->counts[ADV_PLANNED], nplanned);
}

/* The best reference row (the configuration's own layout at a strategy's defaults, as
 * `compare` plans it) against row 1: what following the advice gains. */
static void print_reference(const adv_search *s, const size_t *idx, size_t n)
{
    for (size_t k = 0; k < n; k++) {
        const adv_cand *c = &s->sp.c[idx[k]], *top = &s->sp.c[idx[0]];
        if (c->stage != ADV_PLANNED || !c->reference || !eval_fits(&c->full) || c->less_work)
            continue;
        printf("\nyour configuration's layout at a strategy's defaults (what compare plans): "
               "best is row %zu (%s, %.1f s); row 1 is %.3fx as fast\n",
               k + 1, c->strategy, c->full.ev.sim.epoch_time_s,
               c->full.ev.sim.epoch_time_s / top->full.ev.sim.epoch_time_s);
        return;
    }
    printf("\nyour configuration's layout at the strategies' defaults: no row planned whole "
           "(sampled %.0f%%+ slower than the best, or does not fit)\n",
           100 * ADV_REF_MARGIN);
}

static void print_table(const adv_search *s, const size_t *idx, size_t n)
{
    char line[2048], t[3][32];

    printf("%-4s %-10s %-28s %4s %4s %4s %4s %5s %-9s %12s %9s %12s %7s %6s  %s\n", "#",
           "strategy", "tuning", "tp", "pp", "sp", "dp", "zero", "recompute", "epoch_time_s",
           "peak_gib", "dropped_tok", "iters", "mfu", "pareto");
    for (size_t k = 0; k < n; k++) {
        const adv_cand *c = &s->sp.c[idx[k]];
        const eval_result *r = &c->full;
        if (c->stage != ADV_PLANNED)
            continue;
        printf("%-4zu %-10s %-28s %4d %4d %4d %4d %5s %-9s %12s %9.2f %12s %7zu %5.1f%%  "
               "%s%s%s\n",
               k + 1, c->strategy, c->tune[0] ? c->tune : "(defaults)", c->lay.tp, c->lay.pp,
               c->lay.sp, c->lay.dp, adv_zero_name(c->lay.zero),
               adv_recompute_name(c->lay.recompute),
               cli_fixed(r->ev.sim.epoch_time_s, 1, t[0], 32), r->ev.sim.peak_mem_gib.max,
               cli_count(r->ev.mt.dropped_tokens, t[1], 32), r->ev.mt.iterations,
               100 * r->ev.sim.mfu_overall, c->pareto ? "*" : "",
               eval_fits(r) ? (c->less_work ? " (less work: fewer tokens)" : "")
                            : " (does not fit)",
               c->reference ? " (your layout)" : "");
    }
    print_reference(s, idx, n);
    printf("\n");
    for (size_t k = 0; k < n; k++) {
        const adv_cand *c = &s->sp.c[idx[k]];
        if (c->stage != ADV_PLANNED)
            continue;
        command_line(s->a, c, line, sizeof line);
        printf("%zu: %s\n", k + 1, line);
    }
}

/* Rows that planned fewer tokens than the most, or other iteration counts, as compare
 * marks them. */
static void warn_same_work(const adv_search *s, const size_t *idx, size_t n)
{
    uint64_t most = 0;
    size_t iters0 = 0;

    for (size_t k = 0; k < n; k++) {
        uint64_t t = s->sp.c[idx[k]].full.ev.mt.tokens;
        if (s->sp.c[idx[k]].stage == ADV_PLANNED && t > most)
            most = t;
    }
    for (size_t k = 0; k < n && !s->a->log.quiet; k++) {
        const adv_cand *c = &s->sp.c[idx[k]];
        if (c->stage != ADV_PLANNED)
            continue;
        if (!iters0)
            iters0 = c->full.ev.mt.iterations;
        if ((double)c->full.ev.mt.tokens < 0.999 * (double)most)
            fprintf(stderr,
                    "vlplan advise: warning: row %zu (%s) planned %.1f%% of the tokens "
                    "the others did: its time is for less work\n",
                    k + 1, c->strategy, 100.0 * (double)c->full.ev.mt.tokens / (double)most);
        if (fabs((double)c->full.ev.mt.iterations - (double)iters0) > 0.01 * (double)iters0)
            fprintf(stderr,
                    "vlplan advise: warning: row %zu (%s) makes %zu optimizer steps, "
                    "row 1 makes %zu\n",
                    k + 1, c->strategy, c->full.ev.mt.iterations, iters0);
    }
}

static int json_cand(vl_jw *row, const advise_args *a, const adv_cand *c)
{
    char line[2048];
    int bad = 0;

    command_line(a, c, line, sizeof line);
    bad |= vl_jw_str(row, "strategy", c->strategy);
    bad |= vl_jw_str(row, "tuning", c->tune);
    bad |= vl_jw_int(row, "tp", c->lay.tp) | vl_jw_int(row, "pp", c->lay.pp);
    bad |= vl_jw_int(row, "sp", c->lay.sp) | vl_jw_int(row, "dp", c->lay.dp);
    bad |= vl_jw_str(row, "zero", adv_zero_name(c->lay.zero));
    bad |= vl_jw_str(row, "recompute", adv_recompute_name(c->lay.recompute));
    bad |= vl_jw_bool(row, "pareto", c->pareto);
    bad |= vl_jw_bool(row, "reference", c->reference);
    bad |= vl_jw_num(row, "bound_s", c->bound_s);
    bad |= vl_jw_num(row, "screen_epoch_time_s", c->screen_s);
    bad |= vl_jw_num(row, "sample_epoch_time_s", c->sample_s);
    bad |= vl_jw_str(row, "command", line);
    return bad || eval_json_into(row, &c->full);
}

static vl_jw *result_json(const adv_search *s, const size_t *idx, size_t n)
{
    vl_jw *o = vl_jw_object(), *st = o ? vl_jw_child(o, "candidates") : NULL, *rows;
    static const char *const names[] = {"invalid", "pruned_memory",  "pruned_bound",
                                        "refused", "skipped_budget", "screened",
                                        "sampled", "planned"};
    int bad = !st;

    for (int k = 0; st && k <= ADV_PLANNED; k++)
        bad |= vl_jw_int(st, names[k], (int64_t)s->counts[k]);
    bad |= vl_jw_int(o, "layouts", (int64_t)s->sp.layouts);
    bad |= vl_jw_int(o, "screen_samples", (int64_t)s->screen->n);
    bad |= vl_jw_int(o, "sample_samples", (int64_t)s->sample->n);
    rows = o ? vl_jw_array(o, "rows") : NULL;
    bad |= !rows;
    for (size_t k = 0; rows && k < n; k++)
        if (s->sp.c[idx[k]].stage == ADV_PLANNED)
            bad |= json_cand(vl_jw_push(rows), s->a, &s->sp.c[idx[k]]);
    if (bad) {
        vl_jw_free(o);
        return NULL;
    }
    return o;
}

static int write_json_file(const adv_search *s, const size_t *idx, size_t n)
{
    vl_jw *o = result_json(s, idx, n);
    char *text = o ? vl_jw_dump(o) : NULL;
    int rc;

    vl_jw_free(o);
    if (!text) {
        cli_error(CMD, "out of memory");
        return EX_OSERR_;
    }
    size_t len = strlen(text);
    char *nl = realloc(text, len + 2);
    if (!nl) {
        free(text);
        cli_error(CMD, "out of memory");
        return EX_OSERR_;
    }
    memcpy(nl + len, "\n", 2);
    rc = cli_write_text(CMD, s->a->export_json, nl);
    free(nl);
    return rc;
}

/* The winner's plan, through `vlplan plan` itself: the same checks, atomic outputs. */
static int write_winner(const advise_args *a, const adv_cand *c)
{
    char *argv[8 + 2 * 16 + 2 * (64 + ADV_MAX_SETS) + 64];
    char sets[ADV_MAX_SETS][ADV_SET_LEN];
    int n = 0;

    argv[n++] = (char *)"plan";
    argv[n++] = (char *)"-s";
    argv[n++] = (char *)c->strategy;
    argv[n++] = (char *)"-q";
    for (int i = 0; i < a->cfg.npaths; i++) {
        argv[n++] = (char *)"-c";
        argv[n++] = (char *)a->cfg.paths[i];
    }
    for (int i = 0; i < a->cfg.nsets; i++) {
        argv[n++] = (char *)"--set";
        argv[n++] = (char *)a->cfg.sets[i];
    }
    for (int i = 0; i < c->nsets; i++) {
        memcpy(sets[i], c->sets[i], ADV_SET_LEN);
        argv[n++] = (char *)"--set";
        argv[n++] = sets[i];
    }
    argv[n++] = (char *)"-o";
    argv[n++] = (char *)a->write_plan;
    if (a->write_metrics) {
        argv[n++] = (char *)"--metrics";
        argv[n++] = (char *)a->write_metrics;
    }
    for (int i = 0; i < a->nmanifests && n < (int)(sizeof argv / sizeof argv[0]) - 1; i++)
        argv[n++] = a->manifests[i];
    argv[n] = NULL;
    return cmd_plan(n, argv);
}

int adv_report(adv_search *s, size_t *idx, size_t nplanned)
{
    size_t n = 0;
    int rc = 0;

    uint64_t most = 0;
    for (size_t i = 0; i < s->sp.n; i++)
        if (s->sp.c[i].stage == ADV_PLANNED) {
            idx[n++] = i;
            most = s->sp.c[i].full.ev.mt.tokens > most ? s->sp.c[i].full.ev.mt.tokens : most;
        }
    for (size_t k = 0; k < n; k++) {
        adv_cand *c = &s->sp.c[idx[k]];
        c->less_work = (double)c->full.ev.mt.tokens < 0.999 * (double)most;
    }
    if ((rc = adv_sort_by(idx, n, s->sp.c, epoch_key)) != 0)
        return rc;
    mark_pareto(s->sp.c, idx, n);
    count_stages(s);
    if (s->a->fmt == FMT_JSON) {
        vl_jw *o = result_json(s, idx, n);
        rc = cli_print_json(stdout, CMD, o, o == NULL);
    } else {
        print_summary(s, nplanned);
        print_table(s, idx, n);
    }
    fflush(stdout);
    warn_same_work(s, idx, n);
    if (rc == 0 && s->a->export_json)
        rc = write_json_file(s, idx, n);
    if (n == 0 && !s->a->log.quiet)
        fprintf(stderr, "vlplan advise: no candidate fits and plans the data; see the "
                        "counts above (--no-prune, --free, another -c)\n");
    /* the winner is a result only when it fits and did the full work */
    bool winner = n > 0 && eval_fits(&s->sp.c[idx[0]].full) && !s->sp.c[idx[0]].less_work;
    if (rc == 0 && s->a->write_plan && winner)
        rc = write_winner(s->a, &s->sp.c[idx[0]]);
    else if (rc == 0 && s->a->write_plan)
        cli_error(CMD, "no planned row fits device memory with the full work: %s not written",
                  s->a->write_plan);
    return rc == 0 && !winner ? EX_DATAERR_ : rc;
}
