/* lib/io/outfile.h -- atomic output files: a temporary in the same directory (mode from
 * the umask), fsync, rename over the final name, fsync of the directory.  A crash or a
 * full disk never leaves a half-written file under the final name. */
#ifndef VLPLAN_OUTFILE_H
#define VLPLAN_OUTFILE_H

#include "err.h"

typedef struct vl_outfile vl_outfile;
vl_status vl_outfile_open(vl_outfile **out, const char *path, vl_err *err);
int vl_outfile_fd(const vl_outfile *o);
vl_status vl_outfile_commit(vl_outfile *o, vl_err *err);  /* frees o */
void vl_outfile_abort(vl_outfile *o);                     /* frees o; NULL ok */

/** Path of the temporary file while it is open (for a signal handler to unlink). */
const char *vl_outfile_tmp_path(const vl_outfile *o);

#endif
