/* lib/config/config_bind.c -- strategy sections: a strategy's vl_param table bound to its
 * options struct (defaults, then every overlay's section in order), table-valued
 * parameters read back as rows of numbers (vl_config_table), and the bound values back
 * out as JSON for the plan header's "params". */
#include <float.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "config_impl.h"

/* min = max = 0 in a table means "no range beyond the C type". */
static void range_of(const vl_param *p, double *lo, double *hi)
{
    *lo = p->min;
    *hi = p->max;
    if (p->min != 0 || p->max != 0)
        return;
    if (p->type == VL_P_INT) {
        *lo = INT_MIN;
        *hi = INT_MAX;
    } else if (p->type == VL_P_DOUBLE || p->type == VL_P_TABLE) {
        *lo = -DBL_MAX;
        *hi = DBL_MAX;
    } else {
        *hi = UINT32_MAX;
    }
}

/* How a value is shown after "got" (as config_value.c shows it). */
static const char *shown(const vl_ynode *v, char *buf, size_t n)
{
    if (v->kind == VL_YMAP)
        return "a mapping";
    if (v->kind == VL_YSEQ)
        return "a sequence";
    snprintf(buf, n, v->quoted ? "'\"%.57s%s\"'" : "'%.57s%s'", v->text,
             strlen(v->text) > 57 ? "..." : "");
    return buf;
}

/* A scalar of at most VL_TEXT_MAX - 1 characters; "" is allowed. */
static vl_status bind_text(const vl_vloc *loc, const vl_ynode *v, char *out)
{
    char buf[80];

    if (v->kind != VL_YSCALAR || strlen(v->text) >= VL_TEXT_MAX)
        return vl__verr(loc, v, "expected a string of at most %d characters, got %s",
                        VL_TEXT_MAX - 1, shown(v, buf, sizeof buf));
    memcpy(out, v->text, strlen(v->text) + 1);
    return VL_OK;
}

/* ---- tables: a list of mappings of numbers ---- */

/* A column list: 1..VL_TABLE_COLS_MAX names; *n receives the count when cols is
 * NULL-terminated (n = SIZE_MAX on entry), or is checked as given. */
static bool cols_ok(const char *const *cols, size_t *n)
{
    if (cols == NULL)
        return false;
    if (*n == SIZE_MAX)
        for (*n = 0; *n <= VL_TABLE_COLS_MAX && cols[*n] != NULL; (*n)++)
            ;
    if (*n < 1 || *n > VL_TABLE_COLS_MAX)
        return false;
    for (size_t c = 0; c < *n; c++)
        if (cols[c] == NULL || cols[c][0] == '\0')
            return false;
    return true;
}

static void join_cols(const char *const *cols, size_t ncols, char *buf, size_t n)
{
    size_t len = 0;

    buf[0] = '\0';
    for (size_t c = 0; c < ncols && len < n; c++) {
        int w = snprintf(buf + len, n - len, "%s%s", c ? ", " : "", cols[c]);
        if (w < 0)
            break;
        len += (size_t)w;
    }
}

typedef struct tspec {
    const char *const *cols;
    size_t ncols;
    double lo, hi; /* every cell */
} tspec;

/* Item i of a table: a mapping with exactly the columns, numbers in [lo, hi], into
 * out[0..ncols) (NULL: check only).  loc->path is the table's. */
static vl_status table_row(const vl_vloc *loc, const tspec *t, size_t i, const vl_ynode *m,
                           double *out)
{
    char path[VL_PATH_MAX], list[300], buf[80];
    vl_vloc at = {loc->doc, path, loc->err};
    bool seen[VL_TABLE_COLS_MAX] = {false};
    double x;
    vl_status st;

    join_cols(t->cols, t->ncols, list, sizeof list);
    snprintf(path, sizeof path, "%s[%zu]", loc->path, i);
    if (m->kind != VL_YMAP)
        return vl__verr(&at, m, "expected a mapping of %s, got %s", list,
                        shown(m, buf, sizeof buf));
    for (size_t k = 0; k + 1 < m->n; k += 2) {
        const vl_ynode *key = m->kids[k];
        const char *hint;
        size_t c = 0;
        while (c < t->ncols && strcmp(t->cols[c], key->text) != 0)
            c++;
        snprintf(path, sizeof path, "%s[%zu].%s", loc->path, i, key->text);
        if (c == t->ncols && (hint = vl__suggest(key->text, t->cols, t->ncols)) != NULL)
            return vl__verr(&at, key, "unknown column, did you mean '%s'?", hint);
        if (c == t->ncols)
            return vl__verr(&at, key, "unknown column (expected %s)", list);
        if (seen[c])
            return vl__verr(&at, key, "duplicate column");
        seen[c] = true;
        if ((st = vl__val_double(&at, m->kids[k + 1], t->lo, t->hi, &x)) != VL_OK)
            return st;
        if (out != NULL)
            out[c] = x;
    }
    snprintf(path, sizeof path, "%s[%zu]", loc->path, i);
    for (size_t c = 0; c < t->ncols; c++)
        if (!seen[c])
            return vl__verr(&at, m, "missing column '%s' (a row has %s)", t->cols[c], list);
    return VL_OK;
}

/* The whole table value v (not null): its rows into *rows (NULL: check only). */
static vl_status table_read(const vl_vloc *loc, const tspec *t, const vl_ynode *v,
                            double **rows, size_t *nrows)
{
    char list[300], buf[80];
    double *r = NULL;
    vl_status st = VL_OK;

    if (v->kind != VL_YSEQ) {
        join_cols(t->cols, t->ncols, list, sizeof list);
        return vl__verr(loc, v, "expected a list of mappings of %s, got %s", list,
                        shown(v, buf, sizeof buf));
    }
    if (rows != NULL && v->n > 0 && (r = malloc(v->n * t->ncols * sizeof *r)) == NULL)
        return vl_seterr(loc->err, VL_ENOMEM, "out of memory for %zu rows of %s", v->n,
                         loc->path);
    for (size_t i = 0; i < v->n && st == VL_OK; i++)
        st = table_row(loc, t, i, v->kids[i], r ? r + i * t->ncols : NULL);
    if (st != VL_OK) {
        free(r);
        return st;
    }
    if (rows != NULL) {
        *rows = r;
        *nrows = v->n;
    }
    return VL_OK;
}

static vl_status bind_table(const vl_param *p, const vl_vloc *loc, const vl_ynode *v)
{
    tspec t = {.cols = p->choices, .ncols = SIZE_MAX};

    if (!cols_ok(p->choices, &t.ncols))
        return vl_seterr(loc->err, VL_EINTERNAL, "%s: bad column list", loc->path);
    range_of(p, &t.lo, &t.hi);
    if (vl__ynode_is_null(v))
        return VL_OK;
    return table_read(loc, &t, v, NULL, NULL);
}

static vl_status bind_string(const vl_param *p, const vl_vloc *loc, const vl_ynode *v,
                             char *out)
{
    int idx;
    vl_status st;

    if (p->choices != NULL) {
        if ((st = vl__val_enum(loc, v, p->choices, &idx)) != VL_OK)
            return st;
        snprintf(out, VL_NAME_MAX, "%s", p->choices[idx]);
        return VL_OK;
    }
    if (v->kind == VL_YSCALAR && v->text[0] == '\0') {
        out[0] = '\0';
        return VL_OK;
    }
    return vl__val_name(loc, v, out);
}

static vl_status bind_value(const vl_param *p, const vl_vloc *loc, const vl_ynode *v,
                            void *opts)
{
    void *f = (char *)opts + p->offset;
    double lo, hi;
    long long i;
    unsigned long long u;
    vl_status st;

    range_of(p, &lo, &hi);
    switch (p->type) {
    case VL_P_INT:
        if ((st = vl__val_int(loc, v, lo, hi, &i)) == VL_OK)
            *(int *)f = (int)i;
        return st;
    case VL_P_AUTO_UINT:
    case VL_P_UINT:
        if (p->type == VL_P_AUTO_UINT && v->kind == VL_YSCALAR && strcmp(v->text, "auto") == 0)
            u = 0;
        else if ((st = vl__val_uint(loc, v, lo, hi, &u)) != VL_OK)
            return st;
        *(uint32_t *)f = (uint32_t)u;
        return VL_OK;
    case VL_P_DOUBLE: return vl__val_double(loc, v, lo, hi, f);
    case VL_P_BOOL: return vl__val_bool(loc, v, f);
    case VL_P_ENUM:
        if (p->choices == NULL)
            break;
        return vl__val_enum(loc, v, p->choices, f);
    case VL_P_STRING: return bind_string(p, loc, v, f);
    case VL_P_TEXT: return bind_text(loc, v, f);
    case VL_P_TABLE: return bind_table(p, loc, v);
    }
    return vl_seterr(loc->err, VL_EINTERNAL, "%s: bad parameter table entry", loc->path);
}

static void zero_field(const vl_param *p, void *opts)
{
    void *f = (char *)opts + p->offset;

    switch (p->type) {
    case VL_P_TABLE: break; /* nothing in opts */
    case VL_P_DOUBLE: *(double *)f = 0; break;
    case VL_P_BOOL: *(bool *)f = false; break;
    case VL_P_STRING:
    case VL_P_TEXT: *(char *)f = '\0'; break;
    case VL_P_UINT:
    case VL_P_AUTO_UINT: *(uint32_t *)f = 0; break;
    default: *(int *)f = 0; break;
    }
}

static vl_status bind_defaults(const char *section, const vl_param *params, void *opts,
                               vl_err *err)
{
    char path[VL_PATH_MAX], msg[VL_ERRMSG_MAX];

    for (const vl_param *p = params; p->key != NULL; p++) {
        vl_ynode v = {.kind = VL_YSCALAR, .text = (char *)p->def};
        vl_vloc loc = {NULL, path, err};
        snprintf(path, sizeof path, "%s.%s", section, p->key);
        if (p->def == NULL || p->type == VL_P_TABLE) {
            zero_field(p, opts);
            continue;
        }
        if (bind_value(p, &loc, &v, opts) != VL_OK) {
            snprintf(msg, sizeof msg, "%s", err ? err->msg : "");
            return vl_seterr(err, VL_EINTERNAL, "bad built-in default: %s", msg);
        }
    }
    return VL_OK;
}

static vl_status unknown_param(const vl_vloc *loc, const vl_ynode *key, const vl_param *params)
{
    const char *names[256], *hint;
    size_t n = 0;

    for (const vl_param *p = params; p->key != NULL && n < 256; p++)
        names[n++] = p->key;
    hint = vl__suggest(key->text, names, n);
    if (hint != NULL)
        return vl__verr(loc, key, "unknown key, did you mean '%s'?", hint);
    return vl__verr(loc, key, "unknown key");
}

static vl_status bind_section(const vl_ydoc *doc, const char *section, const vl_ynode *sec,
                              const vl_param *params, void *opts, vl_err *err)
{
    char path[VL_PATH_MAX];
    vl_vloc loc = {doc, path, err};
    vl_status st;

    for (size_t i = 0; i + 1 < sec->n; i += 2) {
        const vl_ynode *k = sec->kids[i];
        const vl_param *p = params;
        snprintf(path, sizeof path, "%s.%s", section, k->text);
        while (p->key != NULL && strcmp(p->key, k->text) != 0)
            p++;
        if (p->key == NULL)
            return unknown_param(&loc, k, params);
        if ((st = bind_value(p, &loc, sec->kids[i + 1], opts)) != VL_OK)
            return st;
    }
    return VL_OK;
}

vl_status vl_config_bind(const vl_config *cfg, const char *section, const vl_param *params,
                         void *opts, vl_err *err)
{
    static const vl_param none[] = {{NULL, VL_P_INT, 0, 0, 0, NULL, NULL, NULL}};
    const vl_config_raw *raw = cfg->raw;
    vl_status st;

    if (params == NULL)
        params = none; /* then every key of the section is unknown */
    if ((st = bind_defaults(section, params, opts, err)) != VL_OK || raw == NULL)
        return st;
    for (size_t d = 0; d < raw->ndocs; d++) {
        const vl_ynode *sec = vl__ymap_get(raw->docs[d]->root, section);
        vl_vloc loc = {raw->docs[d], section, err};
        if (sec == NULL || vl__ynode_is_null(sec))
            continue;
        if (sec->kind != VL_YMAP)
            return vl__verr(&loc, sec, "expected a mapping");
        if ((st = bind_section(raw->docs[d], section, sec, params, opts, err)) != VL_OK)
            return st;
    }
    return VL_OK;
}

/* ---- vl_config_table ---- */

/* The value of section.key in the last overlay that gives it, or NULL (*doc set). */
static vl_status table_node(const vl_config_raw *raw, const char *section, const char *key,
                            const vl_ydoc **doc, const vl_ynode **v, vl_err *err)
{
    *doc = NULL;
    *v = NULL;
    for (size_t d = 0; raw != NULL && d < raw->ndocs; d++) {
        const vl_ynode *sec = vl__ymap_get(raw->docs[d]->root, section), *x;
        vl_vloc loc = {raw->docs[d], section, err};
        if (sec == NULL || vl__ynode_is_null(sec))
            continue;
        if (sec->kind != VL_YMAP)
            return vl__verr(&loc, sec, "expected a mapping");
        if ((x = vl__ymap_get(sec, key)) != NULL) {
            *doc = raw->docs[d];
            *v = x;
        }
    }
    return VL_OK;
}

vl_status vl_config_table(const vl_config *cfg, const char *section, const char *key,
                          const char *const *cols, size_t ncols, double **rows, size_t *nrows,
                          vl_err *err)
{
    char path[VL_PATH_MAX];
    tspec t = {.cols = cols, .ncols = ncols, .lo = -DBL_MAX, .hi = DBL_MAX};
    const vl_ydoc *doc;
    const vl_ynode *v;
    vl_status st;

    *rows = NULL;
    *nrows = 0;
    if (!cols_ok(cols, &t.ncols) || ncols == SIZE_MAX)
        return vl_seterr(err, VL_EINTERNAL, "%s.%s: bad column list", section, key);
    if ((st = table_node(cfg->raw, section, key, &doc, &v, err)) != VL_OK ||
        vl__ynode_is_null(v))
        return st;
    snprintf(path, sizeof path, "%s.%s", section, key);
    vl_vloc loc = {doc, path, err};
    return table_read(&loc, &t, v, rows, nrows);
}

/* ---- params as JSON ---- */

static json_t *param_json(const vl_param *p, const void *opts)
{
    const void *f = (const char *)opts + p->offset;
    int e;

    switch (p->type) {
    case VL_P_INT: return json_integer(*(const int *)f);
    case VL_P_AUTO_UINT:
    case VL_P_UINT:
        if (p->type == VL_P_AUTO_UINT && *(const uint32_t *)f == 0)
            return json_string("auto");
        return json_integer(*(const uint32_t *)f);
    case VL_P_DOUBLE: return json_real(*(const double *)f);
    case VL_P_BOOL: return json_boolean(*(const bool *)f);
    case VL_P_ENUM:
        e = *(const int *)f;
        for (int i = 0; p->choices != NULL && p->choices[i] != NULL; i++)
            if (i == e)
                return json_string(p->choices[i]);
        return json_integer(e);
    case VL_P_STRING:
    case VL_P_TEXT: return json_string((const char *)f);
    case VL_P_TABLE: break; /* left out of "params"; the header's "config" carries it */
    }
    return NULL;
}

vl_status vl_params_dump_json(const vl_param *params, const void *opts, char **out,
                              vl_err *err)
{
    json_t *obj = json_object();

    *out = NULL;
    for (const vl_param *p = params; obj != NULL && p != NULL && p->key != NULL; p++)
        if (p->type != VL_P_TABLE &&
            json_object_set_new(obj, p->key, param_json(p, opts)) != 0) {
            json_decref(obj);
            obj = NULL;
        }
    if (obj == NULL)
        return vl_seterr(err, VL_ENOMEM, "out of memory");
    return vl__json_text(obj, out, err);
}
