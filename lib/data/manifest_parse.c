/* lib/data/manifest_parse.c -- one manifest line into a record: format detection, plain
 * text (hand-written integer scanner, the hot path) and CSV/TSV with quoting; JSONL
 * lines go to manifest_jsonl.c. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "manifest_impl.h"
#include "utf8.h"

static bool is_blank(char c)
{
    return c == ' ' || c == '\t';
}

/* Non-negative decimal: 0 ok, 1 not one (sign, dot, exponent, letter, empty),
 * 2 above VL_MAX_SAMPLE_LEN. */
static int scan_count(const char *s, size_t n, uint32_t *out)
{
    uint64_t v = 0;

    if (n == 0)
        return 1;
    for (size_t i = 0; i < n; i++) {
        unsigned d = (unsigned)(unsigned char)s[i] - '0';
        if (d > 9)
            return 1;
        if (v <= VL_MAX_SAMPLE_LEN) /* saturate: stays above the max, never wraps */
            v = v * 10 + d;
    }
    if (v > VL_MAX_SAMPLE_LEN)
        return 2;
    *out = (uint32_t)v;
    return 0;
}

/* A canonical integer (-?[1-9][0-9]*|0) that fits int64; anything else is a string id. */
static bool canon_int(const char *s, size_t n, int64_t *out)
{
    bool neg = n > 0 && s[0] == '-';
    const char *d = s + neg;
    size_t k = n - neg;
    uint64_t v = 0;

    if (k == 0 || k > 19 || (d[0] == '0' && (k > 1 || neg)))
        return false;
    for (size_t i = 0; i < k; i++) {
        if (d[i] < '0' || d[i] > '9')
            return false;
        v = v * 10 + (uint64_t)(d[i] - '0');
    }
    if (v > (uint64_t)INT64_MAX + neg)
        return false;
    *out = neg ? (v == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)v) : (int64_t)v;
    return true;
}

/* Quoted, printable excerpt of [s, s+n) for messages. */
static const char *show(char out[64], const char *s, size_t n)
{
    static const char hex[] = "0123456789abcdef";
    size_t k = 0;

    out[k++] = '"';
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (k > 50) {
            memcpy(out + k, "...", 3);
            k += 3;
            break;
        }
        if (c == '"' || c == '\\') {
            out[k++] = '\\';
            out[k++] = (char)c;
        } else if (c >= 0x20 && c < 0x7F) {
            out[k++] = (char)c;
        } else {
            out[k++] = '\\';
            out[k++] = 'x';
            out[k++] = hex[c >> 4];
            out[k++] = hex[c & 15];
        }
    }
    out[k++] = '"';
    out[k] = '\0';
    return out;
}

/* Explicit id from text or CSV: an integer when canonical, else a verbatim string. */
static vl_status text_id(vl__mb *b, vl__rec *r, const char *s, size_t n)
{
    char sh[64];

    if (n == 0)
        return vl__mb_err(b, 0, "empty sample id");
    if (canon_int(s, n, &r->id_int)) {
        r->id_kind = VL_ID_INT;
        return VL_OK;
    }
    if (!vl_utf8_valid(s, n))
        return vl__mb_err(b, 0, "sample id %s is not valid UTF-8 text", show(sh, s, n));
    r->id_kind = VL_ID_STR;
    r->id_str = s;
    r->id_len = n;
    return VL_OK;
}

/* what: e.g. "sample length" or "\"len\"", for the message. */
static vl_status text_len(vl__mb *b, uint32_t *out, const char *s, size_t n, const char *what)
{
    char sh[64];
    int rc = scan_count(s, n, out);

    if (rc == 2)
        return vl__mb_err(b, 0, "%s %.*s out of range (max %u)", what, (int)(n < 40 ? n : 40),
                          s, VL_MAX_SAMPLE_LEN);
    if (rc != 0 || *out == 0)
        return vl__mb_err(b, 0, "%s must be a positive integer, got %s", what, show(sh, s, n));
    return VL_OK;
}

static vl_status text_loss(vl__mb *b, vl__rec *r, const char *s, size_t n, const char *what)
{
    char sh[64];
    int rc = scan_count(s, n, &r->loss);

    if (rc == 2)
        return vl__mb_err(b, 0, "%s %.*s out of range (max %u)", what, (int)(n < 40 ? n : 40),
                          s, VL_MAX_SAMPLE_LEN);
    if (rc != 0)
        return vl__mb_err(b, 0, "%s must be a non-negative integer, got %s", what,
                          show(sh, s, n));
    if (r->loss > r->len)
        return vl__mb_err(b, 0, "%s %u exceeds the sample length %u", what, r->loss, r->len);
    r->has_loss = true;
    return VL_OK;
}

/* ---- plain text ---- */

/* Fields separated by runs of blanks; returns how many (all counted, max stored). */
static size_t ws_split(char *p, size_t n, vl__field *fl, size_t max)
{
    size_t i = 0, k = 0;

    while (i < n) {
        while (i < n && is_blank(p[i]))
            i++;
        if (i == n)
            break;
        size_t s = i;
        while (i < n && !is_blank(p[i]))
            i++;
        if (k < max)
            fl[k] = (vl__field){p + s, i - s};
        k++;
    }
    return k;
}

static vl_status text_line(vl__fmt *f, vl__mb *b, char *p, size_t n)
{
    vl__field fl[2];
    size_t nf = ws_split(p, n, fl, 2);
    vl__rec r = {0};
    vl_status st;

    if (f->implicit && nf != 1)
        return vl__mb_err(b, 0,
                          "expected one length per line (as on line %llu), got %zu fields",
                          (unsigned long long)f->first_line, nf);
    if (!f->implicit && nf != 2)
        return vl__mb_err(b, 0, "expected 'ID LENGTH' (as on line %llu), got %zu field%s",
                          (unsigned long long)f->first_line, nf, nf == 1 ? "" : "s");
    if (!f->implicit && (st = text_id(b, &r, fl[0].p, fl[0].n)) != VL_OK)
        return st;
    if ((st = text_len(b, &r.len, fl[nf - 1].p, fl[nf - 1].n, f->len_what)) != VL_OK)
        return st;
    return vl__mb_add(b, &r);
}

/* ---- CSV / TSV ---- */

/* Padding around a field: spaces, and tabs too unless they separate fields. */
static bool csv_pad(const vl__fmt *f, char c)
{
    return c == ' ' || (c == '\t' && f->delim != '\t');
}

/* Split at delim into f->fields (first fcap kept), unquoting "..." fields in place and
 * trimming padding around unquoted ones; *nf counts every field. */
static vl_status csv_split(vl__fmt *f, vl__mb *b, char *p, size_t n, size_t *nf)
{
    size_t i = 0, k = 0;

    for (;;) {
        size_t s, e;
        while (i < n && csv_pad(f, p[i]))
            i++;
        if (i < n && p[i] == '"') {
            size_t w = s = ++i;
            for (;; i++) {
                if (i == n)
                    return vl__mb_err(b, 0, "unbalanced quote in field %zu", k + 1);
                if (p[i] == '"' && (i + 1 == n || p[i + 1] != '"'))
                    break;
                i += p[i] == '"'; /* "" is a literal quote */
                p[w++] = p[i];
            }
            e = w;
            for (i++; i < n && csv_pad(f, p[i]); i++)
                ;
            if (i < n && p[i] != f->delim)
                return vl__mb_err(b, 0, "unexpected %s after the closing quote of field %zu",
                                  p[i] == '"' ? "'\"'" : "text", k + 1);
        } else {
            for (s = i; i < n && p[i] != f->delim; i++)
                ;
            for (e = i; e > s && csv_pad(f, p[e - 1]); e--)
                ;
        }
        if (k < f->fcap)
            f->fields[k] = (vl__field){p + s, e - s};
        k++;
        if (i == n)
            break;
        i++;
    }
    *nf = k;
    return VL_OK;
}

static bool field_is(const vl__field *fl, const char *name)
{
    return fl->n == strlen(name) && memcmp(fl->p, name, fl->n) == 0;
}

/* Rank of a length column name: 0 for opts->len_col or "length", then "len",
 * "num_tokens"; -1 for other names. */
static int len_rank(const vl__mb *b, const vl__field *fl)
{
    if (b->opts->len_col)
        return field_is(fl, b->opts->len_col) ? 0 : -1;
    for (size_t k = 0; k < VL__NLEN_NAMES; k++)
        if (field_is(fl, vl__len_names[k]))
            return (int)k;
    return -1;
}

static vl_status set_col(vl__mb *b, long *slot, size_t c, const vl__field *fl)
{
    if (*slot >= 0)
        return vl__mb_err(b, 0, "bad header: duplicate column \"%.*s\"",
                          (int)(fl->n < 60 ? fl->n : 60), fl->p);
    *slot = (long)c;
    return VL_OK;
}

/* Assign roles to the header's columns.  Of several length-like columns
 * ("len" and "num_tokens", say) the first name in the list wins. */
static vl_status csv_roles(vl__fmt *f, vl__mb *b, size_t nf)
{
    const char *id = b->opts->id_col ? b->opts->id_col : "id";
    int best = (int)VL__NLEN_NAMES;
    vl_status st = VL_OK;

    for (size_t c = 0; c < nf && st == VL_OK; c++) {
        const vl__field *fl = &f->fields[c];
        int rank = len_rank(b, fl);
        if (field_is(fl, id))
            st = set_col(b, &f->id_col, c, fl);
        else if (field_is(fl, "loss_tokens"))
            st = set_col(b, &f->loss_col, c, fl);
        else if (field_is(fl, "source"))
            st = set_col(b, &f->src_col, c, fl);
        else if (rank >= 0 && rank == best)
            st = set_col(b, &f->len_col, c, fl);
        else if (rank >= 0 && rank < best) {
            best = rank;
            f->len_col = (long)c;
        }
    }
    return st;
}

static vl_status csv_fields_cap(vl__fmt *f, vl__mb *b, size_t n)
{
    vl__field *nf;

    if (n <= f->fcap)
        return VL_OK;
    if ((nf = realloc(f->fields, n * sizeof *nf)) == NULL)
        return vl_seterr(b->err, VL_ENOMEM, "out of memory (CSV header of %zu columns)", n);
    f->fields = nf;
    f->fcap = n;
    return VL_OK;
}

static vl_status csv_header(vl__fmt *f, vl__mb *b, char *p, size_t n)
{
    size_t nf = 1, hn = n < sizeof f->header - 1 ? n : sizeof f->header - 1;
    vl_status st;

    memcpy(f->header, p, hn);
    f->header[hn] = '\0';
    for (size_t i = 0; i < n; i++) /* an upper bound on the fields */
        nf += p[i] == f->delim;
    if ((st = csv_fields_cap(f, b, nf)) != VL_OK ||
        (st = csv_split(f, b, p, n, &nf)) != VL_OK || (st = csv_roles(f, b, nf)) != VL_OK)
        return st;
    f->ncols = nf;
    if (f->len_col < 0 && b->opts->len_col)
        return vl__mb_err(b, 0, "bad header: no column \"%s\" (header: %s)", b->opts->len_col,
                          f->header);
    if (f->len_col < 0)
        return vl__mb_err(b, 0,
                          "bad header: no length column (expected \"length\", \"len\" or "
                          "\"num_tokens\"; header: %s)",
                          f->header);
    if (f->id_col < 0 && b->opts->id_col)
        return vl__mb_err(b, 0, "bad header: no column \"%s\" (header: %s)", b->opts->id_col,
                          f->header);
    f->implicit = f->id_col < 0;
    snprintf(f->len_what, sizeof f->len_what, "\"%.*s\"", (int)f->fields[f->len_col].n,
             f->fields[f->len_col].p);
    return VL_OK;
}

static vl_status csv_row(vl__fmt *f, vl__mb *b, char *p, size_t n)
{
    const vl__field *fl = f->fields;
    vl__rec r = {0};
    size_t nf;
    char sh[64];
    vl_status st;

    if ((st = csv_split(f, b, p, n, &nf)) != VL_OK)
        return st;
    if (nf != f->ncols)
        return vl__mb_err(b, 0, "expected %zu column%s (%s), got %zu", f->ncols,
                          f->ncols == 1 ? "" : "s", f->header, nf);
    if (f->id_col >= 0 && (st = text_id(b, &r, fl[f->id_col].p, fl[f->id_col].n)) != VL_OK)
        return st;
    if ((st = text_len(b, &r.len, fl[f->len_col].p, fl[f->len_col].n, f->len_what)) != VL_OK)
        return st;
    if (f->loss_col >= 0 && fl[f->loss_col].n > 0 &&
        (st = text_loss(b, &r, fl[f->loss_col].p, fl[f->loss_col].n, "\"loss_tokens\"")) !=
            VL_OK)
        return st;
    if (f->src_col >= 0 && fl[f->src_col].n > 0) {
        r.src = fl[f->src_col].p;
        r.src_len = fl[f->src_col].n;
        if (!vl_utf8_valid(r.src, r.src_len))
            return vl__mb_err(b, 0, "source %s is not valid UTF-8 text",
                              show(sh, r.src, r.src_len));
    }
    return vl__mb_add(b, &r);
}

/* ---- detection and dispatch ---- */

static bool looks_numeric(const char *s, size_t n)
{
    while (n > 0 && *s == ' ')
        s++, n--;
    if (n > 0 && (*s == '+' || *s == '-'))
        s++, n--;
    if (n > 1 && *s == '.')
        s++, n--;
    return n > 0 && *s >= '0' && *s <= '9';
}

/* A header line: every field text (a single column only when it is a name we know). */
static bool header_like(const vl__mb *b, const char *p, size_t n, char delim)
{
    const char *end = p + n, *e;
    vl__field one = {(char *)p, n};

    if (delim == 0)
        return len_rank(b, &one) >= 0 ||
               field_is(&one, b->opts->id_col ? b->opts->id_col : "id");
    for (;; p = e + 1) {
        e = memchr(p, delim, (size_t)(end - p));
        if (e == NULL)
            e = end;
        if (looks_numeric(p, (size_t)(e - p)))
            return false;
        if (e == end)
            return true;
    }
}

/* From the first non-empty line [p, p+n) (leading blanks skipped); *header when the
 * line was a CSV header rather than a record. */
static vl_status detect(vl__fmt *f, vl__mb *b, char *p, size_t n, bool *header)
{
    char delim;
    vl__field fl[2];

    *header = false;
    if (p[0] == '{' || p[0] == '[') { /* '[' is never text: say it is not an object */
        f->kind = VL__FMT_JSONL;
        return VL_OK;
    }
    /* trailing blanks first: a tab after "id,len" pads it, it does not make a TSV */
    while (n > 0 && is_blank(p[n - 1]))
        n--;
    delim = memchr(p, '\t', n) ? '\t' : memchr(p, ',', n) ? ',' : 0;
    if (header_like(b, p, n, delim)) {
        f->kind = VL__FMT_CSV;
        f->delim = delim ? delim : ',';
        *header = true;
        return csv_header(f, b, p, n);
    }
    f->kind = VL__FMT_TEXT;
    f->implicit = ws_split(p, n, fl, 2) == 1;
    f->first_line = b->line;
    snprintf(f->len_what, sizeof f->len_what, "sample length");
    if (f->implicit && f->first_blank > 0) {
        b->line = f->first_blank;
        return vl__mb_err(b, 0,
                          "empty line (implicit ids are line numbers: remove it, or "
                          "give 'ID LENGTH' on every line)");
    }
    return VL_OK;
}

static vl_status blank_line(vl__fmt *f, vl__mb *b)
{
    if (f->kind == VL__FMT_TEXT && f->implicit)
        return vl__mb_err(b, 0,
                          "empty line (implicit ids are line numbers: remove it, or "
                          "give 'ID LENGTH' on every line)");
    if (f->kind == VL__FMT_NONE && f->first_blank == 0)
        f->first_blank = b->line;
    return VL_OK;
}

vl_status vl__parse_line(vl__fmt *f, vl__mb *b, char *p, size_t n)
{
    size_t i = 0;
    bool header;
    vl_status st;

    if (f->kind == VL__FMT_TEXT && f->implicit) { /* the hot path: one length per line */
        vl__rec r = {0};
        if (scan_count(p, n, &r.len) == 0 && r.len > 0)
            return vl__mb_add(b, &r);
    }
    while (i < n && is_blank(p[i]))
        i++;
    if (i == n)
        return blank_line(f, b);
    if (f->kind == VL__FMT_NONE &&
        ((st = detect(f, b, p + i, n - i, &header)) != VL_OK || header))
        return st;
    switch (f->kind) {
    case VL__FMT_TEXT: return text_line(f, b, p, n);
    case VL__FMT_CSV: return csv_row(f, b, p, n);
    default: return vl__jsonl_line(b, p, n);
    }
}

void vl__fmt_reset(vl__fmt *f)
{
    vl__field *fields = f->fields;
    size_t fcap = f->fcap;

    memset(f, 0, sizeof *f);
    f->id_col = f->len_col = f->loss_col = f->src_col = -1;
    f->fields = fields; /* scratch survives from one input to the next */
    f->fcap = fcap;
}

void vl__fmt_free(vl__fmt *f)
{
    free(f->fields);
    f->fields = NULL;
    f->fcap = 0;
}
