/* plans/chunkflow/chunkflow_sched.c -- ChunkFlow's state-aware schedule (Algorithm 2) and the
 * emission of one global batch into the plan: chunks as micro-batches, one explicit
 * operation list per rank, which the simulator turns into state-aware 1F1B. */
#include "chunkflow_impl.h"

size_t vl__cf_group_ops(vl_op *ops, uint32_t m0, uint32_t n, uint32_t keep)
{
    uint32_t first = keep < n ? n - keep : 0;
    size_t i = 0;

    /* forwards in order: each chunk reads the keys/values of those before it */
    for (uint32_t j = 0; j < n; j++)
        ops[i++] = (vl_op){.mb = m0 + j, .kind = VL_OP_F};
    /* the kept chunks still hold activations: backward, latest first, since a chunk's
     * dK/dV gradients come from every later chunk */
    for (uint32_t j = n; j-- > first;)
        ops[i++] = (vl_op){.mb = m0 + j, .kind = VL_OP_B};
    /* the others dropped theirs: rebuild one at a time and backward it at once,
     * descending for the same reason (Algorithm 2's listing loops ascending) */
    for (uint32_t j = first; j-- > 0;) {
        ops[i++] = (vl_op){.mb = m0 + j, .kind = VL_OP_R};
        ops[i++] = (vl_op){.mb = m0 + j, .kind = VL_OP_B};
    }
    return i;
}

/* ---- equal micro-batch counts ----------------------------------------------------- */

/* Ranks run the same number of micro-batches: ZeRO-3 gathers parameters once per
 * micro-batch on all data-parallel ranks together, and the verifier holds every plan
 * to lockstep counts.  A rank short of chunks cuts the chunk with the largest pieces
 * into one more equal piece (by tokens) until it has enough: the work stays the same,
 * only the kernels get smaller.  A piece boundary inside a sample makes the next piece
 * continue it, which the schedule's in-order forwards already respect. */

static size_t rank_end(const vl_cf_work *w, size_t a, int r)
{
    while (a < w->ngroups && w->groups[w->order[a]].rank == r)
        a++;
    return a;
}

static uint32_t rank_chunks(const vl_cf_work *w, size_t a, size_t b)
{
    uint32_t n = 0;

    for (size_t i = a; i < b; i++)
        n += w->groups[w->order[i]].nchunk;
    return n;
}

/* The chunk of groups order[a..b) whose pieces are largest and can still be cut. */
static uint32_t largest_piece(const vl_cf_work *w, size_t a, size_t b)
{
    uint32_t best = UINT32_MAX;

    for (size_t i = a; i < b; i++) {
        const vl_cf_group *g = &w->groups[w->order[i]];
        for (uint32_t c = g->chunk0; c < g->chunk0 + g->nchunk; c++) {
            uint64_t t = w->chunks[c].tokens, p = w->pieces[c];
            if (t > p &&
                (best == UINT32_MAX || t * w->pieces[best] > w->chunks[best].tokens * p))
                best = c;
        }
    }
    return best;
}

/* Cut the rank's chunks into `deficit` more pieces; returns how many empty
 * micro-batches are still needed (a rank with fewer tokens than micro-batches). */
static uint32_t cut_rank(vl_cf_work *w, size_t a, size_t b, uint32_t deficit)
{
    for (size_t i = a; i < b; i++) {
        const vl_cf_group *g = &w->groups[w->order[i]];
        for (uint32_t c = g->chunk0; c < g->chunk0 + g->nchunk; c++)
            w->pieces[c] = 1;
    }
    for (; deficit > 0; deficit--) {
        uint32_t c = largest_piece(w, a, b);
        if (c == UINT32_MAX)
            break;
        w->pieces[c]++;
        w->stat_cuts++;
    }
    return deficit;
}

/* ---- emission ------------------------------------------------------------------- */

/* Piece q of p of chunk c: tokens [q·T/p, (q+1)·T/p) of its concatenated segments. */
static vl_status emit_piece(vl_cf_work *w, uint32_t c, uint32_t q, uint32_t cap, vl_plan *out,
                            vl_err *err)
{
    const vl_cf_chunk *ch = &w->chunks[c];
    uint64_t p = w->pieces[c], lo = q * ch->tokens / p, hi = (q + 1) * ch->tokens / p;
    uint64_t pos = 0;
    vl_status st = vl_plan_mb_begin(out, cap, err);

    for (uint32_t e = ch->seg0; e < ch->seg0 + ch->nseg && st == VL_OK; e++) {
        const vl_seg *sg = &w->segs[e];
        uint64_t a = pos > lo ? pos : lo, b = pos + sg->len < hi ? pos + sg->len : hi;
        if (a < b)
            st = vl_plan_seg(out, sg->sample, sg->off + (uint32_t)(a - pos), (uint32_t)(b - a),
                             err);
        pos += sg->len;
    }
    return st;
}

static vl_status emit_group(vl_cf_work *w, const vl_cf_group *g, uint32_t cap, vl_plan *out,
                            vl_err *err)
{
    vl_status st;

    for (uint32_t c = g->chunk0; c < g->chunk0 + g->nchunk; c++)
        for (uint32_t q = 0; q < w->pieces[c]; q++) {
            if ((st = emit_piece(w, c, q, cap, out, err)) != VL_OK)
                return st;
            w->stat_chunks++;
            w->stat_dependent += g->dependent;
        }
    return VL_OK;
}

/* Micro-batches of a group and how many trailing ones keep activations: pieces of the
 * last K chunks of a dependent group, every piece of a standalone chunk (together they
 * hold one chunk's tokens, so memory stays within the chunk). */
static uint32_t group_pieces(const vl_cf_work *w, const vl_cf_group *g, uint32_t k,
                             uint32_t *keep)
{
    uint32_t n = 0;

    *keep = 0;
    for (uint32_t j = 0; j < g->nchunk; j++) {
        n += w->pieces[g->chunk0 + j];
        if (!g->dependent || j + k >= g->nchunk)
            *keep += w->pieces[g->chunk0 + j];
    }
    return n;
}

static vl_status emit_op(vl_cf_work *w, vl_op op, vl_plan *out, vl_err *err)
{
    w->stat_recompute += op.kind == VL_OP_R;
    return vl_plan_op(out, op.mb, (vl_op_kind)op.kind, err);
}

/* The operations of groups order[a..b) of one rank, then the empty fillers. */
static vl_status emit_ops(vl_cf_work *w, size_t a, size_t b, uint32_t k, uint32_t empty,
                          vl_plan *out, vl_err *err)
{
    uint32_t m0 = 0, keep, n;
    vl_status st;

    for (size_t i = a; i < b; i++, m0 += n) {
        n = group_pieces(w, &w->groups[w->order[i]], k, &keep);
        if ((st = vl_grow(&w->ops, &w->ops_cap, 3 * (size_t)n, sizeof *w->ops, err)) != VL_OK)
            return st;
        size_t nop = vl__cf_group_ops(w->ops, m0, n, keep);
        for (size_t j = 0; j < nop; j++)
            if ((st = emit_op(w, w->ops[j], out, err)) != VL_OK)
                return st;
    }
    for (uint32_t e = 0; e < empty; e++, m0++)
        if ((st = emit_op(w, (vl_op){.mb = m0, .kind = VL_OP_F}, out, err)) != VL_OK ||
            (st = emit_op(w, (vl_op){.mb = m0, .kind = VL_OP_B}, out, err)) != VL_OK)
            return st;
    return VL_OK;
}

static vl_status emit_rank(vl_cf_work *w, const vl_cf_setting *s, int r, size_t a, size_t b,
                           uint32_t target, vl_plan *out, vl_err *err)
{
    uint32_t empty = cut_rank(w, a, b, target - rank_chunks(w, a, b));
    vl_status st = vl_plan_rank_begin(out, r, &s->par, err);

    vl_plan_rank_k(out, s->k);

    for (size_t i = a; i < b && st == VL_OK; i++)
        st = emit_group(w, &w->groups[w->order[i]], s->chunk, out, err);
    for (uint32_t e = 0; e < empty && st == VL_OK; e++)
        st = vl_plan_mb_begin(out, s->chunk, err);
    w->stat_empty += empty;
    return st == VL_OK ? emit_ops(w, a, b, s->k, empty, out, err) : st;
}

/* The busiest rank's chunk count: the micro-batch count every rank is brought to. */
static uint32_t most_chunks(const vl_cf_work *w)
{
    uint32_t most = 0;

    for (size_t a = 0, b; a < w->ngroups; a = b) {
        b = rank_end(w, a, w->groups[w->order[a]].rank);
        uint32_t n = rank_chunks(w, a, b);
        most = n > most ? n : most;
    }
    return most;
}

vl_status vl__cf_emit(vl_cf_work *w, const vl_cf_setting *s, uint32_t epoch, vl_plan *out,
                      vl_err *err)
{
    uint32_t target = most_chunks(w);
    size_t a = 0;
    vl_status st;

    if ((st = vl_grow(&w->pieces, &w->pieces_cap, w->nchunks, sizeof *w->pieces, err)) !=
            VL_OK ||
        (st = vl_plan_iter_begin(out, epoch, err)) != VL_OK)
        return st;
    for (int r = 0; r < s->dp; r++) {
        size_t b = rank_end(w, a, r);
        if ((st = emit_rank(w, s, r, a, b, target, out, err)) != VL_OK)
            return st;
        a = b;
    }
    return VL_OK;
}

vl_status vl__cf_plan_batch(vl_cf_work *w, const vl_cf_setting *s, const vl_cost *c,
                            const uint32_t *samples, size_t n, const uint32_t *len,
                            uint32_t epoch, vl_plan *out, vl_err *err)
{
    vl_status st;

    if ((st = vl__cf_build(w, samples, n, len, s->chunk, s->dp, err)) != VL_OK ||
        (st = vl__cf_assign(w, s, c, err)) != VL_OK)
        return st;
    return vl__cf_emit(w, s, epoch, out, err);
}
