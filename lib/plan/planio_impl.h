/* lib/plan/planio_impl.h -- private to the plan reader (planio_read.c: lines, header,
 * footer, ids, messages; planio_read_iter.c: iteration records) and the id interner
 * (planio_ids.c).  Not API. */
#ifndef VLPLAN_PLANIO_IMPL_H
#define VLPLAN_PLANIO_IMPL_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "planio.h"
#include "sha256.h"
#include "zio.h"

#if defined(__GNUC__)
#define VL_PRINTF_LIKE(f, a) __attribute__((format(printf, f, a)))
#else
#define VL_PRINTF_LIKE(f, a)
#endif

/* ---- ids of a plan read without its manifest (planio_ids.c) ---- */
typedef struct vl_idtab vl_idtab;
vl_status vl__ids_new(vl_idtab **out, vl_err *err);
void vl__ids_free(vl_idtab *t);
/** The index of an integer id (str false, value v) or a string id (s, len): the next one
 *  when it is new.  VL_ENOMEM, VL_EDATA (more ids than indices). */
vl_status vl__ids_intern(vl_idtab *t, bool str, int64_t v, const char *s, size_t len,
                         uint32_t *out, vl_err *err);
/** Ids interned so far. */
size_t vl__ids_count(const vl_idtab *t);
/** Forget every id interned after the first n (a line given back by the fast path). */
void vl__ids_undo(vl_idtab *t, size_t n);
/** Forget every id: numbering starts again at 0 (each iteration, the footer). */
void vl__ids_reset(vl_idtab *t);

/* ---- string ids of one record, looked up together (planio_fast.c) ---- */
typedef struct vl_idbatch {
    const char **ids;
    size_t *lens, *off; /* off: where the id's opening quote is in the line */
    long long *res;     /* vl_manifest_find_strs' answers */
    size_t n, cap, next;
    const char *line;
} vl_idbatch;
void vl__idbatch_free(vl_idbatch *b);

/* ---- the reader ---- */
typedef struct vl_reader {
    vl_plan *p;
    vl_plan_file *file;
    vl_manifest *m;
    vl_idtab *ids; /* without m */
    vl_zreader *z;
    const char *name;
    char *buf; /* unconsumed input is buf[start, end); no '\n' in [start, scan) */
    size_t cap, start, end, scan;
    bool eof;
    size_t lineno;
    /* where in the current record, for messages; -1 = not inside */
    long it, rank, mb, seg;
    bool bwd;      /* mb counts backward packs */
    vl_sha256 sha; /* of every line before the footer */
    bool have_header, have_footer;
    bool no_fast;        /* every line through jansson (tests, the differential fuzzer) */
    vl_plan_visit visit; /* vl_plan_read_each: after every iteration, then cleared */
    void *ud;
    uint32_t epochs_seen; /* the largest iteration epoch + 1 */
    vl_idbatch *batch;    /* with m: the record's string ids, resolved before parsing */
} vl_reader;

/** vl_plan_read (visit NULL) or vl_plan_read_each, with the fast path (planio_fast.c)
 *  or with every line through jansson (fast false: tests, the differential fuzzer). */
vl_status vl__plan_read_with(vl_plan *p, vl_plan_file *file, const char *path, vl_manifest *m,
                             bool fast, int threads, vl_plan_visit visit, void *ud,
                             vl_err *err);
/** The lines of r with `threads` parsing threads (planio_par.c); r->visit is set. */
vl_status vl__rd_lines_par(vl_reader *r, int threads, vl_err *err);

/** A structural error at the current position ("NAME:LINE: iteration 3, rank 1, micro-batch
 *  0: msg"): collected, reading goes on, the read fails at the end. */
void vl__rd_error(vl_reader *r, const char *fmt, ...) VL_PRINTF_LIKE(2, 3);
/** A finding for verify (invariant inv, 1..5) at the current position. */
void vl__rd_problem(vl_reader *r, int inv, const char *fmt, ...) VL_PRINTF_LIKE(3, 4);
/** Manifest index of a sample id (VL_SAMPLE_UNKNOWN, recorded, when the manifest lacks
 *  it; the interned index without a manifest).  A non-id is a structural error: *ok
 *  false.  VL_ENOMEM. */
vl_status vl__rd_sample(vl_reader *r, const json_t *id, uint32_t *sample, bool *ok,
                        vl_err *err);
/** An optional non-negative integer member key of o, at most max: *out (and true) when
 *  present and valid; absent: false; else an error is recorded and *bad set. */
bool vl__rd_uint(vl_reader *r, const json_t *o, const char *key, uint64_t max, uint64_t *out,
                 bool *bad);
/** One "iter" record into r->p.  VL_ENOMEM only: everything else is recorded. */
vl_status vl__rd_iter(vl_reader *r, json_t *o, vl_err *err);
/** The next input line (counted in r->lineno); *line NULL at the end. */
vl_status vl__rd_next_line(vl_reader *r, char **line, size_t *len, bool *nl, vl_err *err);
/** Any line, in order, the serial way: hashed, parsed, its iteration visited.  *stop when
 *  reading ends at it (data after the footer, a cut-off last line). */
vl_status vl__rd_line(vl_reader *r, const char *line, size_t len, bool nl, bool *stop,
                      vl_err *err);
/** The line is an iteration record, as far as its first bytes tell (after the header). */
bool vl__rd_is_iter(const vl_reader *r, const char *line, size_t len);
/** Parse an iteration line into r->p (fast path, else jansson) without hashing it or
 *  visiting: what a reading thread does (planio_par.c). */
vl_status vl__rd_iter_line(vl_reader *r, const char *line, size_t len, vl_err *err);
/** After a record: note its epoch; with a visitor, visit and forget the iteration. */
vl_status vl__rd_iteration_done(vl_reader *r, vl_err *err);

/** The fast path (planio_fast.c): line [line, line + len) read into r->p when it is an
 *  "iter" record exactly as vlplan writes it, with every claim consistent and every id
 *  known (*taken true); else *taken false and r->p and the id table as they were.
 *  VL_ENOMEM. */
vl_status vl__rd_fast_iter(vl_reader *r, const char *line, size_t len, bool *taken,
                           vl_err *err);

#endif
