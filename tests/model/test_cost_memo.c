/* tests/model/test_cost_memo.c -- the attention memo (lib/model/cost_memo.c,
 * vl_cost_memoized): a memoised cost model returns the plain one's times bit for bit,
 * on first use and from the memo, over degrees that open more planes than it holds, and
 * after the configuration changes under it. */
#include <string.h>

#include "cost_fixture.h"

TestSuite(cost_memo, .init = setup, .fini = teardown);

static const char *const none[] = {NULL};

/* A pack of whole samples and slices (offsets above 0), lengths up to 140K, from seed. */
static size_t make_pack(vl_seg *s, size_t most, uint32_t seed)
{
    uint32_t x = seed * 2654435761u + 1;
    size_t n = 1 + seed % most;

    for (size_t i = 0; i < n; i++) {
        x = x * 1103515245u + 12345u;
        uint32_t len = 1 + (x >> 8) % (i % 3 == 0 ? 140000u : 3000u);
        s[i] = (vl_seg){(uint32_t)i, i % 4 == 3 ? (x >> 4) % 5000u : 0, len};
    }
    return n;
}

static void assert_same(vl_mb_time a, vl_mb_time b, const char *what, uint32_t seed)
{
    cr_assert(memcmp(&a, &b, sizeof a) == 0, "%s, pack %u: fwd %.17g/%.17g bwd %.17g/%.17g",
              what, seed, a.fwd, b.fwd, a.bwd, b.bwd);
}

/* Every pack costed plain and memoised (twice: filled, then read back), by
 * vl_cost_mb_time and by vl_cost_pack_time of a pack shared by 1..3 ranks. */
static void compare(const vl_cost *plain, const vl_cost *memo, const vl_par *par)
{
    vl_seg segs[24], tmp[24];

    for (int round = 0; round < 2; round++)
        for (uint32_t seed = 0; seed < 120; seed++) {
            size_t n = make_pack(segs, 24, seed);
            vl_pack_view v = {segs, NULL, n, 1 + (int)(seed % 3)};
            int last = (int)(seed & 1);
            assert_same(vl_cost_mb_time(plain, segs, n, par, 7, last),
                        vl_cost_mb_time(memo, segs, n, par, 7, last), "mb_time", seed);
            assert_same(vl_cost_pack_time(plain, &v, par, 7, last, tmp),
                        vl_cost_pack_time(memo, &v, par, 7, last, tmp), "pack_time", seed);
        }
}

Test(cost_memo, memoised_times_are_the_plain_ones)
{
    vl_cost_memo *m = NULL;
    vl_cost mc;
    /* tp and sp degrees, ring and Ulysses: more (g, rdiv) planes than the memo holds */
    const vl_par pars[] = {{1, 1, 1, 0}, {2, 1, 1, 2}, {1, 1, 2, 0}, {4, 1, 2, 1},
                           {8, 2, 1, 0}, {1, 1, 4, 3}, {2, 4, 2, 0}};

    for (int ring = 0; ring < 2; ring++) {
        const char *kind[] = {ring ? "training.sp_kind=ring" : "training.sp_kind=ulysses",
                              NULL};
        with(kind);
        mc = vl_cost_memoized(&cost, &m);
        cr_assert_not_null(mc.memo);
        for (size_t i = 0; i < sizeof pars / sizeof pars[0]; i++)
            compare(&cost, &mc, &pars[i]);
    }
    vl_cost_memo_free(m);
}

/* The memo filled under one configuration, then the attention curves, their backward
 * factor and the peak change: vl_cost_memoized empties it, so no stale term is read. */
Test(cost_memo, emptied_when_the_configuration_changes)
{
    vl_cost_memo *m = NULL;
    vl_par par = {1, 1, 1, 0};
    const char *changes[][2] = {
        {"cluster.attn_fwd_eff=[[512,0.2],[4096,0.4],[65536,0.6]]", NULL},
        {"cost.bwd_attn=3.5", NULL},
        {"cluster.peak_tflops=400", NULL},
        {"cluster.attn_bwd_eff=[[300,0.25],[3000,0.45],[90000,0.5]]", NULL},
    };

    with(none);
    vl_cost mc = vl_cost_memoized(&cost, &m);
    compare(&cost, &mc, &par);
    for (size_t i = 0; i < sizeof changes / sizeof changes[0]; i++) {
        with(changes[i]);
        mc = vl_cost_memoized(&cost, &m);
        compare(&cost, &mc, &par);
    }
    vl_cost_memo_free(m);
}

/* The default cost model carries no memo, and freeing none is fine. */
Test(cost_memo, none_unless_asked)
{
    with(none);
    cr_assert_null(cost.memo);
    vl_cost_memo_free(NULL);
}
