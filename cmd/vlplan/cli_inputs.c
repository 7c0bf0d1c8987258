/* cmd/vlplan/cli_inputs.c -- the inputs every command loads the same way (cli.h): the
 * configuration from -c, --set and --seed (over a plan's own when there is one), and
 * the manifests, standard input included. */
#include "cli.h"

#include <string.h>
#include <unistd.h>

int cli_config_add_set(const char *cmd, cli_config_args *a, const char *kv)
{
    if (a->nsets >= (int)(sizeof a->sets / sizeof a->sets[0])) {
        cli_error(cmd, "too many --set options (at most 64)");
        return EX_USAGE_;
    }
    a->sets[a->nsets++] = kv;
    return 0;
}

int cli_config_add_file(const char *cmd, cli_config_args *a, const char *path)
{
    if (a->npaths >= (int)(sizeof a->paths / sizeof a->paths[0])) {
        cli_error(cmd, "too many -c options (at most 16)");
        return EX_USAGE_;
    }
    a->paths[a->npaths++] = path;
    return 0;
}

int cli_config_option(const char *cmd, cli_config_args *a, int key, const char *arg)
{
    switch (key) {
    case 'c': return cli_config_add_file(cmd, a, arg);
    case OPT_SET: return cli_config_add_set(cmd, a, arg);
    case OPT_SEED:
        a->seed_set = true;
        return cli_parse_u64(cmd, "--seed", arg, 0, VL_SEED_MAX, &a->seed);
    }
    return 1;
}

int cli_config_load(const char *cmd, const cli_config_args *a, vl_config *cfg)
{
    return cli_config_load_over(cmd, a, NULL, NULL, cfg);
}

vl_status cli_config_build(const cli_config_args *a, const char *base, const char *base_name,
                           vl_config *cfg, vl_err *err)
{
    vl_status st = vl_config_init_default(cfg, err);

    if (st == VL_OK && a->npaths == 0 && base) {
        st = vl_config_load_string(cfg, base, base_name, err);
        /* a recorded config states the dp it derived; re-derive it, so that --set
         * training.pp=2 over a plan's own config means what it says */
        if (st == VL_OK && a->nsets > 0)
            st = vl_config_set(cfg, "training.dp=0", err);
    }
    for (int i = 0; st == VL_OK && i < a->npaths; i++)
        st = vl_config_load_file(cfg, a->paths[i], err);
    for (int i = 0; st == VL_OK && i < a->nsets; i++)
        st = vl_config_set(cfg, a->sets[i], err);
    if (st == VL_OK && a->seed_set)
        cfg->training.seed = a->seed;
    if (st == VL_OK)
        st = vl_config_finalize(cfg, err);
    if (st != VL_OK)
        vl_config_free(cfg);
    return st;
}

int cli_config_load_over(const char *cmd, const cli_config_args *a, const char *base,
                         const char *base_name, vl_config *cfg)
{
    vl_err err = {0};

    if (cli_config_build(a, base, base_name, cfg, &err) != VL_OK)
        return cli_fail(cmd, &err);
    return 0;
}

int cli_manifest_load(const char *cmd, const cli_manifest_args *a, char **paths, int npaths,
                      vl_manifest **out)
{
    static const char *const dash[] = {"-"};
    vl_manifest_opts mo = {.id_col = a->id_col,
                           .len_col = a->len_col,
                           .allow_empty = a->allow_empty,
                           .zstd_window_log_max = a->zstd_window_log_max,
                           .lengths_only = a->lengths_only};
    vl_err err = {0};

    if (npaths == 0) {
        if (isatty(STDIN_FILENO)) {
            cli_error(cmd, "no input; give a manifest path or pipe one into '-'");
            return EX_USAGE_;
        }
        paths = (char **)dash;
        npaths = 1;
    }
    for (int i = 0, seen = 0; i < npaths; i++)
        if (strcmp(paths[i], "-") == 0 && seen++) {
            cli_error(cmd, "standard input ('-') named more than once");
            return EX_USAGE_;
        }
    if (vl_manifest_read(out, (const char *const *)paths, (size_t)npaths, &mo, &err) != VL_OK)
        return cli_fail(cmd, &err);
    return 0;
}

int cli_manifest_option(const char *cmd, cli_manifest_args *a, int key, const char *arg)
{
    uint64_t v;

    switch (key) {
    case OPT_ID_COL: a->id_col = arg; return 0;
    case OPT_LEN_COL: a->len_col = arg; return 0;
    case OPT_ZSTD_WLOG:
        if (cli_parse_u64(cmd, "--zstd-window-log-max", arg, 10, 31, &v) != 0)
            return EX_USAGE_;
        a->zstd_window_log_max = (int)v;
        return 0;
    }
    return 1;
}
