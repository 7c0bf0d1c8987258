/* fuzz/fuzz_planline.c -- differential fuzzer of the plan reader's fast path
 * (lib/plan/planio_fast.c) against the jansson path (issue "read as fast as we write"):
 * the input is the body of a plan file (iteration lines and a footer) after a fixed
 * header; it is read both ways, with the fast path and with every line through jansson,
 * with and without a manifest, and the results must be identical: status, message,
 * structural errors, findings, and every array of the plan.  Any difference aborts. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "planio_impl.h"

#define HEADER                                                                                \
    "{\"type\":\"header\",\"schema\":\"vlplan.plan/1\",\"vlplan\":\"0\","                     \
    "\"epochs\":1}\n"

static void check(int ok, const char *what)
{
    if (!ok) {
        fprintf(stderr, "fuzz_planline: the two paths differ: %s\n", what);
        abort();
    }
}

static void same_msgs(const vl_msgs *a, const vl_msgs *b)
{
    check(a->total == b->total && a->n == b->n, "message counts");
    for (size_t i = 0; i < a->n; i++)
        check(strcmp(a->msg[i], b->msg[i]) == 0, "message text");
}

static void same_plan(const vl_plan *a, const vl_plan *b)
{
    check(a->nsegs == b->nsegs && a->nmbs == b->nmbs && a->nranks == b->nranks &&
              a->niters == b->niters && a->nops == b->nops && a->ngpus == b->ngpus &&
              a->nshares == b->nshares && a->nmembers == b->nmembers && a->ndrops == b->ndrops,
          "array sizes");
    for (size_t i = 0; i < a->nsegs; i++)
        check(a->segs[i].sample == b->segs[i].sample && a->segs[i].off == b->segs[i].off &&
                  a->segs[i].len == b->segs[i].len &&
                  vl_plan_seg_cpi(a, i) == vl_plan_seg_cpi(b, i),
              "segments");
    for (size_t i = 0; i < a->nmbs; i++)
        check(a->mbs[i].seg0 == b->mbs[i].seg0 && a->mbs[i].nseg == b->mbs[i].nseg &&
                  a->mbs[i].cap == b->mbs[i].cap && a->mbs[i].share == b->mbs[i].share,
              "packs");
    for (size_t i = 0; i < a->nranks; i++) {
        const vl_rank *x = &a->ranks[i], *y = &b->ranks[i];
        check(x->mb0 == y->mb0 && x->nmb == y->nmb && x->nbwd == y->nbwd && x->dp == y->dp &&
                  memcmp(&x->par, &y->par, sizeof x->par) == 0 && x->group == y->group &&
                  x->k == y->k && x->op0 == y->op0 && x->nop == y->nop && x->gpu0 == y->gpu0,
              "ranks");
    }
    for (size_t i = 0; i < a->niters; i++)
        check(a->iters[i].rank0 == b->iters[i].rank0 &&
                  a->iters[i].nranks == b->iters[i].nranks &&
                  a->iters[i].epoch == b->iters[i].epoch &&
                  a->iters[i].candidate == b->iters[i].candidate,
              "iterations");
    for (size_t i = 0; i < a->nops; i++)
        check(a->ops[i].mb == b->ops[i].mb && a->ops[i].kind == b->ops[i].kind, "schedule");
    check(a->ngpus == 0 || memcmp(a->gpus, b->gpus, a->ngpus * sizeof *a->gpus) == 0, "gpus");
    check(a->nmembers == 0 ||
              memcmp(a->members, b->members, a->nmembers * sizeof *a->members) == 0,
          "members");
}

static void both_ways(const char *path, vl_manifest *m)
{
    static vl_plan_file fa, fb;
    vl_plan a, b;
    vl_err ea = {0}, eb = {0};
    vl_status sa = vl__plan_read_with(&a, &fa, path, m, true, 1, NULL, NULL, &ea);
    vl_status sb = vl__plan_read_with(&b, &fb, path, m, false, 1, NULL, NULL, &eb);

    check(sa == sb, "status");
    check(strcmp(ea.msg, eb.msg) == 0, "error message");
    same_msgs(&fa.errors, &fb.errors);
    same_msgs(&fa.findings, &fb.findings);
    check(fa.sha == fb.sha && fa.unknown_ids == fb.unknown_ids, "file claims");
    if (sa != VL_OK)
        return;
    same_plan(&a, &b);
    vl_plan_free(&a);
    vl_plan_free(&b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static vl_manifest *m;
    static char path[64];
    FILE *f;

    if (!m) {
        uint32_t len[8] = {100, 200, 300, 400, 500, 600, 700, 5000};
        if (vl_manifest_from_lengths(&m, len, 8, NULL) != VL_OK)
            abort();
        snprintf(path, sizeof path, "/tmp/fuzz_planline.%d.jsonl", (int)getpid());
    }
    if (!(f = fopen(path, "wb")))
        abort();
    fputs(HEADER, f);
    fwrite(data, 1, size, f);
    fclose(f);
    both_ways(path, m);
    both_ways(path, NULL);
    return 0;
}
