/* cmd/vlplan/numfmt.c -- numbers as tables print them: thousands separated, fixed
 * decimals, never e-notation (cli.h).  CSV and JSON keep plain numbers. */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "figures.h"

const char *cli_count(uint64_t v, char *buf, size_t cap)
{
    return cli_fixed((double)v, 0, buf, cap); /* exact below 2^53 */
}

const char *cli_plain(double v, char *buf, size_t cap)
{
    char *e;

    snprintf(buf, cap, "%.10f", v);
    if (strchr(buf, '.')) { /* 0.2500000000 -> 0.25, 3.0000000000 -> 3 */
        for (e = buf + strlen(buf) - 1; *e == '0'; e--)
            *e = '\0';
        if (*e == '.')
            *e = '\0';
    }
    return buf;
}

const char *cli_fixed(double v, int prec, char *buf, size_t cap)
{
    figure g = {.prec = prec, .scale = 1.0};

    return fig_format(&g, v, buf, cap);
}
