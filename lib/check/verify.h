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

#include <stdbool.h>
#include <stdint.h>

#include "cost.h"
#include "plan.h"
#include "plan_file.h"

#define VL_VERIFY_MAX_MSGS 64

/* Where a strategy may cut a sample into slices (segments of one sample, one epoch):
 * verify holds a plan to it (vl_verify_rules), and an unknown strategy to the strictest
 * (none).  A slice attends to every earlier one, so the format itself never lets the
 * slices of one iteration sit on two ranks, nor a later slice run in an earlier
 * iteration. */
typedef enum {
    VL_SLICES_NONE = 0,  /* every sample whole, in one segment */
    VL_SLICES_RANK = 1,  /* slices on one rank of one iteration (ChunkFlow, SlimPack) */
    VL_SLICES_ITERS = 2, /* also across iterations, in token order (no strategy yet) */
    VL_SLICES_PIECES = 3 /* training.oversize=split (pack): a sample over
                           * training.max_seq_len cut into independent pieces [kC, kC + C),
                           * never two on one rank of an iteration; shorter ones whole */
} vl_slices;

/* Which ranks may share a pack (VL_CAP_SHARED): verify holds a plan to it. */
typedef enum {
    VL_SHARES_ANY = 0, /* any ranks of the iteration (the format's own rules) */
    VL_SHARES_RUN = 1, /* a run of consecutive dp values in order (SlimPack's
                           * DP-Merge groups of contiguous ranks) */
    VL_SHARES_POW2 = 2 /* such a run of a power of two (mcore_cp: Megatron's CP
                           * groups; its barrier over every rank, a power of two too) */
} vl_shares;

/* What the plan's strategy permits, which a plan cannot state for itself (a relabelled
 * plan would grant itself anything): filled by the caller's rules source for the name
 * the plan carries -- plans/registry.c's vl_registry_rules, from the strategy table.
 * The verifier never looks a strategy up itself: lib/ never reaches plans/. */
typedef struct vl_verify_rules {
    bool known;       /* the source has the strategy: a plan of it that states its
                           * capabilities declares all of caps */
    uint32_t caps;    /* VL_CAP_* it may use (~0u: whatever the plan declares) */
    vl_slices slices; /* where it may slice a sample */
    vl_shares shares; /* which ranks may share a pack */
    bool idles;       /* it may leave GPUs out of an iteration (vl_strategy.idles) */
    /* under the config checked against (none without one) */
    uint32_t len_limit;          /* the longest sample it places, 0: unknown */
    uint64_t cap_limit;          /* the largest pack capacity it writes, 0: unknown */
    char refused[VL_ERRMSG_MAX]; /* non-empty: it refuses the config, and why (a
                           * violation) */
} vl_verify_rules;

/* Where the verifier gets the rules: fill(ctx, name, cfg, out, err) for the strategy the
 * plan names under cfg (NULL: no config), VL_OK or VL_ENOMEM.  A NULL source: the
 * format's own rules only (any capability the plan declares, slices anywhere in token
 * order, no limits) -- for plans of no known strategy table. */
typedef struct vl_rules_source {
    vl_status (*fill)(void *ctx, const char *strategy, const vl_config *cfg,
                      vl_verify_rules *out, vl_err *err);
    void *ctx;
} vl_rules_source;

/* Where the first iteration over device memory is, for a message that says what would
 * fit (the runner's refusal). */
typedef struct vl_verify_oom {
    size_t iter;          /* plan iteration number */
    uint32_t rank, stage; /* rank index within the iteration, pipeline stage */
    double gib, usable_gib;
} vl_verify_oom;

typedef struct vl_verify_report {
    size_t violations;       /* total found */
    size_t oom_iters;        /* of which: iterations over device memory (I3) */
    vl_verify_oom first_oom; /* meaningful when oom_iters > 0 */
    uint64_t oom_msgs;       /* bit i: msgs[i] is a memory violation */
    size_t by_inv[5];        /* violations of invariants I1..I5 */
    size_t nmsgs;            /* first VL_VERIFY_MAX_MSGS, one line each, each
                                            * naming its invariant and place */
    char msgs[VL_VERIFY_MAX_MSGS][256];
} vl_verify_report;

/* The checker an iteration at a time, for plans read that way (vl_plan_read_each):
 * vl_verifier_new, vl_verifier_iter after every iteration, vl_verifier_finish with the
 * plan as it ends (header, dropped ranges) and what its file claimed.  rep must outlive
 * the verifier.  Memory: per epoch two bits per manifest sample and the slices, plus one
 * iteration's scratch. */
typedef struct vl_verifier vl_verifier;
/** m: the manifest (coverage checked when non-NULL); cost and rules as for
 *  vl_plan_verify. */
vl_status vl_verifier_new(vl_verifier **out, const vl_manifest *m, const vl_cost *cost,
                          const vl_rules_source *rules, vl_verify_report *rep, vl_err *err);
/** Check iteration it of p (its number is p->iter_base + it).  VL_ENOMEM. */
vl_status vl_verifier_iter(vl_verifier *v, const vl_plan *p, size_t it, vl_err *err);
/** The checks that need the whole plan; VL_OK, VL_EVERIFY (the report filled), VL_ENOMEM.
 *  file: what a plan file claimed, NULL for a plan built in memory. */
vl_status vl_verifier_finish(vl_verifier *v, const vl_plan *p, const vl_plan_file *file,
                             vl_err *err);
void vl_verifier_free(vl_verifier *v); /* NULL: no-op */
/** Count a violation of I5 found outside the plan's records, in the caller's words
 *  (msg, one line): a header config that disagrees with the one checked against. */
void vl_verifier_violation(vl_verifier *v, const char *msg);

/** Check a plan built in memory against its manifest p->m; with cost (non-NULL) also the
 *  modelled memory and the cluster's limits (GPUs, layers); with rules (non-NULL) what
 *  the plan's strategy permits (vl_verify_rules).  Returns VL_OK, VL_EVERIFY (rep
 *  filled), or VL_ENOMEM. */
vl_status vl_plan_verify(const vl_plan *p, const vl_cost *cost, const vl_rules_source *rules,
                         vl_verify_report *rep, vl_err *err);

/** The same for a plan read from a file, with what the file claimed and what its reader
 *  found (file, from vl_plan_read). */
vl_status vl_plan_verify_read(const vl_plan *p, const vl_plan_file *file, const vl_cost *cost,
                              const vl_rules_source *rules, vl_verify_report *rep,
                              vl_err *err);

#endif
