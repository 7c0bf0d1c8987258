/* lib/plan/planio_read_iter.c -- one "iter" record into the plan, walking the field table
 * (planio_fields.c): integer fields take their default when absent, "seg" is the only
 * thing a pack must have, and every redundant claim (tokens, cu_seqlens, loss_tokens,
 * samples, the iteration number) is compared with what the segments show when present.
 * Nothing here stops the read: structural errors and findings are recorded in place. */
#include "planio_impl.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

/* ---- integer fields ---- */

/* Row f of the table from object o into elem: its default when absent; a non-integer
 * or a value outside the C type is a structural error (ranges are verify's). */
static void read_scalar(vl_reader *r, const vl_pfield *f, json_t *o, void *elem, long index,
                        uint64_t tokens)
{
    const json_t *v = json_object_get(o, f->key);
    char *at = (char *)elem + f->off;
    int64_t x = f->def == VL_PF_DEF_INDEX    ? index
                : f->def == VL_PF_DEF_TOKENS ? (int64_t)tokens
                                             : f->def;
    int64_t lo = f->kind == VL_PF_I32 ? INT32_MIN : 0;
    int64_t hi = f->kind == VL_PF_I32 ? INT32_MAX : UINT32_MAX;

    /* a default outside the field's range stands for "absent" (k 0, group -1): written
     * out, it would read as absent and pass verify, which cannot tell the two apart */
    bool sentinel = f->def < f->min || f->def > f->max;

    if (v && (!json_is_integer(v) || json_integer_value(v) < lo || json_integer_value(v) > hi))
        vl__rd_error(r, "\"%s\": expected an integer %lld..%lld", f->key, (long long)lo,
                     (long long)hi);
    else if (v && sentinel && json_integer_value(v) == f->def)
        vl__rd_error(r, "\"%s\": %lld means absent; expected %lld..%lld or no \"%s\"", f->key,
                     (long long)f->def, (long long)f->min, (long long)f->max, f->key);
    else if (v)
        x = json_integer_value(v);
    if (f->kind == VL_PF_I32)
        *(int32_t *)at = (int32_t)x;
    else
        *(uint32_t *)at = (uint32_t)x;
}

/* Every integer row of `level` from o into elem. */
static void read_scalars(vl_reader *r, vl_pf_level level, json_t *o, void *elem, long index,
                         uint64_t tokens)
{
    for (const vl_pfield *f = vl_plan_fields; f->key; f++)
        if (f->level == level && (f->kind == VL_PF_I32 || f->kind == VL_PF_U32))
            read_scalar(r, f, o, elem, index, tokens);
}

/* A member that must be an array when present: NULL when absent or wrong (recorded). */
static json_t *opt_array(vl_reader *r, json_t *o, const char *key, bool required)
{
    json_t *v = json_object_get(o, key);

    if (v && json_is_array(v))
        return v;
    if (v || required)
        vl__rd_error(r, v ? "\"%s\": expected an array" : "missing \"%s\"", key);
    return NULL;
}

/* List `key` of a `level` record as the table has it (planio_fields.c): required or
 * not, and at least its min_len entries -- what the Python reader holds it to as well. */
static json_t *list_of(vl_reader *r, json_t *o, vl_pf_level level, const char *key)
{
    const vl_pfield *f = vl_plan_fields;
    json_t *v;

    while (f->key && ((int)f->level != (int)level || strcmp(f->key, key) != 0))
        f++;
    v = opt_array(r, o, key, f->required);
    if (v && f->arr && json_array_size(v) < f->arr->min_len) {
        vl__rd_error(r, "\"%s\" has %zu entries, expected at least %zu", key,
                     json_array_size(v), f->arr->min_len);
        return NULL;
    }
    return v;
}

static bool elem_int(const json_t *a, size_t i, int64_t lo, int64_t hi, int64_t *out)
{
    const json_t *v = json_array_get(a, i);

    if (!json_is_integer(v) || json_integer_value(v) < lo || json_integer_value(v) > hi)
        return false;
    *out = json_integer_value(v);
    return true;
}

/* ---- a pack ---- */

static vl_status read_seg(vl_reader *r, const json_t *e, vl_err *err)
{
    const vl_pitem *it = vl_pf_seg.items; /* id, offset, length, cp */
    int64_t off, len, cp = VL_CP_SHARDED;
    uint32_t sample;
    bool ok;
    vl_status st;

    if (!json_is_array(e) || json_array_size(e) < vl_pf_seg.arity_min ||
        json_array_size(e) > vl_pf_seg.arity_max ||
        !elem_int(e, 1, it[1].min, it[1].max, &off) ||
        !elem_int(e, 2, it[2].min, it[2].max, &len) ||
        (json_array_size(e) == 4 && !elem_int(e, 3, it[3].min, it[3].max, &cp))) {
        vl__rd_error(r,
                     "\"seg\": expected [ID, OFFSET, LENGTH] or [ID, OFFSET, LENGTH, CP] "
                     "(integers, CP %lld..%lld)",
                     (long long)it[3].min, (long long)it[3].max);
        return VL_OK;
    }
    if ((st = vl__rd_sample(r, json_array_get(e, 0), &sample, &ok, err)) != VL_OK || !ok)
        return st;
    return vl_plan_seg_cp(r->p, sample, (uint32_t)off, (uint32_t)len, (int)cp, err);
}

/* cu_seqlens must be 0 followed by the running sums of the segment lengths. */
static void check_cu(vl_reader *r, const json_t *cu, const vl_mb *mb)
{
    const vl_seg *s = vl_plan_mb_segs(r->p, mb);
    uint64_t sum = 0;
    bool ok = json_array_size(cu) == (size_t)mb->nseg + 1;

    for (size_t k = 0; ok && k <= mb->nseg; k++) {
        const json_t *v = json_array_get(cu, k);
        ok = json_is_integer(v) && (uint64_t)json_integer_value(v) == sum;
        if (k < mb->nseg)
            sum += s[k].len;
    }
    if (!ok)
        vl__rd_problem(r, 2,
                       "\"cu_seqlens\" is not 0 followed by the running sums of the "
                       "segment lengths");
}

/* Any number of members from 2 (a pack shared by every rank of a large pool has
 * hundreds: Megatron's hybrid-CP barrier, mcore_cp). */
static vl_status read_shared(vl_reader *r, json_t *o, vl_err *err)
{
    json_t *sh = list_of(r, o, VL_PF_MB, "shared");
    size_t n = sh ? json_array_size(sh) : 0;
    int32_t small[64], *dp = small;
    int64_t v;
    vl_status st = VL_OK;

    if (!sh)
        return VL_OK;
    if (n < vl_pf_shared.min_len || n > INT32_MAX) {
        vl__rd_error(r, "\"shared\": expected two or more data-parallel ranks, got %zu", n);
        return VL_OK;
    }
    if (n > 64 && !(dp = malloc(n * sizeof *dp)))
        return vl_seterr(err, VL_ENOMEM, "out of memory for %zu sharers", n);
    for (size_t i = 0; i < n && st == VL_OK; i++) {
        if (!elem_int(sh, i, vl_pf_shared.items->min, vl_pf_shared.items->max, &v)) {
            vl__rd_error(r, "\"shared\": expected data-parallel indices (integers >= 0)");
            n = 0;
            break;
        }
        dp[i] = (int32_t)v;
    }
    if (n > 0)
        st = vl_plan_mb_share(r->p, dp, n, err);
    if (dp != small)
        free(dp);
    return st;
}

static vl_status read_pack(vl_reader *r, json_t *o, bool bwd, vl_err *err)
{
    json_t *seg, *cu;
    vl_mb *mb;
    uint64_t tokens = 0;
    bool bad = false, has_tokens;
    vl_status st;

    if (!json_is_object(o)) {
        vl__rd_error(r, "expected a micro-batch object");
        return VL_OK;
    }
    if ((st = bwd ? vl_plan_bwd_begin(r->p, 0, err) : vl_plan_mb_begin(r->p, 0, err)))
        return st;
    seg = list_of(r, o, VL_PF_MB, "seg");
    for (size_t k = 0; seg && k < json_array_size(seg); k++) {
        r->seg = (long)k;
        if ((st = read_seg(r, json_array_get(seg, k), err)) != VL_OK)
            return st;
    }
    r->seg = -1;
    mb = &r->p->mbs[r->p->nmbs - 1];
    read_scalars(r, VL_PF_MB, o, mb, r->mb, mb->tokens);
    if ((cu = list_of(r, o, VL_PF_MB, "cu_seqlens")))
        check_cu(r, cu, mb);
    has_tokens = vl__rd_uint(r, o, "tokens", VL_PF_COUNT_MAX, &tokens, &bad);
    if (has_tokens && tokens != mb->tokens)
        vl__rd_problem(r, 2, "\"tokens\" is %llu, the segments sum to %llu",
                       (unsigned long long)tokens, (unsigned long long)mb->tokens);
    return read_shared(r, o, err);
}

static vl_status read_packs(vl_reader *r, json_t *list, bool bwd, vl_err *err)
{
    vl_status st;

    r->bwd = bwd;
    for (size_t b = 0; list && b < json_array_size(list); b++) {
        r->mb = (long)b;
        if ((st = read_pack(r, json_array_get(list, b), bwd, err)) != VL_OK)
            return st;
    }
    r->mb = -1;
    r->bwd = false;
    return VL_OK;
}

/* ---- a rank ---- */

static vl_status read_op(vl_reader *r, const json_t *e, vl_err *err)
{
    const char *k = json_string_value(json_array_get(e, 0)), *names = vl_pf_op_names;
    const vl_pitem *pack = &vl_pf_schedule.items[1];
    int64_t mb;

    if (!json_is_array(e) || json_array_size(e) != vl_pf_schedule.arity_max || !k ||
        strlen(k) != 1 || !strchr(names, k[0]) || !elem_int(e, 1, pack->min, pack->max, &mb)) {
        vl__rd_error(r, "\"schedule\": expected [\"F\"|\"R\"|\"B\", MICRO_BATCH]");
        return VL_OK;
    }
    return vl_plan_op(r->p, (uint32_t)mb, (vl_op_kind)(strchr(names, k[0]) - names), err);
}

/* "gpus", when given and as long as the rank's tp·sp·pp; otherwise the default. */
static vl_status read_gpus(vl_reader *r, json_t *o, const vl_rank *rk, vl_err *err)
{
    json_t *g = list_of(r, o, VL_PF_RANK, "gpus");
    uint32_t n = vl_plan_rank_size(rk), *v;
    int64_t x;
    vl_status st;

    if (!g)
        return VL_OK;
    if (rk->par.tp < 1 || rk->par.sp < 1 || rk->par.pp < 1 ||
        vl_plan_rank_size64(rk) != json_array_size(g) || json_array_size(g) != n) {
        vl__rd_problem(r, 5, "\"gpus\" lists %zu GPUs for tp %d x sp %d x pp %d",
                       json_array_size(g), rk->par.tp, rk->par.sp, rk->par.pp);
        return VL_OK;
    }
    if (!(v = malloc((n ? n : 1) * sizeof *v)))
        return vl_seterr(err, VL_ENOMEM, "out of memory reading GPU placements");
    for (uint32_t k = 0; k < n; k++) {
        if (!elem_int(g, k, vl_pf_gpus.items->min, vl_pf_gpus.items->max, &x)) {
            vl__rd_error(r, "\"gpus\": expected GPU indices (integers >= 0)");
            free(v);
            return VL_OK;
        }
        v[k] = (uint32_t)x;
    }
    st = vl_plan_rank_gpus(r->p, v, n, err);
    free(v);
    return st;
}

static vl_status read_rank(vl_reader *r, json_t *o, vl_err *err)
{
    json_t *sched;
    vl_rank tmp = {0}, *rk;
    vl_par none = {1, 1, 1, 0};
    vl_status st;

    if (!json_is_object(o)) {
        vl__rd_error(r, "expected a rank object");
        return VL_OK;
    }
    if ((st = vl_plan_rank_begin(r->p, 0, &none, err)) != VL_OK)
        return st;
    read_scalars(r, VL_PF_RANK, o, &tmp, r->rank, 0);
    rk = &r->p->ranks[r->p->nranks - 1];
    rk->dp = tmp.dp;
    rk->par = tmp.par;
    rk->group = tmp.group;
    rk->k = tmp.k;
    if ((st = read_gpus(r, o, rk, err)) != VL_OK ||
        (st = read_packs(r, list_of(r, o, VL_PF_RANK, "mbs"), false, err)) != VL_OK ||
        (st = read_packs(r, list_of(r, o, VL_PF_RANK, "bwd"), true, err)) != VL_OK)
        return st;
    sched = list_of(r, o, VL_PF_RANK, "schedule");
    for (size_t i = 0; sched && i < json_array_size(sched); i++)
        if ((st = read_op(r, json_array_get(sched, i), err)) != VL_OK)
            return st;
    return VL_OK;
}

/* ---- the iteration ---- */

/* The iteration's own claims against what its segments add up to. */
static void check_claims(vl_reader *r, json_t *o, size_t unknown_before)
{
    size_t i = r->p->niters - 1;
    uint64_t t, l, s, v, number = r->p->iter_base + i;
    bool bad = false;

    vl_plan_iter_totals(r->p, i, &t, &l, &s);
    if (vl__rd_uint(r, o, "it", VL_PF_COUNT_MAX, &v, &bad) && v != number)
        vl__rd_problem(r, 5, "iteration numbered %llu, expected %llu", (unsigned long long)v,
                       (unsigned long long)number);
    if (vl__rd_uint(r, o, "tokens", VL_PF_COUNT_MAX, &v, &bad) && v != t)
        vl__rd_problem(r, 2, "\"tokens\" is %llu, its segments sum to %llu",
                       (unsigned long long)v, (unsigned long long)t);
    /* an unknown id's loss is unknown, not wrong */
    if (vl__rd_uint(r, o, "loss_tokens", VL_PF_COUNT_MAX, &v, &bad)) {
        if (v != l && r->m && unknown_before == r->file->unknown_ids)
            vl__rd_problem(r, 2, "\"loss_tokens\" is %llu, its segments carry %llu",
                           (unsigned long long)v, (unsigned long long)l);
    } else if (!bad && ((r->m && r->m->loss) || r->file->by_vlplan)) {
        /* a trainer reading the plan would normalise the loss by "tokens" instead */
        vl__rd_problem(r, 2,
                       "\"loss_tokens\" is missing, and %s (its segments carry "
                       "%llu)",
                       r->file->by_vlplan ? "vlplan writes it in every iteration"
                                          : "the manifest gives loss tokens",
                       (unsigned long long)l);
    }
    if (vl__rd_uint(r, o, "samples", VL_PF_COUNT_MAX, &v, &bad) && v != s)
        vl__rd_problem(r, 2, "\"samples\" is %llu, it starts %llu", (unsigned long long)v,
                       (unsigned long long)s);
}

vl_status vl__rd_iter(vl_reader *r, json_t *o, vl_err *err)
{
    size_t unknown = r->file->unknown_ids;
    vl_iter tmp = {0};
    json_t *ranks;
    vl_status st;

    r->it = (long)(r->p->iter_base + r->p->niters);
    read_scalars(r, VL_PF_ITER, o, &tmp, r->it, 0);
    if ((st = vl_plan_iter_begin(r->p, tmp.epoch, err)) != VL_OK)
        return st;
    vl_plan_iter_candidate(r->p, tmp.candidate);
    ranks = list_of(r, o, VL_PF_ITER, "ranks");
    for (size_t k = 0; ranks && k < json_array_size(ranks); k++) {
        r->rank = (long)k;
        if ((st = read_rank(r, json_array_get(ranks, k), err)) != VL_OK)
            return st;
    }
    r->rank = -1;
    check_claims(r, o, unknown);
    r->it = -1;
    return VL_OK;
}
