/* cmd/vlplan/eval_stream.c -- a plan file's figures for the commands (vl_eval_file, read an
 * iteration at a time): the config from the header, or -c instead, then --set, made
 * into the cost model when the header is read; the messages of a failed or doubtful
 * read. */
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "evaluate.h"
#include "vlplan.h"

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
        fprintf(stderr,
                "vlplan %s: warning: %s: %s; the figures cover what is there "
                "(see 'vlplan verify')\n",
                cmd, path,
                f->has_footer ? "the footer's sha256 does not match the content"
                              : "no footer: the plan is truncated or incomplete");
}

/* What the hooks share: the config and cost model, made from the header, and the exit
 * code of a failure inside a hook, already printed. */
typedef struct stream {
    const eval_file_opts *o;
    eval_cost_src src;
    int rc;
} stream;

static vl_status cost_for(void *ud, const vl_plan *p, const vl_cost **cost, vl_err *err)
{
    stream *s = ud;

    if ((s->rc = eval_cost_load(&s->src, p)) != 0)
        return vl_seterr(err, VL_EUSAGE, "stopped");
    *cost = &s->src.cost;
    return VL_OK;
}

static vl_status each(void *ud, const vl_plan *p, const vl_cost *cost,
                      const vl_sim_iter_result *r, vl_err *err)
{
    stream *s = ud;

    if ((s->rc = s->o->each(s->o->ud, p, cost, r)) != 0)
        return vl_seterr(err, VL_EUSAGE, "stopped");
    return VL_OK;
}

int eval_plan_file(const char *cmd, const char *path, const eval_file_opts *o,
                   eval_result *out)
{
    stream s = {.o = o, .src = {.cmd = cmd, .args = o->cfg}};
    vl_eval_file_opts lo = {.cost_for = cost_for,
                            .so = o->so,
                            .each = o->each ? each : NULL,
                            .ud = &s,
                            .threads = o->threads};
    vl_plan_file *f = malloc(sizeof *f);
    vl_err err = {0};
    int rc = 0;

    memset(out, 0, sizeof *out);
    out->speedup = 1.0;
    if (!f) {
        cli_error(cmd, "out of memory");
        return cli_exit_for(VL_ENOMEM);
    }
    if (vl_eval_file(path, &lo, f, &out->ev, &err) != VL_OK)
        rc = s.rc                   ? s.rc
             : err.code == VL_EDATA ? eval_read_fail(cmd, f, &err)
                                    : cli_fail(cmd, &err);
    else
        eval_read_warn(cmd, path, f);
    eval_cost_free(&s.src);
    free(f);
    return rc;
}
