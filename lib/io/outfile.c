/* lib/io/outfile.c -- atomic output files (outfile.h): git's lockfile recipe.  Bytes go to
 * ".<base>.tmp.XXXXXX" beside the target, which is fsync'd, closed and renamed over the
 * final name, so a crash or a full disk never leaves a half-written file there. */
#define _XOPEN_SOURCE 700 /* realpath(3) is XSI, beyond the build's POSIX level */
#include "outfile.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct vl_outfile {
    int fd;
    bool in_place; /* existing non-regular target (FIFO, /dev/null): no rename */
    char *path;    /* final name, as given (for messages) */
    char *target;  /* what the temporary is renamed to: path, or the file a
                           * symlink at path points to (the link itself survives) */
    char *tmp;     /* temporary name, NULL when in place */
    char *dir;     /* directory of target, fsync'd after the rename */
    char *old;     /* name for a link to the file the rename replaces, made when
                           * the temporary is (no allocation is left for the commit) */
    bool have_old; /* the link exists: kept until every output is renamed */
    int mode;      /* permissions of the file replaced, -1: from the umask */
    bool replaces; /* a regular file was at target when the renames began */
};

static void outfile_free(vl_outfile *o)
{
    free(o->path);
    free(o->target);
    free(o->tmp);
    free(o->dir);
    free(o->old);
    free(o);
}

/* Split path into its directory ("." when none) and base name; both malloc'd. */
static int split_path(const char *path, char **dir, char **base)
{
    const char *slash = strrchr(path, '/');

    if (!slash) {
        *dir = strdup(".");
        *base = strdup(path);
    } else {
        size_t n = slash == path ? 1 : (size_t)(slash - path); /* "/x" lives in "/" */
        *dir = strndup(path, n);
        *base = strdup(slash + 1);
    }
    return *dir && *base ? 0 : -1;
}

/* mkstemp creates mode 0600; users expect the permissions of the file replaced, or what
 * the umask gives a new file.  Reading the umask means setting it, so it is restored at
 * once (no threads run here). */
static void apply_mode(int fd, int mode)
{
    mode_t um = umask(0);

    umask(um);
    /* ignored: a filesystem without permissions (vfat) refuses it, the file is fine */
    (void)fchmod(fd, mode >= 0 ? (mode_t)mode : 0666 & ~um);
}

/* flags: O_APPEND for a device alias, whose file the shell opened (">>" keeps what
 * was there, ">" left it empty); O_TRUNC for a regular file we could not resolve. */
static vl_status open_in_place(vl_outfile *o, int flags, vl_err *err)
{
    o->in_place = true;
    o->fd = open(o->path, O_WRONLY | O_CLOEXEC | flags);
    if (o->fd < 0)
        return vl_seterr(err, VL_ECANTCREAT, "cannot create '%s': %s", o->path,
                         strerror(errno));
    return VL_OK;
}

static vl_status open_temp(vl_outfile *o, vl_err *err)
{
    char *base = NULL;
    size_t n;
    vl_status st = VL_OK;

    if (split_path(o->target, &o->dir, &base) != 0) {
        st = vl_seterr(err, VL_ENOMEM, "out of memory");
        goto done;
    }
    if (base[0] == '\0') {
        st =
            vl_seterr(err, VL_ECANTCREAT, "cannot create '%s': %s", o->path, strerror(EISDIR));
        goto done;
    }
    n = strlen(o->dir) + strlen(base) + sizeof "/..tmp.XXXXXX";
    if (!(o->tmp = malloc(n))) {
        st = vl_seterr(err, VL_ENOMEM, "out of memory");
        goto done;
    }
    snprintf(o->tmp, n, "%s/.%s.tmp.XXXXXX", o->dir, base);
    if (!(o->old = malloc(n))) {
        st = vl_seterr(err, VL_ENOMEM, "out of memory");
        goto done;
    }
    o->fd = mkstemp(o->tmp);
    if (o->fd < 0) {
        st = vl_seterr(err, VL_ECANTCREAT, "cannot create '%s': %s", o->path, strerror(errno));
        free(o->tmp);
        o->tmp = NULL;
        goto done;
    }
    apply_mode(o->fd, o->mode);
    /* ".<base>.old.XXXXXX", the same random part: the name ends in ".tmp.XXXXXX" */
    memcpy(o->old, o->tmp, n);
    memcpy(o->old + strlen(o->old) - strlen(".tmp.XXXXXX"), ".old.", 5);
done:
    free(base);
    return st;
}

/* Device aliases (/dev/stdout -> /proc/self/fd/1 -> a file the shell opened) must be
 * written through, never renamed over. */
static bool is_alias(const char *path)
{
    return strncmp(path, "/dev/", 5) == 0 || strncmp(path, "/proc/", 6) == 0;
}

/* A regular file its owner may not write is not ours to replace (a rename would, as
 * the directory allows it): refused, as cp and shell redirections refuse it.  Root
 * may write anything, so the permission bits decide for root too. */
static bool read_only(const char *path, const struct stat *sb)
{
    return (sb->st_mode & (S_IWUSR | S_IWGRP | S_IWOTH)) == 0 ||
           (access(path, W_OK) != 0 && errno == EACCES);
}

/* Choose how to write: a new or regular file atomically, anything else in place. */
static vl_status open_any(vl_outfile *o, vl_err *err)
{
    struct stat lsb, sb;
    bool exists = lstat(o->path, &lsb) == 0;

    if (!exists || stat(o->path, &sb) != 0)
        sb.st_mode = S_IFREG; /* absent (or a dangling link): created anew */
    else if (S_ISREG(sb.st_mode) && read_only(o->path, &sb))
        return vl_seterr(err, VL_ECANTCREAT, "cannot replace '%s': it is read-only", o->path);
    else if (S_ISREG(sb.st_mode))
        o->mode = (int)(sb.st_mode & 07777); /* the replacement keeps its permissions */
    if (S_ISDIR(sb.st_mode))
        return vl_seterr(err, VL_ECANTCREAT, "cannot create '%s': %s", o->path,
                         strerror(EISDIR));
    if (!S_ISREG(sb.st_mode))
        return open_in_place(o, 0, err);
    if (exists && S_ISLNK(lsb.st_mode)) {
        if (is_alias(o->path))
            return open_in_place(o, O_APPEND, err);
        if (!(o->target = realpath(o->path, NULL)))
            return open_in_place(o, O_TRUNC, err);
    } else if (!(o->target = strdup(o->path))) {
        return vl_seterr(err, VL_ENOMEM, "out of memory");
    }
    return open_temp(o, err);
}

vl_status vl_outfile_open(vl_outfile **out, const char *path, vl_err *err)
{
    vl_outfile *o;
    vl_status st;

    *out = NULL;
    if (path[0] == '\0')
        return vl_seterr(err, VL_EUSAGE, "the output file name is empty");
    if (!(o = calloc(1, sizeof *o)) || !(o->path = strdup(path))) {
        free(o);
        return vl_seterr(err, VL_ENOMEM, "out of memory");
    }
    o->fd = -1;
    o->mode = -1;
    st = open_any(o, err);
    if (st != VL_OK) {
        outfile_free(o);
        return st;
    }
    *out = o;
    return VL_OK;
}

int vl_outfile_fd(const vl_outfile *o)
{
    return o->fd;
}

const char *vl_outfile_tmp_path(const vl_outfile *o)
{
    return o ? o->tmp : NULL;
}

/* Make the rename itself durable.  Some filesystems cannot fsync a directory (EINVAL);
 * the file is complete under its final name either way, so only real I/O errors count. */
static vl_status sync_dir(const vl_outfile *o, vl_err *err)
{
    int dfd = open(o->dir, O_RDONLY | O_CLOEXEC);
    int rc, e;

    if (dfd < 0)
        return VL_OK; /* no read permission on the directory: nothing to sync with */
    rc = fsync(dfd);
    e = errno;
    close(dfd); /* opened read-only: only fsync's result matters */
    if (rc != 0 && e != EINVAL && e != EROFS)
        return vl_seterr(err, VL_EIO, "cannot sync directory of '%s': %s", o->path,
                         strerror(e));
    return VL_OK;
}

vl_status vl_outfile_commit(vl_outfile *o, vl_err *err)
{
    return vl_outfile_commit_all(&o, 1, err);
}

void vl_outfile_abort(vl_outfile *o)
{
    if (!o)
        return;
    if (o->fd >= 0)
        close(o->fd);
    if (o->tmp)
        unlink(o->tmp);
    if (o->have_old)
        unlink(o->old);
    outfile_free(o);
}

/* ---- several outputs together ---- */

/* The temporary complete on disk (or an in-place output closed): what can fail before
 * anything is renamed. */
static vl_status finish_one(vl_outfile *o, vl_err *err)
{
    int fd = o->fd, e;

    o->fd = -1;
    if (o->in_place) {
        if (close(fd) != 0)
            return vl_seterr(err, VL_EIO, "cannot write '%s': %s", o->path, strerror(errno));
        return VL_OK;
    }
    if (fsync(fd) != 0) {
        e = errno;
        close(fd);
        return vl_seterr(err, VL_EIO, "cannot write '%s': %s (nothing was written)", o->path,
                         strerror(e));
    }
    if (close(fd) != 0)
        return vl_seterr(err, VL_EIO, "cannot write '%s': %s (nothing was written)", o->path,
                         strerror(errno));
    return VL_OK;
}

/* A second name for the file the rename will replace, so that a later failure can put
 * it back: ".<base>.old.XXXXXX" beside the temporary ".<base>.tmp.XXXXXX".  None when
 * there is no such file or the filesystem has no hard links (then a failure after this
 * rename leaves the new file in place of the old one). */
static void keep_old(vl_outfile *o)
{
    struct stat sb;

    if (lstat(o->target, &sb) != 0 || !S_ISREG(sb.st_mode))
        return;
    o->replaces = true;
    o->have_old = link(o->target, o->old) == 0;
}

/* Undo a rename: the old file back under its name, or the new one removed where there
 * was none (where there was one we could not keep, the new one stays: better than
 * neither). */
static void put_back(vl_outfile *o)
{
    if (o->have_old && rename(o->old, o->target) == 0) {
        o->have_old = false;
    } else if (!o->replaces) {
        unlink(o->target);
    }
}

vl_status vl_outfile_commit_all(vl_outfile **o, size_t n, vl_err *err)
{
    vl_status st = VL_OK;
    size_t done = 0;

    for (size_t i = 0; i < n && st == VL_OK; i++)
        st = finish_one(o[i], err);
    for (size_t i = 0; i < n && st == VL_OK; i++)
        if (!o[i]->in_place)
            keep_old(o[i]);
    for (; done < n && st == VL_OK; done++) {
        if (o[done]->in_place)
            continue;
        if (rename(o[done]->tmp, o[done]->target) != 0) {
            st = vl_seterr(err, VL_EIO, "cannot write '%s': %s (nothing was written)",
                           o[done]->path, strerror(errno));
            break;
        }
        free(o[done]->tmp);
        o[done]->tmp = NULL;
    }
    /* the renames made durable; a failure here undoes them all, like a failed rename,
     * so that exit 74 always means the earlier files are still there */
    for (size_t i = 0; st == VL_OK && i < n; i++)
        if (!o[i]->in_place)
            st = sync_dir(o[i], err);
    for (size_t i = 0; st != VL_OK && i < done; i++)
        if (!o[i]->in_place)
            put_back(o[i]);
    for (size_t i = 0; i < n; i++)
        vl_outfile_abort(o[i]); /* removes temporaries and old links still there */
    return st;
}
