/* bench/bench_plan.c -- end-to-end planning speed and memory of every registered
 * strategy through vl_run_plan (oversize policy, strategy, header, self-verify), on N
 * lengths from a `vlplan gen` distribution.  Each strategy runs in its own child so
 * that its peak RSS (manifest + plan + scratch) is its own.
 *
 *   bench_plan [-n N] [-d DIST] [-s S1,S2,...] [--set KEY=VALUE]...
 *
 * One line per strategy:
 *   plan STRATEGY N=... dist=...: X s, Y samples/s, iterations K, peak RSS Z MB (B bytes/sample) */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench_util.h"
#include "gen.h"
#include "run.h"

static int run_one(const vl_strategy *s, vl_manifest *m, const vl_config *cfg,
                   const char *dist, const char *label)
{
    vl_run_opts ro = {.seed = cfg->training.seed, .allow_oom = true};
    vl_plan p;
    vl_err err = {0};
    struct rusage ru;
    double t0 = bench_wall_s();

    if (vl_run_plan(&p, s, m, cfg, &ro, NULL, &err) != VL_OK) {
        fprintf(stderr, "plan %s: %s\n", s->name, err.msg);
        return 1;
    }
    double secs = bench_wall_s() - t0;
    getrusage(RUSAGE_SELF, &ru);
    printf("plan %s%s N=%zu dist=%s: %.3f s, %.0f samples/s, iterations %zu, peak RSS %.1f MB "
           "(%.1f bytes/sample)\n",
           s->name, label, m->n, dist, secs, (double)m->n / secs, p.niters,
           ru.ru_maxrss / 1024.0, ru.ru_maxrss * 1024.0 / (double)m->n);
    vl_plan_free(&p);
    return 0;
}

static int bench(const char *name, vl_manifest *m, const vl_config *cfg, const char *dist,
                 const char *label)
{
    const vl_strategy *s = vl_strategy_find(name);
    int status;
    pid_t pid;

    if (!s) {
        fprintf(stderr, "unknown strategy %s\n", name);
        return 1;
    }
    fflush(stdout);
    if ((pid = fork()) == 0) {
        int rc = run_one(s, m, cfg, dist, label);
        fflush(stdout); /* _exit does not flush stdio */
        _exit(rc);
    }
    if (pid < 0 || waitpid(pid, &status, 0) < 0)
        return 1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}

int main(int argc, char **argv)
{
    size_t n = 1000000;
    const char *dist = "lmsys", *list = NULL, *sets[32];
    int nsets = 0, rc = 0;
    vl_config cfg;
    vl_manifest *m = NULL;
    vl_err err = {0};

    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-n") && i + 1 < argc)
            n = (size_t)strtod(argv[++i], NULL);
        else if (!strcmp(argv[i], "-d") && i + 1 < argc)
            dist = argv[++i];
        else if (!strcmp(argv[i], "-s") && i + 1 < argc)
            list = argv[++i];
        else if (!strcmp(argv[i], "--set") && i + 1 < argc && nsets < 32)
            sets[nsets++] = argv[++i];
        else {
            fprintf(stderr, "usage: bench_plan [-n N] [-d DIST] [-s S1,S2] [--set K=V]...\n");
            return 2;
        }
    }
    uint32_t *len = malloc(n * sizeof *len);
    if (!len || vl_config_init_default(&cfg, &err) != VL_OK ||
        vl_config_set(&cfg, "training.oversize=truncate", &err) != VL_OK)
        goto fail;
    for (int i = 0; i < nsets; i++)
        if (vl_config_set(&cfg, sets[i], &err) != VL_OK)
            goto fail;
    if (vl_config_finalize(&cfg, &err) != VL_OK ||
        vl_gen_lengths(len, n, dist, 1, &err) != VL_OK ||
        vl_manifest_from_lengths(&m, len, n, &err) != VL_OK)
        goto fail;
    free(len);
    /* the --set options, shown after the strategy name */
    char label[256] = "";
    for (int i = 0; i < nsets; i++) {
        size_t k = strlen(label);
        snprintf(label + k, sizeof label - k, " [%s]", sets[i]);
    }
    if (list) {
        char *copy = strdup(list);
        for (char *t = strtok(copy, ","); t; t = strtok(NULL, ","))
            rc |= bench(t, m, &cfg, dist, label);
        free(copy);
    } else {
        for (size_t i = 0; i < vl_strategy_count(); i++)
            rc |= bench(vl_strategy_at(i)->name, m, &cfg, dist, label);
    }
    vl_manifest_free(m);
    vl_config_free(&cfg);
    return rc;
fail:
    fprintf(stderr, "bench_plan: %s\n", err.msg);
    return 1;
}
