/* cmd/vlplan/report.c -- the --format option (report.h). */
#include "report.h"

#include <string.h>

#include "cli.h"

static const char *const format_names[FMT_COUNT] = {"table", "json", "csv", "md", "mdoc"};

int report_parse_format(const char *cmd, const char *s, unsigned allowed, report_format *out)
{
    for (int i = 0; i < FMT_COUNT; i++)
        if ((allowed & (1u << i)) && strcmp(s, format_names[i]) == 0) {
            *out = (report_format)i;
            return 0;
        }
    char list[64] = "";
    for (int i = 0; i < FMT_COUNT; i++)
        if (allowed & (1u << i)) {
            if (list[0])
                strcat(list, ", ");
            strcat(list, format_names[i]);
        }
    cli_error(cmd, "invalid value '%s' for --format (expected one of: %s)", s, list);
    return EX_USAGE_;
}
