/* cmd/vlplan/compare_out.h -- `compare` output: a table, JSON, CSV or Markdown of the
 * rows' work and figures, written to the terminal and to export files from one run, and
 * the chart (SVG) and report (HTML, compare_html.c) of the same rows. */
#ifndef VLPLAN_COMPARE_OUT_H
#define VLPLAN_COMPARE_OUT_H

#include <stddef.h>
#include <stdio.h>

#include "compare_work.h"
#include "evaluate.h"
#include "report.h"

/** Print res[0..n-1] in fmt.  JSON: {"compared":{...}, "strategies":[{"label":...,
 *  "strategy":..., "scope":..., "refused":..., work and figures...}]}.  0 or an exit code. */
int compare_print(FILE *f, const char *cmd, report_format fmt, const compare_ctx *ctx,
                  const eval_result *res, size_t n);

/** The same into path, written atomically.  0 or an exit code. */
int compare_export(const char *cmd, const char *path, report_format fmt,
                   const compare_ctx *ctx, const eval_result *res, size_t n);

/** A small panel per figure, a bar per row (each figure scaled to its largest value),
 *  under a heading that says what was compared, into path.  0 or an exit code. */
int compare_svg(const char *cmd, const char *path, const compare_ctx *ctx,
                const eval_result *res, size_t n);
/** The chart as text (malloc'd) for the report.  VL_ENOMEM. */
vl_status compare_svg_text(const compare_ctx *ctx, const eval_result *res, size_t n,
                           char **out, vl_err *err);

/** The self-contained HTML report (compare_html.c).  0 or an exit code. */
int compare_html(const char *cmd, const char *path, const compare_ctx *ctx,
                 const eval_result *res, size_t n);

/** "batch" or "epoch". */
const char *compare_scope_name(const eval_result *r);
/** "yes", "NO", "refused" or "-" (not simulated). */
const char *compare_fits_word(const eval_result *r);

#endif
