/* plans/hydraulis/hydraulis_choose.c -- the candidate of one batch: every candidate
 * evaluated (hydraulis_iter.c), each under the bound the best estimate so far sets, the
 * smallest estimate kept.
 *
 * Speed.  The candidate chosen for the last batch is evaluated first: the next batch
 * usually picks it again (on Mooncake lengths one candidate runs every iteration), and
 * with its estimate as the bound from the start the others are cut by their lower bound
 * or their dispatch trials stop early, instead of each evaluated in full while the
 * estimates fall in index order.
 *
 * Why the order changes nothing.  vl__hy_eval under a bound B returns the estimate,
 * complete, exactly when it is at most B, and otherwise -1 or a value above B.  Let E
 * be the smallest estimate and w the lowest index reaching it, T = E · (1 + margin).
 * Every bound used is the best estimate so far, at least E, times 1 + margin: at least
 * T (multiplying by a constant rounds monotonically).  (1) w's estimate E is at most its
 * bound, so w is evaluated completely and becomes the choice (a tie goes to the lower
 * index in either order), and nothing with an estimate above E nor a higher index at E
 * displaces it: the choice is w whatever the order.  (2) A candidate whose estimate is
 * at most T is at most its bound: its estimate comes back complete (and is saved for
 * the runners-up), in any order; one above T comes back above T or as -1.  So est_of[]
 * agrees, in any order, on which candidates are within T and on their estimates, which
 * is all the runners-up read; the kept assignment is w's (kept when it became the
 * choice, never displaced).  tests/strategies/test_hydraulis_fast.c compares every
 * first candidate against the index order. */
#include <math.h>

#include "hydraulis_impl.h"

int vl__hy_choose(hy_iter *it, const uint32_t *seq, size_t n, const uint32_t *len,
                  uint64_t stream, const hy_choice *how, double *est_of, double *est,
                  vl_status *st, vl_err *err)
{
    size_t nc = it->cands->n;
    int cand = -1;

    *st = VL_OK;
    vl__hy_memo_clear(it);
    for (size_t q = 0; q <= nc && *st == VL_OK; q++) {
        /* the first candidate, then the others in index order */
        size_t c = q == 0 ? (size_t)how->first : q - 1;
        double e, bound = cand >= 0 ? *est * (1 + how->margin) : INFINITY;
        if ((q == 0 && (how->first < 0 || (size_t)how->first >= nc)) ||
            (q > 0 && (int)c == how->first) || (how->only >= 0 && (int)c != how->only))
            continue;
        /* past the bound: the candidate cannot win nor be a runner-up, and its other
         * pipelines need no packing */
        e = vl__hy_eval(it, c, seq, n, len, stream, how->allow_empty, bound, st, err);
        est_of[c] = e;
        if (*st == VL_OK && e >= 0 && e <= bound && how->save)
            *st = vl__hy_memo_save(it, c, n, err); /* complete: a runner-up to simulate */
        if (e >= 0 && (cand < 0 || e < *est || (e == *est && (int)c < cand))) {
            cand = (int)c;
            *est = e;
            vl__hy_keep(it, c); /* written as evaluated, not evaluated again */
        }
    }
    return *st == VL_OK ? cand : -1;
}
