/* cmd/vlplan/main.c -- argv -> subcommand table -> exit code (sysexits). */
#include <stdio.h>
#include <string.h>
#if defined(__GLIBC__) /* from <stdio.h> */
#include <malloc.h>
#endif

#include "cli.h"

#ifndef VLPLAN_VERSION
#define VLPLAN_VERSION "0.0.0"
#endif

static const cli_cmd commands[] = {
    {"plan", cmd_plan, "plan manifests with a strategy, write the plan and metrics"},
    {"metrics", cmd_metrics, "balance metrics of a plan file"},
    {"simulate", cmd_simulate, "simulated step time, bubbles and memory of a plan; SVG Gantt"},
    {"compare", cmd_compare, "plan with several strategies, one table; --check gates CI"},
    {"verify", cmd_verify, "prove a plan against its manifest (exit 1 on violation)"},
    {"stats", cmd_stats, "length statistics of manifests (the papers' table)"},
    {"gen", cmd_gen, "generate a manifest from a published or real length distribution"},
    {"strategies", cmd_strategies, "list strategies and their parameters"},
    {"schema", cmd_schema, "the plan file's schema as JSON, for other readers"},
    {"config", cmd_config, "check a config and print the effective configuration"},
    {"advise", cmd_advise, "search layouts x strategies x settings for the fastest plan"},
    {"calibrate", cmd_calibrate, "fit the cost model to measured step times (cost.schemes)"},
    {NULL, NULL, NULL},
};

static void usage(FILE *f)
{
    fputs("usage: vlplan [--help] [--version] COMMAND [ARGS]\n\ncommands:\n", f);
    for (const cli_cmd *c = commands; c->name; c++)
        fprintf(f, "  %-11s %s\n", c->name, c->summary);
    fputs("\nRun 'vlplan COMMAND --help' for a command's options; see vlplan(1).\n", f);
}

static int unknown_command(const char *name)
{
    const char *best = NULL;
    size_t bestd = 3;

    for (const cli_cmd *c = commands; c->name; c++) {
        size_t d = cli_edit_distance(name, c->name);
        if (d < bestd) {
            bestd = d;
            best = c->name;
        }
    }
    if (best)
        cli_error(NULL, "unknown command '%s' (did you mean '%s'?)", name, best);
    else
        cli_error(NULL, "unknown command '%s'", name);
    fputs("usage: vlplan [--help] [--version] COMMAND [ARGS]\n", stderr);
    return EX_USAGE_;
}

/* `vlplan help CMD` is `vlplan CMD --help`, as in git. */
static int help_for(const char *name)
{
    char help[] = "--help";

    for (const cli_cmd *c = commands; c->name; c++)
        if (strcmp(name, c->name) == 0) {
            char *argv[] = {(char *)c->name, help, NULL};
            return cli_finish(c->name, c->fn(2, argv));
        }
    return unknown_command(name);
}

/* Planning frees large arrays and allocates them again (an epoch's order, a pass's
 * scratch); glibc's defaults give such blocks back to the kernel at once (mmap above an
 * adaptive threshold, the heap trimmed past 128 KiB), so each reuse faults its pages in
 * again: about a quarter of `pack`'s page faults and 5-10% of its CPU time on 1M
 * samples (bench/history/).  Freed memory stays in the process for the command's short
 * life; the peak is what the plan needs either way.  Other C libraries: their defaults. */
static void keep_freed_memory(void)
{
#if defined(__GLIBC__)
    mallopt(M_MMAP_THRESHOLD, 32 << 20);
    mallopt(M_TRIM_THRESHOLD, 1 << 30);
#endif
}

int main(int argc, char **argv)
{
    keep_freed_memory();
    /* SIGPIPE as inherited (default: `vlplan plan m | head` ends quietly, like
     * coreutils); cli_signals_init leaves ignored signals ignored. */
    cli_signals_init();
    if (argc < 2) {
        usage(stderr);
        return EX_USAGE_;
    }
    if (strcmp(argv[1], "help") == 0 && argc > 2)
        return help_for(argv[2]);
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
        strcmp(argv[1], "help") == 0) {
        usage(stdout);
        return cli_finish(NULL, 0);
    }
    if (strcmp(argv[1], "--version") == 0 || strcmp(argv[1], "-V") == 0) {
        printf("vlplan %s\n", VLPLAN_VERSION);
        return cli_finish(NULL, 0);
    }
    if (argv[1][0] == '-') {
        cli_error(NULL, "unknown option '%s'", argv[1]);
        fputs("usage: vlplan [--help] [--version] COMMAND [ARGS]\n", stderr);
        return EX_USAGE_;
    }
    for (const cli_cmd *c = commands; c->name; c++)
        if (strcmp(argv[1], c->name) == 0)
            return cli_finish(c->name, c->fn(argc - 1, argv + 1));
    return unknown_command(argv[1]);
}
