/* cmd/vlplan/cli.c -- errors, exit codes, the progress line and the end of a command,
 * shared by the subcommands (cli.h).  Option parsing is cli_parse.c, loading the inputs
 * cli_inputs.c, writing the outputs cli_output.c.  The only place besides the commands
 * that writes to stderr. */
#include "cli.h"

#include <errno.h>
#include <stdarg.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

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

double cli_peak_rss_mib(void)
{
    struct rusage ru;

    if (getrusage(RUSAGE_SELF, &ru) != 0)
        return 0;
    return (double)ru.ru_maxrss / 1024.0; /* Linux reports KiB */
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
