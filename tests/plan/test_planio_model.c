/* tests/plan/test_planio_model.c -- the plan file's additive vocabulary: every new field
 * survives write -> read -> write byte for byte (GPU placement, CP placement, backward
 * packs and the schedule naming them, shared packs, caps, optimizer sharding, the
 * iteration's candidate); the exact bytes of one such record; the default placement;
 * a minimal plan written by another tool scored and simulated (HBP eq. 2, ABR 0.25;
 * four equal micro-batches on four stages, bubble 3/7); and a reader that reports every
 * structural error at once, each naming its element. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "metrics.h"
#include "planio.h"
#include "planio_fixture.h"
#include "sim.h"
#include "testutil.h"
#include "verify.h"
#include "vlplan_strategy.h"

TestSuite(planio_model, .init = setup, .fini = teardown);

static const uint32_t LEN[] = {100, 200, 300, 400, 500, 600};

/* Iteration 0: a Skrull-like rank (sp 2, local and sharded segments) and a rank with
 * backward packs and its schedule; iteration 1: two ranks sharing a pack, explicit
 * GPUs, a candidate. */
static void rich_plan(vl_plan *p, vl_manifest *m)
{
    vl_par sp2 = {1, 1, 2, 0}, pp2 = {2, 2, 1, 1}, one = {1, 1, 1, 0};
    const int32_t both[2] = {0, 1};
    const uint32_t g0[1] = {7}, g1[1] = {2};

    vl_plan_init(p, m, "rich", 3, NULL);
    p->caps = VL_CAP_UNEVEN_MBS | VL_CAP_BWD_PACKS | VL_CAP_SEG_CP | VL_CAP_SCHEDULE |
              VL_CAP_SHARED | VL_CAP_WORLD_OPTIM;
    vl_plan_set_meta(p, 1, strdup("{}"), strdup("{}"));
    vl_plan_iter_begin(p, 0, NULL);
    vl_plan_rank_begin(p, 0, &sp2, NULL);
    vl_plan_mb_begin(p, 1000, NULL);
    vl_plan_seg_cp(p, 0, 0, 100, 1, NULL);
    vl_plan_seg(p, 1, 0, 200, NULL);
    vl_plan_rank_begin(p, 1, &pp2, NULL);
    vl_plan_mb_begin(p, 400, NULL);
    vl_plan_seg(p, 3, 0, 250, NULL);
    vl_plan_mb_begin(p, 400, NULL);
    vl_plan_seg(p, 3, 250, 150, NULL);
    vl_plan_bwd_begin(p, 400, NULL);
    vl_plan_seg(p, 3, 200, 200, NULL);
    vl_plan_bwd_begin(p, 400, NULL);
    vl_plan_seg(p, 3, 0, 200, NULL);
    vl_plan_op(p, 0, VL_OP_F, NULL);
    vl_plan_op(p, 1, VL_OP_F, NULL);
    vl_plan_op(p, 0, VL_OP_B, NULL);
    vl_plan_op(p, 1, VL_OP_B, NULL);
    vl_plan_iter_begin(p, 0, NULL);
    vl_plan_iter_candidate(p, 4);
    for (int r = 0; r < 2; r++) {
        vl_plan_rank_begin(p, r, &one, NULL);
        vl_plan_rank_gpus(p, r ? g1 : g0, 1, NULL);
        vl_plan_mb_begin(p, 600, NULL);
        vl_plan_seg(p, 5, 0, 600, NULL);
        vl_plan_mb_share(p, both, 2, NULL);
        vl_plan_mb_begin(p, 600, NULL);
        vl_plan_seg(p, r ? 4 : 2, 0, r ? 500 : 300, NULL);
    }
}

Test(planio_model, every_new_field_round_trips)
{
    vl_manifest *m = lengths(LEN, 6);
    vl_plan p;
    vl_verify_report rep;
    vl_err err = {0};

    rich_plan(&p, m);
    cr_assert_eq(vl_plan_verify(&p, NULL, &vl_registry_rules,
                                &rep, &err), VL_OK, "%s", err.msg);
    round_trip(&p, m, "rich.jsonl");
    vl_plan_free(&p);
    vl_manifest_free(m);
}

Test(planio_model, record_bytes)
{
    vl_manifest *m = lengths(LEN, 6);
    vl_plan p;
    size_t n;

    rich_plan(&p, m);
    char *text = write_and_slurp(&p, "rich.jsonl", &n);
    cr_assert(strstr(text, "\"iterations\":2,\"caps\":[\"uneven_mbs\",\"bwd_packs\",\"seg_cp\","
                           "\"schedule\",\"shared_packs\"],\"optimizer_shard\":\"world\"}\n"),
              "%s", text);
    cr_assert(strstr(text, "{\"dp\":0,\"tp\":1,\"pp\":1,\"sp\":2,\"ckpt_layers\":0,\"gpus\":[0,1],"
                           "\"mbs\":[{\"seg\":[[0,0,100,1],[1,0,200]],\"cu_seqlens\":[0,100,300],"
                           "\"tokens\":300,\"cap\":1000}]}"), "%s", text);
    cr_assert(strstr(text, "\"gpus\":[2,3,4,5],\"mbs\":[{\"seg\":[[3,0,250]]"), "%s", text);
    cr_assert(strstr(text, "\"bwd\":[{\"seg\":[[3,200,200]],\"cu_seqlens\":[0,200],\"tokens\":200,"
                           "\"cap\":400},{\"seg\":[[3,0,200]]"), "%s", text);
    cr_assert(strstr(text, "\"schedule\":[[\"F\",0],[\"F\",1],[\"B\",0],[\"B\",1]]"), "%s", text);
    cr_assert(strstr(text, "\"samples\":3,\"candidate\":4,\"ranks\":[{\"dp\":0,\"tp\":1,\"pp\":1,"
                           "\"sp\":1,\"ckpt_layers\":0,\"gpus\":[7],\"mbs\":[{\"seg\":[[5,0,600]],"
                           "\"cu_seqlens\":[0,600],\"tokens\":600,\"cap\":600,\"shared\":[0,1]}"),
              "%s", text);
    free(text);
    vl_plan_free(&p);
    vl_manifest_free(m);
}

/* Ranks of one layout: Megatron's order (tp, cp, dp, pp). */
Test(planio_model, default_placement)
{
    vl_plan p;
    vl_par par = {2, 2, 2, 0};

    vl_plan_init(&p, NULL, "t", 0, NULL);
    vl_plan_iter_begin(&p, 0, NULL);
    for (int r = 0; r < 3; r++)
        vl_plan_rank_begin(&p, r, &par, NULL);
    /* rank 1, t 1, c 0, p 1: k = 1 + 2 (0 + 2 * 1) = 5; GPU = 1 + 4 (1 + 3 * 1) = 17 */
    cr_assert_eq(vl_plan_rank_gpu(&p, 0, 1, 5), 17);
    cr_assert_eq(vl_plan_rank_gpu(&p, 0, 2, 0), 8);
    vl_plan_free(&p);
}

/* ---- a plan written by another tool ---- */

static vl_status read_text(const char *text, vl_plan *q, vl_plan_file *f, vl_err *err)
{
    char *path = path_of("foreign.jsonl");
    cr_assert_eq(tu_write_file(path, text), 0);
    vl_status st = vl_plan_read(q, f, path, NULL, err);
    free(path);
    return st;
}

#define MINIMAL_HDR "{\"type\":\"header\",\"schema\":\"vlplan.plan/1\"}\n"

/* HBP eq. 2: ranks packing {1K, 1K, 1K, 1K} and {2K, 2K} have ABR 0.25. */
Test(planio_model, minimal_plan_is_scored)
{
    static const char text[] = MINIMAL_HDR
        "{\"type\":\"iter\",\"ranks\":["
        "{\"mbs\":[{\"seg\":[[\"a\",0,1024],[\"b\",0,1024],[\"c\",0,1024],[\"d\",0,1024]]}]},"
        "{\"mbs\":[{\"seg\":[[\"e\",0,2048],[\"f\",0,2048]]}]}]}\n";
    vl_plan q;
    vl_plan_file f;
    vl_metrics mt;
    vl_err err = {0};

    cr_assert_eq(read_text(text, &q, &f, &err), VL_OK, "%s", err.msg);
    cr_assert_not(f.by_vlplan);
    cr_assert_eq(q.niters, 1);
    cr_assert_eq(q.ranks[1].dp, 1, "dp defaults to the rank's position");
    cr_assert_eq(q.mbs[1].cap, 4096, "cap defaults to the tokens");
    cr_assert_eq(q.segs[4].sample, 4, "ids numbered by first appearance");
    cr_assert_eq(vl_metrics_compute(&q, &mt, &err), VL_OK);
    cr_assert_float_eq(mt.abr.mean, 0.25, 1e-12);
    cr_assert_float_eq(mt.dbr.mean, 0.0, 1e-12);
    cr_assert_eq(mt.samples, 6);
    vl_verify_report rep;
    cr_assert_eq(vl_plan_verify_read(&q, &f, NULL, &vl_registry_rules,
                                     &rep, &err), VL_OK, "no footer is fine for "
                 "a foreign plan: %s", err.msg);
    vl_plan_free(&q);
}

/* Four equal micro-batches on four stages, simulated with a config from outside. */
Test(planio_model, minimal_plan_is_simulated)
{
    static const char text[] = MINIMAL_HDR
        "{\"type\":\"iter\",\"ranks\":[{\"pp\":4,\"mbs\":["
        "{\"seg\":[[0,0,1000]]},{\"seg\":[[1,0,1000]]},{\"seg\":[[2,0,1000]]},"
        "{\"seg\":[[3,0,1000]]}]}]}\n";
    vl_plan q;
    vl_config cfg;
    vl_cost c;
    vl_sim_iter_result r;
    vl_err err = {0};

    cr_assert_eq(read_text(text, &q, NULL, &err), VL_OK, "%s", err.msg);
    cr_assert_null(q.config_json);
    cr_assert_eq(vl_config_init_default(&cfg, &err), VL_OK);
    cr_assert_eq(vl_config_set(&cfg, "cost.fit={a: 0, b: 1, c: 0}", &err), VL_OK, "%s",
                 err.msg);
    cr_assert_eq(vl_config_finalize(&cfg, &err), VL_OK, "%s", err.msg);
    cr_assert_eq(vl_cost_init(&c, &cfg, &err), VL_OK);
    cr_assert_eq(vl_sim_iter(&q, 0, &c, NULL, &r, NULL, NULL, &err), VL_OK, "%s", err.msg);
    cr_assert_float_eq(r.bubble, 3.0 / 7.0, 1e-12);
    vl_config_free(&cfg);
    vl_plan_free(&q);
}

/* Structural errors are all collected, each naming its element, and the read fails. */
Test(planio_model, every_structural_error_at_once)
{
    static const char text[] = MINIMAL_HDR
        "{\"type\":\"iter\",\"ranks\":[{\"mbs\":[{\"sag\":[[0,0,1]]}]},{\"tp\":\"x\"}]}\n"
        "{\"type\":\"iter\",\"ranks\":[{\"mbs\":[{\"seg\":[[0,0,1,99999]]}]}]}\n"
        "{not json}\n"
        "{\"type\":\"iter\"}\n";
    vl_plan q;
    vl_plan_file f;
    vl_err err = {0};

    cr_assert_eq(read_text(text, &q, &f, &err), VL_EDATA);
    cr_assert_eq(f.errors.total, 6, "%zu: %s", f.errors.total, err.msg);
    cr_assert(strstr(f.errors.msg[0], "foreign.jsonl:2: iteration 0, rank 0, micro-batch 0, "
                                      "missing \"seg\""), "%s", f.errors.msg[0]);
    cr_assert(strstr(f.errors.msg[1], "iteration 0, rank 1, \"tp\": expected an integer"),
              "%s", f.errors.msg[1]);
    cr_assert(strstr(f.errors.msg[2], "iteration 0, rank 1, missing \"mbs\""), "%s",
              f.errors.msg[2]);
    cr_assert(strstr(f.errors.msg[3], ":3: iteration 1, rank 0, micro-batch 0, entry 0, "
                                      "\"seg\": expected"), "%s", f.errors.msg[3]);
    cr_assert(strstr(f.errors.msg[4], ":4: invalid JSON"), "%s", f.errors.msg[4]);
    cr_assert(strstr(f.errors.msg[5], ":5: iteration 2, missing \"ranks\""), "%s",
              f.errors.msg[5]);
    cr_assert(strstr(err.msg, "missing \"seg\""), "%s", err.msg);
}

/* A plan written by vlplan must keep every claim of its footer. */
Test(planio_model, vlplan_footer_claims_required)
{
    vl_manifest *m = tiny_manifest();
    vl_plan p, q;
    vl_plan_file f;
    vl_verify_report rep;
    vl_err err = {0};
    size_t n;

    tiny_plan(&p, m);
    p.caps = VL_CAP_SCHEDULE;
    char *text = write_and_slurp(&p, "t.jsonl", &n);
    char *at = strstr(text, "\"samples\":3,\"tokens\":600,\"dropped\"");
    cr_assert_not_null(at);
    memcpy(at, "\"sampleZ\"", 9);
    char *path = path_of("edited.jsonl");
    cr_assert_eq(tu_write_file(path, text), 0);
    cr_assert_eq(vl_plan_read(&q, &f, path, m, &err), VL_OK, "%s", err.msg);
    cr_assert_eq(vl_plan_verify_read(&q, &f, NULL, &vl_registry_rules, &rep, &err), VL_EVERIFY);
    cr_assert(strstr(rep.msgs[0], "the footer lacks \"samples\""), "%s", rep.msgs[0]);
    vl_plan_free(&q);
    free(path);
    free(text);
    vl_plan_free(&p);
    vl_manifest_free(m);
}

/* A default outside a field's range stands for "absent" (a rank's k 0, group -1): written
 * out it would read as absent and pass verify, so the reader refuses it, as the Python
 * reader does from the schema (tools/diff_readers.py, seed 28, case 18226). */
Test(planio_model, an_explicit_absent_value_is_refused)
{
    static const char text[] = MINIMAL_HDR
        "{\"type\":\"iter\",\"ranks\":[{\"k\":0,\"mbs\":[{\"seg\":[[0,0,1]]}]},"
        "{\"group\":-1,\"mbs\":[{\"seg\":[[1,0,1]]}]}]}\n";
    vl_plan q;
    vl_plan_file f;
    vl_err err = {0};

    cr_assert_eq(read_text(text, &q, &f, &err), VL_EDATA);
    cr_assert_eq(f.errors.total, 2, "%zu: %s", f.errors.total, err.msg);
    cr_assert(strstr(f.errors.msg[0], "rank 0, \"k\": 0 means absent; expected 1..4294967295"),
              "%s", f.errors.msg[0]);
    cr_assert(strstr(f.errors.msg[1], "rank 1, \"group\": -1 means absent"), "%s",
              f.errors.msg[1]);
}

/* The header's and footer's counts and the lists' lengths come from the schema's tables
 * (vl_plan_meta, vl_plan_fields), as the Python reader's do: "epochs" 0 and an iteration
 * of no ranks were read by the C reader and refused by the Python one. */
Test(planio_model, header_counts_and_list_lengths_follow_the_schema)
{
    static const char epochs0[] = "{\"type\":\"header\",\"schema\":\"" VL_PLAN_SCHEMA "\","
                                  "\"epochs\":0}\n"
        "{\"type\":\"iter\",\"ranks\":[{\"mbs\":[{\"seg\":[[0,0,1]]}]}]}\n";
    static const char noranks[] = MINIMAL_HDR "{\"type\":\"iter\",\"ranks\":[]}\n";
    vl_plan q;
    vl_plan_file f;
    vl_err err = {0};

    cr_assert_eq(read_text(epochs0, &q, &f, &err), VL_EDATA);
    cr_assert_eq(f.errors.total, 1, "%zu: %s", f.errors.total, err.msg);
    cr_assert(strstr(f.errors.msg[0], "\"epochs\": expected an integer 1..4294967295"), "%s",
              f.errors.msg[0]);
    vl_plan_free(&q);
    cr_assert_eq(read_text(noranks, &q, &f, &err), VL_EDATA);
    cr_assert_eq(f.errors.total, 1, "%zu: %s", f.errors.total, err.msg);
    cr_assert(strstr(f.errors.msg[0], "\"ranks\" has 0 entries, expected at least 1"), "%s",
              f.errors.msg[0]);
    vl_plan_free(&q);
}
