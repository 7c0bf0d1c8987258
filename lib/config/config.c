/* lib/config/config.c -- the effective configuration as a stack of overlays: built-in defaults,
 * then YAML files and --set assignments, each applied through the key table
 * (config_keys.c) atomically: a failing overlay leaves the config as it was. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config_impl.h"

const char *const vl__builtin_sections[] = {"model", "cluster", "training",
                                            "cost",  "pack",    NULL};

bool vl__is_builtin_section(const char *name)
{
    for (size_t i = 0; vl__builtin_sections[i] != NULL; i++)
        if (strcmp(vl__builtin_sections[i], name) == 0)
            return true;
    return false;
}

/* One overlay being applied to a working copy of the config. */
typedef struct apply {
    vl_config *cfg;
    unsigned fit_mask;
    vl_where *where;    /* NULL while applying the built-in defaults */
    const vl_ydoc *doc; /* NULL for the built-in defaults */
    vl_err *err;
} apply;

static vl_status apply_map(apply *a, const vl_ynode *map, const char *prefix);

static vl_status preset_err(const vl_vloc *loc, const vl_ynode *v, const char *const *names)
{
    char list[400];

    vl__join(names, list, sizeof list);
    if (v->kind != VL_YSCALAR)
        return vl__verr(loc, v, "expected one of %s, custom, got a %s", list,
                        v->kind == VL_YMAP ? "mapping" : "sequence");
    return vl__verr(loc, v, "expected one of %s, custom, got '%s'", list, v->text);
}

static vl_status apply_preset(apply *a, const vl_key *k, const vl_vloc *loc, const vl_ynode *v)
{
    char name[VL_NAME_MAX];

    if (v->kind != VL_YSCALAR || strlen(v->text) >= VL_NAME_MAX)
        return preset_err(loc, v, k->type == VL_K_MODEL ? vl_model_presets : vl_gpu_presets);
    strcpy(name, v->text);
    if (k->type == VL_K_MODEL && vl__model_preset_apply(&a->cfg->model, name) != 0)
        return preset_err(loc, v, vl_model_presets);
    if (k->type == VL_K_GPU && vl__gpu_preset_apply(&a->cfg->cluster, name) != 0)
        return preset_err(loc, v, vl_gpu_presets);
    return VL_OK;
}

static vl_status apply_fit(apply *a, const vl_key *k, const vl_vloc *loc, const vl_ynode *v)
{
    vl_cost_cfg *c = &a->cfg->cost;
    vl_status st;

    if (k->type == VL_K_FITNULL) {
        if (v->kind == VL_YSEQ)
            return vl__verr(loc, v, "expected null or a mapping of a, b, c, got a sequence");
        if (!vl__ynode_is_null(v))
            return vl__verr(loc, v, "expected null or a mapping of a, b, c, got '%s'",
                            v->text);
        a->fit_mask = 0;
        c->fit_set = false;
        c->fit_a = c->fit_b = c->fit_c = 0;
        return VL_OK;
    }
    if ((st = vl__val_double(loc, v, k->min, k->max,
                             (double *)(void *)((char *)a->cfg + k->off))) != VL_OK)
        return st;
    a->fit_mask |= (unsigned)k->role;
    c->fit_set = a->fit_mask == 7; /* only a complete fit replaces the analytic model */
    return VL_OK;
}

static vl_status apply_number(const vl_key *k, const vl_vloc *loc, const vl_ynode *v, void *p)
{
    long long i;
    unsigned long long u;
    vl_status st;

    switch (k->type) {
    case VL_K_INT:
        if ((st = vl__val_int(loc, v, k->min, k->max, &i)) == VL_OK)
            *(int *)p = (int)i;
        return st;
    case VL_K_U32:
        if ((st = vl__val_uint(loc, v, k->min, k->max, &u)) == VL_OK)
            *(uint32_t *)p = (uint32_t)u;
        return st;
    case VL_K_U64:
        if ((st = vl__val_uint(loc, v, k->min, k->max, &u)) == VL_OK)
            *(uint64_t *)p = (uint64_t)u;
        return st;
    default: return vl__val_double(loc, v, k->min, k->max, p);
    }
}

/* global_batch and global_tokens are alternatives: giving one clears the other. */
static void batch_exclusive(vl_training_cfg *t, const char *path)
{
    if (strcmp(path, "training.global_batch") == 0 && t->global_batch != 0)
        t->global_tokens = 0;
    else if (strcmp(path, "training.global_tokens") == 0 && t->global_tokens != 0)
        t->global_batch = 0;
}

static vl_status apply_leaf(apply *a, int ki, const vl_ynode *v)
{
    const vl_key *k = &vl__keys[ki];
    void *p = (char *)a->cfg + k->off;
    vl_vloc loc = {a->doc, k->path, a->err};
    vl_status st;

    switch (k->type) {
    case VL_K_BOOL: st = vl__val_bool(&loc, v, p); break;
    case VL_K_ENUM: st = vl__val_enum(&loc, v, k->choices, p); break;
    case VL_K_MODEL:
    case VL_K_GPU: st = apply_preset(a, k, &loc, v); break;
    case VL_K_CURVE: st = vl__val_curve(&loc, v, k->role, p); break;
    case VL_K_SCHEMES: st = vl__val_schemes(&loc, v, &a->cfg->cost); break;
    case VL_K_FIT:
    case VL_K_FITNULL: st = apply_fit(a, k, &loc, v); break;
    default: st = apply_number(k, &loc, v, p); break;
    }
    if (st != VL_OK)
        return st;
    batch_exclusive(&a->cfg->training, k->path);
    if (a->where != NULL)
        a->where[ki] = (vl_where){a->doc, v->line, v->col};
    return VL_OK;
}

static vl_status unknown_key(apply *a, const char *path, const vl_ynode *key)
{
    char hint[VL_PATH_MAX];
    vl_vloc loc = {a->doc, path, a->err};

    if (vl__key_suggest(path, hint, sizeof hint))
        return vl__verr(&loc, key, "unknown key, did you mean '%s'?", hint);
    return vl__verr(&loc, key, "unknown key");
}

static vl_status apply_pair(apply *a, const char *path, const vl_ynode *key, const vl_ynode *v)
{
    int ki = vl__key_find(path);
    vl_vloc loc = {a->doc, path, a->err};

    if (v->kind == VL_YMAP && (ki < 0 || vl__keys[ki].type == VL_K_FITNULL) &&
        vl__key_is_section(path))
        return apply_map(a, v, path);
    if (ki >= 0)
        return apply_leaf(a, ki, v);
    if (!vl__key_is_section(path))
        return unknown_key(a, path, key);
    if (vl__ynode_is_null(v))
        return VL_OK; /* "moe:" with nothing under it */
    if (v->kind == VL_YSEQ)
        return vl__verr(&loc, v, "expected a mapping, got a sequence");
    return vl__verr(&loc, v, "expected a mapping, got '%s'", v->text);
}

/* Both alternatives non-zero in one section is a contradiction, not an override. */
static vl_status check_batch_pair(apply *a, const vl_ynode *map)
{
    const vl_ynode *b = vl__ymap_get(map, "global_batch");
    const vl_ynode *t = vl__ymap_get(map, "global_tokens");
    const vl_ynode *later;
    vl_vloc loc = {a->doc, "training.global_tokens", a->err};

    if (b == NULL || t == NULL || strtoull(b->text, NULL, 10) == 0 ||
        strtoull(t->text, NULL, 10) == 0)
        return VL_OK;
    later = (t->line > b->line || (t->line == b->line && t->col > b->col)) ? t : b;
    if (later == b)
        loc.path = "training.global_batch";
    return vl__verr(&loc, later,
                    "expected 0 beside a non-zero training.%s (give one of the two), got %s",
                    later == b ? "global_tokens" : "global_batch", later->text);
}

static vl_status apply_map(apply *a, const vl_ynode *map, const char *prefix)
{
    char path[VL_PATH_MAX];
    vl_status st;

    /* presets first: model.preset / cluster.gpu load numbers the other keys override */
    for (int pass = 0; pass < 2; pass++)
        for (size_t i = 0; i + 1 < map->n; i += 2) {
            const vl_ynode *k = map->kids[i];
            int ki, w = snprintf(path, sizeof path, "%s.%s", prefix, k->text);
            bool preset;
            if (w < 0 || (size_t)w >= sizeof path)
                return unknown_key(a, prefix, k);
            ki = vl__key_find(path);
            preset =
                ki >= 0 && (vl__keys[ki].type == VL_K_MODEL || vl__keys[ki].type == VL_K_GPU);
            if (preset == (pass == 0) &&
                (st = apply_pair(a, path, k, map->kids[i + 1])) != VL_OK)
                return st;
        }
    return strcmp(prefix, "training") == 0 ? check_batch_pair(a, map) : VL_OK;
}

static vl_status apply_section(apply *a, const vl_ynode *key, const vl_ynode *v)
{
    const char *hint;
    vl_vloc loc = {a->doc, key->text, a->err};

    if (vl__is_builtin_section(key->text)) {
        if (v->kind == VL_YMAP)
            return apply_map(a, v, key->text);
    } else {
        /* a strategy section, bound later; a near-miss of a built-in one is a typo, and
         * no strategy name has a dot ("model.layers: 40" at the top level) */
        if (strchr(key->text, '.') != NULL)
            return vl__verr(&loc, key, "unknown section (nest the keys: %.*s: {%s: ...})",
                            (int)strcspn(key->text, "."), key->text,
                            strchr(key->text, '.') + 1);
        hint = vl__suggest(key->text, vl__builtin_sections, 5);
        if (hint != NULL)
            return vl__verr(&loc, key, "unknown section, did you mean '%s'?", hint);
        if (v->kind == VL_YMAP)
            return VL_OK;
    }
    if (vl__ynode_is_null(v))
        return VL_OK;
    if (v->kind == VL_YSEQ)
        return vl__verr(&loc, v, "expected a mapping, got a sequence");
    return vl__verr(&loc, v, "expected a mapping, got '%s'", v->text);
}

static vl_status apply_doc(apply *a)
{
    const vl_ynode *root = a->doc->root;
    vl_vloc loc = {a->doc, "(top level)", a->err};
    vl_status st;

    if (root == NULL || vl__ynode_is_null(root))
        return VL_OK;
    if (root->kind == VL_YSEQ)
        return vl__verr(&loc, root, "expected a mapping of sections, got a sequence");
    if (root->kind != VL_YMAP)
        return vl__verr(&loc, root, "expected a mapping of sections, got '%s'", root->text);
    for (size_t i = 0; i + 1 < root->n; i += 2)
        if ((st = apply_section(a, root->kids[i], root->kids[i + 1])) != VL_OK)
            return st;
    return VL_OK;
}

const char *vl_config_key_source(const vl_config *cfg, const char *path)
{
    const vl_config_raw *raw = cfg->raw;
    int k = vl__key_find(path);

    if (raw == NULL || k < 0 || raw->where[k].doc == NULL)
        return NULL;
    return raw->where[k].doc->name;
}

vl_config_raw *vl__raw_get(vl_config *cfg)
{
    vl_config_raw *raw = cfg->raw;

    if (raw != NULL)
        return raw;
    if ((raw = calloc(1, sizeof *raw)) == NULL)
        return NULL;
    if ((raw->where = calloc(vl__nkeys(), sizeof *raw->where)) == NULL) {
        free(raw);
        return NULL;
    }
    raw->fit_mask = cfg->cost.fit_set ? 7u : 0u;
    cfg->raw = raw;
    return raw;
}

/* Apply doc to a copy of cfg and commit only on success.  Takes ownership of doc. */
static vl_status overlay(vl_config *cfg, vl_ydoc *doc, vl_err *err)
{
    vl_config_raw *raw = vl__raw_get(cfg);
    vl_config work = *cfg;
    apply a = {.cfg = &work, .doc = doc, .err = err};
    vl_status st = VL_OK;

    if (raw != NULL && raw->ndocs == raw->cap) {
        size_t cap = raw->cap ? 2 * raw->cap : 4;
        vl_ydoc **d = realloc(raw->docs, cap * sizeof *d);
        if (d == NULL)
            raw = NULL;
        else {
            raw->docs = d;
            raw->cap = cap;
        }
    }
    if (raw == NULL || (a.where = malloc(vl__nkeys() * sizeof *a.where)) == NULL) {
        vl__ydoc_free(doc);
        return vl_seterr(err, VL_ENOMEM, "out of memory");
    }
    memcpy(a.where, raw->where, vl__nkeys() * sizeof *a.where);
    a.fit_mask = raw->fit_mask;
    if ((st = apply_doc(&a)) == VL_OK) {
        *cfg = work;
        memcpy(raw->where, a.where, vl__nkeys() * sizeof *a.where);
        raw->fit_mask = a.fit_mask;
        if (raw->where[vl__key_find("training.dp")].doc == doc)
            raw->dp_auto = false;      /* given explicitly from now on */
        raw->docs[raw->ndocs++] = doc; /* kept: strategy sections, names in messages */
    } else {
        vl__ydoc_free(doc);
    }
    free(a.where);
    return st;
}

static vl_ydoc *doc_new(const char *name, bool marks)
{
    vl_ydoc *d = calloc(1, sizeof *d);

    if (d == NULL)
        return NULL;
    if ((d->name = strdup(name)) == NULL) {
        free(d);
        return NULL;
    }
    d->marks = marks;
    return d;
}

static vl_status load_text(vl_config *cfg, const char *text, size_t len, const char *name,
                           vl_err *err)
{
    vl_ydoc *doc = doc_new(name, true);
    vl_status st;

    if (doc == NULL)
        return vl_seterr(err, VL_ENOMEM, "out of memory");
    if ((st = vl__yaml_parse(doc, text, len, err)) != VL_OK) {
        vl__ydoc_free(doc);
        return st;
    }
    if ((st = overlay(cfg, doc, err)) == VL_OK)
        snprintf(cfg->source, sizeof cfg->source, "%s", name);
    return st;
}

vl_status vl_config_load_string(vl_config *cfg, const char *yaml, const char *name,
                                vl_err *err)
{
    return load_text(cfg, yaml, strlen(yaml), name ? name : "<string>", err);
}

/* Whole file into memory (configs are small; VL_YAML_MAX_BYTES caps a mistake). */
static vl_status read_file(const char *path, char **out, size_t *len, vl_err *err)
{
    FILE *f = fopen(path, "rb");
    char *buf = NULL, *nb;
    size_t n = 0, cap = 0, got = 0;
    vl_status st = VL_OK;

    if (f == NULL)
        return vl_seterr(err, VL_ENOINPUT, "cannot open '%s': %s", path, strerror(errno));
    do {
        n += got;
        if (n == cap && cap <= VL_YAML_MAX_BYTES) {
            cap = cap ? 2 * cap : 65536;
            if ((nb = realloc(buf, cap + 1)) == NULL) {
                st = vl_seterr(err, VL_ENOMEM, "out of memory");
                break;
            }
            buf = nb;
        }
    } while (n < cap && (got = fread(buf + n, 1, cap - n, f)) > 0);
    if (st == VL_OK && ferror(f))
        st = vl_seterr(err, VL_ENOINPUT, "cannot read '%s': %s", path, strerror(errno));
    else if (st == VL_OK && n > VL_YAML_MAX_BYTES)
        st = vl_seterr(err, VL_ECONFIG, "%s: larger than %u bytes", path, VL_YAML_MAX_BYTES);
    fclose(f); /* read-only: closing cannot lose data */
    if (st != VL_OK) {
        free(buf);
        return st;
    }
    *out = buf;
    *len = n;
    return VL_OK;
}

vl_status vl_config_load_file(vl_config *cfg, const char *path, vl_err *err)
{
    char *text = NULL;
    size_t len = 0;
    vl_status st;

    if ((st = read_file(path, &text, &len, err)) != VL_OK)
        return st;
    st = load_text(cfg, text, len, path, err);
    free(text);
    return st;
}

/* KEY must be dotted words of [A-Za-z0-9_-]. */
static bool key_ok(const char *key, size_t n)
{
    bool word = false;

    for (size_t i = 0; i < n; i++) {
        char c = key[i];
        if (c == '.') {
            if (!word)
                return false;
            word = false;
        } else if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                   (c >= '0' && c <= '9') || c == '_' || c == '-') {
            word = true;
        } else {
            return false;
        }
    }
    return word;
}

/* Wrap value in one mapping per key component: "a.b=v" becomes {a: {b: v}}. */
static vl_ynode *wrap_path(const char *key, size_t n, vl_ynode *value)
{
    size_t end = n;

    while (value != NULL) {
        size_t start = end;
        vl_ynode *map, *k;
        while (start > 0 && key[start - 1] != '.')
            start--;
        map = vl__ynode_new(VL_YMAP, 0, 0);
        k = vl__ynode_scalar(key + start, end - start, false, 0, 0);
        if (map == NULL || k == NULL || vl__ynode_push(map, k) != 0) {
            vl__ynode_free(k);
            vl__ynode_free(map);
            vl__ynode_free(value);
            return NULL;
        }
        if (vl__ynode_push(map, value) != 0) {
            vl__ynode_free(map);
            vl__ynode_free(value);
            return NULL;
        }
        value = map;
        if (start == 0)
            break;
        end = start - 1;
    }
    return value;
}

vl_status vl_config_set(vl_config *cfg, const char *assignment, vl_err *err)
{
    const char *eq = strchr(assignment, '=');
    char name[VL_ERRMSG_MAX / 2];
    vl_ydoc *doc;
    vl_status st;

    snprintf(name, sizeof name, "--set %s", assignment);
    if (eq == NULL || !key_ok(assignment, (size_t)(eq - assignment))) {
        vl_seterr(err, VL_ECONFIG, "%s: expected KEY=VALUE with KEY like training.pp", name);
        vl__oneline(err);
        return VL_ECONFIG;
    }
    if ((doc = doc_new(name, false)) == NULL)
        return vl_seterr(err, VL_ENOMEM, "out of memory");
    if ((st = vl__yaml_parse(doc, eq + 1, strlen(eq + 1), err)) != VL_OK) {
        vl__ydoc_free(doc);
        return st;
    }
    if (doc->root == NULL)
        doc->root = vl__ynode_scalar("", 0, false, 0, 0); /* "key=" is null */
    doc->root = wrap_path(assignment, (size_t)(eq - assignment), doc->root);
    if (doc->root == NULL) {
        vl__ydoc_free(doc);
        return vl_seterr(err, VL_ENOMEM, "out of memory");
    }
    return overlay(cfg, doc, err);
}

vl_status vl_config_init_default(vl_config *cfg, vl_err *err)
{
    apply a = {.cfg = cfg, .err = err};
    vl_status st;

    memset(cfg, 0, sizeof *cfg);
    for (size_t i = 0; vl__keys[i].path != NULL; i++) {
        vl_ynode v = {.kind = VL_YSCALAR, .text = (char *)vl__keys[i].def};
        if (v.text == NULL)
            continue;
        if ((st = apply_leaf(&a, (int)i, &v)) != VL_OK) {
            char msg[VL_ERRMSG_MAX];
            snprintf(msg, sizeof msg, "%s", err ? err->msg : "");
            return vl_seterr(err, VL_EINTERNAL, "built-in default: %s", msg);
        }
    }
    snprintf(cfg->source, sizeof cfg->source, "<built-in>");
    return VL_OK;
}

void vl_config_free(vl_config *cfg)
{
    vl_config_raw *raw;

    if (cfg == NULL || (raw = cfg->raw) == NULL)
        return;
    for (size_t i = 0; i < raw->ndocs; i++)
        vl__ydoc_free(raw->docs[i]);
    free(raw->docs);
    free(raw->where);
    free(raw);
    cfg->raw = NULL;
}
