/* cmd/vlplan/check_expr.h -- `compare --check` conditions such as 'hbp.abr<=0.01' or
 * 'hbp.epoch_time_s<pack.epoch_time_s': operands are numbers or LABEL.KEY (a row's label,
 * its strategy's name unless it was given one). */
#ifndef VLPLAN_CHECK_EXPR_H
#define VLPLAN_CHECK_EXPR_H

#include <stddef.h>

#include "evaluate.h"

#include <stdbool.h>

/** Evaluate expr over results[0..n-1].  Returns 1 when it holds, 0 when it fails (why[]
 *  then says with what values) -- also when it names a row whose plan exceeds device
 *  memory, unless allow_oom -- and -1 when expr is malformed or names an unknown row or
 *  key (why[] says which). */
int check_expr(const char *expr, const eval_result *results, size_t n, bool allow_oom,
               char *why, size_t whycap);

#endif
