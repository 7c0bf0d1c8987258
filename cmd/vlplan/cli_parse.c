/* cmd/vlplan/cli_parse.c -- the subcommands' options (cli.h): parsing from one table,
 * so --help and parsing cannot disagree, help, integers and -j. */
#include "cli.h"

#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

#define MAX_OPTS 40

static void print_help(const char *cmd, const char *usage, const cli_opt *t)
{
    printf("usage: vlplan %s %s\n\noptions:\n", cmd, usage);
    for (; t->name; t++) {
        char left[64];
        if (t->key < 256)
            snprintf(left, sizeof left, "-%c, --%s%s%s", t->key, t->name, t->arg ? " " : "",
                     t->arg ? t->arg : "");
        else
            snprintf(left, sizeof left, "    --%s%s%s", t->name, t->arg ? " " : "",
                     t->arg ? t->arg : "");
        printf("  %-28s %s\n", left, t->help);
    }
    printf("\nSee vlplan(1) for details.\n");
}

/* Build getopt_long's tables from ours, so --help and parsing cannot disagree. */
static int build_getopt(const cli_opt *t, struct option *lo, char *so, size_t socap)
{
    size_t n = 0, k = 0;

    so[k++] = ':';
    for (; t->name && n < MAX_OPTS - 1; t++, n++) {
        lo[n] =
            (struct option){t->name, t->arg ? required_argument : no_argument, NULL, t->key};
        if (t->key < 256 && k + 3 < socap) {
            so[k++] = (char)t->key;
            if (t->arg)
                so[k++] = ':';
        }
    }
    lo[n] = (struct option){0, 0, 0, 0};
    so[k] = '\0';
    return 0;
}

int cli_parse(int argc, char **argv, const char *cmd, const char *usage, const cli_opt *table,
              int (*fn)(int key, const char *arg, void *ud), void *ud, int *first_operand)
{
    struct option lo[MAX_OPTS];
    char so[2 * MAX_OPTS + 2];
    int c, rc;

    build_getopt(table, lo, so, sizeof so);
    opterr = 0;
    optind = 1;
    while ((c = getopt_long(argc, argv, so, lo, NULL)) != -1) {
        if (c == 'h') {
            print_help(cmd, usage, table);
            return -1;
        }
        if (c == '?' || c == ':') {
            char shortopt[3] = {'-', (char)optopt, '\0'};
            const char *bad = (optopt > 0 && optopt < 256) ? shortopt : argv[optind - 1];
            const char *near = c == '?' ? cli_nearest_option(bad, table) : NULL;
            if (c == ':')
                cli_error(cmd, "option '%s' needs an argument", bad);
            else if (near)
                cli_error(cmd, "unknown option '%s' (did you mean '--%s'?)", bad, near);
            else
                cli_error(cmd, "unknown option '%s'", bad);
            fprintf(stderr, "usage: vlplan %s %s\n", cmd, usage);
            return EX_USAGE_;
        }
        if ((rc = fn(c, optarg, ud)) != 0)
            return rc;
    }
    *first_operand = optind;
    return 0;
}

int cli_parse_u64(const char *cmd, const char *opt, const char *s, uint64_t min, uint64_t max,
                  uint64_t *out)
{
    char *end = NULL;
    unsigned long long v;

    errno = 0;
    if (*s == '\0' || *s == '-' || *s == '+' || *s == ' ')
        goto bad;
    v = strtoull(s, &end, 10);
    if (errno || *end != '\0' || v < min || v > max)
        goto bad;
    *out = v;
    return 0;
bad:
    cli_error(cmd, "invalid value '%s' for %s (expected an integer in %llu..%llu)", s, opt,
              (unsigned long long)min, (unsigned long long)max);
    return EX_USAGE_;
}

int cli_default_jobs(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);

    return n < 1 ? 1 : n > CLI_JOBS_MAX ? CLI_JOBS_MAX : (int)n;
}

int cli_parse_jobs(const char *cmd, const char *arg, int *jobs)
{
    uint64_t v;
    int rc = cli_parse_u64(cmd, "-j", arg, 1, CLI_JOBS_MAX, &v);

    if (rc == 0)
        *jobs = (int)v;
    return rc;
}
