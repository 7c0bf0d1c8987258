/* lib/plan/verify_impl.h -- private to the plan checker: verify.c (driver, report, sums,
 * capacities, counts, file claims, memory), verify_cover.c (I1: every token once per
 * epoch), verify_order.c (slices and backward packs: coverage per rank, forward in token
 * order, backward in reverse, schedules), verify_layout.c (GPU placement, CP placement,
 * shared packs, ranges from the field table, capabilities).  Not API. */
#ifndef VLPLAN_VERIFY_IMPL_H
#define VLPLAN_VERIFY_IMPL_H

#include "verify.h"

#if defined(__GNUC__)
#define VL_VPRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define VL_VPRINTF(f, a)
#endif

/* One run of the checker. */
typedef struct vl_vctx {
    const vl_plan *p;
    const vl_plan_file *file;   /* NULL for a plan built in memory */
    const vl_cost *cost;        /* NULL: memory and cluster limits not checked */
    vl_verify_report *rep;
    bool declared;              /* the plan states its capabilities (built by vlplan) */
    uint32_t *used;             /* VL_CAP_* bits the plan was seen to use */
} vl_vctx;

/** Count a violation of invariant inv (1..5); the first VL_VERIFY_MAX_MSGS are kept. */
void vl__violation(vl_verify_report *rep, int inv, const char *fmt, ...) VL_VPRINTF(3, 4);
/** A message that counts nothing (a summary of counted violations). */
void vl__note(vl_verify_report *rep, const char *fmt, ...) VL_VPRINTF(2, 3);
/** "sample 42 (id "abc")", the id shortened if long; "sample 42" without a manifest. */
void vl__sample_name(const vl_plan *p, uint32_t s, char *buf, size_t cap);

/* verify_cover.c */
vl_status vl__check_coverage(const vl_vctx *v, vl_err *err);

/* verify_order.c */
vl_status vl__check_order(const vl_vctx *v, vl_err *err);

/* verify_layout.c */
vl_status vl__check_layout(const vl_vctx *v, vl_err *err);

#endif
