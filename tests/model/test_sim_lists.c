/* tests/model/test_sim_lists.c -- the simulator on explicit operation lists of any pipeline
 * depth, ids resolved or not (a ChunkFlow shape, the latest-slice guess), and the
 * property that every valid random list simulates without deadlock. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "planio.h"
#include "sim_fixture.h"
#include "testutil.h"

/* ---- explicit lists on any pipeline depth --------------------------------------
 *
 * A rank given as micro-batches of up to two segments and an explicit list.  Slices are
 * told apart by their token intervals: a plan read without its manifest numbers its ids
 * by first appearance (planio_read.c), so it simulates exactly as the plan it was
 * written from (read_without_manifest_simulates_the_same). */

#define XMB 24
#define XOP (3 * XMB)

typedef struct xseg { uint32_t sample, off, len; } xseg;
typedef struct xmb { uint32_t nseg; xseg seg[2]; } xmb;
typedef struct xrank {
    uint32_t nmb, nop;
    xmb mb[XMB];
    vl_op op[XOP];
    uint32_t npred[XMB], pred[XMB][2];   /* true slice predecessors */
} xrank;

static void x_mb(xrank *x, uint32_t nseg, const xseg *seg)
{
    xmb *b = &x->mb[x->nmb];
    cr_assert(x->nmb < XMB && nseg <= 2);
    b->nseg = nseg;
    x->npred[x->nmb] = 0;
    for (uint32_t j = 0; j < nseg; j++) {
        b->seg[j] = seg[j];
        if (seg[j].off == 0)
            continue;
        for (uint32_t q = x->nmb; q-- > 0;)     /* the true owner of the slice before */
            for (uint32_t i = 0; i < x->mb[q].nseg; i++)
                if (x->mb[q].seg[i].sample == seg[j].sample &&
                    x->mb[q].seg[i].off + x->mb[q].seg[i].len == seg[j].off) {
                    x->pred[x->nmb][x->npred[x->nmb]++] = q;
                    q = 0;
                    break;
                }
    }
    x->nmb++;
}

static void x_ops(xrank *x, const char *spec)
{
    x->nop = 0;
    for (const char *s = spec; *s; s++) {
        if (*s == ' ')
            continue;
        vl_op_kind k = *s == 'F' ? VL_OP_F : *s == 'R' ? VL_OP_R : VL_OP_B;
        x->op[x->nop++] = (vl_op){.mb = (uint32_t)strtoul(s + 1, NULL, 10), .kind = (uint8_t)k};
        while (s[1] >= '0' && s[1] <= '9')
            s++;
    }
}

/* One iteration of p: the rank x on pp stages. */
static void x_build(vl_plan *p, const xrank *x, int pp)
{
    vl_par par = {.tp = 1, .pp = pp, .sp = 1, .ckpt_layers = 0};
    vl_err err;
    cr_assert_eq(vl_plan_iter_begin(p, 0, &err), VL_OK);
    cr_assert_eq(vl_plan_rank_begin(p, 0, &par, &err), VL_OK);
    for (uint32_t m = 0; m < x->nmb; m++) {
        cr_assert_eq(vl_plan_mb_begin(p, 64, &err), VL_OK);
        for (uint32_t j = 0; j < x->mb[m].nseg; j++) {
            const xseg *g = &x->mb[m].seg[j];
            cr_assert_eq(vl_plan_seg(p, g->sample, g->off, g->len, &err), VL_OK);
        }
    }
    for (uint32_t i = 0; i < x->nop; i++)
        cr_assert_eq(vl_plan_op(p, x->op[i].mb, (vl_op_kind)x->op[i].kind, &err), VL_OK);
}

/* Simulate iteration it; the trace must respect every data dependency (pipeline,
 * F < R < B, the true slice order unless only guessed), one task at a time per stage,
 * and with one stage run the list as it is. */
static vl_sim_iter_result x_check(const vl_plan *p, size_t it, const vl_cost *c,
                                  const xrank *x, int pp, bool ignore_ops, bool slices)
{
    static const vl_sim_task *at[8][3][XMB];
    vl_sim_opts o = {.sched = VL_SCHED_1F1B, .ignore_ops = ignore_ops};
    vl_sim_iter_result r;
    vl_sim_trace t = {0};
    vl_err err = {0};
    uint32_t k = 0;

    cr_assert_eq(vl_sim_iter(p, it, c, &o, &r, NULL, &t, &err), VL_OK, "pp %d: %s", pp,
                 err.msg);
    memset(at, 0, sizeof at);
    for (size_t i = 0; i < t.ntasks; i++) {
        const vl_sim_task *a = &t.tasks[i];
        if (a->kind > VL_TASK_B)
            continue;
        cr_assert(a->stage < (uint32_t)pp && a->mb < x->nmb && !at[a->stage][a->kind][a->mb]);
        at[a->stage][a->kind][a->mb] = a;
        if (i > 0 && t.tasks[i - 1].stage == a->stage && t.tasks[i - 1].kind <= VL_TASK_B)
            cr_assert_geq(a->start, t.tasks[i - 1].end - EPS, "overlap on stage %u",
                          a->stage);
        if (pp == 1 && !ignore_ops) {  /* the list itself */
            cr_assert(k < x->nop && a->kind == x->op[k].kind && a->mb == x->op[k].mb,
                      "operation %u", k);
            k++;
        }
    }
    cr_assert(pp > 1 || ignore_ops || k == x->nop);
    for (int s = 0; s < pp; s++)
        for (uint32_t m = 0; m < x->nmb; m++) {
            const vl_sim_task *f = at[s][VL_TASK_F][m], *rc = at[s][VL_TASK_R][m],
                              *b = at[s][VL_TASK_B][m];
            cr_assert(f && b, "pp %d stage %d mb %u missing", pp, s, m);
            cr_assert_leq(f->end, (rc ? rc : b)->start + EPS);
            if (rc)
                cr_assert_leq(rc->end, b->start + EPS);
            if (s > 0)
                cr_assert_leq(at[s - 1][VL_TASK_F][m]->end, f->start + EPS);
            if (s + 1 < pp)
                cr_assert_leq(at[s + 1][VL_TASK_B][m]->end, b->start + EPS);
            for (uint32_t e = 0; slices && e < x->npred[m]; e++) {
                uint32_t q = x->pred[m][e];
                cr_assert_leq(at[s][VL_TASK_F][q]->end, f->start + EPS, "F%u F%u", q, m);
                cr_assert_leq(b->end, at[s][VL_TASK_B][q]->start + EPS, "B%u B%u", m, q);
            }
        }
    vl_sim_trace_free(&t);
    return r;
}

/* Simulate x on pp stages under its explicit list and (ignore_ops) default 1F1B. */
static void x_run(const vl_cost *c, const xrank *x, int pp)
{
    vl_plan a;
    vl_err err;
    static vl_manifest none;   /* the simulator only needs p->m set */

    cr_assert_eq(vl_plan_init(&a, &none, "test", 0, &err), VL_OK);
    x_build(&a, x, pp);
    x_check(&a, 0, c, x, pp, false, true);
    x_check(&a, 0, c, x, pp, true, true);
    vl_plan_free(&a);
}

/* The shape of a ChunkFlow iteration (pp = 4, K = 1) that once failed to simulate when
 * read back without its manifest: packs 0-4 (the first holds a sample of 4 tokens),
 * sample 100 in slices 5, 6 and sample 101 in slices 7-10.  With every id 0, slice 8
 * ([4, 8) of 101) was tied to the FIRST micro-batch holding a slice ending at 4 of
 * "sample 0", i.e. 5, so B8 had to precede B5 while the list runs B5 first: "stage 0
 * cannot run B5".  The stage orders were never at fault. */
static void cf_shape(xrank *x)
{
    memset(x, 0, sizeof *x);
    x_mb(x, 2, (const xseg[]){{1, 0, 4}, {2, 0, 3}});
    for (uint32_t i = 0; i < 4; i++)
        x_mb(x, 2, (const xseg[]){{3 + 2 * i, 0, 2}, {4 + 2 * i, 0, 5}});
    x_mb(x, 1, (const xseg[]){{100, 0, 4}});
    x_mb(x, 1, (const xseg[]){{100, 4, 2}});
    for (uint32_t k = 0; k < 4; k++)
        x_mb(x, 1, (const xseg[]){{101, 4 * k, k < 3 ? 4 : 1}});
    x_ops(x, "F0 B0 F1 B1 F2 B2 F3 B3 F4 B4 F5 F6 B6 R5 B5 F7 F8 F9 F10 B10 R9 B9 "
             "R8 B8 R7 B7");
}

Test(sim, chunkflow_shape_on_any_depth)
{
    fx f;
    xrank x;
    fx_init(&f, 8);
    cf_shape(&x);
    cr_assert_eq(x.npred[8], 1);
    cr_assert_eq(x.pred[8][0], 7);
    for (int pp = 1; pp <= 8; pp++)
        x_run(&f.c, &x, pp);
    fx_fini(&f);
}

/* A plan written and read back without its manifest (ids numbered by first appearance)
 * simulates exactly like the plan itself, under its explicit list and under 1F1B. */
Test(sim, read_without_manifest_simulates_the_same)
{
    fx f;
    xrank x;
    vl_plan a, g;
    vl_manifest *m = NULL;
    uint32_t len[102];
    char *dir = tu_tmpdir(), *path = tu_path(dir, "x.jsonl");

    for (size_t i = 0; i < 102; i++)
        len[i] = 20;
    cr_assert_eq(vl_manifest_from_lengths(&m, len, 102, NULL), VL_OK);
    fx_init(&f, 4);
    cf_shape(&x);
    cr_assert_eq(vl_plan_init(&a, m, "test", 0, &f.err), VL_OK);
    x_build(&a, &x, 4);
    cr_assert_eq(vl_plan_write_file(&a, path, &f.err), VL_OK, "%s", f.err.msg);
    cr_assert_eq(vl_plan_read(&g, NULL, path, NULL, &f.err), VL_OK, "%s", f.err.msg);
    for (int ignore = 0; ignore < 2; ignore++) {
        vl_sim_opts o = {.sched = VL_SCHED_1F1B, .ignore_ops = ignore};
        vl_sim_iter_result ra, rg;
        cr_assert_eq(vl_sim_iter(&a, 0, &f.c, &o, &ra, NULL, NULL, &f.err), VL_OK);
        cr_assert_eq(vl_sim_iter(&g, 0, &f.c, &o, &rg, NULL, NULL, &f.err), VL_OK);
        cr_assert_eq(ra.iter_time_ms, rg.iter_time_ms);
        cr_assert_eq(ra.peak_mem_gib, rg.peak_mem_gib);
    }
    vl_plan_free(&a);
    vl_plan_free(&g);
    vl_manifest_free(m);
    tu_rmtree(dir);
    free(dir);
    free(path);
    fx_fini(&f);
}

/* ---- property: every valid explicit list simulates on every depth --------------- */

static uint64_t x_rand(uint64_t *s)   /* xorshift64, fixed seed: deterministic */
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

/* Random micro-batches: packs of 1-2 whole samples, long samples cut into 2-5 slices
 * of 1-4 tokens whose micro-batches may interleave with other samples', and now and
 * then one micro-batch holding the next slices of two samples (two predecessors). */
static void x_random_layout(xrank *x, uint64_t *rs)
{
    uint32_t left[4] = {0}, off[4] = {0}, nlong = 1 + (uint32_t)(x_rand(rs) % 3);
    uint32_t next = 10, budget = 4 + (uint32_t)(x_rand(rs) % 13);

    memset(x, 0, sizeof *x);
    for (uint32_t i = 0; i < nlong; i++)
        left[i] = 2 + (uint32_t)(x_rand(rs) % 4);
    while (x->nmb < budget) {
        uint32_t open[4], nopen = 0, pick = (uint32_t)(x_rand(rs) % 8);
        for (uint32_t i = 0; i < nlong; i++)
            if (left[i] > 0)
                open[nopen++] = i;
        if (nopen == 0 || pick < 3) {          /* a pack */
            xseg sg[2] = {{next, 0, 1 + (uint32_t)(x_rand(rs) % 5)},
                          {next + 1, 0, 1 + (uint32_t)(x_rand(rs) % 5)}};
            next += 2;
            x_mb(x, 1 + (uint32_t)(x_rand(rs) % 2), sg);
            continue;
        }
        uint32_t two = nopen >= 2 && pick == 7, n = 0;
        xseg sg[2];
        for (uint32_t j = 0; j <= two; j++) {
            uint32_t i = open[(j + x_rand(rs)) % nopen];
            if (j == 1 && i == sg[0].sample)
                i = open[(i == open[0]) ? 1 : 0];
            sg[n] = (xseg){i, off[i], 1 + (uint32_t)(x_rand(rs) % 4)};
            off[i] += sg[n].len;
            left[i]--;
            n++;
        }
        x_mb(x, n, sg);
    }
}

/* A random valid list: any F whose slice predecessors are forwarded, the R of a
 * forwarded micro-batch chosen to recompute, any B whose R (if any) is done and whose
 * slice successors are backwarded. */
static void x_random_list(xrank *x, uint64_t *rs)
{
    uint8_t st[XMB], wants_r[XMB];
    vl_op cand[XMB];

    for (uint32_t m = 0; m < x->nmb; m++) {
        st[m] = 0;                              /* 0 none, 1 F, 2 R, 3 B */
        wants_r[m] = x_rand(rs) % 3 == 0;
    }
    x->nop = 0;
    for (;;) {
        uint32_t nc = 0;
        for (uint32_t m = 0; m < x->nmb; m++) {
            bool ok = true;
            if (st[m] == 0) {
                for (uint32_t e = 0; e < x->npred[m]; e++)
                    ok = ok && st[x->pred[m][e]] >= 1;
                if (ok)
                    cand[nc++] = (vl_op){.mb = m, .kind = VL_OP_F};
            } else if (st[m] == 1 && wants_r[m]) {
                cand[nc++] = (vl_op){.mb = m, .kind = VL_OP_R};
            } else if (st[m] < 3) {
                for (uint32_t q = m + 1; q < x->nmb; q++)
                    for (uint32_t e = 0; e < x->npred[q]; e++)
                        ok = ok && (x->pred[q][e] != m || st[q] == 3);
                if (ok)
                    cand[nc++] = (vl_op){.mb = m, .kind = VL_OP_B};
            }
        }
        if (nc == 0)
            break;
        vl_op op = cand[x_rand(rs) % nc];
        x->op[x->nop++] = op;
        st[op.mb] = (uint8_t)(op.kind + 1);
    }
    for (uint32_t m = 0; m < x->nmb; m++)
        cr_assert_eq(st[m], 3);
}

Test(sim, random_valid_lists_never_deadlock)
{
    fx f;
    xrank x;
    uint64_t rs = 0x9E3779B97F4A7C15ull;
    uint32_t multi = 0, interleaved = 0;

    fx_init(&f, 8);
    for (int c = 0; c < 300; c++) {
        x_random_layout(&x, &rs);
        x_random_list(&x, &rs);
        for (uint32_t m = 0; m < x.nmb; m++) {
            multi += x.npred[m] > 1;
            interleaved += x.npred[m] > 0 && x.pred[m][0] + 1 < m;
        }
        for (int pp = 1; pp <= 8; pp++)
            x_run(&f.c, &x, pp);
    }
    cr_assert(multi > 0 && interleaved > 0, "layouts too tame: %u %u", multi, interleaved);
    fx_fini(&f);
}
