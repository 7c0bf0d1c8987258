/* tests/data/test_sampler.c -- the oversize policies (error text, drop and truncate recorded
 * in the plan), seeded epoch orders, and global batches by samples or tokens. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "manifest.h"
#include "plan.h"
#include "sampler.h"
#include "testutil.h"

static vl_manifest *lengths(const uint32_t *len, size_t n)
{
    vl_manifest *m = NULL;
    vl_err err = {0};
    cr_assert_eq(vl_manifest_from_lengths(&m, len, n, &err), VL_OK, "%s", err.msg);
    return m;
}

static const uint32_t four[] = {5, 20, 30, 7};

Test(select, oversize_error_names_count_and_first)
{
    vl_manifest *m = lengths(four, 4);
    vl_selection sel;
    vl_err err = {0};
    cr_assert_eq(vl_select(&sel, m, 10, VL_OVERSIZE_ERROR, &err), VL_EDATA);
    cr_assert_str_eq(err.msg, "2 samples exceed 10 tokens, the length limit "
                              "(training.max_seq_len; first: id 1, length 20); "
                              "set training.oversize=truncate or drop");
    cr_assert_eq(vl_select_why(&sel, m, 10, "skrull's BucketSize C x CP N = 5 x 2",
                               VL_OVERSIZE_ERROR, &err), VL_EDATA);
    cr_assert_str_eq(err.msg, "2 samples exceed 10 tokens, the length limit "
                              "(skrull's BucketSize C x CP N = 5 x 2; first: id 1, length 20); "
                              "set training.oversize=truncate or drop");
    cr_assert_eq(vl_select(&sel, m, 30, VL_OVERSIZE_ERROR, &err), VL_OK);
    cr_assert_eq(sel.n, 4);
    cr_assert_eq(sel.len, m->len);   /* nothing truncated: the manifest's own array */
    cr_assert_null(sel.own);
    cr_assert_eq(sel.tokens, 62);
    vl_selection_free(&sel);
    vl_manifest_free(m);
}

Test(select, oversize_error_with_string_id)
{
    char *dir = tu_tmpdir(), *path = tu_path(dir, "m.jsonl");
    cr_assert_eq(tu_write_file(path, "{\"id\":\"a\",\"length\":3}\n"
                                     "{\"id\":\"long \\\"one\\\"\",\"length\":99}\n"), 0);
    const char *paths[] = {path};
    vl_manifest *m = NULL;
    vl_selection sel;
    vl_err err = {0};
    cr_assert_eq(vl_manifest_read(&m, paths, 1, NULL, &err), VL_OK, "%s", err.msg);
    cr_assert_eq(vl_select(&sel, m, 50, VL_OVERSIZE_ERROR, &err), VL_EDATA);
    cr_assert_str_eq(err.msg, "1 samples exceed 50 tokens, the length limit "
                              "(training.max_seq_len; first: id \"long \\\"one\\\"\", "
                              "length 99); set training.oversize=truncate or drop");
    vl_manifest_free(m);
    tu_rmtree(dir);
    free(path);
    free(dir);
}

Test(select, drop_records_whole_samples)
{
    vl_manifest *m = lengths(four, 4);
    vl_selection sel;
    cr_assert_eq(vl_select(&sel, m, 10, VL_OVERSIZE_DROP, NULL), VL_OK);
    const vl_selection *p = &sel;
    cr_assert_eq(sel.n, 2);
    cr_assert_eq(sel.idx[0], 0);
    cr_assert_eq(sel.idx[1], 3);
    cr_assert_eq(sel.tokens, 12);
    cr_assert_eq(p->ndrops, 2);
    cr_assert_eq(p->drops[0].sample, 1);
    cr_assert_eq(p->drops[0].off, 0);
    cr_assert_eq(p->drops[0].len, 20);
    cr_assert_eq(p->drops[0].reason, VL_DROP_OVERSIZE);
    cr_assert_eq(p->drops[1].sample, 2);
    cr_assert_eq(p->drops[1].len, 30);
    vl_selection_free(&sel);
    vl_manifest_free(m);
}

Test(select, truncate_keeps_prefix_and_records_rest)
{
    vl_manifest *m = lengths(four, 4);
    vl_selection sel;
    cr_assert_eq(vl_select(&sel, m, 10, VL_OVERSIZE_TRUNCATE, NULL), VL_OK);
    const vl_selection *p = &sel;
    cr_assert_eq(sel.n, 4);
    cr_assert_eq(sel.len[0], 5);
    cr_assert_eq(sel.len[1], 10);
    cr_assert_eq(sel.len[2], 10);
    cr_assert_eq(sel.len[3], 7);
    cr_assert_eq(m->len[1], 20, "the manifest is not modified");
    cr_assert_eq(sel.tokens, 32);
    cr_assert_eq(p->ndrops, 2);
    cr_assert_eq(p->drops[0].sample, 1);
    cr_assert_eq(p->drops[0].off, 10);
    cr_assert_eq(p->drops[0].len, 10);
    cr_assert_eq(p->drops[0].reason, VL_DROP_TRUNCATED);
    cr_assert_eq(p->drops[1].off, 10);
    cr_assert_eq(p->drops[1].len, 20);
    vl_selection_free(&sel);
    vl_err err = {0};
    cr_assert_eq(vl_select(&sel, m, 0, VL_OVERSIZE_TRUNCATE, &err), VL_EUSAGE);
    vl_manifest_free(m);
}

Test(epoch, seeded_permutation)
{
    uint32_t len[100];
    for (int i = 0; i < 100; i++)
        len[i] = (uint32_t)(i + 1);
    vl_manifest *m = lengths(len, 100);
    vl_selection sel;
    cr_assert_eq(vl_select(&sel, m, 1000, VL_OVERSIZE_ERROR, NULL), VL_OK);
    uint32_t a[100], b[100], c[100], d[100];
    vl_epoch_order(&sel, 7, 0, a);
    vl_epoch_order(&sel, 7, 0, b);
    vl_epoch_order(&sel, 7, 1, c);
    vl_epoch_order(&sel, 8, 0, d);
    cr_assert_arr_eq(a, b, sizeof a);
    cr_assert_arr_neq(a, c, sizeof a);
    cr_assert_arr_neq(a, d, sizeof a);
    int seen[100] = {0};
    for (int i = 0; i < 100; i++)
        seen[a[i]]++;
    for (int i = 0; i < 100; i++)
        cr_assert_eq(seen[i], 1);
    vl_selection_free(&sel);
    vl_manifest_free(m);
}

Test(batches, by_samples_keep_short_tail)
{
    uint32_t order[10] = {0}, len[10] = {0};
    vl_training_cfg t = {.global_batch = 4};
    vl_batches b;
    cr_assert_eq(vl_make_batches(&b, order, 10, len, &t, NULL), VL_OK);
    cr_assert_eq(b.n, 3);
    size_t want[] = {0, 4, 8, 10};
    cr_assert_arr_eq(b.start, want, sizeof want);
    vl_batches_free(&b);
    cr_assert_eq(vl_make_batches(&b, order, 0, len, &t, NULL), VL_OK);
    cr_assert_eq(b.n, 0);
    cr_assert_eq(b.start[0], 0);
    vl_batches_free(&b);
}

Test(batches, by_tokens)
{
    uint32_t len[] = {4, 3, 9, 12, 1, 1, 5}, order[] = {0, 1, 2, 3, 4, 5, 6};
    vl_training_cfg t = {.global_tokens = 10};
    vl_batches b;
    /* 4+3 (9 would pass 10) | 9 | 12 alone (over budget, still a batch) | 1+1+5 */
    cr_assert_eq(vl_make_batches(&b, order, 7, len, &t, NULL), VL_OK);
    size_t want[] = {0, 2, 3, 4, 7};
    cr_assert_eq(b.n, 4);
    cr_assert_arr_eq(b.start, want, sizeof want);
    vl_batches_free(&b);
    vl_err err = {0};
    t.global_tokens = 0;
    cr_assert_eq(vl_make_batches(&b, order, 7, len, &t, &err), VL_ECONFIG);
}
