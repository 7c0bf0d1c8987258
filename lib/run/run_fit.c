/* lib/run/run_fit.c -- what would make a rank that exceeds device memory fit, for the
 * message that refuses the plan (run.h).  The simulator found the overflow; the
 * suggestions come from the cost model's closed-form peak (vl_cost_fewest_ckpt), tried
 * in the order a user can act on them: checkpoint more layers, widen the sequence-
 * parallel group, make micro-batches smaller. */
#include "run.h"

#include <stdio.h>

/* The rank's largest forward pack. */
static uint64_t largest_pack(const vl_plan *p, const vl_rank *rk)
{
    uint64_t most = 0;

    for (uint32_t j = 0; j < rk->nmb; j++)
        if (p->mbs[rk->mb0 + j].tokens > most)
            most = p->mbs[rk->mb0 + j].tokens;
    return most;
}

/* The largest micro-batch (tokens) that fits with every layer checkpointed, 0: none. */
static uint64_t largest_fitting(const vl_cost *c, uint64_t hi, const vl_par *par, int ranks,
                                uint32_t mbs)
{
    uint64_t lo = 0;

    while (lo < hi) { /* invariant: lo fits (0 trivially), hi + 1 does not */
        uint64_t mid = lo + (hi - lo + 1) / 2;
        if (vl_cost_fewest_ckpt(c, mid, par, ranks, mbs) >= 0)
            lo = mid;
        else
            hi = mid - 1;
    }
    return lo;
}

void vl_run_fit_hint(const vl_plan *p, size_t it, const vl_verify_oom *o, const vl_cost *c,
                     int gpus, char *hint, size_t n)
{
    const vl_iter *in = &p->iters[it];
    const vl_rank *rk;
    vl_par par;
    uint64_t tokens, fits;
    int ranks, ck;

    hint[0] = '\0';
    if (o->rank >= in->nranks)
        return;
    rk = &p->ranks[in->rank0 + o->rank];
    par = rk->par;
    tokens = largest_pack(p, rk);
    ranks = (int)in->nranks;
    ck = vl_cost_fewest_ckpt(c, tokens, &par, ranks, rk->nmb);
    if (ck > par.ckpt_layers) {
        snprintf(hint, n,
                 "checkpointing %d layers per stage would fit "
                 "(training.recompute=auto)",
                 ck);
        return;
    }
    for (int sp = par.sp * 2; par.tp * par.pp * sp <= gpus; sp *= 2) {
        vl_par wide = par;
        wide.sp = sp;
        if ((ck = vl_cost_fewest_ckpt(c, tokens, &wide, ranks, rk->nmb)) >= 0) {
            snprintf(hint, n, "sp=%d with %d checkpointed layers per stage would fit", sp, ck);
            return;
        }
    }
    fits = largest_fitting(c, tokens, &par, ranks, rk->nmb);
    if (fits > 0 && fits < tokens)
        snprintf(hint, n,
                 "micro-batches of at most %llu tokens would fit (this rank's "
                 "largest has %llu: lower the chunk size or training.max_seq_len)",
                 (unsigned long long)fits, (unsigned long long)tokens);
}
