/* cmd/vlplan/cmd_verify.c -- `vlplan verify PLAN MANIFEST...`: prove a plan against
 * its manifest.  Exit 0 when every invariant holds, 1 when one is violated (like cmp
 * and diff), a sysexits code when the inputs cannot be read. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "evaluate.h"
#include "vlplan.h"

static const char *const CMD = "verify";
static const char *const USAGE =
    "[-q] [-c CONFIG] [--set KEY=VALUE]... [-j N] PLAN MANIFEST...";

static const cli_opt options[] = {
    {"config", 'c', "FILE",
     "config for the memory and cluster checks (default: the plan's "
     "own)"},
    {"set", OPT_SET, "KEY=VALUE", "override a config key (repeatable)"},
    CLI_MANIFEST_OPTIONS,
    {"allow-empty", OPT_ALLOW_EMPTY, NULL, "accept a manifest with no samples"},
    {"quiet", 'q', NULL, "print nothing; the exit status tells"},
    CLI_JOBS_OPTION,
    {"help", 'h', NULL, "show this help"},
    {NULL, 0, NULL, NULL},
};

typedef struct verify_args {
    cli_manifest_args man;
    cli_config_args cfg;
    cli_log log;
    int threads;
} verify_args;

static int on_option(int key, const char *arg, void *ud)
{
    verify_args *a = ud;
    int rc = cli_manifest_option(CMD, &a->man, key, arg);

    if (rc == 1 && key != OPT_SEED)
        rc = cli_config_option(CMD, &a->cfg, key, arg);
    if (rc != 1)
        return rc;
    switch (key) {
    case 'q': a->log.quiet++; return 0;
    case 'j': return cli_parse_jobs(CMD, arg, &a->threads);
    case OPT_ALLOW_EMPTY: a->man.allow_empty = true; return 0;
    }
    return EX_USAGE_;
}

/* "every sample accounted for", and for how many that means a listed drop. */
static void print_drops(const vl_plan *p)
{
    uint64_t n[2] = {0, 0}, tok[2] = {0, 0};
    char c[4][32];

    for (size_t i = 0; i < p->ndrops; i++) {
        int t = p->drops[i].reason == VL_DROP_TRUNCATED;
        n[t]++;
        tok[t] += p->drops[i].len;
    }
    printf("every sample accounted for: %s dropped (%s tokens), %s truncated (%s tokens cut)",
           cli_count(n[0], c[0], 32), cli_count(tok[0], c[1], 32), cli_count(n[1], c[2], 32),
           cli_count(tok[1], c[3], 32));
}

/* Which configuration the limits and memory were checked against, so that a CI job
 * pinning the real cluster with -c can see it did. */
static void print_config(const verify_args *a, const char *path, const vl_plan *p, bool have)
{
    const cli_config_args *c = &a->cfg;

    printf("%s: config: ", path);
    if (!have) {
        printf("none (modelled memory and cluster limits not checked)\n");
        return;
    }
    if (c->npaths == 0)
        printf("%s%s", p->config_json ? "the plan header's" : "the defaults",
               c->nsets ? " with" : "");
    for (int i = 0; i < c->npaths; i++)
        printf("%s-c %s", i ? " " : "", c->paths[i]);
    for (int i = 0; i < c->nsets; i++)
        printf(" --set %s", c->sets[i]);
    putchar('\n');
}

static int report(const verify_args *a, const char *path, const vl_plan *p,
                  const vl_verify_report *rep, vl_status st, bool have_config)
{
    if (!a->log.quiet)
        print_config(a, path, p, have_config);
    if (st == VL_OK) {
        if (!a->log.quiet) {
            printf("%s: ok: %llu iterations, %zu epochs, ", path,
                   (unsigned long long)p->iter_base, (size_t)p->epochs);
            print_drops(p);
            putchar('\n');
        }
        return 0;
    }
    if (!a->log.quiet) {
        for (size_t i = 0; i < rep->nmsgs; i++)
            printf("%s: %s\n", path, rep->msgs[i]);
        if (rep->violations > rep->nmsgs)
            printf("%s: ... and %zu more\n", path, rep->violations - rep->nmsgs);
        fflush(stdout); /* the list, then the count, also when both go to one pipe */
        fprintf(stderr, "vlplan verify: %s: %zu violation(s)\n", path, rep->violations);
    }
    return 1;
}

/* The plan streams by an iteration at a time; the verifier keeps per-sample coverage
 * and one iteration. */
typedef struct verify_walk {
    const verify_args *a;
    const vl_manifest *m;
    eval_cost_src src; /* optional: a plan from another tool may have no config */
    vl_verify_report *rep;
    vl_verifier *v;
    int rc; /* exit code of a failure inside a visit, already printed */
} verify_walk;

/* The header is not trusted: when -c or --set gives the configuration to check
 * against, a header config that differs from it is a violation (a plan made for 800 GiB
 * devices does not pass as made for 80). */
static int check_header_config(verify_walk *w, const vl_plan *p)
{
    const cli_config_args none = {.npaths = 0};
    const cli_config_args *a = &w->a->cfg;
    vl_config header;
    vl_err err = {0};
    char diff[120], msg[256];
    size_t n = 0;
    int rc;

    if (!w->src.have || !p->config_json || (a->npaths == 0 && a->nsets == 0))
        return 0;
    if ((rc = cli_config_load_over(CMD, &none, p->config_json, "plan header config",
                                   &header)) != 0)
        return rc;
    vl_status st = vl_config_diff(&header, &w->src.cfg, diff, sizeof diff, &n, &err);
    vl_config_free(&header);
    if (st != VL_OK)
        return cli_fail(CMD, &err);
    if (n == 0)
        return 0;
    snprintf(msg, sizeof msg,
             "the plan header's config disagrees with the one checked "
             "against in %zu key(s): %s (header vs checked)",
             n, diff);
    vl_verifier_violation(w->v, msg);
    return 0;
}

/* The header's config (or -c) gives the memory and cluster checks; with none at all
 * they are skipped, with a warning. */
static int walk_start(verify_walk *w, const vl_plan *p)
{
    vl_err err = {0};
    int rc;

    if (w->v)
        return 0;
    if ((rc = eval_cost_load(&w->src, p)) != 0)
        return rc;
    if (!w->src.have && !w->a->log.quiet)
        fprintf(stderr, "vlplan verify: warning: the plan header has no config and no -c "
                        "was given; modelled memory and cluster limits not checked\n");
    if (vl_verifier_new(&w->v, w->m, w->src.have ? &w->src.cost : NULL, &vl_registry_rules,
                        w->rep, &err) != VL_OK)
        return cli_fail(CMD, &err);
    return check_header_config(w, p);
}

static vl_status visit(void *ud, vl_plan *p, vl_err *err)
{
    verify_walk *w = ud;

    if ((w->rc = walk_start(w, p)) != 0)
        return vl_seterr(err, VL_EUSAGE, "stopped");
    return vl_verifier_iter(w->v, p, 0, err);
}

static int finish(verify_walk *w, const char *path, const vl_plan *p, const vl_plan_file *f)
{
    vl_err err = {0};
    vl_status st;
    int rc = walk_start(w, p);

    if (rc)
        return rc;
    st = vl_verifier_finish(w->v, p, f, &err);
    if (st == VL_OK || st == VL_EVERIFY)
        return report(w->a, path, p, w->rep, st, w->src.have);
    return cli_fail(CMD, &err);
}

static int check(verify_walk *w, const char *path, vl_manifest *m, vl_plan_file *f)
{
    vl_plan p;
    vl_err err = {0};
    int rc;

    memset(&p, 0, sizeof p);
    if (vl_plan_read_each(&p, f, path, m, w->a->threads, visit, w, &err) != VL_OK)
        rc = w->rc ? w->rc : eval_read_fail(CMD, f, &err);
    else
        rc = finish(w, path, &p, f);
    vl_plan_free(&p);
    return rc;
}

static int run(const verify_args *a, char *plan_path, char **ins, int nin)
{
    verify_walk w = {.a = a, .src = {.cmd = CMD, .args = &a->cfg, .optional = true}};
    vl_manifest *m = NULL;
    vl_plan_file *f = malloc(sizeof *f);
    int rc;

    w.rep = malloc(sizeof *w.rep);
    if (!f || !w.rep) {
        free(f);
        free(w.rep);
        cli_error(CMD, "out of memory");
        return cli_exit_for(VL_ENOMEM);
    }
    if ((rc = cli_manifest_load(CMD, &a->man, ins, nin, &m)) == 0) {
        w.m = m;
        rc = check(&w, plan_path, m, f);
    }
    vl_verifier_free(w.v);
    eval_cost_free(&w.src);
    vl_manifest_free(m);
    free(w.rep);
    free(f);
    return rc;
}

int cmd_verify(int argc, char **argv)
{
    verify_args a;
    int first = 0, rc;

    memset(&a, 0, sizeof a);
    cli_log_init(&a.log);
    a.threads = cli_default_jobs();
    rc = cli_parse(argc, argv, CMD, USAGE, options, on_option, &a, &first);
    if (rc)
        return rc < 0 ? 0 : rc;
    if (argc - first < 2) {
        cli_error(CMD, "expected a plan and at least one manifest");
        fprintf(stderr, "usage: vlplan %s %s\n", CMD, USAGE);
        return EX_USAGE_;
    }
    if (strcmp(argv[first], "-") == 0)
        for (int i = first + 1; i < argc; i++)
            if (strcmp(argv[i], "-") == 0) {
                cli_error(CMD, "the plan and a manifest cannot both be standard input");
                return EX_USAGE_;
            }
    return run(&a, argv[first], argv + first + 1, argc - first - 1);
}
