/* tests/robust/test_outputs.c -- output files under signals and limits (issue 13, items 2 and
 * 6): temporaries removed on a signal, ignored signals left ignored, the file-size limit
 * an I/O error, permissions kept, read-only files refused, plan and metrics committed
 * together; and the undefined behaviour the fuzzers and clang's UBSan found, each on
 * the command that reached it (the suite runs the sanitizer build of the binary). */
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "testutil.h"

TestSuite(outputs, .init = tu_scratch_init, .fini = tu_scratch_fini);

static const char *bin(void)
{
    const char *b = getenv("VLPLAN_BIN");
    return b && *b ? b : "build/vlplan";
}

/* tu_scratch/name, valid until the next call with the same slot. */
static const char *at(int slot, const char *name)
{
    static char buf[4][512];

    snprintf(buf[slot], sizeof buf[slot], "%s/%s", tu_scratch, name);
    return buf[slot];
}

typedef struct child {
    pid_t pid;
    int in;               /* write end of its standard input */
} child;

/* `vlplan plan -s pack -o tu_scratch/p.jsonl --metrics tu_scratch/m.json -` reading a pipe; with
 * hup_ignored, SIGHUP is ignored as nohup does; fsize > 0 limits file sizes. */
static child start_plan(bool hup_ignored, rlim_t fsize)
{
    int p[2];
    child c;

    cr_assert_eq(pipe(p), 0);
    c.pid = fork();
    cr_assert_geq(c.pid, 0);
    if (c.pid == 0) {
        int null = open("/dev/null", O_WRONLY);
        struct rlimit rl = {fsize, fsize};
        /* set either way: a test run under nohup inherits SIGHUP ignored, and
         * vlplan keeps an ignored SIGHUP ignored (the test would wait for ever) */
        signal(SIGHUP, hup_ignored ? SIG_IGN : SIG_DFL);
        if (fsize > 0)
            setrlimit(RLIMIT_FSIZE, &rl);
        dup2(p[0], 0);
        dup2(null, 1);
        dup2(null, 2);
        close(p[1]);
        execl(bin(), bin(), "plan", "-q", "-s", "pack", "-o", at(0, "p.jsonl"), "--metrics",
              at(1, "m.json"), "-", (char *)NULL);
        _exit(127);
    }
    close(p[0]);
    c.in = p[1];
    return c;
}

static int wait_status(pid_t pid)
{
    int st;

    while (waitpid(pid, &st, 0) < 0)
        cr_assert_eq(errno, EINTR);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* Entries of tu_scratch whose name contains what. */
static int count_named(const char *what)
{
    DIR *d = opendir(tu_scratch);
    struct dirent *e;
    int n = 0;

    cr_assert_not_null(d);
    while ((e = readdir(d)) != NULL)
        n += strstr(e->d_name, what) != NULL;
    closedir(d);
    return n;
}

/* Until both temporaries exist (the handlers are installed before they are made). */
static void wait_for_temporaries(void)
{
    struct timespec ms = {0, 10 * 1000 * 1000};

    for (int i = 0; i < 3000 && count_named(".tmp.") < 2; i++)
        nanosleep(&ms, NULL);
    cr_assert_eq(count_named(".tmp."), 2, "the temporaries never appeared");
}

static void feed_and_close(child *c)
{
    const char *m = "100\n200\n300\n";

    cr_assert_eq(write(c->in, m, strlen(m)), (ssize_t)strlen(m));
    close(c->in);
}

Test(outputs, a_signal_removes_both_temporaries)
{
    child c = start_plan(false, 0);

    wait_for_temporaries();
    kill(c.pid, SIGTERM);
    cr_assert_eq(wait_status(c.pid), 128 + SIGTERM);
    close(c.in);
    cr_assert_eq(tu_count_entries(tu_scratch), 0, "nothing left behind");
}

Test(outputs, an_ignored_sighup_stays_ignored)
{
    child c = start_plan(true, 0);

    wait_for_temporaries();
    kill(c.pid, SIGHUP);
    feed_and_close(&c);
    cr_assert_eq(wait_status(c.pid), 0, "nohup vlplan survives SIGHUP");
    cr_assert_eq(tu_count_entries(tu_scratch), 2, "the plan and the metrics, no temporary");
}

Test(outputs, sighup_not_ignored_ends_the_run_cleanly)
{
    child c = start_plan(false, 0);

    wait_for_temporaries();
    kill(c.pid, SIGHUP);
    cr_assert_eq(wait_status(c.pid), 128 + SIGHUP);
    close(c.in);
    cr_assert_eq(tu_count_entries(tu_scratch), 0);
}

Test(outputs, file_size_limit_is_an_io_error)
{
    child c = start_plan(false, 512);   /* the plan's header alone is larger */

    feed_and_close(&c);
    cr_assert_eq(wait_status(c.pid), 74, "SIGXFSZ must not kill it");
    cr_assert_eq(tu_count_entries(tu_scratch), 0, "temporaries removed");
}

static tu_result plan_pm(void)
{
    const char *args[] = {"plan", "-q", "-s", "pack", "-o", at(0, "p.jsonl"), "--metrics",
                          at(1, "m.json"), "testdata/cli/good.txt", NULL};
    tu_result r;

    cr_assert_eq(tu_run(&r, NULL, args), 0);
    return r;
}

Test(outputs, an_existing_output_keeps_its_permissions)
{
    struct stat sb;
    tu_result r;

    cr_assert_eq(tu_write_file(at(0, "p.jsonl"), "old\n"), 0);
    cr_assert_eq(chmod(at(0, "p.jsonl"), 0604), 0);
    r = plan_pm();
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_assert_eq(stat(at(0, "p.jsonl"), &sb), 0);
    cr_assert_eq(sb.st_mode & 07777, 0604);
    tu_result_free(&r);
}

/* A read-only metrics file: neither output is replaced (together or neither). */
Test(outputs, a_read_only_output_is_refused_and_nothing_replaced)
{
    char *p, *m;
    tu_result r;

    cr_assert_eq(tu_write_file(at(0, "p.jsonl"), "old plan\n"), 0);
    cr_assert_eq(tu_write_file(at(1, "m.json"), "old metrics\n"), 0);
    cr_assert_eq(chmod(at(1, "m.json"), 0444), 0);
    r = plan_pm();
    cr_assert_eq(r.status, 73, "%d %s", r.status, r.err);
    cr_assert(strstr(r.err, "it is read-only") != NULL, "%s", r.err);
    cr_assert_str_eq((p = tu_read_file(at(0, "p.jsonl"), NULL)), "old plan\n");
    cr_assert_str_eq((m = tu_read_file(at(1, "m.json"), NULL)), "old metrics\n");
    cr_assert_eq(tu_count_entries(tu_scratch), 2);
    free(p);
    free(m);
    tu_result_free(&r);
}

/* ---- undefined behaviour found (issue 13, item 2) ---- */

static int run_in_dir(const char *const *args)
{
    tu_result r;
    int st;

    cr_assert_eq(tu_run(&r, NULL, args), 0);
    st = r.status;
    cr_assert_null(strstr(r.err, "runtime error"), "%s", r.err);
    cr_assert_null(strstr(r.err, "Sanitizer"), "%s", r.err);
    tu_result_free(&r);
    return st;
}

/* One sample: the plan model's segment array may be empty (NULL) in places. */
Test(outputs, sorted_plans_one_sample)
{
    const char *m = at(1, "one.txt");
    const char *plan[] = {"plan", "-q", "-s", "sorted", "-o", at(0, "p.jsonl"), m, NULL};
    const char *verify[] = {"verify", "-q", at(0, "p.jsonl"), m, NULL};

    cr_assert_eq(tu_write_file(m, "100\n"), 0);
    cr_assert_eq(run_in_dir(plan), 0);
    cr_assert_eq(run_in_dir(verify), 0);
}

/* HBP with its only sample dropped: groups without packs (NULL + 0, qsort(NULL, 0)). */
Test(outputs, hbp_with_every_sample_dropped)
{
    const char *m = at(1, "long.txt");
    const char *plan[] = {"plan", "-q", "-s", "hbp", "--set", "training.oversize=drop", "-o",
                          at(0, "p.jsonl"), m, NULL};
    const char *verify[] = {"verify", "-q", at(0, "p.jsonl"), m, NULL};

    cr_assert_eq(tu_write_file(m, "9000\n"), 0);
    cr_assert_eq(run_in_dir(plan), 0);
    cr_assert_eq(run_in_dir(verify), 0);
}

/* An iteration record the fast path leaves to jansson, read by two threads: the record
 * type was compared after the record was freed (fuzz/regressions/plan/). */
Test(outputs, parallel_reader_on_a_jansson_iteration)
{
    const char *p = at(0, "p.jsonl");
    const char *m[] = {"metrics", "-j", "2", p, NULL};
    const char *s[] = {"simulate", "-j", "2", p, NULL};

    cr_assert_eq(tu_write_file(p, "{\"type\":\"header\",\"schema\":\"vlplan.plan/1\","
                                  "\"epochs\":1}\n{\"type\":\"iter\",\"it\":0,\"ranks\":"
                                  "[{\"dp\":0,\"mbs\":[{\"seg\":[],\"cu_seqlens\":[0]}]}]}\n"),
                 0);
    cr_assert_lt(run_in_dir(m), 100, "no crash");
    cr_assert_lt(run_in_dir(s), 100, "no crash");
}
