/* plans/skrull/skrull_dacp.c -- DACP, Skrull's Algorithm 1 with the published listing's
 * bugs fixed (docs/skrull.md §2), in two placements.
 *
 * paper: each sequence of a micro-batch, shortest first, goes local to the CP rank of
 * least load, else local to the rank with the most bucket left, else sharded over all N
 * ranks; when even the sharded share does not fit the emptiest-looking rank, a
 * roll-back shards one of that rank's local sequences and the same sequence is tried
 * again.  A sequence is sharded only for memory, so a micro-batch whose longest
 * sequence alone outweighs its share of the work (ΣF / N) leaves the other ranks idle:
 * shortest-first list scheduling puts the longest last, local, on one rank.
 *
 * balanced (the default): the same three steps and roll-back, longest first, and a
 * sequence that fits locally is still sharded when that is what keeps the slowest rank
 * lower -- the paper's objective (Eq. 1: the micro-batch takes its slowest CP rank)
 * estimated with forward FLOPs: local on rank t makes max(L_max, L_t + F), sharded
 * makes L_max + F/N, and neither can end below ΣF / N; the sequence is sharded only
 * when sharding is strictly lower (ties stay local: the paper's "avoid sharding").
 *
 * Fixes in both: a roll-back frees S − S/N on its rank (the listing subtracts) and
 * charges every other rank S/N of memory and F/N of load, exactly as a sharded placement
 * does; the roll-back victim is the shortest local sequence (the paper's) or the
 * longest.  Charging the other ranks can push one of them past C (the listing never
 * checks): such a rank is rolled back in turn before the next placement, and a
 * micro-batch is accepted only with every rank within C.
 * Ties of argmin/argmax go to the lowest rank.  O(k·N) plus O(k) per roll-back. */
#include <math.h>

#include "skrull_impl.h"

static int argmin_load(const vl_sk_dacp *d)
{
    int t = 0;

    for (int r = 1; r < d->n; r++)
        if (d->load[r] < d->load[t])
            t = r;
    return t;
}

static double max_load(const vl_sk_dacp *d)
{
    double most = d->load[0];

    for (int r = 1; r < d->n; r++)
        most = fmax(most, d->load[r]);
    return most;
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
    d->sharded = true;
    *ret = VL_CP_SHARDED;
}

/* Shard one local sequence of rank t among the placed ones, [lo, hi): give its memory
 * and load back to t, then charge it to every rank as a sharded sequence.  len is
 * ascending, so the first match is the shortest and the last the longest. */
static bool roll_back(vl_sk_dacp *d, const uint32_t *len, const double *f, size_t lo,
                      size_t hi, int t, int16_t *ret)
{
    size_t k = hi;

    for (size_t j = lo; j < hi; j++)
        if (ret[j] == t) {
            k = j;
            if (d->mode == VL_SK_SHORTEST)
                break;
        }
    if (k == hi)
        return false;
    d->rb[t] += (int64_t)len[k] * d->n;
    d->load[t] -= f[k];
    place_sharded(d, len[k], f[k], &ret[k]);
    d->rollbacks++;
    return true;
}

/* A roll-back charges every rank S/N, which can push a rank other than its target past
 * C: roll back that rank's own local sequences (placed: [lo, hi)) first, or fail. */
static bool within_bucket(vl_sk_dacp *d, const uint32_t *len, const double *f, size_t lo,
                          size_t hi, int16_t *ret)
{
    for (int t = argmin_rb(d); d->rb[t] < 0; t = argmin_rb(d))
        if (!roll_back(d, len, f, lo, hi, t, ret))
            return false;
    return true;
}

/* balanced: keep a sequence of load f local on rank t unless sharding it leaves the
 * slowest rank lower by more than the slack (no rank can end below `even` = ΣF / N). */
static bool local_pays(const vl_sk_dacp *d, int t, double f, double even)
{
    double most = max_load(d);
    double local = fmax(even, fmax(most, d->load[t] + f));
    double sharded = fmax(even, most + f / d->n);

    return local <= sharded * (1 + (d->sharded ? 0 : d->slack));
}

/* One sequence: local on the least-loaded rank if it has room, else on the rank with
 * the most room (each only if `balance` lets it stay local there), else sharded if the
 * fullest rank has room for its share.  *victim: -1 placed, else the rank to roll back. */
static void place_one(vl_sk_dacp *d, uint32_t len, double f, bool balance, double even,
                      int16_t *ret, int *victim)
{
    int64_t whole = (int64_t)len * d->n, share = len;
    int t = argmin_load(d);

    *victim = -1;
    if (d->rb[t] < whole)
        t = argmax_rb(d);
    if (d->rb[t] >= whole && (!balance || local_pays(d, t, f, even))) {
        place_local(d, len, f, t, ret);
        return;
    }
    t = argmin_rb(d);
    if (d->rb[t] >= share)
        place_sharded(d, len, f, ret);
    else
        *victim = t;
}

/* The paper's order: shortest first; placed = [0, i). */
static bool dacp_paper(vl_sk_dacp *d, const uint32_t *len, const double *f, size_t k,
                       int16_t *ret)
{
    for (size_t i = 0; i < k;) {
        int victim;
        if (!within_bucket(d, len, f, 0, i, ret))
            return false;
        place_one(d, len[i], f[i], false, 0, &ret[i], &victim);
        if (victim < 0)
            i++;
        else if (!roll_back(d, len, f, 0, i, victim, ret))
            return false; /* retry the same sequence after a successful roll-back */
    }
    return within_bucket(d, len, f, 0, k, ret);
}

/* Longest first; placed = [i, k) once sequence i is. */
static bool dacp_balanced(vl_sk_dacp *d, const uint32_t *len, const double *f, size_t k,
                          int16_t *ret)
{
    double even = 0;

    for (size_t i = 0; i < k; i++)
        even += f[i];
    even /= d->n;
    for (size_t i = k; i > 0;) {
        int victim;
        if (!within_bucket(d, len, f, i, k, ret))
            return false;
        place_one(d, len[i - 1], f[i - 1], true, even, &ret[i - 1], &victim);
        if (victim < 0)
            i--;
        else if (!roll_back(d, len, f, i, k, victim, ret))
            return false;
    }
    return within_bucket(d, len, f, 0, k, ret);
}

bool vl__sk_dacp(vl_sk_dacp *d, const uint32_t *len, const double *f, size_t k, int16_t *ret)
{
    for (int r = 0; r < d->n; r++) {
        d->rb[r] = (int64_t)d->bucket * d->n;
        d->load[r] = 0;
    }
    d->sharded = false;
    return d->place == VL_SK_BALANCED ? dacp_balanced(d, len, f, k, ret)
                                      : dacp_paper(d, len, f, k, ret);
}
