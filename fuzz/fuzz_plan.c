/* fuzz/fuzz_plan.c -- a whole plan file on any bytes, read and then checked, measured
 * and simulated as `vlplan verify`, `metrics` and `simulate` do (issue 13, item 1): an
 * iteration at a time (vl_plan_read_each), the cost model from the config the header
 * carries (the built-in default when it has none), the verifier against a fixed
 * manifest, the metrics and the simulator accumulators; then the same file read whole
 * (vl_plan_read) through vl_plan_verify_read, vl_metrics_compute and vl_sim_plan.  The
 * first input byte chooses with or without the manifest and one or two reader threads;
 * the rest is the file.  Findings are no crash, no leak, no undefined behaviour, and no
 * failure without a message. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "cost.h"
#include "metrics.h"
#include "planio.h"
#include "sim.h"
#include "verify.h"
#include "vlplan_strategy.h"

static void check(int ok, const char *what, const char *detail)
{
    if (!ok) {
        fprintf(stderr, "fuzz_plan: %s: %s\n", what, detail);
        abort();
    }
}

/* A failure must say what failed; only a bug is "internal". */
static void failed_well(vl_status st, const vl_err *err)
{
    check(err->msg[0] != '\0', "a failure without a message", vl_status_name(st));
    check(st != VL_EINTERNAL, "internal error", err->msg);
}

typedef struct walk {
    const vl_manifest *m;
    bool started;
    bool have_cost;
    vl_config cfg;
    vl_cost cost;
    vl_verify_report rep;
    vl_verifier *v;
    vl_metrics_acc *ma;
    vl_sim_acc *sa;
    bool sim_failed; /* a plan the simulator refuses is still verified */
} walk;

/* The cost model from the header's config, as eval_cost_load does. */
static void load_cost(walk *w, const vl_plan *p)
{
    vl_err err = {0};
    vl_status st = vl_config_init_default(&w->cfg, &err);

    check(st == VL_OK, "defaults", err.msg);
    if (p->config_json)
        st = vl_config_load_string(&w->cfg, p->config_json, "plan header config", &err);
    if (st == VL_OK)
        st = vl_config_finalize(&w->cfg, &err);
    if (st == VL_OK && (st = vl_cost_init(&w->cost, &w->cfg, &err)) == VL_OK) {
        w->have_cost = true;
        return;
    }
    failed_well(st, &err);
    vl_config_free(&w->cfg);
}

static vl_status start(walk *w, const vl_plan *p, vl_err *err)
{
    vl_status st;

    if (w->started)
        return VL_OK;
    w->started = true;
    load_cost(w, p);
    if ((st = vl_verifier_new(&w->v, w->m, w->have_cost ? &w->cost : NULL, &vl_registry_rules,
                              &w->rep, err)) ||
        (st = vl_metrics_acc_new(&w->ma, err)))
        return st;
    if (w->have_cost && (st = vl_sim_acc_new(&w->sa, &w->cost, NULL, err)) != VL_OK)
        return st;
    return VL_OK;
}

static vl_status visit(void *ud, vl_plan *p, vl_err *err)
{
    walk *w = ud;
    vl_status st;

    if ((st = start(w, p, err)) != VL_OK ||
        (st = vl_verifier_iter(w->v, p, 0, err)) != VL_OK ||
        (st = vl_metrics_acc_iter(w->ma, p, 0, err)) != VL_OK)
        return st;
    if (w->sa && !w->sim_failed) {
        vl_err e = {0};
        if ((st = vl_sim_acc_iter(w->sa, p, 0, NULL, &e)) != VL_OK) {
            failed_well(st, &e);
            w->sim_failed = true;
        }
    }
    return VL_OK;
}

static void finish(walk *w, const vl_plan *p, const vl_plan_file *f)
{
    vl_err err = {0};
    vl_metrics mt;
    vl_sim_summary ss;
    vl_status st = start(w, p, &err);

    if (st == VL_OK && (st = vl_verifier_finish(w->v, p, f, &err)) == VL_EVERIFY)
        check(w->rep.violations > 0 && w->rep.nmsgs > 0, "a refusal without a reason", "");
    if (st != VL_OK && st != VL_EVERIFY)
        failed_well(st, &err);
    if (w->ma && (st = vl_metrics_acc_finish(w->ma, p, &mt, &err)) != VL_OK)
        failed_well(st, &err);
    if (w->sa && !w->sim_failed)
        vl_sim_acc_finish(w->sa, &ss);
}

static void walk_free(walk *w)
{
    vl_verifier_free(w->v);
    vl_metrics_acc_free(w->ma);
    vl_sim_acc_free(w->sa);
    if (w->have_cost)
        vl_config_free(&w->cfg);
}

static void streamed(const char *path, vl_manifest *m, int threads)
{
    static vl_plan_file f;
    walk w = {.m = m};
    vl_plan p;
    vl_err err = {0};
    vl_status st;

    memset(&p, 0, sizeof p);
    st = vl_plan_read_each(&p, &f, path, m, threads, visit, &w, &err);
    if (st == VL_OK)
        finish(&w, &p, &f);
    else
        failed_well(st, &err);
    walk_free(&w);
    vl_plan_free(&p);
}

/* The whole-plan functions, on the plan read whole. */
static void whole(const char *path, vl_manifest *m)
{
    static vl_plan_file f;
    static vl_verify_report rep;
    walk w = {.m = m};
    vl_plan p;
    vl_metrics mt;
    vl_sim_summary ss;
    vl_err err = {0};
    vl_status st;

    memset(&p, 0, sizeof p);
    if ((st = vl_plan_read(&p, &f, path, m, &err)) != VL_OK) {
        failed_well(st, &err);
        vl_plan_free(&p);
        return;
    }
    load_cost(&w, &p);
    st = vl_plan_verify_read(&p, &f, w.have_cost ? &w.cost : NULL, &vl_registry_rules, &rep,
                             &err);
    if (st != VL_OK && st != VL_EVERIFY)
        failed_well(st, &err);
    if ((st = vl_metrics_compute(&p, &mt, &err)) != VL_OK)
        failed_well(st, &err);
    if (w.have_cost && (st = vl_sim_plan(&p, &w.cost, NULL, &ss, &err)) != VL_OK)
        failed_well(st, &err);
    walk_free(&w);
    vl_plan_free(&p);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static vl_manifest *m;
    static char path[64];
    uint8_t mode;
    FILE *f;

    if (!m) {
        uint32_t len[8] = {100, 200, 300, 400, 500, 600, 700, 5000};
        if (vl_manifest_from_lengths(&m, len, 8, NULL) != VL_OK)
            abort();
        snprintf(path, sizeof path, "/tmp/fuzz_plan.%d.jsonl", (int)getpid());
    }
    if (size == 0)
        return 0;
    mode = data[0];
    if (!(f = fopen(path, "wb")))
        abort();
    fwrite(data + 1, 1, size - 1, f);
    fclose(f);
    streamed(path, mode & 1 ? NULL : m, mode & 2 ? 2 : 1);
    if (mode & 4)
        whole(path, mode & 1 ? NULL : m);
    return 0;
}
