/* lib/config/config_impl.h -- private to lib/config*.c and their tests: the YAML node tree
 * (built by config_yaml.c, the only <yaml.h> user), the key table, presets, typed value
 * parsing, and the overlay bookkeeping kept behind vl_config.raw. */
#ifndef VLPLAN_CONFIG_INTERNAL_H
#define VLPLAN_CONFIG_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>

#include "config.h"
#include "err.h"

/* Limits that keep hostile input cheap: nesting depth, nodes per document (alias
 * expansion is a copy, so "billion laughs" hits VL_YAML_MAX_NODES), file size. */
#define VL_YAML_MAX_DEPTH 64
#define VL_YAML_MAX_NODES 65536
#define VL_YAML_MAX_BYTES (16u << 20)
#define VL_PATH_MAX 160

/* ---- YAML node tree (config_node.c) ---- */

typedef enum { VL_YSCALAR, VL_YSEQ, VL_YMAP } vl_ykind;

typedef struct vl_ynode vl_ynode;
struct vl_ynode {
    vl_ykind kind;
    int line, col;   /* 1-based start mark; 0 when the document has no marks */
    bool quoted;     /* scalar written quoted or as a block: always a string */
    bool flow;       /* sequence/mapping to be emitted in flow style */
    char *text;      /* scalar text, NUL-terminated (never NULL for a scalar) */
    size_t n, cap;   /* kids used / allocated */
    vl_ynode **kids; /* sequence: items; mapping: kids[2i] key, kids[2i+1] value */
};

/* One overlay: a parsed file, YAML string or --set assignment. */
typedef struct vl_ydoc {
    char *name;     /* file name, or "--set KEY=VALUE" */
    bool marks;     /* node line:col are meaningful */
    vl_ynode *root; /* NULL for an empty document */
} vl_ydoc;

vl_ynode *vl__ynode_new(vl_ykind kind, int line, int col);
/** A scalar holding a copy of text[0..len). */
vl_ynode *vl__ynode_scalar(const char *text, size_t len, bool quoted, int line, int col);
/** Append kid (ownership passes on success); -1 on allocation failure. */
int vl__ynode_push(vl_ynode *parent, vl_ynode *kid);
void vl__ynode_free(vl_ynode *n);
/** Deep copy; *budget is decremented per node and the copy fails (NULL) at 0. */
vl_ynode *vl__ynode_copy(const vl_ynode *n, size_t *budget);
size_t vl__ynode_depth(const vl_ynode *n);
/** Value of key in a mapping, or NULL. */
vl_ynode *vl__ymap_get(const vl_ynode *map, const char *key);
/** Plain "", "~" or "null": the YAML null. */
bool vl__ynode_is_null(const vl_ynode *n);
/** Merge mapping `from` into mapping `into` key by key (deep copies; `from` wins,
 *  nested mappings merge).  -1 on allocation failure. */
int vl__ynode_merge(vl_ynode *into, const vl_ynode *from);
void vl__ydoc_free(vl_ydoc *d);

/* ---- YAML text (config_yaml.c) ---- */

/** Parse one YAML document into doc->root (doc->name must be set).  Syntax errors,
 *  aliases beyond the node budget, too deep nesting, non-scalar or duplicate keys are
 *  VL_ECONFIG "NAME:LINE:COL: ..."; VL_ENOMEM. */
vl_status vl__yaml_parse(vl_ydoc *doc, const char *text, size_t len, vl_err *err);

/** Emit root (a mapping) as block YAML after `header` (comment lines, may be NULL).
 *  *out is malloc'd.  VL_ENOMEM, VL_EINTERNAL. */
vl_status vl__yaml_emit(const vl_ynode *root, const char *header, char **out, vl_err *err);

/* ---- key table (config_keys.c) ---- */

typedef enum {
    VL_K_INT,
    VL_K_U32,
    VL_K_U64,
    VL_K_DOUBLE,
    VL_K_BOOL,
    VL_K_ENUM,    /* int-sized enum; choices[] in enum order */
    VL_K_MODEL,   /* model.preset: loads a shape */
    VL_K_GPU,     /* cluster.gpu: loads GPU and node numbers */
    VL_K_CURVE,   /* vl_curve: [[x, y], ...] or a named curve of `role` */
    VL_K_FIT,     /* one of cost.fit.a/b/c (role = bit) */
    VL_K_FITNULL, /* cost.fit itself: null clears the fit */
    VL_K_SCHEMES  /* cost.schemes: [{tp, pp, sp, a, b, c}, ...] (vl_cost_cfg) */
} vl_ktype;

enum { VL_CURVE_GEMM, VL_CURVE_FWD, VL_CURVE_BWD };

typedef struct vl_key {
    const char *path; /* "training.pp"; NULL ends the table */
    vl_ktype type;
    size_t off;                 /* offsetof(vl_config, field) */
    double min, max;            /* inclusive range of numbers */
    const char *const *choices; /* VL_K_ENUM names */
    int role;                   /* VL_K_CURVE: VL_CURVE_*; VL_K_FIT: bit */
    const char *def;  /* default as YAML text; NULL = from model.preset/cluster.gpu */
    const char *unit; /* for the manual */
    const char *help;
} vl_key;

extern const vl_key vl__keys[];
size_t vl__nkeys(void);
/** Index of the key with this exact path, or -1. */
int vl__key_find(const char *path);
/** Some key path continues path with a "." (path names a subsection). */
bool vl__key_is_section(const char *path);
/** Closest known key or section path to an unknown one (edit distance among siblings,
 *  then the same last component elsewhere) into out; false when none is close. */
bool vl__key_suggest(const char *path, char *out, size_t n);
/** Closest of names[0..n-1] within a small edit distance, or NULL. */
const char *vl__suggest(const char *word, const char *const *names, size_t n);

/* ---- presets (config_presets.c) ---- */

/** Load a model shape / GPU + node numbers by name ("custom" keeps the numbers and only
 *  renames).  -1 when the name is unknown. */
int vl__model_preset_apply(vl_model_cfg *m, const char *name);
int vl__gpu_preset_apply(vl_cluster_cfg *c, const char *name);
/** A named efficiency curve for role (VL_CURVE_*), or NULL. */
const vl_curve *vl__curve_find(const char *name, int role);
/** "a, b, ..." of the curve names valid for role. */
void vl__curve_list(int role, char *buf, size_t n);

/* ---- typed values (config_value.c) ---- */

/** Where a value came from, for "NAME:LINE:COL: path: ..." messages. */
typedef struct vl_vloc {
    const vl_ydoc *doc; /* NULL: built-in default */
    const char *path;
    vl_err *err;
} vl_vloc;

/** Replace control characters in err->msg (user text in it) so it stays one line. */
void vl__oneline(vl_err *err);
/** Format one error at node `at` (may be NULL); returns VL_ECONFIG. */
vl_status vl__verr(const vl_vloc *loc, const vl_ynode *at, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
vl_status vl__val_int(const vl_vloc *loc, const vl_ynode *v, double min, double max,
                      long long *out);
vl_status vl__val_uint(const vl_vloc *loc, const vl_ynode *v, double min, double max,
                       unsigned long long *out);
vl_status vl__val_double(const vl_vloc *loc, const vl_ynode *v, double min, double max,
                         double *out);
vl_status vl__val_bool(const vl_vloc *loc, const vl_ynode *v, bool *out);
vl_status vl__val_enum(const vl_vloc *loc, const vl_ynode *v, const char *const *choices,
                       int *out);
/** A scalar string shorter than VL_NAME_MAX. */
vl_status vl__val_name(const vl_vloc *loc, const vl_ynode *v, char out[VL_NAME_MAX]);
vl_status vl__val_curve(const vl_vloc *loc, const vl_ynode *v, int role, vl_curve *out);
/** cost.schemes: null or [] clears; a list of mappings with tp, pp (integers >= 1), sp
 *  (optional, default 1) and a, b, c (milliseconds, >= 0); one row per <tp, pp, sp>. */
vl_status vl__val_schemes(const vl_vloc *loc, const vl_ynode *v, vl_cost_cfg *out);
/** Shortest "%.*g" text that reads back as the same double. */
void vl__fmt_double(double x, char buf[32]);
/** "a, b, c" of a NULL-terminated list into buf. */
void vl__join(const char *const *names, char *buf, size_t n);

/* ---- overlays (config.c) ---- */

/* Where each key was last set, so that finalize can point at the culprit. */
typedef struct vl_where {
    const vl_ydoc *doc;
    int line, col;
} vl_where;

typedef struct vl_config_raw {
    vl_ydoc **docs; /* every overlay, in order (strategy sections are bound later) */
    size_t ndocs, cap;
    unsigned fit_mask; /* bits of cost.fit.{a,b,c} given so far */
    bool dp_auto;      /* training.dp was derived by finalize: derive it again */
    vl_where *where;   /* [vl__nkeys()] */
} vl_config_raw;

/** cfg->raw, allocated on first use; NULL when out of memory. */
vl_config_raw *vl__raw_get(vl_config *cfg);

/** Top-level sections owned by the config itself. */
extern const char *const vl__builtin_sections[];
bool vl__is_builtin_section(const char *name);

/** Non-built-in sections of every overlay merged (later overlays win), as a mapping in
 *  first-appearance order; NULL when there are none.  VL_ENOMEM. */
vl_status vl__raw_sections(const vl_config *cfg, vl_ynode **out, vl_err *err);

/** Compact JSON text of obj (consumed) as a malloc'd string.  VL_ENOMEM. */
struct json_t;
vl_status vl__json_text(struct json_t *obj, char **out, vl_err *err);

#endif
