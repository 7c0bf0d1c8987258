/* lib/plan/plan_file.h -- what a plan file claimed and what its reader found, kept apart
 * from the plan itself: the reader (lib/plan/planio_read.c) fills it, the verifier
 * (lib/check/verify.c) turns its findings into violations, and the commands print its
 * structural errors.  A plan built in memory has none. */
#ifndef VLPLAN_PLAN_FILE_H
#define VLPLAN_PLAN_FILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Messages kept in full; the counts go on beyond them. */
#define VL_PLAN_FILE_MSGS 64
#define VL_PLAN_MSG_LEN 256

typedef struct vl_msgs {
    size_t total; /* found */
    size_t n;     /* kept: min(total, VL_PLAN_FILE_MSGS) */
    char msg[VL_PLAN_FILE_MSGS][VL_PLAN_MSG_LEN];
} vl_msgs;

/* A claim the file made: its value, or -1 when the file left it out. */
typedef struct vl_plan_file {
    bool by_vlplan; /* the header names a vlplan version: every field was written,
                           * the footer included */
    bool has_footer;
    int sha; /* footer sha256: 1 matches the content, 0 does not, -1 absent */
    int64_t iterations, samples, tokens; /* footer claims */
    int64_t header_iterations;           /* header "iterations" */
    int64_t header_epochs;               /* header "epochs"; absent: the plan's
                                                * epochs are the iterations' largest + 1 */
    size_t unknown_ids; /* segments and drops whose id is not in the manifest */
    size_t by_inv[5];   /* findings per invariant I1..I5 */
    vl_msgs findings;   /* "I2: FILE:LINE: iteration 3, rank 1: ..." for verify */
    vl_msgs errors;     /* structural errors: "FILE:LINE: iteration 3, rank 1: missing
                           * \"seg\""; the read failed (VL_EDATA) when total > 0 */
} vl_plan_file;

#endif
