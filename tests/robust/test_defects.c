/* tests/robust/test_defects.c -- the smaller defects of issue 13 (item 8), one test each, and
 * the memory entry points the fuzzers use (vl_zreader_mem, vl_manifest_read_mem). */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#include "config.h"
#include "manifest.h"
#include "testutil.h"
#include "zio.h"

static vl_manifest *mem_read(const char *text, vl_err *err)
{
    vl_manifest *m = NULL;
    vl_status st = vl_manifest_read_mem(&m, "m", text, strlen(text), NULL, err);

    return st == VL_OK ? m : NULL;
}

static const char *id_of(const vl_manifest *m, size_t i)
{
    static char buf[64];

    vl_manifest_id_json(m, i, buf, sizeof buf);
    return buf;
}

Test(defects, manifest_read_mem_reads_every_format)
{
    static const char *const texts[] = {"5\n7\n", "id,len\n0,5\n1,7\n", "id\tlen\n0\t5\n1\t7",
                                        "{\"id\":0,\"len\":5}\n{\"id\":1,\"len\":7}\n"};
    vl_err err = {0};

    for (size_t k = 0; k < sizeof texts / sizeof texts[0]; k++) {
        vl_manifest *m = mem_read(texts[k], &err);
        cr_assert_not_null(m, "%s: %s", texts[k], err.msg);
        cr_assert_eq(m->n, 2);
        cr_assert_eq(m->tokens, 12);
        vl_manifest_free(m);
    }
}

Test(defects, manifest_read_mem_reads_zstd_and_names_the_input)
{
    const char *text = "{\"id\":\"a\",\"len\":3}\n";
    char z[256];
    size_t n = ZSTD_compress(z, sizeof z, text, strlen(text), 1);
    vl_manifest *m = NULL;
    vl_err err = {0};

    cr_assert(!ZSTD_isError(n));
    cr_assert_eq(vl_manifest_read_mem(&m, "m", z, n, NULL, &err), VL_OK, "%s", err.msg);
    cr_assert_eq(m->n, 1);
    cr_assert_str_eq(id_of(m, 0), "\"a\"");
    vl_manifest_free(m);
    cr_assert_eq(vl_manifest_read_mem(&m, "cut.zst", z, n - 3, NULL, &err), VL_EDATA);
    cr_assert_str_eq(err.msg, "cut.zst: truncated zstd frame (premature end of input)");
    cr_assert_eq(vl_manifest_read_mem(&m, "empty", "", 0, NULL, &err), VL_EDATA);
    cr_assert_str_eq(err.msg, "empty: no samples");
}

/* A JSON id -0 is not the integer 0: it is kept as written, as CSV and text keep it. */
Test(defects, json_id_minus_zero_is_kept_verbatim)
{
    vl_err err = {0};
    vl_manifest *m = mem_read("{\"id\":-0,\"len\":5}\n{\"id\":0,\"len\":6}\n"
                              "{\"len\":7, \"i\\u0064\" : -0 }\n", &err);

    cr_assert_null(m, "-0 twice is a duplicate id");
    cr_assert(strstr(err.msg, "m:3: duplicate sample id \"-0\"") != NULL, "%s", err.msg);
    m = mem_read("{\"id\":-0,\"len\":5}\n{\"id\":0,\"len\":6}\n{\"x\":[-0,{\"id\":-0}],"
                 "\"id\":\"z\",\"len\":1}\n", &err);
    cr_assert_not_null(m, "%s", err.msg);
    cr_assert_str_eq(id_of(m, 0), "\"-0\"");
    cr_assert_str_eq(id_of(m, 1), "0");
    cr_assert_str_eq(id_of(m, 2), "\"z\"");
    vl_manifest_free(m);
    m = mem_read("id,len\n-0,5\n0,6\n", &err);
    cr_assert_not_null(m, "%s", err.msg);
    cr_assert_str_eq(id_of(m, 0), "\"-0\"", "CSV and JSONL agree");
    vl_manifest_free(m);
}

Test(defects, csv_trailing_tab_is_padding_like_a_space)
{
    vl_err err = {0};
    vl_manifest *m = mem_read("id,len\t\n1,5\t\n2 ,6 \n3,\t7\t \n", &err);

    cr_assert_not_null(m, "%s", err.msg);
    cr_assert_eq(m->n, 3);
    cr_assert_eq(m->len[0], 5);
    cr_assert_eq(m->len[2], 7);
    vl_manifest_free(m);
    m = mem_read("id\tlen\n1\t5 \n", &err);   /* TSV: a space still pads */
    cr_assert_not_null(m, "%s", err.msg);
    vl_manifest_free(m);
    m = mem_read("id\tlen\n1\t5\t\n", &err);   /* TSV: a tab is a separator */
    cr_assert_null(m);
    cr_assert(strstr(err.msg, "m:2:") != NULL, "%s", err.msg);
}

Test(defects, yaml_reader_errors_give_line_and_column)
{
    vl_config c;
    vl_err err = {0};

    cr_assert_eq(vl_config_init_default(&c, &err), VL_OK);
    cr_assert_eq(vl_config_load_string(&c, "training:\n  tp: 2\n  pp: \x01\n", "t.yaml", &err),
                 VL_ECONFIG);
    cr_assert_str_eq(err.msg, "t.yaml:3:7: YAML syntax error: control characters are not "
                              "allowed");
    cr_assert_eq(vl_config_load_string(&c, "a: \xc3\xa9\xff\n", "u.yaml", &err), VL_ECONFIG);
    cr_assert(strncmp(err.msg, "u.yaml:1:5: YAML syntax error: ", 31) == 0, "%s", err.msg);
    vl_config_free(&c);
}

/* A null the dump prints must read back as a null, in block and in flow style. */
Test(defects, config_dump_null_reads_back_as_null)
{
    static const char *const sets[] = {"hbp={groups: }", "hbp.groups=", "hbp.groups=~",
                                       "hbp={groups: null, packer: }"};
    vl_err err = {0};

    for (size_t k = 0; k < sizeof sets / sizeof sets[0]; k++) {
        vl_config a, b;
        char *y = NULL, *ja = NULL, *jb = NULL;
        cr_assert_eq(vl_config_init_default(&a, &err), VL_OK);
        cr_assert_eq(vl_config_set(&a, sets[k], &err), VL_OK, "%s", err.msg);
        cr_assert_eq(vl_config_finalize(&a, &err), VL_OK, "%s", err.msg);
        cr_assert_eq(vl_config_dump_yaml(&a, &y, &err), VL_OK);
        cr_assert_null(strstr(y, "''"), "%s: %s", sets[k], y);
        cr_assert_eq(vl_config_init_default(&b, &err), VL_OK);
        cr_assert_eq(vl_config_load_string(&b, y, "dump", &err), VL_OK, "%s", err.msg);
        cr_assert_eq(vl_config_finalize(&b, &err), VL_OK, "%s", err.msg);
        cr_assert_eq(vl_config_dump_json(&a, &ja, &err), VL_OK);
        cr_assert_eq(vl_config_dump_json(&b, &jb, &err), VL_OK);
        cr_assert_str_eq(ja, jb, "%s", sets[k]);
        free(y);
        free(ja);
        free(jb);
        vl_config_free(&a);
        vl_config_free(&b);
    }
}

/* A frame header asking for a 4 GiB window (log 32). */
static const unsigned char w32[] = {0x28, 0xb5, 0x2f, 0xfd, 0x00, 0xb0, 0x01, 0x00, 0x00};

static vl_status read_w32(int wlog, vl_err *err)
{
    vl_zreader *z = NULL;
    char buf[16];
    size_t got;
    vl_status st;

    cr_assert_eq(vl_zreader_mem(&z, "w.zst", w32, sizeof w32, err), VL_OK);
    st = vl_zreader_set_window_log_max(z, wlog, err);
    if (st == VL_OK)
        st = vl_zreader_read(z, buf, sizeof buf, &got, err);
    vl_zreader_close(z);
    return st;
}

Test(defects, zstd_window_at_the_maximum_does_not_suggest_raising_it)
{
    vl_err err = {0};

    cr_assert_eq(read_w32(27, &err), VL_EDATA);
    cr_assert(strstr(err.msg, "raise it with --zstd-window-log-max, up to 31") != NULL, "%s",
              err.msg);
    cr_assert_eq(read_w32(31, &err), VL_EDATA);
    cr_assert_null(strstr(err.msg, "raise"), "%s", err.msg);
    cr_assert(strstr(err.msg, "the most vlplan accepts (--zstd-window-log-max 31)") != NULL,
              "%s", err.msg);
}

Test(defects, empty_output_name_is_named_so)
{
    static const char *const opts[][2] = {{"-o", ""}, {"--metrics", ""}};

    for (size_t k = 0; k < 2; k++) {
        const char *args[] = {"plan", "-s", "pack", opts[k][0], opts[k][1],
                              "testdata/cli/good.txt", NULL};
        tu_result r;
        cr_assert_eq(tu_run(&r, NULL, args), 0);
        cr_assert_eq(r.status, 64, "%s: %d %s", opts[k][0], r.status, r.err);
        cr_assert(strstr(r.err, "the output file name is empty") != NULL, "%s", r.err);
        tu_result_free(&r);
    }
}
