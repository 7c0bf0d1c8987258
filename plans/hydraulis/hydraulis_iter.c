/* plans/hydraulis/hydraulis_iter.c -- one iteration of Hydraulis on one candidate: the
 * two-stage assignment (dispatch across pipelines, then packing within each) as an
 * estimate, and the plan's iteration for the candidate chosen.  Ranks of the iteration
 * are the candidate's pipelines, each with its own <tp, pp> and micro-batch count; GPUs
 * follow the default placement, consecutive blocks in rank order (tp descending, so a
 * TP group never straddles a node when tp <= gpus_per_node). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hydraulis_impl.h"
#include "sort.h"

static void assign_free(hy_assign *a)
{
    free(a->owner);
    free(a->mb);
    free(a->nmb);
    *a = (hy_assign){0};
}

void vl__hy_iter_free(hy_iter *it)
{
    vl__hy_work_free(&it->w);
    free(it->pipes);
    free(it->sub);
    free(it->pos);
    free(it->bin);
    free(it->gpos);
    free(it->gstart);
    free(it->pipe_est);
    free(it->porder);
    assign_free(&it->cur);
    assign_free(&it->kept);
    for (size_t c = 0; c < it->memo_cap; c++)
        assign_free(&it->memo[c]);
    free(it->memo);
    free(it->memo_gen);
    it->memo = NULL;
    it->memo_gen = NULL;
    it->memo_cap = 0;
    it->pipes = NULL;
    it->sub = it->pos = it->bin = it->gpos = NULL;
    it->gstart = NULL;
    it->gstart_cap = 0;
    it->pipe_est = NULL;
    it->porder = NULL;
    it->porder_cap = 0;
    it->pipes_cap = it->seq_cap = it->est_cap = 0;
}

/* Room in a for n sequences and np pipelines, contents kept.  VL_ENOMEM. */
static vl_status assign_grow(hy_assign *a, size_t n, size_t np, vl_err *err)
{
    size_t c = a->seq_cap;
    vl_status st;

    if ((st = vl_grow(&a->owner, &c, n + 1, sizeof *a->owner, err)) != VL_OK)
        return st;
    c = a->seq_cap;
    if ((st = vl_grow(&a->mb, &c, n + 1, sizeof *a->mb, err)) != VL_OK)
        return st;
    a->seq_cap = c;
    return vl_grow(&a->nmb, &a->pipe_cap, np + 1, sizeof *a->nmb, err);
}

static vl_status reserve(hy_iter *it, size_t n, size_t np, vl_err *err)
{
    size_t c = it->seq_cap, e = it->est_cap;
    vl_status st;

    if ((st = vl_grow(&it->pipes, &it->pipes_cap, np + 1, sizeof *it->pipes, err)) ||
        (st = vl_grow(&it->pipe_est, &e, np + 1, sizeof *it->pipe_est, err)))
        return st;
    it->est_cap = e;
    if ((st = vl_grow(&it->sub, &c, n + 1, sizeof *it->sub, err)) != VL_OK)
        return st;
    c = it->seq_cap;
    if ((st = vl_grow(&it->pos, &c, n + 1, sizeof *it->pos, err)) != VL_OK)
        return st;
    c = it->seq_cap;
    if ((st = vl_grow(&it->bin, &c, n + 1, sizeof *it->bin, err)) != VL_OK)
        return st;
    c = it->seq_cap;
    if ((st = vl_grow(&it->gpos, &c, n + 1, sizeof *it->gpos, err)) != VL_OK)
        return st;
    it->seq_cap = c;
    if ((st = vl_grow(&it->gstart, &it->gstart_cap, np + 2, sizeof *it->gstart, err)) ||
        (st = vl_grow(&it->porder, &it->porder_cap, np + 1, sizeof *it->porder, err)))
        return st;
    return assign_grow(&it->cur, n, np, err);
}

/* The candidate's pipelines by MaxLen descending (stable: rank order among equals). */
static size_t load_pipes(hy_iter *it, size_t cand)
{
    const hy_cand *c = &it->cands->c[cand];

    for (uint32_t k = 0; k < c->np; k++) {
        hy_pipe p = {.s = &it->sch->s[it->cands->pipes[c->p0 + k]], .slot = k};
        size_t j = k;
        while (j > 0 && it->pipes[j - 1].s->maxlen < p.s->maxlen) {
            it->pipes[j] = it->pipes[j - 1];
            j--;
        }
        it->pipes[j] = p;
    }
    return c->np;
}

/* The scheme pipeline j packs with: packing to the maximum length (the ablation) fills
 * micro-batches to the context length, as fixed-length packing does, or to MaxLen when
 * that is shorter. */
static hy_scheme packing_scheme(const hy_iter *it, size_t j)
{
    hy_scheme s = *it->pipes[j].s;

    if (it->packing == HY_MAXPACK && it->context >= HY_ALIGN && it->context < s.maxlen)
        s.maxlen = it->context;
    return s;
}

/* Batch positions grouped by pipeline under `owner`, each group in batch order
 * (it->gpos[it->gstart[j] .. it->gstart[j + 1]) for pipeline j): one pass, not one per
 * pipeline. */
static void group(hy_iter *it, const uint32_t *owner, size_t n, size_t np)
{
    memset(it->gstart, 0, (np + 1) * sizeof *it->gstart);
    for (size_t i = 0; i < n; i++)
        it->gstart[owner[i] + 1]++;
    for (size_t j = 0; j < np; j++)
        it->gstart[j + 1] += it->gstart[j];
    for (size_t i = 0; i < n; i++)
        it->gpos[it->gstart[owner[i]]++] = (uint32_t)i;
    for (size_t j = np; j > 0; j--) /* the fill moved every start to the next one */
        it->gstart[j] = it->gstart[j - 1];
    it->gstart[0] = 0;
}

/* The sequences of pipeline j of the last group() (manifest indices, in batch order)
 * into it->sub, their batch positions into it->pos. */
static size_t gather(hy_iter *it, const uint32_t *seq, size_t j)
{
    size_t m = 0;
    for (size_t q = it->gstart[j]; q < it->gstart[j + 1]; q++) {
        it->pos[m] = it->gpos[q];
        it->sub[m++] = seq[it->gpos[q]];
    }
    return m;
}

/* The pipelines in the order eval packs them: the heaviest dispatch load first (Σ t of
 * its sequences; ties: index), so a bound is reached after few of them. */
static void pack_order(hy_iter *it, const uint32_t *seq, size_t np, const uint32_t *len)
{
    for (size_t j = 0; j < np; j++) {
        double load = 0;
        for (size_t q = it->gstart[j]; q < it->gstart[j + 1]; q++)
            load += hy_t(it->pipes[j].s, len[seq[it->gpos[q]]]);
        it->pipe_est[j] = load; /* overwritten by the estimates as they are packed */
        size_t k = j;
        while (k > 0 && it->pipe_est[it->porder[k - 1]] < load) {
            it->porder[k] = it->porder[k - 1];
            k--;
        }
        it->porder[k] = (uint32_t)j;
    }
}

/* The most distinct schemes lower_bound() looks at (a candidate of more gets no bound). */
#define HY_LB_KINDS 32

/* A lower bound on the estimate of the candidate whose pipelines load_pipes() listed,
 * for any dispatch of the batch and any packing; 0 when some time could be negative.
 * Pipeline j's estimate (m + c)·(pp − 1 + v) is at least Σ t + c·v + (pp − 1)·c over its
 * sequences (m·v >= Σ t), and v >= its tokens / MaxLen: at least Σ w over them, w = t +
 * c·l / MaxLen.  So the slowest pipeline is at least Σ w / np with each sequence's
 * smallest w over the pipelines holding it, and at least the pipeline of any one
 * sequence: w + (pp − 1)·(t + c) (m >= t).  And as m >= Σ t / v, the estimate is at least
 * Σ t + (pp − 1)·c + c·v + (pp − 1)·Σ t / v >= S + (pp − 1)·c + 2·√(c·(pp − 1)·S), S = Σ t,
 * which grows with S: some pipeline holds S >= Σ t / np with each sequence's smallest t. */
static double lower_bound(const hy_iter *it, size_t np, const uint32_t *seq, size_t n,
                          const uint32_t *len)
{
    const hy_scheme *ks[HY_LB_KINDS];
    size_t nk = 0;
    double sum = 0, tsum = 0, one = 0, deep = INFINITY;

    /* pipes by MaxLen descending, a scheme's pipelines adjacent (load_pipes' stable
     * sort of the rank order): its distinct schemes, MaxLen descending */
    for (size_t j = 0; j < np; j++) {
        const hy_scheme *s = it->pipes[j].s;
        if (s->a < 0 || s->b < 0 || s->c < 0 || s->maxlen == 0)
            return 0;
        if (nk > 0 && ks[nk - 1] == s)
            continue;
        if (nk == HY_LB_KINDS)
            return 0;
        ks[nk++] = s;
    }
    for (size_t i = 0; i < n; i++) {
        uint32_t l = len[seq[i]];
        double w = INFINITY, x = INFINITY, tmin = INFINITY;
        for (size_t k = 0; k < nk && ks[k]->maxlen >= l; k++) {
            double t = hy_t(ks[k], l), wk = t + ks[k]->c * l / ks[k]->maxlen;
            w = hy_min(w, wk);
            x = hy_min(x, wk + (ks[k]->pp - 1) * (t + ks[k]->c));
            tmin = hy_min(tmin, t);
        }
        sum += w;
        tsum += tmin;
        one = hy_max(one, x);
    }
    tsum /= (double)np;
    for (size_t k = 0; k < nk; k++) {
        double cp = ks[k]->c * (ks[k]->pp - 1);
        deep = hy_min(deep, tsum + cp + 2 * sqrt(cp * tsum));
    }
    /* less a margin far above the rounding of the sums compared */
    return hy_max(hy_max(sum / (double)np, one), deep) * (1 - 1e-9);
}

double vl__hy_eval(hy_iter *it, size_t cand, const uint32_t *seq, size_t n,
                   const uint32_t *len, uint64_t stream, bool allow_empty, double bound,
                   vl_status *st, vl_err *err)
{
    size_t np = it->cands->c[cand].np;
    double worst = 0, cut;

    if ((*st = reserve(it, n, np, err)) != VL_OK)
        return -1;
    load_pipes(it, cand);
    /* its estimate would pass the bound: no dispatch, no packing (a sequence no pipeline
     * holds gives an infinite bound, and that candidate cannot win either) */
    if (bound < INFINITY && n > 0 && (worst = lower_bound(it, np, seq, n, len)) > bound)
        return worst;
    /* a dispatch objective past the bound by this margin (far above the rounding of
     * the sums packing compares) gives an estimate past the bound: trials stop there
     * (a bound of 0 has no margin: no cut) */
    cut = bound > 0 && bound < INFINITY ? bound * (1 + 1e-6) : INFINITY;
    worst = vl__hy_dispatch_cut(&it->w, it->pipes, np, seq, n, len, it->trials, it->seed,
                                stream, allow_empty, cut, it->cur.owner, st, err);
    if (worst == INFINITY)
        return cut;
    if (worst < 0)
        return -1;
    worst = 0;
    group(it, it->cur.owner, n, np);
    pack_order(it, seq, np, len);
    for (size_t o = 0; o < np && *st == VL_OK && worst <= bound; o++) {
        size_t j = it->porder[o], m = gather(it, seq, j);
        hy_scheme s = packing_scheme(it, j);
        it->pipe_est[j] = vl__hy_pack(&it->w, &s, it->sub, m, len, it->packing, it->bin,
                                      &it->cur.nmb[j], st, err);
        for (size_t q = 0; q < m; q++)
            it->cur.mb[it->pos[q]] = it->bin[q];
        worst = it->pipe_est[j] > worst ? it->pipe_est[j] : worst;
    }
    return *st == VL_OK ? worst : -1;
}

/* ---- emission ---- */

/* A sequence of a rank in emission order: its micro-batch, then longer first, then
 * sample index. */
typedef struct {
    uint32_t mb, len, sample;
} mb_seq;

/* A micro-batch in emission order: more tokens first, then index. */
typedef struct {
    uint64_t tokens;
    uint32_t mb, first; /* its sequences: seqs[first ..] of the same mb */
} mb_key;

static int mb_cmp(const void *pa, const void *pb)
{
    const mb_key *a = pa, *b = pb;

    if (a->tokens != b->tokens)
        return a->tokens > b->tokens ? -1 : 1;
    return (a->mb > b->mb) - (a->mb < b->mb);
}

static vl_status emit_mbs(const mb_seq *seqs, size_t m, const mb_key *mbs, uint32_t v,
                          vl_plan *out, vl_err *err)
{
    vl_status st = VL_OK;

    for (uint32_t k = 0; k < v && st == VL_OK; k++) {
        uint64_t cap = (mbs[k].tokens + HY_ALIGN - 1) / HY_ALIGN * HY_ALIGN;
        st = vl_plan_mb_begin(out, (uint32_t)cap, err);
        for (size_t q = mbs[k].first; q < m && seqs[q].mb == mbs[k].mb && st == VL_OK; q++)
            st = vl_plan_seg(out, seqs[q].sample, 0, seqs[q].len, err);
    }
    return st;
}

/* The m sequences of the last gather() (micro-batches it->bin) into seqs in emission
 * order: by micro-batch (counted into place, mbs[b].first its start), each one's by
 * length descending then sample index (one key each: sorted as integers). */
static void order_seqs(const hy_iter *it, size_t m, uint32_t v, const uint32_t *len,
                       mb_key *mbs, uint64_t *key, uint64_t *tmp, mb_seq *seqs)
{
    uint32_t at = 0;

    for (size_t i = 0; i < m; i++)
        mbs[it->bin[i]].first++; /* counts first, starts below */
    for (uint32_t b = 0; b < v; b++) {
        uint32_t c = mbs[b].first;
        mbs[b].first = at;
        at += c;
    }
    for (size_t i = 0; i < m; i++) {
        uint32_t l = len[it->sub[i]];
        key[mbs[it->bin[i]].first++] = (uint64_t)(UINT32_MAX - l) << 32 | it->sub[i];
    }
    at = 0;
    for (uint32_t b = 0; b < v; b++) {
        uint32_t end = mbs[b].first;
        vl_sort_u64_with(key + at, tmp, end - at);
        for (uint32_t q = at; q < end; q++)
            seqs[q] = (mb_seq){.mb = b,
                               .len = UINT32_MAX - (uint32_t)(key[q] >> 32),
                               .sample = (uint32_t)key[q]};
        mbs[b].first = end > at ? at : (uint32_t)m; /* as the first of its sequences */
        at = end;
    }
}

/* Pipeline j's rank: its micro-batches by tokens descending (then index), each one's
 * sequences by length descending (then sample index). */
static vl_status emit_rank(hy_iter *it, size_t j, int dp, size_t m, uint32_t v,
                           const uint32_t *len, vl_plan *out, vl_err *err)
{
    vl_par par = {
        .tp = it->pipes[j].s->tp, .pp = it->pipes[j].s->pp, .sp = 1, .ckpt_layers = 0};
    mb_seq *seqs = malloc((m + 1) * sizeof *seqs);
    mb_key *mbs = calloc(v + 1, sizeof *mbs);
    uint64_t *key = malloc(2 * (m + 1) * sizeof *key);
    vl_status st = seqs && mbs && key ? vl_plan_rank_begin(out, dp, &par, err)
                                      : vl_seterr(err, VL_ENOMEM, "hydraulis: out of memory");

    if (st == VL_OK) {
        for (uint32_t b = 0; b < v; b++)
            mbs[b] = (mb_key){.mb = b};
        for (size_t i = 0; i < m; i++)
            mbs[it->bin[i]].tokens += len[it->sub[i]];
        order_seqs(it, m, v, len, mbs, key, key + m + 1, seqs);
        qsort(mbs, v, sizeof *mbs, mb_cmp);
        st = emit_mbs(seqs, m, mbs, v, out, err);
    }
    free(seqs);
    free(mbs);
    free(key);
    return st;
}

void vl__hy_keep(hy_iter *it, size_t cand)
{
    hy_assign t = it->kept;

    it->kept = it->cur;
    it->cur = t;
    it->kept_cand = cand;
}

/* a's first n sequences and np pipelines into b, grown as needed.  VL_ENOMEM. */
static vl_status assign_copy(hy_assign *b, const hy_assign *a, size_t n, size_t np,
                             vl_err *err)
{
    vl_status st = assign_grow(b, n, np, err);

    if (st != VL_OK)
        return st;
    memcpy(b->owner, a->owner, n * sizeof *b->owner);
    memcpy(b->mb, a->mb, n * sizeof *b->mb);
    memcpy(b->nmb, a->nmb, np * sizeof *b->nmb);
    return VL_OK;
}

void vl__hy_memo_clear(hy_iter *it)
{
    it->gen++;
}

vl_status vl__hy_memo_save(hy_iter *it, size_t cand, size_t n, vl_err *err)
{
    size_t nc = it->cands->n;
    vl_status st;

    if (it->memo_cap < nc) {
        hy_assign *m = realloc(it->memo, nc * sizeof *m);
        uint64_t *g = m ? realloc(it->memo_gen, nc * sizeof *g) : NULL;
        if (m)
            it->memo = m;
        if (g == NULL)
            return vl_seterr(err, VL_ENOMEM, "hydraulis: out of memory");
        it->memo_gen = g;
        for (size_t c = it->memo_cap; c < nc; c++) {
            it->memo[c] = (hy_assign){0};
            it->memo_gen[c] = 0;
        }
        it->memo_cap = nc;
    }
    it->memo_gen[cand] = 0;
    if ((st = assign_copy(&it->memo[cand], &it->cur, n, it->cands->c[cand].np, err)) != VL_OK)
        return st;
    it->memo_gen[cand] = it->gen;
    return VL_OK;
}

bool vl__hy_memo_keep(hy_iter *it, size_t cand)
{
    hy_assign t;

    if (cand >= it->memo_cap || it->memo_gen[cand] != it->gen || it->gen == 0)
        return false;
    /* the memo and kept swap: the memo is spent (emission reads kept only) */
    t = it->kept;
    it->kept = it->memo[cand];
    it->memo[cand] = t;
    it->memo_gen[cand] = 0;
    it->kept_cand = cand;
    return true;
}

vl_status vl__hy_emit_kept(hy_iter *it, const uint32_t *seq, size_t n, const uint32_t *len,
                           uint32_t epoch, vl_plan *out, vl_err *err)
{
    size_t cand = it->kept_cand, np = it->cands->c[cand].np;
    vl_status st;
    int dp = 0;

    load_pipes(it, cand);
    group(it, it->kept.owner, n, np);
    if ((st = vl_plan_iter_begin(out, epoch, err)) != VL_OK)
        return st;
    vl_plan_iter_candidate(out, (int32_t)cand);
    for (uint32_t slot = 0; slot < np && st == VL_OK; slot++) {
        size_t j = 0, m;
        while (it->pipes[j].slot != slot)
            j++;
        if ((m = gather(it, seq, j)) == 0)
            continue; /* an idle pipeline (allowed only without a better candidate) */
        for (size_t q = 0; q < m; q++)
            it->bin[q] = it->kept.mb[it->pos[q]];
        st = emit_rank(it, j, dp++, m, it->kept.nmb[j], len, out, err);
    }
    return st;
}

vl_status vl__hy_emit(hy_iter *it, size_t cand, const uint32_t *seq, size_t n,
                      const uint32_t *len, uint64_t stream, bool allow_empty, uint32_t epoch,
                      vl_plan *out, vl_err *err)
{
    vl_status st;

    if (vl__hy_eval(it, cand, seq, n, len, stream, allow_empty, INFINITY, &st, err) < 0)
        return st != VL_OK ? st
                           : vl_seterr(err, VL_EINTERNAL,
                                       "hydraulis: candidate %zu "
                                       "cannot run the batch it was chosen for",
                                       cand);
    vl__hy_keep(it, cand);
    return vl__hy_emit_kept(it, seq, n, len, epoch, out, err);
}

void vl__hy_cand_text(const hy_cands *cs, const hy_schemes *sch, size_t c, char *buf, size_t n)
{
    const hy_cand *k = &cs->c[c];
    size_t used = 0;

    buf[0] = '\0';
    for (uint32_t i = 0; i < k->np && used < n;) {
        uint32_t s = cs->pipes[k->p0 + i], d = 1;
        while (i + d < k->np && cs->pipes[k->p0 + i + d] == s)
            d++;
        int w = d > 1 ? snprintf(buf + used, n - used, "%s%ux%d/%d", i ? "+" : "", d,
                                 sch->s[s].tp, sch->s[s].pp)
                      : snprintf(buf + used, n - used, "%s%d/%d", i ? "+" : "", sch->s[s].tp,
                                 sch->s[s].pp);
        if (w < 0)
            break;
        used += (size_t)w;
        i += d;
    }
}
