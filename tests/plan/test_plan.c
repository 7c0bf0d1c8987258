/* tests/plan/test_plan.c -- the in-memory plan and its builder: nesting and counts, totals
 * kept per micro-batch, growth past many reallocations, misuse, loss tokens of slices,
 * iteration totals, header metadata ownership. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "plan.h"

static const vl_par PAR1 = {1, 1, 1, 0};

static vl_manifest *lengths(const uint32_t *len, size_t n)
{
    vl_manifest *m = NULL;
    cr_assert_eq(vl_manifest_from_lengths(&m, len, n, NULL), VL_OK);
    return m;
}

Test(plan, init_is_empty)
{
    vl_plan p;
    vl_err err = {0};

    cr_assert_eq(vl_plan_init(&p, NULL, "pack", 42, &err), VL_OK);
    cr_assert_str_eq(p.strategy, "pack");
    cr_assert_eq(p.seed, 42);
    cr_assert_eq(p.epochs, 1);
    cr_assert_eq(p.niters + p.nranks + p.nmbs + p.nsegs + p.nops + p.ndrops, 0);
    vl_plan_free(&p);
    vl_plan_free(&p); /* freeing twice is harmless: free leaves the plan empty */
}

Test(plan, long_strategy_name_is_truncated)
{
    vl_plan p;
    char name[100];

    memset(name, 'x', sizeof name - 1);
    name[sizeof name - 1] = '\0';
    vl_plan_init(&p, NULL, name, 0, NULL);
    cr_assert_eq(strlen(p.strategy), sizeof p.strategy - 1);
    vl_plan_free(&p);
}

Test(plan, builder_nests_and_keeps_totals)
{
    vl_plan p;
    vl_err err = {0};
    vl_par sp2 = {2, 1, 4, 3};

    vl_plan_init(&p, NULL, "t", 0, &err);
    cr_assert_eq(vl_plan_iter_begin(&p, 0, &err), VL_OK);
    cr_assert_eq(vl_plan_rank_begin(&p, 0, &PAR1, &err), VL_OK);
    cr_assert_eq(vl_plan_mb_begin(&p, 100, &err), VL_OK);
    cr_assert_eq(vl_plan_seg(&p, 0, 0, 30, &err), VL_OK);
    cr_assert_eq(vl_plan_seg(&p, 1, 5, 40, &err), VL_OK);
    cr_assert_eq(vl_plan_mb_begin(&p, 100, &err), VL_OK);
    cr_assert_eq(vl_plan_seg(&p, 2, 0, 7, &err), VL_OK);
    cr_assert_eq(vl_plan_rank_begin(&p, 1, &sp2, &err), VL_OK);
    vl_plan_rank_group(&p, 5);
    cr_assert_eq(vl_plan_op(&p, 0, VL_OP_F, &err), VL_OK);
    cr_assert_eq(vl_plan_op(&p, 0, VL_OP_B, &err), VL_OK);
    cr_assert_eq(vl_plan_mb_begin(&p, 50, &err), VL_OK);
    cr_assert_eq(vl_plan_iter_begin(&p, 1, &err), VL_OK);
    cr_assert_eq(vl_plan_drop(&p, 9, 10, 20, VL_DROP_TRUNCATED, &err), VL_OK);

    cr_assert_eq(p.niters, 2);
    cr_assert_eq(p.iters[0].nranks, 2);
    cr_assert_eq(p.iters[1].nranks, 0);
    cr_assert_eq(p.iters[1].rank0, 2);
    cr_assert_eq(p.iters[1].epoch, 1);
    cr_assert_eq(p.ranks[0].nmb, 2);
    cr_assert_eq(p.ranks[0].group, -1);
    cr_assert_eq(p.ranks[1].group, 5);
    cr_assert_eq(p.ranks[1].dp, 1);
    cr_assert_eq(p.ranks[1].par.sp, 4);
    cr_assert_eq(p.ranks[1].par.ckpt_layers, 3);
    cr_assert_eq(p.ranks[1].nop, 2);
    cr_assert_eq(p.ranks[1].op0, 0);
    cr_assert_eq(p.ranks[1].mb0, 2);
    cr_assert_eq(p.mbs[0].nseg, 2);
    cr_assert_eq(p.mbs[0].tokens, 70);
    cr_assert_eq(p.mbs[1].seg0, 2);
    cr_assert_eq(p.mbs[1].tokens, 7);
    cr_assert_eq(p.mbs[2].nseg, 0);
    cr_assert_eq(p.mbs[2].cap, 50);
    cr_assert_eq(vl_plan_mb_segs(&p, &p.mbs[0])[1].off, 5);
    cr_assert_eq(p.ops[1].kind, VL_OP_B);
    cr_assert_eq(p.drops[0].reason, VL_DROP_TRUNCATED);
    cr_assert_eq(p.drops[0].len, 20);
    vl_plan_free(&p);
}

Test(plan, grows_through_many_reallocations)
{
    vl_plan p;
    vl_err err = {0};
    const size_t N = 100000;

    vl_plan_init(&p, NULL, "t", 0, &err);
    vl_plan_iter_begin(&p, 0, &err);
    vl_plan_rank_begin(&p, 0, &PAR1, &err);
    vl_status st = VL_OK;
    /* one assertion at the end: Criterion reports each one to its runner */
    for (size_t i = 0; i < N && st == VL_OK; i++) {
        if (i % 10 == 0)
            st = vl_plan_mb_begin(&p, 1000, &err);
        if (st == VL_OK)
            st = vl_plan_seg(&p, (uint32_t)i, 0, (uint32_t)(i % 7 + 1), &err);
    }
    cr_assert_eq(st, VL_OK, "%s", err.msg);
    cr_assert_eq(p.nsegs, N);
    cr_assert_eq(p.nmbs, N / 10);
    cr_assert_geq(p.segs_cap, N);
    cr_assert_eq(p.segs[N - 1].sample, N - 1);
    uint64_t sum = 0;
    for (size_t b = 0; b < p.nmbs; b++)
        sum += p.mbs[b].tokens;
    uint64_t want = 0;
    for (size_t i = 0; i < N; i++)
        want += i % 7 + 1;
    cr_assert_eq(sum, want);
    vl_plan_free(&p);
}

Test(plan, misuse_is_an_internal_error)
{
    vl_plan p;
    vl_err err = {0};

    vl_plan_init(&p, NULL, "t", 0, &err);
    cr_assert_eq(vl_plan_rank_begin(&p, 0, &PAR1, &err), VL_EINTERNAL);
    cr_assert_eq(vl_plan_mb_begin(&p, 10, &err), VL_EINTERNAL);
    cr_assert_eq(vl_plan_seg(&p, 0, 0, 1, &err), VL_EINTERNAL);
    cr_assert(strstr(err.msg, "outside a micro-batch"), "%s", err.msg);
    cr_assert_eq(vl_plan_op(&p, 0, VL_OP_F, &err), VL_EINTERNAL);
    vl_plan_rank_group(&p, 3); /* no rank: ignored */
    vl_plan_iter_begin(&p, 0, &err);
    cr_assert_eq(vl_plan_mb_begin(&p, 10, &err), VL_EINTERNAL);
    vl_plan_free(&p);
}

/* Sample of 10 tokens whose last 4 carry loss: the loss range is [6, 10). */
Test(plan, seg_loss_counts_the_last_loss_tokens)
{
    uint32_t len[] = {10, 5};
    vl_manifest *m = lengths(len, 2);
    vl_plan p;

    m->loss = malloc(2 * sizeof *m->loss);
    m->loss[0] = 4;
    m->loss[1] = 5;
    vl_plan_init(&p, m, "t", 0, NULL);
    cr_assert_eq(vl_plan_seg_loss(&p, &(vl_seg){0, 0, 10}), 4);
    cr_assert_eq(vl_plan_seg_loss(&p, &(vl_seg){0, 0, 5}), 0);
    cr_assert_eq(vl_plan_seg_loss(&p, &(vl_seg){0, 0, 6}), 0);
    cr_assert_eq(vl_plan_seg_loss(&p, &(vl_seg){0, 5, 3}), 2);
    cr_assert_eq(vl_plan_seg_loss(&p, &(vl_seg){0, 8, 2}), 2);
    cr_assert_eq(vl_plan_seg_loss(&p, &(vl_seg){0, 6, 4}), 4);
    cr_assert_eq(vl_plan_seg_loss(&p, &(vl_seg){1, 2, 3}), 3);
    /* beyond the sample, or a phantom sample, carries nothing */
    cr_assert_eq(vl_plan_seg_loss(&p, &(vl_seg){0, 10, 5}), 0);
    cr_assert_eq(vl_plan_seg_loss(&p, &(vl_seg){7, 0, 5}), 0);
    cr_assert_eq(vl_plan_seg_loss(&p, &(vl_seg){VL_SAMPLE_UNKNOWN, 0, 5}), 0);
    vl_plan_free(&p);
    vl_manifest_free(m);
}

Test(plan, seg_loss_without_manifest_is_the_length)
{
    vl_plan p;

    vl_plan_init(&p, NULL, "t", 0, NULL);
    cr_assert_eq(vl_plan_seg_loss(&p, &(vl_seg){0, 3, 9}), 9);
    vl_plan_free(&p);
}

Test(plan, iter_totals)
{
    uint32_t len[] = {10, 20, 30};
    vl_manifest *m = lengths(len, 3);
    vl_plan p;
    uint64_t t, l, s;

    m->loss = malloc(3 * sizeof *m->loss);
    m->loss[0] = 10;
    m->loss[1] = 5;
    m->loss[2] = 30;
    vl_plan_init(&p, m, "t", 0, NULL);
    vl_plan_iter_begin(&p, 0, NULL);
    vl_plan_rank_begin(&p, 0, &PAR1, NULL);
    vl_plan_mb_begin(&p, 64, NULL);
    vl_plan_seg(&p, 0, 0, 10, NULL);
    vl_plan_seg(&p, 1, 0, 12, NULL);  /* no loss: [0, 12) is before [15, 20) */
    vl_plan_rank_begin(&p, 1, &PAR1, NULL);
    vl_plan_mb_begin(&p, 64, NULL);
    vl_plan_seg(&p, 1, 12, 8, NULL);  /* 5 loss tokens */
    vl_plan_seg(&p, 2, 0, 30, NULL);
    vl_plan_iter_begin(&p, 0, NULL);
    vl_plan_iter_totals(&p, 0, &t, &l, &s);
    cr_assert_eq(t, 60);
    cr_assert_eq(l, 10 + 0 + 5 + 30);
    cr_assert_eq(s, 3);
    vl_plan_iter_totals(&p, 1, &t, NULL, &s);
    cr_assert_eq(t, 0);
    cr_assert_eq(s, 0);
    vl_plan_free(&p);
    vl_manifest_free(m);
}

/* The builder keeps the totals as segments come: backward packs and every copy of a
 * shared pack but its first member's are not counted, whether the pack is shared before
 * or after its segments arrive. */
Test(plan, iter_totals_skip_backward_packs_and_shared_copies)
{
    uint32_t len[] = {10, 20, 30};
    vl_manifest *m = lengths(len, 3);
    const int32_t dps[] = {0, 1};
    vl_plan p;
    uint64_t t, l, s;

    vl_plan_init(&p, m, "t", 0, NULL);
    vl_plan_iter_begin(&p, 0, NULL);
    vl_plan_rank_begin(&p, 0, &PAR1, NULL);
    vl_plan_mb_begin(&p, 64, NULL);
    vl_plan_seg(&p, 2, 0, 30, NULL);
    vl_plan_mb_share(&p, dps, 2, NULL);   /* after its segments: rank 0 is first */
    vl_plan_mb_begin(&p, 64, NULL);
    vl_plan_seg(&p, 0, 0, 10, NULL);
    vl_plan_bwd_begin(&p, 64, NULL);
    vl_plan_seg(&p, 0, 0, 10, NULL);
    vl_plan_rank_begin(&p, 1, &PAR1, NULL);
    vl_plan_mb_begin(&p, 64, NULL);
    vl_plan_seg(&p, 2, 0, 30, NULL);
    vl_plan_mb_share(&p, dps, 2, NULL);   /* rank 1's copy: not counted */
    vl_plan_mb_begin(&p, 64, NULL);
    vl_plan_mb_share(&p, dps + 1, 1, NULL);   /* misuse (one member): refused, no effect */
    vl_plan_seg(&p, 1, 0, 20, NULL);
    vl_plan_iter_totals(&p, 0, &t, &l, &s);
    cr_assert_eq(t, 60);
    cr_assert_eq(l, 60);
    cr_assert_eq(s, 3);
    vl_plan_free(&p);

    const int32_t rev[] = {1, 0};
    vl_plan_init(&p, m, "t", 0, NULL);
    vl_plan_iter_begin(&p, 0, NULL);
    vl_plan_rank_begin(&p, 0, &PAR1, NULL);
    vl_plan_mb_begin(&p, 64, NULL);
    vl_plan_mb_share(&p, rev, 2, NULL);   /* before its segments: rank 1 is first */
    vl_plan_seg(&p, 2, 0, 30, NULL);
    vl_plan_rank_begin(&p, 1, &PAR1, NULL);
    vl_plan_mb_begin(&p, 64, NULL);
    vl_plan_mb_share(&p, rev, 2, NULL);
    vl_plan_seg(&p, 2, 0, 30, NULL);
    vl_plan_iter_totals(&p, 0, &t, &l, &s);
    cr_assert_eq(t, 30);
    cr_assert_eq(s, 1);
    vl_plan_free(&p);
    vl_manifest_free(m);
}

Test(plan, set_meta_takes_ownership_and_replaces)
{
    vl_plan p;

    vl_plan_init(&p, NULL, "t", 0, NULL);
    vl_plan_set_meta(&p, 3, strdup("{\"a\":1}"), strdup("{}"));
    vl_plan_set_meta(&p, 2, strdup("{\"b\":2}"), NULL);
    cr_assert_eq(p.epochs, 2);
    cr_assert_str_eq(p.params_json, "{\"b\":2}");
    cr_assert_null(p.config_json);
    vl_plan_free(&p); /* ASan: nothing leaks */
}

enum { NS = 300, SLICES = 3, PACKS = 7 };

/* One rank of NS samples, each sliced SLICES ways in both lists (PACKS packs each), the
 * slices walked in a scrambled order and the sample ids across several radix digits. */
static vl_status scrambled_rank(vl_plan *p, vl_err *err)
{
    vl_status st = VL_OK;

    vl_plan_init(p, NULL, "t", 0, err);
    vl_plan_iter_begin(p, 0, err);
    vl_plan_rank_begin(p, 0, &PAR1, err);
    for (int bwd = 0; bwd < 2 && st == VL_OK; bwd++) {
        for (int k = 0; k < PACKS && st == VL_OK; k++) {
            st = bwd ? vl_plan_bwd_begin(p, 1u << 30, err)
                     : vl_plan_mb_begin(p, 1u << 30, err);
            for (uint32_t i = 0; i < NS * SLICES && st == VL_OK; i++) {
                uint32_t x = (i * 7919u + (uint32_t)bwd * 13u) % (NS * SLICES);
                if (x % PACKS != (uint32_t)k)
                    continue;
                uint32_t sample = (uint32_t)((uint64_t)(x / SLICES) * 2654435761u % 3000017u);
                uint32_t slice = x % SLICES;
                st = vl_plan_seg(p, sample, slice * 10, 10, err);
            }
        }
    }
    return st;
}

/* Past 64 intervals vl_plan_rank_intervals sorts by a radix pass on the sample, then
 * each sample's few intervals: the result must be the (sample, bwd, off, pack) order. */
Test(plan, rank_intervals_sorted_past_the_radix_threshold)
{
    vl_plan p;
    vl_err err = {0};
    vl_interval *iv = NULL;
    size_t cap = 0, n = 0;
    vl_status st = scrambled_rank(&p, &err);

    cr_assert_eq(st, VL_OK, "%s", err.msg);
    cr_assert_eq(vl_plan_rank_intervals(&p, &p.ranks[0], &iv, &cap, &n, &err), VL_OK);
    cr_assert_eq(n, 2 * NS * SLICES);
    size_t bad = 0;
    for (size_t i = 1; i < n; i++) {
        const vl_interval *a = &iv[i - 1], *b = &iv[i];
        bad += a->sample > b->sample ||
               (a->sample == b->sample && (a->bwd > b->bwd ||
                (a->bwd == b->bwd && (a->off > b->off ||
                 (a->off == b->off && a->pack >= b->pack)))));
    }
    cr_assert_eq(bad, 0);
    free(iv);
    vl_plan_free(&p);
}

/* vl_plan_rank_intervals_grouped: each sample's intervals in one run, sorted as
 * vl_plan_rank_intervals sorts them, the runs in the order of the samples' first
 * segments in the packs. */
Test(plan, rank_intervals_grouped_by_first_appearance)
{
    vl_plan p;
    vl_err err = {0};
    vl_interval *iv = NULL, *g = NULL;
    uint32_t *tab = NULL;
    size_t cap = 0, n = 0, gcap = 0, gn = 0, tab_cap = 0, runs = 0, bad = 0;
    vl_status st = scrambled_rank(&p, &err);

    cr_assert_eq(st, VL_OK, "%s", err.msg);
    cr_assert_eq(vl_plan_rank_intervals(&p, &p.ranks[0], &iv, &cap, &n, &err), VL_OK);
    for (int twice = 0; twice < 2; twice++) /* the table is reused */
        cr_assert_eq(vl_plan_rank_intervals_grouped(&p, &p.ranks[0], &g, &gcap, &gn, &tab,
                                                    &tab_cap, &err),
                     VL_OK);
    cr_assert_eq(gn, n);
    const vl_seg *first = vl_plan_mb_segs(&p, &p.mbs[p.ranks[0].mb0]);
    cr_assert_eq(g[0].sample, first[0].sample);
    for (size_t i = 0, j; i < gn; i = j, runs++) {
        size_t k = 0;
        while (iv[k].sample != g[i].sample) /* its run in the sorted order */
            k++;
        for (j = i; j < gn && g[j].sample == g[i].sample; j++, k++)
            bad += k >= n || g[j].sample != iv[k].sample || g[j].off != iv[k].off ||
                   g[j].end != iv[k].end || g[j].pack != iv[k].pack || g[j].bwd != iv[k].bwd;
        bad += k < n && iv[k].sample == g[i].sample; /* the sorted run is longer */
    }
    cr_assert_eq(bad, 0);
    cr_assert_eq(runs, NS); /* one run per sample */
    free(iv);
    free(g);
    free(tab);
    vl_plan_free(&p);
}
