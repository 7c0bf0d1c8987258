/* lib/model/cost_pack.c -- the cost of a pack as a plan states it (cost.h): per-segment CP
 * placement, packs shared by several ranks, measured per-scheme times (cost.schemes), and
 * model states sharded over every GPU.  Built on vl_cost_mb_time and vl_cost_act_bytes,
 * which keep the analytic model; nothing here changes a plan without the new vocabulary.
 *
 *  - CP placement (Skrull Eq. 1-2, docs/skrull.md §1): per CP coordinate j,
 *      Time_j = max(exposed communication of the sharded segments, compute of the segments
 *               local to j) + compute of the sharded segments (already divided by N),
 *    and the pack takes the slowest j.  The sharded part is timed at sp = N (its exposed
 *    communication is what vl_cost_mb_time reports beyond its compute); each local part at
 *    sp = 1 on one GPU.  Memory: the fullest GPU holds its local tokens plus 1/N of the
 *    sharded ones.
 *  - A pack shared by k ranks (SlimPack's DP-Merge) runs with context parallelism over
 *    the k replicas: timed and held as a rank of sp·k.
 *  - cost.schemes: a rank whose (tp, pp, sp) has a row is timed from it.  The row's
 *    a·l² + b·l + c milliseconds is forward + backward of one stage; the forward takes
 *    1/(1 + bwd_attn) of the quadratic part and 1/(1 + bwd_linear) of the rest, the
 *    backward the remainder; a slice [o, e) costs a·(e² − o²) + b·(e − o); c once per
 *    pack; a stage of more or fewer layers than L/pp scales linearly; checkpointed layers
 *    add their forward to the backward.  Communication is inside the measurement, unless
 *    the row says comm: analytic: then a, b, c are one GPU's compute and cost.c adds the
 *    scheme's analytic communication (vl_cost_scheme_comm), and CP placement still
 *    applies, its sharded part timed from the row. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cost.h"

/* ---- measured schemes ---- */

const vl_scheme *vl_cost_scheme(const vl_cost *c, const vl_par *par)
{
    const vl_cost_cfg *k = &c->cfg->cost;
    int tp = par->tp > 1 ? par->tp : 1, pp = par->pp > 1 ? par->pp : 1;
    int sp = par->sp > 1 ? par->sp : 1;

    if (k->nschemes == 0)
        return NULL;
    for (int i = 0; i < k->nschemes; i++)
        if (k->schemes[i].tp == tp && k->schemes[i].pp == pp && k->schemes[i].sp == sp)
            return &k->schemes[i];
    return NULL;
}

vl_mb_time vl_cost_scheme_time(const vl_cost *c, const vl_scheme *s, const vl_seg *segs,
                               size_t n, const vl_par *par, int layers)
{
    const vl_cost_cfg *k = &c->cfg->cost;
    double quad = 0, lin = 0, fa = 1 / (1 + k->bwd_attn), fl = 1 / (1 + k->bwd_linear);
    double even = (double)c->cfg->model.layers / (s->pp > 0 ? s->pp : 1);
    double scale = layers / even * 1e-3, f;
    vl_mb_time t = {0, 0, 0, 0, 0};
    int ckpt =
        par->ckpt_layers < layers ? (par->ckpt_layers > 0 ? par->ckpt_layers : 0) : layers;

    for (size_t i = 0; i < n; i++) {
        double o = segs[i].off, e = o + segs[i].len;
        quad += e * e - o * o;
        lin += segs[i].len;
    }
    if (lin == 0)
        return t;
    f = (s->a * quad * fa + (s->b * lin + s->c) * fl) * scale;
    t.fwd = f;
    t.recompute = layers > 0 ? f * ckpt / layers : 0;
    t.bwd = (s->a * quad * (1 - fa) + (s->b * lin + s->c) * (1 - fl)) * scale + t.recompute;
    return t;
}

/* Seconds of vl_cost_scheme_comm of one sequence of l tokens, on a stage of `layers`. */
static vl_mb_time comm_of(const vl_cost *c, const vl_par *par, uint32_t l, int layers)
{
    vl_seg seg = {.sample = 0, .off = 0, .len = l};
    return vl_cost_scheme_comm(c, &seg, 1, par, layers);
}

vl_comm_line vl_cost_scheme_comm_line(const vl_cost *c, const vl_par *par, uint32_t ref)
{
    const vl_scheme *s = vl_cost_scheme(c, par);
    vl_par q = *par;
    int pp = par->pp > 1 ? par->pp : 1, layers = vl_cost_stage_layers(c, pp, 0);
    uint32_t hi = ref > 2 ? ref : 2, lo = hi / 2;
    vl_comm_line w = {0, 0, 0, 0};

    if (!s || !s->comm_analytic || layers < 1)
        return w;
    q.ckpt_layers = 0; /* a row's recompute is added where it is timed */
    vl_mb_time a = comm_of(c, &q, lo, layers), b = comm_of(c, &q, hi, layers);
    /* seconds of `layers` layers -> ms of model.layers/pp, the row's unit */
    double ms = (double)c->cfg->model.layers / pp / layers * 1e3;
    w.bf = (b.comm_fwd - a.comm_fwd) / (hi - lo) * ms;
    w.bb = (b.comm_bwd - a.comm_bwd) / (hi - lo) * ms;
    w.cf = a.comm_fwd * ms - w.bf * lo;
    w.cb = a.comm_bwd * ms - w.bb * lo;
    return w;
}

/* ---- CP placement ---- */

/* The segments with CP placement `want` (VL_CP_SHARDED or a coordinate) into tmp. */
static size_t gather(const vl_pack_view *pk, int want, vl_seg *tmp)
{
    size_t k = 0;

    for (size_t i = 0; i < pk->n; i++)
        if ((pk->cps ? pk->cps[i] : VL_CP_SHARDED) == want)
            tmp[k++] = pk->segs[i];
    return k;
}

static bool has_local(const vl_pack_view *pk)
{
    for (size_t i = 0; pk->cps && i < pk->n; i++)
        if (pk->cps[i] != VL_CP_SHARDED)
            return true;
    return false;
}

static vl_par shared_par(const vl_pack_view *pk, const vl_par *par)
{
    vl_par q = *par;

    if (pk->share > 1)
        q.sp = (q.sp > 1 ? q.sp : 1) * pk->share;
    return q;
}

/* Eq. 2: max over coordinates of max(comm of the sharded part, local compute) plus the
 * sharded compute; the same for the backward and the recompute. */
static vl_mb_time placed_time(const vl_cost *c, const vl_pack_view *pk, const vl_par *par,
                              int layers, int last, vl_seg *tmp)
{
    vl_par one = *par;
    size_t nd = gather(pk, VL_CP_SHARDED, tmp);
    vl_mb_time d = vl_cost_mb_time(c, tmp, nd, par, layers, last), t = {0, 0, 0, 0, 0};
    double cf = d.comm_fwd, cb = d.comm_bwd;

    one.sp = 1;
    for (int j = 0; j < (par->sp > 1 ? par->sp : 1); j++) {
        size_t nl = gather(pk, j, tmp);
        vl_mb_time l = vl_cost_mb_time(c, tmp, nl, &one, layers, last);
        double f = fmax(cf, l.fwd) + d.fwd - cf, b = fmax(cb, l.bwd) + d.bwd - cb;
        if (f > t.fwd) {
            t.fwd = f;
            t.comm_fwd = fmax(cf - l.fwd, 0);
        }
        if (b > t.bwd) {
            t.bwd = b;
            t.comm_bwd = fmax(cb - l.bwd, 0);
            t.recompute = d.recompute + l.recompute;
        }
    }
    return t;
}

vl_mb_time vl_cost_pack_time(const vl_cost *c, const vl_pack_view *pk, const vl_par *par,
                             int layers, int last_stage, vl_seg *tmp)
{
    vl_par q = shared_par(pk, par);
    const vl_scheme *row = vl_cost_scheme(c, &q);

    /* a whole-time row has its communication inside: nothing left to overlap */
    if (has_local(pk) && (!row || row->comm_analytic))
        return placed_time(c, pk, &q, layers, last_stage, tmp);
    return vl_cost_mb_time(c, pk->segs, pk->n, &q, layers, last_stage);
}

/* Tokens the fullest GPU of the rank holds: local ones plus 1/N of the sharded ones. */
static double fullest_tokens(const vl_pack_view *pk, int sp)
{
    double shard = 0, most = 0;
    double *local = calloc((size_t)sp, sizeof *local);

    for (size_t i = 0; i < pk->n; i++) {
        int cp = pk->cps ? pk->cps[i] : VL_CP_SHARDED;
        if (cp == VL_CP_SHARDED || cp >= sp || !local)
            shard += pk->segs[i].len;
        else
            local[cp] += pk->segs[i].len;
    }
    for (int j = 0; local && j < sp; j++)
        most = fmax(most, local[j]);
    free(local);
    return most + shard / sp;
}

double vl_cost_pack_act(const vl_cost *c, const vl_pack_view *pk, const vl_par *par,
                        int layers, int last_stage)
{
    vl_par q = shared_par(pk, par);
    uint64_t tokens = 0;

    if (has_local(pk) && q.sp > 1) {
        double t = fullest_tokens(pk, q.sp);
        q.sp = 1;
        return vl_cost_act_bytes(c, 1, &q, layers, last_stage) * t;
    }
    for (size_t i = 0; i < pk->n; i++)
        tokens += pk->segs[i].len;
    return vl_cost_act_bytes(c, tokens, &q, layers, last_stage);
}

/* ---- model states sharded over every GPU (Hydraulis) ---- */

double vl_cost_state_bytes_world(const vl_cost *c, const vl_par *par, int layers, int first,
                                 int last, int world)
{
    const vl_training_cfg *tr = &c->cfg->training;
    const vl_model_cfg *m = &c->cfg->model;
    double all = m->layers * c->params_layer + c->params_embed;
    double mine = vl_cost_stage_params(c, par, layers, first, last);

    /* bf16 parameters and gradients follow <tp, pp>; the fp32 master weights and Adam
     * moments (12 bytes a parameter) are spread over every GPU of the job */
    return (2.0 + tr->grad_bytes) * mine + 12.0 * all / (world > 0 ? world : 1);
}
