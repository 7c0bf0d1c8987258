/* lib/plan/verify.h -- the plan checker (design §7 invariants), run by `vlplan verify` and by
 * `vlplan plan` on its own output before committing it. */
#ifndef VLPLAN_VERIFY_H
#define VLPLAN_VERIFY_H

#include "cost.h"
#include "plan.h"

#define VL_VERIFY_MAX_MSGS 20

typedef struct vl_verify_report {
    size_t violations;                     /* total found */
    size_t by_inv[5];                      /* violations of invariants I1..I5 */
    size_t nmsgs;                          /* first VL_VERIFY_MAX_MSGS, one line each */
    char msgs[VL_VERIFY_MAX_MSGS][256];
} vl_verify_report;

/** Check p against its manifest p->m: every token of every sample exactly once per
 *  epoch or listed as dropped; token sums and capacities; lockstep micro-batch counts;
 *  footer counts and checksum (plans read from files); modelled activation memory
 *  within the device when cost is non-NULL.  Returns VL_OK, VL_EVERIFY (rep filled),
 *  or VL_ENOMEM. */
vl_status vl_plan_verify(const vl_plan *p, const vl_cost *cost, vl_verify_report *rep,
                         vl_err *err);

#endif
