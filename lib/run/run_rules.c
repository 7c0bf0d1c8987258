/* lib/run/run_rules.c -- a strategy's rules for the verifier (vl_verify_rules, verify.h):
 * the capabilities it may use, where it slices, which ranks share a pack, and under a
 * config the longest sample it places and the largest pack it writes, its parameters
 * bound as `plan` binds them.  The registry (plans/registry.c) hands these to whoever
 * verifies; the verifier itself never looks a strategy up. */
#include "run.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* What the strategy table alone says; without a config a slicing that depends on it is
 * the loosest. */
static void rules_of_table(const vl_strategy *s, vl_verify_rules *out)
{
    memset(out, 0, sizeof *out);
    out->known = true;
    out->caps = s->caps;
    out->slices = s->slicing ? VL_SLICES_PIECES : s->slices;
    out->shares = s->shares;
    out->idles = s->idles;
}

void vl_strategy_rules_bound(const vl_strategy *s, const void *opts, const vl_config *cfg,
                             vl_verify_rules *out)
{
    rules_of_table(s, out);
    out->len_limit = s->max_len(opts, cfg);
    out->cap_limit = s->max_cap ? s->max_cap(opts, cfg) : 0;
    if (s->slicing)
        out->slices = s->slicing(opts, cfg);
}

vl_status vl_strategy_rules(const vl_strategy *s, const vl_config *cfg, vl_verify_rules *out,
                            vl_err *err)
{
    void *opts = NULL;
    vl_err why = {0};
    vl_status st = VL_OK;

    if (!cfg) {
        rules_of_table(s, out);
        return VL_OK;
    }
    st = vl_run_bind(&opts, s, cfg, &why);
    if (st == VL_OK) {
        vl_strategy_rules_bound(s, opts, cfg, out);
    } else {
        rules_of_table(s, out);
        snprintf(out->refused, sizeof out->refused, "%s", why.msg);
    }
    free(opts);
    return st == VL_ENOMEM ? vl_seterr(err, st, "out of memory verifying the plan") : VL_OK;
}

vl_status vl_strategy_rules_strictest(const vl_strategy *const *all, size_t n,
                                      const vl_config *cfg, vl_verify_rules *out, vl_err *err)
{
    bool capped = true; /* every strategy that takes the config states a capacity */

    memset(out, 0, sizeof *out);
    out->caps = ~0u; /* only what the header declares (verify_layout.c) */
    out->slices = cfg ? VL_SLICES_NONE : VL_SLICES_ITERS;
    for (size_t i = 0; cfg && i < n; i++) {
        vl_verify_rules r;
        vl_status st = vl_strategy_rules(all[i], cfg, &r, err);
        if (st != VL_OK)
            return st;
        if (r.refused[0])
            continue; /* a strategy that refuses the config sets no limit */
        if (r.len_limit > out->len_limit)
            out->len_limit = r.len_limit;
        capped = capped && r.cap_limit > 0;
        if (r.cap_limit > out->cap_limit)
            out->cap_limit = r.cap_limit;
    }
    if (!capped)
        out->cap_limit = 0;
    return VL_OK;
}
