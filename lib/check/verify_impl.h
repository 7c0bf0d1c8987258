/* lib/check/verify_impl.h -- private to the plan checker: verify.c (driver, report, sums,
 * capacities, counts, file claims, memory), verify_cover.c (I1: every token once per
 * epoch), verify_order.c (slices and backward packs: coverage per rank, forward in token
 * order, backward in reverse, schedules), verify_layout.c (GPU placement, CP placement,
 * shared packs, ranges from the field table, capabilities), verify_config.c (epochs,
 * dropped ranges and capacities against the config and the strategy).  Not API. */
#ifndef VLPLAN_VERIFY_IMPL_H
#define VLPLAN_VERIFY_IMPL_H

#include "sim.h"
#include "verify.h"

#if defined(__GNUC__)
#define VL_VPRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define VL_VPRINTF(f, a)
#endif

typedef struct vl__cover vl__cover;

/* The checker: what it has seen so far and the scratch every pass reuses (the public
 * vl_verifier). */
typedef struct vl_verifier {
    const vl_plan *p;    /* the plan being checked: the current iteration's view */
    const vl_cost *cost; /* NULL: memory and cluster limits not checked */
    vl_verify_report *rep;
    bool declared; /* the plan states its capabilities (set at the end) */
    uint32_t used; /* VL_CAP_* bits the plan was seen to use */
    size_t num;    /* number of the iteration being checked, for messages */
    /* across iterations */
    uint64_t samples, tokens; /* over primary forward copies, for the footer claims */
    uint64_t iterations;
    bool any;
    uint32_t last_epoch, epochs_seen;
    size_t iter_violations; /* violations before the current iteration's checks */
    /* the strategy's rules (verify_config.c), from the caller's source, looked up once
     * from the first plan seen (the format's own without a source) */
    const vl_rules_source *src;
    bool rules_set;
    vl_verify_rules rules;
    vl__cover *cover;    /* verify_cover.c, when there is a manifest */
    vl_sim_scratch *sim; /* memory, when there is a cost model */
    /* scratch */
    uint32_t *gpus;
    size_t gpus_cap;
    uint32_t *dps;
    size_t dps_cap;
    uint32_t *sort_tmp;
    size_t sort_tmp_cap; /* radix sort of many GPU ids */
    int64_t *fpos;
    size_t fpos_cap;
    int64_t *bpos;
    size_t bpos_cap;
    vl_interval *iv;
    size_t iv_cap;
} vl_vctx;

/** Count a violation of invariant inv (1..5); the first VL_VERIFY_MAX_MSGS are kept. */
void vl__violation(vl_verify_report *rep, int inv, const char *fmt, ...) VL_VPRINTF(3, 4);
/** A message that counts nothing (a summary of counted violations). */
void vl__note(vl_verify_report *rep, const char *fmt, ...) VL_VPRINTF(2, 3);
/** "sample 42 (id "abc")", the id shortened if long; "sample 42" without a manifest. */
void vl__sample_name(const vl_plan *p, uint32_t s, char *buf, size_t cap);

/* verify_config.c: what the config and the plan's strategy permit -- the limits (looked
 * up once; a config the strategy refuses is a violation), each pack's capacity, and at
 * the end the epochs and the dropped ranges */
vl_status vl__limits_init(vl_vctx *v, const vl_plan *p, vl_err *err);
void vl__check_cap(vl_vctx *v, uint32_t r, const char *what, uint32_t j, const vl_mb *mb);
vl_status vl__config_finish(vl_vctx *v, vl_err *err);

/* verify_cover.c: each epoch's coverage, closed at the end with the dropped ranges */
vl_status vl__cover_new(vl__cover **out, const vl_manifest *m, vl_err *err);
vl_status vl__cover_iter(vl__cover *c, const vl_plan *p, size_t it, vl_verify_report *rep,
                         vl_err *err);
/** Close every epoch; slices (vl_slices) says where the strategy may slice a sample,
 *  piece the length of a piece under VL_SLICES_PIECES (0: unknown). */
vl_status vl__cover_finish(vl__cover *c, const vl_plan *p, int slices, uint32_t piece,
                           vl_verify_report *rep, vl_err *err);
void vl__cover_free(vl__cover *c);

/* verify_order.c: slices, backward packs and schedules of iteration it */
vl_status vl__order_iter(vl_vctx *v, size_t it, vl_err *err);

/* verify_layout.c: ranges, placement and shared packs of iteration it; at the end, the
 * capabilities used against those declared */
vl_status vl__layout_iter(vl_vctx *v, size_t it, vl_err *err);
void vl__layout_finish(vl_vctx *v);

#endif
