/* lib/io/zio.c -- plain or zstd byte streams; the only file that includes <zstd.h>.
 * Readers pick zstd by magic number and decode frames as a stream; writers check
 * every write(2), retrying partial writes and EINTR. */
#include "zio.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <zstd.h>
#include <zstd_errors.h>

#define ZR_INBUF (256u << 10)
#define ZW_BUF (128u << 10)
#define ZR_WLOG_DEFAULT 27

struct vl_zreader {
    int fd;
    bool own_fd; /* false for stdin */
    bool is_zstd;
    bool eof; /* read(2) returned 0 */
    int wlog_max;
    size_t hint; /* last ZSTD_decompressStream result: 0 = between frames */
    ZSTD_DCtx *dctx;
    unsigned char *in;
    size_t in_pos, in_len;
    const unsigned char *mem; /* vl_zreader_mem: the bytes read instead of fd */
    size_t mem_len, mem_pos;
    char name[];
};

struct vl_zwriter {
    int fd;
    ZSTD_CCtx *cctx; /* NULL: plain */
    unsigned char *buf;
    size_t len;
    char name[];
};

/* XSI strerror_r: thread-safe, unlike strerror. */
static const char *errtext(int e, char *buf, size_t n)
{
    if (strerror_r(e, buf, n) != 0)
        snprintf(buf, n, "error %d", e);
    return buf;
}

/* Level 1, by measurement (bench/history/2026-11-21_to_2026-11-28.md, 2026-11-24):
 * on 1M-sample plans it compresses 1.2-1.4x faster than the default 3, and the output
 * is 4% smaller (pack) or 0.4% larger (random); plans are integers in a fixed layout,
 * so higher levels find little more. */
#define ZIO_LEVEL 1

static vl_status open_err(vl_err *err, const char *path, int e)
{
    char eb[128];
    return vl_seterr(err, VL_ENOINPUT, "cannot open '%s': %s", path,
                     errtext(e, eb, sizeof eb));
}

static vl_status read_err(vl_err *err, const char *name, int e)
{
    char eb[128];
    return vl_seterr(err, VL_EIO, "read '%s': %s", name, errtext(e, eb, sizeof eb));
}

/* read(2), or a copy from the memory source. */
static ssize_t src_read(vl_zreader *z, void *buf, size_t cap)
{
    ssize_t r;

    if (z->mem) {
        size_t n = z->mem_len - z->mem_pos < cap ? z->mem_len - z->mem_pos : cap;
        if (n)
            memcpy(buf, z->mem + z->mem_pos, n);
        z->mem_pos += n;
        return (ssize_t)n;
    }
    do
        r = read(z->fd, buf, cap);
    while (r < 0 && errno == EINTR);
    return r;
}

/* One read(2) into the input buffer after what it holds; sets eof at end of input. */
static vl_status fill(vl_zreader *z, vl_err *err)
{
    ssize_t r = src_read(z, z->in + z->in_len, ZR_INBUF - z->in_len);

    if (r < 0)
        return read_err(err, z->name, errno);
    if (r == 0)
        z->eof = true;
    z->in_len += (size_t)r;
    return VL_OK;
}

/* zstd frame (0xFD2FB528) or skippable frame (0x184D2A5?), both little-endian. */
static bool zstd_magic(const unsigned char *p, size_t n)
{
    if (n < 4)
        return false;
    if (p[0] == 0x28 && p[1] == 0xB5 && p[2] == 0x2F && p[3] == 0xFD)
        return true;
    return (p[0] & 0xF0) == 0x50 && p[1] == 0x2A && p[2] == 0x4D && p[3] == 0x18;
}

static vl_status detect(vl_zreader *z, vl_err *err)
{
    vl_status st;

    while (z->in_len < 4 && !z->eof)
        if ((st = fill(z, err)) != VL_OK)
            return st;
    z->is_zstd = zstd_magic(z->in, z->in_len);
    if (!z->is_zstd)
        return VL_OK;
    z->hint = 1; /* a frame is expected */
    z->dctx = ZSTD_createDCtx();
    if (z->dctx == NULL)
        return vl_seterr(err, VL_ENOMEM, "out of memory (zstd decoder for '%s')", z->name);
    return vl_zreader_set_window_log_max(z, ZR_WLOG_DEFAULT, err);
}

static vl_status open_fd(vl_zreader *z, const char *path, vl_err *err)
{
    struct stat sb;

    if (strcmp(path, "-") == 0) {
        z->fd = STDIN_FILENO;
        z->own_fd = false;
    } else {
        z->fd = open(path, O_RDONLY | O_CLOEXEC);
        if (z->fd < 0)
            return open_err(err, path, errno);
        z->own_fd = true;
    }
    if (fstat(z->fd, &sb) != 0)
        return open_err(err, z->name, errno);
    if (S_ISDIR(sb.st_mode))
        return open_err(err, z->name, EISDIR);
    return VL_OK;
}

static vl_zreader *zreader_new(const char *name, vl_err *err)
{
    size_t nlen = strlen(name);
    vl_zreader *z = calloc(1, sizeof *z + nlen + 1);

    if (z == NULL || (z->in = malloc(ZR_INBUF)) == NULL) {
        free(z);
        vl_seterr(err, VL_ENOMEM, "out of memory (reading '%s')", name);
        return NULL;
    }
    memcpy(z->name, name, nlen + 1);
    z->fd = -1;
    return z;
}

vl_status vl_zreader_mem(vl_zreader **out, const char *name, const void *data, size_t size,
                         vl_err *err)
{
    vl_zreader *z = zreader_new(name, err);
    static const unsigned char none[1];
    vl_status st;

    if (z == NULL)
        return VL_ENOMEM;
    z->mem = size ? data : none; /* never NULL: NULL means "read fd" */
    z->mem_len = size;
    if ((st = detect(z, err)) != VL_OK) {
        vl_zreader_close(z);
        return st;
    }
    *out = z;
    return VL_OK;
}

vl_status vl_zreader_open(vl_zreader **out, const char *path, vl_err *err)
{
    vl_zreader *z = zreader_new(strcmp(path, "-") == 0 ? "<stdin>" : path, err);
    vl_status st;

    if (z == NULL)
        return VL_ENOMEM;
    if ((st = open_fd(z, path, err)) != VL_OK || (st = detect(z, err)) != VL_OK) {
        vl_zreader_close(z);
        return st;
    }
    *out = z;
    return VL_OK;
}

vl_status vl_zreader_set_window_log_max(vl_zreader *z, int wlog, vl_err *err)
{
    ZSTD_bounds b = ZSTD_dParam_getBounds(ZSTD_d_windowLogMax);
    size_t r;

    if (ZSTD_isError(b.error) || wlog < b.lowerBound || wlog > b.upperBound)
        return vl_seterr(err, VL_EUSAGE, "zstd window log max %d out of range (%d..%d)", wlog,
                         b.lowerBound, b.upperBound);
    z->wlog_max = wlog;
    if (z->dctx == NULL)
        return VL_OK;
    r = ZSTD_DCtx_setParameter(z->dctx, ZSTD_d_windowLogMax, wlog);
    if (ZSTD_isError(r))
        return vl_seterr(err, VL_EUSAGE, "%s: zstd: %s", z->name, ZSTD_getErrorName(r));
    return VL_OK;
}

static vl_status read_plain(vl_zreader *z, void *buf, size_t cap, size_t *got, vl_err *err)
{
    ssize_t r;

    if (z->in_pos < z->in_len) { /* bytes read while looking for the magic */
        size_t n = z->in_len - z->in_pos < cap ? z->in_len - z->in_pos : cap;
        memcpy(buf, z->in + z->in_pos, n);
        z->in_pos += n;
        *got = n;
        return VL_OK;
    }
    if (z->eof)
        return VL_OK;
    r = src_read(z, buf, cap);
    if (r < 0)
        return read_err(err, z->name, errno);
    z->eof = r == 0;
    *got = (size_t)r;
    return VL_OK;
}

static vl_status zstd_err(const vl_zreader *z, size_t r, vl_err *err)
{
    ZSTD_bounds b = ZSTD_dParam_getBounds(ZSTD_d_windowLogMax);

    if (ZSTD_getErrorCode(r) == ZSTD_error_frameParameter_windowTooLarge &&
        z->wlog_max >= b.upperBound) /* nothing left to raise: say what to do instead */
        return vl_seterr(err, VL_EDATA,
                         "%s: zstd frame needs a window larger than %llu MiB, the most "
                         "vlplan accepts (--zstd-window-log-max %d); recompress it with a "
                         "smaller window (zstd --long=%d or less)",
                         z->name, (1ull << z->wlog_max) >> 20, z->wlog_max, b.upperBound);
    if (ZSTD_getErrorCode(r) == ZSTD_error_frameParameter_windowTooLarge)
        return vl_seterr(err, VL_EDATA,
                         "%s: zstd frame needs a window larger than %llu MiB (window log "
                         "max %d; raise it with --zstd-window-log-max, up to %d)",
                         z->name, (1ull << z->wlog_max) >> 20, z->wlog_max, b.upperBound);
    return vl_seterr(err, VL_EDATA, "%s: zstd: %s", z->name, ZSTD_getErrorName(r));
}

static vl_status read_zstd(vl_zreader *z, void *buf, size_t cap, size_t *got, vl_err *err)
{
    ZSTD_outBuffer out = {buf, cap, 0};
    vl_status st;

    for (;;) {
        if (z->in_pos == z->in_len && !z->eof) {
            z->in_pos = z->in_len = 0;
            if ((st = fill(z, err)) != VL_OK)
                return st;
        }
        if (z->eof && z->in_pos == z->in_len && z->hint == 0)
            break; /* the last frame is complete and flushed */
        ZSTD_inBuffer in = {z->in, z->in_len, z->in_pos};
        size_t r = ZSTD_decompressStream(z->dctx, &out, &in);
        z->in_pos = in.pos;
        if (ZSTD_isError(r))
            return zstd_err(z, r, err);
        z->hint = r;
        if (out.pos > 0 || (z->eof && z->in_pos == z->in_len))
            break;
    }
    /* No output and no input left: either between frames (done) or cut short. */
    if (out.pos == 0 && z->hint != 0)
        return vl_seterr(err, VL_EDATA, "%s: truncated zstd frame (premature end of input)",
                         z->name);
    *got = out.pos;
    return VL_OK;
}

vl_status vl_zreader_read(vl_zreader *z, void *buf, size_t cap, size_t *got, vl_err *err)
{
    *got = 0;
    if (cap == 0)
        return VL_OK;
    return z->is_zstd ? read_zstd(z, buf, cap, got, err) : read_plain(z, buf, cap, got, err);
}

const char *vl_zreader_name(const vl_zreader *z)
{
    return z->name;
}

bool vl_zreader_is_zstd(const vl_zreader *z)
{
    return z->is_zstd;
}

void vl_zreader_close(vl_zreader *z)
{
    if (z == NULL)
        return;
    if (z->own_fd && z->fd >= 0)
        close(z->fd); /* read-only: close cannot lose data */
    ZSTD_freeDCtx(z->dctx);
    free(z->in);
    free(z);
}

/* ---- writer ---- */

static vl_status write_all(vl_zwriter *w, const unsigned char *p, size_t n, vl_err *err)
{
    char eb[128];

    while (n > 0) {
        ssize_t r = write(w->fd, p, n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return vl_seterr(err, VL_EIO, "cannot write '%s': %s", w->name,
                             errtext(r < 0 ? errno : EIO, eb, sizeof eb));
        p += r;
        n -= (size_t)r;
    }
    return VL_OK;
}

static vl_status flush_buf(vl_zwriter *w, vl_err *err)
{
    vl_status st = write_all(w, w->buf, w->len, err);
    w->len = 0;
    return st;
}

static vl_status zstd_setup(vl_zwriter *w, vl_err *err)
{
    size_t r;

    w->cctx = ZSTD_createCCtx();
    if (w->cctx == NULL)
        return vl_seterr(err, VL_ENOMEM, "out of memory (zstd encoder for '%s')", w->name);
    r = ZSTD_CCtx_setParameter(w->cctx, ZSTD_c_checksumFlag, 1);
    if (!ZSTD_isError(r))
        r = ZSTD_CCtx_setParameter(w->cctx, ZSTD_c_compressionLevel, ZIO_LEVEL);
    if (ZSTD_isError(r))
        return vl_seterr(err, VL_EINTERNAL, "%s: zstd: %s", w->name, ZSTD_getErrorName(r));
    return VL_OK;
}

vl_status vl_zwriter_fd(vl_zwriter **out, int fd, bool compress, const char *name, vl_err *err)
{
    size_t nlen = strlen(name);
    vl_zwriter *w = calloc(1, sizeof *w + nlen + 1);
    vl_status st;

    if (w == NULL || (w->buf = malloc(ZW_BUF)) == NULL) {
        free(w);
        return vl_seterr(err, VL_ENOMEM, "out of memory (writing '%s')", name);
    }
    memcpy(w->name, name, nlen + 1);
    w->fd = fd;
    if (compress && (st = zstd_setup(w, err)) != VL_OK) {
        ZSTD_freeCCtx(w->cctx);
        free(w->buf);
        free(w);
        return st;
    }
    *out = w;
    return VL_OK;
}

/* Feed in through the encoder with mode, writing out whenever the buffer fills;
 * returns once all input is consumed and (for end) the frame is complete. */
static vl_status compress_some(vl_zwriter *w, const void *buf, size_t n,
                               ZSTD_EndDirective mode, vl_err *err)
{
    ZSTD_inBuffer in = {buf, n, 0};
    vl_status st;

    for (;;) {
        ZSTD_outBuffer out = {w->buf, ZW_BUF, w->len};
        size_t r = ZSTD_compressStream2(w->cctx, &out, &in, mode);
        w->len = out.pos;
        if (ZSTD_isError(r))
            return vl_seterr(err, VL_EIO, "%s: zstd: %s", w->name, ZSTD_getErrorName(r));
        bool done = mode == ZSTD_e_end ? r == 0 : in.pos == in.size;
        if (done)
            return VL_OK;
        if ((st = flush_buf(w, err)) != VL_OK) /* output full, or more to end the frame */
            return st;
    }
}

vl_status vl_zwriter_write(vl_zwriter *w, const void *buf, size_t n, vl_err *err)
{
    vl_status st;

    if (w->cctx != NULL)
        return compress_some(w, buf, n, ZSTD_e_continue, err);
    if (w->len + n <= ZW_BUF) {
        memcpy(w->buf + w->len, buf, n);
        w->len += n;
        return VL_OK;
    }
    if ((st = flush_buf(w, err)) != VL_OK)
        return st;
    if (n >= ZW_BUF) /* big writes skip the copy */
        return write_all(w, buf, n, err);
    memcpy(w->buf, buf, n);
    w->len = n;
    return VL_OK;
}

vl_status vl_zwriter_close(vl_zwriter *w, vl_err *err)
{
    vl_status st = VL_OK;

    if (w == NULL)
        return VL_OK;
    if (w->cctx != NULL)
        st = compress_some(w, NULL, 0, ZSTD_e_end, err);
    if (st == VL_OK)
        st = flush_buf(w, err);
    ZSTD_freeCCtx(w->cctx);
    free(w->buf);
    free(w);
    return st;
}
