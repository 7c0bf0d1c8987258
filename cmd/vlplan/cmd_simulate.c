/* cmd/vlplan/cmd_simulate.c -- `vlplan simulate PLAN`: the DAG simulator's figures per
 * iteration and for the plan, and an SVG Gantt chart of one iteration. */
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "evaluate.h"
#include "report.h"
#include "strbuf.h"
#include "vlplan.h"

enum { OPT_RANKS = OPT_ROW + 100 };

static const char *const CMD = "simulate";
static const char *const USAGE =
    "[-c CONFIG] [--set KEY=VALUE]... [--format table|json] [--iter N] [--svg FILE] "
    "[--schedule 1f1b|gpipe] [--ranks FILE] [-j N] PLAN";

static const cli_opt options[] = {
    {"config", 'c', "FILE", "config (default: the one recorded in the plan)"},
    {"set", OPT_SET, "KEY=VALUE", "override a config key (repeatable)"},
    {"format", OPT_FORMAT, "FMT", "table (default) or json"},
    {"iter", OPT_ITER, "N", "only iteration N (and the chart of it)"},
    {"svg", OPT_SVG, "FILE", "write a Gantt chart of iteration N (default 0) to FILE"},
    {"schedule", OPT_SCHED, "NAME", "1f1b (default) or gpipe, for ranks without their own"},
    {"ranks", OPT_RANKS, "FILE",
     "write CSV rows iter,rank,stage,compute_ms,comm_ms,makespan_ms "
     "(every iteration, or --iter N) to FILE"},
    CLI_JOBS_OPTION,
    {"help", 'h', NULL, "show this help"},
    {NULL, 0, NULL, NULL},
};

typedef struct sim_args {
    cli_config_args cfg;
    report_format fmt;
    bool have_iter;
    uint64_t iter;
    const char *svg;
    const char *ranks; /* --ranks FILE: per (rank, stage) compute rows */
    vl_sim_opts so;
    int jobs;
} sim_args;

static int on_option(int key, const char *arg, void *ud)
{
    sim_args *a = ud;
    int rc = cli_config_option(CMD, &a->cfg, key, arg);

    if (rc != 1)
        return rc;
    switch (key) {
    case 'j': return cli_parse_jobs(CMD, arg, &a->jobs);
    case OPT_FORMAT:
        return report_parse_format(CMD, arg, 1u << FMT_TABLE | 1u << FMT_JSON, &a->fmt);
    case OPT_ITER:
        a->have_iter = true;
        return cli_parse_u64(CMD, "--iter", arg, 0, UINT32_MAX, &a->iter);
    case OPT_SVG: a->svg = arg; return 0;
    case OPT_RANKS: a->ranks = arg; return 0;
    case OPT_SCHED:
        if (strcmp(arg, "1f1b") == 0)
            a->so.sched = VL_SCHED_1F1B;
        else if (strcmp(arg, "gpipe") == 0)
            a->so.sched = VL_SCHED_GPIPE;
        else {
            cli_error(CMD, "invalid value '%s' for --schedule (expected 1f1b or gpipe)", arg);
            return EX_USAGE_;
        }
        return 0;
    }
    return EX_USAGE_;
}

/* What simulate does per iteration while the plan streams by. */
typedef struct sim_walk {
    const sim_args *a;
    bool header;    /* the table's column heads are out */
    char *svg;      /* the chart of the chosen iteration, once met */
    vl_strbuf rows; /* --ranks: the CSV text */
} sim_walk;

/* --ranks: one row per (rank, stage) of the iteration: compute is the F, R and B tasks'
 * time less the exposed communication inside them (what one GPU replaying the rank's
 * micro-batches would measure, tools/replay_plan.py). */
static int rank_rows(sim_walk *w, const vl_plan *p, const vl_cost *cost)
{
    vl_sim_trace t = {0};
    vl_sim_iter_result r;
    vl_err err = {0};

    if (vl_sim_iter(p, 0, cost, &w->a->so, &r, NULL, &t, &err) != VL_OK)
        return cli_fail(CMD, &err);
    if (!w->rows.len)
        vl_strbuf_printf(&w->rows, "iter,rank,stage,compute_ms,comm_ms,makespan_ms\n");
    for (size_t l = 0; l < t.nlanes; l++) {
        const vl_sim_lane *ln = &t.lanes[l];
        double compute = 0, comm = 0;
        for (size_t k = 0; k < t.ntasks; k++) {
            const vl_sim_task *tk = &t.tasks[k];
            if (tk->rank != ln->rank || tk->stage != ln->stage || tk->kind > VL_TASK_B)
                continue;
            compute += tk->end - tk->start - tk->comm;
            comm += tk->comm;
        }
        vl_strbuf_printf(&w->rows, "%llu,%u,%u,%.6f,%.6f,%.6f\n",
                         (unsigned long long)p->iter_base, ln->rank, ln->stage, 1e3 * compute,
                         1e3 * comm, 1e3 * ln->makespan);
    }
    vl_sim_trace_free(&t);
    return 0;
}

static void print_head(sim_walk *w)
{
    if (w->header || w->a->fmt != FMT_TABLE)
        return;
    w->header = true;
    printf("%6s %5s %12s %10s %8s %8s %10s %7s\n", "iter", "epoch", "iter_time_ms", "sync_ms",
           "bubble", "tbr", "peak_gib", "mfu");
}

/* One table row per iteration (or just --iter); the chart of --iter (default 0). */
static int each_iter(void *ud, const vl_plan *p, const vl_cost *cost,
                     const vl_sim_iter_result *r)
{
    sim_walk *w = ud;
    const sim_args *a = w->a;
    uint64_t it = p->iter_base, want = a->have_iter ? a->iter : 0;
    vl_err err = {0};

    if (a->fmt == FMT_TABLE && (!a->have_iter || it == want)) {
        char t[2][32];
        print_head(w);
        printf("%6llu %5u %12s %10s %8.4f %8.4f %10.2f %6.1f%%%s\n", (unsigned long long)it,
               p->iters[0].epoch, cli_fixed(r->iter_time_ms, 2, t[0], 32),
               cli_fixed(r->sync_ms, 2, t[1], 32), r->bubble + 0.0, r->tbr + 0.0,
               r->peak_mem_gib, 100 * r->mfu, r->oom ? "  OOM" : "");
    }
    if (a->ranks && (!a->have_iter || it == want)) {
        int rc = rank_rows(w, p, cost);
        if (rc)
            return rc;
    }
    if (a->svg && it == want && vl_sim_svg(p, 0, cost, &a->so, &w->svg, &err) != VL_OK)
        return cli_fail(CMD, &err);
    return 0;
}

/* After the plan was read: what --iter and --svg asked for must have been there. */
static int check_found(const sim_args *a, uint64_t niters)
{
    if (a->have_iter && a->iter >= niters) {
        cli_error(CMD, "--iter %llu: the plan has %llu iterations",
                  (unsigned long long)a->iter, (unsigned long long)niters);
        return EX_USAGE_;
    }
    if (a->svg && niters == 0) {
        cli_error(CMD, "--svg: the plan has no iterations to draw");
        return EX_USAGE_;
    }
    return 0;
}

static int run(const sim_args *a, const char *path)
{
    sim_walk w = {.a = a};
    eval_file_opts o = {
        .cfg = &a->cfg, .so = &a->so, .each = each_iter, .ud = &w, .threads = a->jobs};
    eval_result r;
    int rc = eval_plan_file(CMD, path, &o, &r);

    if (rc == 0)
        rc = check_found(a, r.ev.mt.iterations);
    if (rc == 0 && a->fmt == FMT_TABLE) {
        print_head(&w);
        if (!a->have_iter)
            putchar('\n');
    }
    /* --iter N: iteration N alone, its row above; the whole-plan figures otherwise */
    if (rc == 0 && a->fmt == FMT_JSON)
        rc = eval_print_json(stdout, CMD, &r);
    else if (rc == 0 && !a->have_iter)
        eval_print_table(stdout, &r);
    if (rc == 0 && a->svg)
        rc = cli_write_text(CMD, a->svg, w.svg);
    if (rc == 0 && a->ranks) {
        char *rows = vl_strbuf_take(&w.rows);
        if (!rows && w.rows.failed) {
            cli_error(CMD, "--ranks: out of memory");
            rc = EX_SOFTWARE_;
        } else
            rc = cli_write_text(CMD, a->ranks, rows ? rows : "");
        free(rows);
    }
    vl_strbuf_free(&w.rows);
    free(w.svg);
    return rc;
}

/* An output that must be a file (standard output has the table), and not an input. */
static int file_output(const sim_args *a, const char *opt, const char *path, char **argv,
                       int argc, int first)
{
    if (path && cli_is_stdout(path)) {
        cli_error(CMD, "%s needs a file: standard output has the table", opt);
        return EX_USAGE_;
    }
    return cli_check_not_input(CMD, opt, path, a->cfg.paths, a->cfg.npaths) ||
           cli_check_not_input(CMD, opt, path, (const char *const *)argv + first,
                               argc - first);
}

int cmd_simulate(int argc, char **argv)
{
    sim_args a;
    int first = 0, rc;

    memset(&a, 0, sizeof a);
    a.so = (vl_sim_opts)VL_SIM_OPTS_INIT;
    a.jobs = cli_default_jobs();
    rc = cli_parse(argc, argv, CMD, USAGE, options, on_option, &a, &first);
    if (rc)
        return rc < 0 ? 0 : rc;
    if (file_output(&a, "--svg", a.svg, argv, argc, first) ||
        file_output(&a, "--ranks", a.ranks, argv, argc, first))
        return EX_USAGE_;
    if ((rc = eval_one_plan_operand(CMD, USAGE, argc, first)) != 0)
        return rc;
    return run(&a, argv[first]);
}
