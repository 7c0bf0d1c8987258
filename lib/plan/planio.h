/* lib/plan/planio.h -- plan files (docs/decisions.md §7, schema "vlplan.plan/1"): JSONL (the header
 * through jansson, the integer-only records through a direct printer that writes the
 * same bytes jansson would), zstd-framed when the name ends in ".zst", atomically
 * (temporary file in the same directory, fsync, rename); and the reader (jansson) used
 * by verify, metrics and simulate. */
#ifndef VLPLAN_PLANIO_H
#define VLPLAN_PLANIO_H

#include <stdbool.h>
#include <stdint.h>

#include "plan.h"
#include "plan_file.h"

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

/* A plan written as it is made: the header first, then iterations as they are
 * finished, then the footer.  Memory: one record's line. */
typedef struct vl_plan_writer vl_plan_writer;
/** Write p's header (params, config, epochs, caps must be final) to fd.  iterations: the
 *  count the header announces (checked at close), or -1 to leave it out (the footer's
 *  count is authoritative).  Statuses as vl_plan_write_fd. */
vl_status vl_plan_writer_open(vl_plan_writer **w, const vl_plan *p, int64_t iterations,
                              int fd, bool zstd, const char *name, vl_err *err);
/** Write the iterations p holds, numbered from p->iter_base. */
vl_status vl_plan_writer_iters(vl_plan_writer *w, const vl_plan *p, vl_err *err);
/** The footer (p's dropped ranges, counts, checksum); frees w whatever happens. */
vl_status vl_plan_writer_close(vl_plan_writer *w, const vl_plan *p, vl_err *err);
/** Free w without a footer (the output is then incomplete; abort the outfile). */
void vl_plan_writer_abort(vl_plan_writer *w);
/** true when path names a zstd plan (".zst"). */
bool vl_plan_name_zstd(const char *path);

/** Read a plan file ("-" = stdin; zstd detected by magic) into p, and what the file
 *  claimed and what the reader found into *file (may be NULL).  With m, segment ids are
 *  resolved to manifest indices (unknown ones become VL_SAMPLE_UNKNOWN, counted in
 *  file->unknown_ids); without m, p->m is NULL and every distinct id gets the next
 *  index in order of first appearance within its record (an iteration, or the footer's
 *  dropped ranges): enough to tell the slices of one sample apart, which is all the
 *  metrics and the simulator need.  Only the structure is required (docs/decisions.md §7): a
 *  header with the schema, iteration records, ranks, micro-batches and their "seg";
 *  every other field is optional and checked when present.  Findings for verify (sums,
 *  counts, checksum) are recorded in file; structural errors (a wrong type, a missing
 *  "seg", malformed JSON, a wrong schema) are all collected, reading goes on past them,
 *  and the read then fails with VL_EDATA naming the first and how many. */
vl_status vl_plan_read(vl_plan *p, vl_plan_file *file, const char *path, vl_manifest *m,
                       vl_err *err);

/* Called by vl_plan_read_each after every iteration record with p holding the header
 *  and that iteration alone, as iters[0] (its number is p->iter_base).  Return VL_OK to
 *  go on; any other status stops the read and is returned. */
typedef vl_status (*vl_plan_visit)(void *ud, vl_plan *p, vl_err *err);

/** vl_plan_read, an iteration at a time: memory holds one iteration, not the plan.
 *  After the last visit p holds the header, the footer's dropped ranges and no
 *  iteration (p->iter_base = the number of iterations read); the caller frees it.
 *  Errors and findings as vl_plan_read; a structural error stops the visits at the
 *  record that has one (the read then goes on collecting errors and fails).
 *  threads > 1: that many threads parse iteration records while this one reads, hashes
 *  and visits in order; the visits, the messages and the result are those of one
 *  thread (planio_par.c). */
vl_status vl_plan_read_each(vl_plan *p, vl_plan_file *file, const char *path, vl_manifest *m,
                            int threads, vl_plan_visit visit, void *ud, vl_err *err);

/* ---- the field table: the record keys the writer, the reader and verify share ---- */

typedef enum { VL_PF_ITER, VL_PF_RANK, VL_PF_MB } vl_pf_level;

typedef enum {
    VL_PF_I32,            /* an int32_t field of the element at `off` */
    VL_PF_U32,            /* a uint32_t field at `off` */
    /* composite keys, each handled by its own code in the writer and the reader */
    VL_PF_IT, VL_PF_TOKENS, VL_PF_LOSS, VL_PF_SAMPLES, VL_PF_RANKS,      /* iteration */
    VL_PF_GPUS, VL_PF_MBS, VL_PF_BWD, VL_PF_SCHEDULE,                    /* rank */
    VL_PF_SEG, VL_PF_CU, VL_PF_SHARED                                    /* pack */
} vl_pf_kind;

/* Defaults that depend on the element. */
#define VL_PF_DEF_INDEX INT64_MIN      /* its position in its list (dp) */
#define VL_PF_DEF_TOKENS (INT64_MIN + 1) /* the pack's tokens (cap: no padding) */

typedef struct vl_pfield {
    const char *key;
    vl_pf_level level;
    vl_pf_kind kind;
    size_t off;           /* VL_PF_I32/U32: offsetof in vl_iter, vl_rank or vl_mb */
    int64_t min, max;     /* VL_PF_I32/U32: the values verify accepts */
    int64_t def;          /* VL_PF_I32/U32: the value when absent */
    bool omit_default;    /* written only when it differs from def */
    int inv;              /* invariant broken by a value out of range (verify) */
} vl_pfield;

/** The table in key order ({NULL}-terminated); `level` filters nothing: walk it whole. */
extern const vl_pfield vl_plan_fields[];

#endif
