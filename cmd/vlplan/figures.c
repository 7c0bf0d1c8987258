/* cmd/vlplan/figures.c -- the figure table (figures.h). */
#include "figures.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define MEAN_OF(name, field)                                                                  \
    static bool v_##name(const eval_result *r, double *v)                                     \
    {                                                                                         \
        *v = (field).mean;                                                                    \
        return true;                                                                          \
    }                                                                                         \
    static const vl_dist *d_##name(const eval_result *r)                                      \
    {                                                                                         \
        return &(field);                                                                      \
    }
#define SIM_MEAN_OF(name, field)                                                              \
    static bool v_##name(const eval_result *r, double *v)                                     \
    {                                                                                         \
        *v = (field).mean;                                                                    \
        return r->ev.has_sim;                                                                 \
    }                                                                                         \
    static const vl_dist *d_##name(const eval_result *r)                                      \
    {                                                                                         \
        return &(field);                                                                      \
    }

MEAN_OF(abr, r->ev.mt.abr)
MEAN_OF(dbr, r->ev.mt.dbr)
MEAN_OF(pr, r->ev.mt.pr)
MEAN_OF(cr, r->ev.mt.cr)
MEAN_OF(ave_t, r->ev.mt.ave_t)
SIM_MEAN_OF(iter_time_ms, r->ev.sim.iter_time_ms)
SIM_MEAN_OF(bubble, r->ev.sim.bubble)
SIM_MEAN_OF(tbr, r->ev.sim.tbr)
SIM_MEAN_OF(rank_gap, r->ev.sim.rank_gap)
SIM_MEAN_OF(mfu, r->ev.sim.mfu)

/* Peak memory is the plan's worst iteration: a plan runs out of memory at its peak,
 * not on average (the mean of the iterations' peaks is "peak_mem_gib_mean"). */
static bool v_peak_mem_gib(const eval_result *r, double *v)
{
    *v = r->ev.sim.peak_mem_gib.max;
    return r->ev.has_sim;
}
static const vl_dist *d_peak_mem_gib(const eval_result *r)
{
    return &r->ev.sim.peak_mem_gib;
}

static bool v_tokens_per_s(const eval_result *r, double *v)
{
    *v = r->ev.sim.tokens_per_s;
    return r->ev.has_sim;
}

static bool v_epoch_time_s(const eval_result *r, double *v)
{
    *v = r->ev.sim.epoch_time_s;
    return r->ev.has_sim;
}

/* n/a (NaN) unless both this plan and the baseline fit memory */
static bool v_speedup(const eval_result *r, double *v)
{
    *v = r->speedup;
    return r->ev.has_sim && isfinite(r->speedup);
}

static bool v_oom_iters(const eval_result *r, double *v)
{
    *v = (double)r->ev.sim.oom_iters;
    return r->ev.has_sim;
}

static bool v_plan_time_s(const eval_result *r, double *v)
{
    *v = r->plan_time_s;
    return r->has_timing;
}

static bool v_peak_rss_mib(const eval_result *r, double *v)
{
    *v = r->peak_rss_mib;
    return r->has_timing;
}

const figure fig_table[] = {
    {"abr", "", 4, 1, FIG_LOWER, FIG_PLAN, "attention balance ratio", v_abr, d_abr},
    {"dbr", "", 4, 1, FIG_LOWER, FIG_PLAN, "data (token) balance ratio", v_dbr, d_dbr},
    {"pr", "", 4, 1, FIG_LOWER, FIG_PLAN, "padding ratio", v_pr, d_pr},
    {"cr", "", 4, 1, FIG_LOWER, FIG_PLAN, "communication (split) ratio", v_cr, d_cr},
    {"ave_t", "tokens", 0, 1, FIG_NEITHER, FIG_PLAN, "tokens per micro-batch", v_ave_t,
     d_ave_t},
    {"iter_time_ms", "ms", 1, 1, FIG_LOWER, FIG_SIM, "simulated iteration time",
     v_iter_time_ms, d_iter_time_ms},
    {"bubble", "", 4, 1, FIG_LOWER, FIG_SIM, "pipeline idle / (makespan x devices)", v_bubble,
     d_bubble},
    {"tbr", "", 4, 1, FIG_LOWER, FIG_SIM, "time balance ratio of ranks' busy time", v_tbr,
     d_tbr},
    {"rank_gap", "", 4, 1, FIG_LOWER, FIG_SIM, "(slowest - fastest rank) / slowest",
     v_rank_gap, d_rank_gap},
    {"peak_mem_gib", "GiB", 2, 1, FIG_LOWER, FIG_SIM, "peak device memory (worst iteration)",
     v_peak_mem_gib, d_peak_mem_gib},
    {"mfu", "%", 1, 100, FIG_HIGHER, FIG_SIM, "model FLOPs utilisation per iteration", v_mfu,
     d_mfu},
    {"tokens_per_s", "tokens/s", 0, 1, FIG_HIGHER, FIG_SIM, "simulated throughput",
     v_tokens_per_s, NULL},
    {"epoch_time_s", "s", 1, 1, FIG_LOWER, FIG_SIM, "simulated epoch time, end to end",
     v_epoch_time_s, NULL},
    {"speedup", "x", 3, 1, FIG_HIGHER, FIG_SIM, "first row's epoch time / this one's",
     v_speedup, NULL},
    {"oom_iters", "iterations", 0, 1, FIG_LOWER, FIG_SIM, "iterations over device memory",
     v_oom_iters, NULL},
    {"plan_time_s", "s", 3, 1, FIG_LOWER, FIG_TIMING, "planning wall time", v_plan_time_s,
     NULL},
    {"peak_rss_mib", "MiB", 0, 1, FIG_LOWER, FIG_TIMING, "planner's peak memory",
     v_peak_rss_mib, NULL},
    {NULL, NULL, 0, 0, FIG_NEITHER, FIG_PLAN, NULL, NULL, NULL},
};

const figure *fig_find(const char *key)
{
    for (const figure *g = fig_table; g->key; g++)
        if (strcmp(g->key, key) == 0)
            return g;
    return NULL;
}

const char *fig_format(const figure *g, double v, char *buf, size_t cap)
{
    char raw[64], *dot;
    size_t n = 0, digits, lead;
    double x = v * g->scale;
    const char *s = raw;

    snprintf(raw, sizeof raw, "%.*f", g->prec, x);
    if (strspn(raw, "-0.") == strlen(raw)) /* a rounded zero prints without its sign */
        snprintf(raw, sizeof raw, "%.*f", g->prec, 0.0);
    if (*s == '-' && n + 1 < cap)
        buf[n++] = *s++;
    dot = strchr(s, '.');
    digits = dot ? (size_t)(dot - s) : strlen(s);
    lead = digits % 3 ? digits % 3 : 3;
    for (size_t i = 0; i < digits && n + 2 < cap; i++) {
        if (i >= lead && (i - lead) % 3 == 0)
            buf[n++] = ',';
        buf[n++] = s[i];
    }
    for (const char *t = s + digits; *t && n + 1 < cap; t++)
        buf[n++] = *t;
    buf[n] = '\0';
    return buf;
}

const char *fig_better_word(fig_better b)
{
    return b == FIG_LOWER ? "lower" : b == FIG_HIGHER ? "higher" : "";
}
