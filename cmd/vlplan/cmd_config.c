/* cmd/vlplan/cmd_config.c -- `vlplan config`: load and check a config (defaults, -c,
 * --set), print a one-line summary, or with --dump the whole effective YAML. */
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "vlplan.h"

static const char *const CMD = "config";
static const char *const USAGE = "[--dump] [-c CONFIG] [--set KEY=VALUE]...";

static const cli_opt options[] = {
    {"config", 'c', "FILE", "cluster/model YAML (default: built-in preset)"},
    {"set", OPT_SET, "KEY=VALUE", "override a config key (repeatable)"},
    {"dump", OPT_DUMP, NULL, "print the effective configuration as YAML"},
    {"help", 'h', NULL, "show this help"},
    {NULL, 0, NULL, NULL},
};

typedef struct config_args {
    cli_config_args cfg;
    bool dump;
} config_args;

static int on_option(int key, const char *arg, void *ud)
{
    config_args *a = ud;
    int rc = cli_config_option(CMD, &a->cfg, key, arg);

    if (rc != 1)
        return rc;
    switch (key) {
    case OPT_DUMP: a->dump = true; return 0;
    }
    return EX_USAGE_;
}

/* Every strategy section must name a registered strategy and bind cleanly, so a typo
 * in a section nobody plans with today is still caught. */
static int check_strategy_sections(const vl_config *cfg)
{
    const char *names[64];
    size_t n = 0;
    vl_err err = {0};

    for (size_t i = 0; i < vl_strategy_count() && n < 64; i++)
        if (vl_strategy_at(i)->section)
            names[n++] = vl_strategy_at(i)->section;
    if (vl_config_check_sections(cfg, names, n, &err) != VL_OK)
        return cli_fail(CMD, &err);
    for (size_t i = 0; i < vl_strategy_count(); i++) {
        const vl_strategy *s = vl_strategy_at(i);
        if (!s->section || !s->params)
            continue;
        void *opts = calloc(1, s->opts_size);
        vl_status st = opts ? vl_config_bind(cfg, s->section, s->params, opts, &err)
                            : vl_seterr(&err, VL_ENOMEM, "out of memory");
        free(opts);
        if (st != VL_OK)
            return cli_fail(CMD, &err);
    }
    return 0;
}

int cmd_config(int argc, char **argv)
{
    config_args a;
    vl_config cfg;
    vl_err err = {0};
    char *yaml = NULL;
    int first = 0, rc;

    memset(&a, 0, sizeof a);
    rc = cli_parse(argc, argv, CMD, USAGE, options, on_option, &a, &first);
    if (rc)
        return rc < 0 ? 0 : rc;
    if (first != argc) {
        cli_error(CMD, "unexpected argument '%s' (give the config with -c)", argv[first]);
        return EX_USAGE_;
    }
    if ((rc = cli_config_load(CMD, &a.cfg, &cfg)) != 0)
        return rc;
    if ((rc = check_strategy_sections(&cfg)) != 0)
        goto done;
    if (!a.dump) {
        const vl_training_cfg *t = &cfg.training;
        printf("%s: ok: %s on %d x %s, dp %d tp %d pp %d sp %d, max_seq_len %u\n", cfg.source,
               cfg.model.preset, cfg.cluster.gpus, cfg.cluster.gpu, t->dp, t->tp, t->pp, t->sp,
               t->max_seq_len);
        goto done;
    }
    if (vl_config_dump_yaml(&cfg, &yaml, &err) != VL_OK)
        rc = cli_fail(CMD, &err);
    else
        fputs(yaml, stdout);
    free(yaml);
done:
    vl_config_free(&cfg);
    return rc;
}
