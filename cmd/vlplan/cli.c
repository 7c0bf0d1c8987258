/* cmd/vlplan/cli.c -- option parsing, help, errors and exit codes shared by the
 * subcommands (cli.h).  The only place besides the commands that writes to stderr. */
#include "cli.h"

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "outfile.h"

#define MAX_OPTS 40

/* A progress line is on the terminal (drawn, not yet ended). */
static bool progress_on;

void cli_progress_clear(void)
{
    if (progress_on) {
        fputs("\r\033[K", stderr);
        progress_on = false;
    }
}

void cli_error(const char *cmd, const char *fmt, ...)
{
    va_list ap;

    fflush(stdout);
    cli_progress_clear();
    if (cmd)
        fprintf(stderr, "vlplan %s: error: ", cmd);
    else
        fputs("vlplan: error: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

int cli_exit_for(vl_status st)
{
    switch (st) {
    case VL_OK: return EX_OK_;
    case VL_ENOMEM: return EX_OSERR_;
    case VL_EIO: return EX_IOERR_;
    case VL_EDATA: return EX_DATAERR_;
    case VL_ENOINPUT: return EX_NOINPUT_;
    case VL_ECONFIG: return EX_CONFIG_;
    case VL_ECANTCREAT: return EX_CANTCREAT_;
    case VL_EUSAGE: return EX_USAGE_;
    case VL_EVERIFY: return 1;
    case VL_EINFEASIBLE: return EX_DATAERR_;
    case VL_EINTERNAL: return EX_SOFTWARE_;
    }
    return EX_SOFTWARE_;
}

int cli_fail(const char *cmd, const vl_err *err)
{
    const char *msg = err->msg[0] ? err->msg : vl_status_name(err->code);

    if (err->code == VL_EINTERNAL) {
        fflush(stdout);
        cli_progress_clear();
        fprintf(stderr, "vlplan%s%s: internal error: %s (please report)\n", cmd ? " " : "",
                cmd ? cmd : "", msg);
    } else {
        cli_error(cmd, "%s", msg);
    }
    return cli_exit_for(err->code);
}

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
        lo[n] = (struct option){t->name, t->arg ? required_argument : no_argument, NULL, t->key};
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
    vl_manifest_opts mo = {.id_col = a->id_col, .len_col = a->len_col,
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

void cli_log_init(cli_log *l)
{
    l->quiet = 0;
    l->verbose = 0;
    l->tty = isatty(STDERR_FILENO) != 0;
}

void cli_progress(const cli_log *l, bool done, const char *fmt, ...)
{
    va_list ap;

    if (!l->tty || l->quiet)
        return;
    fputs("\r\033[K", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    progress_on = !done;
    if (done)
        fputs("\r\033[K", stderr);
    fflush(stderr);
}

bool cli_is_stdout(const char *path)
{
    return !path || strcmp(path, "-") == 0;
}

bool cli_same_file(const char *a, const char *b)
{
    struct stat sa, sb;

    if (!a || !b || strcmp(a, "-") == 0 || strcmp(b, "-") == 0)
        return false;
    if (strcmp(a, b) == 0)
        return true;
    return stat(a, &sa) == 0 && stat(b, &sb) == 0 && sa.st_dev == sb.st_dev &&
           sa.st_ino == sb.st_ino;
}

int cli_check_not_input(const char *cmd, const char *opt, const char *out,
                        const char *const *ins, int nin)
{
    if (cli_is_stdout(out))
        return 0;
    for (int i = 0; i < nin; i++)
        if (cli_same_file(out, ins[i])) {
            cli_error(cmd, "%s '%s' is also an input", opt, out);
            return EX_USAGE_;
        }
    return 0;
}

/* The one piece of process-wide state: the temporaries being written, for the signal
 * handler.  Only cli_output_open/close touch it, and the handler only reads it. */
#define CLI_OUTPUTS_MAX 4
static char pending_tmp[CLI_OUTPUTS_MAX][PATH_MAX];
static volatile sig_atomic_t pending_on[CLI_OUTPUTS_MAX];
static const vl_outfile *pending_of[CLI_OUTPUTS_MAX];

/* The signals that end us with a temporary to remove (SIGPIPE: output to a closed pipe,
 * e.g. `vlplan plan ... | head` with --metrics FILE). */
static const int fatal_sigs[] = {SIGINT, SIGTERM, SIGHUP, SIGPIPE};
#define NFATAL (sizeof fatal_sigs / sizeof fatal_sigs[0])

static void remove_tmp_and_die(int sig)
{
    for (int i = 0; i < CLI_OUTPUTS_MAX; i++)
        if (pending_on[i])
            unlink(pending_tmp[i]);   /* async-signal-safe */
    signal(sig, SIG_DFL);
    raise(sig);
}

void cli_signals_init(void)
{
    struct sigaction sa, old;

    memset(&sa, 0, sizeof sa);
    sa.sa_handler = remove_tmp_and_die;
    sigemptyset(&sa.sa_mask);
    /* A signal ignored on entry stays ignored: `nohup vlplan ... &` must survive the
     * SIGHUP that nohup asked to ignore. */
    for (size_t i = 0; i < NFATAL; i++)
        if (sigaction(fatal_sigs[i], NULL, &old) == 0 && old.sa_handler != SIG_IGN)
            sigaction(fatal_sigs[i], &sa, NULL);
    /* Past the file-size limit (ulimit -f) a write fails with EFBIG instead of killing
     * us, so the temporary is removed and the exit is 74, as for a full disk. */
    signal(SIGXFSZ, SIG_IGN);
}

static void pending_add(const vl_outfile *o)
{
    const char *tmp = vl_outfile_tmp_path(o);

    if (!tmp || strlen(tmp) >= PATH_MAX)
        return;
    for (int i = 0; i < CLI_OUTPUTS_MAX; i++)
        if (!pending_on[i]) {
            memcpy(pending_tmp[i], tmp, strlen(tmp) + 1);
            pending_of[i] = o;
            pending_on[i] = 1;
            return;
        }
}

static void pending_remove(const vl_outfile *o)
{
    for (int i = 0; i < CLI_OUTPUTS_MAX; i++)
        if (pending_on[i] && pending_of[i] == o) {
            pending_on[i] = 0;
            pending_of[i] = NULL;
        }
}

int cli_output_open(const char *cmd, const char *path, vl_outfile **o)
{
    vl_err err = {0};
    sigset_t block, was;
    vl_status st;

    /* the temporary exists from mkstemp on: a fatal signal before pending_add would
     * leave it behind, so it waits until the handler knows the name */
    sigemptyset(&block);
    for (size_t i = 0; i < NFATAL; i++)
        sigaddset(&block, fatal_sigs[i]);
    sigprocmask(SIG_BLOCK, &block, &was);
    st = vl_outfile_open(o, path, &err);
    if (st == VL_OK)
        pending_add(*o);
    sigprocmask(SIG_SETMASK, &was, NULL);
    return st == VL_OK ? 0 : cli_fail(cmd, &err);
}

int cli_output_close(const char *cmd, vl_outfile *o, int rc)
{
    return cli_output_close_all(cmd, &o, 1, rc);
}

static bool any_pending(void)
{
    for (int i = 0; i < CLI_OUTPUTS_MAX; i++)
        if (pending_on[i])
            return true;
    return false;
}

int cli_output_close_all(const char *cmd, vl_outfile **o, int n, int rc)
{
    vl_outfile *live[CLI_OUTPUTS_MAX];
    vl_err err = {0};
    sigset_t block, was;
    int k = 0;

    /* fatal signals wait from here: a temporary must stay known to the handler until it
     * is renamed or removed, and between two renames a signal would leave one output
     * new and another old */
    sigemptyset(&block);
    for (size_t i = 0; i < NFATAL; i++)
        sigaddset(&block, fatal_sigs[i]);
    sigprocmask(SIG_BLOCK, &block, &was);
    for (int i = 0; i < n; i++) {
        pending_remove(o[i]);
        if (o[i] && rc == 0 && k < CLI_OUTPUTS_MAX)
            live[k++] = o[i];
        else
            vl_outfile_abort(o[i]);
    }
    if (rc == 0 && k > 0 && vl_outfile_commit_all(live, (size_t)k, &err) != VL_OK)
        rc = cli_fail(cmd, &err);
    /* Outputs complete and nothing else being written: a signal now would exit 128+N
     * with every output in place, the status saying failure where the files say
     * success.  It stays blocked, and is dropped when the process exits 0. */
    if (rc != 0 || k == 0 || any_pending())
        sigprocmask(SIG_SETMASK, &was, NULL);
    return rc;
}

int cli_write_into(const char *cmd, vl_outfile *o, const char *path, const char *text)
{
    size_t n = strlen(text), off = 0;

    while (off < n) {
        ssize_t w = write(vl_outfile_fd(o), text + off, n - off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0) {
            cli_error(cmd, "cannot write '%s': %s", path, strerror(errno));
            return EX_IOERR_;
        }
        off += (size_t)w;
    }
    return 0;
}

int cli_write_text(const char *cmd, const char *path, const char *text)
{
    vl_outfile *o = NULL;
    int rc;

    if (!path || strcmp(path, "-") == 0) {
        fputs(text, stdout);
        return 0;
    }
    if ((rc = cli_output_open(cmd, path, &o)) != 0)
        return rc;
    return cli_output_close(cmd, o, cli_write_into(cmd, o, path, text));
}

int cli_print_json(FILE *f, const char *cmd, vl_jw *o, int bad)
{
    char *text = NULL;

    if (!bad && o && (text = vl_jw_dump(o)) != NULL)
        fprintf(f, "%s\n", text);
    free(text);
    vl_jw_free(o);
    if (bad || !o || !text) {
        cli_error(cmd, "out of memory");
        return EX_OSERR_;
    }
    return 0;
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

double cli_peak_rss_mib(void)
{
    struct rusage ru;

    if (getrusage(RUSAGE_SELF, &ru) != 0)
        return 0;
    return (double)ru.ru_maxrss / 1024.0;   /* Linux reports KiB */
}

int cli_finish(const char *cmd, int rc)
{
    if (fflush(stdout) != 0 || ferror(stdout)) {
        int e = errno;
        if (e == EPIPE)
            return rc;
        cli_error(cmd, "cannot write standard output: %s", strerror(e));
        return rc ? rc : EX_IOERR_;
    }
    return rc;
}
