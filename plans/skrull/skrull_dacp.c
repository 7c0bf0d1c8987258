/* plans/skrull/skrull_dacp.c -- DACP, Skrull's Algorithm 1 with the published listing's
 * bugs fixed (research/skrull.md §2): each sequence of a micro-batch, shortest first,
 * goes local to the CP rank of least load, else local to the rank with the most bucket
 * left, else sharded over all N ranks; when even the sharded share does not fit the
 * emptiest-looking rank, a roll-back shards one of that rank's local sequences and the
 * same sequence is tried again.
 * Fixes: a roll-back frees S − S/N on its rank (the listing subtracts) and charges every
 * other rank S/N of memory and F/N of load, exactly as a sharded placement does; the
 * roll-back victim is the shortest local sequence (the paper's) or the longest.  Charging
 * the other ranks can push one of them past C (the listing never checks): such a rank
 * is rolled back in turn before the next placement, and a micro-batch is accepted only
 * with every rank within C.
 * Ties of argmin/argmax go to the lowest rank.  O(k·N) plus O(k) per roll-back. */
#include "skrull_impl.h"

static int argmin_load(const vl_sk_dacp *d)
{
    int t = 0;

    for (int r = 1; r < d->n; r++)
        if (d->load[r] < d->load[t])
            t = r;
    return t;
}

static int argmax_rb(const vl_sk_dacp *d)
{
    int t = 0;

    for (int r = 1; r < d->n; r++)
        if (d->rb[r] > d->rb[t])
            t = r;
    return t;
}

static int argmin_rb(const vl_sk_dacp *d)
{
    int t = 0;

    for (int r = 1; r < d->n; r++)
        if (d->rb[r] < d->rb[t])
            t = r;
    return t;
}

static void place_local(vl_sk_dacp *d, uint32_t len, double f, int t, int16_t *ret)
{
    d->rb[t] -= (int64_t)len * d->n;
    d->load[t] += f;
    *ret = (int16_t)t;
}

static void place_sharded(vl_sk_dacp *d, uint32_t len, double f, int16_t *ret)
{
    for (int r = 0; r < d->n; r++) {
        d->rb[r] -= len;
        d->load[r] += f / d->n;
    }
    *ret = VL_CP_SHARDED;
}

/* Shard one local sequence of rank t among the first i placed: give its memory and
 * load back to t, then charge it to every rank as a sharded sequence. */
static bool roll_back(vl_sk_dacp *d, const uint32_t *len, const double *f, size_t i, int t,
                      int16_t *ret)
{
    size_t k = i;

    for (size_t j = 0; j < i; j++)
        if (ret[j] == t) {
            k = j;
            if (d->mode == VL_SK_SHORTEST)
                break;   /* ascending order: the first is the shortest */
        }
    if (k == i)
        return false;
    d->rb[t] += (int64_t)len[k] * d->n;
    d->load[t] -= f[k];
    place_sharded(d, len[k], f[k], &ret[k]);
    d->rollbacks++;
    return true;
}

/* A roll-back charges every rank S/N, which can push a rank other than its target past
 * C: roll back that rank's own local sequences first (the fullest first), or fail. */
static bool within_bucket(vl_sk_dacp *d, const uint32_t *len, const double *f, size_t i,
                          int16_t *ret)
{
    for (int t = argmin_rb(d); d->rb[t] < 0; t = argmin_rb(d))
        if (!roll_back(d, len, f, i, t, ret))
            return false;
    return true;
}

bool vl__sk_dacp(vl_sk_dacp *d, const uint32_t *len, const double *f, size_t k,
                 int16_t *ret)
{
    for (int r = 0; r < d->n; r++) {
        d->rb[r] = (int64_t)d->bucket * d->n;
        d->load[r] = 0;
    }
    for (size_t i = 0; i < k;) {
        int64_t whole = (int64_t)len[i] * d->n, share = len[i];
        if (!within_bucket(d, len, f, i, ret))
            return false;
        int t = argmin_load(d);
        if (d->rb[t] < whole)
            t = argmax_rb(d);
        if (d->rb[t] >= whole) {
            place_local(d, len[i], f[i], t, &ret[i]);
            i++;
            continue;
        }
        t = argmin_rb(d);
        if (d->rb[t] >= share) {
            place_sharded(d, len[i], f[i], &ret[i]);
            i++;
            continue;
        }
        if (!roll_back(d, len, f, i, t, ret))
            return false;   /* retry the same sequence after a successful roll-back */
    }
    return within_bucket(d, len, f, k, ret);
}
