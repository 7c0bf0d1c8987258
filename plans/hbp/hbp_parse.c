/* plans/hbp/hbp_parse.c -- the list-valued HBP parameters (hbp.groups, hbp.candidates,
 * hbp.sp_degrees): "16K,128K:8:4" into hbp_spec entries.  A leaf: the driver (hbp.c)
 * and the auto-selection (hbp_groups.c) both parse, it calls neither. */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hbp_impl.h"

static int why_fail(char *why, size_t cap, const char *msg, const char *at)
{
    size_t k = strcspn(at, ",");

    snprintf(why, cap, "%s at '%.*s'", msg, (int)(k > 24 ? 24 : k), at);
    return -1;
}

/* A positive integer with an optional K/M suffix when `scaled`; *p advances. */
static int parse_num(const char **p, bool scaled, unsigned long *out)
{
    char *end;
    unsigned long v;

    if (!isdigit((unsigned char)**p))
        return -1;
    errno = 0;
    v = strtoul(*p, &end, 10);
    if (errno != 0 || v > VL_MAX_SAMPLE_LEN)
        return -1;
    if (scaled && (*end == 'K' || *end == 'k' || *end == 'M' || *end == 'm')) {
        unsigned long mul = (*end == 'K' || *end == 'k') ? 1024ul : 1048576ul;
        if (v > VL_MAX_SAMPLE_LEN / mul)
            return -1;
        v *= mul;
        end++;
    }
    *p = end;
    *out = v;
    return 0;
}

static void skip_spaces(const char **p)
{
    while (**p == ' ')
        (*p)++;
}

int vl__hbp_parse_list(const char *s, bool specs, hbp_spec *out, size_t max, size_t *n,
                       char *why, size_t cap)
{
    const char *p = s;

    *n = 0;
    for (;;) {
        const char *at;
        unsigned long v;
        skip_spaces(&p);
        at = p;
        if (*n == max)
            return why_fail(why, cap, "more than 16 entries", at);
        if (parse_num(&p, true, &v) != 0 || v < 1)
            return why_fail(why, cap, "expected a positive length such as 16384 or 16K", at);
        out[*n] = (hbp_spec){.len = (uint32_t)v, .sp = HBP_AUTO, .ckpt = HBP_AUTO};
        for (int part = 0; specs && part < 2 && *p == ':'; part++) {
            p++;
            if (parse_num(&p, false, &v) != 0 || v > 1000000)
                return why_fail(why, cap, part ? "bad ckpt_layers" : "bad SP degree", at);
            if (part == 0 && v < 1)
                return why_fail(why, cap, "bad SP degree", at);
            *(part ? &out[*n].ckpt : &out[*n].sp) = (int)v;
        }
        (*n)++;
        skip_spaces(&p);
        if (*p == '\0')
            return 0;
        if (*p != ',')
            return why_fail(why, cap, "expected ',' between entries", p);
        p++;
    }
}
