/* tests/testutil.c -- see testutil.h. */
#define _GNU_SOURCE
#include "testutil.h"

#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "gen.h"
#include "rng.h"

static const char *vlplan_bin(void)
{
    const char *b = getenv("VLPLAN_BIN");
    return b && *b ? b : "build/vlplan";
}

static int append(char **buf, size_t *len, size_t *cap, const char *data, size_t n)
{
    if (*len + n + 1 > *cap) {
        size_t nc = (*cap ? *cap * 2 : 4096);
        while (nc < *len + n + 1)
            nc *= 2;
        char *nb = realloc(*buf, nc);
        if (!nb)
            return -1;
        *buf = nb;
        *cap = nc;
    }
    memcpy(*buf + *len, data, n);
    *len += n;
    (*buf)[*len] = '\0';
    return 0;
}

/* Drain both pipes until EOF so a chatty child never blocks on a full pipe. */
static int drain(int ofd, int efd, tu_result *r)
{
    size_t ocap = 0, ecap = 0;
    struct pollfd pfd[2] = {{ofd, POLLIN, 0}, {efd, POLLIN, 0}};
    char buf[65536];
    int open_fds = 2;

    if (append(&r->out, &r->outlen, &ocap, "", 0) || append(&r->err, &r->errlen, &ecap, "", 0))
        return -1;
    while (open_fds > 0) {
        if (poll(pfd, 2, -1) < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        for (int i = 0; i < 2; i++) {
            if (pfd[i].fd < 0 || !(pfd[i].revents & (POLLIN | POLLHUP | POLLERR)))
                continue;
            ssize_t n = read(pfd[i].fd, buf, sizeof buf);
            if (n > 0) {
                int rc = i == 0 ? append(&r->out, &r->outlen, &ocap, buf, (size_t)n)
                                : append(&r->err, &r->errlen, &ecap, buf, (size_t)n);
                if (rc)
                    return -1;
            } else if (n == 0 || errno != EINTR) {
                close(pfd[i].fd);
                pfd[i].fd = -1;
                open_fds--;
            }
        }
    }
    return 0;
}

static void exec_child(int in_fd, int out_fd, int err_fd, const char *const *args)
{
    const char *wrap = getenv("VLPLAN_TEST_WRAPPER");
    const char *argv[256];
    int k = 0;
    char *wcopy = NULL;

    if (wrap && *wrap) {
        wcopy = strdup(wrap);
        for (char *t = strtok(wcopy, " "); t && k < 64; t = strtok(NULL, " "))
            argv[k++] = t;
    }
    argv[k++] = vlplan_bin();
    for (int i = 0; args[i] && k < 255; i++)
        argv[k++] = args[i];
    argv[k] = NULL;
    dup2(in_fd, 0);
    dup2(out_fd, 1);
    dup2(err_fd, 2);
    execvp(argv[0], (char *const *)argv);
    _exit(127);
}

/* Run the child with stdin from in_fd, stdout to out_fd (-1: a pipe, captured) and
 * stderr to err_fd (-1: a pipe, captured); err_src, when >= 0, is read as stderr
 * instead (a pty master).  Closes in_fd, out_fd and err_fd in the parent. */
static int run_child(tu_result *r, int in_fd, int out_fd, int err_fd, int err_src,
                     const char *const *args)
{
    int op[2], ep[2] = {-1, -1}, status;
    pid_t pid;

    if (pipe(op) || (err_fd < 0 && pipe(ep))) {
        close(in_fd);
        return -1;
    }
    pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        close(op[0]);
        if (ep[0] >= 0)
            close(ep[0]);
        if (err_src >= 0)
            close(err_src);
        exec_child(in_fd, out_fd >= 0 ? out_fd : op[1], err_fd >= 0 ? err_fd : ep[1], args);
    }
    close(in_fd);
    close(op[1]);
    if (out_fd >= 0)
        close(out_fd);
    if (err_fd >= 0 && err_fd != in_fd)
        close(err_fd);
    if (ep[1] >= 0)
        close(ep[1]);
    if (drain(op[0], err_src >= 0 ? err_src : ep[0], r))
        return -1;
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR)
            return -1;
    r->status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    return 0;
}

int tu_run(tu_result *r, const char *stdin_path, const char *const *args)
{
    int in_fd;

    memset(r, 0, sizeof *r);
    in_fd = open(stdin_path ? stdin_path : "/dev/null", O_RDONLY);
    if (in_fd < 0)
        return -1;
    return run_child(r, in_fd, -1, -1, -1, args);
}

int tu_run_out(tu_result *r, const char *stdin_path, const char *stdout_path,
               const char *const *args)
{
    int in_fd, out_fd;

    memset(r, 0, sizeof *r);
    in_fd = open(stdin_path ? stdin_path : "/dev/null", O_RDONLY);
    if (in_fd < 0)
        return -1;
    out_fd = open(stdout_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (out_fd < 0) {
        close(in_fd);
        return -1;
    }
    return run_child(r, in_fd, out_fd, -1, -1, args);
}

int tu_run_tty(tu_result *r, const char *const *args)
{
    int m, s;
    const char *name;

    memset(r, 0, sizeof *r);
    if ((m = posix_openpt(O_RDWR | O_NOCTTY)) < 0)
        return -1;
    if (grantpt(m) || unlockpt(m) || !(name = ptsname(m)) ||
        (s = open(name, O_RDWR | O_NOCTTY)) < 0) {
        close(m);
        return -1;
    }
    /* the child holds the terminal; once it exits the master reads EIO: the end */
    return run_child(r, s, -1, s, m, args);
}

void tu_result_free(tu_result *r)
{
    free(r->out);
    free(r->err);
    memset(r, 0, sizeof *r);
}

char *tu_tmpdir(void)
{
    const char *base = getenv("TMPDIR");
    char *p = NULL;

    if (!base || !*base)
        base = "/tmp";
    if (asprintf(&p, "%s/vlplan-test.XXXXXX", base) < 0)
        return NULL;
    if (!mkdtemp(p)) {
        free(p);
        return NULL;
    }
    return p;
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(path);
}

void tu_rmtree(const char *dir)
{
    if (dir)
        nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

char *tu_scratch;

void tu_scratch_init(void)
{
    tu_scratch = tu_tmpdir();
    cr_assert_not_null(tu_scratch, "cannot make a scratch directory");
}

void tu_scratch_fini(void)
{
    tu_rmtree(tu_scratch);
    free(tu_scratch);
    tu_scratch = NULL;
}

char *tu_path(const char *dir, const char *name)
{
    char *p = NULL;
    if (asprintf(&p, "%s/%s", dir, name) < 0)
        return NULL;
    return p;
}

int tu_write_bytes(const char *path, const void *data, size_t n)
{
    FILE *f = fopen(path, "wb");
    if (!f)
        return -1;
    size_t w = fwrite(data, 1, n, f);
    if (fclose(f) != 0 || w != n)
        return -1;
    return 0;
}

int tu_write_file(const char *path, const char *content)
{
    return tu_write_bytes(path, content, strlen(content));
}

char *tu_read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    char *buf = NULL;
    size_t n = 0, cap = 0;
    char tmp[65536];
    size_t got;

    if (!f)
        return NULL;
    while ((got = fread(tmp, 1, sizeof tmp, f)) > 0)
        if (append(&buf, &n, &cap, tmp, got)) {
            free(buf);
            fclose(f);
            return NULL;
        }
    fclose(f);
    if (!buf && append(&buf, &n, &cap, "", 0))
        return NULL;
    if (len)
        *len = n;
    return buf;
}

int tu_count_entries(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    int n = 0;

    if (!d)
        return -1;
    while ((e = readdir(d)) != NULL)
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
            n++;
    closedir(d);
    return n;
}

uint32_t *tu_tail_lengths(size_t n, uint32_t cap, uint64_t seed)
{
    uint32_t *len = malloc(n * sizeof *len);
    vl_rng r;

    cr_assert_not_null(len);
    vl_rng_seed(&r, seed, 1);
    for (size_t i = 0; i < n; i++) {
        double u = vl_rng_unit(&r);
        len[i] = 1 + (uint32_t)(u * u * u * (cap - 1));
    }
    return len;
}

vl_manifest *tu_manifest(const uint32_t *len, size_t n)
{
    vl_manifest *m = NULL;

    cr_assert_eq(vl_manifest_from_lengths(&m, len, n, NULL), VL_OK);
    return m;
}

vl_manifest *tu_gen_manifest(const char *dist, size_t n, uint64_t seed)
{
    uint32_t *len = malloc((n ? n : 1) * sizeof *len);
    vl_manifest *m = NULL;
    vl_err err = {0};

    cr_assert_not_null(len);
    cr_assert_eq(vl_gen_lengths(len, n, dist, seed, &err), VL_OK, "%s", err.msg);
    cr_assert_eq(vl_manifest_from_lengths(&m, len, n, &err), VL_OK, "%s", err.msg);
    free(len);
    return m;
}

void tu_config(vl_config *cfg, const char *file, const char *const *sets)
{
    vl_err err = {0};

    cr_assert_eq(vl_config_init_default(cfg, &err), VL_OK, "%s", err.msg);
    if (file)
        cr_assert_eq(vl_config_load_file(cfg, file, &err), VL_OK, "%s", err.msg);
    for (size_t i = 0; sets && sets[i] != NULL; i++)
        cr_assert_eq(vl_config_set(cfg, sets[i], &err), VL_OK, "%s: %s", sets[i], err.msg);
    cr_assert_eq(vl_config_finalize(cfg, &err), VL_OK, "%s", err.msg);
}
