/* tests/strategies/test_slimpack_plan.c -- SlimPack plans end to end through vl_run_plan: every token
 * once (vl_plan_verify), the same seed giving the same plan under every mode
 * (asymmetric on/off/auto, MILP on), a valid schedule the simulator runs, backward
 * packs within 1% of their rank's mean backward work, DP-Merge lowering the rank gap when
 * an outlier exceeds a rank's capacity, a 128-rank merge group through a file, the -v
 * candidate table, and refine critical keeping refine all's simulated iteration time. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gen.h"
#include "planio.h"
#include "run.h"
#include "sim.h"
#include "slimpack_impl.h"
#include "testutil.h"
#include "verify.h"

extern const vl_strategy vl_strategy_slimpack;

static void config(vl_config *cfg, const char *const *sets, const char *extra)
{
    vl_err err;
    cr_assert_eq(vl_config_init_default(cfg, &err), VL_OK, "%s", err.msg);
    for (size_t i = 0; sets[i] != NULL; i++)
        cr_assert_eq(vl_config_set(cfg, sets[i], &err), VL_OK, "%s: %s", sets[i], err.msg);
    if (extra)
        for (const char *s = extra; *s;) {   /* ';'-separated extra settings */
            char one[128];
            size_t n = strcspn(s, ";");
            snprintf(one, sizeof one, "%.*s", (int)n, s);
            cr_assert_eq(vl_config_set(cfg, one, &err), VL_OK, "%s: %s", one, err.msg);
            s += n + (s[n] == ';');
        }
    cr_assert_eq(vl_config_finalize(cfg, &err), VL_OK, "%s", err.msg);
}

static vl_manifest *lognormal_manifest(size_t n, uint64_t seed)
{
    return tu_gen_manifest("lognormal:7.5:1.6", n, seed);
}

static void run(vl_plan *p, vl_manifest *m, const vl_config *cfg, int verbose, char **log)
{
    vl_run_opts o = {.seed = 7, .verbose = verbose};
    vl_err err;
    vl_run_result res;
    cr_assert_eq(vl_run_plan(p, &vl_strategy_slimpack, m, cfg, &o, &res, &err), VL_OK, "%s",
                 err.msg);
    if (log)
        *log = res.log;
    else
        free(res.log);
}

/* Field by field: vl_mb has tail padding, whose bytes memcmp would compare too (under
 * ASan they differ from one allocation to the next). */
static bool mbs_equal(const vl_mb *x, const vl_mb *y)
{
    return x->seg0 == y->seg0 && x->nseg == y->nseg && x->cap == y->cap &&
           x->tokens == y->tokens && x->share == y->share;
}

static bool plans_equal(const vl_plan *a, const vl_plan *b)
{
    if (a->nsegs != b->nsegs || a->nmbs != b->nmbs || a->nranks != b->nranks ||
        a->nops != b->nops || a->niters != b->niters ||
        memcmp(a->segs, b->segs, a->nsegs * sizeof *a->segs) != 0)
        return false;
    for (size_t i = 0; i < a->nmbs; i++)
        if (!mbs_equal(&a->mbs[i], &b->mbs[i]))
            return false;
    for (size_t i = 0; i < a->nops; i++)
        if (a->ops[i].mb != b->ops[i].mb || a->ops[i].kind != b->ops[i].kind)
            return false;
    for (size_t r = 0; r < a->nranks; r++)
        if (a->ranks[r].par.ckpt_layers != b->ranks[r].par.ckpt_layers)
            return false;
    return true;
}

static const char *const small_sets[] = {
    "cluster.gpus=32", "training.tp=2", "training.pp=4", "training.dp=4",
    "training.max_seq_len=32768", "training.global_batch=128", "training.oversize=truncate",
    "training.epochs=2", NULL};

static void verify_ok(const vl_plan *p, const vl_config *cfg)
{
    vl_verify_report rep;
    vl_cost c;
    vl_err err;
    cr_assert_eq(vl_cost_init(&c, cfg, &err), VL_OK);
    cr_assert_eq(vl_plan_verify(p, NULL, &vl_registry_rules, &rep, &err), VL_OK, "%s",
                 rep.nmsgs ? rep.msgs[0] : err.msg);
    vl_sim_summary s;
    cr_assert_eq(vl_sim_plan(p, &c, NULL, &s, &err), VL_OK, "%s", err.msg);
    cr_assert_eq(s.iterations, p->niters);
    cr_assert(!s.oom);
}

Test(slimpack_plan, verifies_and_is_deterministic_in_every_mode)
{
    static const char *const modes[] = {
        "slimpack.asymmetric=on", "slimpack.asymmetric=off", "slimpack.asymmetric=auto",
        "slimpack.milp=on;slimpack.asymmetric=auto", "slimpack.micropacks=6;slimpack.slice_align=1",
        "training.zero=3", "training.global_batch=16;slimpack.asymmetric=auto", NULL};
    vl_manifest *m = lognormal_manifest(512, 3);

    m->len[7] = 32768;   /* an outlier: DP-Merge */
    for (size_t i = 0; modes[i]; i++) {
        vl_config cfg;
        vl_plan a, b;
        config(&cfg, small_sets, modes[i]);
        run(&a, m, &cfg, 0, NULL);
        run(&b, m, &cfg, 0, NULL);
        cr_assert(plans_equal(&a, &b), "%s: same seed, different plans", modes[i]);
        verify_ok(&a, &cfg);
        cr_assert_eq(a.epochs, 2);
        for (size_t r = 0; r < a.nranks; r++)
            cr_assert_gt(a.ranks[r].nop, 0, "the schedule is written into the plan");
        if (strstr(modes[i], "zero=3"))   /* one M for every rank of an iteration */
            for (size_t it = 0; it < a.niters; it++)
                for (uint32_t r = 1; r < a.iters[it].nranks; r++) {
                    const vl_rank *r0 = &a.ranks[a.iters[it].rank0];
                    cr_assert_eq(a.ranks[a.iters[it].rank0 + r].nmb, r0->nmb);
                }
        vl_plan_free(&a);
        vl_plan_free(&b);
        vl_config_free(&cfg);
    }
    vl_manifest_free(m);
}

/* Backward work of every backward pack within 1% of its rank's mean (asymmetric), at the
 * default slice_align (128) and min_slice_tokens, from few packs to many (many small
 * packs are where a 128-token block deep in a long sample is a few per cent of one). */
Test(slimpack_plan, backward_packs_within_one_percent)
{
    static const char *const modes[] = {"slimpack.micropacks=8", "slimpack.micropacks=32",
                                        "slimpack.micropacks=96", NULL};
    vl_manifest *m = lognormal_manifest(512, 5);

    m->len[11] = 32768;
    for (size_t i = 0; modes[i]; i++) {
        vl_config cfg;
        vl_plan p;
        vl_cost c;
        vl_err err;
        double worst = 0;
        config(&cfg, small_sets, modes[i]);
        cr_assert_eq(vl_cost_init(&c, &cfg, &err), VL_OK);
        run(&p, m, &cfg, 0, NULL);
        sp_coef k = vl__sp_coef(&c, &(vl_par){2, 4, 1, 0}, 32768);
        for (size_t r = 0; r < p.nranks; r++) {
            const vl_rank *rk = &p.ranks[r];
            double w[128] = {0}, sum = 0;
            uint32_t own = 0;   /* the packs summed: a merge group's shared ones are not */
            cr_assert_leq(rk->nbwd, 128);
            for (uint32_t j = 0; j < rk->nbwd; j++) {
                const vl_mb *mb = vl_plan_bwd(&p, rk, j);
                if (mb->share)
                    continue;
                for (uint32_t q = 0; q < mb->nseg; q++) {
                    const vl_seg *sg = vl_plan_mb_segs(&p, mb) + q;
                    w[j] += vl__sp_work(k.ab, k.bb, sg->off, sg->off + sg->len);
                }
                sum += w[j];
                own++;
            }
            for (uint32_t j = 0; j < rk->nbwd; j++)
                if (!vl_plan_bwd(&p, rk, j)->share)
                    worst = fmax(worst, fabs(w[j] / (sum / own) - 1));
        }
        cr_assert_leq(worst, 0.01, "%s: worst backward pack %.4f off its rank's mean",
                      modes[i], worst);
        vl_plan_free(&p);
        vl_config_free(&cfg);
    }
    vl_manifest_free(m);
}

/* The PackFlow list: after each forward one ready backward, every ready one only in a
 * burst of at least 2·pp or after the last forward; so a forward never follows a run of
 * 2..2·pp-1 backwards (the F F B B runs that left the stage before the last idle). */
Test(slimpack_plan, list_alternates_outside_bursts)
{
    vl_config cfg;
    vl_manifest *m = lognormal_manifest(512, 6);
    vl_plan p;
    size_t bursts = 0;

    m->len[5] = 32768;
    config(&cfg, small_sets, "training.epochs=1");
    run(&p, m, &cfg, 0, NULL);
    for (size_t r = 0; r < p.nranks; r++) {
        const vl_rank *rk = &p.ranks[r];
        uint32_t run_b = 0;
        for (uint32_t i = 0; i < rk->nop; i++) {
            const vl_op *op = &p.ops[rk->op0 + i];
            if (op->kind == VL_OP_B) {
                run_b++;
                continue;
            }
            cr_assert(run_b < 2 || run_b >= 8, "rank %zu: %u backwards in a row before a "
                      "forward", r, run_b);
            bursts += run_b >= 8;
            run_b = 0;
        }
    }
    cr_assert_gt(bursts, 0, "the 32K sample's slices drain in a burst");
    vl_plan_free(&p);
    vl_config_free(&cfg);
    vl_manifest_free(m);
}

/* The default memory budget: no more than best-fit packing to the context with 1F1B
 * and fitted recompute (the paper's baseline) takes, on a paper-shaped batch (13B,
 * TP 8 x PP 4 x DP 4, GitHub-like lengths at 64K, where that baseline leaves memory
 * unused: its fitted checkpointing is coarse). */
static const char *const paper_sets[] = {
    "model.preset=llama2-13b", "cluster.gpu=h800-80gb", "cluster.gpus=128", "training.tp=8",
    "training.pp=4", "training.dp=4", "training.global_batch=256",
    "training.max_seq_len=65536", "training.oversize=truncate", "training.recompute=auto",
    "pack.algo=bfd", NULL};

Test(slimpack_plan, peak_within_the_baselines)
{
    vl_manifest *m = tu_gen_manifest("mooncake-conv", 512, 1);
    const char *const names[2] = {"pack", "slimpack"};
    double peak[2];

    for (int i = 0; i < 2; i++) {
        vl_config cfg;
        vl_plan p;
        vl_cost c;
        vl_sim_summary s;
        vl_err err;
        config(&cfg, paper_sets, NULL);
        cr_assert_eq(vl_cost_init(&c, &cfg, &err), VL_OK);
        vl_run_opts o = {.seed = 1};
        cr_assert_eq(vl_run_plan(&p, vl_strategy_find(names[i]), m, &cfg, &o, NULL, &err),
                     VL_OK, "%s", err.msg);
        cr_assert_eq(vl_sim_plan(&p, &c, NULL, &s, &err), VL_OK, "%s", err.msg);
        peak[i] = s.peak_mem_gib.max;
        vl_plan_free(&p);
        vl_config_free(&cfg);
    }
    cr_assert_leq(peak[1], peak[0], "SlimPack peaks at %.2f GiB, best-fit packing at %.2f",
                  peak[1], peak[0]);
    vl_manifest_free(m);
}

/* verify holds a SlimPack plan's packs to the strategy's max_cap: global_batch samples of
 * max_seq_len tokens. */
Test(slimpack_plan, verify_rejects_a_pack_over_capacity)
{
    vl_config cfg;
    vl_manifest *m = lognormal_manifest(256, 3);
    vl_plan p;
    vl_cost c;
    vl_verify_report rep;
    vl_err err;
    bool named = false;

    config(&cfg, small_sets, "training.epochs=1");
    cr_assert_eq(vl_cost_init(&c, &cfg, &err), VL_OK);
    cr_assert_eq(vl_strategy_slimpack.max_cap(NULL, &cfg), 128ull * 32768);
    run(&p, m, &cfg, 0, NULL);
    cr_assert_eq(vl_plan_verify(&p, &c, &vl_registry_rules, &rep, &err), VL_OK, "%s",
                 rep.nmsgs ? rep.msgs[0] : err.msg);
    p.mbs[p.ranks[0].mb0].cap = 128u * 32768 + 1;
    cr_assert_eq(vl_plan_verify(&p, &c, &vl_registry_rules, &rep, &err), VL_EVERIFY);
    for (size_t i = 0; i < rep.nmsgs; i++)
        named = named || strstr(rep.msgs[i], "exceeds the 4194304 token slots") != NULL;
    cr_assert(named, "%s", rep.nmsgs ? rep.msgs[0] : "no message");
    vl_plan_free(&p);
    vl_config_free(&cfg);
    vl_manifest_free(m);
}

/* One sample far heavier than a rank's capacity: DP-Merge spreads it, so ranks finish
 * closer together than when it sits on one rank. */
Test(slimpack_plan, dp_merge_lowers_the_rank_gap)
{
    vl_manifest *m = lognormal_manifest(128, 9);
    double gap[2];
    size_t groups = 0;

    m->len[3] = 32768;
    for (int merge = 0; merge < 2; merge++) {
        vl_config cfg;
        vl_plan p;
        vl_cost c;
        vl_sim_summary s;
        vl_err err;
        /* 16 samples a batch: the outlier outweighs a rank's quarter */
        config(&cfg, small_sets, merge ? "slimpack.dp_merge=true;training.global_batch=16"
                                       : "slimpack.dp_merge=false;training.global_batch=16");
        cr_assert_eq(vl_cost_init(&c, &cfg, &err), VL_OK);
        run(&p, m, &cfg, 0, NULL);
        cr_assert_eq(vl_sim_plan(&p, &c, NULL, &s, &err), VL_OK, "%s", err.msg);
        gap[merge] = s.rank_gap.max;
        for (size_t i = 0; i < p.nmbs; i++)
            groups += merge && p.mbs[i].share;
        vl_plan_free(&p);
        vl_config_free(&cfg);
    }
    cr_assert_gt(groups, 0, "the outlier's packs are shared");
    cr_assert_lt(gap[1], gap[0], "rank gap %.4f with DP-Merge, %.4f without", gap[1], gap[0]);
    vl_manifest_free(m);
}

/* dp 128: one sample outweighs the rest of its batch, so W_F / C > 64 and DP-Merge
 * gives it every rank it may: the widest merge group, read back from the file with
 * every member, verifies. */
static void merge_128(const char *sp_kind, uint32_t want)
{
    static const char *const sets[] = {
        "cluster.gpus=128", "training.tp=1", "training.pp=1", "training.dp=128",
        "training.max_seq_len=32768", "training.global_batch=128", "training.epochs=1",
        NULL};
    vl_manifest *m = tu_gen_manifest("fixed:128", 128, 3);
    vl_config cfg;
    vl_plan p, q;
    vl_plan_file f;
    vl_err err;
    char *dir = tu_tmpdir(), *path = tu_path(dir, "sp128.jsonl");
    uint32_t widest = 0;

    m->len[5] = 32768;
    config(&cfg, sets, sp_kind);
    run(&p, m, &cfg, 0, NULL);
    for (size_t i = 0; i < p.nshares; i++)
        widest = p.shares[i].n > widest ? p.shares[i].n : widest;
    cr_assert_eq(widest, want, "%s: widest merge group %u ranks", sp_kind, widest);
    cr_assert_eq(vl_plan_write_file(&p, path, &err), VL_OK, "%s", err.msg);
    cr_assert_eq(vl_plan_read(&q, &f, path, m, &err), VL_OK, "%s", err.msg);
    cr_assert(q.nmembers == p.nmembers &&
              memcmp(q.members, p.members, p.nmembers * sizeof *p.members) == 0);
    verify_ok(&q, &cfg);
    vl_plan_free(&q);
    vl_plan_free(&p);
    vl_manifest_free(m);
    vl_config_free(&cfg);
    tu_rmtree(dir);
    free(path);
    free(dir);
}

/* Under ring all 128 ranks (groups were once clamped to 64, the plan readers' old
 * limit). */
Test(slimpack_plan, merge_group_of_128_survives_a_file)
{
    merge_128("training.sp_kind=ring", 128);
}

/* Under Ulysses the outlier's heads are scattered over the group: llama3.1-8b's 8 KV
 * heads split over at most 8 ranks, so the group stops there (verify holds it). */
Test(slimpack_plan, ulysses_caps_a_merge_group_at_the_kv_heads)
{
    merge_128("training.sp_kind=ulysses", 8);
}

Test(slimpack_plan, verbose_log_has_the_candidates)
{
    vl_config cfg;
    vl_manifest *m = lognormal_manifest(256, 2);
    vl_plan p;
    char *log = NULL;

    config(&cfg, small_sets, "slimpack.asymmetric=auto");
    run(&p, m, &cfg, 1, &log);
    cr_assert_not_null(log);
    cr_assert(strstr(log, "M=   4 asym") && strstr(log, "M=   4 sym"), "%s", log);
    cr_assert(strstr(log, "slimpack: chosen M/pp"), "%s", log);
    free(log);
    vl_plan_free(&p);
    vl_config_free(&cfg);
    vl_manifest_free(m);
}

/* slimpack.mem_cap_gib: the plan stays within the cap (checkpointing more), and with a
 * cap below what the uncapped plan peaks at. */
Test(slimpack_plan, memory_cap_is_honoured)
{
    vl_manifest *m = lognormal_manifest(256, 4);
    double peak[2];

    for (int capped = 0; capped < 2; capped++) {
        vl_config cfg;
        vl_plan p;
        vl_cost c;
        vl_sim_summary s;
        vl_err err;
        char set[96];
        snprintf(set, sizeof set, "training.epochs=1;slimpack.mem_cap_gib=%.3f",
                 capped ? peak[0] - 4 : 0.0);
        config(&cfg, small_sets, set);
        cr_assert_eq(vl_cost_init(&c, &cfg, &err), VL_OK);
        run(&p, m, &cfg, 0, NULL);
        cr_assert_eq(vl_sim_plan(&p, &c, NULL, &s, &err), VL_OK, "%s", err.msg);
        peak[capped] = s.peak_mem_gib.max;
        vl_plan_free(&p);
        vl_config_free(&cfg);
    }
    cr_assert_leq(peak[1], peak[0] - 4 + 1e-9, "capped peak %.2f GiB, uncapped %.2f GiB",
                  peak[1], peak[0]);
    vl_manifest_free(m);
}

/* DP-Merge by memory: a 32K-token sample lighter than a rank's quarter of the batch (no
 * group with the device's full memory) but whose activations, every slice in flight,
 * do not fit one rank with device memory cut to 90% of what they need there even with
 * every layer checkpointed.  With DP-Merge two ranks carry it with CP 2: a lower peak,
 * and the ranks finish closer together (rank gap and TBR) than when one rank holds it. */
Test(slimpack_plan, dp_merge_by_memory_lowers_the_imbalance)
{
    vl_manifest *m = lognormal_manifest(128, 9);
    double gap[3], tbr[3], peak[3];
    size_t groups[3] = {0};

    m->len[3] = 32768;
    for (int run = 0; run < 3; run++) {   /* merge off, on; on with the full device */
        vl_config cfg;
        vl_plan p;
        vl_cost c;
        vl_sim_summary s;
        vl_err err;
        char set[256], mem[64] = "training.epochs=1";
        config(&cfg, small_sets, "training.epochs=1;training.recompute=auto");
        cr_assert_eq(vl_cost_init(&c, &cfg, &err), VL_OK);
        vl_par q = {2, 4, 1, vl_cost_stage_layers(&c, 4, 0)};
        double need = 0.9 * vl_cost_rank_peak_bytes(&c, 32768, &q, 4, 1);
        vl_config_free(&cfg);
        if (run < 2)
            snprintf(mem, sizeof mem, "cluster.mem_gib=%.4f", need / 1073741824.0 + 6);
        snprintf(set, sizeof set, "training.epochs=1;training.recompute=auto;%s;"
                 "slimpack.dp_merge=%s", mem, run ? "true" : "false");
        config(&cfg, small_sets, set);
        cr_assert_eq(vl_cost_init(&c, &cfg, &err), VL_OK);
        vl_run_opts o = {.seed = 7, .allow_oom = true};
        cr_assert_eq(vl_run_plan(&p, &vl_strategy_slimpack, m, &cfg, &o, NULL, &err), VL_OK,
                     "%s", err.msg);
        cr_assert_eq(vl_sim_plan(&p, &c, NULL, &s, &err), VL_OK, "%s", err.msg);
        gap[run] = s.rank_gap.max;
        tbr[run] = s.tbr.max;
        peak[run] = s.peak_mem_gib.max;
        for (size_t i = 0; i < p.nmbs; i++)
            groups[run] += p.mbs[i].share != 0;
        vl_plan_free(&p);
        vl_config_free(&cfg);
    }
    cr_assert_eq(groups[2], 0, "lighter than a rank's capacity: no merge by work");
    cr_assert_gt(groups[1], 0, "merged by memory: the sample's packs are shared");
    cr_assert_lt(peak[1], peak[0], "peak %.2f GiB with DP-Merge, %.2f without", peak[1],
                 peak[0]);
    cr_assert_lt(gap[1], gap[0], "rank gap %.4f with DP-Merge, %.4f without", gap[1], gap[0]);
    cr_assert_lt(tbr[1], tbr[0], "TBR %.4f with DP-Merge, %.4f without", tbr[1], tbr[0]);
    vl_manifest_free(m);
}

/* Candidates no rank may choose (packs under min_pack_tokens, past the smallest M) are
 * not simulated, and the plan is the one of the smallest M alone. */
Test(slimpack_plan, only_eligible_candidates_are_simulated)
{
    vl_config auto_cfg, fixed_cfg;
    vl_manifest *m = lognormal_manifest(256, 2);
    vl_plan a, b;
    char *log = NULL;

    config(&auto_cfg, small_sets, "slimpack.min_pack_tokens=1000000000");
    config(&fixed_cfg, small_sets, "slimpack.min_pack_tokens=1000000000;slimpack.micropacks=4");
    run(&a, m, &auto_cfg, 1, &log);
    run(&b, m, &fixed_cfg, 0, NULL);
    cr_assert_not_null(log);
    cr_assert(strstr(log, "M=   4 asym") && !strstr(log, "M=   6 asym"), "%s", log);
    cr_assert(strstr(log, "larger candidates not simulated"), "%s", log);
    cr_assert(plans_equal(&a, &b));
    free(log);
    vl_plan_free(&a);
    vl_plan_free(&b);
    vl_config_free(&auto_cfg);
    vl_config_free(&fixed_cfg);
    vl_manifest_free(m);
}

/* 8 ranks of 256K tokens in 32-64 packs: the MILP has 1,500+ columns, its node cap is
 * 30-40 nodes, and z = 0 is out of the greedy placement's reach, so it is left out
 * (slimpack_milp.c MIN_NODES): the plan is the greedy's, as with milp off. */
Test(slimpack_plan, milp_without_room_to_search_is_left_out)
{
    static const char *const sets[] = {"cluster.gpus=8", "training.oversize=drop", NULL};
    vl_config on_cfg, off_cfg;
    vl_manifest *m = tu_gen_manifest("tulu3-longcite", 2400, 3);
    vl_plan a, b;
    char *log = NULL;
    unsigned long long solved = 0, left = 0, better = 1;

    config(&on_cfg, sets, "slimpack.milp=auto");
    config(&off_cfg, sets, "slimpack.milp=off");
    run(&a, m, &on_cfg, 1, &log);
    run(&b, m, &off_cfg, 0, NULL);
    const char *at = log ? strstr(log, "MILP solved ") : NULL;
    cr_assert_not_null(at, "%s", log);
    cr_assert_eq(sscanf(at, "MILP solved %llu times, %llu left out (no search within the "
                        "node cap), improved %llu", &solved, &left, &better), 3, "%s", at);
    cr_assert_gt(left, 0, "%s", at);
    cr_assert_eq(better, 0, "%s", at);
    cr_assert(plans_equal(&a, &b));
    free(log);
    vl_plan_free(&a);
    vl_plan_free(&b);
    vl_config_free(&on_cfg);
    vl_config_free(&off_cfg);
    vl_manifest_free(m);
}

/* The search's trace (lanes_only): the same lanes as a full trace, no tasks. */
Test(slimpack_plan, lanes_only_trace_matches_the_full_one)
{
    vl_config cfg;
    vl_manifest *m = lognormal_manifest(256, 2);
    vl_plan p;
    vl_cost c;
    vl_err err;
    vl_sim_trace full = {0}, lanes = {.lanes_only = true};
    vl_sim_iter_result a, b;

    config(&cfg, small_sets, NULL);
    run(&p, m, &cfg, 0, NULL);
    cr_assert_eq(vl_cost_init(&c, &cfg, &err), VL_OK);
    cr_assert_eq(vl_sim_iter(&p, 0, &c, NULL, &a, NULL, &full, &err), VL_OK, "%s", err.msg);
    cr_assert_eq(vl_sim_iter(&p, 0, &c, NULL, &b, NULL, &lanes, &err), VL_OK, "%s", err.msg);
    cr_assert_gt(full.ntasks, 0);
    cr_assert_eq(lanes.ntasks, 0);
    cr_assert_eq(lanes.nlanes, full.nlanes);
    for (size_t i = 0; i < full.nlanes; i++) {
        const vl_sim_lane *x = &full.lanes[i], *y = &lanes.lanes[i];
        cr_assert(x->rank == y->rank && x->stage == y->stage && x->makespan == y->makespan &&
                  x->act_peak == y->act_peak && x->states == y->states);
    }
    cr_assert_eq(a.iter_time_ms, b.iter_time_ms);
    cr_assert_eq(full.iter_time, lanes.iter_time);
    vl_sim_trace_free(&full);
    vl_sim_trace_free(&lanes);
    vl_plan_free(&p);
    vl_config_free(&cfg);
    vl_manifest_free(m);
}

/* Every iteration's simulated time and memory verdict, plan a against plan b. */
static void same_iteration_times(const vl_plan *a, const vl_plan *b, const vl_config *cfg,
                                 const char *what)
{
    vl_cost c;
    vl_err err;

    cr_assert_eq(vl_cost_init(&c, cfg, &err), VL_OK);
    cr_assert_eq(a->niters, b->niters, "%s", what);
    for (size_t it = 0; it < a->niters; it++) {
        vl_sim_iter_result x, y;
        cr_assert_eq(vl_sim_iter(a, it, &c, NULL, &x, NULL, NULL, &err), VL_OK, "%s", err.msg);
        cr_assert_eq(vl_sim_iter(b, it, &c, NULL, &y, NULL, NULL, &err), VL_OK, "%s", err.msg);
        cr_assert(x.iter_time_ms == y.iter_time_ms, "%s, iteration %zu: %.9f ms against %.9f",
                  what, it, x.iter_time_ms, y.iter_time_ms);
        cr_assert_eq(x.oom, y.oom, "%s, iteration %zu", what, it);
    }
}

/* The refinement's counters from the verbose log: solves, improvements, rank plans
 * refined and left greedy. */
static void refine_counts(const char *log, unsigned long long *improved,
                          unsigned long long *refined, unsigned long long *greedy)
{
    const char *at = log ? strstr(log, "improved ") : NULL;
    cr_assert_not_null(at, "%s", log);
    cr_assert_eq(sscanf(at, "improved %llu; rank plans refined %llu, left greedy (refine "
                        "critical) %llu", improved, refined, greedy), 3, "%s", at);
}

/* slimpack.refine critical refines only the ranks that can set the iteration time: the
 * same simulated time as refining every rank (all, the paper), iteration by iteration,
 * with pp 1 and pp > 1, merge groups, the MILP forced or automatic; some ranks are left
 * greedy (so the comparison is not of two equal plans), and the plan is deterministic. */
Test(slimpack_plan, refine_critical_keeps_the_iteration_time)
{
    static const struct {
        const char *dist, *sets;
        size_t n;
        uint64_t seed;
    } cases[] = {
        {"lognormal:7.5:1.6", "cluster.gpus=32;training.tp=2;training.pp=4;"
         "training.max_seq_len=32768;training.global_batch=128;training.oversize=truncate;"
         "slimpack.milp=on", 512, 3},
        {"lognormal:7.5:1.6", "cluster.gpus=16;training.max_seq_len=32768;"
         "training.global_batch=256;training.oversize=truncate;slimpack.milp=on", 1024, 5},
        {"lognormal:8:1.2", "cluster.gpus=32;training.pp=2;training.max_seq_len=32768;"
         "training.global_batch=256;training.oversize=truncate", 1024, 9},
        {"tulu3-longcite", "cluster.gpus=8192;training.tp=4;training.pp=16;training.sp=2;"
         "training.global_tokens=524288;training.oversize=drop", 3000, 2},
        {"tulu3-longcite", "cluster.gpus=16384;training.tp=4;training.pp=16;training.sp=8;"
         "training.global_tokens=262144;training.oversize=drop", 8000, 1},
    };
    static const char *const none[] = {NULL};
    unsigned long long left_greedy = 0;

    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char all_sets[600], what[700];
        vl_config all_cfg, crit_cfg;
        vl_manifest *m = tu_gen_manifest(cases[i].dist, cases[i].n, cases[i].seed);
        vl_plan a, b, c;
        char *log_a = NULL, *log_b = NULL;
        unsigned long long imp_a, ref_a, gr_a, imp_b, ref_b, gr_b;

        if (cases[i].seed == 3)
            m->len[7] = 32768;   /* an outlier: a merge group */
        char crit_sets[512];
        /* the budget these cases were chosen under: the MILP has something to improve */
        snprintf(crit_sets, sizeof crit_sets, "%s;slimpack.mem_budget=baseline",
                 cases[i].sets);
        snprintf(all_sets, sizeof all_sets, "%s;slimpack.refine=all", crit_sets);
        snprintf(what, sizeof what, "%s, %s", cases[i].dist, crit_sets);
        config(&all_cfg, none, all_sets);
        config(&crit_cfg, none, crit_sets);
        run(&a, m, &all_cfg, 1, &log_a);
        run(&b, m, &crit_cfg, 1, &log_b);
        run(&c, m, &crit_cfg, 0, NULL);
        refine_counts(log_a, &imp_a, &ref_a, &gr_a);
        refine_counts(log_b, &imp_b, &ref_b, &gr_b);
        cr_assert_gt(imp_a, 0, "%s: the MILP improved nothing, nothing to compare", what);
        cr_assert_eq(gr_a, 0, "%s", what);
        cr_assert_eq(ref_b + gr_b, ref_a, "%s", what);
        left_greedy += gr_b;
        same_iteration_times(&a, &b, &crit_cfg, what);
        cr_assert(plans_equal(&b, &c), "%s: same seed, different plans", what);
        verify_ok(&b, &crit_cfg);
        free(log_a);
        free(log_b);
        vl_plan_free(&a);
        vl_plan_free(&b);
        vl_plan_free(&c);
        vl_config_free(&all_cfg);
        vl_config_free(&crit_cfg);
        vl_manifest_free(m);
    }
    cr_assert_gt(left_greedy, 0, "critical refined every rank everywhere");
}

/* With a gradient reduction after every micro-step, a rank's backward passes set the
 * barriers every rank waits on, so any rank may matter: critical refines every rank,
 * and its plan is all's. */
Test(slimpack_plan, refine_critical_refines_every_rank_under_micro_step_sync)
{
    static const char *const none[] = {NULL};
    const char *sets = "cluster.gpus=32;training.pp=2;training.max_seq_len=32768;"
                       "training.global_batch=256;training.oversize=truncate;"
                       "training.dp_sync=micro_step";
    char all_sets[300], step_sets[300];
    vl_config all_cfg, crit_cfg, step_cfg;
    vl_manifest *m = tu_gen_manifest("lognormal:8:1.2", 1024, 9);
    vl_plan a, b, c;
    char *log_b = NULL, *log_c = NULL;
    unsigned long long imp_b, ref_b, gr_b, imp_c, ref_c, gr_c;

    snprintf(all_sets, sizeof all_sets, "%s;slimpack.refine=all", sets);
    snprintf(step_sets, sizeof step_sets, "%.*s", (int)(strstr(sets, ";training.dp_sync") - sets),
             sets);
    config(&all_cfg, none, all_sets);
    config(&crit_cfg, none, sets);
    config(&step_cfg, none, step_sets);
    run(&a, m, &all_cfg, 0, NULL);
    run(&b, m, &crit_cfg, 1, &log_b);
    run(&c, m, &step_cfg, 1, &log_c);
    refine_counts(log_b, &imp_b, &ref_b, &gr_b);
    refine_counts(log_c, &imp_c, &ref_c, &gr_c);
    /* the exception matters here: without micro-step barriers, ranks are left greedy */
    cr_assert_gt(gr_c, 0, "%s", log_c);
    cr_assert_gt(imp_b, 0, "the MILP improved nothing, nothing to compare");
    cr_assert_eq(gr_b, 0, "%s", log_b);
    cr_assert(plans_equal(&a, &b));
    free(log_b);
    free(log_c);
    vl_plan_free(&a);
    vl_plan_free(&b);
    vl_plan_free(&c);
    vl_config_free(&all_cfg);
    vl_config_free(&crit_cfg);
    vl_config_free(&step_cfg);
    vl_manifest_free(m);
}
