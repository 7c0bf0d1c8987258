/* cmd/vlplan/check_expr.c -- `compare --check` conditions (check_expr.h). */
#include "check_expr.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "figures.h"

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

/* Why row r cannot be judged on key, or NULL: refused, over memory, less work. */
static int unjudged(const eval_result *r, const char *key, check_allow allow, char *why,
                    size_t whycap)
{
    if (r->refused) {
        snprintf(why, whycap, "%s was refused: %s", r->label, r->why);
        return 2;
    }
    if (eval_work_key(key))
        return 0;
    if (r->ev.has_sim && !eval_fits(r) && !allow.oom) {
        snprintf(why, whycap,
                 "%s does not fit device memory (%zu of %zu iterations over, "
                 "worst %.2f GiB); its figures are no result (--allow-oom judges them "
                 "anyway)",
                 r->label, r->ev.sim.oom_iters, r->ev.sim.iterations,
                 r->ev.sim.peak_mem_gib.max);
        return 2;
    }
    if (r->less_work && !allow.dropped) {
        snprintf(why, whycap,
                 "%s planned %.1f%% of the tokens of the row planning the most; "
                 "its figures are for less work (--allow-dropped judges them anyway)",
                 r->label, 100.0 * r->token_share);
        return 2;
    }
    return 0;
}

/* A number, batch or epoch, or LABEL.KEY looked up among the results: 0, -1 malformed
 * or unknown, 2 when the row cannot be judged (unjudged says why). */
static int operand(const char *s, size_t len, const eval_result *res, size_t n,
                   check_allow allow, double *v, const char **key, char *why, size_t whycap)
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
    if (strcmp(buf, "batch") == 0 || strcmp(buf, "epoch") == 0) {
        *v = buf[0] == 'e';
        return 0;
    }
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
            int u;
            if (!fig_find(dot + 1) && !eval_work_key(dot + 1) &&
                !eval_get(&res[i], dot + 1, v)) {
                snprintf(why, whycap,
                         "unknown key '%s' (e.g. abr, dbr, pr, cr, ave_t, "
                         "iter_time_ms, bubble, peak_mem_gib, epoch_time_s, "
                         "speedup, fits, tokens, dropped_tokens, iterations, "
                         "scope)",
                         dot + 1);
                return -1;
            }
            if ((u = unjudged(&res[i], dot + 1, allow, why, whycap)) != 0)
                return u;
            *key = s + (dot + 1 - buf);
            if (eval_get(&res[i], dot + 1, v))
                return 0;
            snprintf(why, whycap, "%s.%s is n/a: %s", buf, dot + 1,
                     strcmp(dot + 1, "speedup") == 0
                         ? "the baseline row or this one does not fit or planned other work"
                         : "not simulated");
            return 2;
        }
    snprintf(why, whycap, "'%s' is not among the rows compared", buf);
    return -1;
}

static int holds(double l, const char *op, double r)
{
    if (strcmp(op, "<=") == 0)
        return l <= r;
    if (strcmp(op, ">=") == 0)
        return l >= r;
    if (strcmp(op, "==") == 0)
        return l == r;
    if (strcmp(op, "!=") == 0)
        return l != r;
    if (strcmp(op, "<") == 0)
        return l < r;
    return l > r;
}

/* v as the table prints figure key (thousands separated, its decimals); other keys and
 * plain numbers with up to six decimals, never in e-notation. */
static const char *as_table(const char *key, size_t keylen, double v, char *buf, size_t cap)
{
    char k[64];
    const figure *g;

    snprintf(k, sizeof k, "%.*s", (int)(keylen < sizeof k ? keylen : sizeof k - 1), key);
    if (key && (g = fig_find(k)) != NULL)
        return fig_format(g, v, buf, cap);
    cli_fixed(v, v == floor(v) ? 0 : 6, buf, cap);
    if (strchr(buf, '.')) { /* 0.250000 -> 0.25 */
        char *e = buf + strlen(buf) - 1;
        while (*e == '0')
            *e-- = '\0';
    }
    return buf;
}

static size_t key_len(const char *key)
{
    return key ? strcspn(key, " <>=!") : 0;
}

int check_expr(const char *expr, const eval_result *results, size_t n, check_allow allow,
               char *why, size_t whycap)
{
    const char *op = NULL, *at = find_op(expr, &op), *lk = NULL, *rk = NULL;
    char lt[48], rt[48];
    double l, r;
    int a, b;

    if (!at) {
        snprintf(why, whycap, "no comparison (<, <=, >, >=, ==, !=)");
        return -1;
    }
    a = operand(expr, (size_t)(at - expr), results, n, allow, &l, &lk, why, whycap);
    if (a == -1)
        return -1;
    b = a ? 0
          : operand(at + strlen(op), strlen(at + strlen(op)), results, n, allow, &r, &rk, why,
                    whycap);
    if (b == -1)
        return -1;
    if (a == 2 || b == 2)
        return 0;
    if (holds(l, op, r))
        return 1;
    /* a bare number is shown as the figure it is compared with */
    if (!rk)
        rk = lk;
    if (!lk)
        lk = rk;
    snprintf(why, whycap, "%s %s %s is false", as_table(lk, key_len(lk), l, lt, sizeof lt), op,
             as_table(rk, key_len(rk), r, rt, sizeof rt));
    return 0;
}
