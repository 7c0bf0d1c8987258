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
vl_status vl_plan_writer_open(vl_plan_writer **w, const vl_plan *p, int64_t iterations, int fd,
                              bool zstd, const char *name, vl_err *err);
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
    VL_PF_I32, /* an int32_t field of the element at `off` */
    VL_PF_U32, /* a uint32_t field at `off` */
    /* composite keys, each handled by its own code in the writer and the reader */
    VL_PF_IT,
    VL_PF_TOKENS,
    VL_PF_LOSS,
    VL_PF_SAMPLES,
    VL_PF_RANKS, /* iteration */
    VL_PF_GPUS,
    VL_PF_MBS,
    VL_PF_BWD,
    VL_PF_SCHEDULE, /* rank */
    VL_PF_SEG,
    VL_PF_CU,
    VL_PF_SHARED /* pack */
} vl_pf_kind;

/* Defaults that depend on the element. */
#define VL_PF_DEF_INDEX INT64_MIN        /* its position in its list (dp) */
#define VL_PF_DEF_TOKENS (INT64_MIN + 1) /* the pack's tokens (cap: no padding) */

/* The largest count a record may claim ("it", "tokens", "loss_tokens", "samples" and the
 * header's and footer's counts): 2^63 - 1, so that sums of claims cannot wrap. */
#define VL_PF_COUNT_MAX INT64_MAX

/* ---- arrays: what a list holds (the schema's "items") ---- */

typedef enum {
    VL_PT_INT, /* an integer min..max */
    VL_PT_ID,  /* a sample id: an integer, or a string without NUL */
    VL_PT_OP,  /* a schedule operation's kind: one letter of vl_pf_op_names */
    VL_PT_NAME /* a string, one of values */
} vl_pt;

/** One element of a list of integers, or one position of a tuple. */
typedef struct vl_pitem {
    const char *name;
    vl_pt type;
    int64_t min, max;          /* VL_PT_INT */
    const char *const *values; /* VL_PT_NAME: NULL-terminated */
} vl_pitem;

typedef enum {
    VL_PA_INTS,   /* integers, each as items[0] */
    VL_PA_TUPLES, /* lists of arity_min..arity_max, position i as items[i] */
    VL_PA_RECORDS /* objects of level `record` */
} vl_pa;

/* The rules the readers check on a list beyond its elements' types, named as the
 * exported schema names them (vlplan schema; the Python reader implements each). */
typedef enum {
    VL_PR_NONE,
    VL_PR_RANK_SIZE,     /* gpus: exactly tp*sp*pp entries */
    VL_PR_PREFIX_SUMS,   /* cu_seqlens: 0 and the running sums of the segment lengths */
    VL_PR_DISTINCT_SELF, /* shared: distinct dp values, the pack's own rank among them */
    VL_PR_NAMES_PACK,    /* schedule: F and R name a forward pack, B a backward one */
    VL_PR_BWD_TOKENS,    /* bwd: the backward packs hold the forward packs' tokens */
    VL_PR_CP_BELOW_SP    /* seg: a cp coordinate below the rank's sp */
} vl_prule;

typedef struct vl_parray {
    vl_pa elems;
    const vl_pitem *items;
    size_t arity_min, arity_max; /* VL_PA_TUPLES */
    size_t min_len;              /* fewest elements */
    vl_pf_level record;          /* VL_PA_RECORDS */
    vl_prule rule;
} vl_parray;

/* Rules on a scalar claim, named in the exported schema as vl_prule's are. */
typedef enum {
    VL_PC_NONE,
    VL_PC_POSITION,   /* it: the record's position in the file, from 0 */
    VL_PC_SUM_TOKENS, /* tokens: what the segments hold (an iteration: each shared
                           * pack counted once) */
    VL_PC_LOSS,       /* loss_tokens: at most the tokens */
    VL_PC_EPOCH,      /* epoch: below the header's epochs */
    VL_PC_CAP         /* cap: at least the pack's tokens */
} vl_pclaim;

typedef struct vl_pfield {
    const char *key;
    vl_pf_level level;
    vl_pf_kind kind;
    size_t off;           /* VL_PF_I32/U32: offsetof in vl_iter, vl_rank or vl_mb */
    int64_t min, max;     /* VL_PF_I32/U32: the values verify accepts; counts 0..COUNT_MAX */
    int64_t def;          /* VL_PF_I32/U32: the value when absent */
    bool omit_default;    /* written only when it differs from def */
    int inv;              /* invariant broken by a value out of range (verify) */
    bool required;        /* a reader refuses the record without it */
    const vl_parray *arr; /* a list: what it holds; NULL for an integer */
    vl_pclaim claim;      /* an integer's relation to the rest of the record */
} vl_pfield;

/** The table in key order ({NULL}-terminated); `level` filters nothing: walk it whole. */
extern const vl_pfield vl_plan_fields[];

/* The lists of the table, for the readers that parse them by hand (planio_read_iter.c,
 * planio_fast.c): their bounds come from here. */
extern const vl_parray vl_pf_seg, vl_pf_gpus, vl_pf_shared, vl_pf_schedule, vl_pf_cu,
    vl_pf_dropped;
/** The schedule operations' kinds, in vl_op_kind order: "FRB". */
extern const char vl_pf_op_names[];

/* ---- header and footer: their typed members, for the exported schema ---- */

typedef enum {
    VL_PM_COUNT,  /* an integer min..max */
    VL_PM_STRING, /* a string of at most max bytes (0: any), one of values if given */
    VL_PM_OBJECT, /* an object */
    VL_PM_CAPS,   /* a list of capability names (vl_cap_name, less world_optimizer,
                           * which "optimizer_shard":"world" declares) */
    VL_PM_LIST    /* a list, as arr says */
} vl_pm_type;

typedef struct vl_pmeta {
    const char *record; /* "header", "footer", or "header.manifest" */
    const char *key;
    vl_pm_type type;
    int64_t min, max;          /* VL_PM_COUNT; VL_PM_STRING: max bytes (0: any) */
    const char *const *values; /* NULL-terminated names allowed, or NULL: any */
    const vl_parray *arr;      /* VL_PM_LIST */
} vl_pmeta;

/** The header's and footer's optional members, typed as the reader checks them
 *  ({NULL}-terminated). */
extern const vl_pmeta vl_plan_meta[];

/** The schema of plan files as JSON text (malloc'd): every record's fields, lists with
 *  their elements and rules, the header's and footer's members (vlplan schema; the
 *  Python reader checks against it).  VL_ENOMEM. */
vl_status vl_plan_schema_json(char **out, vl_err *err);

#endif
