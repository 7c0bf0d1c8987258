/* tests/plan/test_planio.c -- plan files: the exact bytes of a tiny plan (golden), write ->
 * read -> write round trips (plain, zstd, string ids), the reader's errors and findings.
 * Atomic output: test_planio_out.c; the records against jansson: test_planio_json.c. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "planio.h"
#include "planio_fixture.h"
#include "sha256.h"
#include "testutil.h"

TestSuite(planio, .init = setup, .fini = teardown);

#define BODY \
        "{\"type\":\"header\",\"schema\":\"vlplan.plan/1\",\"vlplan\":\"" VLPLAN_VERSION "\"," \
        "\"strategy\":\"test\",\"seed\":7,\"params\":{\"k\":1}," \
        "\"config\":{\"a\":{\"b\":0.35,\"c\":\"x\"}}," \
        "\"manifest\":{\"samples\":4,\"tokens\":5600,\"sha256\":\"%s\"}," \
        "\"epochs\":1,\"iterations\":1}\n" \
        "{\"type\":\"iter\",\"it\":0,\"epoch\":0,\"tokens\":600,\"loss_tokens\":600," \
        "\"samples\":3,\"ranks\":[" \
        "{\"dp\":0,\"tp\":1,\"pp\":1,\"sp\":1,\"ckpt_layers\":0,\"gpus\":[0],\"mbs\":[" \
        "{\"seg\":[[0,0,100]],\"cu_seqlens\":[0,100],\"tokens\":100,\"cap\":400}," \
        "{\"seg\":[[2,0,300]],\"cu_seqlens\":[0,300],\"tokens\":300,\"cap\":400}]}," \
        "{\"dp\":1,\"tp\":1,\"pp\":1,\"sp\":2,\"ckpt_layers\":0,\"gpus\":[1,2],\"group\":3," \
        "\"mbs\":[" \
        "{\"seg\":[[1,0,150]],\"cu_seqlens\":[0,150],\"tokens\":150,\"cap\":400}," \
        "{\"seg\":[[1,150,50]],\"cu_seqlens\":[0,50],\"tokens\":50,\"cap\":400}]," \
        "\"schedule\":[[\"F\",0],[\"F\",1],[\"B\",1],[\"B\",0]]}]}\n"

Test(planio, golden_tiny_plan)
{
    vl_manifest *m = tiny_manifest();
    vl_plan p;
    char mhex[65], fhex[65], expect[4096];
    unsigned char d[32];
    vl_sha256 sha;
    size_t n;

    tiny_plan(&p, m);
    vl_manifest_sha256_hex(m, mhex);
    snprintf(expect, sizeof expect, BODY, mhex);
    vl_sha256_init(&sha);
    vl_sha256_update(&sha, expect, strlen(expect));
    vl_sha256_final(&sha, d);
    vl_sha256_hex(d, fhex);
    snprintf(expect + strlen(expect), sizeof expect - strlen(expect),
             "{\"type\":\"footer\",\"iterations\":1,\"samples\":3,\"tokens\":600,"
             "\"dropped\":[[3,0,5000,\"oversize\"]],\"sha256\":\"%s\"}\n", fhex);

    char *got = write_and_slurp(&p, "tiny.jsonl", &n);
    cr_assert_str_eq(got, expect);
    cr_assert_eq(n, strlen(expect));
    free(got);
    vl_plan_free(&p);
    vl_manifest_free(m);
}

Test(planio, round_trip_plain)
{
    vl_manifest *m = tiny_manifest();
    vl_plan p;

    tiny_plan(&p, m);
    round_trip(&p, m, "a.jsonl");
    vl_plan_free(&p);
    vl_manifest_free(m);
}

Test(planio, round_trip_zstd)
{
    vl_manifest *m = tiny_manifest();
    vl_plan p;
    char *path = path_of("z.jsonl.zst");
    size_t n;

    tiny_plan(&p, m);
    round_trip(&p, m, "z.jsonl.zst");
    char *bytes = tu_read_file(path, &n);
    cr_assert_geq(n, 4);
    cr_assert_eq((unsigned char)bytes[0], 0x28); /* zstd frame magic 28 B5 2F FD */
    cr_assert_eq((unsigned char)bytes[3], 0xFD);
    free(bytes);
    free(path);
    vl_plan_free(&p);
    vl_manifest_free(m);
}

/* A manifest with string and integer ids, built by hand (the struct is plain). */
static vl_manifest *mixed_ids(void)
{
    static const char pool[] = "alpha\0b\"q\\\0caf\xc3\xa9";
    vl_manifest *m = calloc(1, sizeof *m);

    m->n = 4;
    m->len = malloc(4 * sizeof *m->len);
    m->id_kind = malloc(4);
    m->id_val = malloc(4 * sizeof *m->id_val);
    m->id_pool = malloc(sizeof pool);
    memcpy(m->id_pool, pool, sizeof pool);
    m->id_pool_len = m->id_pool_cap = sizeof pool;
    uint8_t kinds[4] = {VL_ID_STR, VL_ID_INT, VL_ID_STR, VL_ID_STR};
    uint64_t vals[4] = {0, (uint64_t)(int64_t)-42, 6, 11};
    for (int i = 0; i < 4; i++) {
        m->len[i] = (uint32_t)(10 * (i + 1));
        m->tokens += m->len[i];
        m->id_kind[i] = kinds[i];
        m->id_val[i] = vals[i];
    }
    m->loss_tokens = m->tokens;
    return m;
}

Test(planio, round_trip_string_ids)
{
    vl_manifest *m = mixed_ids();
    vl_plan p;
    size_t n;

    vl_plan_init(&p, m, "ids", 1, NULL);
    vl_plan_iter_begin(&p, 0, NULL);
    vl_plan_rank_begin(&p, 0, &PAR1, NULL);
    vl_plan_mb_begin(&p, 100, NULL);
    for (uint32_t i = 0; i < 4; i++)
        vl_plan_seg(&p, i, 0, m->len[i], NULL);
    char *text = write_and_slurp(&p, "ids.jsonl", &n);
    cr_assert(strstr(text, "\"seg\":[[\"alpha\",0,10],[-42,0,20],[\"b\\\"q\\\\\",0,30],"
                           "[\"caf\xc3\xa9\",0,40]]"), "%s", text);
    /* the writer's ids are the manifest's own JSON text */
    char id[32];
    vl_manifest_id_json(m, 2, id, sizeof id);
    cr_assert(strstr(text, id));
    free(text);
    round_trip(&p, m, "ids2.jsonl");
    vl_plan_free(&p);
    vl_manifest_free(m);
}

Test(planio, read_without_manifest)
{
    vl_manifest *m = tiny_manifest();
    vl_plan p, q;
    char *path = path_of("nm.jsonl");
    vl_err err = {0};

    tiny_plan(&p, m);
    vl_plan_drop(&p, 3, 0, 1, VL_DROP_TRUNCATED, NULL); /* same id again: same number */
    vl_plan_drop(&p, 0, 0, 1, VL_DROP_TRUNCATED, NULL);
    cr_assert_eq(vl_plan_write_file(&p, path, &err), VL_OK, "%s", err.msg);
    vl_plan_file f;
    cr_assert_eq(vl_plan_read(&q, &f, path, NULL, &err), VL_OK, "%s", err.msg);
    cr_assert_null(q.m);
    cr_assert_eq(q.nsegs, 4);
    /* without a manifest ids are numbered by first appearance in their record: the
     * iteration's 0, 2, 1, 1; the footer's 3, 3, 0 */
    cr_assert_eq(q.segs[1].sample, 1);
    cr_assert_eq(q.segs[2].sample, 2);
    cr_assert_eq(q.segs[3].sample, 2);
    cr_assert_eq(q.segs[1].len, 300);
    cr_assert_eq(q.mbs[3].tokens, 50);
    cr_assert_eq(q.ranks[1].par.sp, 2);
    cr_assert_eq(q.ranks[1].group, 3);
    cr_assert_eq(q.ranks[0].group, -1);
    cr_assert_eq(q.ndrops, 3);
    cr_assert_eq(q.drops[0].sample, 0);
    cr_assert_eq(q.drops[1].sample, 0);
    cr_assert_eq(q.drops[2].sample, 1);
    cr_assert_str_eq(q.params_json, "{\"k\":1}");
    cr_assert_str_eq(q.config_json, "{\"a\":{\"b\":0.35,\"c\":\"x\"}}");
    cr_assert_eq(q.epochs, 1);
    cr_assert_eq(f.sha, 1);
    cr_assert(f.by_vlplan);
    cr_assert_eq(f.iterations, 1);
    cr_assert_eq(f.samples, 3);
    cr_assert_eq(f.tokens, 600);
    cr_assert_eq(f.header_iterations, 1);
    cr_assert_eq(f.header_epochs, 1);
    cr_assert_eq(vl_plan_write_file(&q, path, &err), VL_EUSAGE); /* no manifest, no ids */
    vl_plan_free(&q);
    vl_plan_free(&p);
    vl_manifest_free(m);
    free(path);
}

/* ---- reading ---- */

static vl_plan_file last_file;   /* what the last read_text found */

static vl_status read_text(const char *text, vl_manifest *m, vl_plan *q, vl_err *err)
{
    char *path = path_of("in.jsonl");
    cr_assert_eq(tu_write_file(path, text), 0);
    vl_status st = vl_plan_read(q, &last_file, path, m, err);
    free(path);
    return st;
}

static void expect_edata(const char *text, const char *needle)
{
    vl_plan q;
    vl_err err = {0};

    cr_assert_eq(read_text(text, NULL, &q, &err), VL_EDATA, "%s", err.msg);
    cr_assert(strstr(err.msg, needle), "message \"%s\" lacks \"%s\"", err.msg, needle);
    cr_assert_eq(q.nsegs, 0); /* nothing left to free */
}

#define HDR "{\"type\":\"header\",\"schema\":\"vlplan.plan/1\",\"vlplan\":\"1\"," \
            "\"strategy\":\"s\",\"seed\":1,\"params\":{},\"config\":{}," \
            "\"manifest\":{\"samples\":1,\"tokens\":1,\"sha256\":\"x\"}," \
            "\"epochs\":1,\"iterations\":1}\n"

Test(planio, read_errors_name_file_and_line)
{
    expect_edata("", "empty plan file");
    expect_edata("{\"type\":\"header\"\n", "in.jsonl:1: invalid JSON");
    expect_edata(HDR "{\"type\":\"iter\",\n{}\n", "in.jsonl:2: invalid JSON");
    expect_edata("{\"type\":\"iter\"}\n", "in.jsonl:1: expected the plan header first");
    expect_edata("{\"id\":1}\n", "in.jsonl:1: not a plan record");
    expect_edata("{\"type\":\"header\",\"schema\":\"vlplan.plan/9\"}\n",
                 "unsupported plan schema \"vlplan.plan/9\"");
    expect_edata(HDR "{\"type\":\"nope\"}\n", "in.jsonl:2: unknown record type \"nope\"");
    expect_edata(HDR HDR, "in.jsonl:2: a second header");
    expect_edata(HDR "{\"type\":\"iter\",\"it\":0,\"epoch\":0,\"tokens\":1,\"loss_tokens\":1,"
                     "\"samples\":1,\"ranks\":[{\"dp\":0,\"tp\":1,\"pp\":1,\"sp\":1,"
                     "\"ckpt_layers\":0,\"mbs\":[{\"seg\":[[0,-1,1]],\"cu_seqlens\":[0,1],"
                     "\"tokens\":1,\"cap\":1}]}]}\n",
                 "in.jsonl:2: iteration 0, rank 0, micro-batch 0, entry 0, \"seg\": expected "
                 "[ID, OFFSET, LENGTH]");
    expect_edata(HDR "{\"type\":\"iter\",\"it\":0,\"epoch\":0,\"tokens\":1,\"loss_tokens\":1,"
                     "\"samples\":1}\n", "in.jsonl:2: iteration 0, missing \"ranks\"");
    expect_edata(HDR "{\"type\":\"iter\",\"ranks\":7}\n",
                 "in.jsonl:2: iteration 0, \"ranks\": expected an array");
    expect_edata(HDR "{\"type\":\"footer\",\"iterations\":0,\"samples\":0,\"tokens\":0,"
                     "\"dropped\":[[0,0,1,\"lost\"]],\"sha256\":\"\"}\n",
                 "unknown reason \"lost\"");
}

Test(planio, missing_input_is_enoinput)
{
    vl_plan q;
    vl_err err = {0};
    char *path = path_of("absent.jsonl");

    cr_assert_eq(vl_plan_read(&q, NULL, path, NULL, &err), VL_ENOINPUT, "%s", err.msg);
    free(path);
}

Test(planio, truncated_file_is_read_without_footer)
{
    vl_manifest *m = tiny_manifest();
    vl_plan p, q;
    vl_err err = {0};
    size_t n;

    tiny_plan(&p, m);
    char *text = write_and_slurp(&p, "full.jsonl", &n);
    char *last = strrchr(text, '{'); /* the footer */
    *last = '\0';
    cr_assert_eq(read_text(text, m, &q, &err), VL_OK, "%s", err.msg);
    cr_assert_not(last_file.has_footer);
    cr_assert_eq(q.niters, 1);
    vl_plan_free(&q);
    /* cut in the middle of the iteration line: still readable, problem recorded */
    *(strchr(text, '\n') + 40) = '\0';
    cr_assert_eq(read_text(text, m, &q, &err), VL_OK, "%s", err.msg);
    cr_assert_not(last_file.has_footer);
    cr_assert(strstr(last_file.findings.msg[0], "I5: "), "%s", last_file.findings.msg[0]);
    cr_assert(strstr(last_file.findings.msg[0], "in.jsonl:2: incomplete last line"), "%s",
              last_file.findings.msg[0]);
    vl_plan_free(&q);
    free(text);
    vl_plan_free(&p);
    vl_manifest_free(m);
}

Test(planio, unknown_id_and_other_manifest_are_findings)
{
    vl_manifest *m = tiny_manifest();
    static const uint32_t other_len[] = {100, 200, 300};
    vl_manifest *other = lengths(other_len, 3);
    vl_plan p, q;
    vl_err err = {0};
    char *path = path_of("p.jsonl");

    tiny_plan(&p, m);
    cr_assert_eq(vl_plan_write_file(&p, path, &err), VL_OK, "%s", err.msg);
    vl_plan_file f;
    cr_assert_eq(vl_plan_read(&q, &f, path, other, &err), VL_OK, "%s", err.msg);
    cr_assert_eq(f.unknown_ids, 1); /* sample 3, dropped in the footer */
    cr_assert_eq(f.by_inv[0], 1);
    cr_assert_eq(f.by_inv[4], 1);
    cr_assert(strstr(f.findings.msg[0], "I5: "), "%s", f.findings.msg[0]);
    cr_assert(strstr(f.findings.msg[0], "another manifest"), "%s", f.findings.msg[0]);
    cr_assert_eq(q.drops[0].sample, VL_SAMPLE_UNKNOWN);
    vl_plan_free(&q);
    free(path);
    vl_plan_free(&p);
    vl_manifest_free(m);
    vl_manifest_free(other);
}
