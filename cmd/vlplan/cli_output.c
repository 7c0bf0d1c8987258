/* cmd/vlplan/cli_output.c -- the files a command writes (cli.h): never over one of its
 * inputs, through a temporary renamed into place, which a fatal signal removes. */
#include "cli.h"

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "outfile.h"

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
            unlink(pending_tmp[i]); /* async-signal-safe */
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
