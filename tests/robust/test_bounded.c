/* tests/robust/test_bounded.c -- bounded memory on any plan (issue 28 item 4): a small
 * plan whose numbers claim a huge world (a rank of 2^22-way sp, 2^20 stages, a GPU or
 * sample index near 2^32, 4e9 iterations, a million epochs, a capacity of 4e9 tokens)
 * never makes `verify`, `metrics` or `simulate` allocate by the claim: each runs within
 * a few hundred MiB (the largest of them once took 5.3 GB and 15.5 GiB).  The peak is
 * the children's (getrusage), so the limit holds under the sanitizers' shadow too. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "sha256.h"
#include "testutil.h"

#define RSS_LIMIT_KIB (768L * 1024)

static const char *const kinds[] = {"tp",   "pp",    "sp",     "ckpt", "cap", "dp",
                                    "gpu",  "sample", "off",   "iters", "epochs", "it"};

/* One iteration, one rank, one 10-token sample; `kind` inflates one number. */
static char *plan_text(const char *kind)
{
    char hdr[512], iter[1024], body[2048], hex[65], *out = malloc(4096);
    unsigned char dig[32];
    vl_sha256 h;
    int is = 0;

#define IS(k) (strcmp(kind, (k)) == 0)
    snprintf(hdr, sizeof hdr,
             "{\"type\":\"header\",\"schema\":\"vlplan.plan/1\",\"vlplan\":\"0.1.0\","
             "\"strategy\":\"pack\",\"seed\":7,\"params\":{},\"manifest\":{\"samples\":1,"
             "\"tokens\":10,\"sha256\":\"%064d\"},\"epochs\":%s,\"iterations\":%s}",
             0, IS("epochs") ? "1000000" : "1", IS("iters") ? "4000000000" : "1");
    snprintf(iter, sizeof iter,
             "{\"type\":\"iter\",\"it\":%s,\"epoch\":%s,\"tokens\":10,\"loss_tokens\":10,"
             "\"samples\":1,\"ranks\":[{\"dp\":%s,\"tp\":%s,\"pp\":%s,\"sp\":%s,"
             "\"ckpt_layers\":%s,\"gpus\":[%s],\"mbs\":[{\"seg\":[[%s,%s,10]],"
             "\"cu_seqlens\":[0,10],\"tokens\":10,\"cap\":%s}]}]}",
             IS("it") ? "4000000000" : "0", IS("epochs") ? "999999" : "0",
             IS("dp") ? "2000000000" : "0", IS("tp") ? "1048576" : "1",
             IS("pp") ? "1048576" : "1", IS("sp") ? "4194304" : "1",
             IS("ckpt") ? "1073741824" : "0", IS("gpu") ? "4000000000" : "0",
             IS("sample") ? "4000000000" : "0", IS("off") ? "4000000000" : "0",
             IS("cap") ? "4000000000" : "16");
#undef IS
    snprintf(body, sizeof body, "%s\n%s\n", hdr, iter);
    vl_sha256_init(&h);
    vl_sha256_update(&h, body, strlen(body));
    vl_sha256_final(&h, dig);
    vl_sha256_hex(dig, hex);
    is = snprintf(out, 4096, "%s{\"type\":\"footer\",\"iterations\":1,\"samples\":1,"
                             "\"tokens\":10,\"dropped\":[],\"sha256\":\"%s\"}\n", body, hex);
    cr_assert(is > 0 && is < 4096);
    return out;
}

Test(bounded, huge_claims_in_a_small_plan_allocate_nothing_by_them)
{
    char *dir = tu_tmpdir(), *plan = tu_path(dir, "p.jsonl"), *man = tu_path(dir, "m.jsonl");
    struct rusage ru;

    cr_assert_eq(tu_write_file(man, "{\"id\":\"a\",\"length\":10}\n"), 0);
    for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
        char *text = plan_text(kinds[k]);
        const char *verify[] = {"verify", "-q", plan, man, NULL};
        const char *metrics[] = {"metrics", plan, NULL};
        const char *simulate[] = {"simulate", plan, NULL};
        const char *const *cmds[] = {verify, metrics, simulate};
        cr_assert_eq(tu_write_file(plan, text), 0);
        for (size_t c = 0; c < 3; c++) {
            tu_result r;
            cr_assert_eq(tu_run(&r, NULL, cmds[c]), 0);
            cr_expect(r.status == 0 || r.status == 1 || r.status == 65 || r.status == 78,
                      "%s %s: exit %d: %s", kinds[k], cmds[c][0], r.status, r.err);
            tu_result_free(&r);
        }
        cr_assert_eq(getrusage(RUSAGE_CHILDREN, &ru), 0);
        cr_expect_leq(ru.ru_maxrss, RSS_LIMIT_KIB, "%s: a child peaked at %ld KiB", kinds[k],
                      ru.ru_maxrss);
        free(text);
    }
    tu_rmtree(dir);
    free(plan);
    free(man);
    free(dir);
}
