/* tests/plan/test_planio_fast.c -- the reader's fast path (lib/plan/planio_fast.c) against the
 * jansson path: every golden plan, a plan using every new field, and single-byte edits of
 * them read to the same plan, the same findings and the same errors either way (the
 * differential fuzzer fuzz/fuzz_planline.c does the same on random lines). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "planio_fixture.h"
#include "planio_impl.h"
#include "testutil.h"

TestSuite(planio_fast, .init = setup, .fini = teardown);

#define SAME_ARRAY(a, b, f, n)                                                             \
    cr_assert((a)->n == (b)->n && ((a)->n == 0 || memcmp((a)->f, (b)->f,                   \
                                                          (a)->n * sizeof *(a)->f) == 0),  \
              "%s: %s differs", what, #f)

static void same_plan(const vl_plan *a, const vl_plan *b, const char *what)
{
    SAME_ARRAY(a, b, segs, nsegs);
    cr_assert_eq(a->nmbs, b->nmbs);
    for (size_t i = 0; i < a->nmbs; i++)
        cr_assert(a->mbs[i].seg0 == b->mbs[i].seg0 && a->mbs[i].nseg == b->mbs[i].nseg &&
                  a->mbs[i].cap == b->mbs[i].cap && a->mbs[i].tokens == b->mbs[i].tokens &&
                  a->mbs[i].share == b->mbs[i].share, "%s: micro-batch %zu differs", what, i);
    cr_assert_eq(a->nranks, b->nranks);
    for (size_t r = 0; r < a->nranks; r++) {
        const vl_rank *x = &a->ranks[r], *y = &b->ranks[r];
        cr_assert(x->mb0 == y->mb0 && x->nmb == y->nmb && x->nbwd == y->nbwd && x->dp == y->dp &&
                  x->par.tp == y->par.tp && x->par.pp == y->par.pp && x->par.sp == y->par.sp &&
                  x->par.ckpt_layers == y->par.ckpt_layers && x->group == y->group &&
                  x->k == y->k && x->op0 == y->op0 && x->nop == y->nop && x->gpu0 == y->gpu0,
                  "%s: rank %zu differs: gpu0 %llu vs %llu, dp %d vs %d", what, r,
                  (unsigned long long)x->gpu0, (unsigned long long)y->gpu0, x->dp, y->dp);
    }
    cr_assert_eq(a->niters, b->niters);
    for (size_t i = 0; i < a->niters; i++)
        cr_assert(a->iters[i].rank0 == b->iters[i].rank0 &&
                  a->iters[i].nranks == b->iters[i].nranks &&
                  a->iters[i].epoch == b->iters[i].epoch &&
                  a->iters[i].candidate == b->iters[i].candidate, "%s: iteration %zu", what, i);
    cr_assert_eq(a->nops, b->nops);
    for (size_t i = 0; i < a->nops; i++)
        cr_assert(a->ops[i].mb == b->ops[i].mb && a->ops[i].kind == b->ops[i].kind, "%s", what);
    SAME_ARRAY(a, b, gpus, ngpus);
    cr_assert_eq(a->nshares, b->nshares);
    for (size_t i = 0; i < a->nshares; i++)
        cr_assert(a->shares[i].m0 == b->shares[i].m0 && a->shares[i].n == b->shares[i].n);
    SAME_ARRAY(a, b, members, nmembers);
    cr_assert_eq(a->ndrops, b->ndrops);
    for (size_t i = 0; i < a->ndrops; i++)
        cr_assert(a->drops[i].sample == b->drops[i].sample && a->drops[i].off == b->drops[i].off &&
                  a->drops[i].len == b->drops[i].len && a->drops[i].reason == b->drops[i].reason);
    for (size_t i = 0; i < a->nsegs; i++)
        cr_assert_eq(vl_plan_seg_cpi(a, i), vl_plan_seg_cpi(b, i), "%s: cp of segment %zu",
                     what, i);
    cr_assert_eq(a->caps, b->caps);
    cr_assert_eq(a->epochs, b->epochs);
}

static void same_msgs(const vl_msgs *a, const vl_msgs *b, const char *what)
{
    cr_assert_eq(a->total, b->total, "%s: %zu vs %zu messages", what, a->total, b->total);
    for (size_t i = 0; i < a->n; i++)
        cr_assert_str_eq(a->msg[i], b->msg[i], "%s", what);
}

/* Read path both ways (with manifest m or none) and compare everything. */
static void both_ways(const char *path, vl_manifest *m, const char *what)
{
    static vl_plan_file fa, fb;
    vl_plan a, b;
    vl_err ea = {0}, eb = {0};
    vl_status sa = vl__plan_read_with(&a, &fa, path, m, true, 1, NULL, NULL, &ea);
    vl_status sb = vl__plan_read_with(&b, &fb, path, m, false, 1, NULL, NULL, &eb);

    cr_assert_eq(sa, sb, "%s: %d vs %d (%s | %s)", what, sa, sb, ea.msg, eb.msg);
    cr_assert_str_eq(ea.msg, eb.msg, "%s", what);
    same_msgs(&fa.errors, &fb.errors, what);
    same_msgs(&fa.findings, &fb.findings, what);
    cr_assert_eq(fa.sha, fb.sha);
    cr_assert_eq(fa.unknown_ids, fb.unknown_ids);
    if (sa != VL_OK)
        return;
    same_plan(&a, &b, what);
    vl_plan_free(&a);
    vl_plan_free(&b);
}

Test(planio_fast, golden_plans_read_the_same_both_ways)
{
    static const char *const names[] = {"random", "sorted", "pack", "hbp", "chunkflow", NULL};
    vl_manifest *m = NULL;
    vl_err err = {0};
    const char *man[] = {"testdata/golden/manifest.jsonl"};

    cr_assert_eq(vl_manifest_read(&m, man, 1, NULL, &err), VL_OK, "%s", err.msg);
    for (int i = 0; names[i]; i++) {
        char path[128];
        snprintf(path, sizeof path, "testdata/golden/%s.jsonl", names[i]);
        both_ways(path, m, names[i]);
        both_ways(path, NULL, names[i]);
    }
    vl_manifest_free(m);
}

/* Every single-byte edit of a plan's iteration lines reads the same both ways: the fast
 * path either reads exactly what jansson reads, or gives the line back. */
Test(planio_fast, edited_lines_read_the_same_both_ways)
{
    static const char subst[] = {'0', '7', '-', 'x', '"', ' ', '[', ']', ',', '}', '\\'};
    vl_manifest *m = tiny_manifest();
    vl_plan p;
    size_t n;
    char *path = path_of("edit.jsonl");

    tiny_plan(&p, m);
    p.caps = VL_CAP_SCHEDULE;
    char *text = write_and_slurp(&p, "tiny.jsonl", &n);
    char *from = strchr(text, '\n') + 1, *to = strrchr(text, '{');
    for (char *at = from; at < to - 1; at++)
        for (size_t k = 0; k < sizeof subst; k++) {
            char was = *at, what[64];
            if (was == subst[k])
                continue;
            *at = subst[k];
            cr_assert_eq(tu_write_bytes(path, text, n), 0);
            snprintf(what, sizeof what, "byte %zu = '%c'", (size_t)(at - text), subst[k]);
            both_ways(path, m, what);
            both_ways(path, NULL, what);
            *at = was;
        }
    free(text);
    free(path);
    vl_plan_free(&p);
    vl_manifest_free(m);
}
