/* lib/config/config_value.c -- typed scalars of the config and of strategy sections: integers,
 * numbers, booleans, enum names, curves, each checked against its range, and the one
 * error format "NAME:LINE:COL: key.path: expected ..., got '...'". */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "config_impl.h"

void vl__oneline(vl_err *err)
{
    if (err == NULL)
        return;
    for (char *p = err->msg; *p != '\0'; p++)
        if ((unsigned char)*p < 0x20 || *p == 0x7f)
            *p = '?'; /* a key or value with a newline must not split the message */
}

vl_status vl__verr(const vl_vloc *loc, const vl_ynode *at, const char *fmt, ...)
{
    char msg[VL_ERRMSG_MAX];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (loc->doc == NULL)
        vl_seterr(loc->err, VL_ECONFIG, "%s: %s", loc->path, msg);
    else if (loc->doc->marks && at != NULL && at->line > 0)
        vl_seterr(loc->err, VL_ECONFIG, "%s:%d:%d: %s: %s", loc->doc->name, at->line, at->col,
                  loc->path, msg);
    else
        vl_seterr(loc->err, VL_ECONFIG, "%s: %s: %s", loc->doc->name, loc->path, msg);
    vl__oneline(loc->err);
    return VL_ECONFIG;
}

/* How a value is shown after "got": its text (quotes kept visible when it was quoted,
 * since then it is a string), or the kind of collection. */
static const char *shown(const vl_ynode *v, char *buf, size_t n)
{
    if (v == NULL || v->kind == VL_YMAP)
        return "a mapping";
    if (v->kind == VL_YSEQ)
        return "a sequence";
    if (strlen(v->text) > 60)
        snprintf(buf, n, "'%.57s...'", v->text);
    else if (v->quoted)
        snprintf(buf, n, "'\"%s\"'", v->text);
    else
        snprintf(buf, n, "'%s'", v->text);
    return buf;
}

static vl_status type_err(const vl_vloc *loc, const vl_ynode *v, const char *what)
{
    char buf[80];

    return vl__verr(loc, v, "expected %s, got %s", what, shown(v, buf, sizeof buf));
}

static bool is_plain(const vl_ynode *v)
{
    return v != NULL && v->kind == VL_YSCALAR && !v->quoted;
}

/* Digits with an optional sign: the only integer spelling accepted (no 0x, no 1e3). */
static bool int_text(const char *s)
{
    if (*s == '+' || *s == '-')
        s++;
    if (*s == '\0')
        return false;
    return strspn(s, "0123456789") == strlen(s);
}

static vl_status range_err(const vl_vloc *loc, const vl_ynode *v, double min, double max,
                           bool integer)
{
    if (integer)
        return vl__verr(loc, v, "expected %.0f..%.0f, got %s", min, max, v->text);
    return vl__verr(loc, v, "expected %g..%g, got %s", min, max, v->text);
}

vl_status vl__val_int(const vl_vloc *loc, const vl_ynode *v, double min, double max,
                      long long *out)
{
    long long x;
    char *end;

    if (!is_plain(v) || !int_text(v->text))
        return type_err(loc, v, "an integer");
    errno = 0;
    x = strtoll(v->text, &end, 10);
    if (errno == ERANGE || (double)x < min || (double)x > max)
        return range_err(loc, v, min, max, true);
    *out = x;
    return VL_OK;
}

vl_status vl__val_uint(const vl_vloc *loc, const vl_ynode *v, double min, double max,
                       unsigned long long *out)
{
    unsigned long long x;
    char *end;

    if (!is_plain(v) || !int_text(v->text))
        return type_err(loc, v, "an integer");
    if (v->text[0] == '-')
        return range_err(loc, v, min, max, true);
    errno = 0;
    x = strtoull(v->text, &end, 10);
    if (errno == ERANGE || (double)x < min || (double)x > max)
        return range_err(loc, v, min, max, true);
    *out = x;
    return VL_OK;
}

vl_status vl__val_double(const vl_vloc *loc, const vl_ynode *v, double min, double max,
                         double *out)
{
    double x;
    char *end;

    /* strtod alone would also take "nan", "inf" and hex floats */
    if (!is_plain(v) || v->text[0] == '\0' ||
        strspn(v->text, "0123456789+-.eE") != strlen(v->text))
        return type_err(loc, v, "a number");
    errno = 0;
    x = strtod(v->text, &end);
    if (*end != '\0')
        return type_err(loc, v, "a number");
    if (errno == ERANGE || !isfinite(x) || x < min || x > max)
        return range_err(loc, v, min, max, false);
    *out = x;
    return VL_OK;
}

vl_status vl__val_bool(const vl_vloc *loc, const vl_ynode *v, bool *out)
{
    static const char *const yes[] = {"true", "yes", "on"};
    static const char *const no[] = {"false", "no", "off"};

    if (is_plain(v))
        for (size_t i = 0; i < 3; i++) {
            if (strcasecmp(v->text, yes[i]) == 0) {
                *out = true;
                return VL_OK;
            }
            if (strcasecmp(v->text, no[i]) == 0) {
                *out = false;
                return VL_OK;
            }
        }
    return type_err(loc, v, "true or false");
}

void vl__join(const char *const *names, char *buf, size_t n)
{
    size_t len = 0;

    buf[0] = '\0';
    for (size_t i = 0; names[i] != NULL && len < n; i++) {
        int w = snprintf(buf + len, n - len, "%s%s", i ? ", " : "", names[i]);
        if (w < 0)
            break;
        len += (size_t)w;
    }
}

vl_status vl__val_enum(const vl_vloc *loc, const vl_ynode *v, const char *const *choices,
                       int *out)
{
    char list[400], what[420];

    if (v != NULL && v->kind == VL_YSCALAR)
        for (int i = 0; choices[i] != NULL; i++)
            if (strcmp(v->text, choices[i]) == 0) {
                *out = i;
                return VL_OK;
            }
    vl__join(choices, list, sizeof list);
    snprintf(what, sizeof what, "one of %s", list);
    return type_err(loc, v, what);
}

vl_status vl__val_name(const vl_vloc *loc, const vl_ynode *v, char out[VL_NAME_MAX])
{
    char what[64];

    if (v == NULL || v->kind != VL_YSCALAR || v->text[0] == '\0' ||
        strlen(v->text) >= VL_NAME_MAX) {
        snprintf(what, sizeof what, "a name of 1..%d characters", VL_NAME_MAX - 1);
        return type_err(loc, v, what);
    }
    strcpy(out, v->text);
    return VL_OK;
}

/* One [x, y] point of a curve: x > 0 tokens, 0 < y <= 1. */
static vl_status curve_point(const vl_vloc *loc, const vl_ynode *p, double *x, double *y)
{
    vl_status st;

    if (p->kind != VL_YSEQ || p->n != 2)
        return type_err(loc, p, "a pair [tokens, efficiency]");
    if ((st = vl__val_double(loc, p->kids[0], 1, 1e12, x)) != VL_OK)
        return st;
    return vl__val_double(loc, p->kids[1], 1e-6, 1, y);
}

static vl_status curve_named(const vl_vloc *loc, const vl_ynode *v, int role, vl_curve *out)
{
    const vl_curve *c = vl__curve_find(v->text, role);
    char list[300], what[400];

    if (c == NULL) {
        vl__curve_list(role, list, sizeof list);
        snprintf(what, sizeof what, "[[tokens, efficiency], ...] or a curve name (%s)", list);
        return type_err(loc, v, what);
    }
    *out = *c;
    return VL_OK;
}

vl_status vl__val_curve(const vl_vloc *loc, const vl_ynode *v, int role, vl_curve *out)
{
    char path[VL_PATH_MAX + 16];
    vl_vloc at = *loc;
    vl_curve c = {0};
    vl_status st;

    if (v != NULL && v->kind == VL_YSCALAR && !vl__ynode_is_null(v))
        return curve_named(loc, v, role, out);
    if (v == NULL || v->kind != VL_YSEQ || v->n < 1 || v->n > VL_CURVE_MAX) {
        char what[96];
        snprintf(what, sizeof what, "1..%d pairs [tokens, efficiency]", VL_CURVE_MAX);
        return type_err(loc, v, what);
    }
    at.path = path;
    for (size_t i = 0; i < v->n; i++) {
        snprintf(path, sizeof path, "%s[%zu]", loc->path, i);
        if ((st = curve_point(&at, v->kids[i], &c.x[i], &c.y[i])) != VL_OK)
            return st;
        if (i > 0 && c.x[i] <= c.x[i - 1])
            return vl__verr(&at, v->kids[i], "expected tokens above %g, got %g", c.x[i - 1],
                            c.x[i]);
    }
    c.n = (int)v->n;
    *out = c;
    return VL_OK;
}

static const char *const scheme_cols[] = {"tp", "pp", "sp", "a", "b", "c", "comm", NULL};

/* A row's comm: included (the default: a, b, c are the scheme's whole time) or analytic
 * (compute alone; cost.c adds the communication).  Analytic on a scheme of tp 1 and sp 1
 * says nothing -- such a stage has no communication of its own to add (the data-parallel
 * sync and pipeline transfers are never in a row) -- so it is refused as a likely slip. */
static vl_status scheme_comm(const vl_vloc *loc, const vl_ynode *v, vl_scheme *r)
{
    if (v == NULL)
        return VL_OK;
    if (v->kind != VL_YSCALAR ||
        (strcmp(v->text, "included") != 0 && strcmp(v->text, "analytic") != 0))
        return type_err(loc, v, "included or analytic");
    r->comm_analytic = v->text[0] == 'a';
    if (r->comm_analytic && r->tp == 1 && r->sp == 1)
        return vl__verr(loc, v,
                        "comm: analytic on a row of tp 1, sp 1: that scheme has no "
                        "communication within a stage to add (give its whole time, comm: "
                        "included)");
    return VL_OK;
}

/* One {tp, pp, sp, a, b, c, comm} mapping; sp may be left out (1), comm too (included). */
static vl_status scheme_row(const vl_vloc *loc, const vl_ynode *m, vl_scheme *r)
{
    const vl_ynode *v[7];
    long long tp = 0, pp = 0, sp = 1;
    vl_status st;

    if (m->kind != VL_YMAP)
        return type_err(loc, m, "a mapping {tp, pp, sp, a, b, c, comm}");
    for (size_t i = 0; i + 1 < m->n; i += 2) {
        int k = 0;
        while (scheme_cols[k] && strcmp(scheme_cols[k], m->kids[i]->text) != 0)
            k++;
        if (!scheme_cols[k])
            return vl__verr(loc, m->kids[i],
                            "unknown column '%s' (expected tp, pp, sp, a, b, "
                            "c, comm)",
                            m->kids[i]->text);
    }
    for (int k = 0; k < 7; k++) {
        v[k] = vl__ymap_get(m, scheme_cols[k]);
        if (!v[k] && k != 2 && k != 6)
            return vl__verr(loc, m, "missing column '%s'", scheme_cols[k]);
    }
    *r = (vl_scheme){.sp = 1};
    if ((st = vl__val_int(loc, v[0], 1, 65536, &tp)) != VL_OK ||
        (st = vl__val_int(loc, v[1], 1, 1024, &pp)) != VL_OK ||
        (v[2] && (st = vl__val_int(loc, v[2], 1, 65536, &sp)) != VL_OK) ||
        (st = vl__val_double(loc, v[3], 0, 1e12, &r->a)) != VL_OK ||
        (st = vl__val_double(loc, v[4], 0, 1e12, &r->b)) != VL_OK)
        return st;
    r->tp = (int)tp;
    r->pp = (int)pp;
    r->sp = (int)sp;
    if ((st = vl__val_double(loc, v[5], 0, 1e12, &r->c)) != VL_OK)
        return st;
    return scheme_comm(loc, v[6], r);
}

vl_status vl__val_schemes(const vl_vloc *loc, const vl_ynode *v, vl_cost_cfg *out)
{
    char path[VL_PATH_MAX + 16], what[96];
    vl_vloc at = *loc;
    vl_scheme rows[VL_SCHEMES_MAX];
    vl_status st;

    if (v == NULL || vl__ynode_is_null(v)) {
        out->nschemes = 0;
        return VL_OK;
    }
    if (v->kind != VL_YSEQ || v->n > VL_SCHEMES_MAX) {
        snprintf(what, sizeof what, "a list of at most %d {tp, pp, sp, a, b, c}",
                 VL_SCHEMES_MAX);
        return type_err(loc, v, what);
    }
    at.path = path;
    for (size_t i = 0; i < v->n; i++) {
        snprintf(path, sizeof path, "%s[%zu]", loc->path, i);
        if ((st = scheme_row(&at, v->kids[i], &rows[i])) != VL_OK)
            return st;
        for (size_t j = 0; j < i; j++)
            if (rows[j].tp == rows[i].tp && rows[j].pp == rows[i].pp &&
                rows[j].sp == rows[i].sp)
                return vl__verr(&at, v->kids[i],
                                "a second row for tp %d, pp %d, sp %d "
                                "(first: %s[%zu])",
                                rows[i].tp, rows[i].pp, rows[i].sp, loc->path, j);
    }
    memcpy(out->schemes, rows, v->n * sizeof *rows);
    out->nschemes = (int)v->n;
    return VL_OK;
}

/* Plain decimals where they are short ("80", "0.35", "3350"), exponents only for very
 * large or small magnitudes; always the shortest text that reads back exactly. */
void vl__fmt_double(double x, char buf[32])
{
    double ax = fabs(x);

    if (ax == 0 || (ax >= 1e-4 && ax < 1e15))
        for (int d = 0; d <= 17; d++) {
            snprintf(buf, 32, "%.*f", d, x);
            if (strtod(buf, NULL) == x)
                return;
        }
    for (int p = 1; p <= 17; p++) {
        snprintf(buf, 32, "%.*g", p, x);
        if (strtod(buf, NULL) == x)
            return;
    }
}
