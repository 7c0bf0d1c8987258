/* tests/data/test_manifest_errors.c -- every bad manifest input with its exact message: text,
 * CSV and JSONL errors, duplicate ids, empty and missing inputs, stdin.  Suite manifest;
 * each test names its init (manifest_fixture.h), so this file also runs alone. */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "manifest.h"
#include "manifest_fixture.h"
#include "testutil.h"

/* ---- bad input: text ---- */

Test(manifest, text_bad_lengths, .init = setup, .fini = teardown)
{
    fails("a.txt", "5\n12.5\n", ":2: sample length must be a positive integer, got \"12.5\"");
    fails("b.txt", "1e3\n", ":1: sample length must be a positive integer, got \"1e3\"");
    fails("c.txt", "5\n6\nabc\n", ":3: sample length must be a positive integer, got \"abc\"");
    fails("d.txt", "-5\n", ":1: sample length must be a positive integer, got \"-5\"");
    fails("e.txt", "0\n", ":1: sample length must be a positive integer, got \"0\"");
    fails("f.txt", "2147483648\n", ":1: sample length 2147483648 out of range (max 2147483647)");
    fails("g.txt", "99999999999999999999999\n",
          ":1: sample length 99999999999999999999999 out of range (max 2147483647)");
    fails("h.txt", "x\t1.5\n", ":1: sample length must be a positive integer, got \"1.5\"");
    fails("i.txt", "5\x01\n", ":1: sample length must be a positive integer, got \"5\\x01\"");
}

Test(manifest, text_largest_length_accepted, .init = setup, .fini = teardown)
{
    vl_manifest *m = read1(fx("max.txt", "2147483647\n"), NULL);
    cr_assert_eq(m->len[0], 2147483647u);
    vl_manifest_free(m);
}

Test(manifest, text_blank_line_with_implicit_ids, .init = setup, .fini = teardown)
{
    const char *want = ": empty line (implicit ids are line numbers: remove it, or give "
                       "'ID LENGTH' on every line)";
    char suffix[256];
    snprintf(suffix, sizeof suffix, ":3%s", want);
    fails("a.txt", "5\n6\n\n7\n", suffix);
    snprintf(suffix, sizeof suffix, ":1%s", want);
    fails("b.txt", "\n5\n", suffix);
    snprintf(suffix, sizeof suffix, ":2%s", want);
    fails("c.txt", "5\n  \t\n", suffix);
    const char *p = FIXTURES "bad/blank.txt";
    snprintf(suffix, sizeof suffix, "%s:3%s", p, want);
    fails_n(&p, 1, NULL, VL_EDATA, suffix);
}

Test(manifest, text_field_counts, .init = setup, .fini = teardown)
{
    fails("a.txt", "5\n6 7\n", ":2: expected one length per line (as on line 1), got 2 fields");
    fails("b.txt", "\n\na 5\nb\n", ":4: expected 'ID LENGTH' (as on line 3), got 1 field");
    fails("c.txt", "a 5 6\n", ":1: expected 'ID LENGTH' (as on line 1), got 3 fields");
}

Test(manifest, text_bad_ids, .init = setup, .fini = teardown)
{
    fails("a.txt", "ab\xff 5\n", ":1: sample id \"ab\\xff\" is not valid UTF-8 text");
    fails("b.txt", "\xc0\xaf 5\n", ":1: sample id \"\\xc0\\xaf\" is not valid UTF-8 text");
}

Test(manifest, line_too_long, .init = setup, .fini = teardown)
{
    size_t n = (64u << 20) + 10;
    char *big = malloc(n), want[512];
    memset(big, '1', n);
    const char *p = fx_bytes("big.txt", big, n);
    free(big);
    snprintf(want, sizeof want, "%s:1: line longer than 64 MiB", p);
    fails_n(&p, 1, NULL, VL_EDATA, want);
}

Test(manifest, long_line_within_limit, .init = setup, .fini = teardown)
{
    size_t pad = 3u << 20;
    char *s = malloc(pad + 64);
    int k = sprintf(s, "{\"id\":1,\"len\":5,\"text\":\"");
    memset(s + k, 'x', pad);
    strcpy(s + k + pad, "\"}\n{\"id\":2,\"len\":6}\n");
    vl_manifest *m = read1(fx("long.jsonl", s), NULL);
    cr_assert_eq(m->n, 2);
    cr_assert_eq(m->len[1], 6);
    vl_manifest_free(m);
    free(s);
}

/* ---- bad input: CSV ---- */

Test(manifest, csv_bad_rows, .init = setup, .fini = teardown)
{
    fails("a.csv", "id,len\n1,5\n2,6,7\n", ":3: expected 2 columns (id,len), got 3");
    fails("b.csv", "id,len\n1\n", ":2: expected 2 columns (id,len), got 1");
    fails("c.csv", "id,len\n1,x\n", ":2: \"len\" must be a positive integer, got \"x\"");
    fails("d.csv", "id,len\n1,\n", ":2: \"len\" must be a positive integer, got \"\"");
    fails("e.csv", "id,len\n\"1,5\n", ":2: unbalanced quote in field 1");
    fails("f.csv", "id,len\n\"1\"x,5\n", ":2: unexpected text after the closing quote of field 1");
    fails("g.csv", "id,len\n,5\n", ":2: empty sample id");
    fails("h.csv", "id,len,loss_tokens\n1,5,6\n",
          ":2: \"loss_tokens\" 6 exceeds the sample length 5");
    fails("i.csv", "id,len,loss_tokens\n1,5,-1\n",
          ":2: \"loss_tokens\" must be a non-negative integer, got \"-1\"");
    fails("j.tsv", "id\tnum_tokens\n1\t2.0\n",
          ":2: \"num_tokens\" must be a positive integer, got \"2.0\"");
    fails("k.csv", "id,len\n1,4294967296\n", ":2: \"len\" 4294967296 out of range (max 2147483647)");
    const char *p = FIXTURES "bad/columns.csv";
    char want[256];
    snprintf(want, sizeof want, "%s:3: expected 2 columns (id,length), got 3", p);
    fails_n(&p, 1, NULL, VL_EDATA, want);
}

Test(manifest, csv_bad_headers, .init = setup, .fini = teardown)
{
    fails("a.csv", "id,size\n1,5\n", ":1: bad header: no length column (expected \"length\", "
                                     "\"len\" or \"num_tokens\"; header: id,size)");
    fails("b.csv", "id,len,len\n1,5,5\n", ":1: bad header: duplicate column \"len\"");
    fails("c.csv", "id,id,len\n1,1,5\n", ":1: bad header: duplicate column \"id\"");
    vl_manifest_opts o = {.id_col = "doc"};
    fails_opts("d.csv", "id,len\n1,5\n", &o, ":1: bad header: no column \"doc\" (header: id,len)");
    vl_manifest_opts o2 = {.len_col = "tokens"};
    fails_opts("e.csv", "id,len\n1,5\n", &o2,
               ":1: bad header: no column \"tokens\" (header: id,len)");
}

/* ---- bad input: JSONL ---- */

Test(manifest, jsonl_syntax_errors_have_columns, .init = setup, .fini = teardown)
{
    fails("a.jsonl", "{\"id\":1,\"len\":5}\n{\"id\":2,\"len\":6\n",
          ":2:15: invalid JSON: '}' expected near end of file");
    fails("b.jsonl", "{\"id\":1,\"len\":5,}\n",
          ":1:17: invalid JSON: string or '}' expected near '}'");
    fails("c.jsonl", "{\"id\":1,\"id\":2,\"len\":5}\n",
          ":1:12: invalid JSON: duplicate object key near '\"id\"'");
    const char *p = FIXTURES "bad/json.jsonl";
    char want[256];
    snprintf(want, sizeof want, "%s:2:15: invalid JSON: '}' expected near end of file", p);
    fails_n(&p, 1, NULL, VL_EDATA, want);
}

Test(manifest, jsonl_wrong_types, .init = setup, .fini = teardown)
{
    fails("a.jsonl", "{\"id\":1,\"len\":null}\n", ":1: \"len\" must be an integer, got null");
    fails("b.jsonl", "{\"id\":1,\"len\":\"12\"}\n",
          ":1: \"len\" must be an integer, got string \"12\"");
    fails("c.jsonl", "{\"id\":1,\"len\":12.5}\n", ":1: \"len\" must be an integer, got 12.5");
    fails("d.jsonl", "{\"id\":1,\"length\":1e3}\n",
          ":1: \"length\" must be an integer, got 1000.0");
    fails("e.jsonl", "{\"id\":1,\"len\":0}\n", ":1: \"len\" must be a positive integer, got 0");
    fails("f.jsonl", "{\"id\":1,\"len\":-4}\n", ":1: \"len\" must be a positive integer, got -4");
    fails("g.jsonl", "{\"id\":1,\"len\":2147483648}\n",
          ":1: \"len\" 2147483648 out of range (max 2147483647)");
    fails("h.jsonl", "{\"id\":1.5,\"len\":1}\n",
          ":1: \"id\" must be an integer or a non-empty string, got 1.5");
    fails("i.jsonl", "{\"id\":[1],\"len\":1}\n",
          ":1: \"id\" must be an integer or a non-empty string, got an array");
    fails("j.jsonl", "{\"id\":1,\"len\":5,\"source\":3}\n",
          ":1: \"source\" must be a string, got 3");
    fails("k.jsonl", "[1,2]\n", ":1: expected a JSON object, got an array");
    fails("l.jsonl", "{\"id\":1,\"len\":5}\n7\n", ":2: expected a JSON object, got 7");
}

Test(manifest, jsonl_missing_keys_and_loss, .init = setup, .fini = teardown)
{
    fails("a.jsonl", "{\"len\":5}\n", ":1: missing key \"id\"");
    fails("b.jsonl", "{\"id\":1,\"size\":5}\n",
          ":1: missing key \"length\" (or \"len\", \"num_tokens\")");
    fails("c.jsonl", "{\"id\":1,\"len\":5,\"loss_tokens\":6}\n",
          ":1: \"loss_tokens\" 6 exceeds the sample length 5");
    fails("d.jsonl", "{\"id\":1,\"len\":5,\"loss_tokens\":-1}\n",
          ":1: \"loss_tokens\" must be a non-negative integer, got -1");
    vl_manifest_opts o = {.id_col = "uid", .len_col = "tokens"};
    fails_opts("e.jsonl", "{\"uid\":1,\"len\":5}\n", &o, ":1: missing key \"tokens\"");
    fails_opts("f.jsonl", "{\"id\":1,\"tokens\":5}\n", &o, ":1: missing key \"uid\"");
}

/* ---- duplicates, empty, missing ---- */

Test(manifest, duplicate_ids, .init = setup, .fini = teardown)
{
    char want[512];
    const char *p = fx("d.txt", "42 5\n7 6\n\n42 7\n");
    snprintf(want, sizeof want, "%s:4: duplicate sample id 42 (first at %s:1)", p, p);
    fails_n(&p, 1, NULL, VL_EDATA, want);
    const char *q = FIXTURES "bad/dup.jsonl";
    snprintf(want, sizeof want, "%s:3: duplicate sample id \"a\" (first at %s:1)", q, q);
    fails_n(&q, 1, NULL, VL_EDATA, want);
}

Test(manifest, duplicate_ids_across_shards, .init = setup, .fini = teardown)
{
    const char *in[] = {fx("a.csv", "id,len\n1,5\n\n2,5\n17,5\n"),
                        fx("b.jsonl", "{\"id\":3,\"len\":1}\n\n{\"id\":17,\"len\":1}\n")};
    char want[512];
    snprintf(want, sizeof want, "%s:3: duplicate sample id 17 (first at %s:5)", in[1], in[0]);
    fails_n(in, 2, NULL, VL_EDATA, want);
}

Test(manifest, implicit_ids_clash_with_explicit, .init = setup, .fini = teardown)
{
    const char *in[] = {fx("a.txt", "5\n6\n7\n"), fx("b.tsv", "id\tlen\n1\t9\n")};
    char want[512];
    snprintf(want, sizeof want, "%s:2: duplicate sample id 1 (first at %s:2)", in[1], in[0]);
    fails_n(in, 2, NULL, VL_EDATA, want);
}

Test(manifest, empty_manifest, .init = setup, .fini = teardown)
{
    const char *p = FIXTURES "bad/empty.txt";
    char want[512];
    snprintf(want, sizeof want, "%s: no samples", p);
    fails_n(&p, 1, NULL, VL_EDATA, want);
    const char *in[] = {fx("h.csv", "id,len\n"), fx("e.jsonl", "\n\n")};
    snprintf(want, sizeof want, "%s, %s: no samples", in[0], in[1]);
    fails_n(in, 2, NULL, VL_EDATA, want);
    vl_manifest_opts o = {.allow_empty = true};
    vl_manifest *m = read_n(in, 2, &o);
    cr_assert_eq(m->n, 0);
    vl_manifest_free(m);
}

Test(manifest, missing_inputs, .init = setup, .fini = teardown)
{
    char *nope = tu_path(dir, "nope.txt"), want[512];
    const char *p = nope;
    snprintf(want, sizeof want, "cannot open '%s': No such file or directory", nope);
    fails_n(&p, 1, NULL, VL_ENOINPUT, want);
    p = dir;
    snprintf(want, sizeof want, "cannot open '%s': Is a directory", dir);
    fails_n(&p, 1, NULL, VL_ENOINPUT, want);
    const char *in[] = {FIXTURES "lengths.txt", nope};
    snprintf(want, sizeof want, "cannot open '%s': No such file or directory", nope);
    fails_n(in, 2, NULL, VL_ENOINPUT, want);
    free(nope);
    fails_n(NULL, 0, NULL, VL_EUSAGE, "no manifest given");
}

Test(manifest, stdin_is_named, .init = setup, .fini = teardown)
{
    const char *p = fx("in.txt", "5\n-6\n");
    int fd = open(p, O_RDONLY);
    cr_assert_eq(dup2(fd, STDIN_FILENO), STDIN_FILENO);
    close(fd);
    const char *dash = "-";
    fails_n(&dash, 1, NULL, VL_EDATA,
            "<stdin>:2: sample length must be a positive integer, got \"-6\"");
}

Test(manifest, read_error_is_eio, .init = setup, .fini = teardown)
{
    const char *p = fx("wo.txt", "");
    int fd = open(p, O_WRONLY);
    cr_assert_eq(dup2(fd, STDIN_FILENO), STDIN_FILENO);
    close(fd);
    const char *in[] = {FIXTURES "lengths.txt", "-"};
    fails_n(in, 2, NULL, VL_EIO, "read '<stdin>': Bad file descriptor");
}
