/* cmd/vlplan/cmd_gen.c -- `vlplan gen`: a manifest of lengths drawn from a published
 * or real distribution (lib/data/gen.h), as text or JSONL, optionally zstd, atomically. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "outfile.h"
#include "vlplan.h"
#include "zio.h"

static const char *const CMD = "gen";
static const char *const USAGE =
    "--dist NAME -n N [--seed N] [--format txt|jsonl] [-o FILE] | --list";

static const cli_opt options[] = {
    {"dist", OPT_DIST, "NAME", "distribution (see --list and vlplan(1) DISTRIBUTIONS)"},
    {"count", 'n', "N", "number of samples"},
    {"seed", OPT_SEED, "N", "seed (default 0)"},
    {"format", OPT_FORMAT, "FMT", "txt (one length per line) or jsonl; default from -o"},
    {"output", 'o', "FILE", "output file ('.zst' compresses); '-' or none: stdout"},
    {"list", 'l', NULL, "list the distributions"},
    {"help", 'h', NULL, "show this help"},
    {NULL, 0, NULL, NULL},
};

typedef struct gen_args {
    const char *dist, *output, *format;
    uint64_t n, seed;
    bool have_n, list;
} gen_args;

static int on_option(int key, const char *arg, void *ud)
{
    gen_args *a = ud;

    switch (key) {
    case OPT_DIST: a->dist = arg; return 0;
    case 'n': a->have_n = true; return cli_parse_u64(CMD, "-n", arg, 1, 1000000000, &a->n);
    case OPT_SEED: return cli_parse_u64(CMD, "--seed", arg, 0, UINT64_MAX, &a->seed);
    case OPT_FORMAT:
        if (strcmp(arg, "txt") && strcmp(arg, "jsonl")) {
            cli_error(CMD, "invalid value '%s' for --format (expected txt or jsonl)", arg);
            return EX_USAGE_;
        }
        a->format = arg;
        return 0;
    case 'o': a->output = arg; return 0;
    case 'l': a->list = true; return 0;
    }
    return EX_USAGE_;
}

static bool has_suffix(const char *s, const char *suf)
{
    size_t n = strlen(s), k = strlen(suf);
    return n >= k && strcmp(s + n - k, suf) == 0;
}

static bool to_stdout(const gen_args *a)
{
    return !a->output || strcmp(a->output, "-") == 0;
}

static bool want_jsonl(const gen_args *a)
{
    if (a->format)
        return strcmp(a->format, "jsonl") == 0;
    return !to_stdout(a) &&
           (has_suffix(a->output, ".jsonl") || has_suffix(a->output, ".jsonl.zst"));
}

/* Lines go out in 1 MiB blocks: 10M samples never sit in memory as text. */
static vl_status emit(vl_zwriter *w, const uint32_t *len, size_t n, bool jsonl, vl_err *err)
{
    enum { BLOCK = 1 << 20 };
    char *buf = malloc(BLOCK + 64);
    size_t used = 0;
    vl_status st = buf ? VL_OK : vl_seterr(err, VL_ENOMEM, "out of memory");

    for (size_t i = 0; st == VL_OK && i < n; i++) {
        int k = jsonl ? snprintf(buf + used, 64, "{\"id\":%zu,\"len\":%u}\n", i, len[i])
                      : snprintf(buf + used, 64, "%u\n", len[i]);
        used += (size_t)k;
        if (used >= BLOCK) {
            st = vl_zwriter_write(w, buf, used, err);
            used = 0;
        }
    }
    if (st == VL_OK && used)
        st = vl_zwriter_write(w, buf, used, err);
    free(buf);
    return st;
}

static int write_out(const gen_args *a, const uint32_t *len)
{
    vl_outfile *o = NULL;
    vl_zwriter *w = NULL;
    vl_err err = {0};
    bool stdout_ = to_stdout(a), zst = !stdout_ && has_suffix(a->output, ".zst");
    vl_status st;
    int rc;

    if (!stdout_ && (rc = cli_output_open(CMD, a->output, &o)) != 0)
        return rc;
    fflush(stdout);
    st = vl_zwriter_fd(&w, stdout_ ? STDOUT_FILENO : vl_outfile_fd(o), zst,
                       stdout_ ? "<stdout>" : a->output, &err);
    if (st == VL_OK)
        st = emit(w, len, a->n, want_jsonl(a), &err);
    if (w) {
        vl_status cst = vl_zwriter_close(w, st == VL_OK ? &err : NULL);
        if (st == VL_OK)
            st = cst;
    }
    rc = st == VL_OK ? 0 : cli_fail(CMD, &err);
    return o ? cli_output_close(CMD, o, rc) : rc;
}

static void list_dists(void)
{
    for (size_t i = 0; i < vl_gen_count(); i++)
        printf("%-20s %s\n", vl_gen_name(i), vl_gen_summary(i));
}

int cmd_gen(int argc, char **argv)
{
    gen_args a;
    vl_err err = {0};
    int first = 0, rc;

    memset(&a, 0, sizeof a);
    rc = cli_parse(argc, argv, CMD, USAGE, options, on_option, &a, &first);
    if (rc)
        return rc < 0 ? 0 : rc;
    if (a.list) {
        list_dists();
        return 0;
    }
    if (first != argc || !a.dist || !a.have_n) {
        cli_error(CMD, first != argc ? "unexpected argument '%s'" : "%s",
                  first != argc ? argv[first] : "--dist NAME and -n N are required");
        fprintf(stderr, "usage: vlplan %s %s\n", CMD, USAGE);
        return EX_USAGE_;
    }
    uint32_t *len = malloc(a.n * sizeof *len);
    if (!len) {
        cli_error(CMD, "out of memory for %llu samples", (unsigned long long)a.n);
        return EX_OSERR_;
    }
    if (vl_gen_lengths(len, a.n, a.dist, a.seed, &err) != VL_OK)
        rc = cli_fail(CMD, &err);
    else
        rc = write_out(&a, len);
    free(len);
    return rc;
}
