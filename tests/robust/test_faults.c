/* tests/robust/test_faults.c -- fault injection (issue 13, item 5): every command on a small
 * input, run once to count its allocations, writes, fsyncs and renames, then once per
 * call N with the N-th call failing (tests/fault_inject.c, in the sanitizer build of
 * vlplan only; with another binary the tests skip).  Each faulted run must exit 71 (an
 * allocation) or 74 (write, fsync, rename), leak nothing (LeakSanitizer changes the exit
 * status), leave no temporary, and leave the outputs of an earlier run as they were,
 * all of them: a plan and its metrics go together or not at all.  Or, where the failed
 * call was one the program can do without (a realloc that only shrinks, say), succeed
 * with outputs equal to those of a run without faults.  A run whose N is past the calls
 * it made must succeed likewise.  (compare runs its rows in forked children, whose
 * counts the parent cannot see: not here.)
 *
 * Allocations are many (about a thousand for a plan), so by default 40 of them spread
 * evenly are failed per command; VLPLAN_FAULT_POINTS=all fails every one (make
 * fault-all), a number sets how many. */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "testutil.h"

#define MAX_ARGS 16
#define MAX_OUTS 2

typedef struct fcase {
    const char *name;
    const char *args[MAX_ARGS];   /* "@/" at the start of an argument: the scratch dir */
    const char *outs[MAX_OUTS];   /* outputs (names in the scratch dir), NULL-ended */
    const char *kind;             /* malloc, write, fsync or rename */
} fcase;

#define PLAN_ARGS "plan", "-q", "-s", "pack", "-o", "@/p.jsonl", "--metrics", "@/m.json", "@/m.txt"
#define HBP_ARGS "plan", "-q", "-s", "hbp", "-o", "@/p.jsonl.zst", "--metrics", "@/m.json", \
                 "@/m.txt"
#define GEN_ARGS "gen", "--dist", "lmsys", "-n", "40", "--seed", "3", "-o", "@/g.jsonl"
#define SVG_ARGS "simulate", "@/in.jsonl", "--svg", "@/s.svg"

#define FOUR(name, args, o1, o2)                                                 \
    {name "/malloc", {args}, {o1, o2}, "malloc"}, {name "/write", {args}, {o1, o2}, "write"}, \
    {name "/fsync", {args}, {o1, o2}, "fsync"}, {name "/rename", {args}, {o1, o2}, "rename"}

static const fcase cases[] = {
    FOUR("plan", PLAN_ARGS, "p.jsonl", "m.json"),
    FOUR("plan_hbp_zst", HBP_ARGS, "p.jsonl.zst", "m.json"),
    FOUR("gen", GEN_ARGS, "g.jsonl", NULL),
    FOUR("simulate_svg", SVG_ARGS, "s.svg", NULL),
    {"verify/malloc", {"verify", "-q", "-j", "2", "@/in.jsonl", "@/m.txt"}, {NULL}, "malloc"},
    {"metrics/malloc", {"metrics", "-j", "2", "@/in.jsonl"}, {NULL}, "malloc"},
    {"stats/malloc", {"stats", "@/m.txt"}, {NULL}, "malloc"},
    {"config/malloc", {"config", "--dump", "--set", "training.pp=2"}, {NULL}, "malloc"},
};

#define NCASES (sizeof cases / sizeof cases[0])

/* Indices, not the cases: a test runs in a new process, where the cases' string
 * pointers would not be valid. */
ParameterizedTestParameters(faults, each_call)
{
    static int index[NCASES];

    for (size_t i = 0; i < NCASES; i++)
        index[i] = (int)i;
    return cr_make_param_array(int, index, NCASES);
}

typedef struct counts {
    unsigned long n[4];
    int hit;
    bool ok;               /* the report was written */
} counts;

static const char *const kinds[4] = {"malloc", "write", "fsync", "rename"};

static counts read_report(const char *path)
{
    counts c = {{0}, 0, false};
    char *t = tu_read_file(path, NULL);

    if (t && sscanf(t, "malloc %lu write %lu fsync %lu rename %lu hit %d", &c.n[0], &c.n[1],
                    &c.n[2], &c.n[3], &c.hit) == 5)
        c.ok = true;
    free(t);
    remove(path);
    return c;
}

typedef struct scratch {
    char *dir, *report;
    char *argv[MAX_ARGS + 1];
    char *want[MAX_OUTS];         /* the outputs of the run without faults */
    size_t want_len[MAX_OUTS];
} scratch;

static void expand(scratch *s, const fcase *fc)
{
    int i;

    for (i = 0; i < MAX_ARGS && fc->args[i]; i++)
        s->argv[i] = strncmp(fc->args[i], "@/", 2) == 0 ? tu_path(s->dir, fc->args[i] + 2)
                                                        : strdup(fc->args[i]);
    s->argv[i] = NULL;
}

/* A run with fault spec (NULL: none); its status, and the counts it reports. */
static int run(scratch *s, const char *spec, counts *c)
{
    tu_result r;
    int st;

    if (spec)
        setenv("VLPLAN_FAULT", spec, 1);
    else
        unsetenv("VLPLAN_FAULT");
    setenv("VLPLAN_FAULT_REPORT", s->report, 1);
    cr_assert_eq(tu_run(&r, NULL, (const char *const *)s->argv), 0);
    st = r.status;
    *c = read_report(s->report);
    if (spec && c->hit && st != 0 && st != 71 && st != 74)
        cr_log_warn("%s: exit %d: %s", spec, st, r.err);
    tu_result_free(&r);
    return st;
}

/* The inputs every case may read, and the outputs of "an earlier run". */
static void prepare(scratch *s, const fcase *fc)
{
    char *p;

    p = tu_path(s->dir, "m.txt");
    cr_assert_eq(tu_write_file(p, "100\n2000\n300\n4000\n500\n600\n7000\n80\n"), 0);
    free(p);
    for (int i = 0; i < MAX_OUTS && fc->outs[i]; i++) {
        p = tu_path(s->dir, fc->outs[i]);
        cr_assert_eq(tu_write_file(p, "OLD\n"), 0);
        free(p);
    }
}

/* The plan verify, metrics and simulate read: made by a run without faults. */
static void make_input_plan(scratch *s)
{
    char *in = tu_path(s->dir, "in.jsonl"), *m = tu_path(s->dir, "m.txt");
    const char *args[] = {"plan", "-q", "-s", "pack", "-o", in, m, NULL};
    tu_result r;

    unsetenv("VLPLAN_FAULT");
    unsetenv("VLPLAN_FAULT_REPORT");
    cr_assert_eq(tu_run(&r, NULL, args), 0);
    cr_assert_eq(r.status, 0, "%s", r.err);
    tu_result_free(&r);
    free(in);
    free(m);
}

/* Output i's content (malloc'd). */
static char *output(const scratch *s, const fcase *fc, int i, size_t *len)
{
    char *p = tu_path(s->dir, fc->outs[i]);
    char *t = tu_read_file(p, len);

    free(p);
    return t;
}

/* Every output still "OLD\n" (old = true), or every one as the run without faults
 * wrote it (the metrics hold timings: there, any complete JSON object). */
static void outputs_are(const scratch *s, const fcase *fc, bool old, const char *spec)
{
    for (int i = 0; i < MAX_OUTS && fc->outs[i]; i++) {
        size_t len = 0;
        char *t = output(s, fc, i, &len);
        cr_assert_not_null(t, "%s: %s is gone", spec, fc->outs[i]);
        if (old) {
            cr_assert_str_eq(t, "OLD\n", "%s: %s was changed", spec, fc->outs[i]);
        } else if (strcmp(fc->outs[i], "m.json") == 0) {
            json_t *j = json_loads(t, 0, NULL);
            cr_assert(json_is_object(j), "%s: %s is not a JSON object", spec, fc->outs[i]);
            json_decref(j);
        } else {
            cr_assert(s->want[i] && s->want_len[i] == len && memcmp(t, s->want[i], len) == 0,
                      "%s: %s differs from the run without faults", spec, fc->outs[i]);
        }
        free(t);
    }
}

static int points_wanted(void)
{
    const char *e = getenv("VLPLAN_FAULT_POINTS");

    if (e && strcmp(e, "all") == 0)
        return 0;
    return e && atoi(e) > 0 ? atoi(e) : 40;
}

/* Call n of the case's kind failed: 71 or 74, nothing changed, nothing left; or, past
 * the last call, a normal run. */
static void one_point(scratch *s, const fcase *fc, int k, unsigned long n, int entries)
{
    char spec[64];
    counts c;
    int st;

    snprintf(spec, sizeof spec, "%s:%lu", fc->kind, n);
    prepare(s, fc);
    st = run(s, spec, &c);
    cr_assert(c.ok, "%s: %s: no report (crashed?), exit %d", fc->name, spec, st);
    if (!c.hit || st == 0) {   /* past the last call, or a call it can do without */
        cr_assert_eq(st, 0, "%s: %s: exit %d without a fault", fc->name, spec, st);
        outputs_are(s, fc, false, spec);
        cr_assert_eq(tu_count_entries(s->dir), entries, "%s: %s: a temporary was left",
                     fc->name, spec);
        return;
    }
    cr_assert_eq(st, k == 0 ? 71 : 74, "%s: %s: exit %d", fc->name, spec, st);
    outputs_are(s, fc, true, spec);
    cr_assert_eq(tu_count_entries(s->dir), entries, "%s: %s: a temporary was left", fc->name,
                 spec);
}

ParameterizedTest(int *idx, faults, each_call)
{
    const fcase *fc = &cases[*idx];
    scratch s = {tu_tmpdir(), NULL, {NULL}, {NULL}, {0}};
    int k = 0, entries;
    unsigned long want = (unsigned long)points_wanted(), total, step, n;
    counts c;

    cr_assert_not_null(s.dir);
    s.report = tu_path(s.dir, "report.txt");
    while (strcmp(kinds[k], fc->kind) != 0)
        k++;
    expand(&s, fc);
    prepare(&s, fc);
    make_input_plan(&s);
    entries = tu_count_entries(s.dir);
    cr_assert_eq(run(&s, NULL, &c), 0, "%s: the run without faults failed", fc->name);
    if (!c.ok)
        cr_skip_test("this vlplan has no fault injection (a sanitizer build has it)");
    for (int i = 0; i < MAX_OUTS && fc->outs[i]; i++) {
        s.want[i] = output(&s, fc, i, &s.want_len[i]);
        cr_assert_str_neq(s.want[i], "OLD\n", "%s: %s was not written", fc->name, fc->outs[i]);
    }
    total = c.n[k];
    if (fc->outs[0] && k > 0)
        cr_assert_gt(total, 0, "%s: an output without a single %s", fc->name, fc->kind);
    step = want && total > want ? (total + want - 1) / want : 1;
    /* every step-th call, the last one, and one past it */
    for (n = 1;; n = n == total ? total + 1 : n + step > total ? total : n + step) {
        one_point(&s, fc, k, n, entries);
        if (n > total)
            break;
    }
    for (int i = 0; s.argv[i]; i++)
        free(s.argv[i]);
    for (int i = 0; i < MAX_OUTS; i++)
        free(s.want[i]);
    tu_rmtree(s.dir);
    free(s.dir);
    free(s.report);
}
