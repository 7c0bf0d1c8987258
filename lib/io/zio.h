/* lib/io/zio.h -- byte streams that may be zstd-compressed: the only user of <zstd.h>.
 * Readers detect a zstd frame by its magic number (any file name) and decode as a
 * stream; writers produce one frame with a checksum. */
#ifndef VLPLAN_ZIO_H
#define VLPLAN_ZIO_H

#include <stdbool.h>
#include <stddef.h>

#include "err.h"

typedef struct vl_zreader vl_zreader;

/** Open path for reading ("-" = stdin, named "<stdin>" in messages).
 *  VL_ENOINPUT if it cannot be opened or is a directory. */
vl_status vl_zreader_open(vl_zreader **out, const char *path, vl_err *err);
/** Read size bytes at data (borrowed until close) as if they were a file named name:
 *  the fuzzers' and tests' entry point, with no file system involved. */
vl_status vl_zreader_mem(vl_zreader **out, const char *name, const void *data, size_t size,
                         vl_err *err);
/** Largest zstd window accepted, as a power of two (default 27 = 128 MiB, at most 31);
 *  call before the first read.  VL_EUSAGE when out of range. */
vl_status vl_zreader_set_window_log_max(vl_zreader *z, int wlog, vl_err *err);
/** Read up to cap decoded bytes into buf; *got = 0 at end of input.  A truncated or
 *  corrupt frame is VL_EDATA ("NAME: truncated zstd frame ..."), read errors VL_EIO. */
vl_status vl_zreader_read(vl_zreader *z, void *buf, size_t cap, size_t *got, vl_err *err);
/** Name used in messages ("<stdin>" for "-"). */
const char *vl_zreader_name(const vl_zreader *z);
bool vl_zreader_is_zstd(const vl_zreader *z);
void vl_zreader_close(vl_zreader *z);

typedef struct vl_zwriter vl_zwriter;

/** Write to descriptor fd (not closed by us); zstd frame when compress. */
vl_status vl_zwriter_fd(vl_zwriter **out, int fd, bool compress, const char *name,
                        vl_err *err);
vl_status vl_zwriter_write(vl_zwriter *w, const void *buf, size_t n, vl_err *err);
/** Flush everything (ends the frame); frees w in all cases. */
vl_status vl_zwriter_close(vl_zwriter *w, vl_err *err);

#endif
