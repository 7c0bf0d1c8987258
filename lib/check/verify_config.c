/* lib/check/verify_config.c -- what the config and the plan's strategy permit (verify.h):
 * the epochs the header declares against the config's and the iterations' (I5); every
 * pack's capacity within what the strategy writes under the config (I3); the dropped
 * ranges against each sample's length and the oversize policy -- whole samples longer
 * than the strategy places for `drop`, their tail beyond it for `truncate`, nothing for
 * `error` -- and no such sample planned instead (I1).  The strategy's limits come from
 * the caller's rules source (vl_verify_rules: the registry's, its parameters bound
 * from the config as `plan` binds them), so a plan cannot claim a limit of its own.
 * Without a config (a plan from another tool and no -c) only what the manifest alone
 * decides is checked. */
#include "verify_impl.h"

#include <stdio.h>
#include <stdlib.h>

static const vl_config *cfg_of(const vl_vctx *v)
{
    return v->cost ? v->cost->cfg : NULL;
}

/* The strategy's rules, from the caller's source for the name the plan carries (for a
 * name it does not know, the strictest: vl_verify_rules), so a plan cannot claim a
 * limit of its own; without a source only the format's own rules hold (a plan a
 * library user built in memory).  Looked up once, from the first plan seen; a config
 * the strategy refuses is a violation: `plan` would have refused to make it. */
vl_status vl__limits_init(vl_vctx *v, const vl_plan *p, vl_err *err)
{
    vl_status st;

    if (v->rules_set)
        return VL_OK;
    v->rules_set = true;
    v->rules = (vl_verify_rules){.caps = ~0u, .slices = VL_SLICES_ITERS};
    if (!v->src || !v->src->fill)
        return VL_OK;
    st = v->src->fill(v->src->ctx, p->strategy, cfg_of(v), &v->rules, err);
    if (st == VL_OK && v->rules.refused[0])
        vl__violation(v->rep, 5, "strategy %s refuses the config: %s", p->strategy,
                      v->rules.refused);
    return st;
}

void vl__check_cap(vl_vctx *v, uint32_t r, const char *what, uint32_t j, const vl_mb *mb)
{
    if (v->rules.cap_limit == 0 || mb->cap <= v->rules.cap_limit)
        return;
    vl__violation(v->rep, 3,
                  "iteration %zu, rank %u, %s %u: capacity %u exceeds the %llu "
                  "token slots strategy %s writes (training.max_seq_len %u)",
                  v->num, r, what, j, mb->cap, (unsigned long long)v->rules.cap_limit,
                  v->p->strategy, v->cost->cfg->training.max_seq_len);
}

/* ---- epochs ---- */

static void check_epochs(const vl_vctx *v)
{
    const vl_plan *p = v->p;
    const vl_config *cfg = cfg_of(v);

    if (p->epochs == 0) {
        vl__violation(v->rep, 5, "the plan declares 0 epochs");
        return;
    }
    if (cfg && (int64_t)p->epochs != cfg->training.epochs)
        vl__violation(v->rep, 5,
                      "the header says %u epochs, the config's training.epochs is "
                      "%d",
                      p->epochs, cfg->training.epochs);
    /* every epoch plans the same samples: one with iterations means all have them */
    if (v->iterations > 0 && v->epochs_seen < p->epochs)
        vl__violation(v->rep, 5, "the header says %u epochs, the iterations show %u",
                      p->epochs, v->epochs_seen);
}

/* ---- dropped ranges ---- */

static const char *const POLICY[] = {"error", "truncate", "drop"};

/* What drop d should be for a sample of L tokens under the policy (limit 0: unknown),
 * or NULL when it is right. */
static const char *drop_wrong(const vl_drop *d, uint32_t L, const vl_config *cfg,
                              uint32_t limit)
{
    uint64_t end = (uint64_t)d->off + d->len;
    bool whole = d->off == 0 && end == L, tail = d->off > 0 && end == L;
    vl_oversize pol = cfg ? cfg->training.oversize : VL_OVERSIZE_ERROR;

    if (d->reason == VL_DROP_OVERSIZE && !whole)
        return "a sample dropped as oversize is dropped whole";
    if (d->reason == VL_DROP_TRUNCATED && !tail)
        return "a truncation drops a sample's tail";
    if (!cfg)
        return NULL;
    if (pol == VL_OVERSIZE_ERROR)
        return "training.oversize is error: nothing is dropped";
    if ((pol == VL_OVERSIZE_DROP) != (d->reason == VL_DROP_OVERSIZE))
        return pol == VL_OVERSIZE_DROP ? "training.oversize is drop: whole samples"
                                       : "training.oversize is truncate: tails only";
    if (limit && L <= limit)
        return "the sample is not longer than the strategy places";
    if (limit && pol == VL_OVERSIZE_TRUNCATE && d->off != limit)
        return "a truncation keeps exactly the tokens the strategy places";
    return NULL;
}

/* Samples longer than the strategy places, dropped by no range: planned anyway. */
static void check_undropped(const vl_vctx *v, const uint64_t *dropped, uint32_t limit)
{
    const vl_manifest *m = v->p->m;
    char name[160];

    for (size_t s = 0; s < m->n; s++) {
        if (m->len[s] <= limit || (dropped[s / 64] >> (s % 64) & 1))
            continue;
        vl__sample_name(v->p, (uint32_t)s, name, sizeof name);
        vl__violation(
            v->rep, 1,
            "%s has %u tokens, more than the %u strategy %s places, and "
            "training.oversize=%s %s",
            name, m->len[s], limit, v->p->strategy, POLICY[cfg_of(v)->training.oversize],
            cfg_of(v)->training.oversize == VL_OVERSIZE_ERROR ? "refuses such a manifest"
                                                              : "does not drop it");
    }
}

static vl_status check_drops(const vl_vctx *v, vl_err *err)
{
    const vl_plan *p = v->p;
    const vl_config *cfg = cfg_of(v);
    uint32_t limit = cfg ? v->rules.len_limit : 0;
    uint64_t *dropped = NULL;
    char name[160];

    if (!p->m)
        return VL_OK;
    if (limit && !(dropped = calloc(p->m->n / 64 + 1, sizeof *dropped)))
        return vl_seterr(err, VL_ENOMEM, "out of memory verifying the plan");
    for (size_t i = 0; i < p->ndrops; i++) {
        const vl_drop *d = &p->drops[i];
        const char *wrong;
        if (d->sample >= p->m->n || d->len == 0)
            continue; /* reported by coverage (I1) and as empty (I2) */
        if (dropped)
            dropped[d->sample / 64] |= 1ull << (d->sample % 64);
        if (!(wrong = drop_wrong(d, p->m->len[d->sample], cfg, limit)))
            continue;
        vl__sample_name(p, d->sample, name, sizeof name);
        vl__violation(v->rep, 1, "%s (%u tokens): dropped range [%u, %llu) as %s, but %s",
                      name, p->m->len[d->sample], d->off, (unsigned long long)d->off + d->len,
                      d->reason == VL_DROP_TRUNCATED ? "truncated" : "oversize", wrong);
    }
    if (dropped)
        check_undropped(v, dropped, limit);
    free(dropped);
    return VL_OK;
}

vl_status vl__config_finish(vl_vctx *v, vl_err *err)
{
    vl_status st = vl__limits_init(v, v->p, err);

    if (st != VL_OK)
        return st;
    check_epochs(v);
    return check_drops(v, err);
}
