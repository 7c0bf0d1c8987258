/* tests/plan/test_planio_json.c -- the hand-written plan records against jansson: integers,
 * escaped ids (tricky and invalid UTF-8), every line of a busy plan.  Suite planio;
 * each test names its init (planio_fixture.h). */
#include <criterion/criterion.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jsonnum.h"
#include "planio.h"
#include "planio_fixture.h"
#include "testutil.h"

/* ---- the hand-written emitter against jansson ---- */

/* Integers: every value jansson's "%lld"/"%llu" prints the same way. */
Test(planio, jsonnum_matches_printf, .init = setup, .fini = teardown)
{
    char got[VL_JSONNUM_MAX + 1], want[32];
    uint64_t x = 0x9E3779B97F4A7C15u;

    for (int k = 0; k < 30000; k++) {
        uint64_t u;
        if (k < 1000)
            u = (uint64_t)k;
        else if (k < 1040)  /* 10^j - 1 and 10^j over the whole range */
            u = 1;
        else {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            u = x >> (x % 64);  /* every magnitude */
        }
        if (k >= 1000 && k < 1040) {
            for (int j = 0; j < (k - 1000) / 2; j++)
                u *= 10;
            u += (uint64_t)(k % 2) - 1 + (k == 1000);  /* never below 0 */
        }
        uint64_t us[] = {u, UINT64_MAX - u};
        for (int s = 0; s < 2; s++) {
            snprintf(want, sizeof want, "%llu", (unsigned long long)us[s]);
            got[vl_jsonnum_u64(got, us[s])] = '\0';
            cr_assert_str_eq(got, want);
            snprintf(want, sizeof want, "%lld", (long long)(int64_t)us[s]);
            got[vl_jsonnum_i64(got, (int64_t)us[s])] = '\0';
            cr_assert_str_eq(got, want);
        }
    }
    got[vl_jsonnum_i64(got, INT64_MIN)] = '\0';
    cr_assert_str_eq(got, "-9223372036854775808");
    got[vl_jsonnum_i64(got, INT64_MAX)] = '\0';
    cr_assert_str_eq(got, "9223372036854775807");
    got[vl_jsonnum_u64(got, UINT64_MAX)] = '\0';
    cr_assert_str_eq(got, "18446744073709551615");
}

/* Ids that stress the escaping: every control character, the JSON specials, '/', DEL,
 * 2-, 3- and 4-byte UTF-8 up to U+10FFFF, U+2028, a byte order mark, strings that look
 * like numbers, the empty string, and one longer than the writer's first line buffer. */
static const char *const TRICKY[] = {
    "\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a\x0b\x0c\x0d\x0e\x0f",
    "\x10\x11\x12\x13\x14\x15\x16\x17\x18\x19\x1a\x1b\x1c\x1d\x1e\x1f",
    "\b\f\n\r\t", "q\"b\\s/", "del\x7f", "caf\xc3\xa9", "\xc2\x80\xdf\xbf",
    "\xe0\xa0\x80\xed\x9f\xbf\xee\x80\x80\xef\xbf\xbf", "\xe2\x80\xa8\xe2\x80\xa9",
    "\xef\xbb\xbf" "bom", "\xf0\x90\x80\x80\xf0\x9f\x98\x80\xf4\x8f\xbf\xbf", "42", "-0",
    "", " sp ", "\x1b[31mred\x1b[0m", "\\u0041", NULL /* the long one */
};
#define NTRICKY (sizeof TRICKY / sizeof TRICKY[0])

static char *long_id(void)
{
    size_t n = 100000;
    char *s = malloc(n + 1);
    for (size_t i = 0; i < n; i++)
        s[i] = "ab\"\x01\xc3\xa9"[i % 6];
    if (((unsigned char)s[n - 1] & 0xC0) == 0xC0)  /* do not end inside é */
        s[n - 1] = 'z';
    s[n] = '\0';
    return s;
}

/* A manifest whose samples have ids ids[0..nstr) (strings) followed by the integers
 * ints[0..nint); lengths 10, 20, ... */
static vl_manifest *hand_manifest(const char *const *ids, size_t nstr, const int64_t *ints,
                                  size_t nint)
{
    vl_manifest *m = calloc(1, sizeof *m);
    size_t n = nstr + nint, pool = 0;

    for (size_t i = 0; i < nstr; i++)
        pool += strlen(ids[i]) + 1;
    m->n = n;
    m->len = malloc(n * sizeof *m->len);
    m->id_kind = malloc(n);
    m->id_val = malloc(n * sizeof *m->id_val);
    m->id_pool = malloc(pool + 1);
    m->id_pool_cap = pool + 1;
    for (size_t i = 0; i < n; i++) {
        m->len[i] = (uint32_t)(10 * (i + 1));
        m->tokens += m->len[i];
        if (i < nstr) {
            size_t k = strlen(ids[i]) + 1;
            m->id_kind[i] = VL_ID_STR;
            m->id_val[i] = m->id_pool_len;
            memcpy(m->id_pool + m->id_pool_len, ids[i], k);
            m->id_pool_len += k;
        } else {
            m->id_kind[i] = VL_ID_INT;
            m->id_val[i] = (uint64_t)ints[i - nstr];
        }
    }
    m->loss_tokens = m->tokens;
    return m;
}

/* vl_manifest_id_json is the writer's id token; it must be jansson's dump of the string. */
Test(planio, manifest_id_json_escapes_as_jansson, .init = setup, .fini = teardown)
{
    const char *ids[NTRICKY];
    char *big = long_id();

    for (size_t i = 0; i < NTRICKY; i++)
        ids[i] = TRICKY[i] ? TRICKY[i] : big;
    vl_manifest *m = hand_manifest(ids, NTRICKY, NULL, 0);
    for (size_t i = 0; i < NTRICKY; i++) {
        json_t *s = json_string(ids[i]);
        cr_assert_not_null(s, "jansson refuses id %zu", i); /* valid UTF-8 to jansson too */
        char *want = json_dumps(s, JSON_ENCODE_ANY | JSON_COMPACT);
        size_t need = vl_manifest_id_json(m, i, NULL, 0);
        char *got = malloc(need + 1);
        cr_assert_eq(vl_manifest_id_json(m, i, got, need + 1), need);
        cr_assert_str_eq(got, want, "id %zu", i);
        free(got);
        free(want);
        json_decref(s);
    }
    vl_manifest_free(m);
    free(big);
}

/* Every line of text, parsed by jansson and dumped again with the flags the writer used
 * to dump with, must come back byte for byte: the hand-written records are jansson's. */
static void lines_are_jansson_dumps(const char *text)
{
    size_t lines = 0;

    for (const char *line = text; *line; lines++) {
        const char *nl = strchr(line, '\n');
        json_error_t je;
        cr_assert_not_null(nl, "line %zu has no newline", lines + 1);
        json_t *v = json_loadb(line, (size_t)(nl - line), 0, &je);
        cr_assert_not_null(v, "line %zu: %s", lines + 1, je.text);
        char *again = json_dumps(v, JSON_COMPACT | JSON_PRESERVE_ORDER |
                                    JSON_REAL_PRECISION(15));
        cr_assert_not_null(again);
        cr_assert_eq(strlen(again), (size_t)(nl - line), "line %zu", lines + 1);
        cr_assert(memcmp(again, line, strlen(again)) == 0, "line %zu differs:\n%s\n%.*s",
                  lines + 1, again, (int)(nl - line), line);
        free(again);
        json_decref(v);
        line = nl + 1;
    }
    cr_assert_geq(lines, 3);
}

/* A plan over the tricky ids and extreme integer ids, with every optional key: groups,
 * k, schedules with all three operations, drops of both kinds, empty ranks and
 * micro-batches, counts past 2^32.  The ranks are arbitrary (the writer checks nothing
 * but that ids exist), so only the writer's own bytes are tested here. */
static void busy_plan(vl_plan *p, vl_manifest *m)
{
    static const vl_par par[] = {{1, 1, 1, 0}, {8, 4, 2, 7}, {2, 1, 16, 123}};
    uint32_t x = 7;

    vl_plan_init(p, m, "busy", 42, NULL);
    vl_plan_set_meta(p, 3, strdup("{\"z\":1e-07,\"a\":[1,2.5,\"s\"]}"), NULL);
    for (uint32_t it = 0; it < 5; it++) {
        vl_plan_iter_begin(p, it / 2, NULL);
        for (int r = 0; r < 4; r++) {
            vl_plan_rank_begin(p, r, &par[(it + (uint32_t)r) % 3], NULL);
            if (r % 2)
                vl_plan_rank_group(p, r * 1000);
            if (r >= 2)
                vl_plan_rank_k(p, UINT32_MAX - (uint32_t)r);
            for (uint32_t b = 0; b < (uint32_t)r + it % 2; b++) {
                vl_plan_mb_begin(p, b ? UINT32_MAX : 0, NULL);
                for (uint32_t k = 0; k < b * 3; k++) {
                    x = x * 1103515245u + 12345u;
                    vl_plan_seg(p, (x >> 8) % (uint32_t)m->n, x, UINT32_MAX - x % 7, NULL);
                }
                if (r == 3) {
                    vl_plan_op(p, b, VL_OP_F, NULL);
                    vl_plan_op(p, b, VL_OP_R, NULL);
                    vl_plan_op(p, b, VL_OP_B, NULL);
                }
            }
        }
    }
    for (uint32_t i = 0; i < (uint32_t)m->n; i += 2)
        vl_plan_drop(p, i, i, UINT32_MAX - i, i % 4 ? VL_DROP_TRUNCATED : VL_DROP_OVERSIZE,
                     NULL);
}

Test(planio, hand_written_records_are_jansson_dumps, .init = setup, .fini = teardown)
{
    static const int64_t ints[] = {INT64_MIN, -1, 0, 7, INT64_MAX, 4294967296};
    const char *ids[NTRICKY];
    char *big = long_id();
    size_t n;

    for (size_t i = 0; i < NTRICKY; i++)
        ids[i] = TRICKY[i] ? TRICKY[i] : big;
    vl_manifest *m = hand_manifest(ids, NTRICKY, ints, sizeof ints / sizeof ints[0]);
    vl_plan p;
    busy_plan(&p, m);
    char *text = write_and_slurp(&p, "busy.jsonl", &n);
    cr_assert_eq(strlen(text), n);
    lines_are_jansson_dumps(text);
    cr_assert(strstr(text, "\"k\":4294967293,"), "k as an integer");
    cr_assert(strstr(text, "[\"F\",0],[\"R\",0],[\"B\",0],[\"F\",1]"), "schedule");
    cr_assert(strstr(text, ",[-9223372036854775808,"), "INT64_MIN id");
    cr_assert(strstr(text, "\"truncated\"]"), "truncated drop");
    free(text);

    /* implicit ids too */
    static const uint32_t len[] = {5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};
    vl_manifest *plain = lengths(len, 12);
    vl_plan q;
    busy_plan(&q, plain);
    text = write_and_slurp(&q, "busy_plain.jsonl", &n);
    lines_are_jansson_dumps(text);
    free(text);
    vl_plan_free(&q);
    vl_manifest_free(plain);
    vl_plan_free(&p);
    vl_manifest_free(m);
    free(big);
}

/* Tricky ids survive write -> read -> write: the reader finds each one again. */
Test(planio, round_trip_tricky_ids, .init = setup, .fini = teardown)
{
    const char *ids[NTRICKY];
    char *big = long_id();

    for (size_t i = 0; i < NTRICKY; i++)
        ids[i] = TRICKY[i] ? TRICKY[i] : big;
    vl_manifest *m = hand_manifest(ids, NTRICKY, NULL, 0);
    vl_plan p;
    vl_plan_init(&p, m, "ids", 1, NULL);
    vl_plan_iter_begin(&p, 0, NULL);
    vl_plan_rank_begin(&p, 0, &PAR1, NULL);
    vl_plan_mb_begin(&p, 100000, NULL);
    for (uint32_t i = 0; i + 1 < NTRICKY; i++)
        vl_plan_seg(&p, i, 0, m->len[i], NULL);
    vl_plan_drop(&p, NTRICKY - 1, 0, m->len[NTRICKY - 1], VL_DROP_OVERSIZE, NULL);
    round_trip(&p, m, "tricky.jsonl");
    vl_plan_free(&p);
    vl_manifest_free(m);
    free(big);
}

/* Ids that are not UTF-8 (only a hand-built manifest can hold them) are refused as the
 * jansson dump refused them, in a segment or a dropped range, and nothing is written. */
Test(planio, invalid_utf8_id_is_edata, .init = setup, .fini = teardown)
{
    static const char *const bad[] = {
        "\x80", "a\xbf", "\xc0\x80", "\xc1\xbf", "\xe0\x80\xaf", "\xed\xa0\x80",
        "\xed\xbf\xbf", "\xf0\x80\x80\x80", "\xf4\x90\x80\x80", "\xf5\x80\x80\x80",
        "\xff", "\xe2\x82", "\xe2\x82x", "\xf0\x9f\x98", "\xc3"};
    char *path = path_of("bad.jsonl");

    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        for (int in_drop = 0; in_drop < 2; in_drop++) {
            const char *ids[2] = {"fine", bad[i]};
            vl_manifest *m = hand_manifest(ids, 2, NULL, 0);
            vl_plan p;
            vl_err err = {0};
            cr_assert_null(json_string(bad[i]), "jansson accepts bad id %zu", i);
            vl_plan_init(&p, m, "bad", 1, NULL);
            vl_plan_iter_begin(&p, 0, NULL);
            vl_plan_rank_begin(&p, 0, &PAR1, NULL);
            vl_plan_mb_begin(&p, 100, NULL);
            vl_plan_seg(&p, 0, 0, 10, NULL);
            if (in_drop)
                vl_plan_drop(&p, 1, 0, 20, VL_DROP_OVERSIZE, NULL);
            else
                vl_plan_seg(&p, 1, 0, 20, NULL);
            cr_assert_eq(vl_plan_write_file(&p, path, &err), VL_EDATA, "id %zu", i);
            cr_assert(strstr(err.msg, "not valid UTF-8"), "%s", err.msg);
            cr_assert_eq(tu_count_entries(scratch), 0);
            vl_plan_free(&p);
            vl_manifest_free(m);
        }
    free(path);
}
