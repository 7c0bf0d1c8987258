/* tests/check/test_verify_file.c -- the plan checker on plans read back from files: a file
 * written and read back unedited passes; an edited byte breaks the checksum, a cut file
 * has no footer, and wrong counts, unknown ids and false token claims are reported; and
 * as properties, every truncation and every single-byte edit of a plan file is caught. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "verify_fixture.h"

/* What the last plan read from a file claimed.  Criterion runs each test in its own
 * process. */
static vl_plan_file vf;

/* Write p, replace the first `from` by `to` in the text, read it back into q. */
static void edited(const vl_plan *p, vl_manifest *m, const char *from, const char *to,
                   vl_plan *q)
{
    char *path = tu_path(tu_scratch, "p.jsonl");
    vl_err err = {0};
    size_t n;

    cr_assert_eq(vl_plan_write_file(p, path, &err), VL_OK, "%s", err.msg);
    char *text = tu_read_file(path, &n);
    char *at = strstr(text, from);
    cr_assert_not_null(at, "\"%s\" not in the plan", from);
    char *out = malloc(n + strlen(to) + 1);
    size_t head = (size_t)(at - text);
    memcpy(out, text, head);
    strcpy(out + head, to);
    strcat(out, at + strlen(from));
    cr_assert_eq(tu_write_file(path, out), 0);
    cr_assert_eq(vl_plan_read(q, &vf, path, m, &err), VL_OK, "%s", err.msg);
    free(out);
    free(text);
    free(path);
}

/* edited(), and verify rejects the plan read back: its findings in *rep. */
static void edited_rejected(const vl_plan *p, vl_manifest *m, const char *from, const char *to,
                            vl_plan *q, vl_verify_report *rep)
{
    edited(p, m, from, to, q);
    cr_assert_eq(vl_plan_verify_read(q, &vf, NULL, &vl_registry_rules, rep, NULL), VL_EVERIFY);
}

TestSuite(verify_file, .init = tu_scratch_init, .fini = tu_scratch_fini);

Test(verify_file, unedited_file_passes)
{
    vl_manifest *m = man4();
    vl_plan p, q;

    valid_plan(&p, m);
    edited(&p, m, "\"type\"", "\"type\"", &q);
    expect_ok_in(&q, &vf);
    vl_plan_free(&q);
    vl_plan_free(&p);
    vl_manifest_free(m);
}

Test(verify_file, checksum_mismatch_after_one_byte)
{
    vl_manifest *m = man4();
    vl_plan p, q;

    valid_plan(&p, m);
    edited(&p, m, "\"cap\":500", "\"cap\":501", &q);
    expect_violation_in(&q, &vf, 5, 1, "I5: the footer's sha256 does not match the content");
    vl_plan_free(&q);
    vl_plan_free(&p);
    vl_manifest_free(m);
}

Test(verify_file, truncated_file_without_footer)
{
    vl_manifest *m = man4();
    vl_plan p, q;

    valid_plan(&p, m);
    char *path = tu_path(tu_scratch, "cut.jsonl");
    vl_err err = {0};
    size_t n;
    cr_assert_eq(vl_plan_write_file(&p, path, &err), VL_OK);
    char *text = tu_read_file(path, &n);
    *strstr(text, "{\"type\":\"footer\"") = '\0';
    tu_write_file(path, text);
    cr_assert_eq(vl_plan_read(&q, &vf, path, m, &err), VL_OK, "%s", err.msg);
    expect_violation_in(&q, &vf, 5, 1, "I5: no footer: the plan file is truncated or incomplete");
    vl_plan_free(&q);
    free(text);
    free(path);
    vl_plan_free(&p);
    vl_manifest_free(m);
}

Test(verify_file, iteration_count_mismatch)
{
    vl_manifest *m = man4();
    vl_plan p, q;
    vl_verify_report rep;

    valid_plan(&p, m);
    edited_rejected(&p, m, "\"type\":\"footer\",\"iterations\":2",
                    "\"type\":\"footer\",\"iterations\":3", &q, &rep);
    cr_assert(has_msg(&rep, "I5: the footer says 3 iterations, the file has 2"));
    cr_assert_eq(rep.by_inv[4], 1); /* the footer line is not hashed: checksum still ok */
    vl_plan_free(&q);
    edited_rejected(&p, m, "\"iterations\":2}", "\"iterations\":5}", &q, &rep);
    cr_assert(has_msg(&rep, "I5: the header says 5 iterations, the file has 2"));
    cr_assert(has_msg(&rep, "sha256 does not match"));
    vl_plan_free(&q);
    vl_plan_free(&p);
    vl_manifest_free(m);
}

Test(verify_file, unknown_id)
{
    vl_manifest *m = man4();
    vl_plan p, q;
    vl_verify_report rep;

    valid_plan(&p, m);
    edited_rejected(&p, m, "[[2,0,300]", "[[\"two\",0,300]", &q, &rep);
    cr_assert(has_msg(&rep, "p.jsonl:2: iteration 0, rank 1, micro-batch 0, entry 0, sample id "
                            "\"two\" is not in the manifest"));
    cr_assert(has_msg(&rep, "I1: sample 2 (id 2): tokens [0, 300) missing in epoch 0"));
    cr_assert_eq(rep.by_inv[0], 2);
    cr_assert_eq(rep.violations, 3); /* and the checksum */
    vl_plan_free(&q);
    vl_plan_free(&p);
    vl_manifest_free(m);
}

Test(verify_file, micro_batch_tokens_claim)
{
    vl_manifest *m = man4();
    vl_plan p, q;
    vl_verify_report rep;

    valid_plan(&p, m);
    edited_rejected(&p, m, "\"tokens\":300,\"cap\"", "\"tokens\":301,\"cap\"", &q, &rep);
    cr_assert(has_msg(&rep, "p.jsonl:2: iteration 0, rank 0, micro-batch 0, \"tokens\" is 301, "
                            "the segments sum to 300"));
    cr_assert_eq(rep.by_inv[1], 1);
    vl_plan_free(&q);
    edited_rejected(&p, m, "\"cu_seqlens\":[0,100,300]", "\"cu_seqlens\":[0,100,301]", &q, &rep);
    cr_assert(has_msg(&rep, "\"cu_seqlens\" is not 0 followed by the running sums"));
    vl_plan_free(&q);
    edited_rejected(&p, m, "\"loss_tokens\":750", "\"loss_tokens\":7", &q, &rep);
    cr_assert(has_msg(&rep, "\"loss_tokens\" is 7, its segments carry 750"));
    vl_plan_free(&q);
    vl_plan_free(&p);
    vl_manifest_free(m);
}

/* ---- properties: no edit of a plan file goes unnoticed ---- */

/* Read text as a plan: VL_EDATA, or a plan that verify rejects (must_fail) / accepts.
 * Asserts only on failure: Criterion reports every assertion to its runner, which
 * would make these loops of thousands of cases crawl. */
static void check_text(const char *text, size_t n, vl_manifest *m, bool must_fail,
                       const char *what, size_t at)
{
    char *path = tu_path(tu_scratch, "edit.jsonl");
    vl_plan q;
    vl_verify_report rep;
    vl_err err = {0};
    vl_status st;

    if (tu_write_bytes(path, text, n) != 0)
        cr_assert_fail("cannot write %s", path);
    st = vl_plan_read(&q, &vf, path, m, &err);
    if (st != VL_OK && st != VL_EDATA)
        cr_assert_fail("%s at %zu: %s", what, at, err.msg);
    if (st == VL_OK) {
        st = vl_plan_verify_read(&q, &vf, NULL, &vl_registry_rules, &rep, &err);
        if (st != (must_fail ? VL_EVERIFY : VL_OK))
            cr_assert_fail("%s at %zu: verify returned %d: %s", what, at, (int)st, err.msg);
        vl_plan_free(&q);
    }
    free(path);
}

static vl_manifest *man5(void)
{
    static const uint32_t len[] = {100, 200, 300, 400, 50};
    return tu_manifest(len, 5);
}

static char *valid_text(vl_manifest *m, size_t *n)
{
    vl_plan p;
    vl_err err = {0};
    char *path = tu_path(tu_scratch, "valid.jsonl");

    valid_plan(&p, m);
    vl_plan_drop(&p, 4, 0, 50, VL_DROP_OVERSIZE, NULL); /* a footer entry to edit */
    cr_assert_eq(vl_plan_write_file(&p, path, &err), VL_OK, "%s", err.msg);
    char *text = tu_read_file(path, n);
    vl_plan_free(&p);
    free(path);
    return text;
}

Test(verify_file, every_truncation_is_caught)
{
    vl_manifest *m = man5();
    size_t n;
    char *text = valid_text(m, &n);

    for (size_t cut = 1; cut < n - 1; cut++)
        check_text(text, cut, m, true, "cut", cut);
    check_text(text, n - 1, m, false, "cut", n - 1); /* only the last newline lost */
    free(text);
    vl_manifest_free(m);
}

Test(verify_file, every_single_byte_edit_is_caught)
{
    static const char subst[] = {'0', '7', 'x', '"', '\n', ' ', '['};
    vl_manifest *m = man5();
    size_t n;
    char *text = valid_text(m, &n);

    /* the last byte is the footer's newline: a space there is harmless */
    for (size_t at = 0; at + 1 < n; at++)
        for (size_t k = 0; k < sizeof subst; k++) {
            char was = text[at];
            if (was == subst[k])
                continue;
            text[at] = subst[k];
            check_text(text, n, m, true, "edit", at);
            text[at] = was;
        }
    free(text);
    vl_manifest_free(m);
}
