/* cmd/vlplan/check_expr.h -- `compare --check` conditions such as 'hbp.abr<=0.01' or
 * 'hbp.epoch_time_s<pack.epoch_time_s': operands are numbers or LABEL.KEY (a row's label,
 * its strategy's name unless it was given one). */
#ifndef VLPLAN_CHECK_EXPR_H
#define VLPLAN_CHECK_EXPR_H

#include <stddef.h>

#include "evaluate.h"

#include <stdbool.h>

/* What a check may judge beyond plans that fit and planned the most tokens. */
typedef struct check_allow {
    bool oom;     /* --allow-oom: rows over device memory */
    bool dropped; /* --allow-dropped: rows that planned fewer tokens */
} check_allow;

/** Evaluate expr over results[0..n-1].  Returns 1 when it holds, 0 when it fails (why[]
 *  then says with what values, as the table prints them) -- also when it names a row the
 *  strategy refused, a row whose plan exceeds device memory (unless allow.oom) or one
 *  that planned fewer tokens than the most (unless allow.dropped), except for the keys
 *  that state the work itself (eval_work_key) -- and -1 when expr is malformed or names
 *  an unknown row or key (why[] says which).  The words batch and epoch stand for the
 *  values of scope (0 and 1). */
int check_expr(const char *expr, const eval_result *results, size_t n, check_allow allow,
               char *why, size_t whycap);

#endif
