/* lib/data/drop.h -- tokens of a manifest's samples that a plan never places, and why:
 * the sampler finds them (training.oversize), the plan records them (lib/plan/plan.h). */
#ifndef VLPLAN_DROP_H
#define VLPLAN_DROP_H

#include <stdint.h>

typedef enum { VL_DROP_OVERSIZE = 0, VL_DROP_TRUNCATED = 1 } vl_drop_reason;
typedef struct vl_drop {
    uint32_t sample, off, len; /* tokens [off, off+len) of sample never planned, any epoch */
    uint8_t reason;            /* vl_drop_reason */
} vl_drop;

#endif
