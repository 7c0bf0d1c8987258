/* bench/bench_read.c -- plan files written and read back (issue "read as fast as we
 * write"): for each strategy, its plan of N lengths from a `vlplan gen` distribution is
 * built in memory (not timed), written to a file, then read back with the fast path
 * (what verify, metrics and simulate use) and with every line through jansson, each
 * with and without the manifest.  Every read is in its own child, so its peak RSS is its
 * own (the parent's plan and manifest are not counted; the manifest is rebuilt in the
 * child when the read uses one).
 *
 *   bench_read [-n N] [-d DIST] [-s S1,S2,...] [--set KEY=VALUE]... [-o DIR]
 *
 * Lines:
 *   write STRATEGY N=...: X s, Y MB, Z MB/s
 *   read  STRATEGY fast|jansson manifest|none: X s, Z MB/s, W x write time, peak RSS R MB */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench_util.h"
#include "planio_impl.h"
#include "run.h"

typedef struct setup {
    size_t n;
    const char *dist;
    const vl_config *cfg;
} setup;

/* Child: read path (fast or not, with the manifest or not), print one line. */
static int read_child(const setup *su, const char *name, const char *path, bool fast,
                      bool with_m, double write_s, double mb)
{
    vl_manifest *m = NULL;
    vl_plan p;
    vl_err err = {0};
    struct rusage ru;

    if (with_m && bench_manifest(&m, su->dist, su->n, 1, &err) != VL_OK) {
        fprintf(stderr, "bench_read: %s\n", err.msg);
        return 1;
    }
    double t0 = bench_wall_s();
    if (vl__plan_read_with(&p, NULL, path, m, fast, 1, NULL, NULL, &err) != VL_OK) {
        fprintf(stderr, "bench_read: %s\n", err.msg);
        return 1;
    }
    double secs = bench_wall_s() - t0;
    getrusage(RUSAGE_SELF, &ru);
    printf("read  %-10s %-7s %-8s: %7.3f s, %7.1f MB/s, %5.2f x write, peak RSS %.0f MB\n",
           name, fast ? "fast" : "jansson", with_m ? "manifest" : "none", secs, mb / secs,
           secs / write_s, ru.ru_maxrss / 1024.0);
    vl_plan_free(&p);
    vl_manifest_free(m);
    return 0;
}

static int in_child(const setup *su, const char *name, const char *path, bool fast,
                    bool with_m, double write_s, double mb)
{
    int status;
    pid_t pid;

    fflush(stdout);
    if ((pid = fork()) == 0) {
        int rc = read_child(su, name, path, fast, with_m, write_s, mb);
        fflush(stdout);
        _exit(rc);
    }
    if (pid < 0 || waitpid(pid, &status, 0) < 0)
        return 1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}

static int bench(const setup *su, vl_manifest *m, const char *name, const char *dir)
{
    const vl_strategy *s = vl_strategy_find(name);
    vl_run_opts ro = {.seed = su->cfg->training.seed, .allow_oom = true};
    vl_plan p;
    vl_err err = {0};
    char path[512];
    struct stat sb;
    int rc = 0;

    if (!s || vl_run_plan(&p, s, m, su->cfg, &ro, NULL, &err) != VL_OK) {
        fprintf(stderr, "bench_read: %s: %s\n", name, s ? err.msg : "unknown strategy");
        return 1;
    }
    snprintf(path, sizeof path, "%s/bench_read.%s.jsonl", dir, name);
    double t0 = bench_wall_s();
    if (vl_plan_write_file(&p, path, &err) != VL_OK) {
        fprintf(stderr, "bench_read: %s\n", err.msg);
        vl_plan_free(&p);
        return 1;
    }
    double w = bench_wall_s() - t0, mb = stat(path, &sb) == 0 ? (double)sb.st_size / 1e6 : 0;
    vl_plan_free(&p);
    printf("write %-10s N=%zu: %7.3f s, %.1f MB, %.1f MB/s\n", name, su->n, w, mb, mb / w);
    for (int fast = 1; fast >= 0; fast--)
        for (int with_m = 1; with_m >= 0; with_m--)
            rc |= in_child(su, name, path, fast, with_m, w, mb);
    unlink(path);
    return rc;
}

int main(int argc, char **argv)
{
    const char *list = "random,sorted,pack,hbp,chunkflow", *sets[32], *dir = "/tmp";
    setup su = {1000000, "lmsys", NULL};
    int nsets = 0, rc = 0;
    vl_config cfg;
    vl_manifest *m = NULL;
    vl_err err = {0};

    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-n") && i + 1 < argc)
            su.n = (size_t)strtod(argv[++i], NULL);
        else if (!strcmp(argv[i], "-d") && i + 1 < argc)
            su.dist = argv[++i];
        else if (!strcmp(argv[i], "-s") && i + 1 < argc)
            list = argv[++i];
        else if (!strcmp(argv[i], "-o") && i + 1 < argc)
            dir = argv[++i];
        else if (!strcmp(argv[i], "--set") && i + 1 < argc && nsets < 32)
            sets[nsets++] = argv[++i];
        else {
            fprintf(stderr, "usage: bench_read [-n N] [-d DIST] [-s S1,S2] [--set K=V]... "
                            "[-o DIR]\n");
            return 2;
        }
    }
    if (vl_config_init_default(&cfg, &err) != VL_OK ||
        vl_config_set(&cfg, "training.oversize=truncate", &err) != VL_OK)
        goto fail;
    for (int i = 0; i < nsets; i++)
        if (vl_config_set(&cfg, sets[i], &err) != VL_OK)
            goto fail;
    su.cfg = &cfg;
    if (vl_config_finalize(&cfg, &err) != VL_OK ||
        bench_manifest(&m, su.dist, su.n, 1, &err) != VL_OK)
        goto fail;
    char *copy = strdup(list);
    for (char *t = strtok(copy, ","); t; t = strtok(NULL, ","))
        rc |= bench(&su, m, t, dir);
    free(copy);
    vl_manifest_free(m);
    vl_config_free(&cfg);
    return rc;
fail:
    fprintf(stderr, "bench_read: %s\n", err.msg);
    return 1;
}
