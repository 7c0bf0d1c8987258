/* tests/model/test_sim_again.c -- vl_sim_iter_again, the re-simulation after a change to
 * ranks' checkpointing alone (SlimPack's checkpointing rounds): it reuses what the
 * scratch prepared for the unchanged ranks, and must give vl_sim_iter's results bit for
 * bit (sim_fixture.h: 1 s per token per layer, 4 layers on pp = 4 stages). */
#include <criterion/criterion.h>
#include <string.h>

#include "sim_fixture.h"

static void begin_rank(fx *f, int dp)
{
    vl_par par = {.tp = 1, .pp = 4, .sp = 1, .ckpt_layers = 0};
    cr_assert_eq(vl_plan_rank_begin(&f->p, dp, &par, &f->err), VL_OK);
}

static void whole_mb(fx *f, uint32_t units)
{
    cr_assert_eq(vl_plan_mb_begin(&f->p, units, &f->err), VL_OK);
    f->len[f->next] = units;
    cr_assert_eq(vl_plan_seg(&f->p, f->next++, 0, units, &f->err), VL_OK);
}

/* Iteration it: rank 0 slices one sample over three packs and holds a whole one, rank 1
 * and rank 2 hold whole samples. */
static void three_ranks(fx *f, size_t it)
{
    uint32_t s = f->next++;
    cr_assert_eq(vl_plan_iter_begin(&f->p, it, &f->err), VL_OK);
    begin_rank(f, 0);
    f->len[s] = 600;
    for (uint32_t k = 0; k < 3; k++) {
        cr_assert_eq(vl_plan_mb_begin(&f->p, 200, &f->err), VL_OK);
        cr_assert_eq(vl_plan_seg(&f->p, s, 200 * k, 200, &f->err), VL_OK);
    }
    whole_mb(f, 300);
    begin_rank(f, 1);
    for (uint32_t u = 100; u <= 400; u += 100)
        whole_mb(f, u);
    begin_rank(f, 2);
    whole_mb(f, 500);
    whole_mb(f, 50);
}

static vl_par *par_of(fx *f, size_t it, uint32_t r)
{
    return &f->p.ranks[f->p.iters[it].rank0 + r].par;
}

/* a and b bit for bit: the results and every lane of the traces. */
static void same(const vl_sim_iter_result *a, const vl_sim_trace *ta,
                 const vl_sim_iter_result *b, const vl_sim_trace *tb)
{
    cr_assert_eq(a->iter_time_ms, b->iter_time_ms);
    cr_assert_eq(a->makespan_ms, b->makespan_ms);
    cr_assert_eq(a->bubble, b->bubble);
    cr_assert_eq(a->tbr, b->tbr);
    cr_assert_eq(a->mfu, b->mfu);
    cr_assert_eq(a->peak_mem_gib, b->peak_mem_gib);
    cr_assert_eq(a->peak_rank, b->peak_rank);
    cr_assert_eq(a->sync_ms, b->sync_ms);
    cr_assert_eq(ta->nlanes, tb->nlanes);
    cr_assert_eq(ta->ntasks, tb->ntasks);
    for (size_t i = 0; i < ta->nlanes; i++) {
        cr_assert_eq(ta->lanes[i].makespan, tb->lanes[i].makespan, "lane %zu", i);
        cr_assert_eq(ta->lanes[i].busy, tb->lanes[i].busy, "lane %zu", i);
        cr_assert_eq(ta->lanes[i].act_peak, tb->lanes[i].act_peak, "lane %zu", i);
        cr_assert_eq(ta->lanes[i].states, tb->lanes[i].states, "lane %zu", i);
    }
    for (size_t i = 0; i < ta->ntasks; i++) {
        cr_assert_eq(ta->tasks[i].start, tb->tasks[i].start, "task %zu", i);
        cr_assert_eq(ta->tasks[i].end, tb->tasks[i].end, "task %zu", i);
    }
}

/* Raising two ranks' checkpointing, one after the other, as SlimPack's rounds do. */
Test(sim_again, equals_a_fresh_simulation)
{
    fx f;
    vl_sim_scratch *w = NULL;
    vl_sim_trace ta = {0}, tb = {0};
    vl_sim_iter_result before, a, b;
    fx_init(&f, 4);
    three_ranks(&f, 0);
    cr_assert_eq(vl_sim_scratch_new(&w, &f.err), VL_OK);
    cr_assert_eq(vl_sim_iter(&f.p, 0, &f.c, NULL, &before, w, NULL, &f.err), VL_OK);
    par_of(&f, 0, 1)->ckpt_layers = 1;
    cr_assert_eq(vl_sim_iter_again(&f.p, 0, &f.c, NULL, &a, w, &ta, &f.err), VL_OK, "%s",
                 f.err.msg);
    cr_assert_eq(vl_sim_iter(&f.p, 0, &f.c, NULL, &b, NULL, &tb, &f.err), VL_OK);
    same(&a, &ta, &b, &tb);
    /* the change shows: recompute lengthens rank 1, its activations shrink */
    cr_assert_neq(before.iter_time_ms, a.iter_time_ms);
    par_of(&f, 0, 0)->ckpt_layers = 1;
    cr_assert_eq(vl_sim_iter_again(&f.p, 0, &f.c, NULL, &a, w, &ta, &f.err), VL_OK);
    cr_assert_eq(vl_sim_iter(&f.p, 0, &f.c, NULL, &b, NULL, &tb, &f.err), VL_OK);
    same(&a, &ta, &b, &tb);
    vl_sim_trace_free(&ta);
    vl_sim_trace_free(&tb);
    vl_sim_scratch_free(w);
    fx_fini(&f);
}

/* After another iteration (or other options) the scratch holds nothing to reuse:
 * vl_sim_iter_again simulates afresh. */
Test(sim_again, another_iteration_simulates_afresh)
{
    fx f;
    vl_sim_scratch *w = NULL;
    vl_sim_trace ta = {0}, tb = {0};
    vl_sim_iter_result a, b, r;
    vl_sim_opts gpipe = {.sched = VL_SCHED_GPIPE};
    fx_init(&f, 4);
    three_ranks(&f, 0);
    three_ranks(&f, 1);
    par_of(&f, 1, 2)->ckpt_layers = 1;
    cr_assert_eq(vl_sim_scratch_new(&w, &f.err), VL_OK);
    cr_assert_eq(vl_sim_iter(&f.p, 0, &f.c, NULL, &r, w, NULL, &f.err), VL_OK);
    cr_assert_eq(vl_sim_iter_again(&f.p, 1, &f.c, NULL, &a, w, &ta, &f.err), VL_OK);
    cr_assert_eq(vl_sim_iter(&f.p, 1, &f.c, NULL, &b, NULL, &tb, &f.err), VL_OK);
    same(&a, &ta, &b, &tb);
    cr_assert_eq(vl_sim_iter_again(&f.p, 1, &f.c, &gpipe, &a, w, &ta, &f.err), VL_OK);
    cr_assert_eq(vl_sim_iter(&f.p, 1, &f.c, &gpipe, &b, NULL, &tb, &f.err), VL_OK);
    same(&a, &ta, &b, &tb);
    cr_assert_eq(vl_sim_iter_again(&f.p, 5, &f.c, NULL, &a, w, NULL, &f.err), VL_EUSAGE);
    vl_sim_trace_free(&ta);
    vl_sim_trace_free(&tb);
    vl_sim_scratch_free(w);
    fx_fini(&f);
}
