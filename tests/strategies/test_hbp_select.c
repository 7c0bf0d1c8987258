/* tests/strategies/test_hbp_select.c -- HBP group selection: from measured rows (paper Table 19,
 * in C, in YAML and from --set), profile errors with their locations, long hbp.groups
 * lists, and the paper-shaped metrics and step time on tulu3-longcite. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gen.h"
#include "hbp_fixture.h"
#include "metrics.h"
#include "sim.h"

/* ---- selection from measured rows: the paper's Table 19 --------------------------- */

Test(hbp, profile_selection_table19)
{
    static const hbp_prof rows[] = {
        {8192, 2, 8, 2.69},     {16384, 1, 28, 2.65}, {32768, 8, 8, 2.83},
        {65536, 4, 28, 3.01},   {131072, 8, 28, 3.05}, {131072, 4, 32, 9.99},
        {16384, 2, 20, 2.80},
    };
    vl_config cfg;
    vl_cost cost;
    vl_err err;
    hbp_opts o = {.groups = "auto", .candidates = "8K", .sp_degrees = "1,2,4,8"};
    hbp_groups gs;
    hbp_log lg = {.job = NULL};

    cr_assert_eq(vl_config_init_default(&cfg, &err), VL_OK);
    cr_assert_eq(vl_config_set(&cfg, "training.max_seq_len=131072", &err), VL_OK, "%s",
                 err.msg);
    cr_assert_eq(vl_config_finalize(&cfg, &err), VL_OK, "%s", err.msg);
    cr_assert_eq(vl_cost_init(&cost, &cfg, &err), VL_OK);
    cr_assert_eq(vl__hbp_profile_check(rows, 7, &cfg, &err), VL_OK, "%s", err.msg);
    hbp_sel_in in = {.cfg = &cfg, .cost = &cost, .budget = 524288, .prof = rows,
                     .nprof = 7};
    cr_assert_eq(vl__hbp_select(&gs, &o, &in, &lg, &err), VL_OK, "%s", err.msg);
    /* l_best 16K at sp 1 -> l1 = 16K; l_max 128K at sp 8 -> l2 = 16K, merged */
    cr_assert_eq(gs.n, 2);
    cr_assert(gs.g[0].len == 16384 && gs.g[0].par.sp == 1 && gs.g[0].par.ckpt_layers == 28);
    cr_assert(gs.g[1].len == 131072 && gs.g[1].par.sp == 8 &&
              gs.g[1].par.ckpt_layers == 28);
    cr_assert_eq(gs.g[0].ranks, 32);
    cr_assert_eq(gs.g[1].ranks, 4);

    static const double raw[] = {16384, 1, 28, 2.65, 131072, 8, 28, 3.05};
    static const double raw_bad[] = {16384.5, 1, 28, 2.65};
    hbp_prof *conv;
    cr_assert_eq(vl__hbp_profile_rows(&conv, raw, 2, &cfg, &err), VL_OK, "%s", err.msg);
    cr_assert(conv[1].len == 131072 && conv[1].sp == 8 && conv[1].ckpt == 28);
    free(conv);
    cr_assert_eq(vl__hbp_profile_rows(&conv, raw_bad, 1, &cfg, &err), VL_ECONFIG);
    cr_assert_not_null(strstr(err.msg, "hbp.profile[0].len"), "%s", err.msg);

    hbp_prof bad = {16384, 3, 0, 1.0};
    cr_assert_eq(vl__hbp_profile_check(&bad, 1, &cfg, &err), VL_ECONFIG);
    cr_assert_not_null(strstr(err.msg, "hbp.profile[0].sp"));
    in.prof = rows;
    in.nprof = 4;   /* no 128K row */
    cr_assert_eq(vl__hbp_select(&gs, &o, &in, &lg, &err), VL_ECONFIG);
    cr_assert_not_null(strstr(err.msg, "max_seq_len"));
    vl_config_free(&cfg);
}

/* The same rows as a YAML hbp.profile, planned end to end: the paper's choice, [16K,
 * 128K] with sp [1, 8] (Table 19), in the ranks and in the header's hbp.groups. */
#define T19_CFG "training: {max_seq_len: 131072, global_tokens: 524288}\n"
#define T19_ROWS                                                                      \
    "hbp:\n  profile:\n"                                                              \
    "    - {len: 8192, sp: 2, ckpt_layers: 8, time_s: 2.69}\n"                         \
    "    - {len: 16384, sp: 1, ckpt_layers: 28, time_s: 2.65}\n"                       \
    "    - {len: 32768, sp: 8, ckpt_layers: 8, time_s: 2.83}\n"                        \
    "    - {len: 65536, sp: 4, ckpt_layers: 28, time_s: 3.01}\n"                       \
    "    - len: 131072\n      sp: 8\n      ckpt_layers: 28\n      time_s: 3.05\n"       \
    "    - {len: 131072, sp: 4, ckpt_layers: 32, time_s: 9.99}\n"                      \
    "    - {len: 16384, sp: 2, ckpt_layers: 20, time_s: 2.80}\n"

static void expect_t19_plan(const fx *f)
{
    bool seen[2] = {false, false};

    for (size_t k = 0; k < f->p.nranks; k++) {
        const vl_rank *r = &f->p.ranks[k];
        cr_assert(r->group == 0 || r->group == 1, "group %d", r->group);
        cr_assert_eq(r->par.sp, r->group ? 8 : 1);
        cr_assert_eq(r->par.ckpt_layers, 28);
        cr_assert_eq(f->p.mbs[r->mb0].cap, r->group ? 131072u : 16384u);
        seen[r->group] = true;
    }
    cr_assert(seen[0] && seen[1], "groups seen: %d %d (%zu ranks)", seen[0], seen[1],
              f->p.nranks);
    cr_assert_not_null(strstr(f->p.params_json, "\"groups\":\"16K:1:28,128K:8:28\""), "%s",
                       f->p.params_json);
}

/* Mostly 1K..16K samples, every 50th one 100K: both groups keep samples after
 * GreedyFill. */
static uint32_t *t19_lengths(size_t n)
{
    uint32_t *len = malloc(n * sizeof *len);

    for (size_t i = 0; i < n; i++)
        len[i] = i % 50 == 0 ? 100000 + (uint32_t)i : 1000 + (uint32_t)(i * 37 % 15000);
    return len;
}

Test(hbp, profile_from_yaml_table19)
{
    size_t n = 6000;
    uint32_t *len = t19_lengths(n);
    fx f;

    cr_assert_eq(run_strategy(&f, &vl_strategy_hbp, len, n, T19_CFG T19_ROWS, 3, 1), VL_OK,
                 "%s", f.err.msg);
    expect_t19_plan(&f);
    cr_assert_not_null(strstr(f.log, "7 measured rows (hbp.profile)\n"), "%s", f.log);
    cr_assert_null(strstr(f.log, "stage 1"), "%s", f.log);   /* no cost-model table */
    cr_assert_null(strstr(f.p.params_json, "profile"));     /* it is in the config */
    cr_assert_not_null(strstr(f.p.config_json, "\"profile\":[{\"len\":8192,"), "%s",
                       f.p.config_json);
    fx_free(&f);
    /* the same from --set, flow YAML, the two rows that matter */
    cr_assert_eq(run_set(&f, &vl_strategy_hbp, len, n, T19_CFG,
                         "hbp.profile=[{len: 16384, sp: 1, ckpt_layers: 28, time_s: 2.65}, "
                         "{len: 131072, sp: 8, ckpt_layers: 28, time_s: 3.05}]", 3, 0),
                 VL_OK, "%s", f.err.msg);
    expect_t19_plan(&f);
    fx_free(&f);
    /* given groups win; the profile is still checked but not used */
    cr_assert_eq(run_strategy(&f, &vl_strategy_hbp, len, n,
                              T19_CFG T19_ROWS "  groups: '32K:2,128K:8'\n", 3, 1),
                 VL_OK, "%s", f.err.msg);
    cr_assert_not_null(strstr(f.log, "unused: hbp.groups is given"), "%s", f.log);
    cr_assert_not_null(strstr(f.p.params_json, "\"groups\":\"32K:2,128K:8\""), "%s",
                       f.p.params_json);
    fx_free(&f);
    free(len);
}

Test(hbp, profile_errors_have_locations)
{
    static const struct {
        const char *rows, *msg;
    } cases[] = {
        /* shape and types: bind, with FILE:LINE:COL */
        {"hbp: {profile: 16K}\n",
         "test.yaml:2:16: hbp.profile: expected a list of mappings of len, sp, ckpt_layers, "
         "time_s, got '16K'"},
        {"hbp:\n  profile:\n    - 131072\n",
         "test.yaml:4:7: hbp.profile[0]: expected a mapping of len, sp, ckpt_layers, time_s, "
         "got '131072'"},
        {"hbp:\n  profile:\n    - {len: 131072, sp: 8, ckpt_layer: 28, time_s: 3}\n",
         "test.yaml:4:28: hbp.profile[0].ckpt_layer: unknown column, did you mean "
         "'ckpt_layers'?"},
        {"hbp:\n  profile:\n    - {len: 131072, sp: 8, time_s: 3}\n",
         "test.yaml:4:7: hbp.profile[0]: missing column 'ckpt_layers' (a row has len, sp, "
         "ckpt_layers, time_s)"},
        {"hbp:\n  profile:\n    - {len: 131072, sp: 8, ckpt_layers: 28, time_s: 3}\n"
         "    - {len: 16K, sp: 1, ckpt_layers: 28, time_s: 3}\n",
         "test.yaml:5:13: hbp.profile[1].len: expected a number, got '16K'"},
        {"hbp:\n  profile:\n    - {len: 131072, sp: 8, ckpt_layers: -1, time_s: 3}\n",
         "test.yaml:4:41: hbp.profile[0].ckpt_layers: expected 0..1e+12, got -1"},
        /* ranges that depend on the configuration: HBP's own check, by row index */
        {"hbp:\n  profile:\n    - {len: 131072, sp: 3, ckpt_layers: 28, time_s: 3}\n",
         "hbp.profile[0].sp: 3 is not usable with 32 GPUs, tp 1, pp 1 and 8 KV heads"},
        {"hbp:\n  profile:\n    - {len: 2.5, sp: 8, ckpt_layers: 28, time_s: 3}\n",
         "hbp.profile[0].len: expected a positive integer, got 2.5"},
        {"hbp:\n  profile:\n    - {len: 131072, sp: 8, ckpt_layers: 40, time_s: 3}\n",
         "hbp.profile[0].ckpt_layers: expected 0..32, got 40"},
        {"hbp:\n  profile:\n    - {len: 131072, sp: 8, ckpt_layers: 28, time_s: 0}\n",
         "hbp.profile[0].time_s: expected > 0"},
        {"hbp:\n  profile:\n    - {len: 16384, sp: 1, ckpt_layers: 28, time_s: 3}\n",
         "hbp.profile: no row with len = training.max_seq_len (131072)"},
    };
    uint32_t len[16];
    fx f;

    for (size_t i = 0; i < 16; i++)
        len[i] = 1000 + 7000 * (uint32_t)i;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char yaml[512];
        snprintf(yaml, sizeof yaml, T19_CFG "%s", cases[i].rows);
        vl_status st = run_hbp(&f, len, 16, yaml, 1);
        cr_assert_eq(st, VL_ECONFIG, "case %zu: status %d (%s)", i, st, f.err.msg);
        cr_assert_str_eq(f.err.msg, cases[i].msg, "case %zu: %s", i, f.err.msg);
        fx_free(&f);
    }
    /* from --set: no line:col, the assignment named instead */
    cr_assert_eq(run_set(&f, &vl_strategy_hbp, len, 16, T19_CFG,
                         "hbp.profile=[{len: 131072, sp: 8, ckpt_layers: 28}]", 1, 0),
                 VL_ECONFIG);
    cr_assert_str_eq(f.err.msg, "--set hbp.profile=[{len: 131072, sp: 8, ckpt_layers: 28}]: "
                                "hbp.profile[0]: missing column 'time_s' (a row has len, "
                                "sp, ckpt_layers, time_s)");
    fx_free(&f);
}

/* hbp.groups is a VL_P_TEXT: longer than the 47 characters of a name. */
Test(hbp, long_groups_list)
{
    static const char groups[] = "1K:1,2K:1,3K:1,4K:1,6K:1,8K:1,12K:1,16K:1,24K:2,32K:2";
    size_t n = 3000;
    uint32_t *len = mixed_lengths(n, 32768, 21);
    char yaml[400];
    int32_t maxg = 0;
    fx f;

    cr_assert_gt(strlen(groups), VL_NAME_MAX);
    snprintf(yaml, sizeof yaml, SMALL_CFG "hbp: {groups: '%s'}\n", groups);
    cr_assert_eq(run_hbp(&f, len, n, yaml, 2), VL_OK, "%s", f.err.msg);
    for (size_t k = 0; k < f.p.nranks; k++)
        if (f.p.ranks[k].group > maxg)
            maxg = f.p.ranks[k].group;
    cr_assert_eq(maxg, 9);
    cr_assert_not_null(strstr(f.p.params_json, groups), "%s", f.p.params_json);
    fx_free(&f);
    free(len);
}

/* ---- stage 2, the curriculum and the token budget, through the runner ------------- */

/* The group (index into the plan's groups) of length len, or -1. */
static int group_sp(const vl_plan *p, uint32_t len)
{
    for (size_t k = 0; k < p->nranks; k++) {
        const vl_rank *rk = &p->ranks[k];
        if (rk->nmb > 0 && p->mbs[rk->mb0].cap == len)
            return rk->par.sp;
    }
    return -1;
}

Test(hbp, stage2_groups_run_at_sp1)
{
    /* only SP 2 in stage 1: l_best and l_max (32K) run at 2, so l1 = l_best / 2 and
     * l2 = 16K exist; the paper trains those at SP 1 ("no communication overhead") */
    size_t n = 6000;
    uint32_t *len = mixed_lengths(n, 32768, 31);
    fx f;

    cr_assert_eq(run_strategy(&f, &vl_strategy_hbp, len, n, SMALL_CFG
                              "hbp: {sp_degrees: '2', candidates: '8K'}\n", 1, 1),
                 VL_OK, "%s", f.err.msg);
    cr_assert_eq(group_sp(&f.p, 4096), 1, "%s", f.log);
    cr_assert_eq(group_sp(&f.p, 16384), 1, "%s", f.log);
    cr_assert_eq(group_sp(&f.p, 32768), 2, "%s", f.log);
    cr_assert_not_null(strstr(f.log, "l1 and l2 at sp 1"), "%s", f.log);
    cr_assert_not_null(strstr(f.p.params_json, "4K:1:"), "%s", f.p.params_json);
    fx_free(&f);
    /* the free re-optimisation stays available: every group at a degree of the list */
    cr_assert_eq(run_strategy(&f, &vl_strategy_hbp, len, n, SMALL_CFG
                              "hbp: {sp_degrees: '2', candidates: '8K', stage2_sp: free}\n",
                              1, 0), VL_OK, "%s", f.err.msg);
    cr_assert_eq(group_sp(&f.p, 4096), 2);
    cr_assert_eq(group_sp(&f.p, 16384), 2);
    fx_free(&f);
    free(len);
}

Test(hbp, no_iteration_above_the_token_budget)
{
    /* 1M tokens per iteration holds every group's ranks x length, so no iteration may
     * exceed it: a group's leftover packs used to ride on its last full iteration */
    size_t n = 40000;
    uint32_t *len = malloc(n * sizeof *len);
    vl_err err;
    fx f;

    cr_assert_eq(vl_gen_lengths(len, n, "tulu3-longcite", 2, &err), VL_OK, "%s", err.msg);
    cr_assert_eq(run_strategy(&f, &vl_strategy_hbp, len, n, "cluster: {gpus: 8}\n"
                              "training: {max_seq_len: 32768, global_tokens: 1048576, "
                              "oversize: drop}\n", 3, 1), VL_OK, "%s", f.err.msg);
    for (size_t it = 0; it < f.p.niters; it++) {
        uint64_t t, l, smp;
        vl_plan_iter_totals(&f.p, it, &t, &l, &smp);
        cr_assert_leq(t, 1048576, "iteration %zu holds %llu tokens\n%s", it,
                      (unsigned long long)t, f.log);
    }
    fx_free(&f);
    free(len);
}

/* Iterations of groups shorter than the longest one present, and how many lead. */
static void count_short(const fx *f, size_t *shorts, size_t *first)
{
    uint32_t longest = 0;

    *shorts = *first = 0;
    for (size_t k = 0; k < f->p.nranks; k++)
        if (f->p.mbs[f->p.ranks[k].mb0].cap > longest)
            longest = f->p.mbs[f->p.ranks[k].mb0].cap;
    for (size_t it = 0; it < f->p.niters; it++) {
        const vl_rank *rk = &f->p.ranks[f->p.iters[it].rank0];
        bool is_short = f->p.mbs[rk->mb0].cap < longest;
        *shorts += is_short;
        if (is_short && *first == it)
            (*first)++;
    }
}

Test(hbp, curriculum_capped_and_logged)
{
    size_t n = 20000, shorts, first;
    uint32_t *len = mixed_lengths(n, 32768, 11);
    fx f;

    /* without GreedyFill the 8K group keeps its samples and has iterations */
    cr_assert_eq(run_strategy(&f, &vl_strategy_hbp, len, n,
                              SMALL_CFG "hbp: {greedy_fill: false}\n", 3, 1),
                 VL_OK, "%s", f.err.msg);
    count_short(&f, &shorts, &first);
    /* 500 asked, fewer than 1000 short iterations: at most half of them lead */
    cr_assert_gt(shorts, 0);
    cr_assert_lt(shorts, 1000);
    cr_assert_geq(first, shorts / 2);
    cr_assert_leq(first, shorts / 2 + 1, "%zu of %zu short iterations lead", first, shorts);
    char want[96];
    snprintf(want, sizeof want, "curriculum: %zu short-only iterations first (500 asked",
             shorts / 2);
    cr_assert_not_null(strstr(f.log, want), "%s", f.log);
    fx_free(&f);
    free(len);
}

/* With GreedyFill every 8K sample rides in a 32K pack: the 8K group has no iteration,
 * so nothing is shorter than the longest group present and no curriculum runs -- and
 * -v says so instead of promising one. */
Test(hbp, curriculum_with_an_empty_group_says_none)
{
    size_t n = 20000, shorts, first;
    uint32_t *len = mixed_lengths(n, 32768, 11);
    fx f;

    cr_assert_eq(run_strategy(&f, &vl_strategy_hbp, len, n, SMALL_CFG, 3, 1), VL_OK, "%s",
                 f.err.msg);
    count_short(&f, &shorts, &first);
    cr_assert_eq(shorts, 0);
    cr_assert_not_null(strstr(f.log, "curriculum: none (1 of 2 groups have iterations"),
                       "%s", f.log);
    fx_free(&f);
    free(len);
}

/* The longest group empty (no sample over 32K, a 128K group given): the 32K group is
 * then the longest present and must not lead the epoch as a "shorter" group; only 8K
 * iterations lead, at most half of them. */
Test(hbp, curriculum_skips_an_empty_longest_group)
{
    size_t n = 20000, shorts, first;
    uint32_t *len = mixed_lengths(n, 32768, 11);
    fx f;

    cr_assert_eq(run_strategy(&f, &vl_strategy_hbp, len, n, "cluster: {gpus: 8}\n"
                              "training: {max_seq_len: 131072, global_tokens: 131072}\n"
                              "hbp: {greedy_fill: false, groups: '8K:1:0,32K:4:0,128K:8:32'}\n",
                              3, 1), VL_OK, "%s", f.err.msg);
    count_short(&f, &shorts, &first);   /* 32K counts as "short" beside 128K here */
    size_t k8 = 0, lead8 = 0;
    for (size_t it = 0; it < f.p.niters; it++) {
        const vl_rank *rk = &f.p.ranks[f.p.iters[it].rank0];
        bool is8 = f.p.mbs[rk->mb0].cap == 8192;
        k8 += is8;
        if (is8 && lead8 == it)
            lead8++;
    }
    cr_assert_gt(k8, 0);
    cr_assert_eq(first, lead8, "only 8K iterations lead (%zu lead, %zu of them 8K)\n%s",
                 first, lead8, f.log);
    cr_assert_leq(lead8, k8 / 2 + 1, "%zu of %zu 8K iterations lead", lead8, k8);
    cr_assert_not_null(strstr(f.log, "then the 2 groups with iterations (of 3)"), "%s", f.log);
    fx_free(&f);
    free(len);
}

/* ---- the paper's setting: Llama-3.1-8B, 32 x H100, 128K, Tulu3 + LongCite --------- */

#define PAPER_CFG                                                                     \
    "training: {max_seq_len: 131072, global_tokens: 524288, sp: 8}\n"                 \
    "pack: {algo: isf}\n"

Test(hbp, paper_metrics_and_step_time)
{
    size_t n = 1000000;   /* the paper's ~1M samples; fewer leave the long group sparse */
    uint32_t *len = malloc(n * sizeof *len);
    vl_metrics mh, mp;
    vl_sim_summary sh, sp;
    vl_err err;
    fx h, p;

    cr_assert_eq(vl_gen_lengths(len, n, "tulu3-longcite", 1, &err), VL_OK, "%s", err.msg);
    cr_assert_eq(run_strategy(&p, vl_strategy_find("pack"), len, n, PAPER_CFG, 1, 0), VL_OK,
                 "%s", p.err.msg);
    cr_assert_eq(run_strategy(&h, &vl_strategy_hbp, len, n, PAPER_CFG, 1, 1), VL_OK, "%s",
                 h.err.msg);
    cr_assert_eq(vl_metrics_compute(&p.p, &mp, &err), VL_OK);
    cr_assert_eq(vl_metrics_compute(&h.p, &mh, &err), VL_OK);
    cr_log_info("isf/128K/sp8: abr %.4f cr %.4f dbr %.4f pr %.4f", mp.abr.mean, mp.cr.mean,
                mp.dbr.mean, mp.pr.mean);
    cr_log_info("hbp: abr %.4f cr %.4f dbr %.4f pr %.4f\n%s", mh.abr.mean, mh.cr.mean,
                mh.dbr.mean, mh.pr.mean, h.log ? h.log : "");
    cr_expect_geq(mp.cr.mean, 0.999);
    cr_expect(mp.abr.mean > 0.35 && mp.abr.mean < 0.65, "isf abr %.4f", mp.abr.mean);
    cr_expect_leq(mh.abr.mean, 0.005, "hbp abr %.4f", mh.abr.mean);
    cr_expect_leq(mh.cr.mean, 0.25, "hbp cr %.4f", mh.cr.mean);
    cr_expect_leq(mh.dbr.mean, 0.005, "hbp dbr %.4f", mh.dbr.mean);
    cr_expect_leq(mh.pr.mean, 0.01, "hbp pr %.4f", mh.pr.mean);
    /* auto-selection: a small set whose shortest group trains without SP */
    int32_t maxg = 0;
    for (size_t k = 0; k < h.p.nranks; k++) {
        if (h.p.ranks[k].group > maxg)
            maxg = h.p.ranks[k].group;
        if (h.p.ranks[k].group == 0)
            cr_expect_eq(h.p.ranks[k].par.sp, 1);
    }
    cr_expect_leq(maxg + 1, 4, "%d groups", maxg + 1);
    cr_assert_eq(vl_sim_plan(&p.p, &p.cost, NULL, &sp, &err), VL_OK, "%s", err.msg);
    cr_assert_eq(vl_sim_plan(&h.p, &h.cost, NULL, &sh, &err), VL_OK, "%s", err.msg);
    cr_log_info("epoch time: isf %.1f s%s, hbp %.1f s%s", sp.epoch_time_s,
                sp.oom ? " (OOM)" : "", sh.epoch_time_s, sh.oom ? " (OOM)" : "");
    cr_expect(!sh.oom, "hbp plan runs out of memory in the simulator");
    cr_expect_lt(sh.epoch_time_s, sp.epoch_time_s);
    fx_free(&h);
    fx_free(&p);
    free(len);
}

/* Splits plus empty micro-batches of each group and epoch (the -v log's counts) stay
 * below the group's rank count: only the group's last iteration evens out its ranks. */
static void check_evening(const char *log)
{
    int ranks[8] = {0};
    size_t lines = 0, g;

    for (const char *l = strstr(log, "hbp: group "); l; l = strstr(l + 1, "hbp: group ")) {
        int r;
        const char *c = strstr(l, "ckpt_layers ");
        if (sscanf(l, "hbp: group %zu:", &g) == 1 && g < 8 && c &&
            sscanf(c, "ckpt_layers %*d, %d ranks", &r) == 1)
            ranks[g] = r;
    }
    for (const char *l = strstr(log, "hbp: epoch "); l; l = strstr(l + 1, "hbp: epoch ")) {
        size_t splits, empties;
        const char *c = strstr(l, "iterations, ");
        if (sscanf(l, "hbp: epoch %*u group %zu", &g) != 1 || g >= 8 || !c ||
            strchr(l, '\n') < c ||
            sscanf(c, "iterations, %zu pack splits, %zu empty", &splits, &empties) != 2)
            continue;
        lines++;
        cr_assert_gt(ranks[g], 0, "%s", log);
        cr_assert_lt(splits + empties, (size_t)ranks[g], "%.*s",
                     (int)(strchr(l, '\n') - l), l);
    }
    cr_assert_gt(lines, 0, "%s", log);
}

/* Every iteration of a group holds whole rows of `ranks` packs, but the last of the group
 * in each epoch, which splits packs (or, when none can be split, runs empty
 * micro-batches) to even its ranks out.  Spreading the packs themselves evenly over the
 * iterations left most of them a few packs short of a multiple of the ranks: 15 packs on
 * 4 ranks, split or idle in every such iteration. */
Test(hbp, iterations_hold_whole_rows_of_packs)
{
    static const size_t ns[] = {29000, 29700, 30400, 31100, 31800, 32500};

    for (size_t k = 0; k < sizeof ns / sizeof *ns; k++) {
        uint32_t *len = mixed_lengths(ns[k], 32768, 5 + k);
        fx f;
        cr_assert_eq(run_strategy(&f, &vl_strategy_hbp, len, ns[k], SMALL_2EPOCHS, 3, 1),
                     VL_OK, "%s", f.err.msg);
        for (size_t it = 0; it < f.p.niters; it++) {
            const vl_iter *in = &f.p.iters[it];
            for (uint32_t r = 1; r < in->nranks; r++)
                cr_assert_eq(f.p.ranks[in->rank0 + r].nmb, f.p.ranks[in->rank0].nmb,
                             "ranks of an iteration run as many micro-batches");
        }
        check_evening(f.log);
        fx_free(&f);
        free(len);
    }
}

/* A budget below ranks x l_i: every iteration holds one pack per rank and so exceeds it;
 * the plan says how many and by how much instead of nothing. */
Test(hbp, a_budget_below_one_pack_per_rank_is_warned)
{
    size_t n = 4000;
    uint32_t *len = mixed_lengths(n, 8192, 3);
    fx f;

    cr_assert_eq(run_strategy(&f, &vl_strategy_hbp, len, n, "cluster: {gpus: 8}\n"
                              "training: {max_seq_len: 8192, global_tokens: 16384}\n", 3, 1),
                 VL_OK, "%s", f.err.msg);
    cr_assert_not_null(strstr(f.warnings, "iterations exceed the global token budget of "
                                          "16384 tokens, by up to"), "[%s]", f.warnings);
    fx_free(&f);
    free(len);
}
