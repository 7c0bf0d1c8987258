/* lib/check/verify.h -- the plan checker (docs/decisions.md §7 invariants), run by `vlplan verify` and by
 * `vlplan plan` on its own output before committing it.
 *   I1 coverage: every token of every sample exactly once per epoch, or dropped; a rank's
 *      backward packs hold exactly the tokens of its forward packs;
 *   I2 sums: token counts, cu_seqlens, loss tokens and samples agree with the segments;
 *   I3 capacity: tokens within a pack's capacity, degrees the cluster and model allow,
 *      modelled memory within the device (per CP coordinate);
 *   I4 lockstep: equal micro-batch counts per rank unless the plan declares uneven ones;
 *   I5 structure: epochs, schedules (forward slices in token order, backward in reverse,
 *      a backward pack after the forwards it needs), GPU and CP placement, shared packs,
 *      capabilities, and what a plan file claims (footer, checksum, counts). */
#ifndef VLPLAN_VERIFY_H
#define VLPLAN_VERIFY_H

#include "cost.h"
#include "plan.h"
#include "plan_file.h"

#define VL_VERIFY_MAX_MSGS 64

/* Where the first iteration over device memory is, for a message that says what would
 * fit (the runner's refusal). */
typedef struct vl_verify_oom {
    size_t iter;          /* plan iteration number */
    uint32_t rank, stage; /* rank index within the iteration, pipeline stage */
    double gib, usable_gib;
} vl_verify_oom;

typedef struct vl_verify_report {
    size_t violations;                     /* total found */
    size_t oom_iters;                      /* of which: iterations over device memory (I3) */
    vl_verify_oom first_oom;               /* meaningful when oom_iters > 0 */
    uint64_t oom_msgs;                     /* bit i: msgs[i] is a memory violation */
    size_t by_inv[5];                      /* violations of invariants I1..I5 */
    size_t nmsgs;                          /* first VL_VERIFY_MAX_MSGS, one line each, each
                                            * naming its invariant and place */
    char msgs[VL_VERIFY_MAX_MSGS][256];
} vl_verify_report;

/* The checker an iteration at a time, for plans read that way (vl_plan_read_each):
 * vl_verifier_new, vl_verifier_iter after every iteration, vl_verifier_finish with the
 * plan as it ends (header, dropped ranges) and what its file claimed.  rep must outlive
 * the verifier.  Memory: per epoch two bits per manifest sample and the slices, plus one
 * iteration's scratch. */
typedef struct vl_verifier vl_verifier;
/** m: the manifest (coverage checked when non-NULL); cost as for vl_plan_verify. */
vl_status vl_verifier_new(vl_verifier **out, const vl_manifest *m, const vl_cost *cost,
                          vl_verify_report *rep, vl_err *err);
/** Check iteration it of p (its number is p->iter_base + it).  VL_ENOMEM. */
vl_status vl_verifier_iter(vl_verifier *v, const vl_plan *p, size_t it, vl_err *err);
/** The checks that need the whole plan; VL_OK, VL_EVERIFY (the report filled), VL_ENOMEM.
 *  file: what a plan file claimed, NULL for a plan built in memory. */
vl_status vl_verifier_finish(vl_verifier *v, const vl_plan *p, const vl_plan_file *file,
                             vl_err *err);
void vl_verifier_free(vl_verifier *v);   /* NULL: no-op */
/** Count a violation of I5 found outside the plan's records, in the caller's words
 *  (msg, one line): a header config that disagrees with the one checked against. */
void vl_verifier_violation(vl_verifier *v, const char *msg);

/** Check a plan built in memory against its manifest p->m; with cost (non-NULL) also the
 *  modelled memory and the cluster's limits (GPUs, layers).  Returns VL_OK, VL_EVERIFY
 *  (rep filled), or VL_ENOMEM. */
vl_status vl_plan_verify(const vl_plan *p, const vl_cost *cost, vl_verify_report *rep,
                         vl_err *err);

/** The same for a plan read from a file, with what the file claimed and what its reader
 *  found (file, from vl_plan_read). */
vl_status vl_plan_verify_read(const vl_plan *p, const vl_plan_file *file, const vl_cost *cost,
                              vl_verify_report *rep, vl_err *err);

#endif
