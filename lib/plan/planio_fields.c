/* lib/plan/planio_fields.c -- every key of an iteration record, one row each, in the order
 * the writer prints them (docs/decisions.md §7).  The writer walks it to print a record, the reader
 * to read one (defaults for what a plan from another tool leaves out), and verify to
 * range-check the integer fields: a new field is one row here plus its meaning. */
#include <stddef.h>

#include "planio.h"

#define I32(key, lvl, type, field, lo, hi, def, omit, inv)                                  \
    {key, lvl, VL_PF_I32, offsetof(type, field), lo, hi, def, omit, inv}
#define U32(key, lvl, type, field, lo, hi, def, omit, inv)                                  \
    {key, lvl, VL_PF_U32, offsetof(type, field), lo, hi, def, omit, inv}
#define PART(key, lvl, kind) {key, lvl, kind, 0, 0, 0, 0, false, 0}

const vl_pfield vl_plan_fields[] = {
    /* {"type":"iter", ...} */
    PART("it", VL_PF_ITER, VL_PF_IT),
    U32("epoch", VL_PF_ITER, vl_iter, epoch, 0, UINT32_MAX, 0, false, 5),
    PART("tokens", VL_PF_ITER, VL_PF_TOKENS),
    PART("loss_tokens", VL_PF_ITER, VL_PF_LOSS),
    PART("samples", VL_PF_ITER, VL_PF_SAMPLES),
    I32("candidate", VL_PF_ITER, vl_iter, candidate, 0, INT32_MAX, -1, true, 5),
    PART("ranks", VL_PF_ITER, VL_PF_RANKS),
    /* a rank */
    I32("dp", VL_PF_RANK, vl_rank, dp, 0, INT32_MAX, VL_PF_DEF_INDEX, false, 5),
    I32("tp", VL_PF_RANK, vl_rank, par.tp, 1, INT32_MAX, 1, false, 3),
    I32("pp", VL_PF_RANK, vl_rank, par.pp, 1, INT32_MAX, 1, false, 3),
    I32("sp", VL_PF_RANK, vl_rank, par.sp, 1, INT32_MAX, 1, false, 3),
    I32("ckpt_layers", VL_PF_RANK, vl_rank, par.ckpt_layers, 0, INT32_MAX, 0, false, 3),
    PART("gpus", VL_PF_RANK, VL_PF_GPUS),
    I32("group", VL_PF_RANK, vl_rank, group, 0, INT32_MAX, -1, true, 5),
    U32("k", VL_PF_RANK, vl_rank, k, 1, UINT32_MAX, 0, true, 5),
    PART("mbs", VL_PF_RANK, VL_PF_MBS),
    PART("bwd", VL_PF_RANK, VL_PF_BWD),
    PART("schedule", VL_PF_RANK, VL_PF_SCHEDULE),
    /* a forward or backward pack */
    PART("seg", VL_PF_MB, VL_PF_SEG),
    PART("cu_seqlens", VL_PF_MB, VL_PF_CU),
    PART("tokens", VL_PF_MB, VL_PF_TOKENS),
    U32("cap", VL_PF_MB, vl_mb, cap, 0, UINT32_MAX, VL_PF_DEF_TOKENS, false, 3),
    PART("shared", VL_PF_MB, VL_PF_SHARED),
    {NULL, 0, 0, 0, 0, 0, 0, false, 0},
};
