/* lib/data/manifest_impl.h -- shared by the lib/manifest*.c files, not API: the builder
 * that accumulates records while reading, the id index and the line parsers. */
#ifndef VLPLAN_MANIFEST_INTERNAL_H
#define VLPLAN_MANIFEST_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "manifest.h"

/* One record as parsed, pointing into the current line (strings not NUL-terminated). */
typedef struct vl__rec {
    uint32_t len, loss;
    bool has_loss;
    uint8_t id_kind; /* 0 = implicit (index in the dataset), VL_ID_INT, VL_ID_STR */
    int64_t id_int;
    const char *id_str; /* VL_ID_STR */
    size_t id_len;
    const char *src; /* NULL = no source */
    size_t src_len;
} vl__rec;

/* Samples [sample, next run's sample) sit on consecutive lines of one file from line:
 * enough to name where an earlier sample was without a line number per sample. */
typedef struct vl__run {
    uint64_t sample, line;
    uint32_t file;
} vl__run;

typedef struct vl__mb {
    vl_manifest *m;
    const vl_manifest_opts *opts;
    vl_err *err;
    size_t cap;         /* capacity of every per-sample array */
    const char **names; /* [nnames] input names for messages, borrowed */
    size_t nnames;
    uint32_t file; /* current input and line, for messages */
    uint64_t line;
    vl__run *runs;
    size_t nruns, runcap;
    uint32_t *src_slot; /* source name -> index + 1, open addressing */
    size_t src_cap, sources_cap;
    uint16_t last_src; /* consecutive records usually share a source */
    bool unsorted;     /* ids are not all increasing integers: the index is in use */
    int64_t last_id;
    bool no_fast; /* every JSONL line through jansson (tests, the fuzzer) */
} vl__mb;

enum { VL__FMT_NONE, VL__FMT_TEXT, VL__FMT_CSV, VL__FMT_JSONL };

typedef struct vl__field {
    char *p;
    size_t n;
} vl__field;

/* The format of the input being read, from its first non-empty line. */
typedef struct vl__fmt {
    int kind;
    bool implicit; /* TEXT with one length per line, or CSV without an id column */
    char delim;    /* CSV: ',' or '\t' */
    size_t ncols;
    long id_col, len_col, loss_col, src_col; /* -1 = absent */
    uint64_t first_line;                     /* line of the first record (TEXT) */
    uint64_t first_blank; /* first blank line seen before the format was known */
    char header[96];      /* CSV header for messages */
    char len_what[72];    /* how the length is named in messages */
    vl__field *fields;    /* CSV scratch, [fcap] */
    size_t fcap;
} vl__fmt;

/* manifest_build.c */
vl_status vl__mb_init(vl__mb *b, vl_manifest *m, const vl_manifest_opts *opts, vl_err *err);
void vl__mb_fini(vl__mb *b);
vl_status vl__mb_add(vl__mb *b, const vl__rec *r);
vl_status vl__mb_finish(vl__mb *b);
/** err from position b->file:b->line (and col when > 0), "FILE:LINE[:COL]: msg". */
vl_status vl__mb_err(vl__mb *b, long col, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* manifest_id.c */
/** sha256 of "<id json>\t<len>\t<loss>\n" for every sample, in order, into m->sha256. */
void vl__manifest_sha(vl_manifest *m);

/* manifest_index.c */
/** Insert sample i (id already stored) into m->index; *dup = earlier sample with the
 *  same id, or SIZE_MAX when i was inserted. */
vl_status vl__index_insert(vl_manifest *m, size_t i, size_t *dup, vl_err *err);
/** Mark m's ids as increasing integers: finds use binary search, no table. */
vl_status vl__index_sorted(vl_manifest *m, vl_err *err);
void vl__index_free(void *index);
uint64_t vl__hash_str(const char *s, size_t n);

/* manifest_build.c: the default length keys, by rank */
#define VL__NLEN_NAMES 3
extern const char *const vl__len_names[VL__NLEN_NAMES];

/* manifest_parse.c, manifest_jsonl.c */
vl_status vl__jsonl_line(vl__mb *b, const char *p, size_t n);
/** manifest_jsonl_fast.c: line [p, p+n) read without jansson when it is a flat object
 *  making a valid record (true, *st the add's status); false: nothing done. */
bool vl__jsonl_fast(vl__mb *b, const char *p, size_t n, vl_status *st);
/** vl_manifest_read with (fast) or without the JSONL fast path. */
vl_status vl__manifest_read_with(vl_manifest **out, const char *const *paths, size_t npaths,
                                 const vl_manifest_opts *opts, bool fast, vl_err *err);
/** Parse line [p, p+n) (no '\n', '\r' or BOM) of the current input into b. */
vl_status vl__parse_line(vl__fmt *f, vl__mb *b, char *p, size_t n);
void vl__fmt_reset(vl__fmt *f);
void vl__fmt_free(vl__fmt *f);

#endif
