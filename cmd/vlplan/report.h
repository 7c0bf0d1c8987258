/* cmd/vlplan/report.h -- the --format option shared by the reporting commands. */
#ifndef VLPLAN_REPORT_H
#define VLPLAN_REPORT_H

#include <stdio.h>

typedef enum { FMT_TABLE, FMT_JSON, FMT_CSV, FMT_MD, FMT_MDOC, FMT_COUNT } report_format;

/** Parse --format against allowed (a mask of 1 << FMT_*); 0 or EX_USAGE_. */
int report_parse_format(const char *cmd, const char *s, unsigned allowed, report_format *out);

#endif
