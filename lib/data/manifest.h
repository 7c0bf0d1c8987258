/* lib/data/manifest.h -- the sample table: ids kept verbatim, token lengths, loss tokens, sources.
 * Reads plain text, CSV/TSV with a header, and JSONL, each optionally zstd-compressed
 * (detected by magic number), from files or stdin ("-"), several inputs forming one dataset.
 * Memory is structure-of-arrays so that per-sample state stays small (docs/decisions.md §3). */
#ifndef VLPLAN_MANIFEST_H
#define VLPLAN_MANIFEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "err.h"

/* Largest accepted sample length (tokens). */
#define VL_MAX_SAMPLE_LEN 2147483647u

typedef struct vl_manifest_opts {
    const char *id_col;      /* CSV/TSV/JSONL id column or key; NULL = "id" */
    const char *len_col;     /* NULL = first of "length", "len", "num_tokens" */
    bool allow_empty;        /* zero samples is not an error */
    int zstd_window_log_max; /* largest zstd window, log2; 0 = 27 (128 MiB), max 31 */
    bool lengths_only;       /* for a command that needs no ids (stats): ids are parsed but
                           * not kept (they read as implicit) nor checked for duplicates,
                           * and sha256 is left zero */
} vl_manifest_opts;

/* Samples 0..n-1 in input order.  Implicit ids (plain text with one length per line)
 * are the 0-based index of the sample in the whole dataset, so splitting a manifest
 * into shards read in order gives the same ids.  Explicit ids are kept verbatim: an id
 * written as a canonical integer (-?[1-9][0-9]*|0, fits int64) is an integer, anything
 * else (including a JSON string "42") is a string. */
typedef struct vl_manifest {
    size_t n;             /* samples */
    uint64_t tokens;      /* Σ len */
    uint64_t loss_tokens; /* Σ loss */
    uint32_t *len;        /* [n] token length, 1..VL_MAX_SAMPLE_LEN */
    uint32_t *loss;       /* [n] loss tokens (≤ len), or NULL when equal to len for all */
    uint16_t *source;     /* [n] index into sources[], or NULL when no record had one */
    char **sources;       /* [nsources] distinct source names, in order of first appearance */
    size_t nsources;
    /* ids: id_kind NULL => all implicit (id = index).  Otherwise id_kind[i] is
     * VL_ID_INT (id_val[i] is the int64 value, stored as uint64) or VL_ID_STR
     * (id_val[i] is an offset into id_pool of a NUL-terminated string). */
    uint8_t *id_kind;
    uint64_t *id_val;
    char *id_pool;
    size_t id_pool_len, id_pool_cap;
    unsigned char sha256[32]; /* of the canonical records "<id json>\t<len>\t<loss>\n", in
                               * order: the same for any format, compression or sharding */
    void *index;              /* lazily built id -> sample lookup (vl_manifest_find) */
} vl_manifest;

enum { VL_ID_INT = 1, VL_ID_STR = 2 };

/** Read inputs paths[0..npaths-1] ("-" = stdin, named "<stdin>" in messages) in order
 *  into *out (caller frees with vl_manifest_free).  Errors name file, line and reason:
 *  VL_ENOINPUT (cannot open), VL_EIO (read error), VL_EDATA (bad record, duplicate id,
 *  corrupt or truncated zstd, empty dataset), VL_ENOMEM.  *out untouched on error. */
vl_status vl_manifest_read(vl_manifest **out, const char *const *paths, size_t npaths,
                           const vl_manifest_opts *opts, vl_err *err);

/** vl_manifest_read of one input held in memory (size bytes at data, plain or zstd),
 *  named name in messages: the fuzzers' entry point. */
vl_status vl_manifest_read_mem(vl_manifest **out, const char *name, const void *data,
                               size_t size, const vl_manifest_opts *opts, vl_err *err);

/** Build a manifest from lengths alone (ids implicit); for tests, gen and benchmarks. */
vl_status vl_manifest_from_lengths(vl_manifest **out, const uint32_t *len, size_t n,
                                   vl_err *err);

void vl_manifest_free(vl_manifest *m);

/** Loss tokens of sample i. */
static inline uint32_t vl_manifest_loss(const vl_manifest *m, size_t i)
{
    return m->loss ? m->loss[i] : m->len[i];
}

/** Write sample i's id as a JSON token (integer, or quoted and escaped string) into
 *  buf (NUL-terminated); returns the length it needs, like snprintf. */
size_t vl_manifest_id_json(const vl_manifest *m, size_t i, char *buf, size_t cap);

/** Look up a sample by id.  is_str selects string vs integer ids; returns the sample
 *  index or -1 when absent.  Builds an index on first use (VL_ENOMEM on failure is
 *  reported through err and returns -2). */
long long vl_manifest_find_int(vl_manifest *m, int64_t id, vl_err *err);
/** n string ids (ids[i] of lens[i] bytes, not NUL-terminated) looked up at once into
 *  out[i]: the sample index or -1, as vl_manifest_find_str answers, but with the memory
 *  accesses of many lookups overlapped (a plan lists samples in random order, and each
 *  lookup otherwise waits for four cache misses in turn).  VL_ENOMEM. */
vl_status vl_manifest_find_strs(vl_manifest *m, const char *const *ids, const size_t *lens,
                                size_t n, long long *out, vl_err *err);
/** Build the id index now if it is built lazily, so that finds from several threads only
 *  read.  VL_ENOMEM. */
vl_status vl_manifest_index(vl_manifest *m, vl_err *err);
long long vl_manifest_find_str(vl_manifest *m, const char *id, vl_err *err);

/** Hex of m->sha256 into hex[65]. */
void vl_manifest_sha256_hex(const vl_manifest *m, char hex[65]);

#endif
