/* fuzz/fuzz_manifest.c -- the manifest reader on any bytes, every format (plain lines,
 * CSV/TSV, JSONL; the format is detected from the content) and zstd (issue 13, item 1).
 * The first input byte chooses the reader's options and whether the rest is fed as is
 * or zstd-compressed first (so the decoder sees valid frames of fuzzed text as well as
 * fuzzed frames).  Read through vl_manifest_read_mem: no file system involved.
 * Beyond "no crash, no leak, no UB", a manifest read without error must hold together:
 * counts and sums agree, every length and loss in range, every id found again at its
 * own index, and writing it out as JSONL and reading that back gives the same digest
 * (the round trip of zstd's fuzzers). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <zstd.h>

#include "manifest.h"

static void check(int ok, const char *what)
{
    if (!ok) {
        fprintf(stderr, "fuzz_manifest: %s\n", what);
        abort();
    }
}

static void consistent(vl_manifest *m, const vl_manifest_opts *o)
{
    uint64_t tok = 0, loss = 0;
    vl_err err = {0};

    for (size_t i = 0; i < m->n; i++) {
        check(m->len[i] >= 1 && m->len[i] <= VL_MAX_SAMPLE_LEN, "length out of range");
        check(vl_manifest_loss(m, i) <= m->len[i], "loss above length");
        check(!m->source || m->source[i] < m->nsources, "source index");
        tok += m->len[i];
        loss += vl_manifest_loss(m, i);
    }
    check(tok == m->tokens && loss == m->loss_tokens, "sums");
    check(m->n > 0 || o->allow_empty, "an empty manifest accepted");
    if (o->lengths_only || !m->id_kind)
        return;
    for (size_t i = 0; i < m->n && i < 256; i++) {
        long long at = m->id_kind[i] == VL_ID_INT
                           ? vl_manifest_find_int(m, (int64_t)m->id_val[i], &err)
                           : vl_manifest_find_str(m, m->id_pool + m->id_val[i], &err);
        check(at == (long long)i, "an id is not found at its own sample");
    }
}

/* Every sample as a JSONL record; NULL when an id does not fit the buffer. */
static char *as_jsonl(const vl_manifest *m, size_t *len)
{
    size_t cap = 64 + m->n * 64 + m->id_pool_len * 7, n = 0;
    char *out = malloc(cap), id[1024];

    if (!out)
        return NULL;
    for (size_t i = 0; i < m->n; i++) {
        if (vl_manifest_id_json(m, i, id, sizeof id) >= sizeof id || cap - n < 1100) {
            free(out);
            return NULL;
        }
        n += (size_t)snprintf(out + n, cap - n, "{\"id\":%s,\"len\":%u,\"loss_tokens\":%u}\n",
                              id, m->len[i], vl_manifest_loss(m, i));
    }
    *len = n;
    return out;
}

static void round_trip(const vl_manifest *m)
{
    vl_manifest_opts o = {.allow_empty = true};
    vl_manifest *b = NULL;
    vl_err err = {0};
    size_t n = 0;
    char *text = as_jsonl(m, &n);

    if (!text)
        return;
    if (vl_manifest_read_mem(&b, "round-trip", text, n, &o, &err) != VL_OK) {
        fprintf(stderr, "fuzz_manifest: re-reading the JSONL form: %s\n", err.msg);
        abort();
    }
    check(b->n == m->n && b->tokens == m->tokens && b->loss_tokens == m->loss_tokens,
          "round trip: counts");
    check(memcmp(b->sha256, m->sha256, sizeof m->sha256) == 0, "round trip: sha256");
    vl_manifest_free(b);
    free(text);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char *const ids[] = {NULL, "i", NULL, "name"};
    static const char *const lens[] = {NULL, "num_tokens", "len", NULL};
    vl_manifest_opts o = {0};
    vl_manifest *m = NULL;
    vl_err err = {0};
    void *z = NULL;
    uint8_t mode;

    if (size == 0)
        return 0;
    mode = data[0];
    data++, size--;
    o.id_col = ids[mode & 3];
    o.len_col = lens[mode & 3];
    o.lengths_only = mode & 4;
    o.allow_empty = mode & 8;
    o.zstd_window_log_max = mode & 32 ? 10 : 0;
    if (mode & 16) { /* the rest as a valid zstd frame */
        size_t cap = ZSTD_compressBound(size), r;
        check((z = malloc(cap ? cap : 1)) != NULL, "out of memory");
        r = ZSTD_compress(z, cap, data, size, 1);
        check(!ZSTD_isError(r), "ZSTD_compress");
        data = z;
        size = r;
    }
    if (vl_manifest_read_mem(&m, "fuzz", data, size, &o, &err) == VL_OK) {
        consistent(m, &o);
        if (!o.lengths_only)
            round_trip(m);
        vl_manifest_free(m);
    } else {
        check(err.code != VL_OK && err.msg[0] != '\0', "an error without a message");
        check(err.code != VL_EINTERNAL, "internal error");
    }
    free(z);
    return 0;
}
