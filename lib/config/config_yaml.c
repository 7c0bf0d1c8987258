/* lib/config/config_yaml.c -- the only file that includes <yaml.h>: YAML text to the node
 * tree of config_impl.h (event API), and a node tree back to YAML (emitter).
 * libyaml's 1/0 results become vl_status here; marks become 1-based line:col. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <yaml.h>

#include "config_impl.h"
#include "strbuf.h"

typedef struct anchor {
    char *name;
    const vl_ynode *node;
    bool done; /* the anchored collection has ended */
} anchor;

typedef struct builder {
    vl_ydoc *doc;
    vl_err *err;
    vl_ynode *stack[VL_YAML_MAX_DEPTH];
    size_t depth;
    vl_ynode *root;
    anchor *anchors;
    size_t nanchors, capanchors;
    size_t budget; /* nodes still allowed in this document */
    int ndocs;
} builder;

/* "NAME:L:C: " or, for --set text that has no useful position, "NAME: ". */
static void where(const builder *b, int line, int col, char *buf, size_t n)
{
    if (b->doc->marks)
        snprintf(buf, n, "%s:%d:%d", b->doc->name, line, col);
    else
        snprintf(buf, n, "%s", b->doc->name);
}

static vl_status oom(builder *b)
{
    return vl_seterr(b->err, VL_ENOMEM, "%s: out of memory", b->doc->name);
}

/* Dotted path of the innermost open collection, from the keys of the enclosing
 * mappings: each open collection is the last kid of the one below it on the stack. */
static void build_path(const builder *b, char *buf, size_t n)
{
    size_t len = 0;

    buf[0] = '\0';
    for (size_t i = 0; i + 1 < b->depth && len < n; i++) {
        const vl_ynode *c = b->stack[i];
        int w;
        if (c->kind == VL_YMAP)
            w = snprintf(buf + len, n - len, "%s%s", len ? "." : "", c->kids[c->n - 2]->text);
        else
            w = snprintf(buf + len, n - len, "[%zu]", c->n - 1);
        if (w < 0)
            break;
        len += (size_t)w;
    }
}

static vl_status check_key(builder *b, const vl_ynode *map, const vl_ynode *key)
{
    char at[300], path[VL_PATH_MAX];

    where(b, key->line, key->col, at, sizeof at);
    build_path(b, path, sizeof path);
    if (key->kind != VL_YSCALAR)
        return vl_seterr(b->err, VL_ECONFIG, "%s: %s%sexpected a scalar key, got a %s", at,
                         path, *path ? ": " : "",
                         key->kind == VL_YMAP ? "mapping" : "sequence");
    for (size_t i = 0; i < map->n; i += 2)
        if (strcmp(map->kids[i]->text, key->text) == 0)
            return vl_seterr(b->err, VL_ECONFIG, "%s: %s%s%s: duplicate key (first at %d:%d)",
                             at, path, *path ? "." : "", key->text, map->kids[i]->line,
                             map->kids[i]->col);
    return VL_OK;
}

/* Hang a finished or opened node under the current collection (or make it the root).
 * Takes ownership of n in every case. */
static vl_status attach(builder *b, vl_ynode *n)
{
    vl_ynode *top;
    vl_status st;

    if (b->depth == 0) {
        vl__ynode_free(b->root); /* only one root per document */
        b->root = n;
        return VL_OK;
    }
    top = b->stack[b->depth - 1];
    if (top->kind == VL_YMAP && top->n % 2 == 0 && (st = check_key(b, top, n)) != VL_OK) {
        vl__ynode_free(n);
        return st;
    }
    if (vl__ynode_push(top, n) != 0) {
        vl__ynode_free(n);
        return oom(b);
    }
    return VL_OK;
}

static vl_status add_anchor(builder *b, const yaml_char_t *name, const vl_ynode *n, bool done)
{
    if (name == NULL)
        return VL_OK;
    if (b->nanchors == b->capanchors) {
        size_t cap = b->capanchors ? 2 * b->capanchors : 8;
        anchor *a = realloc(b->anchors, cap * sizeof *a);
        if (a == NULL)
            return oom(b);
        b->anchors = a;
        b->capanchors = cap;
    }
    b->anchors[b->nanchors].name = strdup((const char *)name);
    if (b->anchors[b->nanchors].name == NULL)
        return oom(b);
    b->anchors[b->nanchors].node = n;
    b->anchors[b->nanchors].done = done;
    b->nanchors++;
    return VL_OK;
}

static vl_status budget_left(builder *b, int line, int col)
{
    char at[300];

    if (b->budget > 0) {
        b->budget--;
        return VL_OK;
    }
    where(b, line, col, at, sizeof at);
    return vl_seterr(b->err, VL_ECONFIG, "%s: more than %d nodes (alias expansion?)", at,
                     VL_YAML_MAX_NODES);
}

static vl_status on_scalar(builder *b, const yaml_event_t *ev)
{
    int line = (int)ev->start_mark.line + 1, col = (int)ev->start_mark.column + 1;
    vl_ynode *n;
    vl_status st;

    if ((st = budget_left(b, line, col)) != VL_OK)
        return st;
    n = vl__ynode_scalar((const char *)ev->data.scalar.value, ev->data.scalar.length,
                         ev->data.scalar.style != YAML_PLAIN_SCALAR_STYLE, line, col);
    if (n == NULL)
        return oom(b);
    if ((st = attach(b, n)) != VL_OK)
        return st;
    return add_anchor(b, ev->data.scalar.anchor, n, true);
}

static vl_status on_start(builder *b, const yaml_event_t *ev, vl_ykind kind)
{
    int line = (int)ev->start_mark.line + 1, col = (int)ev->start_mark.column + 1;
    const yaml_char_t *anchor_name;
    char at[300];
    vl_ynode *n;
    vl_status st;

    if ((st = budget_left(b, line, col)) != VL_OK)
        return st;
    if (b->depth == VL_YAML_MAX_DEPTH) {
        where(b, line, col, at, sizeof at);
        return vl_seterr(b->err, VL_ECONFIG, "%s: nesting deeper than %d levels", at,
                         VL_YAML_MAX_DEPTH);
    }
    if ((n = vl__ynode_new(kind, line, col)) == NULL)
        return oom(b);
    if (kind == VL_YSEQ) {
        n->flow = ev->data.sequence_start.style == YAML_FLOW_SEQUENCE_STYLE;
        anchor_name = ev->data.sequence_start.anchor;
    } else {
        n->flow = ev->data.mapping_start.style == YAML_FLOW_MAPPING_STYLE;
        anchor_name = ev->data.mapping_start.anchor;
    }
    if ((st = attach(b, n)) != VL_OK)
        return st;
    b->stack[b->depth++] = n;
    return add_anchor(b, anchor_name, n, false);
}

static void on_end(builder *b)
{
    const vl_ynode *n = b->stack[--b->depth];

    for (size_t i = 0; i < b->nanchors; i++)
        if (b->anchors[i].node == n)
            b->anchors[i].done = true;
}

/* An alias becomes a copy, charged to the node budget: a document of nested aliases
 * ("billion laughs") fails early instead of growing exponentially. */
static vl_status on_alias(builder *b, const yaml_event_t *ev)
{
    int line = (int)ev->start_mark.line + 1, col = (int)ev->start_mark.column + 1;
    const char *name = (const char *)ev->data.alias.anchor;
    const anchor *a = NULL;
    char at[300];
    vl_ynode *copy;

    where(b, line, col, at, sizeof at);
    for (size_t i = b->nanchors; i-- > 0;)
        if (strcmp(b->anchors[i].name, name) == 0) {
            a = &b->anchors[i];
            break;
        }
    if (a == NULL)
        return vl_seterr(b->err, VL_ECONFIG, "%s: undefined alias '*%s'", at, name);
    if (!a->done)
        return vl_seterr(b->err, VL_ECONFIG, "%s: alias '*%s' refers to an enclosing node", at,
                         name);
    if (b->depth + vl__ynode_depth(a->node) > VL_YAML_MAX_DEPTH)
        return vl_seterr(b->err, VL_ECONFIG, "%s: nesting deeper than %d levels", at,
                         VL_YAML_MAX_DEPTH);
    copy = vl__ynode_copy(a->node, &b->budget);
    if (copy == NULL)
        return b->budget == 0 ? budget_left(b, line, col) : oom(b);
    copy->line = line; /* errors about the copy point at the alias */
    copy->col = col;
    return attach(b, copy);
}

static vl_status on_event(builder *b, const yaml_event_t *ev)
{
    char at[300];

    switch (ev->type) {
    case YAML_DOCUMENT_START_EVENT:
        if (++b->ndocs > 1) {
            where(b, (int)ev->start_mark.line + 1, (int)ev->start_mark.column + 1, at,
                  sizeof at);
            return vl_seterr(b->err, VL_ECONFIG, "%s: expected one YAML document, got more",
                             at);
        }
        return VL_OK;
    case YAML_SCALAR_EVENT: return on_scalar(b, ev);
    case YAML_SEQUENCE_START_EVENT: return on_start(b, ev, VL_YSEQ);
    case YAML_MAPPING_START_EVENT: return on_start(b, ev, VL_YMAP);
    case YAML_SEQUENCE_END_EVENT:
    case YAML_MAPPING_END_EVENT: on_end(b); return VL_OK;
    case YAML_ALIAS_EVENT: return on_alias(b, ev);
    default: return VL_OK;
    }
}

/* 1-based line and column (in characters, as libyaml counts them) of byte off. */
static void offset_pos(const char *text, size_t len, size_t off, int *line, int *col)
{
    *line = *col = 1;
    for (size_t i = 0; i < off && i < len; i++) {
        unsigned char c = (unsigned char)text[i];
        if (c == '\n') {
            ++*line;
            *col = 1;
        } else if ((c & 0xC0) != 0x80) { /* not a UTF-8 continuation byte */
            ++*col;
        }
    }
}

static vl_status syntax_error(builder *b, const yaml_parser_t *p, const char *text, size_t len)
{
    char at[300];
    int line, col;

    if (p->error == YAML_MEMORY_ERROR)
        return oom(b);
    if (p->error == YAML_READER_ERROR) {
        /* libyaml gives a reader error (bad UTF-8, a control character) as a byte
         * offset only; users look for a line and a column */
        offset_pos(text, len, p->problem_offset, &line, &col);
        where(b, line, col, at, sizeof at);
        return vl_seterr(b->err, VL_ECONFIG, "%s: YAML syntax error: %s", at,
                         p->problem ? p->problem : "unreadable input");
    }
    where(b, (int)p->problem_mark.line + 1, (int)p->problem_mark.column + 1, at, sizeof at);
    if (p->context != NULL)
        return vl_seterr(b->err, VL_ECONFIG, "%s: YAML syntax error: %s (%s at %d:%d)", at,
                         p->problem ? p->problem : "?", p->context,
                         (int)p->context_mark.line + 1, (int)p->context_mark.column + 1);
    return vl_seterr(b->err, VL_ECONFIG, "%s: YAML syntax error: %s", at,
                     p->problem ? p->problem : "?");
}

vl_status vl__yaml_parse(vl_ydoc *doc, const char *text, size_t len, vl_err *err)
{
    builder b = {.doc = doc, .err = err, .budget = VL_YAML_MAX_NODES};
    yaml_parser_t p;
    yaml_event_t ev;
    vl_status st = VL_OK;
    bool done = false;

    if (!yaml_parser_initialize(&p))
        return oom(&b);
    yaml_parser_set_input_string(&p, (const unsigned char *)text, len);
    while (!done && st == VL_OK) {
        if (!yaml_parser_parse(&p, &ev)) {
            st = syntax_error(&b, &p, text, len);
            break;
        }
        st = on_event(&b, &ev);
        done = ev.type == YAML_STREAM_END_EVENT;
        yaml_event_delete(&ev);
    }
    yaml_parser_delete(&p);
    for (size_t i = 0; i < b.nanchors; i++)
        free(b.anchors[i].name);
    free(b.anchors);
    if (st != VL_OK) {
        vl__ynode_free(b.root);
        vl__oneline(err);
        return st;
    }
    doc->root = b.root;
    return VL_OK;
}

/* ---- emitter ---- */

static int write_cb(void *data, unsigned char *buf, size_t size)
{
    vl_strbuf *o = data;

    vl_strbuf_add(o, (const char *)buf, size);
    return !o->failed; /* libyaml: 1 = success */
}

static int emit_node(yaml_emitter_t *e, const vl_ynode *n)
{
    yaml_event_t ev;

    if (n->kind == VL_YSCALAR) {
        yaml_scalar_style_t style =
            n->quoted ? YAML_DOUBLE_QUOTED_SCALAR_STYLE : YAML_PLAIN_SCALAR_STYLE;
        /* An empty plain scalar is a null, but libyaml emits it as '' inside a flow
         * collection, which reads back as an empty string: say null in words. */
        const char *text = !n->quoted && n->text[0] == '\0' ? "null" : n->text;
        return yaml_scalar_event_initialize(&ev, NULL, NULL, (yaml_char_t *)text, -1, 1, 1,
                                            style) &&
               yaml_emitter_emit(e, &ev);
    }
    if (n->kind == VL_YSEQ) {
        if (!yaml_sequence_start_event_initialize(&ev, NULL, NULL, 1,
                                                  n->flow ? YAML_FLOW_SEQUENCE_STYLE
                                                          : YAML_BLOCK_SEQUENCE_STYLE) ||
            !yaml_emitter_emit(e, &ev))
            return 0;
    } else if (!yaml_mapping_start_event_initialize(&ev, NULL, NULL, 1,
                                                    n->flow ? YAML_FLOW_MAPPING_STYLE
                                                            : YAML_BLOCK_MAPPING_STYLE) ||
               !yaml_emitter_emit(e, &ev)) {
        return 0;
    }
    for (size_t i = 0; i < n->n; i++)
        if (!emit_node(e, n->kids[i]))
            return 0;
    if (n->kind == VL_YSEQ)
        return yaml_sequence_end_event_initialize(&ev) && yaml_emitter_emit(e, &ev);
    return yaml_mapping_end_event_initialize(&ev) && yaml_emitter_emit(e, &ev);
}

static int emit_stream(yaml_emitter_t *e, const vl_ynode *root)
{
    yaml_event_t ev;

    return yaml_stream_start_event_initialize(&ev, YAML_UTF8_ENCODING) &&
           yaml_emitter_emit(e, &ev) &&
           yaml_document_start_event_initialize(&ev, NULL, NULL, NULL, 1) &&
           yaml_emitter_emit(e, &ev) && emit_node(e, root) &&
           yaml_document_end_event_initialize(&ev, 1) && yaml_emitter_emit(e, &ev) &&
           yaml_stream_end_event_initialize(&ev) && yaml_emitter_emit(e, &ev) &&
           yaml_emitter_flush(e);
}

vl_status vl__yaml_emit(const vl_ynode *root, const char *header, char **out, vl_err *err)
{
    yaml_emitter_t e;
    vl_strbuf o = {0};
    vl_status st = VL_OK;

    *out = NULL;
    if (header != NULL)
        vl_strbuf_add(&o, header, strlen(header));
    if (o.failed || !yaml_emitter_initialize(&e)) {
        vl_strbuf_free(&o);
        return vl_seterr(err, VL_ENOMEM, "out of memory");
    }
    yaml_emitter_set_output(&e, write_cb, &o);
    yaml_emitter_set_unicode(&e, 1);
    yaml_emitter_set_width(&e, -1); /* never fold the curve lists */
    if (!emit_stream(&e, root))
        st = e.error == YAML_MEMORY_ERROR || e.error == YAML_WRITER_ERROR
                 ? vl_seterr(err, VL_ENOMEM, "out of memory")
                 : vl_seterr(err, VL_EINTERNAL, "yaml emitter: %s",
                             e.problem ? e.problem : "failed");
    yaml_emitter_delete(&e);
    if (st != VL_OK) {
        vl_strbuf_free(&o);
        return st;
    }
    *out = vl_strbuf_take(&o);
    return VL_OK;
}
