/* cmd/vlplan/evaluate.c -- figures of a plan and their presentations (evaluate.h). */
#include "evaluate.h"

#include <stdlib.h>
#include <string.h>

#include <math.h>

#include "cli.h"
#include "figures.h"
#include "vlplan.h"

vl_status eval_acc_finish(vl_eval_acc *a, const vl_plan *p, eval_result *out, vl_err *err)
{
    memset(out, 0, sizeof *out);
    out->speedup = 1.0;
    return vl_eval_acc_finish(a, p, &out->ev, err);
}

int eval_plan(const char *cmd, const vl_plan *p, const vl_cost *cost, const vl_sim_opts *so,
              eval_result *out)
{
    vl_err err = {0};

    memset(out, 0, sizeof *out);
    out->speedup = 1.0;
    if (vl_eval_plan(p, cost, so, &out->ev, &err) != VL_OK)
        return cli_fail(cmd, &err);
    return 0;
}

bool eval_fits(const eval_result *r)
{
    return r->ev.has_sim && r->ev.sim.oom_iters == 0;
}

bool eval_get(const eval_result *r, const char *key, double *v)
{
    const figure *g = fig_find(key);

    if (g)
        return g->value(r, v);
    struct {
        const char *k;
        double v;
        int ok;
    } extra[] = {
        {"mfu_overall", r->ev.sim.mfu_overall, r->ev.has_sim},
        {"epoch_propagation_s", r->ev.sim.epoch_propagation_s, r->ev.has_sim},
        {"epoch_sync_s", r->ev.sim.epoch_sync_s, r->ev.has_sim},
        {"epoch_optimizer_s", r->ev.sim.epoch_optimizer_s, r->ev.has_sim},
        {"peak_mem_gib_mean", r->ev.sim.peak_mem_gib.mean, r->ev.has_sim},
        {"fits", eval_fits(r), r->ev.has_sim},
        {"iterations", (double)r->ev.mt.iterations, 1},
        {"samples", (double)r->ev.mt.samples, 1},
        {"tokens", (double)r->ev.mt.tokens, 1},
        {"dropped_samples", (double)r->ev.mt.dropped_samples, 1},
        {"dropped_tokens", (double)r->ev.mt.dropped_tokens, 1},
        {"truncated_samples", (double)r->ev.mt.truncated_samples, 1},
        {"truncated_tokens", (double)r->ev.mt.truncated_tokens, 1},
        {"token_share", r->token_share, 1},
        {"scope", r->epoch_scope ? 1.0 : 0.0, 1},
    };
    for (size_t i = 0; i < sizeof extra / sizeof extra[0]; i++)
        if (strcmp(key, extra[i].k) == 0 && extra[i].ok) {
            *v = extra[i].v;
            return true;
        }
    return false;
}

bool eval_work_key(const char *key)
{
    static const char *const work[] = {"fits",
                                       "oom_iters",
                                       "iterations",
                                       "samples",
                                       "tokens",
                                       "dropped_samples",
                                       "dropped_tokens",
                                       "truncated_samples",
                                       "truncated_tokens",
                                       "token_share",
                                       "scope"};

    for (size_t i = 0; i < sizeof work / sizeof work[0]; i++)
        if (strcmp(key, work[i]) == 0)
            return true;
    return false;
}

static int dist_json(vl_jw *dist, const char *key, const vl_dist *d)
{
    vl_jw *o = vl_jw_child(dist, key);
    return !o || vl_jw_num(o, "mean", d->mean) || vl_jw_num(o, "p50", d->p50) ||
           vl_jw_num(o, "p99", d->p99) || vl_jw_num(o, "max", d->max);
}

/* Figures a plan has (no speedup: only compare knows a baseline). */
static bool shown(const figure *g, const eval_result *r)
{
    double v;
    return strcmp(g->key, "speedup") != 0 && g->value(r, &v);
}

int eval_json_into(vl_jw *o, const eval_result *r)
{
    int bad = 0;
    vl_jw *dist;
    double v;

    for (const figure *g = fig_table; g->key; g++)
        if (shown(g, r) && strcmp(g->key, "oom_iters") != 0 && g->value(r, &v))
            bad |= vl_jw_num(o, g->key, v);
    bad |= vl_jw_int(o, "iterations", (int64_t)r->ev.mt.iterations);
    bad |= vl_jw_int(o, "samples", (int64_t)r->ev.mt.samples);
    bad |= vl_jw_int(o, "tokens", (int64_t)r->ev.mt.tokens);
    bad |= vl_jw_int(o, "dropped_samples", (int64_t)r->ev.mt.dropped_samples);
    bad |= vl_jw_int(o, "dropped_tokens", (int64_t)r->ev.mt.dropped_tokens);
    bad |= vl_jw_int(o, "truncated_samples", (int64_t)r->ev.mt.truncated_samples);
    bad |= vl_jw_int(o, "truncated_tokens", (int64_t)r->ev.mt.truncated_tokens);
    if (r->ev.has_sim) {
        bad |= vl_jw_num(o, "mfu_overall", r->ev.sim.mfu_overall);
        bad |= vl_jw_num(o, "epoch_propagation_s", r->ev.sim.epoch_propagation_s);
        bad |= vl_jw_num(o, "epoch_sync_s", r->ev.sim.epoch_sync_s);
        bad |= vl_jw_num(o, "epoch_optimizer_s", r->ev.sim.epoch_optimizer_s);
        bad |= vl_jw_num(o, "peak_mem_gib_mean", r->ev.sim.peak_mem_gib.mean);
        bad |= vl_jw_int(o, "oom_iters", (int64_t)r->ev.sim.oom_iters);
        bad |= vl_jw_bool(o, "fits", eval_fits(r));
    }
    if (!(dist = vl_jw_child(o, "dist")))
        return -1;
    for (const figure *g = fig_table; g->key; g++)
        if (g->dist && shown(g, r))
            bad |= dist_json(dist, g->key, g->dist(r));
    return bad ? -1 : 0;
}

int eval_print_json(FILE *f, const char *cmd, const eval_result *r)
{
    vl_jw *o = vl_jw_object();
    int bad = !o || vl_jw_str(o, "strategy", r->ev.strategy) || eval_json_into(o, r);

    return cli_print_json(f, cmd, o, bad);
}

void eval_print_table(FILE *f, const eval_result *r)
{
    char m[4][32], c[3][32];

    fprintf(f, "%-13s %-6s %12s %12s %12s %12s  %s\n", "metric", "unit", "mean", "p50", "p99",
            "max", "meaning");
    for (const figure *g = fig_table; g->key; g++) {
        if (!g->dist || !shown(g, r))
            continue;
        const vl_dist *d = g->dist(r);
        fprintf(f, "%-13s %-6s %12s %12s %12s %12s  %s\n", g->key, g->unit,
                fig_format(g, d->mean, m[0], sizeof m[0]), fig_format(g, d->p50, m[1], 32),
                fig_format(g, d->p99, m[2], 32), fig_format(g, d->max, m[3], 32), g->what);
    }
    fprintf(f, "\n%s: %s iterations, %s samples, %s tokens", r->ev.strategy,
            cli_count(r->ev.mt.iterations, c[0], sizeof c[0]),
            cli_count(r->ev.mt.samples, c[1], sizeof c[1]),
            cli_count(r->ev.mt.tokens, c[2], 32));
    size_t whole = r->ev.mt.dropped_samples - r->ev.mt.truncated_samples;
    if (whole)
        fprintf(
            f, ", %s samples dropped (%s tokens)", cli_count(whole, c[0], sizeof c[0]),
            cli_count(r->ev.mt.dropped_tokens - r->ev.mt.truncated_tokens, c[1], sizeof c[1]));
    if (r->ev.mt.truncated_samples)
        fprintf(f, ", %s truncated (%s tokens cut)",
                cli_count(r->ev.mt.truncated_samples, c[0], sizeof c[0]),
                cli_count(r->ev.mt.truncated_tokens, c[1], sizeof c[1]));
    fputc('\n', f);
    if (r->ev.has_sim) {
        fprintf(f,
                "epoch %.1f s simulated end to end (propagation %.1f s, synchronisation "
                "%.1f s, optimizer %.1f s), %s tokens/s, epoch MFU %.1f%% (all model FLOPs "
                "/ epoch time; the mfu row is per iteration), peak %.2f GiB",
                r->ev.sim.epoch_time_s, r->ev.sim.epoch_propagation_s, r->ev.sim.epoch_sync_s,
                r->ev.sim.epoch_optimizer_s,
                cli_count((uint64_t)(r->ev.sim.tokens_per_s + 0.5), c[0], 32),
                100 * r->ev.sim.mfu_overall, r->ev.sim.peak_mem_gib.max);
        if (r->ev.sim.oom)
            fprintf(f, "; OUT OF MEMORY in %zu of %zu iterations (first: %zu)",
                    r->ev.sim.oom_iters, r->ev.sim.iterations, r->ev.sim.first_oom_iter);
        fputc('\n', f);
    }
}

void eval_print_csv(FILE *f, const eval_result *r)
{
    fputs("metric,mean,p50,p99,max\n", f);
    for (const figure *g = fig_table; g->key; g++) {
        if (!g->dist || !shown(g, r))
            continue;
        const vl_dist *d = g->dist(r);
        char c[4][48];
        fprintf(f, "%s,%s,%s,%s,%s\n", g->key, cli_plain(d->mean, c[0], 48),
                cli_plain(d->p50, c[1], 48), cli_plain(d->p99, c[2], 48),
                cli_plain(d->max, c[3], 48));
    }
}

int eval_read_fail(const char *cmd, const vl_plan_file *f, const vl_err *err)
{
    if (err->code != VL_EDATA || f->errors.total == 0)
        return cli_fail(cmd, err);
    for (size_t i = 0; i < f->errors.n; i++)
        cli_error(cmd, "%s", f->errors.msg[i]);
    if (f->errors.total > f->errors.n)
        cli_error(cmd, "... and %zu more", f->errors.total - f->errors.n);
    return cli_exit_for(VL_EDATA);
}
