/* cmd/vlplan/check_expr.c -- `compare --check` conditions (check_expr.h). */
#include "check_expr.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const ops[] = {"<=", ">=", "==", "!=", "<", ">", NULL};

/* Locate the comparison operator; two-character operators are tried first. */
static const char *find_op(const char *expr, const char **op)
{
    for (const char *p = expr; *p; p++)
        for (int i = 0; ops[i]; i++)
            if (strncmp(p, ops[i], strlen(ops[i])) == 0) {
                *op = ops[i];
                return p;
            }
    return NULL;
}

/* A number, or LABEL.KEY looked up among the results: 0, -1 malformed or unknown, 2
 * when the row does not fit device memory (and that is not allowed). */
static int operand(const char *s, size_t len, const eval_result *res, size_t n, bool allow_oom,
                   double *v, char *why, size_t whycap)
{
    char buf[128], *end;
    const char *dot;

    while (len && (*s == ' '))
        s++, len--;
    while (len && s[len - 1] == ' ')
        len--;
    if (len == 0 || len >= sizeof buf) {
        snprintf(why, whycap, "empty or overlong operand");
        return -1;
    }
    memcpy(buf, s, len);
    buf[len] = '\0';
    /* strategy names start with a letter; nan and inf are no thresholds */
    if (strchr("0123456789+-.", buf[0])) {
        errno = 0;
        *v = strtod(buf, &end);
        if (*end == '\0' && errno == 0 && isfinite(*v))
            return 0;
        snprintf(why, whycap, "'%s' is not a finite number", buf);
        return -1;
    }
    if (!(dot = strchr(buf, '.'))) {
        snprintf(why, whycap, "'%s' is neither a number nor LABEL.KEY", buf);
        return -1;
    }
    buf[dot - buf] = '\0';
    for (size_t i = 0; i < n; i++)
        if (strcmp(res[i].label, buf) == 0) {
            if (res[i].has_sim && !eval_fits(&res[i]) && !allow_oom) {
                snprintf(why, whycap, "%s does not fit device memory (%zu of %zu iterations "
                         "over, worst %.2f GiB); its figures are no result (--allow-oom "
                         "judges them anyway)", buf, res[i].sim.oom_iters,
                         res[i].sim.iterations, res[i].sim.peak_mem_gib.max);
                return 2;
            }
            if (eval_get(&res[i], dot + 1, v))
                return 0;
            if (strcmp(dot + 1, "speedup") == 0 && res[i].has_sim) {
                snprintf(why, whycap, "%s.speedup is n/a: the first row does not fit device "
                         "memory", buf);
                return 2;
            }
            snprintf(why, whycap, "unknown key '%s' (e.g. abr, dbr, pr, cr, ave_t, "
                                  "iter_time_ms, bubble, peak_mem_gib, epoch_time_s, "
                                  "speedup)", dot + 1);
            return -1;
        }
    snprintf(why, whycap, "'%s' is not among the rows compared", buf);
    return -1;
}

static int holds(double l, const char *op, double r)
{
    if (strcmp(op, "<=") == 0) return l <= r;
    if (strcmp(op, ">=") == 0) return l >= r;
    if (strcmp(op, "==") == 0) return l == r;
    if (strcmp(op, "!=") == 0) return l != r;
    if (strcmp(op, "<") == 0) return l < r;
    return l > r;
}

int check_expr(const char *expr, const eval_result *results, size_t n, bool allow_oom,
               char *why, size_t whycap)
{
    const char *op = NULL, *at = find_op(expr, &op);
    double l, r;
    int a, b;

    if (!at) {
        snprintf(why, whycap, "no comparison (<, <=, >, >=, ==, !=)");
        return -1;
    }
    a = operand(expr, (size_t)(at - expr), results, n, allow_oom, &l, why, whycap);
    if (a == -1)
        return -1;
    b = a ? 0 : operand(at + strlen(op), strlen(at + strlen(op)), results, n, allow_oom, &r,
                        why, whycap);
    if (b == -1)
        return -1;
    if (a == 2 || b == 2)
        return 0;
    if (holds(l, op, r))
        return 1;
    snprintf(why, whycap, "%.6g %s %.6g is false", l, op, r);
    return 0;
}
