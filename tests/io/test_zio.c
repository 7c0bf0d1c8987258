/* tests/io/test_zio.c -- plain and zstd streams: round trips, magic detection whatever
 * the name, concatenated and skippable frames, truncation, corruption, write errors. */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "testutil.h"
#include "zio.h"

TestSuite(zio, .init = tu_scratch_init, .fini = tu_scratch_fini);

/* Write n bytes of data to tu_scratch/name through a writer; returns the path (malloc'd). */
static char *write_via(const char *name, const void *data, size_t n, bool compress, size_t chunk)
{
    char *p = tu_path(tu_scratch, name);
    int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    vl_zwriter *w = NULL;
    vl_err e = {0};
    cr_assert_geq(fd, 0);
    cr_assert_eq(vl_zwriter_fd(&w, fd, compress, name, &e), VL_OK);
    for (size_t off = 0; off < n; off += chunk) {
        size_t k = n - off < chunk ? n - off : chunk;
        cr_assert_eq(vl_zwriter_write(w, (const char *)data + off, k, &e), VL_OK, "%s", e.msg);
    }
    cr_assert_eq(vl_zwriter_close(w, &e), VL_OK, "%s", e.msg);
    cr_assert_eq(close(fd), 0);
    return p;
}

/* Everything the reader yields, in reads of cap bytes (malloc'd); *zstd set. */
static char *read_all(const char *path, size_t cap, size_t *n, bool *zstd)
{
    vl_zreader *z = NULL;
    vl_err e = {0};
    size_t len = 0, got;
    char *out = malloc(1), *buf = malloc(cap);
    cr_assert_eq(vl_zreader_open(&z, path, &e), VL_OK, "%s", e.msg);
    for (;;) {
        cr_assert_eq(vl_zreader_read(z, buf, cap, &got, &e), VL_OK, "%s", e.msg);
        if (got == 0)
            break;
        out = realloc(out, len + got + 1);
        memcpy(out + len, buf, got);
        len += got;
    }
    *zstd = vl_zreader_is_zstd(z);
    vl_zreader_close(z);
    free(buf);
    *n = len;
    return out;
}

/* Reading path ends with code and exactly msg (after the name). */
static void read_fails(const char *path, vl_status code, const char *suffix)
{
    vl_zreader *z = NULL;
    vl_err e = {0};
    char buf[4096], want[512];
    size_t got;
    vl_status st;
    cr_assert_eq(vl_zreader_open(&z, path, &e), VL_OK, "%s", e.msg);
    do
        st = vl_zreader_read(z, buf, sizeof buf, &got, &e);
    while (st == VL_OK && got > 0);
    vl_zreader_close(z);
    snprintf(want, sizeof want, "%s%s", path, suffix);
    cr_assert_eq(st, code, "%s", e.msg);
    cr_assert_str_eq(e.msg, want);
}

static char *sample_text(size_t n)
{
    char *t = malloc(n);
    for (size_t i = 0; i < n; i++)
        t[i] = (char)(i % 97 == 0 ? '\n' : 'a' + (i * 31 + i / 1000) % 26);
    return t;
}

Test(zio, plain_round_trip)
{
    size_t n = 1000000, got;
    bool zstd;
    char *t = sample_text(n), *p = write_via("plain.zst", t, n, false, 333333);
    char *back = read_all(p, 4096, &got, &zstd);
    cr_assert_not(zstd, "a .zst name alone does not make zstd");
    cr_assert_eq(got, n);
    cr_assert_eq(memcmp(back, t, n), 0);
    free(t);
    free(p);
    free(back);
}

Test(zio, zstd_round_trip_with_checksum)
{
    size_t n = 3000000, got, zn;
    bool zstd;
    char *t = sample_text(n), *p = write_via("data.bin", t, n, true, 100000);
    char *raw = tu_read_file(p, &zn);
    cr_assert_lt(zn, n / 4, "compressed");
    cr_assert_eq((unsigned char)raw[4] & 0x04, 0x04, "frame header has the checksum flag");
    char *back = read_all(p, 1000, &got, &zstd);
    cr_assert(zstd);
    cr_assert_eq(got, n);
    cr_assert_eq(memcmp(back, t, n), 0);
    free(t);
    free(p);
    free(raw);
    free(back);
}

Test(zio, small_and_empty_inputs)
{
    size_t got;
    bool zstd;
    char *p = tu_path(tu_scratch, "tiny");
    cr_assert_eq(tu_write_file(p, "ab"), 0);
    char *back = read_all(p, 1, &got, &zstd);
    cr_assert_eq(got, 2);
    cr_assert_eq(memcmp(back, "ab", 2), 0);
    free(back);
    cr_assert_eq(tu_write_file(p, ""), 0);
    back = read_all(p, 16, &got, &zstd);
    cr_assert_eq(got, 0);
    cr_assert_not(zstd);
    free(back);
    free(p);
    char *e = write_via("empty.zst", "", 0, true, 1);
    back = read_all(e, 16, &got, &zstd);
    cr_assert(zstd);
    cr_assert_eq(got, 0, "an empty frame is an empty stream");
    free(back);
    free(e);
}

Test(zio, concatenated_and_skippable_frames)
{
    static const unsigned char skip[] = {0x50, 0x2A, 0x4D, 0x18, 3, 0, 0, 0, 'x', 'y', 'z'};
    char *a = write_via("a", "hello ", 6, true, 6), *b = write_via("b", "world\n", 6, true, 6);
    size_t na, nb, got;
    bool zstd;
    char *da = tu_read_file(a, &na), *db = tu_read_file(b, &nb);
    char *all = malloc(sizeof skip + na + nb), *p = tu_path(tu_scratch, "ab");
    memcpy(all, skip, sizeof skip);
    memcpy(all + sizeof skip, da, na);
    memcpy(all + sizeof skip + na, db, nb);
    cr_assert_eq(tu_write_bytes(p, all, sizeof skip + na + nb), 0);
    char *back = read_all(p, 3, &got, &zstd);
    cr_assert(zstd, "a leading skippable frame is zstd too");
    cr_assert_eq(got, 12);
    cr_assert_eq(memcmp(back, "hello world\n", 12), 0);
    free(a);
    free(b);
    free(da);
    free(db);
    free(all);
    free(p);
    free(back);
}

Test(zio, truncated_frame)
{
    size_t n = 200000, zn;
    char *t = sample_text(n), *p = write_via("t.zst", t, n, true, n);
    char *raw = tu_read_file(p, &zn);
    for (size_t cut = 1; cut < zn - 4; cut += zn / 7 + 1) {
        cr_assert_eq(tu_write_bytes(p, raw, zn - cut), 0);
        read_fails(p, VL_EDATA, ": truncated zstd frame (premature end of input)");
    }
    cr_assert_eq(tu_write_bytes(p, raw, 6), 0);  /* the header alone */
    read_fails(p, VL_EDATA, ": truncated zstd frame (premature end of input)");
    free(t);
    free(p);
    free(raw);
}

Test(zio, corrupt_frame_and_trailing_garbage)
{
    size_t n = 50000, zn;
    char *t = sample_text(n), *p = write_via("c.zst", t, n, true, n);
    char *raw = tu_read_file(p, &zn);
    raw[zn - 1] ^= 0x01;  /* checksum */
    cr_assert_eq(tu_write_bytes(p, raw, zn), 0);
    read_fails(p, VL_EDATA, ": zstd: Restored data doesn't match checksum");
    raw[zn - 1] ^= 0x01;
    raw = realloc(raw, zn + 5);
    memcpy(raw + zn, "junk\n", 5);
    cr_assert_eq(tu_write_bytes(p, raw, zn + 5), 0);
    read_fails(p, VL_EDATA, ": zstd: Unknown frame descriptor");
    free(t);
    free(p);
    free(raw);
}

Test(zio, window_log_max)
{
    static const unsigned char frame[] = {0x28, 0xB5, 0x2F, 0xFD, 0x00, 0x90,
                                          0x11, 0x00, 0x00, '5', '\n'};
    char *p = tu_path(tu_scratch, "w.zst"), buf[16];
    vl_zreader *z = NULL;
    vl_err e = {0};
    size_t got;
    cr_assert_eq(tu_write_bytes(p, frame, sizeof frame), 0);
    read_fails(p, VL_EDATA, ": zstd frame needs a window larger than 128 MiB (window log max "
                            "27; raise it with --zstd-window-log-max, up to 31)");
    cr_assert_eq(vl_zreader_open(&z, p, &e), VL_OK);
    cr_assert_eq(vl_zreader_set_window_log_max(z, 40, &e), VL_EUSAGE);
    cr_assert_eq(vl_zreader_set_window_log_max(z, 28, &e), VL_OK);
    cr_assert_eq(vl_zreader_read(z, buf, sizeof buf, &got, &e), VL_OK, "%s", e.msg);
    cr_assert_eq(got, 2);
    vl_zreader_close(z);
    free(p);
}

Test(zio, open_errors)
{
    vl_zreader *z = NULL;
    vl_err e = {0};
    char *p = tu_path(tu_scratch, "missing"), want[512];
    cr_assert_eq(vl_zreader_open(&z, p, &e), VL_ENOINPUT);
    snprintf(want, sizeof want, "cannot open '%s': No such file or directory", p);
    cr_assert_str_eq(e.msg, want);
    cr_assert_eq(vl_zreader_open(&z, tu_scratch, &e), VL_ENOINPUT);
    snprintf(want, sizeof want, "cannot open '%s': Is a directory", tu_scratch);
    cr_assert_str_eq(e.msg, want);
    cr_assert_null(z);
    free(p);
}

Test(zio, stdin_by_dash)
{
    char *p = tu_path(tu_scratch, "in");
    vl_zreader *z = NULL;
    vl_err e = {0};
    char buf[8];
    size_t got;
    cr_assert_eq(tu_write_file(p, "xyz"), 0);
    int fd = open(p, O_RDONLY);
    cr_assert_eq(dup2(fd, STDIN_FILENO), STDIN_FILENO);
    close(fd);
    cr_assert_eq(vl_zreader_open(&z, "-", &e), VL_OK);
    cr_assert_str_eq(vl_zreader_name(z), "<stdin>");
    cr_assert_eq(vl_zreader_read(z, buf, sizeof buf, &got, &e), VL_OK);
    cr_assert_eq(got, 3);
    vl_zreader_close(z);
    cr_assert_neq(fcntl(STDIN_FILENO, F_GETFD), -1, "stdin is not closed");
    free(p);
}

Test(zio, read_error_is_eio)
{
    char *p = tu_path(tu_scratch, "wo");
    vl_zreader *z = NULL;
    vl_err e = {0};
    cr_assert_eq(tu_write_file(p, ""), 0);
    int fd = open(p, O_WRONLY);  /* read(2) on it fails with EBADF */
    cr_assert_eq(dup2(fd, STDIN_FILENO), STDIN_FILENO);
    close(fd);
    cr_assert_eq(vl_zreader_open(&z, "-", &e), VL_EIO);
    cr_assert_str_eq(e.msg, "read '<stdin>': Bad file descriptor");
    cr_assert_null(z);
    free(p);
}

static void write_fails(bool compress)
{
    int fd = open("/dev/full", O_WRONLY);
    vl_zwriter *w = NULL;
    vl_err e = {0};
    char *t = sample_text(500000);
    cr_assert_geq(fd, 0);
    cr_assert_eq(vl_zwriter_fd(&w, fd, compress, "out.jsonl", &e), VL_OK);
    vl_status st = vl_zwriter_write(w, t, 500000, &e);
    if (st == VL_OK)
        st = vl_zwriter_close(w, &e);
    else
        vl_zwriter_close(w, NULL);
    cr_assert_eq(st, VL_EIO);
    cr_assert_str_eq(e.msg, "cannot write 'out.jsonl': No space left on device");
    close(fd);
    free(t);
}

Test(zio, write_errors_reported)
{
    write_fails(false);
    write_fails(true);
}

Test(zio, late_write_error_at_close)
{
    int fd = open("/dev/full", O_WRONLY);
    vl_zwriter *w = NULL;
    vl_err e = {0};
    cr_assert_eq(vl_zwriter_fd(&w, fd, false, "small", &e), VL_OK);
    cr_assert_eq(vl_zwriter_write(w, "abc", 3, &e), VL_OK, "buffered");
    cr_assert_eq(vl_zwriter_close(w, &e), VL_EIO);
    cr_assert_str_eq(e.msg, "cannot write 'small': No space left on device");
    close(fd);
}

Test(zio, write_to_bad_descriptor)
{
    vl_zwriter *w = NULL;
    vl_err e = {0};
    cr_assert_eq(vl_zwriter_fd(&w, -1, true, "bad", &e), VL_OK);
    cr_assert_eq(vl_zwriter_write(w, "abc", 3, &e), VL_OK);
    cr_assert_eq(vl_zwriter_close(w, &e), VL_EIO);
    cr_assert_str_eq(e.msg, "cannot write 'bad': Bad file descriptor");
}

/* A pipe: writes larger than its buffer come back partial, and must be completed. */
Test(zio, partial_writes_to_pipe)
{
    int fds[2];
    size_t n = 4u << 20, got = 0;
    char *t = sample_text(n), *back = malloc(n);
    cr_assert_eq(pipe(fds), 0);
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        vl_zwriter *w = NULL;
        close(fds[0]);
        if (vl_zwriter_fd(&w, fds[1], false, "pipe", NULL) != VL_OK ||
            vl_zwriter_write(w, t, n, NULL) != VL_OK || vl_zwriter_close(w, NULL) != VL_OK)
            _exit(1);
        _exit(0);
    }
    close(fds[1]);
    for (ssize_t r; (r = read(fds[0], back + got, n - got)) > 0;)
        got += (size_t)r;
    close(fds[0]);
    int status;
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    cr_assert_eq(got, n);
    cr_assert_eq(memcmp(back, t, n), 0);
    free(t);
    free(back);
}
