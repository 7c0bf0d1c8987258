/* tests/data/test_manifest_fast.c -- the JSONL manifest fast path (lib/data/
 * manifest_jsonl_fast.c) against jansson: hand-picked lines, whole files of them, and
 * every single-byte edit of a few lines read the same both ways -- the same samples,
 * ids, sources and digest, or the same error (fuzz/fuzz_manifestline.c does the same on
 * random input).  And a record naming its length twice is an error. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "manifest_diff.h"
#include "testutil.h"

TestSuite(manifest_fast, .init = tu_scratch_init, .fini = tu_scratch_fini);

static const char *const lines[] = {
    "{\"id\":0,\"len\":311}",
    "{\"id\":\"a\",\"length\":5,\"loss_tokens\":3,\"source\":\"wiki\"}",
    " { \"len\" : 7 ,\t\"id\" : -3 } ",
    "{\"id\":1,\"len\":5,\"num_tokens\":5}",
    "{\"id\":1,\"len\":5.0}",
    "{\"id\":1,\"len\":5e2}",
    "{\"id\":1,\"len\":0}",
    "{\"id\":1,\"len\":2147483647}",
    "{\"id\":1,\"len\":2147483648}",
    "{\"id\":1,\"len\":99999999999999999999}",
    "{\"id\":999999999999999999,\"len\":3}",
    "{\"id\":-9223372036854775808,\"len\":3}",
    "{\"id\":\"\",\"len\":3}",
    "{\"id\":null,\"len\":3}",
    "{\"id\":1,\"len\":3,\"loss_tokens\":null,\"source\":null}",
    "{\"id\":1,\"len\":3,\"loss_tokens\":4}",
    "{\"id\":1,\"len\":3,\"loss_tokens\":0}",
    "{\"id\":1,\"len\":3,\"source\":5}",
    "{\"id\":\"\xc3\xa9t\xc3\xa9\",\"len\":3}",
    "{\"id\":\"\xc3\",\"len\":3}",
    "{\"id\":\"a\\u00e9\",\"len\":3}",
    "{\"id\":\"a\\\"b\",\"len\":3}",
    "{\"id\":1,\"len\":3,\"x\":{\"y\":1}}",
    "{\"id\":1,\"len\":3,\"x\":[1,2]}",
    "{\"id\":1,\"len\":3,\"x\":true}",
    "{\"id\":1,\"len\":3,\"id\":2}",
    "{\"id\":1,\"len\":3,\"x\":1,\"x\":2}",
    "{\"id\":01,\"len\":3}",
    "{\"id\":-0,\"len\":3}",
    "{\"id\":1,\"len\":-0}",
    "{\"id\":1,\"len\":3}garbage",
    "{\"id\":1,\"len\":3,}",
    "{\"id\":1 \"len\":3}",
    "{}",
    "[1,2]",
    "42",
    "{\"id\":1}",
    "{\"len\":3}",
    "{\"id\":2,\"len\":\"3\"}",
    "{\"i\\u0064\":3,\"len\":3}",
    ("{\"id\":3,\"len\":4,\"a\":1,\"b\":2,\"c\":3,\"d\":4,\"e\":5,\"f\":6,\"g\":7,\"h\":8,"
     "\"i\":9,\"j\":10,\"k\":11,\"l\":12,\"m\":13,\"n\":14,\"o\":15}"),
};
#define NLINES (sizeof lines / sizeof lines[0])

static void same_both_ways(const char *text, const vl_manifest_opts *o, const char *what)
{
    char *path = tu_path(tu_scratch, "m.jsonl");
    const char *d;

    cr_assert_eq(tu_write_file(path, text), 0);
    d = vl_test_read_both(path, o);
    cr_assert_null(d, "%s: the fast path and jansson differ (%s) on:\n%s", what, d, text);
    free(path);
}

Test(manifest_fast, every_line_reads_the_same_both_ways)
{
    vl_manifest_opts plain = {0}, keys = {.id_col = "i", .len_col = "num_tokens"};
    char text[512];

    for (size_t i = 0; i < NLINES; i++) {
        snprintf(text, sizeof text, "%s\n", lines[i]);
        same_both_ways(text, &plain, lines[i]);
        same_both_ways(text, &keys, lines[i]);
    }
}

/* A file of every line that reads alone, then one whose id repeats an earlier one. */
Test(manifest_fast, files_read_the_same_both_ways)
{
    vl_manifest_opts plain = {0};
    static char text[8192];
    size_t n = 0;

    for (size_t i = 0; i < NLINES; i++)
        if (strstr(lines[i], "\"len\":3}") || strstr(lines[i], "\"len\":311"))
            n += (size_t)snprintf(text + n, sizeof text - n, "%s\n", lines[i]);
    same_both_ways(text, &plain, "several lines");
    same_both_ways("{\"id\":\"x\",\"len\":1,\"source\":\"a\"}\n{\"id\":\"y\",\"len\":2,"
                   "\"source\":\"b\"}\n{\"id\":\"z\",\"len\":3,\"source\":\"a\"}\n"
                   "{\"id\":\"x\",\"len\":4}\n", &plain, "a repeated id");
}

/* Every byte of these lines replaced by each of a few bytes that matter to JSON. */
Test(manifest_fast, single_byte_edits_read_the_same_both_ways)
{
    static const char subst[] = "\"\\{}[],:- 0179eE.nu\xc3\x01";
    static const char *const base[] = {
        "{\"id\":12,\"len\":311,\"loss_tokens\":300,\"source\":\"wiki\"}",
        "{\"id\":\"ab\",\"num_tokens\":5}",
    };
    vl_manifest_opts plain = {0};
    char text[256];

    for (size_t b = 0; b < 2; b++) {
        size_t n = strlen(base[b]);
        for (size_t i = 0; i < n; i++)
            for (size_t k = 0; k < sizeof subst - 1; k++) {
                snprintf(text, sizeof text, "%s\n", base[b]);
                text[i] = subst[k];
                same_both_ways(text, &plain, base[b]);
            }
    }
}

Test(manifest_fast, two_length_keys_are_an_error)
{
    char *path = tu_path(tu_scratch, "two.jsonl");
    const char *in[] = {path};
    vl_manifest *m = NULL;
    vl_manifest_opts o = {0};
    vl_err err = {0};

    cr_assert_eq(tu_write_file(path, "{\"id\":1,\"len\":5}\n{\"id\":2,\"len\":5,\"length\":6}\n"),
                 0);
    cr_assert_eq(vl_manifest_read(&m, in, 1, &o, &err), VL_EDATA);
    cr_assert(strstr(err.msg, "two.jsonl:2: both \"length\" and \"len\" are given") != NULL,
              "%s", err.msg);
    o.len_col = "length";   /* naming one settles it */
    cr_assert_eq(tu_write_file(path, "{\"id\":2,\"len\":5,\"length\":6}\n"), 0);
    cr_assert_eq(vl_manifest_read(&m, in, 1, &o, &err), VL_OK, "%s", err.msg);
    cr_assert_eq(m->len[0], 6);
    vl_manifest_free(m);
    free(path);
}
