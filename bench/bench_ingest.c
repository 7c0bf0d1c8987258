/* bench/bench_ingest.c -- manifest ingest speed and peak memory.  Each input is read
 * by vl_manifest_read in a forked child, so every figure is that read's own peak RSS
 * (cpu = user + system time of the child, a check on wall time on a busy machine).
 *
 *   bench_ingest --gen DIR      write the standard inputs into DIR, then time them
 *   bench_ingest FILE...        time existing manifests
 */
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench_util.h"
#include "manifest.h"
#include "zio.h"

enum { GEN_TEXT, GEN_IDTEXT, GEN_CSV, GEN_JSONL };

typedef struct gen_spec {
    const char *name, *label;
    int kind;
    size_t n;
    bool zstd;
} gen_spec;

static const gen_spec standard[] = {
    {"len_1m.txt", "text", GEN_TEXT, 1000000, false},
    {"len_10m.txt", "text", GEN_TEXT, 10000000, false},
    {"len_10m.txt.zst", "text.zst", GEN_TEXT, 10000000, true},
    {"id_len_10m.txt", "text-string-ids", GEN_IDTEXT, 10000000, false},
    {"rows_10m.csv", "csv", GEN_CSV, 10000000, false},
    {"rows_1m.jsonl", "jsonl", GEN_JSONL, 1000000, false},
    {"rows_1m.jsonl.zst", "jsonl.zst", GEN_JSONL, 1000000, true},
    {"rows_10m.jsonl", "jsonl", GEN_JSONL, 10000000, false},
};

/* Skewed lengths like real corpora: mostly short, a long tail to 64k. */
static uint32_t next_len(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    return 1 + (uint32_t)((z & 0xffff) >> (z >> 60));
}

static int record(char *buf, size_t cap, int kind, size_t i, uint32_t len)
{
    switch (kind) {
    case GEN_TEXT: return snprintf(buf, cap, "%u\n", len);
    case GEN_IDTEXT: return snprintf(buf, cap, "doc%zu\t%u\n", i, len);
    case GEN_CSV: return snprintf(buf, cap, "%zu,%u,web\n", i, len);
    default: return snprintf(buf, cap, "{\"id\":%zu,\"len\":%u}\n", i, len);
    }
}

static int generate(const char *dir, const gen_spec *g, char *path, size_t cap)
{
    vl_zwriter *w = NULL;
    vl_err err = {0};
    uint64_t seed = 42;
    char line[64];
    int fd, rc = 0;

    snprintf(path, cap, "%s/%s", dir, g->name);
    if (access(path, R_OK) == 0)
        return 0; /* already there from an earlier run */
    if ((fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644)) < 0) {
        perror(path);
        return -1;
    }
    if (vl_zwriter_fd(&w, fd, g->zstd, path, &err) != VL_OK)
        rc = -1;
    if (rc == 0 && g->kind == GEN_CSV)
        rc = vl_zwriter_write(w, "id,length,source\n", 17, &err) == VL_OK ? 0 : -1;
    for (size_t i = 0; rc == 0 && i < g->n; i++) {
        int n = record(line, sizeof line, g->kind, i, next_len(&seed));
        rc = vl_zwriter_write(w, line, (size_t)n, &err) == VL_OK ? 0 : -1;
    }
    if (w != NULL && vl_zwriter_close(w, &err) != VL_OK)
        rc = -1;
    if (close(fd) != 0 || rc != 0) {
        fprintf(stderr, "bench_ingest: %s\n", err.msg[0] ? err.msg : path);
        return -1;
    }
    return 0;
}

/* A given file is labelled by its suffix ("jsonl.zst"). */
static const char *suffix(const char *path)
{
    const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
    const char *dot = strchr(base, '.');
    return dot ? dot + 1 : base;
}

static void child(const char *path, const char *label)
{
    vl_manifest *m = NULL;
    vl_err err = {0};
    struct rusage ru;
    double t0 = bench_wall_s(), dt;

    if (vl_manifest_read(&m, &path, 1, NULL, &err) != VL_OK) {
        fprintf(stderr, "bench_ingest: %s\n", err.msg);
        _exit(1);
    }
    dt = bench_wall_s() - t0;
    getrusage(RUSAGE_SELF, &ru);
    printf("ingest %s %zu samples: %.3f s, %.0f samples/s, peak RSS %.1f MB "
           "(%.1f bytes/sample), cpu %.3f s\n",
           label, m->n, dt, (double)m->n / dt, (double)ru.ru_maxrss / 1024.0,
           (double)ru.ru_maxrss * 1024.0 / (double)m->n,
           (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
               (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1e-6);
    fflush(stdout);
    vl_manifest_free(m);
    _exit(0);
}

static int measure(const char *path, const char *label)
{
    int status;
    pid_t pid = fork();

    if (pid < 0) {
        perror("fork");
        return -1;
    }
    if (pid == 0)
        child(path, label);
    if (waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
        return -1;
    return 0;
}

int main(int argc, char **argv)
{
    char path[4096];
    int rc = 0;

    if (argc == 3 && strcmp(argv[1], "--gen") == 0) {
        for (size_t i = 0; i < sizeof standard / sizeof standard[0]; i++)
            if (generate(argv[2], &standard[i], path, sizeof path) != 0 ||
                measure(path, standard[i].label) != 0)
                rc = 1;
        return rc;
    }
    if (argc < 2 || (argv[1][0] == '-' && argv[1][1] == '-')) {
        fprintf(stderr, "usage: bench_ingest --gen DIR | bench_ingest FILE...\n");
        return 64;
    }
    for (int i = 1; i < argc; i++)
        if (measure(argv[i], suffix(argv[i])) != 0)
            rc = 1;
    return rc;
}
