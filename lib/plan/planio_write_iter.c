/* lib/plan/planio_write_iter.c -- the plan writer's iteration records and footer (docs/decisions.md §7):
 * fixed keys, integers and ids, nearly all of the file, printed by hand into the line
 * buffer key by key from the field table (planio_fields.c), token for token what
 * jansson's compact dump gives (tests/plan/test_planio_json.c re-dumps every line through
 * jansson to hold that).  A json_t per integer used to cost more than planning. */
#include <stdio.h>
#include <string.h>

#include "planio_write_impl.h"
#include "utf8.h"

/* One reservation covers a whole range: ",[", a numeric id, offset and length with their
 * commas, and the longest closing (",\"truncated\"]"). */
#define RANGE_MAX (2 + 3 * (VL_JSONNUM_MAX + 1) + sizeof ",\"truncated\"]")

/* ---- ids ---- */

/* A string id as the manifest renders it, which escapes exactly as jansson does
 * (tests/plan/test_planio_json.c compares the two on control characters and non-ASCII text). */
static bool put_str_id(line_buf *b, const vl_manifest *m, uint32_t i)
{
    const char *id = m->id_pool + m->id_val[i];
    size_t need;

    /* The manifest reader refuses such ids; a hand-built manifest may not. */
    if (!vl_utf8_valid(id, strlen(id)))
        return false; /* oom stays false: reported as a bad id */
    need = vl_manifest_id_json(m, i, b->data + b->len, b->cap - b->len);
    if (need >= b->cap - b->len) { /* did not fit with its NUL: grow and render again */
        if (!room(b, need + 1))
            return false;
        vl_manifest_id_json(m, i, b->data + b->len, b->cap - b->len);
    }
    b->len += need;
    return true;
}

/* "[id,off,len" after a comma unless first, the id exactly as the manifest has it
 * (implicit ids are the index).  The caller closes the array without a check: at least
 * the bytes of ",\"truncated\"]" are left reserved. */
static bool put_range(line_buf *b, const vl_manifest *m, uint32_t sample, uint32_t off,
                      uint32_t len, bool first)
{
    char *d;

    if (!room(b, RANGE_MAX))
        return false;
    d = b->data + b->len;
    if (!first)
        *d++ = ',';
    *d++ = '[';
    if (!m->id_kind) {
        d = jint(d, sample);
    } else if (m->id_kind[sample] == VL_ID_INT) {
        d += vl_jsonnum_i64(d, (int64_t)m->id_val[sample]);
    } else {
        b->len = (size_t)(d - b->data);
        if (!put_str_id(b, m, sample) || !room(b, RANGE_MAX))
            return false;
        d = b->data + b->len;
    }
    *d++ = ',';
    d = jint(d, off);
    *d++ = ',';
    d = jint(d, len);
    b->len = (size_t)(d - b->data);
    return true;
}

/* ---- iteration records, key by key from the field table (planio_fields.c) ---- */

void vl__write_keys_init(keyset *k)
{
    for (size_t i = 0; vl_plan_fields[i].key; i++)
        k->len[i] = (size_t)snprintf(k->text[i], KEY_MAX, ",\"%s\":", vl_plan_fields[i].key);
}

/* The key of row i, without its comma when it opens an object. */
static bool put_key(writer *w, size_t i, bool first)
{
    return put(&w->line, w->keys.text[i] + first, w->keys.len[i] - first);
}

static int64_t scalar_of(const vl_pfield *f, const void *elem)
{
    const char *at = (const char *)elem + f->off;

    if (f->kind == VL_PF_I32)
        return *(const int32_t *)at;
    return *(const uint32_t *)at;
}

/* An integer row: written unless it is an omitted default; *first: it would open the
 * object (cleared once something is written). */
static bool put_scalar(writer *w, size_t i, const void *elem, bool *first)
{
    const vl_pfield *f = &vl_plan_fields[i];
    int64_t v = scalar_of(f, elem);
    bool open = *first;

    if (f->omit_default && v == f->def)
        return true;
    *first = false;
    return put_key(w, i, open) && room(&w->line, VL_JSONNUM_MAX) &&
           (w->line.len += vl_jsonnum_i64(w->line.data + w->line.len, v), true);
}

static bool put_segs(writer *w, const vl_mb *mb)
{
    line_buf *b = &w->line;
    const vl_plan *p = w->p;
    const vl_seg *s = vl_plan_mb_segs(p, mb);

    if (!PUT_LIT(b, "["))
        return false;
    for (uint32_t k = 0; k < mb->nseg; k++) {
        int cp = vl_plan_seg_cpi(p, mb->seg0 + k);
        if (!put_range(b, p->m, s[k].sample, s[k].off, s[k].len, k == 0))
            return false;
        if (cp != VL_CP_SHARDED) { /* a local segment: its CP coordinate */
            b->data[b->len++] = ',';
            b->len += vl_jsonnum_i64(b->data + b->len, cp);
        }
        b->data[b->len++] = ']';
    }
    return PUT_LIT(b, "]");
}

static bool put_cu(writer *w, const vl_mb *mb)
{
    line_buf *b = &w->line;
    const vl_seg *s = vl_plan_mb_segs(w->p, mb);
    uint64_t cum = 0;
    char *d;

    if (!PUT_LIT(b, "[0") || !room(b, (size_t)mb->nseg * (VL_JSONNUM_MAX + 1) + 1))
        return false;
    d = b->data + b->len;
    for (uint32_t k = 0; k < mb->nseg; k++) {
        cum += s[k].len;
        *d++ = ',';
        d = jint(d, cum);
    }
    *d++ = ']';
    b->len = (size_t)(d - b->data);
    return true;
}

static bool put_int_list(line_buf *b, const int32_t *v, size_t n)
{
    if (!PUT_LIT(b, "[") || !room(b, n * (VL_JSONNUM_MAX + 1) + 1))
        return false;
    for (size_t i = 0; i < n; i++) {
        if (i > 0)
            b->data[b->len++] = ',';
        b->len += vl_jsonnum_i64(b->data + b->len, v[i]);
    }
    b->data[b->len++] = ']';
    return true;
}

static bool put_mb(writer *w, const vl_mb *mb, bool first)
{
    bool ok = first ? PUT_LIT(&w->line, "{") : PUT_LIT(&w->line, ",{"), open = false;
    uint32_t n;

    for (size_t i = 0; ok && vl_plan_fields[i].key; i++) {
        const vl_pfield *f = &vl_plan_fields[i];
        const int32_t *mem;
        if (f->level != VL_PF_MB)
            continue;
        switch (f->kind) {
        case VL_PF_SEG: ok = put_key(w, i, true) && put_segs(w, mb); break;
        case VL_PF_CU: ok = put_key(w, i, false) && put_cu(w, mb); break;
        case VL_PF_TOKENS:
            ok = put_key(w, i, false) && room(&w->line, VL_JSONNUM_MAX) &&
                 (w->line.len +=
                  vl_jsonnum_i64(w->line.data + w->line.len, (int64_t)mb->tokens),
                  true);
            break;
        case VL_PF_SHARED:
            mem = vl_plan_mb_members(w->p, mb, &n);
            ok = n == 0 || (put_key(w, i, false) && put_int_list(&w->line, mem, n));
            break;
        default: ok = put_scalar(w, i, mb, &open);
        }
    }
    return ok && PUT_LIT(&w->line, "}");
}

static bool put_packs(writer *w, size_t i, uint64_t from, uint32_t n)
{
    bool ok = put_key(w, i, false) && PUT_LIT(&w->line, "[");

    for (uint32_t j = 0; ok && j < n; j++)
        ok = put_mb(w, &w->p->mbs[from + j], j == 0);
    return ok && PUT_LIT(&w->line, "]");
}

static bool put_schedule(writer *w, size_t i, const vl_rank *rk)
{
    line_buf *b = &w->line;

    if (!put_key(w, i, false) || !PUT_LIT(b, "["))
        return false;
    for (uint64_t k = rk->op0; k < rk->op0 + rk->nop; k++) {
        const vl_op *op = &w->p->ops[k];
        char *d;
        if (!room(b, 8 + VL_JSONNUM_MAX))
            return false;
        d = b->data + b->len;
        if (k > rk->op0)
            *d++ = ',';
        *d++ = '[';
        *d++ = '"';
        /* the schema's letter (vl_pf_op_names, in vl_op_kind order) */
        *d++ = vl_pf_op_names[op->kind <= VL_OP_B ? op->kind : 0];
        *d++ = '"';
        *d++ = ',';
        d = jint(d, op->mb);
        *d++ = ']';
        b->len = (size_t)(d - b->data);
    }
    return PUT_LIT(b, "]");
}

/* "gpus": the explicit placement or the default one (plan.h). */
static bool put_gpus(writer *w, size_t i, const vl_rank *rk, const vl_gpu_walk *gw)
{
    line_buf *b = &w->line;
    uint32_t n = vl_plan_rank_size(rk);

    if (!put_key(w, i, false) || !PUT_LIT(b, "[") ||
        !room(b, (size_t)n * (VL_JSONNUM_MAX + 1) + 1))
        return false;
    for (uint32_t k = 0; k < n; k++) {
        if (k > 0)
            b->data[b->len++] = ',';
        b->len += vl_jsonnum_i64(b->data + b->len, vl_gpu_walk_at(gw, k));
    }
    b->data[b->len++] = ']';
    return true;
}

static bool put_rank(writer *w, const vl_rank *rk, const vl_gpu_walk *gw, bool first)
{
    bool ok = first ? PUT_LIT(&w->line, "{") : PUT_LIT(&w->line, ",{"), open = true;

    for (size_t i = 0; ok && vl_plan_fields[i].key; i++) {
        const vl_pfield *f = &vl_plan_fields[i];
        if (f->level != VL_PF_RANK)
            continue;
        switch (f->kind) {
        case VL_PF_GPUS: ok = put_gpus(w, i, rk, gw); break;
        case VL_PF_MBS: ok = put_packs(w, i, rk->mb0, rk->nmb); break;
        case VL_PF_BWD:
            ok = rk->nbwd == 0 || put_packs(w, i, rk->mb0 + rk->nmb, rk->nbwd);
            break;
        case VL_PF_SCHEDULE: ok = rk->nop == 0 || put_schedule(w, i, rk); break;
        default: ok = put_scalar(w, i, rk, &open);
        }
    }
    return ok && PUT_LIT(&w->line, "}");
}

static bool put_total(writer *w, size_t i, uint64_t v)
{
    return put_key(w, i, false) && room(&w->line, VL_JSONNUM_MAX) &&
           (w->line.len += vl_jsonnum_i64(w->line.data + w->line.len, (int64_t)v), true);
}

static bool put_ranks(writer *w, size_t i, size_t it)
{
    const vl_iter *in = &w->p->iters[it];
    vl_gpu_walk gw;
    bool ok = put_key(w, i, false) && PUT_LIT(&w->line, "[");

    vl_gpu_walk_begin(&gw, w->p, it);
    for (uint32_t r = 0; ok && r < in->nranks; r++, vl_gpu_walk_next(&gw))
        ok = put_rank(w, &w->p->ranks[in->rank0 + r], &gw, r == 0);
    return ok && PUT_LIT(&w->line, "]");
}

bool vl__put_iter(writer *w, size_t it)
{
    const vl_iter *in = &w->p->iters[it];
    uint64_t tokens, loss, samples;
    bool ok = PUT_LIT(&w->line, "{\"type\":\"iter\"");

    vl_plan_iter_totals(w->p, it, &tokens, &loss, &samples);
    w->tokens += tokens;
    w->samples += samples;
    for (size_t i = 0; ok && vl_plan_fields[i].key; i++) {
        const vl_pfield *f = &vl_plan_fields[i];
        if (f->level != VL_PF_ITER)
            continue;
        switch (f->kind) {
        case VL_PF_IT: ok = put_total(w, i, w->p->iter_base + it); break;
        case VL_PF_TOKENS: ok = put_total(w, i, tokens); break;
        case VL_PF_LOSS: ok = put_total(w, i, loss); break;
        case VL_PF_SAMPLES: ok = put_total(w, i, samples); break;
        case VL_PF_RANKS: ok = put_ranks(w, i, it); break;
        default: ok = put_scalar(w, i, in, &(bool){false});
        }
    }
    return ok && PUT_LIT(&w->line, "}");
}

/* The footer's checksum covers every line before it, so the hash ends here. */
bool vl__put_footer(writer *w)
{
    const vl_plan *p = w->p;
    line_buf *b = &w->line;
    unsigned char digest[32];
    char hex[65];

    if (!PUT_KV(b, "{\"type\":\"footer\",\"iterations\":", w->iterations) ||
        !PUT_KV(b, ",\"samples\":", w->samples) || !PUT_KV(b, ",\"tokens\":", w->tokens) ||
        !PUT_LIT(b, ",\"dropped\":["))
        return false;
    for (size_t i = 0; i < p->ndrops; i++) {
        const vl_drop *dr = &p->drops[i];
        /* the schema's reason names (vl_pf_dropped), in vl_drop_reason order */
        const char *why = vl_pf_dropped.items[3].values[dr->reason == VL_DROP_TRUNCATED];
        if (!put_range(b, p->m, dr->sample, dr->off, dr->len, i == 0))
            return false;
        b->data[b->len++] = ','; /* put_range left RANGE_MAX bytes for this closing */
        b->data[b->len++] = '"';
        memcpy(b->data + b->len, why, strlen(why));
        b->len += strlen(why);
        b->data[b->len++] = '"';
        b->data[b->len++] = ']';
    }
    vl_sha256_final(&w->sha, digest);
    vl_sha256_hex(digest, hex);
    return PUT_LIT(b, "],\"sha256\":\"") && put(b, hex, 64) && PUT_LIT(b, "\"}");
}
