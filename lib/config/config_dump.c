/* lib/config/config_dump.c -- the effective config written back out, every key in table order:
 * YAML (a node tree handed to config_yaml.c's emitter; loading it gives the same config)
 * and compact JSON via jansson (integers as integers), strategy sections appended as the
 * user wrote them. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "config_impl.h"
#include "jsonw.h"

vl_status vl__json_text(struct json_t *obj, char **out, vl_err *err)
{
    char *text = obj ? vl_json_dumps(obj, JSON_COMPACT | JSON_REAL_PRECISION(15)) : NULL;

    json_decref(obj);
    *out = text;
    return text ? VL_OK : vl_seterr(err, VL_ENOMEM, "out of memory");
}

/* A key is dumped unless it is the half of cost.fit that does not apply. */
static bool dumped(const vl_config *cfg, const vl_key *k)
{
    if (k->type == VL_K_FIT)
        return cfg->cost.fit_set;
    if (k->type == VL_K_FITNULL)
        return !cfg->cost.fit_set;
    return true;
}

/* ---- strategy sections, merged over the overlays ---- */

vl_status vl__raw_sections(const vl_config *cfg, vl_ynode **out, vl_err *err)
{
    const vl_config_raw *raw = cfg->raw;
    vl_ynode *all = NULL;

    *out = NULL;
    for (size_t d = 0; raw != NULL && d < raw->ndocs; d++) {
        const vl_ynode *root = raw->docs[d]->root;
        for (size_t i = 0; root && root->kind == VL_YMAP && i + 1 < root->n; i += 2) {
            vl_ynode *pair[2] = {root->kids[i], root->kids[i + 1]};
            vl_ynode one = {.kind = VL_YMAP, .n = 2, .kids = pair};
            if (vl__is_builtin_section(pair[0]->text) ||
                (vl__ynode_is_null(pair[1]) && vl__ymap_get(all, pair[0]->text)))
                continue; /* an empty section later on does not erase earlier keys */
            if (all == NULL && (all = vl__ynode_new(VL_YMAP, 0, 0)) == NULL)
                return vl_seterr(err, VL_ENOMEM, "out of memory");
            if (vl__ynode_merge(all, &one) != 0) {
                vl__ynode_free(all);
                return vl_seterr(err, VL_ENOMEM, "out of memory");
            }
        }
    }
    *out = all;
    return VL_OK;
}

/* ---- YAML ---- */

static vl_ynode *scalar(const char *text)
{
    return vl__ynode_scalar(text, strlen(text), false, 0, 0);
}

static vl_ynode *curve_node(const vl_curve *c)
{
    vl_ynode *seq = vl__ynode_new(VL_YSEQ, 0, 0);
    char x[32], y[32];

    if (seq == NULL)
        return NULL;
    seq->flow = true;
    for (int i = 0; i < c->n; i++) {
        vl_ynode *pt = vl__ynode_new(VL_YSEQ, 0, 0), *a, *b;
        vl__fmt_double(c->x[i], x);
        vl__fmt_double(c->y[i], y);
        a = scalar(x);
        b = scalar(y);
        if (pt == NULL || a == NULL || b == NULL || vl__ynode_push(seq, pt) != 0) {
            vl__ynode_free(a);
            vl__ynode_free(b);
            vl__ynode_free(pt);
            vl__ynode_free(seq);
            return NULL;
        }
        pt->flow = true;
        if (vl__ynode_push(pt, a) != 0) {
            vl__ynode_free(a);
            vl__ynode_free(b);
            vl__ynode_free(seq);
            return NULL;
        }
        if (vl__ynode_push(pt, b) != 0) {
            vl__ynode_free(b);
            vl__ynode_free(seq);
            return NULL;
        }
    }
    return seq;
}

/* name: value in a flow mapping; false when out of memory. */
static bool map_put(vl_ynode *map, const char *name, const char *value)
{
    vl_ynode *k = scalar(name), *v = scalar(value);

    if (k == NULL || v == NULL || vl__ynode_push(map, k) != 0) {
        vl__ynode_free(k);
        vl__ynode_free(v);
        return false;
    }
    if (vl__ynode_push(map, v) != 0) {
        vl__ynode_free(v);
        return false;
    }
    return true;
}

/* cost.schemes as a flow list of flow mappings, [] when empty. */
static vl_ynode *schemes_node(const vl_cost_cfg *c)
{
    vl_ynode *seq = vl__ynode_new(VL_YSEQ, 0, 0);

    if (seq == NULL)
        return NULL;
    seq->flow = true;
    for (int i = 0; i < c->nschemes; i++) {
        const vl_scheme *r = &c->schemes[i];
        vl_ynode *m = vl__ynode_new(VL_YMAP, 0, 0);
        char tp[16], pp[16], sp[16], a[32], b[32], cc[32];
        snprintf(tp, sizeof tp, "%d", r->tp);
        snprintf(pp, sizeof pp, "%d", r->pp);
        snprintf(sp, sizeof sp, "%d", r->sp);
        vl__fmt_double(r->a, a);
        vl__fmt_double(r->b, b);
        vl__fmt_double(r->c, cc);
        if (m == NULL || vl__ynode_push(seq, m) != 0) {
            vl__ynode_free(m);
            vl__ynode_free(seq);
            return NULL;
        }
        m->flow = true;
        if (!map_put(m, "tp", tp) || !map_put(m, "pp", pp) || !map_put(m, "sp", sp) ||
            !map_put(m, "a", a) || !map_put(m, "b", b) || !map_put(m, "c", cc) ||
            (r->comm_analytic && !map_put(m, "comm", "analytic"))) {
            vl__ynode_free(seq);
            return NULL;
        }
    }
    return seq;
}

/* The value of key k in cfg as a YAML node. */
static vl_ynode *key_node(const vl_config *cfg, const vl_key *k)
{
    const void *p = (const char *)cfg + k->off;
    char buf[64];

    switch (k->type) {
    case VL_K_INT: snprintf(buf, sizeof buf, "%d", *(const int *)p); break;
    case VL_K_U32: snprintf(buf, sizeof buf, "%" PRIu32, *(const uint32_t *)p); break;
    case VL_K_U64: snprintf(buf, sizeof buf, "%" PRIu64, *(const uint64_t *)p); break;
    case VL_K_DOUBLE:
    case VL_K_FIT: vl__fmt_double(*(const double *)p, buf); break;
    case VL_K_BOOL:
        snprintf(buf, sizeof buf, "%s", *(const bool *)p ? "true" : "false");
        break;
    case VL_K_ENUM: snprintf(buf, sizeof buf, "%s", k->choices[*(const int *)p]); break;
    case VL_K_MODEL:
    case VL_K_GPU: snprintf(buf, sizeof buf, "%s", (const char *)p); break;
    case VL_K_CURVE: return curve_node(p);
    case VL_K_SCHEMES: return schemes_node(p);
    case VL_K_FITNULL: snprintf(buf, sizeof buf, "null"); break;
    }
    return scalar(buf);
}

/* The mapping under `parent` for the next component of path, created on first use. */
static vl_ynode *child_map(vl_ynode *parent, const char *name, size_t len)
{
    vl_ynode *k, *m;

    for (size_t i = 0; i + 1 < parent->n; i += 2)
        if (strlen(parent->kids[i]->text) == len &&
            strncmp(parent->kids[i]->text, name, len) == 0)
            return parent->kids[i + 1];
    k = vl__ynode_scalar(name, len, false, 0, 0);
    m = vl__ynode_new(VL_YMAP, 0, 0);
    if (k == NULL || m == NULL || vl__ynode_push(parent, k) != 0) {
        vl__ynode_free(k);
        vl__ynode_free(m);
        return NULL;
    }
    if (vl__ynode_push(parent, m) != 0) {
        vl__ynode_free(m);
        parent->n--;
        vl__ynode_free(k);
        return NULL;
    }
    return m;
}

/* Hang value (owned) at the dotted path below root; -1 on allocation failure. */
static int tree_put(vl_ynode *root, const char *path, vl_ynode *value)
{
    const char *dot, *leaf = path;
    vl_ynode *at = root, *k;

    while (at != NULL && (dot = strchr(leaf, '.')) != NULL) {
        at = child_map(at, leaf, (size_t)(dot - leaf));
        leaf = dot + 1;
    }
    k = scalar(leaf);
    if (at == NULL || value == NULL || k == NULL || vl__ynode_push(at, k) != 0) {
        vl__ynode_free(k);
        vl__ynode_free(value);
        return -1;
    }
    if (vl__ynode_push(at, value) != 0) {
        at->n--;
        vl__ynode_free(k);
        vl__ynode_free(value);
        return -1;
    }
    return 0;
}

static vl_status yaml_tree(const vl_config *cfg, vl_ynode **out, vl_err *err)
{
    vl_ynode *root = vl__ynode_new(VL_YMAP, 0, 0), *extra = NULL;
    vl_status st;

    *out = NULL;
    for (size_t i = 0; root != NULL && vl__keys[i].path != NULL; i++)
        if (dumped(cfg, &vl__keys[i]) &&
            tree_put(root, vl__keys[i].path, key_node(cfg, &vl__keys[i])) != 0) {
            vl__ynode_free(root);
            root = NULL;
        }
    if (root == NULL)
        return vl_seterr(err, VL_ENOMEM, "out of memory");
    if ((st = vl__raw_sections(cfg, &extra, err)) != VL_OK) {
        vl__ynode_free(root);
        return st;
    }
    if (extra != NULL && vl__ynode_merge(root, extra) != 0) {
        vl__ynode_free(extra);
        vl__ynode_free(root);
        return vl_seterr(err, VL_ENOMEM, "out of memory");
    }
    vl__ynode_free(extra);
    *out = root;
    return VL_OK;
}

vl_status vl_config_dump_yaml(const vl_config *cfg, char **out, vl_err *err)
{
    vl_ynode *root;
    vl_status st;

    *out = NULL;
    if ((st = yaml_tree(cfg, &root, err)) != VL_OK)
        return st;
    st = vl__yaml_emit(root, "# vlplan effective configuration (vlplan config --dump)\n", out,
                       err);
    vl__ynode_free(root);
    return st;
}

/* ---- JSON ---- */

static json_t *curve_json(const vl_curve *c)
{
    json_t *arr = json_array();

    for (int i = 0; arr != NULL && i < c->n; i++) {
        json_t *x = c->x[i] == floor(c->x[i]) && c->x[i] < 9e15
                        ? json_integer((json_int_t)c->x[i])
                        : json_real(c->x[i]);
        if (json_array_append_new(arr, json_pack("[o, f]", x, c->y[i])) != 0) {
            json_decref(arr);
            return NULL;
        }
    }
    return arr;
}

static json_t *schemes_json(const vl_cost_cfg *c)
{
    json_t *arr = json_array();

    for (int i = 0; arr != NULL && i < c->nschemes; i++) {
        const vl_scheme *r = &c->schemes[i];
        /* comm only where analytic, so rows of whole times dump as they always did */
        json_t *row = json_pack("{s:i, s:i, s:i, s:f, s:f, s:f}", "tp", r->tp, "pp", r->pp,
                                "sp", r->sp, "a", r->a, "b", r->b, "c", r->c);
        if (row && r->comm_analytic &&
            json_object_set_new(row, "comm", json_string("analytic")) != 0) {
            json_decref(row);
            row = NULL;
        }
        if (json_array_append_new(arr, row) != 0) {
            json_decref(arr);
            return NULL;
        }
    }
    return arr;
}

static json_t *key_json(const vl_config *cfg, const vl_key *k)
{
    const void *p = (const char *)cfg + k->off;

    switch (k->type) {
    case VL_K_INT: return json_integer(*(const int *)p);
    case VL_K_U32: return json_integer(*(const uint32_t *)p);
    case VL_K_U64: /* keys of this type stop at 2^53 - 1 */
        return json_integer((json_int_t)(*(const uint64_t *)p));
    case VL_K_DOUBLE:
    case VL_K_FIT: return json_real(*(const double *)p);
    case VL_K_BOOL: return json_boolean(*(const bool *)p);
    case VL_K_ENUM: return json_string(k->choices[*(const int *)p]);
    case VL_K_MODEL:
    case VL_K_GPU: return json_string((const char *)p);
    case VL_K_CURVE: return curve_json(p);
    case VL_K_SCHEMES: return schemes_json(p);
    case VL_K_FITNULL: return json_null();
    }
    return NULL;
}

static json_t *json_child(json_t *parent, const char *name, size_t len)
{
    char key[VL_PATH_MAX];
    json_t *o;

    snprintf(key, sizeof key, "%.*s", (int)len, name);
    if ((o = json_object_get(parent, key)) != NULL)
        return o;
    if (json_object_set_new(parent, key, json_object()) != 0)
        return NULL;
    return json_object_get(parent, key);
}

static int json_put(json_t *root, const char *path, json_t *value)
{
    const char *dot, *leaf = path;
    json_t *at = root;

    while (at != NULL && (dot = strchr(leaf, '.')) != NULL) {
        at = json_child(at, leaf, (size_t)(dot - leaf));
        leaf = dot + 1;
    }
    if (at == NULL || value == NULL) {
        json_decref(value);
        return -1;
    }
    return json_object_set_new(at, leaf, value);
}

/* Strategy sections keep the user's words; plain scalars become numbers, booleans or
 * null where YAML would read them so. */
static json_t *scalar_json(const vl_ynode *n)
{
    char *end;
    long long i;
    double d;

    if (n->quoted)
        return json_string(n->text);
    if (vl__ynode_is_null(n))
        return json_null();
    if (strcmp(n->text, "true") == 0 || strcmp(n->text, "false") == 0)
        return json_boolean(n->text[0] == 't');
    i = strtoll(n->text, &end, 10);
    if (*n->text != '\0' && *end == '\0' && strspn(n->text, "+-0123456789") == strlen(n->text))
        return json_integer(i);
    d = strtod(n->text, &end);
    if (*n->text != '\0' && *end == '\0' && isfinite(d) &&
        strspn(n->text, "+-.0123456789eE") == strlen(n->text))
        return json_real(d);
    return json_string(n->text);
}

static json_t *node_json(const vl_ynode *n)
{
    json_t *j;

    if (n->kind == VL_YSCALAR)
        return scalar_json(n);
    j = n->kind == VL_YSEQ ? json_array() : json_object();
    for (size_t i = 0; j != NULL && i < n->n; i += (n->kind == VL_YMAP ? 2 : 1)) {
        int rc = n->kind == VL_YSEQ
                     ? json_array_append_new(j, node_json(n->kids[i]))
                     : json_object_set_new(j, n->kids[i]->text, node_json(n->kids[i + 1]));
        if (rc != 0) {
            json_decref(j);
            j = NULL;
        }
    }
    return j;
}

/* The plain scalar n of parameter p as its binding reads it: a bool written on, yes or
 * True is a JSON bool, a number a JSON number; NULL when p is not a scalar of those types
 * or n does not read as one (then binding refuses it as written anyway). */
static json_t *typed_param_json(const vl_param *p, const vl_ynode *n)
{
    vl_err quiet = {0};
    vl_vloc loc = {NULL, p->key, &quiet};
    long long i;
    double d;
    bool b;

    if (n->kind != VL_YSCALAR || n->quoted)
        return NULL;
    switch (p->type) {
    case VL_P_BOOL: return vl__val_bool(&loc, n, &b) == VL_OK ? json_boolean(b) : NULL;
    case VL_P_INT:
    case VL_P_UINT:
    case VL_P_AUTO_UINT:
        return vl__val_int(&loc, n, -9e18, 9e18, &i) == VL_OK ? json_integer(i) : NULL;
    case VL_P_DOUBLE:
        return vl__val_double(&loc, n, -HUGE_VAL, HUGE_VAL, &d) == VL_OK ? json_real(d) : NULL;
    default: return NULL;
    }
}

/* The strategy's own section (o, its node sec) with every scalar parameter typed: the
 * plan header's config is read back from JSON, where a quoted scalar is a string by
 * design, so `--set mcore_cp.barrier=on` must be written true, not "on" (issue 28). */
static int type_section(json_t *o, const vl_ynode *sec, const vl_param *params)
{
    for (const vl_param *p = params; o != NULL && p && p->key != NULL; p++) {
        const vl_ynode *n = vl__ymap_get(sec, p->key);
        json_t *typed = n ? typed_param_json(p, n) : NULL;
        if (typed != NULL && json_object_set_new(o, p->key, typed) != 0)
            return -1;
    }
    return 0;
}

vl_status vl_config_dump_json(const vl_config *cfg, char **out, vl_err *err)
{
    return vl_config_dump_json_params(cfg, NULL, NULL, out, err);
}

vl_status vl_config_dump_json_params(const vl_config *cfg, const char *section,
                                     const vl_param *params, char **out, vl_err *err)
{
    json_t *root = json_object();
    vl_ynode *extra = NULL;
    vl_status st;

    *out = NULL;
    for (size_t i = 0; root != NULL && vl__keys[i].path != NULL; i++)
        if (dumped(cfg, &vl__keys[i]) &&
            json_put(root, vl__keys[i].path, key_json(cfg, &vl__keys[i])) != 0) {
            json_decref(root);
            root = NULL;
        }
    if (root == NULL)
        return vl_seterr(err, VL_ENOMEM, "out of memory");
    if ((st = vl__raw_sections(cfg, &extra, err)) != VL_OK) {
        json_decref(root);
        return st;
    }
    for (size_t i = 0; extra != NULL && i + 1 < extra->n; i += 2) {
        const vl_ynode *sec = extra->kids[i + 1];
        json_t *o = node_json(sec);
        bool own =
            section && strcmp(extra->kids[i]->text, section) == 0 && sec->kind == VL_YMAP;
        if (own && type_section(o, sec, params) != 0) {
            json_decref(o);
            o = NULL;
        }
        if (json_object_set_new(root, extra->kids[i]->text, o)) {
            vl__ynode_free(extra);
            json_decref(root);
            return vl_seterr(err, VL_ENOMEM, "out of memory");
        }
    }
    vl__ynode_free(extra);
    return vl__json_text(root, out, err);
}

/* ---- two configs compared ---- */

/* Append "path A vs B" for key k to buf (cap bytes, NUL-terminated, cut when full). */
static void diff_note(char *buf, size_t cap, const char *path, const json_t *a,
                      const json_t *b)
{
    char *ta = vl_json_dumps(a, JSON_COMPACT | JSON_ENCODE_ANY | JSON_REAL_PRECISION(15));
    char *tb = vl_json_dumps(b, JSON_COMPACT | JSON_ENCODE_ANY | JSON_REAL_PRECISION(15));
    size_t used = strlen(buf);

    if (used < cap)
        snprintf(buf + used, cap - used, "%s%s %s vs %s", used ? ", " : "", path,
                 ta ? ta : "?", tb ? tb : "?");
    free(ta);
    free(tb);
}

/* The strategy sections as written (they hold the strategies' parameters). */
static json_t *sections_json(const vl_config *cfg, vl_status *st, vl_err *err)
{
    vl_ynode *extra = NULL;
    json_t *o = json_object();

    if (!o) {
        *st = vl_seterr(err, VL_ENOMEM, "out of memory");
        return NULL;
    }
    if ((*st = vl__raw_sections(cfg, &extra, err)) != VL_OK) {
        json_decref(o);
        return NULL;
    }
    for (size_t i = 0; extra != NULL && i + 1 < extra->n; i += 2)
        if (json_object_set_new(o, extra->kids[i]->text, node_json(extra->kids[i + 1]))) {
            json_decref(o);
            o = NULL;
            *st = vl_seterr(err, VL_ENOMEM, "out of memory");
            break;
        }
    vl__ynode_free(extra);
    return o;
}

/* A string that YAML reads as a bool (on, yes, True...) matches that bool: one side may
 * be a plan header's config, where the strategy's bools are typed, the other the
 * sections as the user wrote them. */
static bool same_scalar(const json_t *a, const json_t *b)
{
    vl_ynode n = {.kind = VL_YSCALAR};
    vl_err quiet = {0};
    vl_vloc loc = {NULL, "", &quiet};
    bool v;

    if (json_is_boolean(a) && json_is_string(b)) {
        const json_t *t = a;
        a = b;
        b = t;
    }
    if (!json_is_string(a) || !json_is_boolean(b))
        return json_equal(a, b);
    n.text = (char *)json_string_value(a);
    return vl__val_bool(&loc, &n, &v) == VL_OK && v == json_is_true(b);
}

static bool same_json(const json_t *a, const json_t *b)
{
    const char *key;
    json_t *x;
    size_t i;

    if (json_is_object(a) && json_is_object(b)) {
        if (json_object_size(a) != json_object_size(b))
            return false;
        json_object_foreach((json_t *)a, key,
                            x) if (!same_json(x, json_object_get(b, key))) return false;
        return true;
    }
    if (json_is_array(a) && json_is_array(b)) {
        if (json_array_size(a) != json_array_size(b))
            return false;
        json_array_foreach(a, i, x) if (!same_json(x, json_array_get(b, i))) return false;
        return true;
    }
    return a != NULL && b != NULL && same_scalar(a, b);
}

static vl_status diff_sections(const vl_config *a, const vl_config *b, char *buf, size_t cap,
                               size_t *ndiff, vl_err *err)
{
    vl_status st = VL_OK;
    json_t *sa = sections_json(a, &st, err), *sb = sa ? sections_json(b, &st, err) : NULL;

    if (sa && sb && !same_json(sa, sb)) {
        *ndiff = 1;
        if (cap)
            snprintf(buf, cap, "the strategy sections");
    }
    json_decref(sa);
    json_decref(sb);
    return st;
}

vl_status vl_config_diff(const vl_config *a, const vl_config *b, char *buf, size_t cap,
                         size_t *ndiff, vl_err *err)
{
    *ndiff = 0;
    if (cap)
        buf[0] = '\0';
    for (size_t i = 0; vl__keys[i].path != NULL; i++) {
        const vl_key *k = &vl__keys[i];
        json_t *ja, *jb;
        if (strcmp(k->path, "training.seed") == 0 || !dumped(a, k) || !dumped(b, k))
            continue;
        ja = key_json(a, k);
        jb = key_json(b, k);
        if (!ja || !jb) {
            json_decref(ja);
            json_decref(jb);
            return vl_seterr(err, VL_ENOMEM, "out of memory");
        }
        if (!json_equal(ja, jb) && (*ndiff)++ < 4)
            diff_note(buf, cap, k->path, ja, jb);
        json_decref(ja);
        json_decref(jb);
    }
    return *ndiff > 0 ? VL_OK : diff_sections(a, b, buf, cap, ndiff, err);
}
