/* cmd/vlplan/eval_stream.c -- a plan file's figures, read an iteration at a time
 * (vl_plan_read_each): memory holds the header, one iteration and a few doubles per
 * iteration, however long the plan.  The config comes from the header, which the
 * reader has parsed by the first visit, so the cost model is made then. */
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "evaluate.h"
#include "planio.h"

int eval_cost_load(eval_cost_src *s, const vl_plan *p)
{
    vl_err err = {0};
    int rc;

    if (s->loaded)
        return 0;
    s->loaded = true;
    if (s->optional && !p->config_json && s->args->npaths == 0 && s->args->nsets == 0)
        return 0;
    rc = cli_config_load_over(s->cmd, s->args, p->config_json, "plan header config", &s->cfg);
    if (rc)
        return rc;
    if (vl_cost_init(&s->cost, &s->cfg, &err) != VL_OK) {
        vl_config_free(&s->cfg);
        return cli_fail(s->cmd, &err);
    }
    s->have = true;
    return 0;
}

void eval_cost_free(eval_cost_src *s)
{
    if (s->have)
        vl_config_free(&s->cfg);
    s->have = false;
}

int eval_one_plan_operand(const char *cmd, const char *usage, int argc, int first)
{
    if (argc - first == 1)
        return 0;
    cli_error(cmd, "expected exactly one plan file");
    fprintf(stderr, "usage: vlplan %s %s\n", cmd, usage);
    return EX_USAGE_;
}

void eval_read_warn(const char *cmd, const char *path, const vl_plan_file *f)
{
    /* the figures of a cut-off or edited plan are still shown, but not silently */
    if ((!f->has_footer && f->by_vlplan) || f->sha == 0)
        fprintf(stderr, "vlplan %s: warning: %s: %s; the figures cover what is there "
                        "(see 'vlplan verify')\n", cmd, path,
                f->has_footer ? "the footer's sha256 does not match the content"
                              : "no footer: the plan is truncated or incomplete");
}

/* What the visits share. */
typedef struct stream {
    const char *cmd;
    const eval_file_opts *o;
    eval_cost_src src;
    eval_acc acc;
    bool started;
    int rc;               /* exit code of a failure inside a visit, already printed */
} stream;

/* First visit (or the end of a plan without iterations): the cost model and the
 * accumulators. */
static int stream_start(stream *s, const vl_plan *p)
{
    vl_err err = {0};
    int rc;

    if (s->started)
        return 0;
    if ((rc = eval_cost_load(&s->src, p)) != 0)
        return rc;
    if (eval_acc_init(&s->acc, s->o->so ? &s->src.cost : NULL, s->o->so, &err) != VL_OK)
        return cli_fail(s->cmd, &err);
    s->started = true;
    return 0;
}

static vl_status visit(void *ud, vl_plan *p, vl_err *err)
{
    stream *s = ud;
    vl_sim_iter_result r;

    if ((s->rc = stream_start(s, p)) != 0)
        return vl_seterr(err, VL_EUSAGE, "stopped");
    if (eval_acc_iter(&s->acc, p, 0, &r, err) != VL_OK)
        return err->code;
    if (s->o->each && (s->rc = s->o->each(s->o->ud, p, &s->src.cost, s->acc.sim ? &r : NULL)))
        return vl_seterr(err, VL_EUSAGE, "stopped");
    return VL_OK;
}

static int stream_finish(stream *s, const vl_plan *p, eval_result *out)
{
    vl_err err = {0};
    int rc = stream_start(s, p);

    if (rc)
        return rc;
    if (eval_acc_finish(&s->acc, p, out, &err) != VL_OK)
        return cli_fail(s->cmd, &err);
    return 0;
}

int eval_plan_file(const char *cmd, const char *path, const eval_file_opts *o,
                   eval_result *out)
{
    stream s = {.cmd = cmd, .o = o, .src = {.cmd = cmd, .args = o->cfg}};
    vl_plan_file *f = malloc(sizeof *f);
    vl_plan p;
    vl_err err = {0};
    int rc = 0;

    memset(out, 0, sizeof *out);
    out->speedup = 1.0;
    if (!f) {
        cli_error(cmd, "out of memory");
        return cli_exit_for(VL_ENOMEM);
    }
    memset(&p, 0, sizeof p);
    if (vl_plan_read_each(&p, f, path, NULL, o->threads, visit, &s, &err) != VL_OK)
        rc = s.rc ? s.rc : err.code == VL_EDATA ? eval_read_fail(cmd, f, &err)
                                                : cli_fail(cmd, &err);
    else {
        eval_read_warn(cmd, path, f);
        rc = stream_finish(&s, &p, out);
    }
    eval_acc_free(&s.acc);
    eval_cost_free(&s.src);
    vl_plan_free(&p);
    free(f);
    return rc;
}
