/* cmd/vlplan/numfmt.c -- numbers as tables print them: thousands separated, fixed
 * decimals, never e-notation (cli.h).  CSV and JSON keep plain numbers. */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "figures.h"

const char *cli_count(uint64_t v, char *buf, size_t cap)
{
    return cli_fixed((double)v, 0, buf, cap);   /* exact below 2^53 */
}

const char *cli_fixed(double v, int prec, char *buf, size_t cap)
{
    figure g = {.prec = prec, .scale = 1.0};

    return fig_format(&g, v, buf, cap);
}

