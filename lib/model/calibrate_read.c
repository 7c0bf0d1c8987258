/* lib/model/calibrate_read.c -- timing rows for `vlplan calibrate` from CSV or JSON Lines
 * (calibrate.h).  The format is told by the first character that is not blank: '{' is
 * JSON Lines, anything else CSV with a header line.  Columns (keys): tokens, sum_len2,
 * seconds (required); tp, pp, sp (default 1), ckpt_layers (0), layers (model.layers / pp),
 * mbs (1), head (0; 1: the row times the LM head and loss alone), sp_kind (ulysses, ring
 * or none; default training.sp_kind) and comm (included, the default, or analytic: the
 * seconds are one GPU's share of the compute, communication left to the cost model, as
 * tools/profile_step.py --sp/--cp writes them).  Other columns are ignored (a profiler
 * may add its own); '#' starts a comment
 * line.  Every bad value is an error naming FILE:LINE, the column and the value. */
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "calibrate.h"
#include "grow.h"
#include "zio.h"

enum {
    C_TOKENS,
    C_SUMSQ,
    C_SECONDS,
    C_TP,
    C_PP,
    C_SP,
    C_CKPT,
    C_LAYERS,
    C_MBS,
    C_HEAD,
    C_SPKIND,
    C_COMM,
    NCOLS
};
static const char *const COLS[NCOLS] = {"tokens", "sum_len2", "seconds",     "tp",
                                        "pp",     "sp",       "ckpt_layers", "layers",
                                        "mbs",    "head",     "sp_kind",     "comm"};
static const bool REQUIRED[NCOLS] = {true, true, true};
/* The columns that hold words, each word's number (its index) and what they mean. */
static const char *const WORDS[NCOLS][4] = {
    [C_SPKIND] = {"ulysses", "ring", "none", NULL}, /* vl_sp_kind; none: sp 1 */
    [C_COMM] = {"included", "analytic", NULL},      /* analytic: seconds without it */
};
#define SPKIND_NONE 2
#define MAX_FIELDS 64

typedef struct ctx {
    vl_calib_rows *set;
    const vl_config *cfg;
    uint32_t line;
    vl_err *err;
} ctx;

static vl_status bad(const ctx *c, const char *col, const char *val, const char *want)
{
    return vl_seterr(c->err, VL_EDATA, "%s:%u: %s%s%s is '%.40s', expected %s", c->set->name,
                     c->line, col ? "column '" : "", col ? col : "", col ? "'" : "", val,
                     want);
}

/* values[k] is NAN where column k was not given. */
static vl_status check_int(const ctx *c, int k, double v, double lo, double hi)
{
    char buf[40], want[64];

    if (v == floor(v) && v >= lo && v <= hi)
        return VL_OK;
    snprintf(buf, sizeof buf, "%.17g", v);
    snprintf(want, sizeof want, "an integer in %.0f..%.0f", lo, hi);
    return bad(c, COLS[k], buf, want);
}

static vl_status add_row(const ctx *c, const double *v)
{
    vl_calib_row r = {0};
    char buf[40];
    vl_status st;

    for (int k = 0; k < NCOLS; k++)
        if (REQUIRED[k] && isnan(v[k]))
            return vl_seterr(c->err, VL_EDATA, "%s:%u: missing '%s'", c->set->name, c->line,
                             COLS[k]);
    r.tp = isnan(v[C_TP]) ? 1 : (int)v[C_TP];
    r.pp = isnan(v[C_PP]) ? 1 : (int)v[C_PP];
    r.sp = isnan(v[C_SP]) ? 1 : (int)v[C_SP];
    if ((!isnan(v[C_TP]) && (st = check_int(c, C_TP, v[C_TP], 1, 65536))) ||
        (!isnan(v[C_PP]) && (st = check_int(c, C_PP, v[C_PP], 1, 1024))) ||
        (!isnan(v[C_SP]) && (st = check_int(c, C_SP, v[C_SP], 1, 65536))) ||
        (!isnan(v[C_CKPT]) && (st = check_int(c, C_CKPT, v[C_CKPT], 0, 1e6))) ||
        (!isnan(v[C_MBS]) && (st = check_int(c, C_MBS, v[C_MBS], 1, 1e12))) ||
        (!isnan(v[C_HEAD]) && (st = check_int(c, C_HEAD, v[C_HEAD], 0, 1))))
        return st;
    r.head = !isnan(v[C_HEAD]) && v[C_HEAD] == 1;
    if (r.sp > 1 && v[C_SPKIND] == SPKIND_NONE)
        return bad(c, "sp_kind", "none", "ulysses or ring where sp > 1");
    /* the kind only tells schemes apart where there is a sequence to shard */
    r.sp_kind =
        r.sp > 1 && !isnan(v[C_SPKIND]) ? (vl_sp_kind)v[C_SPKIND] : c->cfg->training.sp_kind;
    r.comm_analytic = !isnan(v[C_COMM]) && v[C_COMM] == 1;
    r.ckpt_layers = isnan(v[C_CKPT]) ? 0 : (int)v[C_CKPT];
    r.mbs = isnan(v[C_MBS]) ? 1 : v[C_MBS];
    r.layers = isnan(v[C_LAYERS]) ? (double)c->cfg->model.layers / r.pp : v[C_LAYERS];
    if (!(r.layers > 0) || r.layers > 1e6) {
        snprintf(buf, sizeof buf, "%.17g", r.layers);
        return bad(c, "layers", buf, "a number of layers > 0");
    }
    if (r.ckpt_layers > r.layers) {
        snprintf(buf, sizeof buf, "%d", r.ckpt_layers);
        return bad(c, "ckpt_layers", buf, "at most the row's layers");
    }
    r.tokens = v[C_TOKENS];
    r.sum_len2 = v[C_SUMSQ];
    r.seconds = v[C_SECONDS];
    if (!(r.tokens >= 1) || r.tokens > 1e15) {
        snprintf(buf, sizeof buf, "%.17g", r.tokens);
        return bad(c, "tokens", buf, "a token count >= 1");
    }
    /* Σ len² lies between Σ len (all length 1) and (Σ len)² (one sequence): outside, the
     * columns are swapped or the sum is of something else */
    if (!(r.sum_len2 >= r.tokens) || r.sum_len2 > r.tokens * r.tokens) {
        snprintf(buf, sizeof buf, "%.17g", r.sum_len2);
        return bad(c, "sum_len2", buf,
                   "a sum of squared lengths, between tokens and tokens^2");
    }
    if (!(r.seconds > 0) || !isfinite(r.seconds)) {
        snprintf(buf, sizeof buf, "%.17g", r.seconds);
        return bad(c, "seconds", buf, "a time in seconds > 0");
    }
    r.line = c->line;
    if ((st = vl_grow(&c->set->rows, &c->set->cap, c->set->n + 1, sizeof r, c->err)) != VL_OK)
        return st;
    c->set->rows[c->set->n++] = r;
    return VL_OK;
}

/* ---- CSV ---- */

/* Split line (modified in place) at commas, stripping blanks and one pair of double
 * quotes; returns the field count or -1 when there are too many. */
static int split_csv(char *line, char **f)
{
    int n = 0;

    for (char *p = line;;) {
        char *e = strchr(p, ',');
        if (n == MAX_FIELDS)
            return -1;
        if (e)
            *e = '\0';
        while (*p == ' ' || *p == '\t')
            p++;
        size_t len = strlen(p);
        while (len > 0 && (p[len - 1] == ' ' || p[len - 1] == '\t' || p[len - 1] == '\r'))
            p[--len] = '\0';
        if (len >= 2 && p[0] == '"' && p[len - 1] == '"') {
            p[len - 1] = '\0';
            p++;
        }
        f[n++] = p;
        if (!e)
            return n;
        p = e + 1;
    }
}

static vl_status csv_header(ctx *c, char *line, int *colof, int *nf)
{
    char *f[MAX_FIELDS];
    int n = split_csv(line, f);

    if (n < 0)
        return vl_seterr(c->err, VL_EDATA, "%s:%u: more than %d columns", c->set->name,
                         c->line, MAX_FIELDS);
    for (int k = 0; k < NCOLS; k++)
        colof[k] = -1;
    for (int i = 0; i < n; i++)
        for (int k = 0; k < NCOLS; k++)
            if (strcmp(f[i], COLS[k]) == 0) {
                if (colof[k] >= 0)
                    return vl_seterr(c->err, VL_EDATA, "%s:%u: column '%s' twice",
                                     c->set->name, c->line, COLS[k]);
                colof[k] = i;
            }
    for (int k = 0; k < NCOLS; k++)
        if (REQUIRED[k] && colof[k] < 0)
            return vl_seterr(c->err, VL_EDATA,
                             "%s:%u: header has no column '%s' (needs "
                             "tokens, sum_len2 and seconds)",
                             c->set->name, c->line, COLS[k]);
    *nf = n;
    return VL_OK;
}

/* A word column's value: the index of s among its words. */
static vl_status parse_word(const ctx *c, int k, const char *s, double *out)
{
    char want[64] = "";

    for (int i = 0; WORDS[k][i]; i++) {
        if (strcmp(s, WORDS[k][i]) == 0) {
            *out = i;
            return VL_OK;
        }
        snprintf(want + strlen(want), sizeof want - strlen(want), "%s%s", i ? " or " : "",
                 WORDS[k][i]);
    }
    return bad(c, COLS[k], s, want);
}

static vl_status parse_num(const ctx *c, int k, const char *s, double *out)
{
    char *end;

    if (WORDS[k][0])
        return parse_word(c, k, s, out);
    errno = 0;
    *out = strtod(s, &end);
    if (*s == '\0' || *end != '\0' || errno == ERANGE || !isfinite(*out))
        return bad(c, COLS[k], s, "a number");
    return VL_OK;
}

static vl_status csv_row(ctx *c, char *line, const int *colof, int nf)
{
    char *f[MAX_FIELDS];
    double v[NCOLS];
    int n = split_csv(line, f);
    vl_status st;

    if (n != nf)
        return vl_seterr(c->err, VL_EDATA, "%s:%u: %d fields, the header has %d", c->set->name,
                         c->line, n < 0 ? MAX_FIELDS + 1 : n, nf);
    for (int k = 0; k < NCOLS; k++) {
        v[k] = NAN;
        if (colof[k] >= 0 && (st = parse_num(c, k, f[colof[k]], &v[k])) != VL_OK)
            return st;
    }
    return add_row(c, v);
}

/* ---- JSON Lines ---- */

static vl_status json_row(ctx *c, const char *line, size_t len)
{
    json_error_t je;
    json_t *o = json_loadb(line, len, JSON_REJECT_DUPLICATES, &je);
    double v[NCOLS];
    vl_status st = VL_OK;

    if (!o || !json_is_object(o)) {
        json_decref(o);
        return vl_seterr(c->err, VL_EDATA, "%s:%u: not a JSON object%s%s", c->set->name,
                         c->line, o ? "" : ": ", o ? "" : je.text);
    }
    for (int k = 0; k < NCOLS && st == VL_OK; k++) {
        json_t *x = json_object_get(o, COLS[k]);
        v[k] = NAN;
        if (x && WORDS[k][0] && json_is_string(x))
            st = parse_word(c, k, json_string_value(x), &v[k]);
        else if (x && json_is_number(x) && !WORDS[k][0])
            v[k] = json_number_value(x);
        else if (x) {
            char *txt = json_dumps(x, JSON_ENCODE_ANY | JSON_COMPACT);
            st = bad(c, COLS[k], txt ? txt : "?", WORDS[k][0] ? "a word" : "a number");
            free(txt);
        }
    }
    json_decref(o);
    return st == VL_OK ? add_row(c, v) : st;
}

/* ---- lines ---- */

static bool skip_line(const char *p)
{
    while (*p == ' ' || *p == '\t' || *p == '\r')
        p++;
    return *p == '\0' || *p == '#';
}

vl_status vl_calib_parse(vl_calib_rows *set, const char *text, size_t len, const char *name,
                         const vl_config *cfg, vl_err *err)
{
    ctx c = {set, cfg, 0, err};
    char *buf = malloc(len + 1), *p, *nl;
    int colof[NCOLS], nf = 0;
    bool json = false, have_header = false;
    vl_status st = VL_OK;

    if (!buf)
        return vl_seterr(err, VL_ENOMEM, "out of memory");
    memcpy(buf, text, len);
    buf[len] = '\0';
    snprintf(set->name, sizeof set->name, "%s", name);
    for (p = buf; st == VL_OK && p < buf + len; p = nl + 1) {
        nl = strchr(p, '\n');
        if (!nl)
            nl = buf + len;
        *nl = '\0';
        c.line++;
        if (c.line == 1 && nl - p >= 3 && memcmp(p, "\xEF\xBB\xBF", 3) == 0)
            p += 3; /* a UTF-8 byte-order mark, as manifests accept it */
        if (strlen(p) != (size_t)(nl - p)) {
            st = vl_seterr(err, VL_EDATA, "%s:%u: a NUL byte (not a text file)", name, c.line);
            break;
        }
        if (skip_line(p))
            continue;
        if (!have_header && !json) {
            const char *q = p + strspn(p, " \t");
            json = *q == '{';
            if (!json) {
                st = csv_header(&c, p, colof, &nf);
                have_header = true;
                continue;
            }
        }
        st = json ? json_row(&c, p, (size_t)(nl - p)) : csv_row(&c, p, colof, nf);
    }
    free(buf);
    if (st == VL_OK && set->n == 0)
        st = vl_seterr(err, VL_EDATA, "%s: no timing rows", name);
    return st;
}

vl_status vl_calib_read(vl_calib_rows *set, const char *path, const vl_config *cfg,
                        vl_err *err)
{
    vl_zreader *z;
    char *buf = NULL;
    size_t len = 0, cap = 0, got;
    vl_status st = vl_zreader_open(&z, path, err);

    if (st != VL_OK)
        return st;
    do {
        if ((st = vl_grow(&buf, &cap, len + 65536, 1, err)) != VL_OK)
            break;
        st = vl_zreader_read(z, buf + len, cap - len, &got, err);
        len += got;
    } while (st == VL_OK && got > 0);
    if (st == VL_OK)
        st = vl_calib_parse(set, buf ? buf : "", len, vl_zreader_name(z), cfg, err);
    free(buf);
    vl_zreader_close(z);
    return st;
}

void vl_calib_rows_free(vl_calib_rows *set)
{
    free(set->rows);
    memset(set, 0, sizeof *set);
}
