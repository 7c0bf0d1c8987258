/* cmd/vlplan/cmd_plan.c -- `vlplan plan`: manifests + config + strategy -> plan file
 * (atomic, or stdout) and optional metrics JSON. */
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "evaluate.h"
#include "vlplan.h"

static const char *const CMD = "plan";
static const char *const USAGE =
    "-s STRATEGY [-c CONFIG] [-o PLAN] [--metrics FILE] [--seed N] [--set KEY=VALUE]... "
    "[--allow-oom] MANIFEST...";

static const cli_opt options[] = {
    {"strategy", 's', "NAME", "strategy to run (see 'vlplan strategies')"},
    {"config", 'c', "FILE", "cluster/model YAML (default: built-in preset)"},
    {"output", 'o', "PLAN", "plan file; '.zst' suffix compresses; '-' or none: stdout"},
    {"metrics", OPT_METRICS, "FILE", "also write the metrics JSON to FILE"},
    {"seed", OPT_SEED, "N", "seed (overrides training.seed)"},
    {"set", OPT_SET, "KEY=VALUE", "override a config key, e.g. training.pp=4 (repeatable)"},
    CLI_MANIFEST_OPTIONS,
    {"allow-empty", OPT_ALLOW_EMPTY, NULL, "accept a manifest with no samples"},
    {"allow-oom", OPT_ALLOW_OOM, NULL,
     "write a plan that exceeds device memory in the cost "
     "model (refused otherwise, exit 65)"},
    {"force", 'f', NULL, "allow the output to overwrite an input file"},
    {"quiet", 'q', NULL, "no progress line, no warnings"},
    {"verbose", 'v', NULL, "print the strategy's decisions and a summary on stderr"},
    {"help", 'h', NULL, "show this help"},
    {NULL, 0, NULL, NULL},
};

typedef struct plan_args {
    const char *strategy, *output, *metrics;
    bool force, allow_oom;
    cli_config_args cfg;
    cli_manifest_args man;
    cli_log log;
} plan_args;

static int on_option(int key, const char *arg, void *ud)
{
    plan_args *a = ud;
    int rc = cli_manifest_option(CMD, &a->man, key, arg);

    if (rc == 1)
        rc = cli_config_option(CMD, &a->cfg, key, arg);
    if (rc != 1)
        return rc;
    switch (key) {
    case 's': a->strategy = arg; return 0;
    case 'o': a->output = arg; return 0;
    case OPT_METRICS: a->metrics = arg; return 0;
    case OPT_ALLOW_EMPTY: a->man.allow_empty = true; return 0;
    case 'f': a->force = true; return 0;
    case OPT_ALLOW_OOM: a->allow_oom = true; return 0;
    case 'q': a->log.quiet++; return 0;
    case 'v': a->log.verbose++; return 0;
    }
    return EX_USAGE_;
}

static int unknown_strategy(const char *name)
{
    char list[512] = "";

    for (size_t i = 0; i < vl_strategy_count(); i++) {
        if (i)
            strncat(list, ", ", sizeof list - strlen(list) - 1);
        strncat(list, vl_strategy_at(i)->name, sizeof list - strlen(list) - 1);
    }
    cli_error(CMD, "unknown strategy '%s' (expected one of: %s)", name, list);
    return EX_USAGE_;
}

/* Refuse to overwrite one of our own inputs: the plan would replace the data.  -f
 * allows it for manifests (they are read whole first), never for a config.  The
 * metrics file may be none of the inputs and not the plan itself (nor share standard
 * output with it). */
static int check_output(const plan_args *a, char **ins, int nin)
{
    if (a->metrics && (cli_is_stdout(a->metrics) ? cli_is_stdout(a->output)
                                                 : cli_same_file(a->metrics, a->output))) {
        if (cli_is_stdout(a->metrics))
            cli_error(CMD, "--metrics - and the plan cannot both go to standard output");
        else
            cli_error(CMD, "--metrics '%s' is also the plan output", a->metrics);
        return EX_USAGE_;
    }
    if (cli_check_not_input(CMD, "--metrics", a->metrics, a->cfg.paths, a->cfg.npaths) ||
        cli_check_not_input(CMD, "--metrics", a->metrics, (const char *const *)ins, nin))
        return EX_USAGE_;
    if (cli_is_stdout(a->output))
        return 0;
    for (int i = 0; i < a->cfg.npaths; i++)
        if (cli_same_file(a->cfg.paths[i], a->output)) {
            cli_error(CMD, "output '%s' is also the config", a->output);
            return EX_USAGE_;
        }
    for (int i = 0; i < nin && !a->force; i++)
        if (cli_same_file(ins[i], a->output)) {
            cli_error(CMD, "output '%s' is also an input (use -f to overwrite)", a->output);
            return EX_USAGE_;
        }
    return 0;
}

/* The plan on its way out: the writer gets each checked iteration as the strategy
 * finishes it, and so do the figures when they are wanted. */
typedef struct plan_sink {
    const plan_args *a;
    vl_outfile *o;  /* NULL: standard output */
    vl_outfile *mo; /* the metrics file, NULL: none or standard output */
    vl_plan_writer *w;
    bool figures; /* --metrics or -v */
    vl_cost cost;
    vl_sim_opts so;
    vl_eval_acc acc;
    cli_meter meter;   /* iterations begun, against the announced count */
    uint64_t lossless; /* iterations with tokens but no loss token (truncation) */
    uint64_t first_lossless;
} plan_sink;

/* The runner's progress hook: every strategy's iterations, as they are begun. */
static void on_progress(void *ud, uint64_t begun, int64_t announced)
{
    plan_sink *k = ud;

    k->meter.total = announced;
    cli_meter_step(&k->meter, begun + 1); /* the iteration being planned, from 1 */
}

static vl_status sink_begin(void *ud, const vl_plan *p, int64_t iterations, vl_err *err)
{
    plan_sink *k = ud;
    const char *out = k->a->output;

    if (k->figures && vl_eval_acc_init(&k->acc, &k->cost, &k->so, err) != VL_OK)
        return err->code;
    if (!k->o) {
        fflush(stdout);
        return vl_plan_writer_open(&k->w, p, iterations, STDOUT_FILENO, false, "<stdout>",
                                   err);
    }
    return vl_plan_writer_open(&k->w, p, iterations, vl_outfile_fd(k->o),
                               vl_plan_name_zstd(out), out, err);
}

static vl_status sink_iters(void *ud, const vl_plan *p, vl_err *err)
{
    plan_sink *k = ud;
    vl_status st = vl_plan_writer_iters(k->w, p, err);

    for (size_t it = 0; st == VL_OK && it < p->niters; it++) {
        uint64_t tokens, loss;
        vl_plan_iter_totals(p, it, &tokens, &loss, NULL);
        if (tokens && !loss && !k->lossless++)
            k->first_lossless = p->iter_base + it;
        if (k->figures)
            st = vl_eval_acc_iter(&k->acc, p, it, NULL, err);
    }
    return st;
}

/* What the strategy did that the user did not ask for (vl_job_warn), one line each. */
static void report_warnings(const plan_args *a, const vl_run_result *res)
{
    const char *w = res->warnings;

    if (a->log.quiet || !w[0])
        return;
    cli_progress_clear();
    while (*w) {
        const char *nl = strchr(w, '\n');
        int n = nl ? (int)(nl - w) : (int)strlen(w);
        fprintf(stderr, "vlplan plan: warning: %.*s\n", n, w);
        w += n + (nl != NULL);
    }
}

/* An iteration whose loss tokens were all truncated away has a normaliser of 0: a
 * trainer dividing by it spreads NaN (python/vlplan guards with loss_scale 0). */
static void report_lossless(const plan_args *a, const plan_sink *k)
{
    if (a->log.quiet || !k->lossless)
        return;
    cli_progress_clear();
    fprintf(stderr,
            "vlplan plan: warning: %llu %s tokens but no loss token "
            "(first: iteration %llu; truncation cut every loss token of their "
            "samples): their loss_tokens is 0, so divide by it only when it is not "
            "0 (python: it.loss_scale is 0 there)\n",
            (unsigned long long)k->lossless,
            k->lossless == 1 ? "iteration has" : "iterations have",
            (unsigned long long)k->first_lossless);
}

/* The footer; the file goes under its name with the metrics (commit_outputs). */
static int sink_close(plan_sink *k, const vl_plan *p, int rc)
{
    vl_err err = {0};

    if (rc == 0 && vl_plan_writer_close(k->w, p, &err) != VL_OK)
        rc = cli_fail(CMD, &err);
    else if (rc != 0)
        vl_plan_writer_abort(k->w);
    k->w = NULL;
    return rc;
}

/* The plan and the metrics file under their names together, or neither (rc != 0). */
static int commit_outputs(plan_sink *k, int rc)
{
    vl_outfile *o[2] = {k->o, k->mo};

    k->o = k->mo = NULL;
    return cli_output_close_all(CMD, o, 2, rc);
}

/* What the oversize policy took away, always said (-q included). */
static void report_drops(const vl_plan *p, const vl_run_result *res)
{
    char cn[32], ct[32], lim[32];
    uint64_t tok[2] = {0, 0}, n[2] = {0, 0};

    for (size_t i = 0; i < p->ndrops; i++) {
        int t = p->drops[i].reason == VL_DROP_TRUNCATED;
        n[t]++;
        tok[t] += p->drops[i].len;
    }
    if (n[0] + n[1] == 0) /* said under -q too: nothing lost in silence */
        return;
    double total = p->m && p->m->tokens ? (double)p->m->tokens : 1.0;
    cli_progress_clear();
    cli_count(res->max_len, lim, sizeof lim);
    if (n[0])
        fprintf(stderr,
                "vlplan plan: dropped %s samples over the length limit of %s tokens "
                "(%s tokens, %.2f%% of all tokens); the limit is %s\n",
                cli_count(n[0], cn, sizeof cn), lim, cli_count(tok[0], ct, sizeof ct),
                100.0 * (double)tok[0] / total, res->max_len_why);
    if (n[1])
        fprintf(stderr,
                "vlplan plan: truncated %s samples to the length limit of %s tokens "
                "(%s tokens cut, %.2f%% of all tokens); the limit is %s\n",
                cli_count(n[1], cn, sizeof cn), lim, cli_count(tok[1], ct, sizeof ct),
                100.0 * (double)tok[1] / total, res->max_len_why);
}

static void report_oom(const plan_args *a, const vl_run_result *res)
{
    const vl_verify_oom *o = &res->first_oom;

    if (a->log.quiet || res->oom_iters == 0)
        return;
    cli_progress_clear();
    fprintf(stderr,
            "vlplan plan: warning: --allow-oom: %zu of %zu iterations exceed device "
            "memory in the cost model; first: iteration %zu, rank %u, stage %u needs "
            "%.2f GiB, %.2f GiB usable%s%s\n",
            res->oom_iters, res->iterations, o->iter, o->rank, o->stage, o->gib, o->usable_gib,
            res->fit_hint[0] ? "; " : "", res->fit_hint);
}

static int write_metrics(const plan_args *a, plan_sink *k, const vl_plan *p, double secs)
{
    vl_err err = {0};
    eval_result r;
    FILE *f;
    int rc;

    if (!k->figures)
        return 0;
    if (eval_acc_finish(&k->acc, p, &r, &err) != VL_OK)
        return cli_fail(CMD, &err);
    r.has_timing = true;
    r.plan_time_s = secs;
    r.peak_rss_mib = cli_peak_rss_mib();
    if (a->log.verbose)
        fprintf(stderr,
                "vlplan plan: %s: %zu iterations, %llu samples, %llu tokens, "
                "abr %.4f dbr %.4f pr %.4f, epoch %.1f s simulated; planned in %.3f s\n",
                p->strategy, r.ev.mt.iterations, (unsigned long long)r.ev.mt.samples,
                (unsigned long long)r.ev.mt.tokens, r.ev.mt.abr.mean, r.ev.mt.dbr.mean,
                r.ev.mt.pr.mean, r.ev.sim.epoch_time_s, secs);
    if (!a->metrics)
        return 0;
    /* through a memory stream, so the file is written whole and atomically */
    char *text = NULL;
    size_t len = 0;
    if (!(f = open_memstream(&text, &len))) {
        cli_error(CMD, "out of memory");
        return EX_OSERR_;
    }
    rc = eval_print_json(f, CMD, &r);
    if (fclose(f) != 0 && rc == 0) {
        cli_error(CMD, "out of memory");
        rc = EX_OSERR_;
    }
    if (rc == 0)
        rc = k->mo ? cli_write_into(CMD, k->mo, a->metrics, text)
                   : cli_write_text(CMD, a->metrics, text);
    free(text);
    return rc;
}

/* The output files opened (temporaries) before any work, so that a name that cannot
 * be written is said at once. */
static int open_outputs(const plan_args *a, plan_sink *k)
{
    int rc = 0;

    if (a->output && !cli_is_stdout(a->output))
        rc = cli_output_open(CMD, a->output, &k->o);
    if (rc == 0 && a->metrics && !cli_is_stdout(a->metrics))
        rc = cli_output_open(CMD, a->metrics, &k->mo);
    return rc;
}

/* Plan into the sink; the plan file is complete (not yet under its name) when this
 * returns 0. */
static int plan_into(plan_args *a, plan_sink *k, const vl_strategy *s, vl_manifest *m,
                     const vl_config *cfg, vl_plan *p, vl_run_result *res)
{
    vl_run_sink sink = {sink_begin, sink_iters, k};
    vl_run_opts ro = {.seed = cfg->training.seed,
                      .verbose = a->log.verbose,
                      .allow_oom = a->allow_oom,
                      .sink = &sink,
                      .progress = on_progress,
                      .progress_ud = k};
    vl_err err = {0};
    int rc = 0;

    if (vl_run_plan(p, s, m, cfg, &ro, res, &err) != VL_OK) {
        cli_progress(&a->log, true, " ");
        if (res->log && a->log.verbose) {
            cli_progress_clear();
            fputs(res->log, stderr);
        }
        rc = cli_fail(CMD, &err);
    }
    return sink_close(k, p, rc);
}

static int run(plan_args *a, char **ins, int nin)
{
    const vl_strategy *s = vl_strategy_find(a->strategy);
    plan_sink k = {.a = a, .so = VL_SIM_OPTS_INIT};
    vl_config cfg;
    vl_manifest *m = NULL;
    vl_plan p;
    vl_run_result res = {0};
    vl_err err = {0};
    int rc;

    memset(&p, 0, sizeof p); /* freed below whatever happens; the run frees its own */
    if (!s)
        return unknown_strategy(a->strategy);
    if ((rc = check_output(a, ins, nin)) != 0)
        return rc;
    if ((rc = cli_config_load(CMD, &a->cfg, &cfg)) != 0)
        return rc;
    k.figures = a->metrics || a->log.verbose;
    if (k.figures && vl_cost_init(&k.cost, &cfg, &err) != VL_OK) {
        rc = cli_fail(CMD, &err);
        goto done_cfg;
    }
    if ((rc = open_outputs(a, &k)) != 0)
        goto done_out;
    cli_progress(&a->log, false, "reading manifest...");
    if ((rc = cli_manifest_load(CMD, &a->man, ins, nin, &m)) != 0)
        goto done_out;
    cli_progress(&a->log, false, "planning %zu samples with %s...", m->n, s->name);
    char what[96];
    snprintf(what, sizeof what, "planning %zu samples with %s", m->n, s->name);
    cli_meter_start(&k.meter, &a->log, -1, what);
    double t0 = cli_now_s();
    if ((rc = plan_into(a, &k, s, m, &cfg, &p, &res)) == 0) {
        double secs = cli_now_s() - t0;
        cli_progress(&a->log, true, " ");
        if (res.log && a->log.verbose) {
            cli_progress_clear();
            fputs(res.log, stderr);
        }
        report_drops(&p, &res);
        report_warnings(a, &res);
        report_lossless(a, &k);
        report_oom(a, &res);
        rc = write_metrics(a, &k, &p, secs);
    }
done_out:
    rc = commit_outputs(&k, rc);
    vl_plan_free(&p);
    vl_eval_acc_free(&k.acc);
    free(res.log);
    vl_manifest_free(m);
done_cfg:
    vl_config_free(&cfg);
    return rc;
}

int cmd_plan(int argc, char **argv)
{
    plan_args a;
    int first = 0, rc;

    memset(&a, 0, sizeof a);
    cli_log_init(&a.log);
    rc = cli_parse(argc, argv, CMD, USAGE, options, on_option, &a, &first);
    if (rc)
        return rc < 0 ? 0 : rc;
    if (!a.strategy) {
        cli_error(CMD, "missing -s STRATEGY (see 'vlplan strategies')");
        return EX_USAGE_;
    }
    return run(&a, argv + first, argc - first);
}
