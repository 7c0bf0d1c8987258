/* plans/baseline/baseline_pack_refine.c -- `pack` with pack.deal=samples: after a dealing
 * balanced on time, swap packs between ranks to even out attention work where that
 * costs neither time nor tokens.
 *
 * KK on the packs' modelled times balances time; many dealings are about as good there
 * and they differ in how the attention work (Σ len²) and the tokens fall.  The cost
 * model's attention term is the part least sure to carry over to a real GPU (its
 * efficiency depends on the sequence lengths), so among dealings no slower we prefer
 * the one with the least attention on its busiest rank: repeatedly, the rank with the
 * most attention swaps one of its packs for a pack of another rank, the swap that
 * lowers the larger of the two ranks' attention the most, taken only when neither rank
 * ends above the iteration's busiest rank in time or in tokens.  So the busiest rank's
 * time and tokens never grow and its attention only falls.  At most np swaps (a count,
 * never a clock); a swap costs (packs of the rank) x np pair checks, and the search
 * stops after REFINE_WORK of them. */
#include <stdlib.h>
#include <string.h>

#include "baseline_pack.h"

#define REFINE_WORK (1ull << 24)

typedef struct loads {
    double *time, *tok, *att;   /* [dp] per rank */
} loads;

typedef struct swap {
    size_t p, q;
    double att;           /* the larger of the two ranks' attention after it */
} swap;

static double max_of(const double *x, size_t n, size_t *at)
{
    double m = x[0];
    *at = 0;
    for (size_t i = 1; i < n; i++)
        if (x[i] > m) {
            m = x[i];
            *at = i;
        }
    return m;
}

/* The best swap of a pack of rank h with a pack of another rank (p = SIZE_MAX: none). */
static swap best_swap(const vl__pk_weights *w, const int *part, const loads *ld, size_t h,
                      double tmax, double kmax, uint64_t *work)
{
    swap best = {SIZE_MAX, SIZE_MAX, ld->att[h]};

    for (size_t p = 0; p < w->n; p++) {
        if (part[p] != (int)h)
            continue;
        *work += w->n;
        for (size_t q = 0; q < w->n; q++) {
            int r = part[q];
            double da = w->att[p] - w->att[q], dt = w->time[p] - w->time[q];
            double dk = w->tok[p] - w->tok[q];
            if (r == (int)h || da <= 0 || ld->time[r] + dt > tmax || ld->time[h] - dt > tmax ||
                ld->tok[r] + dk > kmax || ld->tok[h] - dk > kmax)
                continue;
            double a = ld->att[h] - da > ld->att[r] + da ? ld->att[h] - da : ld->att[r] + da;
            if (a < best.att)
                best = (swap){p, q, a};
        }
    }
    return best;
}

vl_status vl__pk_refine(const vl__pk_weights *w, int *part, size_t dp, vl_err *err)
{
    loads ld = {calloc(dp, sizeof(double)), calloc(dp, sizeof(double)),
                calloc(dp, sizeof(double))};
    size_t h, at;

    if (ld.time == NULL || ld.tok == NULL || ld.att == NULL) {
        free(ld.time);
        free(ld.tok);
        free(ld.att);
        return vl_seterr(err, VL_ENOMEM, "out of memory for %zu ranks", dp);
    }
    for (size_t p = 0; p < w->n; p++) {
        ld.time[part[p]] += w->time[p];
        ld.tok[part[p]] += w->tok[p];
        ld.att[part[p]] += w->att[p];
    }
    double tmax = max_of(ld.time, dp, &at), kmax = max_of(ld.tok, dp, &at);
    uint64_t work = 0;
    for (size_t step = 0; step < w->n && work < REFINE_WORK; step++) {
        max_of(ld.att, dp, &h);
        swap s = best_swap(w, part, &ld, h, tmax, kmax, &work);
        if (s.p == SIZE_MAX)
            break;
        int r = part[s.q];
        double da = w->att[s.p] - w->att[s.q], dt = w->time[s.p] - w->time[s.q];
        double dk = w->tok[s.p] - w->tok[s.q];
        ld.att[h] -= da;
        ld.att[r] += da;
        ld.time[h] -= dt;
        ld.time[r] += dt;
        ld.tok[h] -= dk;
        ld.tok[r] += dk;
        part[s.p] = r;
        part[s.q] = (int)h;
    }
    free(ld.time);
    free(ld.tok);
    free(ld.att);
    return VL_OK;
}
