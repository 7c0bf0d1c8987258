/* tests/manifest_diff.h -- read one JSONL manifest with and without the fast path
 * (lib/data/manifest_jsonl_fast.c) and say whether the two readings differ: shared by
 * tests/data/test_manifest_fast.c and fuzz/fuzz_manifestline.c.  No Criterion here. */
#ifndef VLPLAN_MANIFEST_DIFF_H
#define VLPLAN_MANIFEST_DIFF_H

#include <stdio.h>
#include <string.h>

#include "manifest.h"
#include "manifest_impl.h"

static inline const char *vl_test_id_str(const vl_manifest *m, size_t i, char *buf, size_t cap)
{
    vl_manifest_id_json(m, i, buf, cap);
    return buf;
}

/* NULL when equal, else what differs (a static string). */
static inline const char *vl_test_manifests_differ(const vl_manifest *a, const vl_manifest *b)
{
    char x[256], y[256];

    if (a->n != b->n || a->tokens != b->tokens || a->loss_tokens != b->loss_tokens)
        return "counts";
    if (memcmp(a->sha256, b->sha256, sizeof a->sha256) != 0)
        return "sha256";
    if (a->n && memcmp(a->len, b->len, a->n * sizeof *a->len) != 0)
        return "lengths";
    if (a->nsources != b->nsources)
        return "sources";
    for (size_t i = 0; i < a->nsources; i++)
        if (strcmp(a->sources[i], b->sources[i]) != 0)
            return "source names";
    for (size_t i = 0; i < a->n; i++) {
        if (vl_manifest_loss(a, i) != vl_manifest_loss(b, i))
            return "loss tokens";
        if ((a->source ? a->source[i] : 0) != (b->source ? b->source[i] : 0))
            return "source of a sample";
        if (strcmp(vl_test_id_str(a, i, x, sizeof x), vl_test_id_str(b, i, y, sizeof y)) != 0)
            return "ids";
    }
    return NULL;
}

/* Both readings of path; NULL when they agree in status, message and content. */
static inline const char *vl_test_read_both(const char *path, const vl_manifest_opts *o)
{
    static char why[VL_ERRMSG_MAX * 2 + 64];
    vl_manifest *a = NULL, *b = NULL;
    vl_err ea = {0}, eb = {0};
    const char *in[] = {path};
    vl_status sa = vl__manifest_read_with(&a, in, 1, o, true, &ea);
    vl_status sb = vl__manifest_read_with(&b, in, 1, o, false, &eb);
    const char *d = NULL;

    if (sa != sb || strcmp(ea.msg, eb.msg) != 0) {
        snprintf(why, sizeof why, "status %d vs %d: '%s' vs '%s'", sa, sb, ea.msg, eb.msg);
        d = why;
    } else if (sa == VL_OK) {
        d = vl_test_manifests_differ(a, b);
    }
    vl_manifest_free(a);
    vl_manifest_free(b);
    return d;
}

#endif
