/* lib/model/cost_memo.c -- the attention memo of a cost model (cost.h vl_cost_memoized,
 * cost_memo.h): a whole sample's attention terms by length, so a caller that costs the
 * same samples in many packs (the simulator, SlimPack's candidate bounds) takes the
 * square root, the curve lookups and the log2 of a length once.  Nothing here is
 * required: a memo that cannot grow is skipped, and the values are the same either way. */
#include <stdlib.h>
#include <string.h>

#include "cost_memo.h"

/* Field by field: a struct copy may carry the padding after a curve's n. */
static void curve_key(vl_curve *to, const vl_curve *from)
{
    to->n = from->n;
    memcpy(to->x, from->x, sizeof to->x);
    memcpy(to->y, from->y, sizeof to->y);
}

static void key_of(const vl_cost *c, vl_cost_memo_key *k)
{
    const vl_cluster_cfg *cl = &c->cfg->cluster;

    memset(k, 0, sizeof *k);
    k->acoef = c->acoef;
    k->peak = c->peak;
    k->bwd_attn = c->cfg->cost.bwd_attn;
    curve_key(&k->fwd, &cl->attn_fwd_eff);
    curve_key(&k->bwd, &cl->attn_bwd_eff);
    memcpy(k->lx_fwd, c->lx_attn_fwd, sizeof k->lx_fwd);
    memcpy(k->lx_bwd, c->lx_attn_bwd, sizeof k->lx_bwd);
    k->below_fwd = c->below_attn_fwd;
    k->below_bwd = c->below_attn_bwd;
    k->same_x = c->attn_same_x;
}

static void empty(vl_cost_memo *m)
{
    for (int i = 0; i < m->nplanes; i++)
        free(m->planes[i].fb);
    memset(m->planes, 0, sizeof m->planes);
    m->nplanes = 0;
}

vl_cost vl_cost_memoized(const vl_cost *c, vl_cost_memo **m)
{
    vl_cost out = *c;
    vl_cost_memo_key k;

    out.memo = NULL;
    if (*m == NULL && (*m = calloc(1, sizeof **m)) == NULL)
        return out; /* no memo: the same values, computed every time */
    key_of(c, &k);
    if (memcmp(&k, &(*m)->key, sizeof k) != 0) {
        empty(*m);
        (*m)->key = k;
    }
    out.memo = *m;
    return out;
}

void vl_cost_memo_free(vl_cost_memo *m)
{
    if (m == NULL)
        return;
    empty(m);
    free(m);
}

vl_cost_memo_plane *vl__cost_memo_plane(vl_cost_memo *m, double g, int rdiv)
{
    for (int i = 0; i < m->nplanes; i++)
        if (m->planes[i].g == g && m->planes[i].rdiv == rdiv)
            return &m->planes[i];
    if (m->nplanes == VL_COST_MEMO_PLANES)
        return NULL;
    m->planes[m->nplanes] = (vl_cost_memo_plane){.g = g, .rdiv = rdiv};
    return &m->planes[m->nplanes++];
}

bool vl__cost_memo_reserve(vl_cost_memo_plane *pl, uint32_t len)
{
    uint32_t cap;
    double(*fb)[2];

    if (len < pl->cap)
        return true;
    if (len >= VL_COST_MEMO_LEN)
        return false;
    /* doubling, so a run's growing lengths reallocate a logarithmic number of times */
    cap = pl->cap > len / 2 ? 2 * pl->cap : len + 1;
    cap = cap > VL_COST_MEMO_LEN ? VL_COST_MEMO_LEN : cap;
    if ((fb = realloc(pl->fb, (size_t)cap * sizeof *fb)) == NULL)
        return false;
    memset(fb + pl->cap, 0, (size_t)(cap - pl->cap) * sizeof *fb);
    pl->fb = fb;
    pl->cap = cap;
    return true;
}
