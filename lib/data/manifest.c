/* lib/data/manifest.c -- reading manifests (inputs in order, big buffers, lines handed to
 * manifest_parse.c), the sample table from plain lengths, and freeing it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "manifest_impl.h"
#include "zio.h"

#define RD_BUF (1u << 20)
#define RD_LINE_MAX (64u << 20)

void vl_manifest_free(vl_manifest *m)
{
    if (m == NULL)
        return;
    for (size_t k = 0; k < m->nsources; k++)
        free(m->sources[k]);
    free(m->sources);
    free(m->len);
    free(m->loss);
    free(m->source);
    free(m->id_kind);
    free(m->id_val);
    free(m->id_pool);
    vl__index_free(m->index);
    free(m);
}

vl_status vl_manifest_from_lengths(vl_manifest **out, const uint32_t *len, size_t n,
                                   vl_err *err)
{
    vl_manifest *m = calloc(1, sizeof *m);

    if (m == NULL || (m->len = malloc((n ? n : 1) * sizeof *m->len)) == NULL) {
        free(m);
        return vl_seterr(err, VL_ENOMEM, "out of memory (sample table of %zu samples)", n);
    }
    for (size_t i = 0; i < n; i++) {
        if (len[i] == 0 || len[i] > VL_MAX_SAMPLE_LEN) {
            vl_manifest_free(m);
            return vl_seterr(err, VL_EDATA, "sample %zu: length %u out of range (1..%u)", i,
                             len[i], VL_MAX_SAMPLE_LEN);
        }
        m->len[i] = len[i];
        m->tokens += len[i];
    }
    m->n = n;
    m->loss_tokens = m->tokens;
    vl__manifest_sha(m);
    *out = m;
    return VL_OK;
}

/* ---- reading ---- */

/* The line buffer, shared by all inputs of one read. */
typedef struct lbuf {
    char *p;
    size_t cap;
} lbuf;

static vl_status line(vl__fmt *f, vl__mb *b, char *p, size_t n)
{
    b->line++;
    if (n > 0 && p[n - 1] == '\r')
        n--;
    if (b->line == 1 && n >= 3 && memcmp(p, "\xEF\xBB\xBF", 3) == 0) {
        p += 3; /* UTF-8 byte order mark */
        n -= 3;
    }
    return vl__parse_line(f, b, p, n);
}

/* Every complete line in buf[0, have); *used = bytes consumed. */
static vl_status lines(vl__fmt *f, vl__mb *b, char *buf, size_t have, size_t *used)
{
    char *p = buf, *end = buf + have, *nl;
    vl_status st;

    while ((nl = memchr(p, '\n', (size_t)(end - p))) != NULL) {
        if ((st = line(f, b, p, (size_t)(nl - p))) != VL_OK)
            return st;
        p = nl + 1;
    }
    *used = (size_t)(p - buf);
    return VL_OK;
}

static vl_status grow_line(lbuf *lb, vl__mb *b)
{
    char *p;

    if (lb->cap >= RD_LINE_MAX) {
        b->line++;
        return vl__mb_err(b, 0, "line longer than %u MiB", RD_LINE_MAX >> 20);
    }
    if ((p = realloc(lb->p, lb->cap * 2)) == NULL)
        return vl_seterr(b->err, VL_ENOMEM, "out of memory (line buffer)");
    lb->p = p;
    lb->cap *= 2;
    return VL_OK;
}

static vl_status read_stream(vl__fmt *f, vl__mb *b, lbuf *lb, vl_zreader *z)
{
    size_t have = 0, got, used;
    vl_status st;

    for (;;) {
        if (have == lb->cap && (st = grow_line(lb, b)) != VL_OK)
            return st;
        if ((st = vl_zreader_read(z, lb->p + have, lb->cap - have, &got, b->err)) != VL_OK)
            return st;
        if (got == 0)
            break;
        if ((st = lines(f, b, lb->p, have + got, &used)) != VL_OK)
            return st;
        have += got - used;
        memmove(lb->p, lb->p + used, have);
    }
    return have > 0 ? line(f, b, lb->p, have) : VL_OK; /* last line without '\n' */
}

/* One input: a path, or (vl_manifest_read_mem) bytes in memory. */
typedef struct src {
    const char *path;
    const void *data; /* non-NULL: read these size bytes, named path */
    size_t size;
} src;

static vl_status read_input(vl__fmt *f, vl__mb *b, lbuf *lb, const src *in)
{
    vl_zreader *z = NULL;
    int wlog = b->opts->zstd_window_log_max;
    vl_status st;

    st = in->data ? vl_zreader_mem(&z, in->path, in->data, in->size, b->err)
                  : vl_zreader_open(&z, in->path, b->err);
    if (st != VL_OK)
        return st;
    vl__fmt_reset(f);
    b->line = 0;
    if (wlog == 0 || (st = vl_zreader_set_window_log_max(z, wlog, b->err)) == VL_OK)
        st = read_stream(f, b, lb, z);
    vl_zreader_close(z);
    return st;
}

static vl_status no_samples(vl_err *err, const char *const *names, size_t n)
{
    char list[VL_ERRMSG_MAX] = "";
    size_t len = 0;

    for (size_t i = 0; i < n && len < sizeof list; i++)
        len +=
            (size_t)snprintf(list + len, sizeof list - len, "%s%s", i ? ", " : "", names[i]);
    return vl_seterr(err, VL_EDATA, "%s: no samples", list);
}

static vl_status read_all(vl__mb *b, const src *ins, size_t npaths)
{
    vl__fmt f = {0};
    lbuf lb = {malloc(RD_BUF), RD_BUF};
    vl_status st = VL_OK;

    if (lb.p == NULL)
        return vl_seterr(b->err, VL_ENOMEM, "out of memory (read buffer)");
    for (size_t i = 0; i < npaths && st == VL_OK; i++) {
        b->file = (uint32_t)i;
        st = read_input(&f, b, &lb, &ins[i]);
    }
    free(lb.p);
    vl__fmt_free(&f);
    if (st == VL_OK && b->m->n == 0 && !b->opts->allow_empty)
        st = no_samples(b->err, b->names, npaths);
    return st;
}

vl_status vl_manifest_read(vl_manifest **out, const char *const *paths, size_t npaths,
                           const vl_manifest_opts *opts, vl_err *err)
{
    return vl__manifest_read_with(out, paths, npaths, opts, true, err);
}

static vl_status read_sources(vl_manifest **out, const src *ins, size_t npaths,
                              const vl_manifest_opts *opts, bool fast, vl_err *err)
{
    static const vl_manifest_opts defaults = {0};
    vl_manifest *m = NULL;
    const char **names = NULL;
    vl__mb b;
    vl_status st;

    m = calloc(1, sizeof *m);
    names = malloc(npaths * sizeof *names);
    if (m == NULL || names == NULL) {
        st = vl_seterr(err, VL_ENOMEM, "out of memory (manifest)");
        goto done;
    }
    for (size_t i = 0; i < npaths; i++)
        names[i] = !ins[i].data && strcmp(ins[i].path, "-") == 0 ? "<stdin>" : ins[i].path;
    if ((st = vl__mb_init(&b, m, opts ? opts : &defaults, err)) != VL_OK)
        goto fini;
    b.names = names;
    b.nnames = npaths;
    b.no_fast = !fast;
    if ((st = read_all(&b, ins, npaths)) == VL_OK && (st = vl__mb_finish(&b)) == VL_OK) {
        if (!b.opts->lengths_only)
            vl__manifest_sha(m);
        *out = m;
        m = NULL;
    }
fini:
    vl__mb_fini(&b);
done:
    free(names);
    vl_manifest_free(m);
    return st;
}

vl_status vl__manifest_read_with(vl_manifest **out, const char *const *paths, size_t npaths,
                                 const vl_manifest_opts *opts, bool fast, vl_err *err)
{
    src *ins;
    vl_status st;

    if (npaths == 0 || npaths > UINT32_MAX)
        return vl_seterr(err, VL_EUSAGE, "no manifest given");
    if ((ins = calloc(npaths, sizeof *ins)) == NULL)
        return vl_seterr(err, VL_ENOMEM, "out of memory (manifest)");
    for (size_t i = 0; i < npaths; i++)
        ins[i].path = paths[i];
    st = read_sources(out, ins, npaths, opts, fast, err);
    free(ins);
    return st;
}

vl_status vl_manifest_read_mem(vl_manifest **out, const char *name, const void *data,
                               size_t size, const vl_manifest_opts *opts, vl_err *err)
{
    static const char empty[1];
    src in = {name, size ? data : empty, size};

    return read_sources(out, &in, 1, opts, true, err);
}
