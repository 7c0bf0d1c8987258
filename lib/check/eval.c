/* lib/check/eval.c -- one plan's figures (eval.h): metrics and simulation taken an
 * iteration at a time, and a plan file's read that way (vl_plan_read_each).  The config
 * comes from the header, which the reader has parsed by the first visit, so the caller
 * makes the cost model then. */
#include "eval.h"

#include <stdio.h>
#include <string.h>

#include "planio.h"

vl_status vl_eval_acc_init(vl_eval_acc *a, const vl_cost *cost, const vl_sim_opts *so,
                           vl_err *err)
{
    vl_status st = vl_metrics_acc_new(&a->mt, err);

    a->sim = NULL;
    if (st == VL_OK && cost && (st = vl_sim_acc_new(&a->sim, cost, so, err)) != VL_OK) {
        vl_metrics_acc_free(a->mt);
        a->mt = NULL;
    }
    return st;
}

vl_status vl_eval_acc_iter(vl_eval_acc *a, const vl_plan *p, size_t it, vl_sim_iter_result *r,
                           vl_err *err)
{
    vl_status st = vl_metrics_acc_iter(a->mt, p, it, err);

    if (st == VL_OK && a->sim)
        st = vl_sim_acc_iter(a->sim, p, it, r, err);
    return st;
}

vl_status vl_eval_acc_finish(vl_eval_acc *a, const vl_plan *p, vl_eval *out, vl_err *err)
{
    memset(out, 0, sizeof *out);
    snprintf(out->strategy, sizeof out->strategy, "%s", p->strategy);
    if (a->sim) {
        vl_sim_acc_finish(a->sim, &out->sim);
        out->has_sim = true;
    }
    return vl_metrics_acc_finish(a->mt, p, &out->mt, err);
}

void vl_eval_acc_free(vl_eval_acc *a)
{
    vl_metrics_acc_free(a->mt);
    vl_sim_acc_free(a->sim);
    a->mt = NULL;
    a->sim = NULL;
}

vl_status vl_eval_plan(const vl_plan *p, const vl_cost *cost, const vl_sim_opts *so,
                       vl_eval *out, vl_err *err)
{
    vl_eval_acc a;
    vl_status st = vl_eval_acc_init(&a, cost, so, err);

    for (size_t it = 0; st == VL_OK && it < p->niters; it++)
        st = vl_eval_acc_iter(&a, p, it, NULL, err);
    if (st == VL_OK)
        st = vl_eval_acc_finish(&a, p, out, err);
    vl_eval_acc_free(&a);
    return st;
}

/* What the visits share. */
typedef struct stream {
    const vl_eval_file_opts *o;
    const vl_cost *cost; /* cost_for's, NULL: metrics only */
    vl_eval_acc acc;
    bool started;
} stream;

/* First visit (or the end of a plan without iterations): the cost model and the
 * accumulators. */
static vl_status stream_start(stream *s, const vl_plan *p, vl_err *err)
{
    vl_status st = VL_OK;

    if (s->started)
        return VL_OK;
    if (s->o->cost_for && (st = s->o->cost_for(s->o->ud, p, &s->cost, err)) != VL_OK)
        return st;
    if ((st = vl_eval_acc_init(&s->acc, s->o->so ? s->cost : NULL, s->o->so, err)) != VL_OK)
        return st;
    s->started = true;
    return VL_OK;
}

static vl_status visit(void *ud, vl_plan *p, vl_err *err)
{
    stream *s = ud;
    vl_sim_iter_result r;
    vl_status st;

    if ((st = stream_start(s, p, err)) != VL_OK ||
        (st = vl_eval_acc_iter(&s->acc, p, 0, &r, err)) != VL_OK)
        return st;
    if (s->o->each)
        return s->o->each(s->o->ud, p, s->cost, s->acc.sim ? &r : NULL, err);
    return VL_OK;
}

vl_status vl_eval_file(const char *path, const vl_eval_file_opts *o, vl_plan_file *f,
                       vl_eval *out, vl_err *err)
{
    stream s = {.o = o};
    vl_plan p;
    vl_status st;

    memset(out, 0, sizeof *out);
    memset(&p, 0, sizeof p);
    st = vl_plan_read_each(&p, f, path, NULL, o->threads, visit, &s, err);
    if (st == VL_OK)
        st = stream_start(&s, &p, err);
    if (st == VL_OK)
        st = vl_eval_acc_finish(&s.acc, &p, out, err);
    if (s.started)
        vl_eval_acc_free(&s.acc);
    vl_plan_free(&p);
    return st;
}
