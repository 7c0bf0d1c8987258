/* lib/plan/verify.h -- the plan checker (design §7 invariants), run by `vlplan verify` and by
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

typedef struct vl_verify_report {
    size_t violations;                     /* total found */
    size_t by_inv[5];                      /* violations of invariants I1..I5 */
    size_t nmsgs;                          /* first VL_VERIFY_MAX_MSGS, one line each, each
                                            * naming its invariant and place */
    char msgs[VL_VERIFY_MAX_MSGS][256];
} vl_verify_report;

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
