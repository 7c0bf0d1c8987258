/* lib/io/planio.h -- plan files (design §7, schema "vlplan.plan/1"): JSONL (the header
 * through jansson, the integer-only records through a direct printer that writes the
 * same bytes jansson would), zstd-framed when the name ends in ".zst", atomically
 * (temporary file in the same directory, fsync, rename); and the reader (jansson) used
 * by verify, metrics and simulate. */
#ifndef VLPLAN_PLANIO_H
#define VLPLAN_PLANIO_H

#include <stdbool.h>

#include "plan.h"

#define VL_PLAN_SCHEMA "vlplan.plan/1"

/** Write p to path atomically; "-" is not accepted here (use vl_plan_write_fd).
 *  A name ending in ".zst" gets a zstd frame with checksum.  A non-regular existing
 *  target (FIFO, /dev/null) is written in place.  On any error nothing is left under
 *  path or as a temporary: VL_ECANTCREAT (cannot create), VL_EIO (write/fsync/rename). */
vl_status vl_plan_write_file(const vl_plan *p, const char *path, vl_err *err);

/** Write p into o, opened by the caller with vl_outfile_open(path) (zstd when path ends
 *  in ".zst"); the caller then commits or aborts o.  For callers that must know the
 *  temporary's name while it exists, e.g. to remove it from a signal handler. */
struct vl_outfile;
vl_status vl_plan_write_to(const vl_plan *p, struct vl_outfile *o, const char *path,
                           vl_err *err);

/** Write p to an open descriptor (stdout), plain or zstd. */
vl_status vl_plan_write_fd(const vl_plan *p, int fd, bool zstd, vl_err *err);

/** Read a plan file ("-" = stdin; zstd detected by magic).  With m, segment ids are
 *  resolved to manifest indices (unknown ones become VL_SAMPLE_UNKNOWN and are counted
 *  in p->file.unknown_ids); without m, seg.sample is 0 and p->m is NULL.  Structural
 *  problems a verifier reports (missing footer, bad checksum, counts) are recorded in
 *  p->file; malformed JSON or a wrong schema is VL_EDATA with line number. */
vl_status vl_plan_read(vl_plan *p, const char *path, vl_manifest *m, vl_err *err);

#endif
