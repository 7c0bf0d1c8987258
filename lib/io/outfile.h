/* lib/io/outfile.h -- atomic output files: a temporary ".<name>.tmp.XXXXXX" in the same
 * directory (the permissions of the file it replaces, else from the umask), fsync,
 * rename over the final name, fsync of the directory.  A crash or a full disk never
 * leaves a half-written file under the final name.  A read-only file is not replaced. */
#ifndef VLPLAN_OUTFILE_H
#define VLPLAN_OUTFILE_H

#include "err.h"

typedef struct vl_outfile vl_outfile;
vl_status vl_outfile_open(vl_outfile **out, const char *path, vl_err *err);
int vl_outfile_fd(const vl_outfile *o);
vl_status vl_outfile_commit(vl_outfile *o, vl_err *err); /* frees o */
void vl_outfile_abort(vl_outfile *o);                    /* frees o; NULL ok */

/** Commit o[0..n-1] together or none of them (frees them all): every temporary is
 *  synced and closed first; then each is renamed over its name, a hard link keeping
 *  the file it replaces until all are renamed, so that a failed rename puts back the
 *  files replaced before it (or removes the new ones where there were none).  The
 *  caller blocks signals around it: between two renames a signal would leave one
 *  output new and the other old.  VL_EIO. */
vl_status vl_outfile_commit_all(vl_outfile **o, size_t n, vl_err *err);

/** Path of the temporary file while it is open (for a signal handler to unlink). */
const char *vl_outfile_tmp_path(const vl_outfile *o);

#endif
