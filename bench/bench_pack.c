/* bench/bench_pack.c -- packer throughput and memory.  Generates N seeded lengths
 * (lognormal, clipped to the capacity: a long-tailed SFT-like mix) or reads real ones,
 * then times vl_pack for each algorithm in its own child process, so that each line's
 * peak RSS is that run's alone (lengths + items + packer scratch + result).
 *
 *   bench_pack [-n N] [-c CAP] [-a ALGO[,ALGO...]] [-s SEED] [-r RUNS]
 *              [--mu M --sigma S] [--real FILE [--repeat K]]
 *
 * FILE is a "length,count" histogram (Graphcore's published SQuAD and Wikipedia ones)
 * expanded into samples, or a CSV whose numeric columns are summed per row (context + generated
 * tokens in the Azure and Mooncake traces); rows longer than CAP are clipped to CAP.
 * Each algorithm runs RUNS times (default 1) and the fastest run is reported: on a
 * shared machine the minimum is the least disturbed figure.  One line per algorithm:
 *   pack ALGO N=... cap=... data=...: X s, Y samples/s, bins B, fill F%, peak RSS Z MB */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench_util.h"
#include "pack.h"
#include "rng.h"

typedef struct args {
    size_t n;
    uint32_t cap;
    const char *algos;
    uint64_t seed;
    double mu, sigma;
    const char *real;
    size_t repeat;
    int runs;
} args;

static uint32_t *lognormal(size_t n, uint32_t cap, double mu, double sigma, uint64_t seed)
{
    uint32_t *len = malloc(n * sizeof *len);
    vl_rng r;

    if (len == NULL)
        return NULL;
    vl_rng_seed(&r, seed, 0);
    for (size_t i = 0; i < n; i++) {
        /* Box-Muller; 1 - u keeps the logarithm finite. */
        double u = 1.0 - vl_rng_unit(&r), v = vl_rng_unit(&r);
        double z = sqrt(-2.0 * log(u)) * cos(6.283185307179586 * v);
        double l = exp(mu + sigma * z);
        len[i] = l < 1 ? 1 : l > cap ? cap : (uint32_t)l;
    }
    return len;
}

/* Append v to *a (growing), clipped to [1, cap]. */
static int push(uint32_t **a, size_t *n, size_t *capa, unsigned long v, uint32_t cap)
{
    if (*n == *capa) {
        size_t nc = *capa ? 2 * *capa : 1 << 16;
        uint32_t *t = realloc(*a, nc * sizeof *t);
        if (t == NULL)
            return -1;
        *a = t;
        *capa = nc;
    }
    (*a)[(*n)++] = v < 1 ? 1 : v > cap ? cap : (uint32_t)v;
    return 0;
}

static uint32_t *read_real(const char *path, uint32_t cap, size_t *n)
{
    FILE *f = fopen(path, "r");
    char line[512];
    uint32_t *a = NULL;
    size_t capa = 0;
    int hist = 0;

    *n = 0;
    if (f == NULL || fgets(line, sizeof line, f) == NULL) {
        fprintf(stderr, "bench_pack: cannot read %s\n", path);
        if (f)
            fclose(f);
        return NULL;
    }
    hist = strncmp(line, "length,count", 12) == 0;
    while (fgets(line, sizeof line, f) != NULL) {
        unsigned long l, c;
        int any;
        if (hist) {
            if (sscanf(line, "%lu,%lu", &l, &c) != 2)
                continue;
            for (unsigned long k = 0; k < c; k++)
                if (push(&a, n, &capa, l, cap) != 0)
                    goto oom;
        } else {
            l = bench_csv_row_sum(line, &any);
            if (any && push(&a, n, &capa, l, cap) != 0)
                goto oom;
        }
    }
    fclose(f);
    return a;
oom:
    fclose(f);
    free(a);
    return NULL;
}

/* Timed packings; the caller is a fresh child, so ru_maxrss is this run's peak. */
static int run_one(vl_pack_algo algo, const uint32_t *len, size_t n, const args *a,
                   const char *data)
{
    uint32_t *items = malloc((n ? n : 1) * sizeof *items);
    vl_pack_opts o = {
        .algo = algo, .cap = a->cap, .seed = a->seed, .isf_iters = 50, .isf_slack = 128};
    vl_bins b = {0};
    vl_err err = {0};
    struct rusage ru;
    uint64_t tokens = 0;
    double best = 1e300;

    if (items == NULL)
        return 1;
    for (size_t i = 0; i < n; i++) {
        items[i] = (uint32_t)i;
        tokens += len[i];
    }
    for (int k = 0; k < a->runs; k++) {
        vl_bins_free(&b);
        double t0 = bench_wall_s();
        if (vl_pack(&b, items, n, len, &o, &err) != VL_OK) {
            fprintf(stderr, "bench_pack: %s\n", err.msg);
            return 1;
        }
        double dt = bench_wall_s() - t0;
        best = dt < best ? dt : best;
    }
    if (b.start[b.n] != n) {
        fprintf(stderr, "bench_pack: %s placed %zu of %zu\n", vl_pack_algo_name(algo),
                b.start[b.n], n);
        return 1;
    }
    getrusage(RUSAGE_SELF, &ru);
    printf("pack %s N=%zu cap=%u data=%s: %.3f s, %.3g samples/s, bins %zu, fill %.2f%%, "
           "peak RSS %.0f MB\n",
           vl_pack_algo_name(algo), n, a->cap, data, best, (double)n / best, b.n,
           100.0 * (double)tokens / ((double)b.n * a->cap), (double)ru.ru_maxrss / 1024.0);
    fflush(stdout);
    vl_bins_free(&b);
    free(items);
    return 0;
}

static int parse_args(args *a, int argc, char **argv)
{
    *a = (args){.n = 1000000,
                .cap = 4096,
                .algos = "ffd,bfd,ffs,bfs,isf,spfhp",
                .seed = 1,
                .mu = log(600.0),
                .sigma = 1.0,
                .repeat = 1,
                .runs = 1};
    for (int i = 1; i < argc; i++) {
        const char *o = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (v == NULL)
            return -1;
        i++;
        if (strcmp(o, "-n") == 0)
            a->n = (size_t)strtod(v, NULL);
        else if (strcmp(o, "-c") == 0)
            a->cap = (uint32_t)strtoul(v, NULL, 10);
        else if (strcmp(o, "-a") == 0)
            a->algos = v;
        else if (strcmp(o, "-s") == 0)
            a->seed = strtoull(v, NULL, 10);
        else if (strcmp(o, "--mu") == 0)
            a->mu = strtod(v, NULL);
        else if (strcmp(o, "--sigma") == 0)
            a->sigma = strtod(v, NULL);
        else if (strcmp(o, "--real") == 0)
            a->real = v;
        else if (strcmp(o, "--repeat") == 0)
            a->repeat = (size_t)strtoul(v, NULL, 10);
        else if (strcmp(o, "-r") == 0)
            a->runs = atoi(v);
        else
            return -1;
    }
    return a->cap > 0 && a->repeat > 0 && a->runs > 0 ? 0 : -1;
}

static uint32_t *load(const args *a, size_t *n, char *data, size_t datacap)
{
    if (a->real == NULL) {
        snprintf(data, datacap, "lognormal(%.2f,%.2f)", a->mu, a->sigma);
        *n = a->n;
        return lognormal(a->n, a->cap, a->mu, a->sigma, a->seed);
    }
    const char *base = strrchr(a->real, '/');
    snprintf(data, datacap, "%s", base ? base + 1 : a->real);
    size_t k;
    uint32_t *len = read_real(a->real, a->cap, &k), *rep;
    if (len == NULL || a->repeat == 1 || (rep = malloc(k * a->repeat * sizeof *rep)) == NULL) {
        *n = k;
        return len;
    }
    for (size_t r = 0; r < a->repeat; r++)
        memcpy(rep + r * k, len, k * sizeof *len);
    free(len);
    *n = k * a->repeat;
    snprintf(data + strlen(data), datacap - strlen(data), "x%zu", a->repeat);
    return rep;
}

int main(int argc, char **argv)
{
    args a;
    char data[128], list[128], *save = NULL;
    size_t n;
    int rc = 0;

    if (parse_args(&a, argc, argv) != 0) {
        fprintf(stderr, "usage: bench_pack [-n N] [-c CAP] [-a ALGOS] [-s SEED] [-r RUNS] "
                        "[--mu M --sigma S] [--real FILE [--repeat K]]\n");
        return 64;
    }
    uint32_t *len = load(&a, &n, data, sizeof data);
    if (len == NULL)
        return 66;
    snprintf(list, sizeof list, "%s", a.algos);
    for (char *name = strtok_r(list, ",", &save); name; name = strtok_r(NULL, ",", &save)) {
        vl_pack_algo algo;
        int status;
        if (vl_pack_algo_parse(name, &algo) != 0) {
            fprintf(stderr, "bench_pack: unknown algorithm %s\n", name);
            return 64;
        }
        pid_t pid = fork();
        if (pid == 0)
            _exit(run_one(algo, len, n, &a, data));
        if (pid < 0 || waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) ||
            WEXITSTATUS(status) != 0)
            rc = 1;
    }
    free(len);
    return rc;
}
