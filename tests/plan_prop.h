/* tests/plan_prop.h -- random planning cases, shared by the property loop (plan and verify
 * agree: tests/robust/test_soak.c, a few hundred cases; tools/soak.c, `make soak`) and the
 * mutation test (tests/robust/test_mutation.c).  A case is a pure function of its seed: a
 * manifest, a strategy from the registry and settings (degrees, model, lengths, batch,
 * oversize policy, epochs, recompute, ZeRO, packer, the strategy's knobs); its
 * description reads as the `vlplan plan` command that reproduces it.
 *
 * pp_check plans a case the way `vlplan plan` does (vl_run_plan into the streaming plan
 * writer, a file), reads the file back the way `vlplan verify` does (an iteration at a
 * time, the config from the plan's own header) and requires the two to agree: a plan
 * that was written passes verify (memory included; with --allow-oom, exactly its
 * iterations over memory are reported), or plan refused it (memory, oversize, a config
 * the strategy rejects).  A self-check failure (VL_EINTERNAL) is a finding too: the
 * strategy made a plan its own checker rejects.  Header-only (static functions): each
 * includer is one program. */
#ifndef VLPLAN_PLAN_PROP_H
#define VLPLAN_PLAN_PROP_H

#include <fcntl.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "cost.h"
#include "manifest.h"
#include "planio.h"
#include "rng.h"
#include "run.h"
#include "verify.h"
#include "vlplan_strategy.h"

#define PP_STREAM UINT64_C(0x736f616b)   /* "soak" */

typedef struct pp_case {
    uint64_t seed;
    const vl_strategy *s;
    vl_manifest *m;
    vl_config cfg;        /* finalized */
    bool allow_oom;
    char sets[1024];      /* the --set options that made cfg */
    char desc[1400];      /* "seed N: vlplan plan -s S --set ... (n samples, ...)" */
} pp_case;

typedef enum { PP_PLANNED, PP_REFUSED, PP_FINDING } pp_outcome;

static inline uint64_t pp_pick(vl_rng *r, uint64_t n)
{
    return vl_rng_below(r, n);
}

static inline const char *pp_one(vl_rng *r, const char *const *v, size_t n)
{
    return v[pp_pick(r, n)];
}
#define PP_ONE(r, ...) pp_one((r), (const char *const[]){__VA_ARGS__}, \
                              sizeof((const char *const[]){__VA_ARGS__}) / sizeof(char *))

/* Append "--set KEY=VALUE" to the case's list (applied in order by pp_config). */
#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
static inline void pp_add(pp_case *c, const char *fmt, ...)
{
    size_t n = strlen(c->sets);
    va_list ap;

    if (n + 2 >= sizeof c->sets)
        return;
    if (n > 0)
        c->sets[n++] = ' ';
    va_start(ap, fmt);
    vsnprintf(c->sets + n, sizeof c->sets - n, fmt, ap);
    va_end(ap);
}

/* cfg from the default with every assignment of c->sets applied, finalized. */
static inline vl_status pp_config(pp_case *c, vl_err *err)
{
    char buf[sizeof c->sets], *save = NULL, *tok;
    vl_status st = vl_config_init_default(&c->cfg, err);

    snprintf(buf, sizeof buf, "%s", c->sets);
    for (tok = strtok_r(buf, " ", &save); st == VL_OK && tok; tok = strtok_r(NULL, " ", &save))
        st = vl_config_set(&c->cfg, tok, err);
    if (st == VL_OK)
        st = vl_config_finalize(&c->cfg, err);
    if (st != VL_OK)
        vl_config_free(&c->cfg);
    return st;
}

/* Degrees, model and cluster: a random combination, often one the config refuses
 * (then the case keeps degrees 1). */
static inline void pp_layout(pp_case *c, vl_rng *r, bool degrees)
{
    pp_add(c, "model.preset=%s", PP_ONE(r, "qwen2.5-0.5b", "qwen2.5-0.5b", "qwen2.5-0.5b",
                                        "llama3.1-8b", "qwen2.5-7b", "llama2-7b",
                                        "qwen2.5-14b", "llama3.1-70b"));
    pp_add(c, "cluster.gpu=%s", PP_ONE(r, "h100-80gb", "a100-80gb"));
    pp_add(c, "cluster.gpus=%d", 1 << pp_pick(r, 8));
    if (pp_pick(r, 4) == 0)
        pp_add(c, "cost.comm=false");
    if (pp_pick(r, 4) == 0)
        pp_add(c, "training.dp_sync=micro_step");
    if (!degrees)
        return;
    pp_add(c, "training.tp=%d", 1 << pp_pick(r, 4));
    pp_add(c, "training.pp=%d", 1 << pp_pick(r, 4));
    pp_add(c, "training.sp=%d", 1 << pp_pick(r, 5));
    pp_add(c, "training.sp_kind=%s", PP_ONE(r, "ulysses", "ring"));
}

static inline void pp_training(pp_case *c, vl_rng *r, uint32_t *max_seq)
{
    static const uint32_t seqs[] = {512, 1024, 2048, 4096, 8192, 16384};

    *max_seq = seqs[pp_pick(r, 6)];
    pp_add(c, "training.max_seq_len=%u", *max_seq);
    if (pp_pick(r, 2))
        pp_add(c, "training.global_batch=%u", (unsigned)(1 + pp_pick(r, 256)));
    else
        pp_add(c, "training.global_tokens=%llu",
               (unsigned long long)*max_seq * (1 + pp_pick(r, 16)));
    pp_add(c, "training.micro_batch=%u", (unsigned)(1 + pp_pick(r, 4)));
    pp_add(c, "training.oversize=%s", PP_ONE(r, "error", "drop", "truncate", "drop"));
    pp_add(c, "training.epochs=%u", (unsigned)(1 + pp_pick(r, 3)));
    pp_add(c, "training.recompute=%s", PP_ONE(r, "none", "selective", "full", "auto", "auto"));
    pp_add(c, "training.zero=%u", (unsigned)pp_pick(r, 4));
    pp_add(c, "training.seed=%llu", (unsigned long long)pp_pick(r, 1000));
    pp_add(c, "pack.algo=%s", PP_ONE(r, "ffd", "bfd", "ffs", "bfs", "isf", "spfhp"));
}

/* The strategy's own knobs, by name: a new strategy runs with its defaults. */
static inline void pp_knobs(pp_case *c, vl_rng *r, uint32_t max_seq)
{
    if (strcmp(c->s->name, "chunkflow") == 0) {
        pp_add(c, "chunkflow.chunk_size=%s", PP_ONE(r, "auto", "512", "1024", "2048", "4096",
                                                     "8192", "16384"));
        pp_add(c, "chunkflow.k=%s", PP_ONE(r, "auto", "1", "2", "4"));
        pp_add(c, "chunkflow.search_iters=%u", (unsigned)(1 + pp_pick(r, 2)));
    } else if (strcmp(c->s->name, "hbp") == 0) {
        pp_add(c, "hbp.curriculum_iters=%s", PP_ONE(r, "0", "2", "500"));
        pp_add(c, "hbp.packer=%s", PP_ONE(r, "isf", "ffd", "bfd", "ffs", "bfs", "spfhp"));
        pp_add(c, "hbp.balance=%s", PP_ONE(r, "true", "false"));
        pp_add(c, "hbp.greedy_fill=%s", PP_ONE(r, "true", "false"));
        pp_add(c, "hbp.sp_degrees=%s", PP_ONE(r, "1,2,4,8,16", "1,2", "2,4", "1,3,6"));
        if (pp_pick(r, 3) == 0)   /* explicit groups, up to the context length */
            pp_add(c, "hbp.groups=%s", max_seq <= 1024 ? PP_ONE(r, "512", "256:1,1K:2")
                                       : PP_ONE(r, "1K,2K:2", "1K:1:0,2K:2:4", "2K:1:1"));
    }
}

/* Sample lengths around the context length: short ones, ones near and above it. */
static inline vl_status pp_manifest(pp_case *c, vl_rng *r, uint32_t max_seq, vl_err *err)
{
    size_t n = pp_pick(r, 8) == 0 ? pp_pick(r, 4)
               : pp_pick(r, 10) == 0 ? 1 + pp_pick(r, 3000) : 1 + pp_pick(r, 160);
    uint32_t *len = malloc((n ? n : 1) * sizeof *len);
    int shape = (int)pp_pick(r, 4);
    vl_status st;

    if (!len)
        return vl_seterr(err, VL_ENOMEM, "out of memory");
    for (size_t i = 0; i < n; i++) {
        uint64_t l;
        switch (shape) {
        case 0: l = 1 + pp_pick(r, 2 * (uint64_t)max_seq); break;          /* uniform */
        case 1: l = 1 + pp_pick(r, 1 + pp_pick(r, max_seq)); break;        /* short-heavy */
        case 2: l = pp_pick(r, 4) ? 1 + pp_pick(r, max_seq / 8 + 1)         /* few long */
                                  : max_seq / 2 + pp_pick(r, 4 * (uint64_t)max_seq); break;
        default: l = max_seq - 2 + pp_pick(r, 5); break;                    /* at the edge */
        }
        len[i] = (uint32_t)l;
    }
    st = vl_manifest_from_lengths(&c->m, len, n, err);
    free(len);
    return st;
}

/* Case `seed`; strategy: a registry index, or -1 for one drawn from the seed. */
static inline vl_status pp_make(pp_case *c, uint64_t seed, int strategy, vl_err *err)
{
    vl_rng r;
    uint32_t max_seq;
    vl_status st;
    char head[sizeof c->sets];

    memset(c, 0, sizeof *c);
    c->seed = seed;
    vl_rng_seed(&r, seed, PP_STREAM);
    c->s = vl_strategy_at(strategy >= 0 ? (size_t)strategy
                                        : (size_t)pp_pick(&r, vl_strategy_count()));
    pp_layout(c, &r, true);
    snprintf(head, sizeof head, "%s", c->sets);
    pp_training(c, &r, &max_seq);
    pp_knobs(c, &r, max_seq);
    c->allow_oom = pp_pick(&r, 4) == 0;
    if (pp_config(c, err) != VL_OK) {   /* degrees the config refuses: all 1 instead */
        char rest[sizeof c->sets];
        snprintf(rest, sizeof rest, "%s", c->sets + strlen(head));
        c->sets[0] = '\0';
        vl_rng_seed(&r, seed, PP_STREAM);
        pp_pick(&r, vl_strategy_count());
        pp_layout(c, &r, false);
        if (strlen(c->sets) + strlen(rest) < sizeof c->sets)
            strcat(c->sets, rest);
        if ((st = pp_config(c, err)) != VL_OK)
            return st;
    }
    if ((st = pp_manifest(c, &r, max_seq, err)) != VL_OK) {
        vl_config_free(&c->cfg);
        return st;
    }
    snprintf(c->desc, sizeof c->desc, "seed %llu: vlplan plan -s %s%s %s (%zu samples, %llu "
             "tokens)", (unsigned long long)seed, c->s->name, c->allow_oom ? " --allow-oom" : "",
             c->sets, c->m->n, (unsigned long long)c->m->tokens);
    return VL_OK;
}

static inline void pp_free(pp_case *c)
{
    vl_manifest_free(c->m);
    vl_config_free(&c->cfg);
    c->m = NULL;
}

/* ---- plan into a file, as `vlplan plan` does ---- */

typedef struct pp_sink {
    vl_plan_writer *w;
    int fd;
    const char *path;
} pp_sink;

static inline vl_status pp_sink_begin(void *ud, const vl_plan *p, int64_t iterations, vl_err *err)
{
    pp_sink *k = ud;
    return vl_plan_writer_open(&k->w, p, iterations, k->fd, false, k->path, err);
}

static inline vl_status pp_sink_iters(void *ud, const vl_plan *p, vl_err *err)
{
    pp_sink *k = ud;
    return vl_plan_writer_iters(k->w, p, err);
}

/* ---- read it back, as `vlplan verify` does ---- */

typedef struct pp_walk {
    const vl_manifest *m;
    vl_config cfg;
    vl_cost cost;
    bool have_cfg;
    vl_verify_report *rep;
    vl_verifier *v;
} pp_walk;

/* The verifier with the cost model of the plan's own header config. */
static inline vl_status pp_walk_start(pp_walk *w, const vl_plan *p, vl_err *err)
{
    vl_status st;

    if (w->v)
        return VL_OK;
    if (!p->config_json)
        return vl_seterr(err, VL_EDATA, "the plan header has no config");
    if ((st = vl_config_init_default(&w->cfg, err)) != VL_OK)
        return st;
    w->have_cfg = true;
    if ((st = vl_config_load_string(&w->cfg, p->config_json, "plan header config", err)) ||
        (st = vl_config_finalize(&w->cfg, err)) || (st = vl_cost_init(&w->cost, &w->cfg, err)))
        return st;
    return vl_verifier_new(&w->v, w->m, &w->cost, &vl_registry_rules, w->rep, err);
}

static inline vl_status pp_visit(void *ud, vl_plan *p, vl_err *err)
{
    pp_walk *w = ud;
    vl_status st = pp_walk_start(w, p, err);

    return st == VL_OK ? vl_verifier_iter(w->v, p, 0, err) : st;
}

/* Verify the plan file at path against c's manifest: VL_OK, VL_EVERIFY (rep filled), or
 * the read's failure. */
static inline vl_status pp_verify_file(const pp_case *c, const char *path, vl_verify_report *rep,
                                vl_err *err)
{
    pp_walk w = {.m = c->m, .rep = rep};
    vl_plan_file *f = malloc(sizeof *f);
    vl_plan q;
    vl_status st;

    memset(&q, 0, sizeof q);
    memset(rep, 0, sizeof *rep);
    if (!f)
        return vl_seterr(err, VL_ENOMEM, "out of memory");
    st = vl_plan_read_each(&q, f, path, c->m, 1, pp_visit, &w, err);
    if (st == VL_OK)
        st = pp_walk_start(&w, &q, err);
    if (st == VL_OK)
        st = vl_verifier_finish(w.v, &q, f, err);
    vl_verifier_free(w.v);
    if (w.have_cfg)
        vl_config_free(&w.cfg);
    vl_plan_free(&q);
    free(f);
    return st;
}

/* ---- the property ---- */

/* Plan c into path; *rs gets the run's result (free rs->log).  VL_OK with the file
 * complete, else the run's status (the file then incomplete). */
static inline vl_status pp_plan_file(pp_case *c, const char *path, vl_run_result *rs, vl_err *err)
{
    pp_sink k = {.path = path, .fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644)};
    vl_run_sink sink = {pp_sink_begin, pp_sink_iters, &k};
    vl_run_opts o = {.seed = c->cfg.training.seed, .allow_oom = c->allow_oom, .sink = &sink};
    vl_plan p;
    vl_status st;

    if (k.fd < 0)
        return vl_seterr(err, VL_ECANTCREAT, "cannot create %s", path);
    st = vl_run_plan(&p, c->s, c->m, &c->cfg, &o, rs, err);
    if (st == VL_OK)
        st = vl_plan_writer_close(k.w, &p, err);
    else if (k.w)
        vl_plan_writer_abort(k.w);
    if (st == VL_OK)
        vl_plan_free(&p);
    close(k.fd);
    return st;
}

/* Whether files a and b hold the same bytes. */
static inline bool pp_same_file(const char *a, const char *b)
{
    FILE *fa = fopen(a, "rb"), *fb = fopen(b, "rb");
    bool same = fa && fb;

    while (same) {
        int ca = getc(fa), cb = getc(fb);
        if (ca != cb)
            same = false;
        else if (ca == EOF)
            break;
    }
    if (fa)
        fclose(fa);
    if (fb)
        fclose(fb);
    return same;
}

/* Plan c again into path + ".again": the same bytes (determinism). */
static inline bool pp_deterministic(pp_case *c, const char *path)
{
    char again[600];
    vl_run_result rs = {0};
    vl_err err = {0};
    bool same;

    snprintf(again, sizeof again, "%s.again", path);
    same = pp_plan_file(c, again, &rs, &err) == VL_OK && pp_same_file(path, again);
    free(rs.log);
    remove(again);
    return same;
}

/* What a verify report says, for a finding. */
static inline void pp_report_msgs(const vl_verify_report *rep, char *out, size_t n)
{
    size_t used = 0;

    out[0] = '\0';
    for (size_t i = 0; i < rep->nmsgs && i < 4 && used + 1 < n; i++)
        used += (size_t)snprintf(out + used, n - used, "%s%s", i ? "; " : "", rep->msgs[i]);
}

/* Plan case c into path and verify the file; why (n bytes) gets a finding's or a
 * refusal's reason. */
static inline pp_outcome pp_check(pp_case *c, const char *path, char *why, size_t n)
{
    vl_run_result rs = {0};
    vl_verify_report *rep = malloc(sizeof *rep);
    vl_err err = {0};
    vl_status st;
    pp_outcome out = PP_FINDING;

    why[0] = '\0';
    if (!rep) {
        snprintf(why, n, "out of memory");
        return PP_FINDING;
    }
    st = pp_plan_file(c, path, &rs, &err);
    free(rs.log);
    if (st == VL_EDATA || st == VL_ECONFIG || st == VL_EINFEASIBLE) {
        /* memory, oversize, a config the strategy refuses or cannot fit */
        snprintf(why, n, "%s", err.msg);
        /* the runner's own refusal of an infeasible plan names the switch it ignores */
        out = c->allow_oom && strstr(err.msg, "--allow-oom") ? PP_FINDING : PP_REFUSED;
    } else if (st != VL_OK) {
        snprintf(why, n, "plan failed (%s): %s", vl_status_name(st), err.msg);
    } else if ((st = pp_verify_file(c, path, rep, &err)) == VL_OK) {
        out = rs.oom_iters == 0 ? PP_PLANNED : PP_FINDING;
        if (out == PP_FINDING)
            snprintf(why, n, "plan found %zu iterations over memory, verify none",
                     rs.oom_iters);
    } else if (st == VL_EVERIFY && rs.oom_iters > 0 && rep->violations == rep->oom_iters &&
               rep->oom_iters == rs.oom_iters) {
        out = PP_PLANNED;   /* --allow-oom: exactly the iterations plan counted */
    } else if (st == VL_EVERIFY) {
        pp_report_msgs(rep, why, n);
    } else {
        snprintf(why, n, "verify failed (%s): %s", vl_status_name(st), err.msg);
    }
    if (out == PP_PLANNED && !pp_deterministic(c, path)) {
        snprintf(why, n, "planned twice, the plan files differ");
        out = PP_FINDING;
    }
    free(rep);
    return out;
}

#endif
