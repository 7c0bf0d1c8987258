/* lib/plan/run.c -- one planning run end to end (run.h): bind the strategy's parameters,
 * apply the oversize policy, plan, fill the header, and self-verify before anyone
 * writes the plan, so a strategy bug can never become a silently wrong schedule. */
#include "run.h"

#include <stdlib.h>
#include <string.h>

#include "verify.h"

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
    vl_job job;
    vl_status st;

    memset(&sel, 0, sizeof sel);
    if (log)
        *log = NULL;
    if ((st = vl_plan_init(out, m, s->name, o->seed, err)) != VL_OK)
        return st;
    if ((st = bind_opts(&opts, s, cfg, err)) != VL_OK)
        goto done;
    if ((st = vl_cost_init(&cost, cfg, err)) != VL_OK)
        goto done;
    st = vl_select(&sel, m, s->max_len(opts, cfg), cfg->training.oversize, out, err);
    if (st != VL_OK)
        goto done;
    job = (vl_job){.m = m, .cfg = cfg, .cost = &cost, .sel = &sel, .seed = o->seed,
                   .verbose = o->verbose};
    st = s->plan(opts, &job, out, err);
    if (log)
        *log = job.log;
    else
        free(job.log);
    if (st == VL_OK)
        st = fill_header(out, s, opts, cfg, job.params_json, err);
    else
        free(job.params_json);
    if (st == VL_OK)
        st = self_check(out, err);
done:
    vl_selection_free(&sel);
    free(opts);
    if (st != VL_OK)
        vl_plan_free(out);
    return st;
}
