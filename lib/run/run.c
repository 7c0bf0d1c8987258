/* lib/run/run.c -- one planning run end to end (run.h): bind the strategy's parameters,
 * apply the oversize policy, plan, fill the header, and check every iteration -- the
 * checker verify runs, device memory included -- before it goes to the sink, so a
 * strategy bug can never become a silently wrong schedule, nor an infeasible one a
 * result. */
#include "run.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "strbuf.h"

/* What strategies report besides the plan (vlplan_strategy.h). */
struct vl_report {
    vl_strbuf log;      /* the -v text */
    vl_strbuf warnings; /* what the user should hear without -v */
    char *params_json;  /* the knobs actually used, NULL: the bound opts */
    int64_t iterations; /* announced by a streaming strategy, -1: not */
};

void vl_job_vlog(const vl_job *job, const char *fmt, va_list ap)
{
    if (job->verbose > 0 && job->report)
        vl_strbuf_vprintf(&job->report->log, fmt, ap);
}

void vl_job_log(const vl_job *job, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vl_job_vlog(job, fmt, ap);
    va_end(ap);
}

void vl_job_warn(const vl_job *job, const char *fmt, ...)
{
    va_list ap;

    if (!job->report)
        return;
    va_start(ap, fmt);
    vl_strbuf_vprintf(&job->report->warnings, fmt, ap);
    va_end(ap);
    vl_strbuf_printf(&job->report->warnings, "\n");
}

vl_status vl_job_params(const vl_job *job, const vl_param *params, const void *opts,
                        vl_err *err)
{
    char *json = NULL;
    vl_status st = vl_params_dump_json(params, opts, &json, err);

    if (st != VL_OK || !job->report) {
        free(json);
        return st;
    }
    free(job->report->params_json);
    job->report->params_json = json;
    return VL_OK;
}

void vl_job_iterations(const vl_job *job, uint64_t n)
{
    if (job->report)
        job->report->iterations = (int64_t)n;
}

vl_status vl_run_bind(void **opts, const vl_strategy *s, const vl_config *cfg, vl_err *err)
{
    vl_status st;

    *opts = calloc(1, s->opts_size ? s->opts_size : 1);
    if (!*opts)
        return vl_seterr(err, VL_ENOMEM, "out of memory");
    if (s->section && s->params) {
        st = vl_config_bind(cfg, s->section, s->params, *opts, err);
        if (st != VL_OK)
            return st;
    }
    if (s->validate)
        return s->validate(*opts, cfg, err);
    return VL_OK;
}

static void describe_limit(const vl_strategy *s, const void *opts, const vl_config *cfg,
                           uint32_t limit, char *buf, size_t n);

vl_status vl_run_limit(const vl_strategy *s, const vl_config *cfg, uint32_t *limit, char *why,
                       size_t whylen, vl_err *err)
{
    void *opts = NULL;
    vl_status st = vl_run_bind(&opts, s, cfg, err);

    if (st == VL_OK) {
        *limit = s->max_len(opts, cfg);
        if (why)
            describe_limit(s, opts, cfg, *limit, why, whylen);
    }
    free(opts);
    return st;
}

vl_status vl_run_max_len(const vl_strategy *s, const vl_config *cfg, uint32_t *limit,
                         vl_err *err)
{
    return vl_run_limit(s, cfg, limit, NULL, 0, err);
}

/* One run's state, shared with the flush hook. */
typedef struct run_ctx {
    const vl_strategy *s;
    const void *opts;
    const vl_config *cfg;
    const vl_cost *cost;
    const vl_run_opts *o;
    vl_report rep;
    vl_verifier *v;
    vl_rules_source rules; /* the strategy's own (own_rules), for v */
    vl_verify_report vrep;
    vl_run_result *res;
    bool begun; /* the header went to the sink */
} run_ctx;

/* The header: the strategy's own record of its knobs (taken over), else the bound
 * opts; the effective config; the epochs. */
static vl_status fill_header(run_ctx *c, vl_plan *p, vl_err *err)
{
    char *params = c->rep.params_json, *config = NULL;
    vl_status st = VL_OK;

    c->rep.params_json = NULL;
    if (!params && c->s->params)
        st = vl_params_dump_json(c->s->params, c->opts, &params, err);
    else if (!params && !(params = strdup("{}")))
        st = vl_seterr(err, VL_ENOMEM, "out of memory");
    if (st == VL_OK)
        st = vl_config_dump_json_params(c->cfg, c->s->section, c->s->params, &config, err);
    if (st != VL_OK) {
        free(params);
        free(config);
        return st;
    }
    vl_plan_set_meta(p, (uint32_t)c->cfg->training.epochs, params, config);
    return VL_OK;
}

static vl_status begin(run_ctx *c, vl_plan *p, int64_t iterations, vl_err *err)
{
    vl_status st = fill_header(c, p, err);

    c->begun = true;
    if (st == VL_OK && c->o->sink)
        st = c->o->sink->begin(c->o->sink->ud, p, iterations, err);
    return st;
}

/* The first violation that is not about memory: a strategy bug. */
static vl_status internal(const vl_verify_report *r, vl_err *err)
{
    const char *first = "?";

    for (size_t i = 0; i < r->nmsgs; i++)
        if (!(r->oom_msgs >> i & 1)) {
            first = r->msgs[i];
            break;
        }
    return vl_seterr(err, VL_EINTERNAL,
                     "plan self-check failed with %zu violation(s), "
                     "first: %s; no output written",
                     r->violations - r->oom_iters, first);
}

static vl_status refuse_oom(run_ctx *c, const vl_plan *p, size_t it, vl_err *err)
{
    const vl_verify_oom *o = &c->vrep.first_oom;
    char hint[192];

    vl_run_fit_hint(p, it, o, c->cost, c->cfg->cluster.gpus, hint, sizeof hint);
    return vl_seterr(err, VL_EDATA,
                     "the plan does not fit device memory: iteration %zu, "
                     "rank %u, stage %u needs %.2f GiB, %.2f GiB usable%s%s; --allow-oom "
                     "writes it anyway",
                     o->iter, o->rank, o->stage, o->gib, o->usable_gib, hint[0] ? "; " : "",
                     hint);
}

/* Check the iterations p holds, as verify would. */
static vl_status check_iters(run_ctx *c, const vl_plan *p, vl_err *err)
{
    vl_verify_report *r = &c->vrep;
    vl_status st;

    for (size_t it = 0; it < p->niters; it++) {
        size_t oom_before = r->oom_iters;
        if ((st = vl_verifier_iter(c->v, p, it, err)) != VL_OK)
            return st;
        if (r->violations > r->oom_iters)
            return internal(r, err);
        if (r->oom_iters > oom_before && r->oom_iters == 1 && c->res)
            vl_run_fit_hint(p, it, &r->first_oom, c->cost, c->cfg->cluster.gpus,
                            c->res->fit_hint, sizeof c->res->fit_hint);
        if (r->oom_iters > 0 && !c->o->allow_oom)
            return refuse_oom(c, p, it, err);
    }
    return VL_OK;
}

static vl_status hand_over(run_ctx *c, const vl_plan *p, vl_err *err)
{
    vl_status st = check_iters(c, p, err);

    if (c->res)
        c->res->iterations += p->niters;
    if (st == VL_OK && c->o->sink)
        st = c->o->sink->iters(c->o->sink->ud, p, err);
    return st;
}

static vl_status on_flush(void *ud, vl_plan *p, vl_err *err)
{
    run_ctx *c = ud;
    vl_status st = c->begun ? VL_OK : begin(c, p, c->rep.iterations, err);

    return st == VL_OK ? hand_over(c, p, err) : st;
}

static void on_progress(void *ud, uint64_t begun)
{
    const run_ctx *c = ud;

    c->o->progress(c->o->progress_ud, begun, c->rep.iterations);
}

/* After plan(): what is still held, then the checks that need the whole plan. */
static vl_status finish(run_ctx *c, vl_plan *p, bool streamed, vl_err *err)
{
    vl_status st;

    if (streamed) {
        if ((st = vl_plan_flush(p, err)) != VL_OK)
            return st;
        vl_plan_set_flush(p, NULL, NULL);
        if (c->begun && c->rep.params_json) /* none written: the header takes them */
            return vl_seterr(err, VL_EINTERNAL,
                             "strategy %s recorded its parameters after "
                             "its first iteration was written",
                             c->s->name);
    }
    if (!c->begun &&
        (st = begin(c, p, streamed ? c->rep.iterations : (int64_t)p->niters, err)) != VL_OK)
        return st;
    if (!streamed && (st = hand_over(c, p, err)) != VL_OK)
        return st;
    st = vl_verifier_finish(c->v, p, NULL, err);
    if (st == VL_EVERIFY && c->vrep.violations == c->vrep.oom_iters)
        st = VL_OK; /* only memory, allowed (check_iters refused it otherwise) */
    else if (st == VL_EVERIFY)
        st = internal(&c->vrep, err);
    return st;
}

/* The verifier's rules: the strategy's own, from the opts this run bound. */
static vl_status own_rules(void *ctx, const char *strategy, const vl_config *cfg,
                           vl_verify_rules *out, vl_err *err)
{
    const run_ctx *c = ctx;

    (void)strategy;
    (void)err;
    vl_strategy_rules_bound(c->s, c->opts, cfg, out);
    return VL_OK;
}

static vl_status plan_checked(run_ctx *c, vl_plan *out, const vl_selection *sel, vl_err *err)
{
    bool streamed = c->o->sink && c->s->streams;
    vl_job job = {.m = out->m,
                  .cfg = c->cfg,
                  .cost = c->cost,
                  .sel = sel,
                  .seed = c->o->seed,
                  .verbose = c->o->verbose,
                  .report = &c->rep};
    vl_status st;

    c->rules = (vl_rules_source){own_rules, c};
    st = vl_verifier_new(&c->v, out->m, c->cost, &c->rules, &c->vrep, err);
    if (st != VL_OK)
        return st;
    if (streamed)
        vl_plan_set_flush(out, on_flush, c);
    if (c->o->progress)
        vl_plan_set_progress(out, on_progress, c);
    st = vl_strategy_plan(c->s, c->opts, &job, out, err);
    vl_plan_set_progress(out, NULL, NULL);
    if (st == VL_OK)
        st = finish(c, out, streamed, err);
    vl_plan_set_flush(out, NULL, NULL);
    return st;
}

static void result_out(run_ctx *c)
{
    vl_run_result *r = c->res;

    if (!r)
        return;
    r->log = vl_strbuf_take(&c->rep.log);
    char *w = vl_strbuf_take(&c->rep.warnings);
    if (w)
        snprintf(r->warnings, sizeof r->warnings, "%s", w);
    free(w);
    r->oom_iters = c->vrep.oom_iters;
    r->first_oom = c->vrep.first_oom;
}

/* Where the strategy's length limit comes from, for the messages that name it. */
static void describe_limit(const vl_strategy *s, const void *opts, const vl_config *cfg,
                           uint32_t limit, char *buf, size_t n)
{
    if (limit < cfg->training.max_seq_len && s->describe_max_len)
        s->describe_max_len(opts, cfg, buf, n);
    else
        snprintf(buf, n, "training.max_seq_len");
}

vl_status vl_run_plan(vl_plan *out, const vl_strategy *s, vl_manifest *m, const vl_config *cfg,
                      const vl_run_opts *o, vl_run_result *res, vl_err *err)
{
    run_ctx c = {.s = s, .cfg = cfg, .o = o, .res = res, .rep = {.iterations = -1}};
    void *opts = NULL;
    vl_cost cost;
    vl_selection sel;
    vl_status st;

    memset(&sel, 0, sizeof sel);
    if (res)
        memset(res, 0, sizeof *res);
    if ((st = vl_plan_init(out, m, s->name, o->seed, err)) != VL_OK)
        return st;
    out->caps = s->caps;
    if ((st = vl_run_bind(&opts, s, cfg, err)) != VL_OK ||
        (st = vl_cost_init(&cost, cfg, err)))
        goto done;
    c.opts = opts;
    c.cost = &cost;
    uint32_t limit = s->max_len(opts, cfg);
    char why[160];
    describe_limit(s, opts, cfg, limit, why, sizeof why);
    if (res) {
        res->max_len = limit;
        memcpy(res->max_len_why, why, sizeof why);
    }
    st = vl_select_why(&sel, m, limit, why, cfg->training.oversize, err);
    if (st == VL_OK)
        st = vl_plan_add_drops(out, sel.drops, sel.ndrops, err);
    if (st == VL_OK)
        st = plan_checked(&c, out, &sel, err);
done:
    result_out(&c);
    vl_verifier_free(c.v);
    vl_strbuf_free(&c.rep.log);
    vl_strbuf_free(&c.rep.warnings);
    free(c.rep.params_json);
    vl_selection_free(&sel);
    free(opts);
    if (st != VL_OK)
        vl_plan_free(out);
    return st;
}
