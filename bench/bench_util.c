/* bench/bench_util.c -- see bench_util.h. */
#include "bench_util.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gen.h"
#include "plan.h"
#include "sampler.h"

static double clock_s(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

double bench_wall_s(void)
{
    return clock_s(CLOCK_MONOTONIC);
}

double bench_cpu_s(void)
{
    return clock_s(CLOCK_PROCESS_CPUTIME_ID);
}

static vl_status apply(vl_config *cfg, const char *const *sets, vl_err *err)
{
    vl_status st = VL_OK;

    for (size_t i = 0; sets && sets[i] && st == VL_OK; i++)
        st = vl_config_set(cfg, sets[i], err);
    return st;
}

vl_status bench_config(vl_config *cfg, const char *file, const char *const *sets,
                       const char *const *extra, vl_err *err)
{
    vl_status st = vl_config_init_default(cfg, err);

    if (st == VL_OK && file)
        st = vl_config_load_file(cfg, file, err);
    if (st == VL_OK)
        st = apply(cfg, sets, err);
    if (st == VL_OK)
        st = apply(cfg, extra, err);
    return st == VL_OK ? vl_config_finalize(cfg, err) : st;
}

vl_status bench_manifest(vl_manifest **m, const char *dist, size_t n, uint64_t seed,
                         vl_err *err)
{
    uint32_t *len = malloc((n ? n : 1) * sizeof *len);
    vl_status st = len ? vl_gen_lengths(len, n, dist, seed, err)
                       : vl_seterr(err, VL_ENOMEM, "out of memory");

    *m = NULL;
    if (st == VL_OK)
        st = vl_manifest_from_lengths(m, len, n, err);
    free(len);
    return st;
}

/* One run: the plan's iterations, and the clocks around plan() alone. */
static vl_status time_once(const vl_strategy *s, const void *opts, vl_manifest *m,
                           const vl_job *job, bench_plan_time *t, vl_err *err)
{
    vl_plan p = {0};
    vl_status st = vl_plan_init(&p, m, s->name, 1, err);

    if (st == VL_OK) {
        double c0 = bench_cpu_s(), w0 = bench_wall_s();
        st = vl_strategy_plan(s, opts, job, &p, err);
        t->cpu_s = bench_cpu_s() - c0;
        t->wall_s = bench_wall_s() - w0;
        t->iters = p.niters;
    }
    vl_plan_free(&p);
    return st;
}

vl_status bench_time_plan(const vl_strategy *s, vl_manifest *m, const vl_config *cfg, int reps,
                          bench_plan_time *t, vl_err *err)
{
    void *opts = calloc(1, s->opts_size ? s->opts_size : 1);
    vl_selection sel = {0};
    vl_cost c;
    vl_status st = opts ? VL_OK : vl_seterr(err, VL_ENOMEM, "out of memory");

    *t = (bench_plan_time){INFINITY, INFINITY, 0};
    if (st == VL_OK && s->params)
        st = vl_config_bind(cfg, s->section, s->params, opts, err);
    if (st == VL_OK)
        st = vl_cost_init(&c, cfg, err);
    if (st == VL_OK)
        st = vl_select(&sel, m, s->max_len(opts, cfg), cfg->training.oversize, err);
    for (int r = 0; r < reps && st == VL_OK; r++) {
        vl_job job = {.m = m, .cfg = cfg, .cost = &c, .sel = &sel, .seed = 1};
        bench_plan_time once = {0};
        if ((st = time_once(s, opts, m, &job, &once, err)) != VL_OK)
            break;
        t->cpu_s = fmin(t->cpu_s, once.cpu_s);
        t->wall_s = fmin(t->wall_s, once.wall_s);
        t->iters = once.iters;
    }
    vl_selection_free(&sel);
    free(opts);
    return st;
}

unsigned long bench_csv_row_sum(char *line, int *any)
{
    unsigned long sum = 0;
    char *save = NULL;

    *any = 0;
    for (char *f = strtok_r(line, ",\n\r", &save); f; f = strtok_r(NULL, ",\n\r", &save)) {
        char *end;
        errno = 0;
        unsigned long v = strtoul(f, &end, 10);
        if (end != f && *end == '\0' && errno == 0) {
            sum += v;
            *any = 1;
        }
    }
    return sum;
}
