/* tools/soak.c -- `make soak`: the property loop of tests/plan_prop.h over many seeds.
 * Every case plans a random manifest with a strategy from the registry under random
 * settings, writes the plan as `vlplan plan` does, reads it back and verifies it as
 * `vlplan verify` does; the two must agree (or plan must refuse).  Prints the seed and
 * the reproducing command of every failing case, then a summary; exit 1 if any failed.
 *
 *   soak [-n CASES] [-s FIRST_SEED] [-S STRATEGY] [-d DIR] [-v]
 * -S plans every case with one strategy (by name) instead of one drawn per case. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "plan_prop.h"

typedef struct tally {
    unsigned long planned, refused, findings;
} tally;

static double now_s(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Refusals by kind, for the summary. */
static const char *refusal_kind(const char *why)
{
    if (strstr(why, "device memory"))
        return "memory";
    if (strstr(why, "oversize") || strstr(why, "longer than"))
        return "oversize";
    return "config";
}

int main(int argc, char **argv)
{
    unsigned long n = 10000, mem = 0, over = 0, conf = 0;
    uint64_t first = 1000000;
    const char *dir = "/tmp";
    bool verbose = false;
    int only = -1;
    tally by[64] = {{0}};
    char path[512], why[1024];
    double t0 = now_s();

    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "-n") == 0 && i + 1 < argc)
            n = strtoul(argv[++i], NULL, 10);
        else if (strcmp(argv[i], "-s") == 0 && i + 1 < argc)
            first = strtoull(argv[++i], NULL, 10);
        else if (strcmp(argv[i], "-d") == 0 && i + 1 < argc)
            dir = argv[++i];
        else if (strcmp(argv[i], "-S") == 0 && i + 1 < argc) {
            const vl_strategy *s = vl_strategy_find(argv[++i]);
            for (only = 0; s && vl_strategy_at((size_t)only) != s; only++)
                ;
            if (!s) {
                fprintf(stderr, "soak: no strategy %s\n", argv[i]);
                return 64;
            }
        } else if (strcmp(argv[i], "-v") == 0)
            verbose = true;
        else {
            fprintf(stderr,
                    "usage: soak [-n CASES] [-s FIRST_SEED] [-S STRATEGY] [-d DIR] [-v]\n");
            return 64;
        }
    }
    snprintf(path, sizeof path, "%s/vlplan-soak-%ld.jsonl", dir, (long)getpid());
    for (unsigned long i = 0; i < n; i++) {
        pp_case c;
        vl_err err = {0};
        size_t si;
        double t1 = now_s();
        if (pp_make(&c, first + i, only, &err) != VL_OK) {
            printf("FAIL seed %llu: the case could not be made: %s\n",
                   (unsigned long long)(first + i), err.msg);
            by[63].findings++;
            continue;
        }
        for (si = 0; si < vl_strategy_count() && vl_strategy_at(si) != c.s; si++)
            ;
        pp_outcome o = pp_check(&c, path, why, sizeof why);
        if (o == PP_FINDING) {
            printf("FAIL %s\n  %s\n", c.desc, why);
            by[si].findings++;
        } else if (o == PP_REFUSED) {
            const char *k = refusal_kind(why);
            mem += k[0] == 'm';
            over += k[0] == 'o';
            conf += k[0] == 'c';
            by[si].refused++;
            if (verbose)
                printf("refused %s\n  %s\n", c.desc, why);
        } else {
            by[si].planned++;
        }
        if (verbose)
            printf("  %.2f s\n", now_s() - t1);
        pp_free(&c);
        fflush(stdout);
    }
    remove(path);
    tally all = by[63];
    for (size_t si = 0; si < vl_strategy_count(); si++) {
        printf("%-10s planned %6lu  refused %6lu  findings %lu\n", vl_strategy_at(si)->name,
               by[si].planned, by[si].refused, by[si].findings);
        all.planned += by[si].planned;
        all.refused += by[si].refused;
        all.findings += by[si].findings;
    }
    printf("soak: %lu cases (seeds %llu..%llu) in %.1f s: %lu planned and verified, %lu "
           "refused (memory %lu, oversize %lu, config %lu), %lu findings\n",
           n, (unsigned long long)first, (unsigned long long)(first + n - 1), now_s() - t0,
           all.planned, all.refused, mem, over, conf, all.findings);
    return all.findings ? 1 : 0;
}
