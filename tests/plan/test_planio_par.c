/* tests/plan/test_planio_par.c -- reading with several threads (lib/plan/planio_par.c) gives
 * what one thread gives: the same iterations visited in the same order, the same
 * messages, the same result -- on a plan mixing every construct, and on plans broken in
 * the ways that exercise the ordered hand-back (invalid JSON that makes no iteration,
 * a wrong number, an unknown id, a cut-off end, data after the footer). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "planio.h"
#include "testutil.h"

TestSuite(planio_par, .init = tu_scratch_init, .fini = tu_scratch_fini);

/* ---- what a read visited ---- */

typedef struct seen {
    uint64_t *digest;
    size_t n, cap;
} seen;

static uint64_t mix(uint64_t h, uint64_t v)
{
    h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
    return h * 0x100000001b3ull;
}

/* Every field of the visited iteration, in a number. */
static uint64_t digest(const vl_plan *p)
{
    uint64_t h = mix(p->iter_base, p->niters);

    for (size_t i = 0; i < p->niters; i++)
        h = mix(mix(mix(h, p->iters[i].epoch), (uint64_t)p->iters[i].candidate),
                p->iters[i].nranks);
    for (size_t r = 0; r < p->nranks; r++) {
        const vl_rank *k = &p->ranks[r];
        h = mix(mix(mix(mix(h, k->nmb), k->nbwd), (uint64_t)k->dp), (uint64_t)k->group);
        h = mix(mix(mix(mix(h, (uint64_t)k->par.tp), (uint64_t)k->par.sp),
                    (uint64_t)k->par.pp), (uint64_t)k->par.ckpt_layers);
        h = mix(mix(mix(h, k->k), k->nop), k->gpu0);
    }
    for (size_t i = 0; i < p->nmbs; i++)
        h = mix(mix(mix(mix(h, p->mbs[i].nseg), p->mbs[i].cap), p->mbs[i].tokens),
                p->mbs[i].share);
    for (size_t i = 0; i < p->nsegs; i++)
        h = mix(mix(mix(mix(h, p->segs[i].sample), p->segs[i].off), p->segs[i].len),
                (uint64_t)vl_plan_seg_cpi(p, i));
    for (size_t i = 0; i < p->nops; i++)
        h = mix(mix(h, p->ops[i].mb), p->ops[i].kind);
    for (size_t i = 0; i < p->ngpus; i++)
        h = mix(h, p->gpus[i]);
    for (size_t i = 0; i < p->nmembers; i++)
        h = mix(h, (uint64_t)p->members[i]);
    return h;
}

static vl_status visit(void *ud, vl_plan *p, vl_err *err)
{
    seen *s = ud;

    if (s->n == s->cap) {
        s->cap = s->cap ? 2 * s->cap : 64;
        s->digest = realloc(s->digest, s->cap * sizeof *s->digest);
        if (!s->digest)
            return vl_seterr(err, VL_ENOMEM, "test: out of memory");
    }
    s->digest[s->n++] = digest(p);
    return VL_OK;
}

typedef struct outcome {
    vl_status st;
    vl_err err;
    vl_plan_file f;
    seen s;
    uint64_t iterations;
    size_t ndrops;
} outcome;

static void read_with(const char *path, vl_manifest *m, int threads, outcome *o)
{
    vl_plan p;

    memset(o, 0, sizeof *o);
    o->st = vl_plan_read_each(&p, &o->f, path, m, threads, visit, &o->s, &o->err);
    if (o->st == VL_OK) {
        o->iterations = p.iter_base;
        o->ndrops = p.ndrops;
        vl_plan_free(&p);
    }
}

static void same_msgs(const vl_msgs *a, const vl_msgs *b, const char *what)
{
    cr_assert_eq(a->total, b->total, "%s: %zu vs %zu messages", what, a->total, b->total);
    cr_assert_eq(a->n, b->n, "%s", what);
    for (size_t i = 0; i < a->n; i++)
        cr_assert_str_eq(a->msg[i], b->msg[i], "%s", what);
}

/* One thread and several give the same outcome. */
static void same_either_way(const char *path, vl_manifest *m, const char *what)
{
    static outcome one, many;

    read_with(path, m, 1, &one);
    for (int threads = 2; threads <= 5; threads += 3) {
        read_with(path, m, threads, &many);
        cr_assert_eq(one.st, many.st, "%s, %d threads: status %d vs %d (%s | %s)", what,
                     threads, one.st, many.st, one.err.msg, many.err.msg);
        cr_assert_str_eq(one.err.msg, many.err.msg, "%s", what);
        cr_assert_eq(one.s.n, many.s.n, "%s, %d threads: %zu vs %zu visits", what, threads,
                     one.s.n, many.s.n);
        for (size_t i = 0; i < one.s.n; i++)
            cr_assert_eq(one.s.digest[i], many.s.digest[i], "%s: visit %zu differs", what, i);
        same_msgs(&one.f.errors, &many.f.errors, what);
        same_msgs(&one.f.findings, &many.f.findings, what);
        cr_assert_eq(one.f.unknown_ids, many.f.unknown_ids, "%s", what);
        cr_assert(memcmp(one.f.by_inv, many.f.by_inv, sizeof one.f.by_inv) == 0, "%s", what);
        cr_assert(one.f.sha == many.f.sha && one.f.has_footer == many.f.has_footer &&
                  one.iterations == many.iterations && one.ndrops == many.ndrops, "%s", what);
        free(many.s.digest);
    }
    free(one.s.digest);
}

/* ---- plans to read ---- */

/* Line k (0-based) of a file, malloc'd without its newline, or NULL. */
static char *line_of(const char *path, int k)
{
    char *text = tu_read_file(path, NULL), *s, *e, *out;

    cr_assert_not_null(text, "%s", path);
    for (s = text; k > 0 && s; k--)
        s = (s = strchr(s, '\n')) ? s + 1 : NULL;
    if (!s || !*s) {
        free(text);
        return NULL;
    }
    e = strchr(s, '\n');
    out = strndup(s, e ? (size_t)(e - s) : strlen(s));
    free(text);
    return out;
}

/* An iteration line renumbered as iteration `it`. */
static void put_iter(FILE *f, const char *line, int it)
{
    const char *rest = strstr(line, ",\"epoch\"");
    cr_assert_not_null(rest);
    fprintf(f, "{\"type\":\"iter\",\"it\":%d%s\n", it, rest);
}

typedef enum { INTACT, BAD_JSON, BAD_NUMBER, UNKNOWN_ID, CUT_OFF, AFTER_FOOTER } breakage;

/* A header, 60 iterations drawn in turn from every golden plan and a line using every
 * construct (CP placement, shared and backward packs, schedules, a candidate), a footer;
 * broken as asked. */
static char *mixed_plan(breakage b)
{
    static const char *const src[] = {"testdata/golden/hbp.jsonl",
                                      "testdata/golden/chunkflow.jsonl",
                                      "testdata/golden/pack.jsonl",
                                      "testdata/golden/random.jsonl",
                                      "fuzz/corpus/planline/rich.jsonl"};
    char *path = tu_path(tu_scratch, "mixed.jsonl"), *head = line_of(src[0], 0);
    FILE *f = fopen(path, "w");

    cr_assert(f && head);
    fprintf(f, "%s\n", head);
    for (int it = 0; it < 60; it++) {
        int s = it % 5;
        char *line = line_of(src[s], s == 4 ? 0 : 1 + it % 3);
        cr_assert_not_null(line);
        if (b == BAD_JSON && it == 10)
            fprintf(f, "{\"type\":\"iter\",\"it\":10,\"epoch\":0,\n");
        else if (b == BAD_NUMBER && it == 20)
            put_iter(f, line, 999);
        else if (b == UNKNOWN_ID && it == 30)
            fprintf(f, "{\"type\":\"iter\",\"it\":30,\"epoch\":0,\"ranks\":[{\"dp\":0,\"mbs\":"
                       "[{\"seg\":[[99999999,0,5]]}]}]}\n");
        else if (b == CUT_OFF && it == 59)
            fprintf(f, "%.40s", line);
        else
            put_iter(f, line, it);
        free(line);
    }
    if (b != CUT_OFF)
        fprintf(f, "{\"type\":\"footer\",\"iterations\":60,\"samples\":1,\"tokens\":1,"
                   "\"dropped\":[[2,0,5,\"truncated\"]],\"sha256\":\"00\"}\n");
    if (b == AFTER_FOOTER)
        fprintf(f, "{\"type\":\"iter\",\"it\":60,\"epoch\":0,\"ranks\":[]}\n");
    cr_assert_eq(fclose(f), 0);
    free(head);
    return path;
}

static vl_manifest *golden_manifest(void)
{
    vl_manifest *m = NULL;
    vl_manifest_opts mo = {0};
    vl_err err = {0};
    const char *in[] = {"testdata/golden/manifest.jsonl"};

    cr_assert_eq(vl_manifest_read(&m, in, 1, &mo, &err), VL_OK, "%s", err.msg);
    return m;
}

Test(planio_par, threads_read_what_one_thread_reads)
{
    static const char *const names[] = {"intact", "invalid JSON", "a wrong number",
                                        "an unknown id", "cut off", "data after the footer"};
    vl_manifest *m = golden_manifest();

    for (int b = INTACT; b <= AFTER_FOOTER; b++) {
        char *path = mixed_plan((breakage)b), what[64];
        snprintf(what, sizeof what, "%s, no manifest", names[b]);
        same_either_way(path, NULL, what);
        snprintf(what, sizeof what, "%s, with the manifest", names[b]);
        same_either_way(path, m, what);
        free(path);
    }
    vl_manifest_free(m);
}

Test(planio_par, golden_plans_read_the_same_with_threads)
{
    static const char *const g[] = {"random", "sorted", "pack", "hbp", "chunkflow"};
    vl_manifest *m = golden_manifest();

    for (size_t i = 0; i < sizeof g / sizeof g[0]; i++) {
        char path[128];
        snprintf(path, sizeof path, "testdata/golden/%s.jsonl", g[i]);
        same_either_way(path, m, path);
    }
    vl_manifest_free(m);
}
