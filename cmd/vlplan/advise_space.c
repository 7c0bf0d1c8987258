/* cmd/vlplan/advise_space.c -- the candidates `vlplan advise` judges: parallel layouts
 * the GPU count and the model permit, times strategies, times each strategy's own
 * tuning (its defaults, its `auto` modes and a small grid of its main knobs). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "advise.h"
#include "vlplan.h"

const char *const adv_key_paths[ADV_NKEYS] = {
    "training.tp", "training.pp", "training.sp", "training.zero", "training.recompute",
};

/* Each strategy's tuning grid: "" is its defaults; a row sets its main knobs, comma
 * separated.  Strategies not listed are judged at their defaults. */
static const struct {
    const char *strategy, *tune;
} tunings[] = {
    {"pack", "pack.deal=packs"},
    {"pack", "pack.balance=tokens"},
    {"chunkflow", "chunkflow.chunk_size=auto,chunkflow.k=auto"},
    {"skrull", "skrull.placement=balanced"},
    {"hydraulis", "hydraulis.mode=homo"},
    {"slimpack", "slimpack.mem_budget=device"},
};

/* Layout keys a strategy does not read (its man page section says so): its candidates
 * that differ only there would plan the same iterations, so one is judged.  Hydraulis
 * builds its own pipelines without sequence parallelism or checkpointing. */
enum { IGN_SP = 1, IGN_RECOMPUTE = 2 };
static const struct {
    const char *strategy;
    unsigned keys;
} ignores[] = {
    {"hydraulis", IGN_SP | IGN_RECOMPUTE},
};

static unsigned ignored_keys(const char *strategy)
{
    for (size_t i = 0; i < sizeof ignores / sizeof ignores[0]; i++)
        if (strcmp(ignores[i].strategy, strategy) == 0)
            return ignores[i].keys;
    return 0;
}

static const char *const zero_names[] = {"0", "1", "2", "3", "mdo"};
static const char *const recompute_names[] = {"none", "selective", "full", "auto"};

const char *adv_zero_name(int zero)
{
    return zero >= 0 && zero < 5 ? zero_names[zero] : "?";
}

const char *adv_recompute_name(int recompute)
{
    return recompute >= 0 && recompute < 4 ? recompute_names[recompute] : "?";
}

#define MAX_VALUES 16

static size_t pow2_values(int *out, int lo, int hi)
{
    size_t n = 0;

    for (int v = lo; v <= hi && n < MAX_VALUES; v *= 2)
        out[n++] = v;
    return n;
}

static size_t divisor_values(int *out, int n_of, int hi)
{
    size_t n = 0;

    for (int v = 1; v <= hi && v <= n_of && n < MAX_VALUES; v++)
        if (n_of % v == 0)
            out[n++] = v;
    return n;
}

/* The values key k may take: the base's alone when pinned. */
static size_t values_of(adv_key k, const vl_config *b, bool pinned, int *out)
{
    static const int zeros[] = {1, 2, 3};
    static const int recomputes[] = {VL_RECOMPUTE_AUTO, VL_RECOMPUTE_FULL};
    int gpus = b->cluster.gpus;

    if (pinned) {
        const int base[ADV_NKEYS] = {b->training.tp, b->training.pp, b->training.sp,
                                     (int)b->training.zero, (int)b->training.recompute};
        out[0] = base[k];
        return 1;
    }
    switch (k) {
    case ADV_TP: return pow2_values(out, 1, b->cluster.gpus_per_node);
    case ADV_PP: return divisor_values(out, b->model.layers, 16);
    case ADV_SP: return pow2_values(out, 1, gpus < 64 ? gpus : 64);
    case ADV_ZERO: memcpy(out, zeros, sizeof zeros); return 3;
    case ADV_RECOMPUTE: memcpy(out, recomputes, sizeof recomputes); return 2;
    case ADV_NKEYS: break;
    }
    return 0;
}

static int push(adv_space *sp, const adv_cand *c)
{
    if (sp->n == sp->cap) {
        size_t cap = sp->cap ? 2 * sp->cap : 256;
        adv_cand *p = realloc(sp->c, cap * sizeof *p);
        if (!p) {
            cli_error("advise", "out of memory enumerating candidates");
            return EX_OSERR_;
        }
        sp->c = p;
        sp->cap = cap;
    }
    sp->c[sp->n++] = *c;
    return 0;
}

/* "KEY=VALUE" (value NULL: key is the whole assignment). */
static void add_set(adv_cand *c, const char *key, const char *value)
{
    if (c->nsets < ADV_MAX_SETS)
        snprintf(c->sets[c->nsets++], ADV_SET_LEN, "%s%s%s", key, value ? "=" : "",
                 value ? value : "");
}

/* The layout's --set lines, then the tuning's (one per KEY=VALUE). */
static void fill_sets(adv_cand *c)
{
    char v[16], tune[256];
    const int ints[3] = {c->lay.tp, c->lay.pp, c->lay.sp};

    c->nsets = 0;
    for (int k = 0; k < 3; k++) {
        snprintf(v, sizeof v, "%d", ints[k]);
        add_set(c, adv_key_paths[k], v);
    }
    snprintf(v, sizeof v, "%d", c->lay.dp);
    add_set(c, "training.dp", v);
    add_set(c, adv_key_paths[ADV_ZERO], adv_zero_name(c->lay.zero));
    add_set(c, adv_key_paths[ADV_RECOMPUTE], adv_recompute_name(c->lay.recompute));
    snprintf(tune, sizeof tune, "%s", c->tune);
    for (char *save = NULL, *kv = strtok_r(tune, ",", &save); kv;
         kv = strtok_r(NULL, ",", &save))
        add_set(c, kv, NULL);
}

static int add_strategy(adv_space *sp, const adv_layout *lay, const char *name)
{
    adv_cand c;
    int rc;

    memset(&c, 0, sizeof c);
    c.lay = *lay;
    c.strategy = name;
    c.tune = "";
    fill_sets(&c);
    if ((rc = push(sp, &c)) != 0)
        return rc;
    for (size_t t = 0; t < sizeof tunings / sizeof tunings[0]; t++) {
        if (strcmp(tunings[t].strategy, name) != 0)
            continue;
        c.tune = tunings[t].tune;
        fill_sets(&c);
        if ((rc = push(sp, &c)) != 0)
            return rc;
    }
    return 0;
}

/* The layout a strategy sees: its ignored keys at the first value the grid gives them
 * (first, NULL: none ignored). */
static adv_layout seen_by(const char *strategy, const adv_layout *lay, const adv_layout *first)
{
    adv_layout x = *lay;
    unsigned ign = first ? ignored_keys(strategy) : 0;

    if (ign & IGN_SP) {
        x.dp = x.dp * x.sp / first->sp;
        x.sp = first->sp;
    }
    if (ign & IGN_RECOMPUTE)
        x.recompute = first->recompute;
    return x;
}

static bool same_layout(const adv_layout *x, const adv_layout *y)
{
    return x->tp == y->tp && x->pp == y->pp && x->sp == y->sp && x->dp == y->dp &&
           x->zero == y->zero && x->recompute == y->recompute;
}

/* first: the grid's first sp and recompute (NULL: add every strategy). */
static int add_layout(adv_space *sp, const adv_layout *lay, const char *const *strategies,
                      size_t ns, const adv_layout *first)
{
    int rc;

    sp->layouts++;
    for (size_t i = 0; i < ns; i++) {
        adv_layout seen = seen_by(strategies[i], lay, first);
        if (!same_layout(&seen, lay))
            continue; /* the same plans as at its canonical layout */
        if ((rc = add_strategy(sp, lay, strategies[i])) != 0)
            return rc;
    }
    return 0;
}

/* Marks each strategy's defaults on the configuration's layout (as the strategy sees
 * it), adding that layout for the strategies the grid did not give it to: advise answers
 * "is there better than what I have?". */
static int mark_references(adv_space *sp, const vl_config *base, const char *const *strategies,
                           size_t ns, const adv_layout *first)
{
    const adv_layout own = {base->training.tp,        base->training.pp,
                            base->training.sp,        base->training.dp,
                            (int)base->training.zero, (int)base->training.recompute};
    const char *missing[64];
    size_t nmissing = 0, added0 = sp->n;
    int rc;

    for (size_t k = 0; k < ns; k++) {
        bool found = false;
        adv_layout seen = seen_by(strategies[k], &own, first);
        for (size_t i = 0; i < sp->n; i++)
            if (strcmp(sp->c[i].strategy, strategies[k]) == 0 && sp->c[i].tune[0] == '\0' &&
                same_layout(&sp->c[i].lay, &seen)) {
                sp->c[i].reference = found = true;
                sp->references++;
            }
        if (!found && nmissing < sizeof missing / sizeof missing[0])
            missing[nmissing++] = strategies[k];
    }
    if (nmissing == 0)
        return 0;
    if ((rc = add_layout(sp, &own, missing, nmissing, NULL)) != 0)
        return rc;
    for (size_t i = added0; i < sp->n; i++)
        if (sp->c[i].tune[0] == '\0') {
            sp->c[i].reference = true;
            sp->references++;
        }
    return 0;
}

int adv_space_build(adv_space *sp, const vl_config *base, const bool pinned[ADV_NKEYS],
                    const char *const *strategies, size_t ns)
{
    int v[ADV_NKEYS][MAX_VALUES];
    size_t nv[ADV_NKEYS];
    int gpus = base->cluster.gpus, rc = 0;

    memset(sp, 0, sizeof *sp);
    for (int k = 0; k < ADV_NKEYS; k++)
        nv[k] = values_of((adv_key)k, base, pinned[k], v[k]);
    const adv_layout first = {.sp = v[ADV_SP][0], .recompute = v[ADV_RECOMPUTE][0]};
    /* tp outermost, then pp, sp, zero, recompute: a fixed order, so the search is too */
    for (size_t a = 0; a < nv[ADV_TP] && rc == 0; a++)
        for (size_t b = 0; b < nv[ADV_PP] && rc == 0; b++)
            for (size_t s = 0; s < nv[ADV_SP] && rc == 0; s++) {
                int model = v[ADV_TP][a] * v[ADV_PP][b] * v[ADV_SP][s];
                if (model > gpus || gpus % model != 0)
                    continue;
                for (size_t z = 0; z < nv[ADV_ZERO] && rc == 0; z++)
                    for (size_t r = 0; r < nv[ADV_RECOMPUTE] && rc == 0; r++) {
                        adv_layout lay = {v[ADV_TP][a], v[ADV_PP][b],   v[ADV_SP][s],
                                          gpus / model, v[ADV_ZERO][z], v[ADV_RECOMPUTE][r]};
                        rc = add_layout(sp, &lay, strategies, ns, &first);
                    }
            }
    return rc ? rc : mark_references(sp, base, strategies, ns, &first);
}

void adv_space_free(adv_space *sp)
{
    free(sp->c);
    memset(sp, 0, sizeof *sp);
}

int adv_cand_config(const char *cmd, const cli_config_args *user, const adv_cand *c,
                    vl_config *cfg, bool quiet_errors, char *why, size_t whylen)
{
    cli_config_args a = *user;
    vl_err err = {0};

    for (int i = 0; i < c->nsets; i++) {
        if (a.nsets >= (int)(sizeof a.sets / sizeof a.sets[0])) {
            cli_error(cmd, "too many --set options with the candidate's (at most 64)");
            return EX_USAGE_;
        }
        a.sets[a.nsets++] = c->sets[i];
    }
    if (cli_config_build(&a, NULL, NULL, cfg, &err) == VL_OK)
        return 0;
    snprintf(why, whylen, "%s", err.msg);
    if (!quiet_errors)
        return cli_fail(cmd, &err);
    return -1;
}

void adv_cand_describe(const adv_cand *c, char *buf, size_t n)
{
    size_t k = 0;

    buf[0] = '\0';
    for (int i = 0; i < c->nsets && k + 1 < n; i++) {
        int w = snprintf(buf + k, n - k, "%s--set %s", i ? " " : "", c->sets[i]);
        if (w < 0)
            break;
        k += (size_t)w;
    }
}
