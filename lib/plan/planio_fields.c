/* lib/plan/planio_fields.c -- every key of an iteration record, one row each, in the order
 * the writer prints them (docs/decisions.md §7).  The writer walks it to print a record, the reader
 * to read one (defaults for what a plan from another tool leaves out), and verify to
 * range-check the integer fields: a new field is one row here plus its meaning.  The lists
 * are rows too, with what they hold (vl_parray), and the header's and footer's members a
 * table of their own: together the schema `vlplan schema` exports (planio_schema.c) and
 * the Python reader checks against (python/vlplan/plan_schema.json). */
#include <stddef.h>

#include "planio.h"

#define I32(key, lvl, type, field, lo, hi, def, omit, inv, claim)                             \
    {                                                                                         \
        key, lvl, VL_PF_I32, offsetof(type, field), lo, hi, def, omit, inv, false, NULL,      \
            claim                                                                             \
    }
#define U32(key, lvl, type, field, lo, hi, def, omit, inv, claim)                             \
    {                                                                                         \
        key, lvl, VL_PF_U32, offsetof(type, field), lo, hi, def, omit, inv, false, NULL,      \
            claim                                                                             \
    }
/* a count the record claims (checked against what its segments show) */
#define COUNT(key, lvl, kind, claim)                                                          \
    {                                                                                         \
        key, lvl, kind, 0, 0, VL_PF_COUNT_MAX, 0, false, 0, false, NULL, claim                \
    }
#define LIST(key, lvl, kind, req, arr)                                                        \
    {                                                                                         \
        key, lvl, kind, 0, 0, 0, 0, false, 0, req, &arr, VL_PC_NONE                           \
    }

/* ---- the lists: their elements, for the table below and the hand parsers ---- */

const char vl_pf_op_names[] = "FRB";

static const vl_pitem seg_items[] = {
    {"id", VL_PT_ID, 0, 0, NULL},
    {"offset", VL_PT_INT, 0, UINT32_MAX, NULL},
    {"length", VL_PT_INT, 0, UINT32_MAX, NULL},
    {"cp", VL_PT_INT, VL_CP_SHARDED, INT16_MAX, NULL}, /* optional: VL_CP_SHARDED if absent */
};
static const vl_pitem op_items[] = {
    {"kind", VL_PT_OP, 0, 0, NULL},
    {"pack", VL_PT_INT, 0, UINT32_MAX, NULL},
};
static const vl_pitem gpu_item[] = {{"gpu", VL_PT_INT, 0, UINT32_MAX - 1, NULL}};
static const vl_pitem dp_item[] = {{"dp", VL_PT_INT, 0, INT32_MAX, NULL}};
static const vl_pitem cu_item[] = {{"offset", VL_PT_INT, 0, VL_PF_COUNT_MAX, NULL}};
static const char *const drop_reasons[] = {"oversize", "truncated", NULL};
static const vl_pitem drop_items[] = {
    {"id", VL_PT_ID, 0, 0, NULL},
    {"offset", VL_PT_INT, 0, UINT32_MAX, NULL},
    {"length", VL_PT_INT, 0, UINT32_MAX, NULL},
    {"reason", VL_PT_NAME, 0, 0, drop_reasons}, /* in vl_drop_reason order */
};

const vl_parray vl_pf_seg = {VL_PA_TUPLES, seg_items, 3, 4, 0, 0, VL_PR_CP_BELOW_SP};
const vl_parray vl_pf_gpus = {VL_PA_INTS, gpu_item, 1, 1, 1, 0, VL_PR_RANK_SIZE};
const vl_parray vl_pf_shared = {VL_PA_INTS, dp_item, 1, 1, 2, 0, VL_PR_DISTINCT_SELF};
const vl_parray vl_pf_schedule = {VL_PA_TUPLES, op_items, 2, 2, 0, 0, VL_PR_NAMES_PACK};
const vl_parray vl_pf_cu = {VL_PA_INTS, cu_item, 1, 1, 1, 0, VL_PR_PREFIX_SUMS};
const vl_parray vl_pf_dropped = {VL_PA_TUPLES, drop_items, 4, 4, 0, 0, VL_PR_NONE};
static const vl_parray ranks = {VL_PA_RECORDS, NULL, 0, 0, 1, VL_PF_RANK, VL_PR_NONE};
static const vl_parray mbs = {VL_PA_RECORDS, NULL, 0, 0, 0, VL_PF_MB, VL_PR_NONE};
static const vl_parray bwd = {VL_PA_RECORDS, NULL, 0, 0, 0, VL_PF_MB, VL_PR_BWD_TOKENS};

const vl_pfield vl_plan_fields[] = {
    /* {"type":"iter", ...} */
    COUNT("it", VL_PF_ITER, VL_PF_IT, VL_PC_POSITION),
    U32("epoch", VL_PF_ITER, vl_iter, epoch, 0, UINT32_MAX, 0, false, 5, VL_PC_EPOCH),
    COUNT("tokens", VL_PF_ITER, VL_PF_TOKENS, VL_PC_SUM_TOKENS),
    COUNT("loss_tokens", VL_PF_ITER, VL_PF_LOSS, VL_PC_LOSS),
    COUNT("samples", VL_PF_ITER, VL_PF_SAMPLES, VL_PC_NONE),
    I32("candidate", VL_PF_ITER, vl_iter, candidate, 0, INT32_MAX, -1, true, 5, VL_PC_NONE),
    LIST("ranks", VL_PF_ITER, VL_PF_RANKS, true, ranks),
    /* a rank */
    I32("dp", VL_PF_RANK, vl_rank, dp, 0, INT32_MAX, VL_PF_DEF_INDEX, false, 5, VL_PC_NONE),
    I32("tp", VL_PF_RANK, vl_rank, par.tp, 1, INT32_MAX, 1, false, 3, VL_PC_NONE),
    I32("pp", VL_PF_RANK, vl_rank, par.pp, 1, INT32_MAX, 1, false, 3, VL_PC_NONE),
    I32("sp", VL_PF_RANK, vl_rank, par.sp, 1, INT32_MAX, 1, false, 3, VL_PC_NONE),
    I32("ckpt_layers", VL_PF_RANK, vl_rank, par.ckpt_layers, 0, INT32_MAX, 0, false, 3,
        VL_PC_NONE),
    LIST("gpus", VL_PF_RANK, VL_PF_GPUS, false, vl_pf_gpus),
    I32("group", VL_PF_RANK, vl_rank, group, 0, INT32_MAX, -1, true, 5, VL_PC_NONE),
    U32("k", VL_PF_RANK, vl_rank, k, 1, UINT32_MAX, 0, true, 5, VL_PC_NONE),
    LIST("mbs", VL_PF_RANK, VL_PF_MBS, true, mbs),
    LIST("bwd", VL_PF_RANK, VL_PF_BWD, false, bwd),
    LIST("schedule", VL_PF_RANK, VL_PF_SCHEDULE, false, vl_pf_schedule),
    /* a forward or backward pack */
    LIST("seg", VL_PF_MB, VL_PF_SEG, true, vl_pf_seg),
    LIST("cu_seqlens", VL_PF_MB, VL_PF_CU, false, vl_pf_cu),
    COUNT("tokens", VL_PF_MB, VL_PF_TOKENS, VL_PC_SUM_TOKENS),
    U32("cap", VL_PF_MB, vl_mb, cap, 0, UINT32_MAX, VL_PF_DEF_TOKENS, false, 3, VL_PC_CAP),
    LIST("shared", VL_PF_MB, VL_PF_SHARED, false, vl_pf_shared),
    {NULL, 0, 0, 0, 0, 0, 0, false, 0, false, NULL, VL_PC_NONE},
};

/* ---- header and footer ---- */

static const char *const schemas[] = {VL_PLAN_SCHEMA, NULL};
static const char *const shards[] = {"replicas", "world", NULL};

#define META(rec, key, type, lo, hi, values)                                                  \
    {                                                                                         \
        rec, key, type, lo, hi, values, NULL                                                  \
    }
const vl_pmeta vl_plan_meta[] = {
    META("header", "schema", VL_PM_STRING, 0, 0, schemas),
    META("header", "vlplan", VL_PM_STRING, 0, 0, NULL),
    META("header", "strategy", VL_PM_STRING, 0, VL_STRATEGY_NAME_MAX - 1, NULL),
    META("header", "seed", VL_PM_COUNT, 0, VL_PF_COUNT_MAX, NULL),
    META("header", "params", VL_PM_OBJECT, 0, 0, NULL),
    META("header", "config", VL_PM_OBJECT, 0, 0, NULL),
    META("header", "manifest", VL_PM_OBJECT, 0, 0, NULL),
    META("header.manifest", "samples", VL_PM_COUNT, 0, VL_PF_COUNT_MAX, NULL),
    META("header.manifest", "tokens", VL_PM_COUNT, 0, VL_PF_COUNT_MAX, NULL),
    META("header.manifest", "sha256", VL_PM_STRING, 0, 0, NULL),
    META("header", "epochs", VL_PM_COUNT, 1, UINT32_MAX, NULL),
    META("header", "iterations", VL_PM_COUNT, 0, VL_PF_COUNT_MAX, NULL),
    META("header", "caps", VL_PM_CAPS, 0, 0, NULL),
    META("header", "optimizer_shard", VL_PM_STRING, 0, 0, shards),
    META("footer", "iterations", VL_PM_COUNT, 0, VL_PF_COUNT_MAX, NULL),
    META("footer", "samples", VL_PM_COUNT, 0, VL_PF_COUNT_MAX, NULL),
    META("footer", "tokens", VL_PM_COUNT, 0, VL_PF_COUNT_MAX, NULL),
    META("footer", "sha256", VL_PM_STRING, 0, 0, NULL),
    {"footer", "dropped", VL_PM_LIST, 0, 0, NULL, &vl_pf_dropped},
    {NULL, NULL, 0, 0, 0, NULL, NULL},
};
