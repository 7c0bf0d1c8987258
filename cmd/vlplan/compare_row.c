/* cmd/vlplan/compare_row.c -- one `compare` row planned in a child process (so that its
 * peak memory is its own) and its result sent back through a pipe: the figures, and for
 * the HTML report the time of every iteration and the Gantt chart of the slowest. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "compare_work.h"
#include "vlplan.h"

#define CMD "compare"

void compare_details_free(compare_detail *d, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(d[i].iter_ms);
        free(d[i].gantt);
        memset(&d[i], 0, sizeof d[i]);
    }
}

static int write_all(int fd, const void *p, size_t n)
{
    const char *c = p;

    while (n > 0) {
        ssize_t w = write(fd, c, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        c += w;
        n -= (size_t)w;
    }
    return 0;
}

static int read_all(int fd, void *p, size_t n)
{
    char *c = p;

    while (n > 0) {
        ssize_t r = read(fd, c, n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return -1;
        c += r;
        n -= (size_t)r;
    }
    return 0;
}

/* The strategy refused the configuration or the data: the row says so, the others are
 * compared. */
static int send_refusal(const char *label, const char *strategy, const vl_err *err, int fd)
{
    eval_result r;

    memset(&r, 0, sizeof r);
    snprintf(r.label, sizeof r.label, "%s", label);
    snprintf(r.ev.strategy, sizeof r.ev.strategy, "%s", strategy);
    snprintf(r.why, sizeof r.why, "%s", err->msg);
    r.refused = true;
    r.speedup = NAN;
    return write_all(fd, &r, sizeof r) ? EX_IOERR_ : 0;
}

/* The figures, and with detail every iteration's time and the slowest one's chart. */
static int evaluate(const vl_plan *p, const vl_cost *cost, bool detail, eval_result *r,
                    compare_detail *d)
{
    vl_sim_opts so = VL_SIM_OPTS_INIT;
    vl_sim_iter_result it;
    vl_eval_acc a;
    vl_err err = {0};
    vl_status st = vl_eval_acc_init(&a, cost, &so, &err);

    if (st == VL_OK && detail &&
        !(d->iter_ms = malloc((p->niters ? p->niters : 1) * sizeof *d->iter_ms)))
        st = vl_seterr(&err, VL_ENOMEM, "out of memory");
    for (size_t i = 0; st == VL_OK && i < p->niters; i++) {
        st = vl_eval_acc_iter(&a, p, i, &it, &err);
        if (st == VL_OK && detail) {
            d->iter_ms[i] = it.iter_time_ms;
            if (i == 0 || it.iter_time_ms > d->iter_ms[d->slowest])
                d->slowest = i;
        }
    }
    d->niters = detail ? p->niters : 0;
    if (st == VL_OK)
        st = eval_acc_finish(&a, p, r, &err);
    if (st == VL_OK && detail && p->niters > 0)
        st = vl_sim_svg(p, d->slowest, cost, &so, &d->gantt, &err);
    vl_eval_acc_free(&a);
    return st == VL_OK ? 0 : cli_fail(CMD, &err);
}

static int send_result(const eval_result *r, const compare_detail *d, bool detail, int fd)
{
    uint64_t n = d->niters, slowest = d->slowest, len = d->gantt ? strlen(d->gantt) : 0;

    if (write_all(fd, r, sizeof *r))
        return EX_IOERR_;
    if (!detail)
        return 0;
    if (write_all(fd, &n, sizeof n) || write_all(fd, &slowest, sizeof slowest) ||
        write_all(fd, d->iter_ms, (size_t)n * sizeof *d->iter_ms) ||
        write_all(fd, &len, sizeof len) || write_all(fd, d->gantt ? d->gantt : "", len))
        return EX_IOERR_;
    return 0;
}

static int child_plan(const char *label, const char *strategy, vl_manifest *m,
                      const vl_config *cfg, bool detail, int fd)
{
    const vl_strategy *s = vl_strategy_find(strategy);
    vl_run_opts ro = {.seed = cfg->training.seed, .allow_oom = true};
    compare_detail d = {0};
    vl_err err = {0};
    vl_plan p;
    vl_cost cost;
    eval_result r;
    double t0 = cli_now_s();
    int rc;

    if (vl_run_plan(&p, s, m, cfg, &ro, NULL, &err) != VL_OK) {
        if (err.code == VL_EINTERNAL || err.code == VL_ENOMEM || err.code == VL_EIO)
            return cli_fail(CMD, &err);
        return send_refusal(label, strategy, &err, fd);
    }
    double secs = cli_now_s() - t0;
    if (vl_cost_init(&cost, cfg, &err) != VL_OK)
        rc = cli_fail(CMD, &err);
    else
        rc = evaluate(&p, &cost, detail, &r, &d);
    vl_plan_free(&p);
    if (rc == 0) {
        snprintf(r.label, sizeof r.label, "%s", label);
        r.has_timing = true;
        r.plan_time_s = secs;
        /* a forked child's high-water mark starts at what it shares with the parent (the
         * manifest), so this is the memory planning with this strategy needs */
        r.peak_rss_mib = cli_peak_rss_mib();
        rc = send_result(&r, &d, detail && !r.refused, fd);
    }
    compare_details_free(&d, 1);
    return rc;
}

static int receive(int fd, eval_result *r, bool detail, compare_detail *d)
{
    uint64_t n, slowest, len;

    if (read_all(fd, r, sizeof *r))
        return -1;
    if (!detail || r->refused)
        return 0;
    if (read_all(fd, &n, sizeof n) || read_all(fd, &slowest, sizeof slowest) ||
        n > SIZE_MAX / sizeof *d->iter_ms)
        return -1;
    if (!(d->iter_ms = malloc((n ? n : 1) * sizeof *d->iter_ms)) ||
        read_all(fd, d->iter_ms, (size_t)n * sizeof *d->iter_ms) ||
        read_all(fd, &len, sizeof len))
        return -1;
    d->niters = (size_t)n;
    d->slowest = (size_t)slowest;
    if (len == 0)
        return 0;
    if (len > SIZE_MAX - 1 || !(d->gantt = malloc((size_t)len + 1)) ||
        read_all(fd, d->gantt, (size_t)len))
        return -1;
    d->gantt[len] = '\0';
    return 0;
}

static int collect(pid_t pid, int fd, bool detail, eval_result *r, compare_detail *d)
{
    int status, got = receive(fd, r, detail, d);

    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR)
            return EX_OSERR_;
    if (!WIFEXITED(status))
        return EX_SOFTWARE_;
    if (WEXITSTATUS(status) != 0)
        return WEXITSTATUS(status);
    return got == 0 ? 0 : EX_SOFTWARE_;
}

int compare_plan_row(const char *label, const char *strategy, vl_manifest *m,
                     const vl_config *cfg, bool detail, eval_result *r, compare_detail *d)
{
    int fds[2], rc;
    pid_t pid;

    if (pipe(fds) != 0) {
        cli_error(CMD, "pipe: %s", strerror(errno));
        return EX_OSERR_;
    }
    fflush(NULL);
    if ((pid = fork()) < 0) {
        cli_error(CMD, "fork: %s", strerror(errno));
        close(fds[0]);
        close(fds[1]);
        return EX_OSERR_;
    }
    if (pid == 0) {
        close(fds[0]);
        rc = child_plan(label, strategy, m, cfg, detail, fds[1]);
        close(fds[1]);
        fflush(NULL);
        _exit(rc);
    }
    close(fds[1]);
    rc = collect(pid, fds[0], detail, r, d);
    close(fds[0]);
    return rc;
}
