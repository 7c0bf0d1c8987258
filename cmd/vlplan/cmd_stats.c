/* cmd/vlplan/cmd_stats.c -- `vlplan stats`: the papers' length table of manifests
 * (share of samples under 1K ... 128K tokens, longest) plus count, tokens, mean and
 * percentiles. */
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "jsonw.h"
#include "report.h"
#include "vlplan.h"

static const char *const CMD = "stats";
static const char *const USAGE = "[--format table|json|csv] MANIFEST...";

static const cli_opt options[] = {
    {"format", OPT_FORMAT, "FMT", "table (default), json or csv"},
    CLI_MANIFEST_OPTIONS,
    {"help", 'h', NULL, "show this help"},
    {NULL, 0, NULL, NULL},
};

static const char *const bucket_names[VL_STATS_NTHRESH] = {"lt_1k", "lt_4k", "lt_8k", "lt_32k",
                                                           "lt_128k"};
static const char *const bucket_labels[VL_STATS_NTHRESH] = {"<1K", "<4K", "<8K", "<32K",
                                                            "<128K"};

typedef struct stats_args {
    report_format fmt;
    cli_manifest_args man;
} stats_args;

static int on_option(int key, const char *arg, void *ud)
{
    stats_args *a = ud;
    int rc = cli_manifest_option(CMD, &a->man, key, arg);

    if (rc != 1)
        return rc;
    switch (key) {
    case OPT_FORMAT:
        return report_parse_format(CMD, arg, 1u << FMT_TABLE | 1u << FMT_JSON | 1u << FMT_CSV,
                                   &a->fmt);
    }
    return EX_USAGE_;
}

/* Counts with thousands separators, as every table prints them; the CSV and JSON keep
 * plain numbers. */
static void print_table(const vl_stats *s)
{
    char c[7][32];

    printf("samples %s, tokens %s, mean %.1f, min %s, p50 %s, p90 %s, p99 %s, longest %s\n\n",
           cli_count(s->n, c[0], 32), cli_count(s->tokens, c[1], 32), s->mean,
           cli_count(s->min, c[2], 32), cli_count(s->p50, c[3], 32),
           cli_count(s->p90, c[4], 32), cli_count(s->p99, c[5], 32),
           cli_count(s->max, c[6], 32));
    printf("%-8s %10s %10s\n", "length", "samples", "tokens");
    for (int k = 0; k < VL_STATS_NTHRESH; k++)
        printf("%-8s %9.3f%% %9.3f%%\n", bucket_labels[k], 100 * s->frac_below[k],
               100 * s->token_frac_below[k]);
}

static void print_csv(const vl_stats *s)
{
    printf("samples,tokens,mean,min,p50,p90,p99,longest");
    for (int k = 0; k < VL_STATS_NTHRESH; k++)
        printf(",%s,%s_tokens", bucket_names[k], bucket_names[k]);
    printf("\n%zu,%llu,%.3f,%u,%u,%u,%u,%u", s->n, (unsigned long long)s->tokens, s->mean,
           s->min, s->p50, s->p90, s->p99, s->max);
    for (int k = 0; k < VL_STATS_NTHRESH; k++)
        printf(",%.6f,%.6f", s->frac_below[k], s->token_frac_below[k]);
    putchar('\n');
}

static int print_json(const vl_stats *s)
{
    vl_jw *o = vl_jw_object(), *b = NULL;
    int bad = !o;

    if (!bad) {
        bad |= vl_jw_int(o, "samples", (int64_t)s->n) |
               vl_jw_int(o, "tokens", (int64_t)s->tokens);
        bad |= vl_jw_num(o, "mean", s->mean) | vl_jw_int(o, "min", s->min);
        bad |= vl_jw_int(o, "p50", s->p50) | vl_jw_int(o, "p90", s->p90);
        bad |= vl_jw_int(o, "p99", s->p99) | vl_jw_int(o, "longest", s->max);
        bad |= !(b = vl_jw_child(o, "below"));
        for (int k = 0; !bad && k < VL_STATS_NTHRESH; k++) {
            vl_jw *e = vl_jw_child(b, bucket_names[k]);
            bad |= !e || vl_jw_int(e, "threshold", s->thresh[k]) ||
                   vl_jw_num(e, "samples", s->frac_below[k]) ||
                   vl_jw_num(e, "tokens", s->token_frac_below[k]);
        }
    }
    return cli_print_json(stdout, CMD, o, bad);
}

int cmd_stats(int argc, char **argv)
{
    stats_args a;
    vl_manifest *m = NULL;
    vl_stats s;
    vl_err err = {0};
    int first = 0, rc;

    memset(&a, 0, sizeof a);
    rc = cli_parse(argc, argv, CMD, USAGE, options, on_option, &a, &first);
    if (rc)
        return rc < 0 ? 0 : rc;
    a.man.lengths_only = true; /* ids play no part in the statistics */
    if ((rc = cli_manifest_load(CMD, &a.man, argv + first, argc - first, &m)) != 0)
        return rc;
    if (vl_stats_compute(&s, m->len, m->n, &err) != VL_OK) {
        rc = cli_fail(CMD, &err);
    } else if (a.fmt == FMT_JSON) {
        rc = print_json(&s);
    } else if (a.fmt == FMT_CSV) {
        print_csv(&s);
    } else {
        print_table(&s);
    }
    vl_manifest_free(m);
    return rc;
}
