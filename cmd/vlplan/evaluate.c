/* cmd/vlplan/evaluate.c -- figures of a plan and their presentations (evaluate.h). */
#include "evaluate.h"

#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "planio.h"

/* One figure: its key, where its mean and distribution live, and a description. */
typedef struct figure {
    const char *key;
    int sim;              /* needs the simulator */
    double (*mean)(const eval_result *r);
    const vl_dist *(*dist)(const eval_result *r);
    const char *what;
} figure;

#define DIST_FIG(name, field, sim_, what)                                                  \
    static double mean_##name(const eval_result *r) { return (field).mean; }               \
    static const vl_dist *dist_##name(const eval_result *r) { return &(field); }
DIST_FIG(abr, r->mt.abr, 0, "")
DIST_FIG(dbr, r->mt.dbr, 0, "")
DIST_FIG(pr, r->mt.pr, 0, "")
DIST_FIG(cr, r->mt.cr, 0, "")
DIST_FIG(ave_t, r->mt.ave_t, 0, "")
DIST_FIG(iter_time_ms, r->sim.iter_time_ms, 1, "")
DIST_FIG(bubble, r->sim.bubble, 1, "")
DIST_FIG(tbr, r->sim.tbr, 1, "")
DIST_FIG(rank_gap, r->sim.rank_gap, 1, "")
DIST_FIG(peak_mem_gib, r->sim.peak_mem_gib, 1, "")
DIST_FIG(mfu, r->sim.mfu, 1, "")

static const figure figures[] = {
    {"abr", 0, mean_abr, dist_abr, "attention balance ratio"},
    {"dbr", 0, mean_dbr, dist_dbr, "data (token) balance ratio"},
    {"pr", 0, mean_pr, dist_pr, "padding ratio"},
    {"cr", 0, mean_cr, dist_cr, "communication (split) ratio"},
    {"ave_t", 0, mean_ave_t, dist_ave_t, "tokens per micro-batch"},
    {"iter_time_ms", 1, mean_iter_time_ms, dist_iter_time_ms, "simulated iteration time"},
    {"bubble", 1, mean_bubble, dist_bubble, "pipeline idle / (makespan x devices)"},
    {"tbr", 1, mean_tbr, dist_tbr, "time balance ratio of ranks' busy time"},
    {"rank_gap", 1, mean_rank_gap, dist_rank_gap, "(slowest - fastest rank) / slowest"},
    {"peak_mem_gib", 1, mean_peak_mem_gib, dist_peak_mem_gib, "peak device memory"},
    {"mfu", 1, mean_mfu, dist_mfu, "model FLOPs utilisation"},
};
#define NFIG (sizeof figures / sizeof figures[0])

const char *const eval_keys[] = {"abr", "dbr", "pr", "cr", "ave_t", "iter_time_ms", "bubble",
                                 "tbr", "rank_gap", "peak_mem_gib", "mfu", "tokens_per_s",
                                 "epoch_time_s", "speedup", "plan_time_s", "peak_rss_mib",
                                 NULL};

vl_status eval_acc_init(eval_acc *a, const vl_cost *cost, const vl_sim_opts *so, vl_err *err)
{
    vl_status st = vl_metrics_acc_new(&a->mt, err);

    a->sim = NULL;
    if (st == VL_OK && cost && (st = vl_sim_acc_new(&a->sim, cost, so, err)) != VL_OK) {
        vl_metrics_acc_free(a->mt);
        a->mt = NULL;
    }
    return st;
}

vl_status eval_acc_iter(eval_acc *a, const vl_plan *p, size_t it, vl_sim_iter_result *r,
                        vl_err *err)
{
    vl_status st = vl_metrics_acc_iter(a->mt, p, it, err);

    if (st == VL_OK && a->sim)
        st = vl_sim_acc_iter(a->sim, p, it, r, err);
    return st;
}

vl_status eval_acc_finish(eval_acc *a, const vl_plan *p, eval_result *out, vl_err *err)
{
    memset(out, 0, sizeof *out);
    snprintf(out->strategy, sizeof out->strategy, "%s", p->strategy);
    out->speedup = 1.0;
    if (a->sim) {
        vl_sim_acc_finish(a->sim, &out->sim);
        out->has_sim = true;
    }
    return vl_metrics_acc_finish(a->mt, p, &out->mt, err);
}

void eval_acc_free(eval_acc *a)
{
    vl_metrics_acc_free(a->mt);
    vl_sim_acc_free(a->sim);
    a->mt = NULL;
    a->sim = NULL;
}

int eval_plan(const char *cmd, const vl_plan *p, const vl_cost *cost, const vl_sim_opts *so,
              eval_result *out)
{
    eval_acc a;
    vl_err err = {0};
    vl_status st = eval_acc_init(&a, cost, so, &err);

    for (size_t it = 0; st == VL_OK && it < p->niters; it++)
        st = eval_acc_iter(&a, p, it, NULL, &err);
    if (st == VL_OK)
        st = eval_acc_finish(&a, p, out, &err);
    eval_acc_free(&a);
    return st == VL_OK ? 0 : cli_fail(cmd, &err);
}

bool eval_get(const eval_result *r, const char *key, double *v)
{
    for (size_t i = 0; i < NFIG; i++)
        if (strcmp(key, figures[i].key) == 0) {
            if (figures[i].sim && !r->has_sim)
                return false;
            *v = figures[i].mean(r);
            return true;
        }
    struct { const char *k; double v; int ok; } extra[] = {
        {"tokens_per_s", r->sim.tokens_per_s, r->has_sim},
        {"epoch_time_s", r->sim.epoch_time_s, r->has_sim},
        {"mfu_overall", r->sim.mfu_overall, r->has_sim},
        {"oom_iters", (double)r->sim.oom_iters, r->has_sim},
        {"speedup", r->speedup, r->has_sim},
        {"plan_time_s", r->plan_time_s, r->has_timing},
        {"peak_rss_mib", r->peak_rss_mib, r->has_timing},
        {"iterations", (double)r->mt.iterations, 1},
        {"samples", (double)r->mt.samples, 1},
        {"tokens", (double)r->mt.tokens, 1},
        {"dropped_samples", (double)r->mt.dropped_samples, 1},
        {"dropped_tokens", (double)r->mt.dropped_tokens, 1},
    };
    for (size_t i = 0; i < sizeof extra / sizeof extra[0]; i++)
        if (strcmp(key, extra[i].k) == 0 && extra[i].ok) {
            *v = extra[i].v;
            return true;
        }
    return false;
}

static int dist_json(vl_jw *dist, const char *key, const vl_dist *d)
{
    vl_jw *o = vl_jw_child(dist, key);
    return !o || vl_jw_num(o, "p50", d->p50) || vl_jw_num(o, "p99", d->p99) ||
           vl_jw_num(o, "max", d->max);
}

int eval_json_into(vl_jw *o, const eval_result *r)
{
    int bad = 0;
    vl_jw *dist;

    for (size_t i = 0; i < NFIG; i++)
        if (!figures[i].sim || r->has_sim)
            bad |= vl_jw_num(o, figures[i].key, figures[i].mean(r));
    bad |= vl_jw_int(o, "iterations", (int64_t)r->mt.iterations);
    bad |= vl_jw_int(o, "samples", (int64_t)r->mt.samples);
    bad |= vl_jw_int(o, "tokens", (int64_t)r->mt.tokens);
    bad |= vl_jw_int(o, "dropped_samples", (int64_t)r->mt.dropped_samples);
    bad |= vl_jw_int(o, "dropped_tokens", (int64_t)r->mt.dropped_tokens);
    if (r->has_sim) {
        bad |= vl_jw_num(o, "tokens_per_s", r->sim.tokens_per_s);
        bad |= vl_jw_num(o, "epoch_time_s", r->sim.epoch_time_s);
        bad |= vl_jw_num(o, "mfu_overall", r->sim.mfu_overall);
        bad |= vl_jw_int(o, "oom_iters", (int64_t)r->sim.oom_iters);
    }
    if (r->has_timing) {
        bad |= vl_jw_num(o, "plan_time_s", r->plan_time_s);
        bad |= vl_jw_num(o, "peak_rss_mib", r->peak_rss_mib);
    }
    if (!(dist = vl_jw_child(o, "dist")))
        return -1;
    for (size_t i = 0; i < NFIG; i++)
        if (!figures[i].sim || r->has_sim)
            bad |= dist_json(dist, figures[i].key, figures[i].dist(r));
    return bad ? -1 : 0;
}

int eval_print_json(FILE *f, const char *cmd, const eval_result *r)
{
    vl_jw *o = vl_jw_object();
    int bad = !o || vl_jw_str(o, "strategy", r->strategy) || eval_json_into(o, r);

    return cli_print_json(f, cmd, o, bad);
}

void eval_print_table(FILE *f, const eval_result *r)
{
    fprintf(f, "%-13s %12s %12s %12s %12s  %s\n", "metric", "mean", "p50", "p99", "max",
            "meaning");
    for (size_t i = 0; i < NFIG; i++) {
        const figure *g = &figures[i];
        if (g->sim && !r->has_sim)
            continue;
        const vl_dist *d = g->dist(r);
        /* + 0.0 turns a rounding -0 into 0 */
        fprintf(f, "%-13s %12.4f %12.4f %12.4f %12.4f  %s\n", g->key, d->mean + 0.0,
                d->p50 + 0.0, d->p99 + 0.0, d->max + 0.0, g->what);
    }
    fprintf(f, "\n%s: %zu iterations, %llu samples, %llu tokens", r->strategy, r->mt.iterations,
            (unsigned long long)r->mt.samples, (unsigned long long)r->mt.tokens);
    if (r->mt.dropped_samples)
        fprintf(f, ", %zu samples dropped or truncated (%llu tokens)", r->mt.dropped_samples,
                (unsigned long long)r->mt.dropped_tokens);
    fputc('\n', f);
    if (r->has_sim) {
        fprintf(f, "epoch %.1f s simulated, %.0f tokens/s, MFU %.1f%%", r->sim.epoch_time_s,
                r->sim.tokens_per_s, 100 * r->sim.mfu_overall);
        if (r->sim.oom)
            fprintf(f, "; OUT OF MEMORY in %zu iterations (first: %zu)", r->sim.oom_iters,
                    r->sim.first_oom_iter);
        fputc('\n', f);
    }
}

void eval_print_csv(FILE *f, const eval_result *r)
{
    fputs("metric,mean,p50,p99,max\n", f);
    for (size_t i = 0; i < NFIG; i++) {
        if (figures[i].sim && !r->has_sim)
            continue;
        const vl_dist *d = figures[i].dist(r);
        fprintf(f, "%s,%.6g,%.6g,%.6g,%.6g\n", figures[i].key, d->mean, d->p50, d->p99, d->max);
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
