/* lib/plan/run.c -- one planning run end to end (run.h): bind the strategy's parameters,
 * apply the oversize policy, plan, fill the header, and self-verify before anyone
 * writes the plan, so a strategy bug can never become a silently wrong schedule. */
#include "run.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "strbuf.h"
#include "verify.h"

/* What strategies report besides the plan (vlplan_strategy.h). */
struct vl_report {
    vl_strbuf log;        /* the -v text */
    char *params_json;    /* the knobs actually used, NULL: the bound opts */
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

static vl_status bind_opts(void **opts, const vl_strategy *s, const vl_config *cfg,
                           vl_err *err)
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

/* chosen: the strategy's own record of the knobs it used (taken over), or NULL. */
static vl_status fill_header(vl_plan *p, const vl_strategy *s, const void *opts,
                             const vl_config *cfg, char *chosen, vl_err *err)
{
    char *params = chosen, *config = NULL;
    vl_status st = VL_OK;

    if (!params && s->params)
        st = vl_params_dump_json(s->params, opts, &params, err);
    else if (!params && !(params = strdup("{}")))
        st = vl_seterr(err, VL_ENOMEM, "out of memory");
    if (st == VL_OK)
        st = vl_config_dump_json(cfg, &config, err);
    if (st != VL_OK) {
        free(params);
        free(config);
        return st;
    }
    vl_plan_set_meta(p, (uint32_t)cfg->training.epochs, params, config);
    return VL_OK;
}

static vl_status self_check(const vl_plan *p, vl_err *err)
{
    vl_verify_report rep;
    vl_status st = vl_plan_verify(p, NULL, &rep, err);

    if (st == VL_EVERIFY)
        return vl_seterr(err, VL_EINTERNAL,
                         "plan self-check failed with %zu violation(s), first: %s; "
                         "no output written",
                         rep.violations, rep.nmsgs ? rep.msgs[0] : "?");
    return st;
}

vl_status vl_run_plan(vl_plan *out, const vl_strategy *s, vl_manifest *m,
                      const vl_config *cfg, const vl_run_opts *o, char **log, vl_err *err)
{
    void *opts = NULL;
    vl_cost cost;
    vl_selection sel;
    vl_report rep = {0};
    vl_job job;
    vl_status st;

    memset(&sel, 0, sizeof sel);
    if (log)
        *log = NULL;
    if ((st = vl_plan_init(out, m, s->name, o->seed, err)) != VL_OK)
        return st;
    out->caps = s->caps;
    if ((st = bind_opts(&opts, s, cfg, err)) != VL_OK)
        goto done;
    if ((st = vl_cost_init(&cost, cfg, err)) != VL_OK)
        goto done;
    st = vl_select(&sel, m, s->max_len(opts, cfg), cfg->training.oversize, err);
    if (st == VL_OK)
        st = vl_plan_add_drops(out, sel.drops, sel.ndrops, err);
    if (st != VL_OK)
        goto done;
    job = (vl_job){.m = m, .cfg = cfg, .cost = &cost, .sel = &sel, .seed = o->seed,
                   .verbose = o->verbose, .report = &rep};
    st = s->plan(opts, &job, out, err);
    if (st == VL_OK) {
        st = fill_header(out, s, opts, cfg, rep.params_json, err);
        rep.params_json = NULL;   /* taken over (or freed) by fill_header */
    }
    if (st == VL_OK)
        st = self_check(out, err);
done:
    if (log)
        *log = vl_strbuf_take(&rep.log);
    vl_strbuf_free(&rep.log);
    free(rep.params_json);
    vl_selection_free(&sel);
    free(opts);
    if (st != VL_OK)
        vl_plan_free(out);
    return st;
}
