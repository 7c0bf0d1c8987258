/* tests/data/test_manifest.c -- manifest reading: every format, shards, zstd, ids and the
 * lookup index, the sha256, scale.  Every bad input with its exact message is in
 * test_manifest_errors.c. */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "manifest.h"
#include "manifest_fixture.h"
#include "sha256.h"
#include "testutil.h"
#include "zio.h"

TestSuite(manifest, .init = setup, .fini = teardown);

static const char *id_of(const vl_manifest *m, size_t i)
{
    static char buf[8][128];
    static int k;
    char *b = buf[k++ & 7];
    vl_manifest_id_json(m, i, b, 128);
    return b;
}

static void sha_of(const vl_manifest *m, char hex[65])
{
    vl_manifest_sha256_hex(m, hex);
}

/* Compress data into a file with the library's own writer. */
static const char *fx_zstd(const char *name, const char *data)
{
    char *p = tu_path(dir, name);
    int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    vl_zwriter *w = NULL;
    vl_err e = {0};
    cr_assert_geq(fd, 0);
    cr_assert_eq(vl_zwriter_fd(&w, fd, true, p, &e), VL_OK);
    cr_assert_eq(vl_zwriter_write(w, data, strlen(data), &e), VL_OK);
    cr_assert_eq(vl_zwriter_close(w, &e), VL_OK, "%s", e.msg);
    close(fd);
    paths[npaths++] = p;
    return p;
}

/* ---- formats ---- */

static const uint32_t fixture_len[5] = {512, 17, 4096, 1, 300};

static void assert_fixture(const vl_manifest *m)
{
    cr_assert_eq(m->n, 5);
    for (size_t i = 0; i < 5; i++)
        cr_assert_eq(m->len[i], fixture_len[i], "sample %zu", i);
    cr_assert_eq(m->tokens, 512 + 17 + 4096 + 1 + 300);
}

Test(manifest, text_one_length_per_line)
{
    vl_manifest *m = read1(FIXTURES "lengths.txt", NULL);
    assert_fixture(m);
    cr_assert_null(m->id_kind, "implicit ids need no id arrays");
    cr_assert_null(m->loss);
    cr_assert_null(m->source);
    cr_assert_eq(m->loss_tokens, m->tokens);
    cr_assert_str_eq(id_of(m, 0), "0");
    cr_assert_str_eq(id_of(m, 4), "4");
    vl_manifest_free(m);
}

Test(manifest, text_with_ids)
{
    vl_manifest *m = read1(FIXTURES "ids.txt", NULL);
    assert_fixture(m);
    cr_assert_str_eq(id_of(m, 0), "\"doc-a\"");
    cr_assert_str_eq(id_of(m, 1), "\"doc-b\"");
    cr_assert_eq(m->id_kind[2], VL_ID_INT);
    cr_assert_str_eq(id_of(m, 2), "42");
    cr_assert_str_eq(id_of(m, 3), "\"\\\"q\\\"\"", "quotes in text are part of the id");
    cr_assert_str_eq(id_of(m, 4), "-7");
    vl_manifest_free(m);
}

Test(manifest, non_canonical_integers_stay_strings)
{
    const char *p = fx("ids.txt", "007 1\n-0 1\n+5 1\n9223372036854775807 1\n"
                                  "9223372036854775808 1\n-9223372036854775808 1\n0 1\n");
    vl_manifest *m = read1(p, NULL);
    const char *want[] = {"\"007\"", "\"-0\"", "\"+5\"", "9223372036854775807",
                          "\"9223372036854775808\"", "-9223372036854775808", "0"};
    for (size_t i = 0; i < 7; i++)
        cr_assert_str_eq(id_of(m, i), want[i]);
    vl_manifest_free(m);
}

Test(manifest, csv_with_quotes_loss_and_sources)
{
    vl_manifest *m = read1(FIXTURES "samples.csv", NULL);
    assert_fixture(m);
    cr_assert_not_null(m->loss);
    cr_assert_eq(m->loss[0], 512, "empty loss_tokens cell = length");
    cr_assert_eq(m->loss[1], 10);
    cr_assert_eq(m->loss[3], 0);
    cr_assert_eq(m->loss_tokens, 512 + 10 + 4096 + 0 + 300);
    cr_assert_eq(m->nsources, 4);
    cr_assert_str_eq(m->sources[m->source[0]], "web");
    cr_assert_str_eq(m->sources[m->source[1]], "code, python");
    cr_assert_eq(m->source[2], m->source[0]);
    cr_assert_str_eq(m->sources[m->source[3]], "", "no source = empty name");
    cr_assert_str_eq(m->sources[m->source[4]], "books");
    cr_assert_str_eq(id_of(m, 1), "1");
    vl_manifest_free(m);
}

Test(manifest, csv_quoting_rules)
{
    const char *p = fx("q.csv", "\"id\" , \"len\"\n\"a,\"\"b\"\"\",  7 \n \"x y\" ,\"8\"\n");
    vl_manifest *m = read1(p, NULL);
    cr_assert_eq(m->n, 2);
    cr_assert_str_eq(id_of(m, 0), "\"a,\\\"b\\\"\"");
    cr_assert_eq(m->len[0], 7);
    cr_assert_str_eq(id_of(m, 1), "\"x y\"");
    cr_assert_eq(m->len[1], 8);
    vl_manifest_free(m);
}

Test(manifest, tsv_and_length_aliases)
{
    vl_manifest *m = read1(FIXTURES "samples.tsv", NULL);
    assert_fixture(m);
    vl_manifest_free(m);
    /* "length" wins over "len" and "num_tokens", wherever it stands */
    const char *p = fx("a.csv", "num_tokens,len,length\n1,2,3\n");
    m = read1(p, NULL);
    cr_assert_eq(m->len[0], 3);
    vl_manifest_free(m);
}

Test(manifest, csv_without_id_column_has_implicit_ids)
{
    const char *p = fx("h.csv", "length,count\n10,1\n20,2\n");
    vl_manifest *m = read1(p, NULL);
    cr_assert_eq(m->n, 2);
    cr_assert_null(m->id_kind);
    cr_assert_eq(m->len[1], 20);
    vl_manifest_free(m);
}

Test(manifest, csv_single_column_header)
{
    const char *p = fx("one.csv", "len\n10\n20\n");
    vl_manifest *m = read1(p, NULL);
    cr_assert_eq(m->n, 2);
    cr_assert_eq(m->len[0], 10);
    vl_manifest_free(m);
}

Test(manifest, csv_columns_chosen_by_options)
{
    const char *p = fx("mooncake.csv", "input_length,output_length,doc\n6758,500,a\n7322,490,b\n");
    vl_manifest_opts o = {.id_col = "doc", .len_col = "output_length"};
    vl_manifest *m = read1(p, &o);
    cr_assert_eq(m->n, 2);
    cr_assert_eq(m->len[0], 500);
    cr_assert_str_eq(id_of(m, 1), "\"b\"");
    vl_manifest_free(m);
}

Test(manifest, jsonl_objects)
{
    vl_manifest *m = read1(FIXTURES "samples.jsonl", NULL);
    assert_fixture(m);
    cr_assert_null(m->source, "null source = none");
    cr_assert_str_eq(id_of(m, 3), "3");
    vl_manifest_free(m);
}

Test(manifest, jsonl_ids_loss_and_sources)
{
    const char *p = fx("m.jsonl", "{\"id\":\"42\",\"len\":5,\"loss_tokens\":2,\"source\":\"a\"}\n"
                                  "{\"id\":42,\"len\":6}\n"
                                  "{\"id\":\"t\\u00e9\\n\",\"len\":7,\"source\":\"b\"}\n");
    vl_manifest *m = read1(p, NULL);
    cr_assert_eq(m->n, 3);
    cr_assert_eq(m->id_kind[0], VL_ID_STR, "a JSON string stays a string");
    cr_assert_str_eq(id_of(m, 0), "\"42\"");
    cr_assert_str_eq(id_of(m, 1), "42");
    cr_assert_str_eq(id_of(m, 2), "\"t\xc3\xa9\\n\"");
    cr_assert_eq(vl_manifest_loss(m, 0), 2);
    cr_assert_eq(vl_manifest_loss(m, 1), 6);
    cr_assert_eq(m->loss_tokens, 2 + 6 + 7);
    cr_assert_eq(m->nsources, 3);
    cr_assert_str_eq(m->sources[m->source[1]], "");
    cr_assert_str_eq(m->sources[m->source[2]], "b");
    vl_manifest_free(m);
}

Test(manifest, format_detected_by_content_not_name)
{
    const char *a = fx("data.txt", "{\"id\":1,\"len\":5}\n");
    const char *b = fx("data.jsonl", "id,len\n1,5\n");
    const char *c = fx("data.csv", "5\n");
    vl_manifest *m = read1(a, NULL);
    cr_assert_eq(m->len[0], 5);
    vl_manifest_free(m);
    m = read1(b, NULL);
    cr_assert_eq(m->len[0], 5);
    vl_manifest_free(m);
    m = read1(c, NULL);
    cr_assert_null(m->id_kind);
    vl_manifest_free(m);
}

Test(manifest, bom_and_crlf_accepted)
{
    vl_manifest *m = read1(FIXTURES "bom_crlf.txt", NULL);
    assert_fixture(m);
    vl_manifest_free(m);
    const char *c = fx("w.csv", "\xef\xbb\xbfid,length\r\n1,5\r\n2,6\r\n");
    const char *j = fx("w.jsonl", "\xef\xbb\xbf{\"id\":1,\"len\":5}\r\n\r\n");
    m = read1(c, NULL);
    cr_assert_eq(m->n, 2);
    cr_assert_str_eq(id_of(m, 0), "1");
    vl_manifest_free(m);
    m = read1(j, NULL);
    cr_assert_eq(m->n, 1);
    vl_manifest_free(m);
}

Test(manifest, last_line_without_newline_and_padding)
{
    const char *p = fx("t.txt", "5\n  6 \n7");
    vl_manifest *m = read1(p, NULL);
    cr_assert_eq(m->n, 3);
    cr_assert_eq(m->len[1], 6);
    cr_assert_eq(m->len[2], 7);
    vl_manifest_free(m);
}

Test(manifest, blank_lines_skipped_when_ids_are_explicit)
{
    const char *p = fx("t.txt", "\na 5\n\n \nb 6\n\n");
    vl_manifest *m = read1(p, NULL);
    cr_assert_eq(m->n, 2);
    vl_manifest_free(m);
}

/* ---- several inputs, sha256 ---- */

Test(manifest, shards_keep_implicit_ids_and_sha)
{
    const char *whole = fx("whole.txt", "10\n20\n30\n40\n50\n");
    const char *shards[] = {fx("s1.txt", "10\n20\n"), fx("s2.txt", "30\n40\n50\n")};
    vl_manifest *a = read1(whole, NULL), *b = read_n(shards, 2, NULL);
    char ha[65], hb[65];
    cr_assert_eq(b->n, 5);
    cr_assert_str_eq(id_of(b, 2), "2", "ids count across inputs");
    sha_of(a, ha);
    sha_of(b, hb);
    cr_assert_str_eq(ha, hb);
    vl_manifest_free(a);
    vl_manifest_free(b);
}

Test(manifest, sha_is_of_canonical_records)
{
    static const char canon[] = "0\t512\t512\n1\t17\t17\n2\t4096\t4096\n3\t1\t1\n4\t300\t300\n";
    const char *inputs[] = {FIXTURES "lengths.txt", FIXTURES "samples.tsv",
                            FIXTURES "samples.jsonl", FIXTURES "bom_crlf.txt"};
    unsigned char d[32];
    char want[65], got[65];
    vl_sha256 s;
    vl_sha256_init(&s);
    vl_sha256_update(&s, canon, sizeof canon - 1);
    vl_sha256_final(&s, d);
    vl_sha256_hex(d, want);
    for (size_t i = 0; i < 4; i++) {
        vl_manifest *m = read1(inputs[i], NULL);
        sha_of(m, got);
        cr_assert_str_eq(got, want, "%s", inputs[i]);
        vl_manifest_free(m);
    }
}

Test(manifest, sha_covers_string_ids_and_loss)
{
    const char *p = fx("m.jsonl", "{\"id\":\"a\\\"b\",\"len\":5,\"loss_tokens\":2}\n"
                                  "{\"id\":-3,\"len\":6}\n");
    static const char canon[] = "\"a\\\"b\"\t5\t2\n-3\t6\t6\n";
    unsigned char d[32];
    char want[65], got[65];
    vl_sha256 s;
    vl_sha256_init(&s);
    vl_sha256_update(&s, canon, sizeof canon - 1);
    vl_sha256_final(&s, d);
    vl_sha256_hex(d, want);
    vl_manifest *m = read1(p, NULL);
    sha_of(m, got);
    cr_assert_str_eq(got, want);
    vl_manifest_free(m);
}

Test(manifest, from_lengths_matches_read)
{
    vl_manifest *a = NULL, *b = read1(FIXTURES "lengths.txt", NULL);
    vl_err e = {0};
    char ha[65], hb[65];
    cr_assert_eq(vl_manifest_from_lengths(&a, fixture_len, 5, &e), VL_OK);
    assert_fixture(a);
    sha_of(a, ha);
    sha_of(b, hb);
    cr_assert_str_eq(ha, hb);
    vl_manifest_free(a);
    vl_manifest_free(b);
    const uint32_t bad[] = {3, 0};
    a = NULL;
    cr_assert_eq(vl_manifest_from_lengths(&a, bad, 2, &e), VL_EDATA);
    cr_assert_str_eq(e.msg, "sample 1: length 0 out of range (1..2147483647)");
    cr_assert_null(a);
}

Test(manifest, mixed_formats_in_one_dataset)
{
    const char *in[] = {fx("a.txt", "5\n6\n"), fx("b.jsonl", "{\"id\":\"x\",\"len\":7}\n"),
                        fx("c.csv", "id,len\n9,8\n")};
    vl_manifest *m = read_n(in, 3, NULL);
    cr_assert_eq(m->n, 4);
    cr_assert_str_eq(id_of(m, 0), "0", "implicit ids become integers");
    cr_assert_str_eq(id_of(m, 1), "1");
    cr_assert_str_eq(id_of(m, 2), "\"x\"");
    cr_assert_str_eq(id_of(m, 3), "9");
    vl_manifest_free(m);
}

/* ---- zstd ---- */

Test(manifest, zstd_any_suffix_and_same_sha)
{
    const char *plain = fx("p.jsonl", "{\"id\":1,\"len\":5}\n{\"id\":2,\"len\":6}\n");
    const char *z = fx_zstd("p.data", "{\"id\":1,\"len\":5}\n{\"id\":2,\"len\":6}\n");
    vl_manifest *a = read1(plain, NULL), *b = read1(z, NULL);
    char ha[65], hb[65];
    sha_of(a, ha);
    sha_of(b, hb);
    cr_assert_str_eq(ha, hb);
    vl_manifest_free(a);
    vl_manifest_free(b);
}

Test(manifest, zstd_concatenated_frames)
{
    const char *a = fx_zstd("a.zst", "id\tlen\nx\t5\n");
    const char *b = fx_zstd("b.zst", "y\t6\n");
    size_t na, nb;
    char *da = tu_read_file(a, &na), *db = tu_read_file(b, &nb);
    char *both = malloc(na + nb);
    memcpy(both, da, na);
    memcpy(both + na, db, nb);
    vl_manifest *m = read1(fx_bytes("ab.tsv.zst", both, na + nb), NULL);
    cr_assert_eq(m->n, 2);
    cr_assert_str_eq(id_of(m, 1), "\"y\"");
    vl_manifest_free(m);
    free(da);
    free(db);
    free(both);
}

Test(manifest, zstd_truncated)
{
    const char *z = fx_zstd("t.zst", "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n");
    size_t n;
    char *d = tu_read_file(z, &n), want[512];
    const char *cut = fx_bytes("cut.zst", d, n - 3);
    snprintf(want, sizeof want, "%s: truncated zstd frame (premature end of input)", cut);
    fails_n(&cut, 1, NULL, VL_EDATA, want);
    free(d);
}

Test(manifest, zstd_corrupt)
{
    static const char text[] = "a long enough line to compress, a long enough line\n";
    char buf[4096] = "";
    for (int i = 0; i < 40; i++)
        strcat(buf, text);
    const char *z = fx_zstd("c.zst", buf);
    size_t n;
    char *d = tu_read_file(z, &n);
    d[n - 2] ^= 0x55;  /* inside the checksum */
    const char *bad = fx_bytes("bad.zst", d, n);
    vl_manifest *m = NULL;
    vl_err e = {0};
    cr_assert_eq(vl_manifest_read(&m, &bad, 1, NULL, &e), VL_EDATA);
    char want[512];
    snprintf(want, sizeof want, "%s: zstd: ", bad);
    cr_assert_eq(strncmp(e.msg, want, strlen(want)), 0, "%s", e.msg);
    free(d);
}

/* A frame whose header asks for a 256 MiB window, holding "5\n" in a raw block. */
static const unsigned char big_window[] = {0x28, 0xB5, 0x2F, 0xFD, 0x00, 0x90,
                                           0x11, 0x00, 0x00, '5', '\n'};

Test(manifest, zstd_window_limit)
{
    const char *z = fx_bytes("w.zst", big_window, sizeof big_window);
    char want[512];
    snprintf(want, sizeof want,
             "%s: zstd frame needs a window larger than 128 MiB (window log max 27; raise it "
             "with --zstd-window-log-max, up to 31)", z);
    fails_n(&z, 1, NULL, VL_EDATA, want);
    vl_manifest_opts o = {.zstd_window_log_max = 28};
    vl_manifest *m = read1(z, &o);
    cr_assert_eq(m->n, 1);
    cr_assert_eq(m->len[0], 5);
    vl_manifest_free(m);
}

/* ---- ids: lookup and JSON ---- */

Test(manifest, find_sorted_integer_ids)
{
    const char *p = fx("s.csv", "id,len\n-5,1\n3,2\n10,3\n");
    vl_manifest *m = read1(p, NULL);
    vl_err e = {0};
    cr_assert_eq(vl_manifest_find_int(m, -5, &e), 0);
    cr_assert_eq(vl_manifest_find_int(m, 10, &e), 2);
    cr_assert_eq(vl_manifest_find_int(m, 4, &e), -1);
    cr_assert_eq(vl_manifest_find_str(m, "3", &e), -1, "\"3\" is not the integer 3");
    vl_manifest_free(m);
}

Test(manifest, find_hashed_ids)
{
    const char *p = fx("h.jsonl", "{\"id\":7,\"len\":1}\n{\"id\":\"7\",\"len\":2}\n"
                                  "{\"id\":3,\"len\":3}\n{\"id\":\"doc\",\"len\":4}\n");
    vl_manifest *m = read1(p, NULL);
    vl_err e = {0};
    cr_assert_eq(vl_manifest_find_int(m, 7, &e), 0);
    cr_assert_eq(vl_manifest_find_str(m, "7", &e), 1);
    cr_assert_eq(vl_manifest_find_int(m, 3, &e), 2);
    cr_assert_eq(vl_manifest_find_str(m, "doc", &e), 3);
    cr_assert_eq(vl_manifest_find_str(m, "do", &e), -1);
    cr_assert_eq(vl_manifest_find_int(m, 8, &e), -1);
    vl_manifest_free(m);
}

Test(manifest, find_implicit_ids)
{
    vl_manifest *m = read1(FIXTURES "lengths.txt", NULL);
    vl_err e = {0};
    cr_assert_eq(vl_manifest_find_int(m, 4, &e), 4);
    cr_assert_eq(vl_manifest_find_int(m, 5, &e), -1);
    cr_assert_eq(vl_manifest_find_int(m, -1, &e), -1);
    cr_assert_eq(vl_manifest_find_str(m, "4", &e), -1);
    vl_manifest_free(m);
}

Test(manifest, find_many_ids)
{
    /* enough string ids to rehash the index several times */
    size_t n = 50000, cap = n * 24;
    char *text = malloc(cap), *w = text;
    for (size_t i = 0; i < n; i++)
        w += sprintf(w, "d%zu %zu\n", (i * 7919) % n, i + 1);
    vl_manifest *m = read1(fx("many.txt", text), NULL);
    vl_err e = {0};
    char id[32];
    for (size_t i = 0; i < n; i += 997) {
        snprintf(id, sizeof id, "d%zu", (i * 7919) % n);
        cr_assert_eq(vl_manifest_find_str(m, id, &e), (long long)i);
    }
    free(text);
    vl_manifest_free(m);
}

Test(manifest, find_on_hand_built_manifest)
{
    vl_manifest *m = calloc(1, sizeof *m);
    vl_err e = {0};
    m->n = 3;
    m->len = calloc(3, sizeof *m->len);
    m->id_kind = malloc(3);
    m->id_val = malloc(3 * sizeof *m->id_val);
    for (int i = 0; i < 3; i++) {
        m->id_kind[i] = VL_ID_INT;
        m->id_val[i] = (uint64_t)(10 - i);
    }
    cr_assert_eq(vl_manifest_find_int(m, 8, &e), 2);
    cr_assert_eq(vl_manifest_find_int(m, 11, &e), -1);
    vl_manifest_free(m);
}

Test(manifest, id_json_escapes_and_truncates)
{
    const char *p = fx("e.jsonl", "{\"id\":\"a\\\\b\\u0001\\t\\\"\",\"len\":1}\n");
    vl_manifest *m = read1(p, NULL);
    char buf[8];
    cr_assert_str_eq(id_of(m, 0), "\"a\\\\b\\u0001\\t\\\"\"");
    size_t need = vl_manifest_id_json(m, 0, buf, sizeof buf);
    cr_assert_eq(need, strlen("\"a\\\\b\\u0001\\t\\\"\""));
    cr_assert_str_eq(buf, "\"a\\\\b\\u", "truncated like snprintf");
    cr_assert_eq(vl_manifest_id_json(m, 0, NULL, 0), need);
    vl_manifest_free(m);
}

/* ---- scale ---- */

Test(manifest, many_samples_cross_buffers)
{
    size_t n = 300000;
    char *text = malloc(n * 8), *w = text;
    uint64_t sum = 0;
    for (size_t i = 0; i < n; i++) {
        w += sprintf(w, "%zu\n", i % 5000 + 1);
        sum += i % 5000 + 1;
    }
    const char *p = fx("big.txt", text);
    vl_manifest *m = read1(p, NULL);
    cr_assert_eq(m->n, n);
    cr_assert_eq(m->tokens, sum);
    cr_assert_eq(m->len[n - 1], (n - 1) % 5000 + 1);
    vl_manifest_free(m);
    free(text);
}
