/* lib/plan/planio_fast.c -- the fast path of the plan reader: an "iter" record exactly as
 * planio_write_iter.c prints it (keys in the field table's order, no whitespace, canonical
 * integers, plain string ids, every claim consistent) is parsed straight into the plan.
 * Anything else -- an escape in an id, a claim that disagrees, an unknown id, a key out of
 * order -- makes it give the line back untouched (the plan and the id table rolled back),
 * and the jansson path (planio_read_iter.c) reads it with all its messages.  So the fast
 * path only ever accepts what the jansson path would read to the same plan with nothing to
 * report: fuzz/fuzz_planline.c holds the two to that, line by line. */
#include "planio_impl.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "utf8.h"

typedef struct cur {
    const char *p, *end;
} cur;

static bool lit(cur *c, const char *s, size_t n)
{
    if ((size_t)(c->end - c->p) < n || memcmp(c->p, s, n) != 0)
        return false;
    c->p += n;
    return true;
}

#define LIT(c, s) lit((c), (s), sizeof(s) - 1)

static bool peek(const cur *c, char ch)
{
    return c->p < c->end && *c->p == ch;
}

/* A JSON integer in canonical form (no leading zeros, no fraction or exponent) within
 * [lo, hi]. */
static bool num(cur *c, int64_t lo, int64_t hi, int64_t *out)
{
    const char *q = c->p;
    bool neg = false;
    uint64_t v = 0;

    if (q < c->end && *q == '-') {
        neg = true;
        q++;
    }
    if (q == c->end || *q < '0' || *q > '9' ||
        (*q == '0' && q + 1 < c->end && q[1] >= '0' && q[1] <= '9'))
        return false;
    for (; q < c->end && *q >= '0' && *q <= '9'; q++) {
        if (v > (UINT64_MAX - 9) / 10)
            return false;
        v = v * 10 + (uint64_t)(*q - '0');
    }
    if (q < c->end && (*q == '.' || *q == 'e' || *q == 'E'))
        return false;
    if (neg ? v > (uint64_t)INT64_MAX + 1 : v > (uint64_t)INT64_MAX)
        return false;
    *out = neg ? (int64_t)(0 - v) : (int64_t)v;
    if (*out < lo || *out > hi)
        return false;
    c->p = q;
    return true;
}

/* A key and its integer value, led by a comma unless it opens the object. */
static bool kv(cur *c, const char *key, bool first, int64_t lo, int64_t hi, int64_t *out)
{
    size_t k = strlen(key);

    if (!first && !LIT(c, ","))
        return false;
    if (!LIT(c, "\"") || !lit(c, key, k) || !LIT(c, "\":"))
        return false;
    return num(c, lo, hi, out);
}

/* Whether the next key is `key` (after its comma), without consuming anything. */
static bool next_key(const cur *c, const char *key)
{
    size_t k = strlen(key);

    return c->end - c->p > (ptrdiff_t)(k + 3) && c->p[0] == ',' && c->p[1] == '"' &&
           memcmp(c->p + 2, key, k) == 0 && c->p[2 + k] == '"';
}

/* ---- sample ids ---- */

void vl__idbatch_free(vl_idbatch *b)
{
    if (!b)
        return;
    free(b->ids);
    free(b->lens);
    free(b->off);
    free(b->res);
    free(b);
}

static bool batch_room(vl_idbatch *b)
{
    size_t nc = b->cap ? 2 * b->cap : 1024;
    const char **ids = realloc(b->ids, nc * sizeof *ids);
    size_t *lens = ids ? realloc(b->lens, nc * sizeof *lens) : NULL;
    size_t *off = lens ? realloc(b->off, nc * sizeof *off) : NULL;
    long long *res = off ? realloc(b->res, nc * sizeof *res) : NULL;

    if (ids)
        b->ids = ids;
    if (lens)
        b->lens = lens;
    if (off)
        b->off = off;
    if (!res)
        return false;
    b->res = res;
    b->cap = nc;
    return true;
}

/* Every string that opens an array element ("[\"...\"") is a sample id in a canonical
 * record (or a schedule's F/R/B, looked up for nothing): find them all at once. */
static vl_status prefetch_ids(vl_reader *r, const char *line, size_t len, vl_err *err)
{
    vl_idbatch *b = r->batch;
    const char *p = line, *end = line + len, *q;

    b->n = b->next = 0;
    b->line = line;
    while ((p = memchr(p, '[', (size_t)(end - p))) && p + 1 < end) {
        if (p[1] != '"' || !(q = memchr(p + 2, '"', (size_t)(end - p - 2)))) {
            p++;
            continue;
        }
        if (b->n == b->cap && !batch_room(b))
            return vl_seterr(err, VL_ENOMEM, "out of memory (sample ids of a record)");
        b->ids[b->n] = p + 2;
        b->lens[b->n] = (size_t)(q - p - 2);
        b->off[b->n++] = (size_t)(p + 1 - line);
        p = q + 1;
    }
    return vl_manifest_find_strs(r->m, b->ids, b->lens, b->n, b->res, err);
}

/* The answer for the id whose opening quote is at quote, -3 when it was not looked up. */
static long long batched(vl_reader *r, const char *quote)
{
    vl_idbatch *b = r->batch;
    size_t at;

    if (!b || !b->line)
        return -3;
    at = (size_t)(quote - b->line);
    while (b->next < b->n && b->off[b->next] < at)
        b->next++;
    return b->next < b->n && b->off[b->next] == at ? b->res[b->next] : -3;
}

/* An id: an integer, or a string without escapes or control characters, valid UTF-8.
 * Resolved like vl__rd_sample, but an id the manifest lacks gives the line back. */
static bool id(vl_reader *r, cur *c, uint32_t *sample, vl_err *err, vl_status *st)
{
    int64_t v;
    long long k;

    if (peek(c, '"')) {
        const char *s = ++c->p, *q = s;
        while (q < c->end && *q != '"' && *q != '\\' && (unsigned char)*q >= 0x20)
            q++;
        if (q == c->end || *q != '"' || !vl_utf8_valid(s, (size_t)(q - s)))
            return false;
        c->p = q + 1;
        if (!r->m)
            return (*st = vl__ids_intern(r->ids, true, 0, s, (size_t)(q - s), sample, err)) ==
                   VL_OK;
        k = batched(r, s - 1);
        if (k == -3) { /* not looked up in advance */
            char buf[256];
            if ((size_t)(q - s) >= sizeof buf)
                return false;
            memcpy(buf, s, (size_t)(q - s));
            buf[q - s] = '\0';
            k = vl_manifest_find_str(r->m, buf, err);
        }
    } else {
        if (!num(c, INT64_MIN, INT64_MAX, &v))
            return false;
        if (!r->m)
            return (*st = vl__ids_intern(r->ids, false, v, NULL, 0, sample, err)) == VL_OK;
        k = vl_manifest_find_int(r->m, v, err);
    }
    if (k == -2) {
        *st = VL_ENOMEM;
        return false;
    }
    if (k < 0 || (unsigned long long)k >= VL_SAMPLE_UNKNOWN)
        return false; /* the jansson path records it */
    *sample = (uint32_t)k;
    return true;
}

/* ---- a pack ---- */

static bool segs(vl_reader *r, cur *c, vl_err *err, vl_status *st)
{
    const vl_pitem *it = vl_pf_seg.items; /* id, offset, length, cp */

    if (!LIT(c, "{\"seg\":["))
        return false;
    for (bool first = true; !peek(c, ']'); first = false) {
        uint32_t sample;
        int64_t off, len, cp = VL_CP_SHARDED;
        if ((!first && !LIT(c, ",")) || !LIT(c, "[") || !id(r, c, &sample, err, st) ||
            !LIT(c, ",") || !num(c, it[1].min, it[1].max, &off) || !LIT(c, ",") ||
            !num(c, it[2].min, it[2].max, &len))
            return false;
        if (peek(c, ',') && (!LIT(c, ",") || !num(c, it[3].min, it[3].max, &cp)))
            return false;
        if (!LIT(c, "]") ||
            (*st = vl_plan_seg_cp(r->p, sample, (uint32_t)off, (uint32_t)len, (int)cp, err)))
            return false;
    }
    return LIT(c, "]");
}

/* "cu_seqlens" equal to 0 and the running sums of the pack's segments. */
static bool cu(const vl_plan *p, cur *c, const vl_mb *mb)
{
    const vl_seg *s = vl_plan_mb_segs(p, mb);
    uint64_t sum = 0;
    int64_t v;

    if (!LIT(c, ",\"cu_seqlens\":[0"))
        return false;
    for (uint32_t k = 0; k < mb->nseg; k++) {
        sum += s[k].len;
        if (!LIT(c, ",") || !num(c, 0, INT64_MAX, &v) || (uint64_t)v != sum)
            return false;
    }
    return LIT(c, "]");
}

/* Any number of members from 2, as the reader of planio_read_iter.c takes. */
static bool shared(vl_reader *r, cur *c, vl_err *err, vl_status *st)
{
    int32_t small[64], *dp = small;
    size_t n = 0, cap = 64;
    int64_t v;
    bool ok = true;

    if (!next_key(c, "shared"))
        return true;
    if (!LIT(c, ",\"shared\":["))
        return false;
    for (; ok && !peek(c, ']'); n++) {
        if (n == cap) { /* double the room; a failed allocation leaves the slow reader */
            int32_t *more = malloc(2 * cap * sizeof *more);
            if ((ok = more != NULL)) {
                memcpy(more, dp, n * sizeof *dp);
                if (dp != small)
                    free(dp);
                dp = more;
                cap *= 2;
            }
        }
        ok = ok && (n == 0 || LIT(c, ",")) &&
             num(c, vl_pf_shared.items->min, vl_pf_shared.items->max, &v);
        if (ok)
            dp[n] = (int32_t)v;
    }
    ok = ok && n >= vl_pf_shared.min_len && LIT(c, "]") &&
         (*st = vl_plan_mb_share(r->p, dp, n, err)) == VL_OK;
    if (dp != small)
        free(dp);
    return ok;
}

static bool pack(vl_reader *r, cur *c, bool bwd, vl_err *err, vl_status *st)
{
    int64_t tokens, cap;
    const vl_mb *mb;

    if ((*st = bwd ? vl_plan_bwd_begin(r->p, 0, err) : vl_plan_mb_begin(r->p, 0, err)) ||
        !segs(r, c, err, st))
        return false;
    mb = &r->p->mbs[r->p->nmbs - 1];
    if (!cu(r->p, c, mb) || !kv(c, "tokens", false, 0, INT64_MAX, &tokens) ||
        (uint64_t)tokens != mb->tokens || !kv(c, "cap", false, 0, UINT32_MAX, &cap))
        return false;
    r->p->mbs[r->p->nmbs - 1].cap = (uint32_t)cap;
    return shared(r, c, err, st) && LIT(c, "}");
}

static bool packs(vl_reader *r, cur *c, const char *key, bool bwd, vl_err *err, vl_status *st)
{
    if (!LIT(c, ",\"") || !lit(c, key, strlen(key)) || !LIT(c, "\":["))
        return false;
    for (bool first = true; !peek(c, ']'); first = false)
        if ((!first && !LIT(c, ",")) || !pack(r, c, bwd, err, st))
            return false;
    return LIT(c, "]");
}

/* ---- a rank ---- */

static bool gpus(vl_reader *r, cur *c, const vl_rank *rk, vl_err *err, vl_status *st)
{
    uint32_t n = vl_plan_rank_size(rk), buf[64];
    int64_t v;

    if (!LIT(c, ",\"gpus\":[") || n == 0 || n > 64 || vl_plan_rank_size64(rk) != n)
        return false; /* larger (or wrapping) ranks: the jansson path */
    for (uint32_t k = 0; k < n; k++) {
        if ((k > 0 && !LIT(c, ",")) ||
            !num(c, vl_pf_gpus.items->min, vl_pf_gpus.items->max, &v))
            return false;
        buf[k] = (uint32_t)v;
    }
    return LIT(c, "]") && (*st = vl_plan_rank_gpus(r->p, buf, n, err)) == VL_OK;
}

static bool schedule(vl_reader *r, cur *c, vl_err *err, vl_status *st)
{
    const char *names = vl_pf_op_names;
    const vl_pitem *pack = &vl_pf_schedule.items[1];

    if (!next_key(c, "schedule"))
        return true;
    if (!LIT(c, ",\"schedule\":["))
        return false;
    for (bool first = true; !peek(c, ']'); first = false) {
        const char *k;
        int64_t mb;
        if ((!first && !LIT(c, ",")) || !LIT(c, "[\"") || c->p == c->end ||
            !(k = memchr(names, *c->p, strlen(names))) || (c->p++, !LIT(c, "\",")) ||
            !num(c, pack->min, pack->max, &mb) || !LIT(c, "]") ||
            (*st = vl_plan_op(r->p, (uint32_t)mb, (vl_op_kind)(k - names), err)))
            return false;
    }
    return LIT(c, "]");
}

static bool rank(vl_reader *r, cur *c, vl_err *err, vl_status *st)
{
    int64_t dp, tp, pp, sp, ck, group = -1, k = 0;
    vl_par par;
    vl_rank *rk;

    if (!LIT(c, "{") || !kv(c, "dp", true, INT32_MIN, INT32_MAX, &dp) ||
        !kv(c, "tp", false, INT32_MIN, INT32_MAX, &tp) ||
        !kv(c, "pp", false, INT32_MIN, INT32_MAX, &pp) ||
        !kv(c, "sp", false, INT32_MIN, INT32_MAX, &sp) ||
        !kv(c, "ckpt_layers", false, INT32_MIN, INT32_MAX, &ck))
        return false;
    par = (vl_par){(int)tp, (int)pp, (int)sp, (int)ck};
    if ((*st = vl_plan_rank_begin(r->p, (int)dp, &par, err)) != VL_OK)
        return false;
    rk = &r->p->ranks[r->p->nranks - 1];
    if (tp < 1 || pp < 1 || sp < 1 || !gpus(r, c, rk, err, st))
        return false;
    if (next_key(c, "group") &&
        (!kv(c, "group", false, INT32_MIN, INT32_MAX, &group) || group == -1))
        return false; /* the writer omits -1 */
    if (next_key(c, "k") && (!kv(c, "k", false, 0, UINT32_MAX, &k) || k == 0))
        return false;
    rk->group = (int32_t)group;
    rk->k = (uint32_t)k;
    if (!packs(r, c, "mbs", false, err, st) ||
        (next_key(c, "bwd") && !packs(r, c, "bwd", true, err, st)))
        return false;
    return schedule(r, c, err, st) && LIT(c, "}");
}

/* ---- the record ---- */

/* Everything the builder and the interner hold, to give a line back. */
typedef struct marks {
    size_t iters, ranks, mbs, segs, ops, gpus, shares, members, ids;
} marks;

static marks mark(const vl_reader *r)
{
    const vl_plan *p = r->p;
    return (marks){p->niters,  p->nranks,   p->nmbs,
                   p->nsegs,   p->nops,     p->ngpus,
                   p->nshares, p->nmembers, r->ids ? vl__ids_count(r->ids) : 0};
}

static void roll_back(vl_reader *r, const marks *m)
{
    vl_plan *p = r->p;

    p->niters = m->iters;
    p->nranks = m->ranks;
    p->nmbs = m->mbs;
    p->nsegs = m->segs;
    p->nops = m->ops;
    p->ngpus = m->gpus;
    p->nshares = m->shares;
    p->nmembers = m->members;
    if (r->ids)
        vl__ids_undo(r->ids, m->ids);
}

static bool record(vl_reader *r, cur *c, vl_err *err, vl_status *st)
{
    int64_t it, epoch, tokens, loss, samples, cand = -1;
    uint64_t t, l, s;

    if (!LIT(c, "{\"type\":\"iter\"") || !kv(c, "it", false, 0, INT64_MAX, &it) ||
        (uint64_t)it != r->p->iter_base + r->p->niters ||
        !kv(c, "epoch", false, 0, UINT32_MAX, &epoch) ||
        !kv(c, "tokens", false, 0, INT64_MAX, &tokens) ||
        !kv(c, "loss_tokens", false, 0, INT64_MAX, &loss) ||
        !kv(c, "samples", false, 0, INT64_MAX, &samples))
        return false;
    if (next_key(c, "candidate") &&
        (!kv(c, "candidate", false, INT32_MIN, INT32_MAX, &cand) || cand == -1))
        return false;
    if ((*st = vl_plan_iter_begin(r->p, (uint32_t)epoch, err)) != VL_OK)
        return false;
    vl_plan_iter_candidate(r->p, (int32_t)cand);
    /* an empty list is the jansson path's to refuse (vl_plan_fields: at least one) */
    if (!LIT(c, ",\"ranks\":[") || peek(c, ']'))
        return false;
    for (bool first = true; !peek(c, ']'); first = false)
        if ((!first && !LIT(c, ",")) || !rank(r, c, err, st))
            return false;
    if (!LIT(c, "]}") || c->p != c->end)
        return false;
    vl_plan_iter_totals(r->p, r->p->niters - 1, &t, &l, &s);
    return (uint64_t)tokens == t && (uint64_t)samples == s && (!r->m || (uint64_t)loss == l);
}

vl_status vl__rd_fast_iter(vl_reader *r, const char *line, size_t len, bool *taken,
                           vl_err *err)
{
    cur c = {line, line + len};
    marks m = mark(r);
    vl_status st = VL_OK;

    if (r->batch) {
        r->batch->line = NULL;
        if (r->m && r->m->id_kind && (st = prefetch_ids(r, line, len, err)) != VL_OK)
            return st;
    }
    *taken = record(r, &c, err, &st);
    if (r->batch)
        r->batch->line = NULL;
    if (!*taken)
        roll_back(r, &m);
    return st;
}
