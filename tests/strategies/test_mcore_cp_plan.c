/* tests/strategies/test_mcore_cp_plan.c -- mcore_cp plans end to end: on seeded random batches every
 * plan passes vl_plan_verify (every token once, sums, shared copies identical, modelled
 * memory) and is the same plan twice; its shape is Megatron's (one sample per pack, a
 * sample on a contiguous power-of-two set of hdp ranks at least gpus_needed wide, every
 * rank busy in every group); the refusals Megatron makes (pp > 1, a DP×CP group that is
 * not a power of two, micro-step gradient reduction); max_seqlen_per_rank auto; the
 * longest sample; and CP communication charged by the simulator. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gen.h"
#include "planio.h"
#include "mcore_cp_impl.h"
#include "rng.h"
#include "run.h"
#include "sim.h"
#include "testutil.h"
#include "verify.h"

extern const vl_strategy vl_strategy_mcore_cp;

typedef struct setup {
    int dp, sp, tp;
    uint32_t per_rank;      /* 0: auto */
    const char *dist;
    size_t n;
    uint32_t batch;
    const char *extra;      /* one more key=value, or NULL */
} setup;

static vl_status config(vl_config *cfg, const setup *u, vl_err *err)
{
    char sets[10][96];
    int k = 0, tp = u->tp > 1 ? u->tp : 1;
    static const char *const fixed[] = {
        "model.preset=qwen2.5-0.5b", "cluster.gpus_per_node=8", "training.sp_kind=ring",
        "training.max_seq_len=262144", "training.oversize=drop", "training.zero=2",
        "training.recompute=selective", NULL};
    vl_status st;

    snprintf(sets[k++], 96, "cluster.gpus=%d", u->dp * u->sp * tp);
    snprintf(sets[k++], 96, "training.dp=%d", u->dp);
    snprintf(sets[k++], 96, "training.sp=%d", u->sp);
    snprintf(sets[k++], 96, "training.tp=%d", tp);
    snprintf(sets[k++], 96, "training.global_batch=%u", u->batch);
    if (u->per_rank)
        snprintf(sets[k++], 96, "mcore_cp.max_seqlen_per_rank=%u", u->per_rank);
    if (u->extra)
        snprintf(sets[k++], 96, "%s", u->extra);
    if ((st = vl_config_init_default(cfg, err)) != VL_OK)
        return st;
    for (size_t i = 0; fixed[i] && st == VL_OK; i++)
        st = vl_config_set(cfg, fixed[i], err);
    for (int i = 0; i < k && st == VL_OK; i++)
        st = vl_config_set(cfg, sets[i], err);
    if (st == VL_OK)
        st = vl_config_finalize(cfg, err);
    return st;
}

/* Plan; *barrier_ms (when not NULL) gets the -v figure of Megatron's step time with its
 * group barriers, per iteration. */
static vl_status plan_log(vl_plan *p, vl_manifest *m, const vl_config *cfg,
                          double *barrier_ms, vl_err *err)
{
    vl_run_opts o = {.seed = 11, .verbose = 1};
    vl_run_result res;
    vl_status st = vl_run_plan(p, &vl_strategy_mcore_cp, m, cfg, &o, &res, err);
    if (st == VL_OK) {
        const char *at = res.log ? strstr(res.log, "group barriers ") : NULL;
        if (barrier_ms)
            *barrier_ms = at ? strtod(at + strlen("group barriers "), NULL) : -1.0;
        free(res.log);
    }
    return st;
}

static vl_status plan(vl_plan *p, vl_manifest *m, const vl_config *cfg, vl_err *err)
{
    return plan_log(p, m, cfg, NULL, err);
}

static void verify_all(const vl_plan *p, const vl_config *cfg)
{
    vl_verify_report rep;
    vl_cost c;
    vl_err err;
    cr_assert_eq(vl_cost_init(&c, cfg, &err), VL_OK, "%s", err.msg);
    cr_assert_eq(vl_plan_verify(p, &c, &vl_registry_rules, &rep, &err), VL_OK, "%s",
                 rep.nmsgs ? rep.msgs[0] : err.msg);
}

/* Megatron's shape: whole samples one per pack; a shared pack's members are k contiguous
 * hdp ranks in order, k a power of two >= gpus_needed; every rank runs a pack. */
static void check_shape(const vl_plan *p, uint32_t per_rank, int pool)
{
    for (size_t it = 0; it < p->niters; it++) {
        const vl_iter *in = &p->iters[it];
        cr_assert_eq(in->nranks, (uint32_t)pool);
        for (uint32_t r = 0; r < in->nranks; r++) {
            const vl_rank *rk = &p->ranks[in->rank0 + r];
            cr_assert_eq(rk->dp, (int32_t)r);
            cr_assert(rk->par.sp == 1 && rk->par.pp == 1 && rk->nbwd == 0 && rk->nop == 0);
            cr_assert_geq(rk->nmb, 1, "iteration %zu rank %u idle", it, r);
            for (uint32_t j = 0; j < rk->nmb; j++) {
                const vl_mb *mb = &p->mbs[rk->mb0 + j];
                const vl_seg *s = &p->segs[mb->seg0];
                uint32_t k;
                const int32_t *mem = vl_plan_mb_members(p, mb, &k);
                if (mb->nseg == 0) {   /* a barrier: every rank, in order, no tokens */
                    cr_assert(mb->cap == 0 && k == (uint32_t)pool && pool > 1);
                    for (uint32_t i = 0; i < k; i++)
                        cr_assert_eq(mem[i], (int32_t)i);
                    continue;
                }
                cr_assert_eq(mb->nseg, 1);
                cr_assert(s->off == 0 && s->len == p->m->len[s->sample] && mb->cap == s->len);
                k = k ? k : 1;
                cr_assert_eq(k & (k - 1), 0, "a set of %u ranks", k);
                cr_assert_geq(k, vl__mc_gpus_needed(s->len, per_rank));
                for (uint32_t i = 1; mem && i < k; i++)
                    cr_assert_eq(mem[i], mem[0] + (int32_t)i, "members not contiguous");
                if (mem)
                    cr_assert(mem[0] <= rk->dp && rk->dp < mem[0] + (int32_t)k);
            }
        }
    }
}

static bool same_plan(const vl_plan *a, const vl_plan *b)
{
    /* no memcmp of a NULL array (no members on one GPU), even for 0 bytes */
    return a->nsegs == b->nsegs && a->nmbs == b->nmbs && a->nmembers == b->nmembers &&
           (a->nsegs == 0 || memcmp(a->segs, b->segs, a->nsegs * sizeof *a->segs) == 0) &&
           (a->nmembers == 0 ||
            memcmp(a->members, b->members, a->nmembers * sizeof *a->members) == 0);
}

Test(mcore_cp_plan, properties_on_random_batches)
{
    static const char *const dists[] = {"wikipedia", "lmsys", "chatqa2-long"};
    static const int pools[][2] = {{1, 1}, {2, 1}, {1, 4}, {4, 2}, {2, 8}, {4, 8}};
    vl_rng rng;

    vl_rng_seed(&rng, 2025, 0);
    for (int trial = 0; trial < 18; trial++) {
        const int *pl = pools[vl_rng_below(&rng, 6)];
        setup u = {.dp = pl[0], .sp = pl[1], .tp = 1 + (int)vl_rng_below(&rng, 2),
                   .per_rank = 1024 + (uint32_t)vl_rng_below(&rng, 16000),
                   .dist = dists[trial % 3], .n = 300,
                   .batch = 8 + (uint32_t)vl_rng_below(&rng, 120)};
        vl_config cfg;
        vl_manifest *m = tu_gen_manifest(u.dist, u.n, 300 + (uint64_t)trial);
        vl_plan a, b;
        vl_err err;
        cr_assert_eq(config(&cfg, &u, &err), VL_OK, "%s", err.msg);
        cr_assert_eq(plan(&a, m, &cfg, &err), VL_OK, "trial %d: %s", trial, err.msg);
        verify_all(&a, &cfg);
        check_shape(&a, u.per_rank, u.dp * u.sp);
        cr_assert_eq(plan(&b, m, &cfg, &err), VL_OK);
        cr_assert(same_plan(&a, &b), "trial %d: same seed, same plan", trial);
        vl_plan_free(&a);
        vl_plan_free(&b);
        vl_manifest_free(m);
        vl_config_free(&cfg);
    }
}

/* A sample over max_seqlen_per_rank · DP·CP is what training.oversize decides (drop);
 * one exactly at the limit runs on every GPU. */
Test(mcore_cp_plan, longest_sample_is_per_rank_times_the_pool)
{
    setup u = {.dp = 2, .sp = 2, .per_rank = 1000, .batch = 4};
    uint32_t len[] = {4000, 4001, 10, 20};
    vl_manifest *m = NULL;
    vl_config cfg;
    vl_plan p;
    vl_err err;
    cr_assert_eq(vl_manifest_from_lengths(&m, len, 4, &err), VL_OK);
    cr_assert_eq(config(&cfg, &u, &err), VL_OK, "%s", err.msg);
    cr_assert_eq(vl_strategy_mcore_cp.max_len(&(vl_mc_opts){1000, 0.05, 1.1, true}, &cfg), 4000);
    cr_assert_eq(plan(&p, m, &cfg, &err), VL_OK, "%s", err.msg);
    verify_all(&p, &cfg);
    cr_assert_eq(p.ndrops, 1);
    cr_assert_eq(p.drops[0].sample, 1);
    cr_assert_eq(p.niters, 1);
    check_shape(&p, 1000, 4);
    /* the 4000-token sample first, on all four GPUs, then the short ones */
    cr_assert_eq(p.segs[p.mbs[p.ranks[0].mb0].seg0].sample, 0);
    vl_plan_free(&p);
    vl_manifest_free(m);
    vl_config_free(&cfg);
}

/* Under Ulysses a sample's heads are scattered over its CP group: qwen2.5-0.5b's 2 KV
 * heads (14 heads) split over at most 2 GPUs, so no set grows past 2 (Megatron's
 * fill_empty_gpus would double them to all 8) and the longest sample is per_rank x 2;
 * the plan verifies, which checks every group against the heads. */
Test(mcore_cp_plan, ulysses_caps_cp_groups_at_the_heads)
{
    setup u = {.dp = 8, .sp = 1, .per_rank = 1000, .batch = 4,
               .extra = "training.sp_kind=ulysses"};
    uint32_t len[] = {8000, 2000, 1500, 10};
    vl_manifest *m = NULL;
    vl_config cfg;
    vl_plan p;
    vl_err err;
    cr_assert_eq(vl_manifest_from_lengths(&m, len, 4, &err), VL_OK);
    cr_assert_eq(config(&cfg, &u, &err), VL_OK, "%s", err.msg);
    cr_assert_eq(vl_strategy_mcore_cp.max_len(&(vl_mc_opts){1000, 0.05, 1.1, true}, &cfg), 2000);
    cr_assert_eq(plan(&p, m, &cfg, &err), VL_OK, "%s", err.msg);
    verify_all(&p, &cfg);
    cr_assert_eq(p.ndrops, 1);
    for (size_t j = 0; j < p.nmbs; j++) {
        uint32_t k;
        vl_plan_mb_members(&p, &p.mbs[j], &k);
        cr_assert(p.mbs[j].nseg == 0 || k <= 2, "a sample on %u GPUs", k);
    }
    vl_plan_free(&p);
    vl_manifest_free(m);
    vl_config_free(&cfg);
}

static void refused(const setup *u, const char *needle)
{
    vl_config cfg;
    vl_err err;
    vl_mc_opts o = {u->per_rank, 0.05, 1.1, true};
    if (config(&cfg, u, &err) != VL_OK) {   /* the config itself may refuse it */
        vl_config_free(&cfg);
        return;
    }
    cr_assert_eq(vl_strategy_mcore_cp.validate(&o, &cfg, &err), VL_ECONFIG);
    cr_assert_not_null(strstr(err.msg, needle), "%s", err.msg);
    vl_config_free(&cfg);
}

Test(mcore_cp_plan, refuses_what_megatron_refuses)
{
    setup three = {.dp = 3, .sp = 1, .batch = 8};
    setup micro = {.dp = 2, .sp = 2, .batch = 8, .extra = "training.dp_sync=micro_step"};
    setup big = {.dp = 2, .sp = 2, .batch = 8, .per_rank = 2000000000u};
    setup huge = {.dp = 256, .sp = 8, .batch = 4096};
    vl_config cfg;
    vl_err err;
    vl_mc_opts o = {0, 0.05, 1.1, true};

    refused(&three, "power of two");
    refused(&micro, "dp_sync");
    refused(&big, "do not fit");
    refused(&huge, "past the 1024");
    cr_assert_eq(vl_config_init_default(&cfg, &err), VL_OK);
    cr_assert_eq(vl_config_set(&cfg, "cluster.gpus=4", &err), VL_OK);
    cr_assert_eq(vl_config_set(&cfg, "training.pp=2", &err), VL_OK);
    cr_assert_eq(vl_config_finalize(&cfg, &err), VL_OK, "%s", err.msg);
    cr_assert_eq(vl_strategy_mcore_cp.validate(&o, &cfg, &err), VL_ECONFIG);
    cr_assert_not_null(strstr(err.msg, "pipeline"), "%s", err.msg);
    vl_config_free(&cfg);
}

/* auto = what one GPU holds beside its states (the same figure Skrull's BucketSize
 * uses); an explicit smaller value is kept, and the header records the resolved one. */
Test(mcore_cp_plan, per_rank_auto_from_the_memory_model)
{
    setup u = {.dp = 4, .sp = 8, .batch = 64, .dist = "lmsys", .n = 128};
    vl_config cfg;
    vl_cost c;
    vl_err err;
    vl_plan p;
    vl_manifest *m = tu_gen_manifest(u.dist, u.n, 3);
    vl_par par = {.tp = 1, .pp = 1, .sp = 1, .ckpt_layers = 0};
    char want[64];
    cr_assert_eq(config(&cfg, &u, &err), VL_OK, "%s", err.msg);
    cr_assert_eq(vl_cost_init(&c, &cfg, &err), VL_OK);
    uint32_t fits = vl__mc_auto_per_rank(&c, &par, 32);
    cr_assert(fits > 4096 && fits < 1000000, "auto %u", fits);
    /* the fullest GPU holds fits tokens: the states plus fits tokens fit, one more not */
    cr_assert_leq(vl_cost_state_bytes(&c, &par, 32, 24, 1, 1) +
                      vl_cost_act_bytes(&c, fits, &par, 24, 1), vl_cost_mem_capacity(&c));
    cr_assert_eq(plan(&p, m, &cfg, &err), VL_OK, "%s", err.msg);
    snprintf(want, sizeof want, "\"max_seqlen_per_rank\":%u", fits);
    cr_assert_not_null(strstr(p.params_json, want), "%s", p.params_json);
    vl_plan_free(&p);
    vl_manifest_free(m);
    vl_config_free(&cfg);
}

/* CP communication is charged: the same plan simulated with cost.comm off is faster
 * when samples run on sets of several GPUs. */
Test(mcore_cp_plan, cp_communication_is_charged)
{
    setup u = {.dp = 2, .sp = 4, .per_rank = 2048, .batch = 32, .dist = "chatqa2-long",
               .n = 64};
    setup off = u;
    vl_config cfg, cfg_off;
    vl_manifest *m = tu_gen_manifest(u.dist, u.n, 9);
    vl_plan p;
    vl_cost c, c_off;
    vl_sim_summary on_s, off_s;
    vl_err err;
    off.extra = "cost.comm=false";
    cr_assert_eq(config(&cfg, &u, &err), VL_OK, "%s", err.msg);
    cr_assert_eq(config(&cfg_off, &off, &err), VL_OK, "%s", err.msg);
    cr_assert_eq(plan(&p, m, &cfg, &err), VL_OK, "%s", err.msg);
    cr_assert_gt(p.nshares, 0, "some sample runs over several GPUs");
    cr_assert_eq(vl_cost_init(&c, &cfg, &err), VL_OK);
    cr_assert_eq(vl_cost_init(&c_off, &cfg_off, &err), VL_OK);
    cr_assert_eq(vl_sim_plan(&p, &c, NULL, &on_s, &err), VL_OK, "%s", err.msg);
    cr_assert_eq(vl_sim_plan(&p, &c_off, NULL, &off_s, &err), VL_OK, "%s", err.msg);
    cr_assert_gt(on_s.total_time_s, off_s.total_time_s);
    vl_plan_free(&p);
    vl_manifest_free(m);
    vl_config_free(&cfg);
    vl_config_free(&cfg_off);
}

/* With the barriers the simulated iteration is exactly Megatron's: over the groups, the
 * slowest set, plus the gradient reduction (the strategy's own figure from the cost
 * model); every rank has one barrier fewer than groups.  Without them a rank may run
 * ahead into the next group, so the simulation is no slower. */
Test(mcore_cp_plan, barriers_make_the_simulation_megatron_s_group_sum)
{
    setup u = {.dp = 2, .sp = 8, .per_rank = 4096, .batch = 64, .dist = "chatqa2-long",
               .n = 256};
    setup off = u;
    vl_config cfg, cfg_off;
    vl_manifest *m = tu_gen_manifest(u.dist, u.n, 21);
    vl_plan p, q;
    vl_cost c;
    vl_sim_summary on_s, off_s;
    double want;
    vl_err err;
    off.extra = "mcore_cp.barrier=off";
    cr_assert_eq(config(&cfg, &u, &err), VL_OK, "%s", err.msg);
    cr_assert_eq(config(&cfg_off, &off, &err), VL_OK, "%s", err.msg);
    cr_assert_eq(plan_log(&p, m, &cfg, &want, &err), VL_OK, "%s", err.msg);
    cr_assert_eq(plan(&q, m, &cfg_off, &err), VL_OK, "%s", err.msg);
    verify_all(&p, &cfg);
    verify_all(&q, &cfg_off);
    cr_assert_gt(p.nmbs, q.nmbs, "the barriers are packs");
    for (size_t it = 0; it < p.niters; it++) {
        uint32_t bars = 0;
        for (uint32_t r = 0; r < p.iters[it].nranks; r++) {
            const vl_rank *rk = &p.ranks[p.iters[it].rank0 + r];
            uint32_t b = 0;
            for (uint32_t j = 0; j < rk->nmb; j++)
                b += p.mbs[rk->mb0 + j].nseg == 0;
            cr_assert(r == 0 || b == bars, "iteration %zu: ranks disagree on barriers", it);
            bars = b;
        }
    }
    cr_assert_eq(vl_cost_init(&c, &cfg, &err), VL_OK);
    cr_assert_eq(vl_sim_plan(&p, &c, NULL, &on_s, &err), VL_OK, "%s", err.msg);
    cr_assert_eq(vl_sim_plan(&q, &c, NULL, &off_s, &err), VL_OK, "%s", err.msg);
    cr_assert_gt(want, 0.0);
    /* Megatron's group sum is the propagation: the optimizer step comes after it */
    double opt_ms = on_s.epoch_optimizer_s * on_s.epochs / (double)on_s.iterations * 1e3;
    cr_assert_float_eq(on_s.iter_time_ms.mean - opt_ms, want, 1e-3 + want * 1e-6,
                       "simulated %.6f ms, Megatron's group sum %.6f ms",
                       on_s.iter_time_ms.mean - opt_ms, want);
    cr_assert_leq(off_s.total_time_s, on_s.total_time_s * (1 + 1e-12));
    vl_plan_free(&p);
    vl_plan_free(&q);
    vl_manifest_free(m);
    vl_config_free(&cfg);
    vl_config_free(&cfg_off);
}

/* A pool of 128 GPUs: barriers and the widest samples are shared by 128 ranks; the file
 * is read back with every member (the readers once stopped at 64). */
Test(mcore_cp_plan, more_than_64_sharers_survive_a_file)
{
    setup u = {.dp = 16, .sp = 8, .per_rank = 512, .batch = 256, .dist = "chatqa2-long",
               .n = 512};
    vl_config cfg;
    vl_manifest *m = tu_gen_manifest(u.dist, u.n, 4);
    vl_plan p, q;
    vl_plan_file f;
    vl_err err;
    char *dir = tu_tmpdir(), *path = tu_path(dir, "mc128.jsonl");
    uint32_t widest = 0;
    cr_assert_eq(config(&cfg, &u, &err), VL_OK, "%s", err.msg);
    cr_assert_eq(plan(&p, m, &cfg, &err), VL_OK, "%s", err.msg);
    for (size_t i = 0; i < p.nshares; i++)
        widest = p.shares[i].n > widest ? p.shares[i].n : widest;
    cr_assert_eq(widest, 128);
    cr_assert_eq(vl_plan_write_file(&p, path, &err), VL_OK, "%s", err.msg);
    cr_assert_eq(vl_plan_read(&q, &f, path, m, &err), VL_OK, "%s", err.msg);
    cr_assert(q.nmembers == p.nmembers &&
              memcmp(q.members, p.members, p.nmembers * sizeof *p.members) == 0);
    verify_all(&q, &cfg);
    vl_plan_free(&q);
    vl_plan_free(&p);
    vl_manifest_free(m);
    vl_config_free(&cfg);
    free(path);
    free(dir);
}
