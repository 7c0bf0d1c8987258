/* lib/plan/planio_write.c -- the plan file writer (planio.h, docs/decisions.md §7): one JSON record per
 * line, keys in the schema's fixed order, a running SHA-256 of the uncompressed bytes for
 * the footer, out through zio (zstd for ".zst") and outfile.  This file holds the
 * writer's life and the records' way out; the header is formatted by
 * planio_write_header.c, iteration records and the footer by planio_write_iter.c. */
#include "planio.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "outfile.h"
#include "planio_write_impl.h"

#define LINE_FIRST ((size_t)1 << 16)

/* ---- the line buffer ---- */

bool vl__line_grow(line_buf *b, size_t n)
{
    size_t nc = b->cap;
    char *nd;

    while (nc - b->len < n) {
        if (nc > SIZE_MAX / 2) {
            b->oom = true;
            return false;
        }
        nc *= 2;
    }
    if (!(nd = realloc(b->data, nc))) {
        b->oom = true;
        return false;
    }
    b->data = nd;
    b->cap = nc;
    return true;
}

/* ---- records out ---- */

/* End the record in the line buffer (ok: it was formatted), hash it unless it is the
 * footer, write it, and empty the buffer for the next one. */
static vl_status finish(writer *w, bool ok, bool hash, vl_err *err)
{
    line_buf *b = &w->line;
    vl_status st;

    if (ok)
        ok = PUT_LIT(b, "\n");
    if (!ok && !b->oom)
        return vl_seterr(err, VL_EDATA,
                         "cannot write the plan: a sample id is not valid "
                         "UTF-8");
    if (!ok)
        return vl_seterr(err, VL_ENOMEM, "out of memory formatting the plan");
    if (hash)
        vl_sha256_update(&w->sha, b->data, b->len);
    st = vl_zwriter_write(w->zw, b->data, b->len, err);
    b->len = 0;
    return st;
}

static vl_status write_header(writer *w, vl_err *err)
{
    bool formatted;
    vl_status st = vl__put_header(&w->line, w->p, w->header_iters, &formatted, err);

    if (st != VL_OK)
        return st;
    return finish(w, formatted, true, err);
}

/* Every id written must come from the manifest; a phantom would make an unreadable plan. */
static vl_status check_segs(const vl_plan *p, vl_err *err)
{
    if (!p->m)
        return vl_seterr(err, VL_EUSAGE, "cannot write a plan without its manifest");
    for (size_t i = 0; i < p->nsegs; i++)
        if (p->segs[i].sample >= p->m->n)
            return vl_seterr(err, VL_EDATA,
                             "cannot write the plan: segment %zu refers to "
                             "sample %u, the manifest has %zu",
                             i, p->segs[i].sample, p->m->n);
    return VL_OK;
}

static vl_status check_drops(const vl_plan *p, vl_err *err)
{
    for (size_t i = 0; i < p->ndrops; i++)
        if (p->drops[i].sample >= p->m->n)
            return vl_seterr(err, VL_EDATA,
                             "cannot write the plan: dropped range %zu refers "
                             "to sample %u, the manifest has %zu",
                             i, p->drops[i].sample, p->m->n);
    return VL_OK;
}

struct vl_plan_writer {
    writer w;
};

static void writer_free(vl_plan_writer *pw)
{
    free(pw->w.line.data);
    free(pw);
}

vl_status vl_plan_writer_open(vl_plan_writer **out, const vl_plan *p, int64_t iterations,
                              int fd, bool zstd, const char *name, vl_err *err)
{
    vl_plan_writer *pw = calloc(1, sizeof *pw);
    writer *w = pw ? &pw->w : NULL;
    vl_status st;

    *out = NULL;
    if (!pw || !(w->line.data = malloc(LINE_FIRST))) {
        free(pw);
        return vl_seterr(err, VL_ENOMEM, "out of memory formatting the plan");
    }
    if (!p->m) {
        writer_free(pw);
        return vl_seterr(err, VL_EUSAGE, "cannot write a plan without its manifest");
    }
    w->line.cap = LINE_FIRST;
    w->p = p;
    w->header_iters = iterations;
    vl_sha256_init(&w->sha);
    vl__write_keys_init(&w->keys);
    if ((st = vl_zwriter_fd(&w->zw, fd, zstd, name, err)) != VL_OK) {
        writer_free(pw);
        return st;
    }
    if ((st = write_header(w, err)) != VL_OK) {
        vl_plan_writer_abort(pw);
        return st;
    }
    *out = pw;
    return VL_OK;
}

vl_status vl_plan_writer_iters(vl_plan_writer *pw, const vl_plan *p, vl_err *err)
{
    writer *w = &pw->w;
    vl_status st;

    w->p = p;
    if ((st = check_segs(p, err)) != VL_OK)
        return st;
    for (size_t it = 0; it < p->niters; it++, w->iterations++)
        if ((st = finish(w, vl__put_iter(w, it), true, err)) != VL_OK)
            return st;
    return VL_OK;
}

vl_status vl_plan_writer_close(vl_plan_writer *pw, const vl_plan *p, vl_err *err)
{
    writer *w = &pw->w;
    vl_status st;

    w->p = p;
    if (w->header_iters >= 0 && (uint64_t)w->header_iters != w->iterations)
        st = vl_seterr(err, VL_EINTERNAL,
                       "the plan header announced %lld iterations, %llu "
                       "were written",
                       (long long)w->header_iters, (unsigned long long)w->iterations);
    else if ((st = check_drops(p, err)) == VL_OK)
        st = finish(w, vl__put_footer(w), false, err);
    if (st != VL_OK) {
        vl_plan_writer_abort(pw);
        return st;
    }
    st = vl_zwriter_close(w->zw, err);
    writer_free(pw);
    return st;
}

void vl_plan_writer_abort(vl_plan_writer *pw)
{
    if (!pw)
        return;
    vl_zwriter_close(pw->w.zw, NULL); /* frees; the first error is the one to report */
    writer_free(pw);
}

static vl_status write_plan(const vl_plan *p, int fd, bool zstd, const char *name, vl_err *err)
{
    vl_plan_writer *w = NULL;
    vl_status st;

    if (p->m && ((st = check_segs(p, err)) != VL_OK || (st = check_drops(p, err)) != VL_OK))
        return st;
    if ((st = vl_plan_writer_open(&w, p, (int64_t)p->niters, fd, zstd, name, err)) != VL_OK)
        return st;
    if ((st = vl_plan_writer_iters(w, p, err)) != VL_OK) {
        vl_plan_writer_abort(w);
        return st;
    }
    return vl_plan_writer_close(w, p, err);
}

bool vl_plan_name_zstd(const char *path)
{
    size_t n = strlen(path), k = strlen(".zst");
    return n >= k && strcmp(path + n - k, ".zst") == 0;
}

vl_status vl_plan_write_file(const vl_plan *p, const char *path, vl_err *err)
{
    vl_outfile *o;
    vl_status st;

    if (strcmp(path, "-") == 0)
        return vl_seterr(err, VL_EUSAGE,
                         "vl_plan_write_file: \"-\" is standard output, "
                         "use vl_plan_write_fd");
    if ((st = vl_outfile_open(&o, path, err)) != VL_OK)
        return st;
    st = vl_plan_write_to(p, o, path, err);
    if (st != VL_OK) {
        vl_outfile_abort(o);
        return st;
    }
    return vl_outfile_commit(o, err);
}

vl_status vl_plan_write_to(const vl_plan *p, vl_outfile *o, const char *path, vl_err *err)
{
    return write_plan(p, vl_outfile_fd(o), vl_plan_name_zstd(path), path, err);
}

vl_status vl_plan_write_fd(const vl_plan *p, int fd, bool zstd, vl_err *err)
{
    char name[32];

    if (fd == 1)
        snprintf(name, sizeof name, "<stdout>");
    else
        snprintf(name, sizeof name, "<fd %d>", fd);
    return write_plan(p, fd, zstd, name, err);
}
